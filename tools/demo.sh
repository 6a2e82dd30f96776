#!/usr/bin/env bash
# The main job end to end on a fresh machine: set up libtorch, build,
# generate a synthetic store, inspect and verify it, run one measured
# data-preparation epoch per cache policy (ginex, lru, none), train GraphSAGE
# through the out-of-core data path (Belady feature cache + neighbor cache),
# and end with a summary: test accuracy, epoch time per policy and its ratio
# to no cache, where the reports, the training curve and the checkpoints are;
# then the claim itself: a 2.2M-node store 2.8x a memory cgroup (page cache
# included), ginex against degree and mmap (the PyG-style baseline), each
# epoch in its own cgroup (`ginex bench outofcore`; skipped with the reason
# where cgroup v1 memory is not writable, e.g. not root).
# Everything goes under ./work/ (ignored by git). GINEX_DEMO_NODES sets the
# graph size.
set -euo pipefail
cd "$(dirname "$0")/.."

NODES="${GINEX_DEMO_NODES:-200000}"
WORK="${GINEX_WORK:-work}"
STORE="$WORK/demo-$NODES"
# Each step's header carries the time since the start, so a slow step shows.
step() { printf '==> [%d:%02d] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }

step "libtorch (torch 2.13.0 in a project-local venv; a few minutes the first time) beside cargo build --release"
# The venv's install (mostly unpacking wheels: one core and the disk) runs
# while cargo compiles everything that does not need libtorch. The one
# step that does, torch-sys's build script, asks `python3` where torch is:
# a stand-in `python3` first on cargo's PATH waits for the venv, then runs
# the venv's.
mkdir -p "$WORK"
VENV="${GINEX_VENV:-$PWD/.venv}"
SETUP_LOG="$WORK/setup-libtorch.log"
SHIM="$(mktemp -d)"
trap 'rm -rf "$SHIM"' EXIT
(bash tools/setup-libtorch.sh >"$SETUP_LOG" 2>&1 && touch "$SHIM/ready" || touch "$SHIM/failed") &
SETUP=$!
printf '%s\n' '#!/usr/bin/env bash' \
  "until [ -e '$SHIM/ready' ] || [ -e '$SHIM/failed' ]; do sleep 0.5; done" \
  "[ -e '$SHIM/ready' ] || { echo 'tools/setup-libtorch.sh failed: see $SETUP_LOG' >&2; exit 1; }" \
  "exec '$VENV/bin/python3' \"\$@\"" >"$SHIM/python3"
chmod +x "$SHIM/python3"
# The two tools the demo runs, without line tables: the build is most of
# the main job's five minutes on a fresh machine.
built=0
CARGO_PROFILE_RELEASE_DEBUG=false LIBTORCH_USE_PYTORCH=1 PATH="$SHIM:$PATH" \
  cargo build --release -p ginex-cli --features train --bin ginex --bin ginex-dump && built=1
wait "$SETUP" || true
if [ ! -e "$SHIM/ready" ]; then
  echo "tools/setup-libtorch.sh failed; its output ($SETUP_LOG):" >&2
  cat "$SETUP_LOG" >&2
  exit 1
fi
[ "$built" = 1 ] || exit 1
eval "$(bash tools/setup-libtorch.sh --env)"
rm -rf "$STORE"

step "ginex gen ($NODES nodes)"
target/release/ginex gen --nodes "$NODES" --avg-degree 15 --dim 128 --classes 8 --split 0.2,0.1,0.1 --seed 1 --out "$STORE"
step "ginex-dump"
target/release/ginex-dump "$STORE"
step "ginex-dump --verify"
target/release/ginex-dump --verify "$STORE"
step "ginex epoch (one epoch of data preparation per policy: ginex, lru, none)"
for policy in ginex lru; do
  target/release/ginex epoch "$STORE" --policy "$policy" --feature-cache-bytes 16MiB --neighbor-cache-bytes 8MiB \
    --run-dir "$WORK/runs" --report "$WORK/epoch-$policy.json" >/dev/null
done
target/release/ginex epoch "$STORE" --policy none --run-dir "$WORK/runs" --report "$WORK/epoch-none.json" >/dev/null
step "ginex train (GraphSAGE, 4 epochs)"
rm -rf "$WORK/ckpt"
target/release/ginex train "$STORE" --model sage --fanouts 10,5 --batch-size 1000 --hidden 128 --lr 0.01 --epochs 4 \
  --policy ginex --feature-cache-bytes 16MiB --neighbor-cache-bytes 8MiB --run-dir "$WORK/runs" \
  --checkpoint "$WORK/ckpt" --report "$WORK/train-report.json" --plot "$WORK/train-curve.svg"

step "ginex bench outofcore (features 2.9x a memory cgroup: ginex, degree, mmap)"
CAPPED="$WORK/demo-capped"
rm -rf "$CAPPED" "$WORK/capped.json"
target/release/ginex gen --quiet --nodes 2200000 --avg-degree 10 --dim 128 --classes 8 --split 0.015,0.01,0.01 \
  --seed 2 --out "$CAPPED" >/dev/null
if ! target/release/ginex bench outofcore "$CAPPED" --memory 384MiB --policies ginex,degree,mmap \
    --json "$WORK/capped.json" -- --fanouts 10,5 >/dev/null; then
  echo "  (the capped comparison did not run: see its message above)"
  rm -f "$WORK/capped.json"
fi
rm -rf "$CAPPED" "$CAPPED.ncache" "$CAPPED.runs"

step "summary"
python3 - "$WORK" "$STORE" "$NODES" <<'PY'
import json, os, sys
work, store, nodes = sys.argv[1:]
train = json.load(open(f"{work}/train-report.json"))
epochs = train["epochs"]
best = train.get("best_epoch")
acc = train.get("test_acc_at_best_valid")
if acc is None:
    print("  test accuracy: not measured (no validation split)")
else:
    print(f"  test accuracy: {acc:.4f} ({train['model']} after epoch {best} of 0-{len(epochs) - 1}, the best validation accuracy: {train['best_valid_acc']:.4f})")
print(f"  epoch time, data preparation alone (ginex epoch, {int(nodes):,} nodes; ginex and lru with a 16 MiB feature")
print(f"  cache and an 8 MiB neighbor cache, none with neither):")
wall = {}
for policy in ("ginex", "lru", "none"):
    r = json.load(open(f"{work}/epoch-{policy}.json"))
    s = r["seconds"]
    # The neighbor cache is built once per store and size; later runs reuse it.
    wall[policy] = s["wall"] - s.get("neighbor_cache_build", 0.0)
    built = s.get("neighbor_cache_build", 0.0)
    note = f" (+ {built:.1f} s building the neighbor cache, once)" if built > 0.05 else ""
    print(f"    {policy:<6} {wall[policy]:7.2f} s  miss ratio {r['miss_ratio']:.3f}{note}")
ratios = ", ".join(f"{p} {wall['none'] / max(wall[p], 1e-9):.2f}x" for p in ("ginex", "lru"))
print(f"    speed-up over no cache: {ratios}")
per_epoch = sum(e["wall_seconds"] for e in epochs) / max(len(epochs), 1)
print(f"  training: {len(epochs)} epochs, {per_epoch:.1f} s per epoch with policy {train['policy']} (evaluation not included)")
capped = f"{work}/capped.json"
if os.path.exists(capped):
    c = json.load(open(capped))
    st, par = c["store"], c["parameters"]
    print(f"  out of core: {st['nodes']:,} nodes, {st['feature_bytes'] / 2**20:.0f} MiB of features = "
          f"{st['feature_bytes_over_memory']:.2f}x a {par['memory']} memory cgroup (page cache included, dropped before each run):")
    for s in c["summary"]:
        med = s["wall_seconds"]["median"]
        print(f"    {s['policy']:<6} {med:7.2f} s  {s['ratio_to_baseline']:.2f}x ginex's time, OOM kills {s['oom_kills']}")
    print(f"    ({par['cgroup']}; every run in {capped})")
print(f"  report {work}/train-report.json, training curve {work}/train-curve.svg, epoch reports {work}/epoch-*.json")
print(f"  checkpoints in {work}/ckpt (the best epoch is kept); logits of every node:")
print(f"    target/release/ginex predict {store} --checkpoint {work}/ckpt --out {work}/logits.npy")
PY
step "done"
