#!/usr/bin/env bash
# Side by side: ginex.pyg.NeighborLoader against PyG's own NeighborLoader
# (features a numpy.memmap, topology in memory) and DGL GraphBolt, on the
# same generated store, each run one cold epoch in its own memory cgroup
# (page cache included, dropped first) at several dataset/memory ratios.
# NOT part of tools/check.sh: it downloads PyTorch twice (~4 GB each with
# its CUDA libraries), compiles torch-scatter and torch-sparse from source,
# and builds ginex's wheel in release mode. Needs root (cgroups,
# drop_caches). Usage and results: tools/peers/README.md, docs/lab/peers.md.
#
#   bash tools/peers/run.sh setup   # venvs + builds only
#   bash tools/peers/run.sh store   # the store and its GraphBolt export
#   bash tools/peers/run.sh bench   # the timed runs -> $PEERS_DIR/results.jsonl
#   bash tools/peers/run.sh report  # the tables from results.jsonl
#   bash tools/peers/run.sh         # all four
#
# Knobs (environment): PEERS_DIR (default work/peers: venvs, store, results),
# TORCH_VERSION (PyG venv), DGL_VERSION / DGL_TORCH_VERSION (DGL venv),
# NODES DIM AVG_DEGREE SPLIT (the store), RUNTIME_MIB, FANOUTS BATCH WORKERS SEED,
# RATIOS (features/memory; "fits" = no squeeze), MODES (load train),
# PEERS (pyg ginex graphbolt), ROUNDS, RUN_TIMEOUT (seconds per run).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
TOOLS=$ROOT/tools/peers
PEERS_DIR=${PEERS_DIR:-$ROOT/work/peers}
TORCH_VERSION=${TORCH_VERSION:-2.15.0}
PYG_VERSION=${PYG_VERSION:-2.8.1}
DGL_VERSION=${DGL_VERSION:-2.2.1}
DGL_FALLBACK=${DGL_FALLBACK:-2.1.0}         # the newest Linux wheel on PyPI
DGL_TORCH_VERSION=${DGL_TORCH_VERSION:-2.2.1}  # the newest torch dgl 2.1.0 ships GraphBolt for
NODES=${NODES:-500000}
DIM=${DIM:-1024}
AVG_DEGREE=${AVG_DEGREE:-10}
SPLIT=${SPLIT:-0.025,0.005,0.005}
FANOUTS=${FANOUTS:-10,5}
BATCH=${BATCH:-256}
WORKERS=${WORKERS:-2}
SEED=${SEED:-0}
RATIOS=${RATIOS:-fits 2.9 5}
# Input nodes of every run: MAX_SEEDS train ids drawn once (seed 0) into
# $PEERS_DIR/seeds-N.npy, the same for every peer; 0 = the whole train split.
MAX_SEEDS=${MAX_SEEDS:-4096}
MODES=${MODES:-load train}
PEERS=${PEERS:-pyg ginex graphbolt}
ROUNDS=${ROUNDS:-1}
FIRST_ROUND=${FIRST_ROUND:-1}  # to add rounds to an earlier bench
RUN_TIMEOUT=${RUN_TIMEOUT:-900}
# Each cgroup's limit is RUNTIME_MIB (Python, torch and its libraries, the
# in-memory topology: what every peer needs before it reads a feature; 1 GiB
# covers the heaviest, torch 2.15 + PyG + ginex, measured at 0.95 GiB after
# its imports) plus the feature bytes over the ratio.
RUNTIME_MIB=${RUNTIME_MIB:-1024}
PYG_VENV=$PEERS_DIR/venv-pyg
DGL_VENV=$PEERS_DIR/venv-dgl
STORE=$PEERS_DIR/store
EXPORT=$PEERS_DIR/gb
BIN=${GINEX_BIN:-$ROOT/target/release}  # ginex and ginex-export
RESULTS=$PEERS_DIR/results.jsonl
mkdir -p "$PEERS_DIR"
log() { echo "==> $*" >&2; }

