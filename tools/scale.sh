#!/usr/bin/env bash
# The scale run (issue #32): a synthetic graph past 2^31 edges through every
# step of ginex, one step at a time, each timed with /usr/bin/time -v, into
# one table (markdown and JSON). Not part of the test suite: it takes tens of
# minutes and up to ~40 GB of disk at the default size (the import holds
# the int32 edges.npy and its sort spill at once); it deletes every store
# it wrote.
#
#   cargo build --release -p ginex-cli --features train
#   bash tools/scale.sh [DIR]            # DIR: work directory (default /tmp/ginex-scale)
#
# Knobs (environment): NODES (50000000), DEGREE (50: 2.5 B edges drawn, about
# 2.3 B kept after duplicates: past 2^31), DIM (32),
# DTYPE (f16), MEMORY (4GiB), BATCHES (epoch batches, 200), TRAIN_BATCHES (50),
# BASE_NODES (8000000: the small store whose per-batch epoch time the big one
# is compared with, same degree and fanouts; 0 skips it), FANOUTS (10,10,10),
# EXPORT (0: skip ginex-export graphbolt; its (2, E) int64 edges need 16
# bytes an edge),
# IMPORT (1: ginex gen --raw an int32 (E,2) edges.npy of the same graph and
# ginex-import it), KEEP (0: delete the stores at the end).
# Writes DIR/scale.md and DIR/scale.json; per-step output in DIR/log/.
set -euo pipefail
cd "$(dirname "$0")/.."

DIR="${1:-/tmp/ginex-scale}"
NODES="${NODES:-50000000}"
DEGREE="${DEGREE:-50}"
DIM="${DIM:-32}"
DTYPE="${DTYPE:-f16}"
MEMORY="${MEMORY:-4GiB}"
BATCHES="${BATCHES:-200}"
TRAIN_BATCHES="${TRAIN_BATCHES:-50}"
BASE_NODES="${BASE_NODES:-8000000}"
FANOUTS="${FANOUTS:-10,10,10}"
EXPORT="${EXPORT:-0}"
IMPORT="${IMPORT:-1}"
KEEP="${KEEP:-0}"
BIN="${BIN:-$PWD/target/release}"

for b in ginex ginex-dump ginex-import ginex-export; do
  [ -x "$BIN/$b" ] || { echo "scale: $BIN/$b missing; cargo build --release -p ginex-cli --features train" >&2; exit 1; }
done
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"
STORE="$DIR/big.store"
ROWS="$DIR/rows.tsv"
: >"$ROWS"
LOG="$DIR/log"
mkdir -p "$LOG"

edges_of() { "$BIN/ginex-dump" "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["manifest"]["num_edges"])' || echo 0; }

# step NAME EDGES OUTPUT_PATH -- command...: runs it under /usr/bin/time -v,
# appends a row: name, wall s, peak RSS bytes, disk bytes of OUTPUT_PATH,
# edges (for edges/s; 0 = not an edge-streaming step), load average, rc.
step() {
  local name="$1" edges="$2" out="$3"
  shift 4
  echo "scale: $name: $*" >&2
  local t0 t1 rc=0
  t0=$(date +%s.%N)
  /usr/bin/time -v -o "$LOG/$name.time" "$@" >"$LOG/$name.out" 2>"$LOG/$name.err" || rc=$?
  t1=$(date +%s.%N)
  local rss wall disk load
  # %.0f, not %d: mawk's %d clamps at 2^31 - 1 (every peak past 2 GiB
  # read as 2.00 GiB).
  rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 * 1024}' "$LOG/$name.time")
  wall=$(python3 -c "print(f'{$t1 - $t0:.1f}')")
  disk=0
  [ -n "$out" ] && [ -e "$out" ] && disk=$(du -sb "$out" | cut -f1)
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$wall" "$rss" "$disk" "$edges" "$load" "$rc" >>"$ROWS"
  echo "scale: $name: rc $rc, ${wall}s, peak RSS $rss B, disk $disk B, load $load" >&2
  if [ "$rc" != 0 ]; then tail -5 "$LOG/$name.err" >&2; fi
  return 0
}

