#!/usr/bin/env bash
# Layer-wise inference, the gather path against streaming, in one
# invocation (docs/performance.md#layer-wise-inference):
#
#   tools/bench-layerwise.sh STORE CHECKPOINT OUTDIR [MEMORY]
#
# 1. one sequential O_DIRECT read of STORE/features.pages (layer 1's input,
#    no page cache);
# 2. `predict --layerwise --layerwise-method gather --memory MEMORY`;
# 3. `predict --layerwise --layerwise-method stream --memory MEMORY`;
# 4. the same streaming run with a budget that holds every accumulator
#    (16GiB: one pass per layer, the in-memory reference);
# 5. the largest difference between the gather and the streamed logits.
#
# Each run under /usr/bin/time -v (wall, peak RSS), with `uptime` before
# and after: the machine is shared, say so with the numbers. BIN_OLD and
# BIN_NEW name the binaries (default target/release/ginex for both; the
# gather path is the same code in either); when BIN_NEW does not exist yet
# the script waits for it (up to an hour), so that a build can finish while
# the slow gather run goes on. GATHER=0 skips the gather run (step 2) and
# compares the streamed logits with the in-memory streamed ones instead:
# for a re-measurement of streaming alone, the gather path's time being
# the one recorded beside it. Spill files go to OUTDIR/runs and are
# deleted by the runs themselves.
set -euo pipefail
STORE=${1:?store}
CK=${2:?checkpoint}
OUT=${3:?outdir}
MEMORY=${4:-1GiB}
BIN_OLD=${BIN_OLD:-target/release/ginex}
BIN_NEW=${BIN_NEW:-target/release/ginex}
mkdir -p "$OUT/runs"

echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB RAM, $(uname -r)"
echo "store: $STORE ($(du -sh "$STORE" | cut -f1)); $(grep -h -E 'nodes|edges|dim' "$STORE/MANIFEST" | tr '\n' ' ')"
echo "checkpoint: $CK; memory: $MEMORY"

summary() { # LOG: wall and peak RSS lines of /usr/bin/time -v, and the layer lines
  grep -E '^(layer|layer-wise)' "$1" || true
  grep -E 'Elapsed \(wall|Maximum resident|User time|System time' "$1" | sed 's/^\s*/  /'
}

echo "== 1. sequential read of features.pages (O_DIRECT, 8 MiB reads); load: $(uptime)"
dd if="$STORE/features.pages" of=/dev/null bs=8M iflag=direct 2>&1 | tail -1

run() { # NAME BIN ARGS...
  local name=$1 bin=$2
  shift 2
  echo "== $name; load before: $(uptime)"
  /usr/bin/time -v "$bin" predict "$STORE" --checkpoint "$CK" --out "$OUT/$name.npy" \
    --layerwise --device cpu --run-dir "$OUT/runs" "$@" >"$OUT/$name.log" 2>&1
  summary "$OUT/$name.log"
  echo "   load after: $(uptime)"
}

GATHER=${GATHER:-1}
if [ "$GATHER" != 0 ]; then
  run gather "$BIN_OLD" --layerwise-method gather --memory "$MEMORY"
fi
for _ in $(seq 360); do [ -x "$BIN_NEW" ] && break; sleep 10; done
echo "new binary: $BIN_NEW ($(cat "$BIN_NEW.commit" 2>/dev/null || echo 'commit not recorded'))"
run stream "$BIN_NEW" --layerwise-method stream --memory "$MEMORY"
run stream-in-memory "$BIN_NEW" --layerwise-method stream --memory 16GiB

PY=${PYTHON:-python3}
"$PY" - "$OUT" "$GATHER" <<'EOF'
import sys, numpy as np
out, gather = sys.argv[1], sys.argv[2] != "0"
s, m = (np.load(f"{out}/{n}.npy") for n in ("stream", "stream-in-memory"))
if gather:
    g = np.load(f"{out}/gather.npy")
    scale = float(np.abs(g).max())
    print(f"== 5. logits: {g.shape}; max |gather - stream| = {np.abs(g - s).max():.3g}, "
          f"max |gather - stream in memory| = {np.abs(g - m).max():.3g} (max |logit| {scale:.3g}); "
          f"argmax agrees on {np.mean(g.argmax(1) == s.argmax(1)) * 100:.4f} % of nodes")
else:
    scale = float(np.abs(m).max())
    print(f"== 5. logits: {s.shape}; max |stream - stream in memory| = {np.abs(s - m).max():.3g} "
          f"(max |logit| {scale:.3g}); argmax agrees on {np.mean(m.argmax(1) == s.argmax(1)) * 100:.4f} % of nodes")
EOF
