#!/usr/bin/env bash
# Link prediction on Citeseer with the GAE protocol (Kipf & Welling, 2016;
# issue 40): per seed, a random 85/5/10 split of the undirected edges (one
# random non-edge per held-out edge, `ginex-import --edge-split`), a
# 2-layer GCN encoder with the dot decoder trained full-batch (GAE's
# protocol: one batch of every training edge, full neighbourhoods,
# `--exclude none` so the batch samples the whole message-passing graph)
# with one negative per training edge, the checkpoint of the best validation AUC
# evaluated on the test edges layer-wise (`ginex predict --task link`).
# Prints test AUC and AP per seed and their means, and beside them the
# in-degree popularity baseline on the same candidates. Not part of the
# default check (minutes of CPU).
#
#   bash tools/link-citeseer.sh [SEEDS=3]   # uses target/release, else target/debug
#   FIRST_SEED=2 bash tools/link-citeseer.sh 1   # seed 2 only (seeds run side by side)
#
# Environment: CITESEER (input dir), OUT (work dir, default target/link-citeseer),
# GINEX_BIN (dir with ginex and ginex-import), EPOCHS (200, GAE's), EVAL_EVERY (10),
# BATCH_SIZE (1000000: every training edge in one batch, GAE's full batch),
# EXCLUDE (none: GAE's protocol; self: each batch leaves its own edges out
# of its neighbourhoods, DGL's exclude="self", which needs mini-batches:
# BATCH_SIZE=128 EPOCHS=15 EVAL_EVERY=1 was that setting's best on
# validation AUC), POLICY (mmap: the store is small),
# HIDDEN (32), NEG_SAMPLING (corrupt: the positive's source with a uniform
# destination; random: uniform pairs, as GAE draws them, measured worse
# here), OMP_NUM_THREADS (1).
set -euo pipefail
cd "$(dirname "$0")/.."
SEEDS="${1:-3}"
DATA="${CITESEER:-$PWD/../shared/data/citeseer}"
OUT="${OUT:-$PWD/target/link-citeseer}"
EPOCHS="${EPOCHS:-200}"
BATCH_SIZE="${BATCH_SIZE:-1000000}"
EXCLUDE="${EXCLUDE:-none}"
POLICY="${POLICY:-mmap}"
EVAL_EVERY="${EVAL_EVERY:-10}"
HIDDEN="${HIDDEN:-32}"
NEG_SAMPLING="${NEG_SAMPLING:-corrupt}"
. tools/train-env.sh
mkdir -p "$OUT"

# GAE's recipe (2 GCN layers, hidden 32 here for both, no dropout, Adam
# lr 0.01, one negative per training edge drawn afresh every epoch, full
# neighbourhoods, 200 full-batch epochs over the message-passing graph of
# the training edges: --exclude none, as a full batch that left its own
# edges out would train on an empty graph).
RECIPE=(--task link --decoder dot --neg 1 --neg-sampling "$NEG_SAMPLING" --model gcn --hidden "$HIDDEN" --dropout 0 --lr 0.01
        --fanouts=-1,-1 --eval-fanouts=-1,-1 --batch-size "$BATCH_SIZE" --exclude "$EXCLUDE" --policy "$POLICY" --workers 1
        --device cpu --epochs "$EPOCHS" --eval-every "$EVAL_EVERY")
echo "machine: $(getconf _NPROCESSORS_ONLN) cores, load $(cut -d' ' -f1-3 /proc/loadavg); recipe: ${RECIPE[*]}"
printf '| seed | test AUC | test AP | popularity AUC | popularity AP |\n|---|---|---|---|---|\n'
rows=()
FIRST_SEED="${FIRST_SEED:-0}"
for seed in $(seq "$FIRST_SEED" $((FIRST_SEED + SEEDS - 1))); do
  store="$OUT/store-$seed"
  if [ ! -d "$store" ]; then
    "$GINEX_BIN/ginex-import" files --edges "$DATA/edges.npy" --features "$DATA/features.npy" \
      --undirected --edge-split 0.85,0.05,0.10 --split-seed "$seed" --quiet --out "$store" >/dev/null
  fi
  "$GINEX_BIN/ginex" train "$store" "${RECIPE[@]}" --seed "$seed" --run-dir "$OUT/runs" \
    --checkpoint "$OUT/ckpt-$seed" --overwrite --report "$OUT/train-$seed.json" >"$OUT/train-$seed.log"
  "$GINEX_BIN/ginex" predict "$store" --checkpoint "$OUT/ckpt-$seed" --task link --device cpu \
    --run-dir "$OUT/runs" >"$OUT/predict-$seed.log"
  row="$(python3 - "$OUT/predict-$seed.log" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
def metrics(prefix):
    line = next(l for l in text.splitlines() if l.startswith(prefix))
    return [float(re.search(name + r" ([0-9.]+)", line).group(1)) for name in ("AUC", "AP")]
m, p = metrics("test edges, model:"), metrics("test edges, popularity")
print(" ".join(f"{x:.4f}" for x in m + p))
PY
)"
  read -r auc ap pauc pap <<<"$row"
  printf '| %s | %s | %s | %s | %s |\n' "$seed" "$auc" "$ap" "$pauc" "$pap"
  rows+=("$row")
done
python3 - "${rows[@]}" <<'PY'
import statistics, sys
rows = [list(map(float, r.split())) for r in sys.argv[1:]]
mean = [statistics.mean(c) for c in zip(*rows)]
print(f"| mean of {len(rows)} | {mean[0]:.4f} | {mean[1]:.4f} | {mean[2]:.4f} | {mean[3]:.4f} |")
PY