# 1. The big store, end to end.
rm -rf "$STORE" "$STORE.runs" "$STORE.ncache"
step gen 0 "$STORE" -- "$BIN/ginex" gen --nodes "$NODES" --avg-degree "$DEGREE" --dim "$DIM" --dtype "$DTYPE" --memory "$MEMORY" --out "$STORE" -q
E=$(edges_of "$STORE")
echo "scale: $E edges (2^31 = 2147483648)" >&2
# The gen row gets its edge count now that it is known.
sed -i "s/^gen\t\([^\t]*\)\t\([^\t]*\)\t\([^\t]*\)\t0\t/gen\t\1\t\2\t\3\t$E\t/" "$ROWS"
step verify "$E" "" -- "$BIN/ginex-dump" "$STORE" --verify
step cache-build "$E" "$STORE.ncache" -- "$BIN/ginex" cache build "$STORE" --budget 1GiB
step epoch 0 "" -- "$BIN/ginex" epoch "$STORE" --memory "$MEMORY" --fanouts "$FANOUTS" --max-batches "$BATCHES" --report "$DIR/epoch.json"
if "$BIN/ginex" train --help >/dev/null 2>&1; then
  step train 0 "$DIR/ckpt" -- "$BIN/ginex" train "$STORE" --memory "$MEMORY" --fanouts "$FANOUTS" --epochs 1 --max-batches "$TRAIN_BATCHES" --eval-every 0 --hidden 64 --device cpu --checkpoint "$DIR/ckpt"
  seq 0 999 >"$DIR/nodes.txt"
  step predict 0 "$DIR/logits.npy" -- "$BIN/ginex" predict "$STORE" --checkpoint "$DIR/ckpt" --nodes "$DIR/nodes.txt" --out "$DIR/logits.npy" --memory "$MEMORY" --device cpu
fi
if [ "$EXPORT" = 1 ]; then
  step export "$E" "$DIR/export" -- "$BIN/ginex-export" graphbolt "$STORE" --out "$DIR/export" --memory "$MEMORY" -q
  rm -rf "$DIR/export"
fi
[ "$KEEP" = 1 ] || rm -rf "$STORE" "$STORE.runs" "$STORE.ncache" "$DIR/ckpt" "$DIR/logits.npy"

# 1b. The baseline (after the big store is gone, to keep disk use down): a small store of the same shape, the epoch's per-batch time.
if [ "$BASE_NODES" != 0 ]; then
  rm -rf "$DIR/base.store" "$DIR/base.store.runs"
  step gen-base 0 "$DIR/base.store" -- "$BIN/ginex" gen --nodes "$BASE_NODES" --avg-degree "$DEGREE" --dim "$DIM" --dtype "$DTYPE" --memory "$MEMORY" --out "$DIR/base.store" -q
  step epoch-base 0 "" -- "$BIN/ginex" epoch "$DIR/base.store" --memory "$MEMORY" --fanouts "$FANOUTS" --max-batches "$BATCHES" --report "$DIR/epoch-base.json"
  [ "$KEEP" = 1 ] || rm -rf "$DIR/base.store" "$DIR/base.store.runs" "$DIR/base.store.ncache"
fi