setup_pyg() {
    if "$PYG_VENV/bin/python" -c "import torch_sparse, torch_geometric, ginex.pyg" 2>/dev/null; then
        return
    fi
    log "PyG venv $PYG_VENV: torch==$TORCH_VERSION, torch-scatter 2.1.2 and torch-sparse 0.6.18 from source"
    [ -x "$PYG_VENV/bin/python" ] || python3 -m venv "$PYG_VENV"
    "$PYG_VENV/bin/pip" install -q "torch==$TORCH_VERSION" numpy scipy setuptools wheel
    # CPU-only builds (FORCE_ONLY_CPU) against the torch just installed
    # (--no-build-isolation; --no-cache-dir, or pip's wheel cache would hand
    # a wheel built against another torch to a new venv), the two side by
    # side (torch-sparse needs torch-scatter to import, not to build).
    # BUILD_NICE (default 10): under the kernel's autogroup scheduling it
    # only orders them against this session's other processes; expect
    # ~25 CPU-minutes for the 30 translation units.
    local pkg pids=()
    for pkg in torch-scatter==2.1.2 torch-sparse==0.6.18; do
        FORCE_ONLY_CPU=1 nice -n "${BUILD_NICE:-10}" "$PYG_VENV/bin/pip" install -v \
            --no-build-isolation --no-cache-dir --no-deps --no-binary "${pkg%%=*}" "$pkg" \
            >"$PEERS_DIR/${pkg%%=*}-build.log" 2>&1 &
        pids+=($!)
    done
    for pkg in torch-scatter torch-sparse; do
        wait "${pids[0]}" || { log "$pkg failed to build: tail of $PEERS_DIR/$pkg-build.log"
                               tail -30 "$PEERS_DIR/$pkg-build.log" >&2; }
        pids=("${pids[@]:1}")
    done
    "$PYG_VENV/bin/pip" install -q "torch_geometric==$PYG_VERSION"
    log "ginex wheel (release) from ./python"
    nice -n 10 "$PYG_VENV/bin/pip" install -q ./python
}

setup_dgl() {
    if "$DGL_VENV/bin/python" -c "import dgl.graphbolt" 2>/dev/null; then
        return
    fi
    [ -x "$DGL_VENV/bin/python" ] || python3 -m venv "$DGL_VENV"
    log "DGL venv $DGL_VENV: dgl==$DGL_VERSION"
    if ! "$DGL_VENV/bin/pip" install "dgl==$DGL_VERSION" >"$PEERS_DIR/dgl-install.log" 2>&1; then
        log "dgl==$DGL_VERSION does not install here ($(grep -m1 ERROR "$PEERS_DIR/dgl-install.log"));" \
            "falling back to dgl==$DGL_FALLBACK with torch==$DGL_TORCH_VERSION"
        "$DGL_VENV/bin/pip" install -q "torch==$DGL_TORCH_VERSION" "dgl==$DGL_FALLBACK" "numpy<2" \
            "torchdata==0.7.1" pydantic pyyaml pandas psutil
    fi
}

setup() {
    setup_pyg
    setup_dgl
    log "ginex CLI (release)"
    cargo build -q --release -p ginex-cli --bin ginex --bin ginex-export
}

make_store() {
    if [ ! -d "$STORE" ]; then
        log "store: $NODES nodes, dim $DIM f32, avg degree $AVG_DEGREE, split $SPLIT"
        "$BIN/ginex" gen --quiet --nodes "$NODES" --dim "$DIM" --avg-degree "$AVG_DEGREE" \
            --split "$SPLIT" --seed 7 --reorder none --layout-fanouts "$FANOUTS" \
            --layout-batch-size "$BATCH" --out "$STORE"
    fi
    if [ ! -d "$EXPORT" ]; then
        log "GraphBolt export"
        "$BIN/ginex-export" graphbolt "$STORE" --out "$EXPORT" -q
    fi
    if [ "$DGL_VENV" ] && "$DGL_VENV/bin/python" -c "import dgl.graphbolt" 2>/dev/null \
        && [ ! -d "$EXPORT/preprocessed" ]; then
        log "GraphBolt preprocessing (once, untimed)"
        "$DGL_VENV/bin/python" "$TOOLS/dgl_run.py" --export "$EXPORT" --prepare
    fi
}

