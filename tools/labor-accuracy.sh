#!/usr/bin/env bash
# LABOR against neighbor sampling in accuracy (issue 42): GraphSAGE trained
# at the same sampled fanouts with each sampler, over SEEDS seeds, on
# Citeseer (the Planetoid public split from ../shared/data/citeseer) and on
# a small synthetic store (`ginex gen`); prints mean ± std test accuracy at
# the best-validation epoch per sampler and its difference to neighbor
# sampling (the target: within 1 point). Evaluation uses full
# neighbourhoods (-1,-1) for every sampler, so only the training sampler
# differs. Not part of the default check (minutes of CPU); needs a binary
# built with `--features train`.
#
#   bash tools/labor-accuracy.sh [SEEDS=3]     # uses target/release, else target/debug
#
# Environment: CITESEER (input dir), OUT (work dir, default
# target/labor-accuracy), GINEX_BIN (dir with ginex and ginex-import),
# SAMPLERS ("neighbor labor-0 labor-*", neighbor first), FANOUTS (10,10),
# STORES ("citeseer synthetic"), CITESEER_EPOCHS (200), SYNTH_EPOCHS (30),
# EVAL_EVERY (5), SYNTH_NODES
# (20000), OMP_NUM_THREADS (1).
set -euo pipefail
cd "$(dirname "$0")/.."
SEEDS="${1:-3}"
DATA="${CITESEER:-$PWD/../shared/data/citeseer}"
OUT="${OUT:-$PWD/target/labor-accuracy}"
SAMPLERS="${SAMPLERS:-neighbor labor-0 labor-*}"
FANOUTS="${FANOUTS:-10,10}"
EVAL_EVERY="${EVAL_EVERY:-5}"
SYNTH_NODES="${SYNTH_NODES:-20000}"
. tools/train-env.sh
mkdir -p "$OUT"

CITE="$OUT/citeseer"
import_citeseer "$DATA" "$CITE"
SYNTH="$OUT/synthetic"
if [ ! -d "$SYNTH" ]; then
  "$GINEX_BIN/ginex" gen --nodes "$SYNTH_NODES" --avg-degree 10 --dim 32 --classes 8 \
    --seed 1 --out "$SYNTH" >/dev/null
fi

# GraphSAGE (mean aggregation; LABOR's importance weights make it the
# weighted mean), 2 layers, hidden 64, dropout 0.5, Adam lr 0.01 with L2
# 5e-4. Citeseer: its 120 training nodes in one batch; synthetic: batches
# of 256 seeds.
recipe() {
  local common=(--model sage --hidden 64 --dropout 0.5 --lr 0.01 --weight-decay 5e-4
                --fanouts="$FANOUTS" --eval-fanouts=-1,-1 --policy none --workers 1
                --device cpu --eval-every "$EVAL_EVERY")
  case "$1" in
    citeseer) echo "${common[@]}" --batch-size 1000 --epochs "${CITESEER_EPOCHS:-200}" ;;
    synthetic) echo "${common[@]}" --batch-size 256 --epochs "${SYNTH_EPOCHS:-30}" ;;
  esac
}

echo "labor-accuracy: $(uname -n), $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg); fanouts $FANOUTS; $SEEDS seeds"
printf '| store | sampler | test accuracy at best validation (mean ± std) | per seed | vs neighbor |\n|---|---|---|---|---|\n'
for name in ${STORES:-citeseer synthetic}; do
  store="$OUT/$name"
  base=""
  for sampler in $SAMPLERS; do
    accs=()
    for seed in $(seq 0 $((SEEDS - 1))); do
      tag="$name-${sampler//\*/star}-$seed"
      rep="$OUT/$tag.json"
      # shellcheck disable=SC2046
      "$GINEX_BIN/ginex" train "$store" $(recipe "$name") --sampler "$sampler" --seed "$seed" \
        --run-dir "$OUT/runs" --checkpoint "$OUT/ckpt-$tag" --overwrite --report "$rep" >"$OUT/$tag.log"
      accs+=("$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["test_acc_at_best_valid"])' "$rep")")
    done
    line="$(python3 - "$name" "$sampler" "$base" "${accs[@]}" <<'PY'
import statistics, sys
name, sampler, base, accs = sys.argv[1], sys.argv[2], sys.argv[3], [100 * float(a) for a in sys.argv[4:]]
mean = statistics.mean(accs)
std = statistics.pstdev(accs) if len(accs) > 1 else 0.0
vs = f"{mean - float(base):+.1f} points" if base else "baseline"
print(f"{mean}\t| {name} | {sampler} | {mean:.1f} ± {std:.1f} | {' '.join(f'{a:.1f}' for a in accs)} | {vs} |")
PY
)"
    [ -n "$base" ] || base="${line%%$'\t'*}"
    echo "${line#*$'\t'}"
  done
done
