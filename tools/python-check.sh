#!/usr/bin/env bash
# The Python package's tests (python/tests, pytest), run by tools/check.sh.
# Runs in the project venv .venv that tools/setup-libtorch.sh makes (torch),
# with numpy, pytest, maturin and torch_geometric installed into it on
# first use, so the ginex.pyg tests (python/tests/test_pyg.py) run too.
# GINEX_SKIP_TRAIN=1 (no torch wanted): the lighter python/.venv (numpy,
# pytest, maturin) instead, and the ginex.pyg tests skip, saying why.
#
# cargo builds the extension with the same settings as the rest of the
# workspace (no rebuild churn), the .so is placed in python/ginex/ (maturin's
# editable layout) and pytest imports it from there. What users get (pip
# install ./python, the maturin wheel, the [pyg] extra, each in a fresh venv)
# is checked by `tools/docs-run.py --installs`, which runs the docs' install
# lines as written.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${GINEX_PYTHON:-python3}"
if ! command -v "$PYTHON" >/dev/null 2>&1; then
  echo "python-check: $PYTHON not found; install Python >= 3.9 (or set GINEX_PYTHON)" >&2
  exit 1
fi
PACKAGES=(numpy pytest maturin)
if [ "${GINEX_SKIP_TRAIN:-0}" = "1" ]; then
  VENV=python/.venv
  echo "python-check: GINEX_SKIP_TRAIN=1: python/.venv without torch; the ginex.pyg tests skip" >&2
  [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
  IMPORTS="import numpy, pytest"
else
  # torch from setup-libtorch.sh (the version tch needs), PyG beside it.
  VENV="${GINEX_VENV:-$PWD/.venv}"
  PYTHON="$PYTHON" GINEX_VENV="$VENV" bash tools/setup-libtorch.sh
  PACKAGES+=("torch_geometric>=2.5")
  IMPORTS="import numpy, pytest, torch_geometric"
fi
if ! "$VENV/bin/python" -W ignore -c "$IMPORTS" >/dev/null 2>&1 || [ ! -x "$VENV/bin/maturin" ]; then
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${PACKAGES[@]}"
fi

# The extension and the CLI binaries the tests compare against (no --bins:
# it would leave out the extension, which has none).
cargo build -p ginex-cli -p ginex-python
export GINEX_BIN_DIR="$PWD/target/debug"

cp target/debug/lib_ginex.so python/ginex/_ginex.abi3.so
PYTHONPATH="$PWD/python" "$VENV/bin/python" -m pytest -q -p no:cacheprovider python/tests