seeds_file() {
    [ "$MAX_SEEDS" = 0 ] && return
    local f=$PEERS_DIR/seeds-$MAX_SEEDS.npy
    [ -f "$f" ] || "$PYG_VENV/bin/python" -c "import numpy as np, sys
t = np.load('$EXPORT/set/train_seed_nodes.npy')
np.save('$f', np.sort(np.random.default_rng(0).permutation(t)[:$MAX_SEEDS]))"
    echo "$f"
}

feature_bytes() { stat -c %s "$EXPORT/data/feat.npy"; }

one_run() {  # peer mode ratio round
    local peer=$1 mode=$2 ratio=$3 round=$4 feat limit py args drop=() warm=() seeds
    feat=$(feature_bytes)
    if [ "$ratio" = fits ]; then
        # Everything fits: no squeeze and a warm page cache (both feature
        # files read once first), the steady state of epochs after the first.
        limit=$((feat * 2 + (4 << 30)))
        drop=(--no-drop)
        warm=("$STORE/features.pages" "$EXPORT/preprocessed/data/feat.npy" "$EXPORT/data/feat.npy")
    else
        limit=$(python3 -c "print(int($feat / $ratio) + ($RUNTIME_MIB << 20))")
    fi
    args=(--fanouts "$FANOUTS" --batch-size "$BATCH" --workers "$WORKERS" --seed "$SEED")
    [ "$mode" = train ] && args+=(--train)
    seeds=$(seeds_file)
    [ -n "$seeds" ] && args+=(--seeds "$seeds")
    case $peer in
        pyg) py=("$PYG_VENV/bin/python" "$TOOLS/pyg_run.py" --impl pyg --export "$EXPORT") ;;
        ginex) py=("$PYG_VENV/bin/python" "$TOOLS/pyg_run.py" --impl ginex --store "$STORE") ;;
        graphbolt) py=("$DGL_VENV/bin/python" "$TOOLS/dgl_run.py" --export "$EXPORT") ;;
    esac
    local out=$PEERS_DIR/runs/$peer-$mode-$ratio-$round.log load
    mkdir -p "$PEERS_DIR/runs"
    log "$peer $mode ratio=$ratio round=$round limit=$limit"
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    # The warm-up reads happen under the lock too: outside it they would
    # fill the page cache under another bench's cold run.
    flock "${GINEX_BENCH_LOCK:-/tmp/ginex-bench.lock}" bash -c 'for f in "${@:2:$1}"; do cat "$f" >/dev/null 2>&1; done
        shift $(($1 + 1)); exec "$@"' _ "${#warm[@]}" "${warm[@]}" \
        python3 "$TOOLS/cgrun.py" "${drop[@]}" --limit "$limit" --name "peers-$peer" -- \
        timeout "$RUN_TIMEOUT" "${py[@]}" "${args[@]}" >"$out" 2>&1 || true
    python3 "$TOOLS/collect.py" --log "$out" --peer "$peer" --mode "$mode" --ratio "$ratio" \
        --round "$round" --load-before "$load" --load-after "$(cut -d' ' -f1-3 /proc/loadavg)" \
        --feature-bytes "$feat" >>"$RESULTS"
    tail -1 "$RESULTS" >&2
}

bench() {
    local round ratio mode peer
    for round in $(seq "$FIRST_ROUND" "$ROUNDS"); do
        for ratio in $RATIOS; do
            for mode in $MODES; do
                # alternate the order of the peers each round
                local order=($PEERS)
                if [ $((round % 2)) = 0 ]; then
                    order=($(printf '%s\n' "${order[@]}" | tac))
                fi
                for peer in "${order[@]}"; do
                    one_run "$peer" "$mode" "$ratio" "$round"
                done
            done
        done
    done
}

report() { python3 "$TOOLS/collect.py" --report "$RESULTS"; }

case "${1:-all}" in
    setup) setup ;;
    store) make_store ;;
    bench) bench ;;
    report) report ;;
    all) setup; make_store; bench; report ;;
    *) echo "usage: $0 [setup|store|bench|report|all]" >&2; exit 2 ;;
esac
