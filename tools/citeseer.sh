#!/usr/bin/env bash
# Reproduces the Citeseer accuracy table (issue 19): imports the Planetoid
# public split from ../shared/data/citeseer, trains GCN and GAT with their
# papers' recipes over SEEDS seeds, and prints mean ± std test accuracy at
# the best-validation epoch. Not part of the default check (minutes of CPU).
#
#   bash tools/citeseer.sh [SEEDS=5]        # uses target/release, else target/debug
#
# Environment: CITESEER (input dir), OUT (work dir, default target/citeseer),
# GINEX_BIN (dir with ginex and ginex-import), MODELS ("gcn gat"), EPOCHS (200),
# EVAL_EVERY (1: validation every epoch; 5 is 3x faster, best epoch chosen
# among every 5th), OMP_NUM_THREADS (1: libtorch threads; more oversubscribe
# a shared machine).
set -euo pipefail
cd "$(dirname "$0")/.."
SEEDS="${1:-5}"
DATA="${CITESEER:-$PWD/../shared/data/citeseer}"
OUT="${OUT:-$PWD/target/citeseer}"
MODELS="${MODELS:-gcn gat}"
EPOCHS="${EPOCHS:-200}"
EVAL_EVERY="${EVAL_EVERY:-1}"
. tools/train-env.sh
mkdir -p "$OUT"
STORE="$OUT/store"
import_citeseer "$DATA" "$STORE"

# The papers' recipes: 2 layers, full neighbourhoods (train and eval), one
# batch = the 120 training nodes (full-batch; --batch-size 1000 puts the
# 500 validation and 1000 test nodes in one batch each too), Adam with L2 weight decay
# 5e-4, Glorot init (the default for both), 200 epochs; the reported test
# accuracy is that of the epoch with the best validation accuracy.
COMMON=(--fanouts=-1,-1 --eval-fanouts=-1,-1 --batch-size 1000 --policy none --workers 1
        --device cpu --epochs "$EPOCHS" --eval-every "$EVAL_EVERY" --weight-decay 5e-4)
recipe() {
  case "$1" in
    # Kipf & Welling (ICLR'17): hidden 16, dropout 0.5 (inputs too), lr 0.01.
    gcn) echo --model gcn --hidden 16 --dropout 0.5 --input-dropout 0.5 --lr 0.01 ;;
    # Veličković et al. (ICLR'18): 8 heads x 8 hidden (ELU), 1 output head,
    # dropout 0.6 on both layers' inputs and on attention, lr 0.005.
    gat) echo --model gat --hidden 8 --heads 8 --out-heads 1 --dropout 0.6 --input-dropout 0.6 \
              --attn-dropout 0.6 --lr 0.005 ;;
  esac
}

printf '| model | recipe | test accuracy at best validation (mean ± std over %s seeds; %s epochs, eval every %s) | per seed |\n|---|---|---|---|\n' "$SEEDS" "$EPOCHS" "$EVAL_EVERY"
for model in $MODELS; do
  accs=()
  for seed in $(seq 0 $((SEEDS - 1))); do
    rep="$OUT/$model-$seed.json"
    # shellcheck disable=SC2046
    "$GINEX_BIN/ginex" train "$STORE" $(recipe "$model") "${COMMON[@]}" --seed "$seed" \
      --run-dir "$OUT/runs" --checkpoint "$OUT/ckpt-$model-$seed" --overwrite --report "$rep" >"$OUT/$model-$seed.log"
    accs+=("$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["test_acc_at_best_valid"])' "$rep")")
  done
  python3 - "$model" "$(recipe "$model")" "${accs[@]}" <<'PY'
import statistics, sys
model, recipe, accs = sys.argv[1], sys.argv[2], [100 * float(a) for a in sys.argv[3:]]
std = statistics.pstdev(accs) if len(accs) > 1 else 0.0
print(f"| {model} | `{recipe}` | {statistics.mean(accs):.1f} ± {std:.1f} | {' '.join(f'{a:.1f}' for a in accs)} |")
PY
done
