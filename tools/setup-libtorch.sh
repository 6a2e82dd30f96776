#!/usr/bin/env bash
# Creates (or reuses) the project-local Python venv that provides libtorch
# for the `train` feature: torch==2.13.0 from PyPI, which tch 0.26 requires
# exactly. Idempotent and fast when the venv is already there.
#
# Prints the environment to build and run with, e.g.:
#   eval "$(bash tools/setup-libtorch.sh --env)"
#   cargo build --release --features train
set -euo pipefail
cd "$(dirname "$0")/.."

TORCH_VERSION="2.13.0"
VENV="${GINEX_VENV:-$PWD/.venv}"
PY="${PYTHON:-python3}"

have_torch() {
  [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -W ignore -c "import torch, sys; sys.exit(0 if torch.__version__.split('+')[0] == '$TORCH_VERSION' else 1)" 2>/dev/null
}

if ! have_torch; then
  echo "setup-libtorch: installing torch==$TORCH_VERSION into $VENV (about 5 GB with its CUDA libraries; a few minutes, once)" >&2
  [ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
  # pip's download progress on a terminal; quiet in logs and CI.
  if [ -t 2 ]; then PIP_OUTPUT=(--progress-bar on); else PIP_OUTPUT=(--quiet); fi
  # --no-compile: Python compiles what it imports on first use; compiling
  # every module of torch up front is a good part of the install's time.
  "$VENV/bin/python" -m pip install "${PIP_OUTPUT[@]}" --disable-pip-version-check --no-compile "torch==$TORCH_VERSION" >&2
  have_torch || { echo "setup-libtorch: torch $TORCH_VERSION did not install into $VENV" >&2; exit 1; }
fi

TORCH_LIB="$("$VENV/bin/python" -W ignore -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')"
if [ "${1:-}" = "--env" ]; then
  echo "export LIBTORCH_USE_PYTORCH=1"
  echo "export PATH=\"$VENV/bin:\$PATH\""
  echo "export LD_LIBRARY_PATH=\"$TORCH_LIB\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}\""
else
  echo "setup-libtorch: torch $TORCH_VERSION ready in $VENV (lib: $TORCH_LIB)" >&2
fi