# 2. Import at scale: the same graph's edges as an int32 (E, 2) .npy
#    (features of width 1: the edges are what is measured), then imported.
if [ "$IMPORT" = 1 ]; then
  rm -rf "$DIR/raw" "$DIR/imported.store"
  step gen-raw "$E" "$DIR/raw" -- "$BIN/ginex" gen --nodes "$NODES" --avg-degree "$DEGREE" --dim 1 --dtype f32 --memory "$MEMORY" --raw "$DIR/raw" -q
  # The disk-space check: f32 features twice as large as the free space
  # cannot fit; refused up front (rc 1, nothing written).
  FREE=$(df -B1 --output=avail "$DIR" | tail -1)
  WIDE=$(( FREE / (4 * NODES) * 2 + 1 ))
  step import-refused 0 "$DIR/refused.store" -- "$BIN/ginex-import" files --edges "$DIR/raw/edges.npy" --num-nodes "$NODES" --feature-dim "$WIDE" --memory "$MEMORY" --out "$DIR/refused.store" -q
  step import "$E" "$DIR/imported.store" -- "$BIN/ginex-import" files --edges "$DIR/raw/edges.npy" --num-nodes "$NODES" --memory "$MEMORY" --out "$DIR/imported.store" -q
  step verify-imported "$E" "" -- "$BIN/ginex-dump" "$DIR/imported.store" --verify
  [ "$KEEP" = 1 ] || rm -rf "$DIR/raw" "$DIR/imported.store" "$DIR/refused.store"
fi

# The table.
python3 - "$ROWS" "$DIR" "$NODES" "$DEGREE" "$DIM" "$DTYPE" "$MEMORY" "$BATCHES" "$TRAIN_BATCHES" "$FANOUTS" "$BASE_NODES" <<'EOF'
import json, sys, os, platform
rows_path, d, nodes, degree, dim, dtype, memory, batches, tbatches, fanouts, base = sys.argv[1:]
rows = []
for line in open(rows_path):
    name, wall, rss, disk, edges, load, rc = line.rstrip("\n").split("\t")
    wall, rss, disk, edges = float(wall), int(float(rss or 0)), int(disk), int(edges)
    rows.append(dict(step=name, wall_s=wall, peak_rss_bytes=rss, disk_bytes=disk, edges=edges,
                     edges_per_s=(edges / wall if edges and wall else None), load=load, rc=int(rc)))
def per_batch(p):
    """ms a batch, the neighbor cache's build left out (an epoch builds
    the cache its plan sizes when `cache build` made another size)."""
    try:
        r = json.load(open(p))
    except Exception:
        return None
    b, secs = len(r.get("per_batch", [])), r.get("seconds", {})
    w = secs.get("wall")
    return ((w - secs.get("neighbor_cache_build", 0.0)) * 1000 / b) if b and w else None
pb, pb_base = per_batch(os.path.join(d, "epoch.json")), per_batch(os.path.join(d, "epoch-base.json"))
params = dict(nodes=int(nodes), avg_degree=float(degree), dim=int(dim), dtype=dtype, memory=memory,
              epoch_batches=int(batches), train_batches=int(tbatches), fanouts=fanouts, base_nodes=int(base),
              cores=os.cpu_count(), machine=platform.platform())
out = dict(params=params, steps=rows, epoch_ms_per_batch=pb, base_epoch_ms_per_batch=pb_base,
           epoch_ratio=(pb / pb_base if pb and pb_base else None))
json.dump(out, open(os.path.join(d, "scale.json"), "w"), indent=2)
gib = lambda b: f"{b / 2**30:.2f}"
md = [f"params: {json.dumps(params)}", "",
      "| step | wall s | peak RSS GiB | disk GiB | edges | M edges/s | load avg (1/5/15 min) | rc |",
      "|---|---:|---:|---:|---:|---:|---|---:|"]
for r in rows:
    eps = f"{r['edges_per_s'] / 1e6:.2f}" if r["edges_per_s"] else ""
    md.append(f"| {r['step']} | {r['wall_s']:.1f} | {gib(r['peak_rss_bytes'])} | {gib(r['disk_bytes'])} | {r['edges'] or ''} | {eps} | {r['load']} | {r['rc']} |")
if pb:
    md += ["", f"epoch: {pb:.1f} ms/batch (neighbor-cache build left out); base store ({base} nodes): "
           + (f"{pb_base:.1f} ms/batch; ratio {pb / pb_base:.2f}" if pb_base else "not run")]
open(os.path.join(d, "scale.md"), "w").write("\n".join(md) + "\n")
print("\n".join(md))
EOF
