#!/usr/bin/env bash
# The main job end to end on a fresh machine: build, generate a synthetic
# store, inspect it, verify every checksum. Everything goes under ./work/
# (ignored by git). Set GINEX_DEMO_NODES to change the dataset size.
set -euo pipefail
cd "$(dirname "$0")/.."

NODES="${GINEX_DEMO_NODES:-200000}"
WORK="${GINEX_WORK:-work}"
STORE="$WORK/demo-$NODES"

cargo build --release --bins
mkdir -p "$WORK"
rm -rf "$STORE"

echo "==> ginex gen ($NODES nodes)"
target/release/ginex gen --nodes "$NODES" --avg-degree 15 --dim 128 --classes 16 --seed 1 --out "$STORE"
echo "==> ginex-dump"
target/release/ginex-dump "$STORE"
echo "==> ginex-dump --verify"
target/release/ginex-dump --verify "$STORE"
