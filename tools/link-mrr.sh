#!/usr/bin/env bash
# Link-prediction MRR on a synthetic store (issue 40): a homophilous
# synthetic graph imported undirected with a random 85/5/10 edge split,
# a 2-layer GraphSAGE encoder with the dot decoder trained on sampled
# link batches, then every test edge ranked against 100 uniform
# destination corruptions (`ginex predict --task link --test-neg 100`),
# printed beside an in-degree popularity ranking of the same candidates.
# Not part of the default check (minutes of CPU).
#
#   bash tools/link-mrr.sh                 # uses target/release, else target/debug
#
# Environment: OUT (work dir, default target/link-mrr), GINEX_BIN, NODES
# (20000), EPOCHS (5), OMP_NUM_THREADS (1).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/target/link-mrr}"
NODES="${NODES:-20000}"
EPOCHS="${EPOCHS:-5}"
. tools/train-env.sh
mkdir -p "$OUT"
GEN=(--nodes "$NODES" --avg-degree 10 --dim 32 --classes 16 --feature-noise 0.5 --seed 3 --split 0.5,0.1,0.1)
[ -d "$OUT/raw" ] || "$GINEX_BIN/ginex" gen "${GEN[@]}" --raw "$OUT/raw" >/dev/null
if [ ! -d "$OUT/store" ]; then
  "$GINEX_BIN/ginex-import" files --edges "$OUT/raw/edges.npy" --features "$OUT/raw/features.npy" \
    --undirected --edge-split 0.85,0.05,0.10 --split-seed 0 --quiet --out "$OUT/store" >/dev/null
fi
TRAIN=(--task link --decoder dot --neg 1 --model sage --hidden 64 --dropout 0 --lr 0.01
       --fanouts 10,10 --eval-fanouts 10,10 --batch-size 2000 --epochs "$EPOCHS" --policy ginex
       --memory 2GiB --device cpu --seed 0)
echo "machine: $(getconf _NPROCESSORS_ONLN) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "store: ginex gen ${GEN[*]}, imported --undirected --edge-split 0.85,0.05,0.10 --split-seed 0"
echo "train: ${TRAIN[*]}"
"$GINEX_BIN/ginex" train "$OUT/store" "${TRAIN[@]}" --run-dir "$OUT/runs" \
  --checkpoint "$OUT/ckpt" --overwrite >"$OUT/train.log"
grep '^best epoch' "$OUT/train.log" || tail -3 "$OUT/train.log"
"$GINEX_BIN/ginex" predict "$OUT/store" --checkpoint "$OUT/ckpt" --task link --test-neg 100 \
  --device cpu --run-dir "$OUT/runs" | grep '^test edges'
