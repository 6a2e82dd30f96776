#!/usr/bin/env bash
# The main job end to end on a fresh machine: set up libtorch, build,
# generate a synthetic store, inspect and verify it, run one measured
# data-preparation epoch, train GraphSAGE through the out-of-core data path
# (Belady feature cache + neighbor cache) and report accuracy. Everything
# goes under ./work/ (ignored by git). GINEX_DEMO_NODES sets the graph size.
set -euo pipefail
cd "$(dirname "$0")/.."

NODES="${GINEX_DEMO_NODES:-200000}"
WORK="${GINEX_WORK:-work}"
STORE="$WORK/demo-$NODES"

eval "$(bash tools/setup-libtorch.sh --env)"
cargo build --release -p ginex-cli --bins --features train
mkdir -p "$WORK"
rm -rf "$STORE"

echo "==> ginex gen ($NODES nodes)"
target/release/ginex gen --nodes "$NODES" --avg-degree 15 --dim 128 --classes 8 --split 0.5,0.1,0.1 --seed 1 --out "$STORE"
echo "==> ginex-dump"
target/release/ginex-dump "$STORE"
echo "==> ginex-dump --verify"
target/release/ginex-dump --verify "$STORE"
echo "==> ginex epoch (policy ginex vs none, one epoch of data preparation)"
target/release/ginex epoch "$STORE" --policy ginex --feature-cache-bytes 16MiB --neighbor-cache-bytes 8MiB --run-dir "$WORK/runs"
target/release/ginex epoch "$STORE" --policy none --run-dir "$WORK/runs"
echo "==> ginex train (GraphSAGE, 4 epochs)"
rm -rf "$WORK/ckpt"
target/release/ginex train "$STORE" --model sage --fanouts 10,5 --batch-size 1000 --hidden 128 --lr 0.01 --epochs 4 \
  --policy ginex --feature-cache-bytes 16MiB --neighbor-cache-bytes 8MiB --run-dir "$WORK/runs" \
  --checkpoint "$WORK/ckpt" --report "$WORK/train-report.json"
echo "==> report: $WORK/train-report.json"
