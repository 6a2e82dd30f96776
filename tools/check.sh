#!/usr/bin/env bash
# Runs every check: formatting, lints, the whole test suite (the training
# layer too, with a project-local libtorch it installs on first use), every
# shell block of the README and the user guide run as written at a small
# scale (tools/docs-run.py), and a short fuzz smoke run. The README's check
# command; .ci/run calls exactly this. Installs what it needs itself
# (rustfmt/clippy components, torch, numpy/pytest/maturin/torch_geometric in
# that venv for the Python package's tests; python/.venv without torch under
# GINEX_SKIP_TRAIN=1).
# GINEX_SKIP_TRAIN=1 / GINEX_SKIP_FUZZ=1 skip those parts for quick local runs.
set -euo pipefail
# One build per run: incremental caches would only cost disk (GBs) and time.
export CARGO_INCREMENTAL=0
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

if command -v rustup >/dev/null 2>&1; then
  rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt
  rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy
fi

step "cargo fmt --check"
cargo fmt --all -- --check

# Also fails on a function over 150 lines (clippy::too_many_lines, the
# workspace lints in Cargo.toml, the threshold in clippy.toml).
step "cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

LOG="$(mktemp)"
trap 'rm -f "$LOG"' EXIT
step "cargo test --workspace"
cargo test --workspace --all-targets 2>&1 | tee -a "$LOG"

# --all-targets builds the examples and skips the doc tests: run both.
step "doc tests, examples"
cargo test -p ginex --doc 2>&1 | tee -a "$LOG"
for example in open_and_inspect import_arrays train_loop; do
  cargo run -q -p ginex --example "$example"
done
step "Python package: pytest, ginex.pyg included (tools/python-check.sh)"
bash tools/python-check.sh 2>&1 | tee -a "$LOG"

if [ "${GINEX_SKIP_TRAIN:-0}" != "1" ]; then
  step "training layer (feature train): libtorch venv, clippy, tests"
  eval "$(bash tools/setup-libtorch.sh --env)"
  cargo clippy --workspace --all-targets --features train -- -D warnings
  cargo test -p ginex --features train --lib train:: 2>&1 | tee -a "$LOG"
  # Every CLI test file with tests behind the feature (train.rs,
  # train_link.rs, train_checkpoints.rs, …): a file split off train.rs
  # runs here without being listed.
  train_tests=$(grep -l 'cfg(feature = "train")' tools/tests/*.rs | sed -E 's#.*/(.*)\.rs#--test \1#')
  # shellcheck disable=SC2086 # one word per option
  cargo test -p ginex-cli --features train $train_tests 2>&1 | tee -a "$LOG"
  cargo run -q -p ginex --features train --example tch_sage
fi

# After the training step: its test build left target/debug's binaries with
# `train`, so the walk-throughs' train/predict blocks run too.
step "docs that run: every shell block of the README and the user guide (tools/docs-run.py)"
python3 tools/docs-run.py

# Every install line the docs give (cargo install, pip install ./python and
# "./python[pyg]", the maturin wheel), as written, in fresh venvs.
step "the docs' install lines, in fresh venvs (tools/docs-run.py --installs)"
python3 tools/docs-run.py --installs

if [ "${GINEX_SKIP_FUZZ:-0}" != "1" ] && [ -x fuzz/smoke.sh ]; then
  step "fuzz smoke (${GINEX_FUZZ_SECONDS:-10} s per target)"
  fuzz/smoke.sh "${GINEX_FUZZ_SECONDS:-10}"
fi

# cargo's "test result:" lines and pytest's closing "N passed[, N failed] in Xs".
count() { { grep -E "$1" "$LOG" || true; } | sed -E "$2" | awk '{s += $1} END {print s + 0}'; }
passed=$(( $(count '^test result:' 's/.* ([0-9]+) passed.*/\1/') + $(count '^=* ?[0-9]+ passed.* in [0-9.]+s' 's/^=* ?([0-9]+) passed.*/\1/') ))
failed=$(( $(count '^test result:' 's/.* ([0-9]+) failed.*/\1/') + $(count '^=* ?[0-9]+ passed, [0-9]+ failed' 's/.* ([0-9]+) failed.*/\1/') ))
step "all checks passed"
echo "tests: ${passed} passed, ${failed} failed"
