#!/usr/bin/env bash
# Real-client check of ginex-export (NOT part of tools/check.sh: it downloads
# DGL and PyTorch from PyPI into a throwaway venv, about 3 GB with PyTorch's
# CUDA libraries).
#
#   1. generates a small store (f32 features) and an f16 twin,
#   2. exports them with `ginex-export graphbolt` (the twin with --keep-f16)
#      and `ginex-export dgl`,
#   3. loads the GraphBolt export with dgl.graphbolt.OnDiskDataset(DIR).load()
#      and compares node/edge counts, a sample of feature rows and labels, and
#      the split sizes with `ginex-dump --json`,
#   4. builds a DGLGraph from the chunked export (edge chunks + node_data) and
#      runs dgl.distributed.partition_graph(..., num_parts=2) to completion,
#      then loads both partitions back and checks they cover every node,
#   5. prints one closing line saying what matched.
#
# DGL_VERSION (default 2.1.0) and TORCH_VERSION (default 2.2.1: the newest
# PyTorch that dgl 2.1.0's wheel ships GraphBolt and tensoradapter libraries
# for) choose the client; GINEX_INTEROP_VENV the venv (default
# /tmp/ginex-dgl-venv, reused when present); GINEX_WORK the scratch directory
# (default ./work; this script uses ./work/interop); GINEX_BIN a directory of
# prebuilt binaries (default: build target/debug).
set -euo pipefail
cd "$(dirname "$0")/../.."

DGL_VERSION="${DGL_VERSION:-2.1.0}"
TORCH_VERSION="${TORCH_VERSION:-2.2.1}"
VENV="${GINEX_INTEROP_VENV:-/tmp/ginex-dgl-venv}"
WORK="${GINEX_WORK:-work}/interop"
PY="$VENV/bin/python"

if ! "$PY" -c "import dgl, torch; assert dgl.__version__ == '$DGL_VERSION' and torch.__version__.split('+')[0] == '$TORCH_VERSION'" 2>/dev/null; then
    echo "==> venv $VENV: dgl==$DGL_VERSION torch==$TORCH_VERSION numpy<2 (PyPI)"
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip
    "$VENV/bin/pip" install -q "torch==$TORCH_VERSION" "dgl==$DGL_VERSION" "numpy<2" \
        "torchdata==0.7.1" pydantic pyyaml pandas
fi
"$PY" -c "import dgl, torch, numpy; print('    dgl', dgl.__version__, '/ torch', torch.__version__, '/ numpy', numpy.__version__)"

if [ -n "${GINEX_BIN:-}" ]; then
    BIN="$GINEX_BIN"   # prebuilt binaries (ginex, ginex-export, ginex-dump)
else
    echo "==> build"
    cargo build -q --bin ginex --bin ginex-export --bin ginex-dump
    BIN=target/debug
fi
rm -rf "$WORK"
mkdir -p "$WORK"

echo "==> a store: 5000 nodes, 16-dim f32 features, 7 classes, splits"
"$BIN/ginex" gen --quiet --nodes 5000 --avg-degree 10 --dim 16 --classes 7 \
    --split 0.6,0.2,0.2 --seed 11 --out "$WORK/store" >/dev/null
echo "==> ginex-export graphbolt / dgl"
"$BIN/ginex-export" graphbolt "$WORK/store" --out "$WORK/graphbolt" -q
"$BIN/ginex-export" dgl "$WORK/store" --out "$WORK/chunked" --chunks 3 -q
"$BIN/ginex" gen --quiet --nodes 5000 --avg-degree 10 --dim 16 --classes 7 \
    --split 0.6,0.2,0.2 --seed 11 --dtype f16 --out "$WORK/store-f16" >/dev/null
"$BIN/ginex-export" graphbolt "$WORK/store-f16" --out "$WORK/graphbolt-f16" --keep-f16 -q >/dev/null
"$BIN/ginex-dump" --json "$WORK/store-f16/features.pages" --limit 200 >"$WORK/features-f16.json"

"$BIN/ginex-dump" --json "$WORK/store" >"$WORK/summary.json"
"$BIN/ginex-dump" --json "$WORK/store/features.pages" --limit 200 >"$WORK/features.json"
"$BIN/ginex-dump" --json "$WORK/store/labels" --limit 200 >"$WORK/labels.json"

echo "==> DGL"
"$PY" - "$WORK" <<'PYEOF'
import json, os, sys
import numpy as np
import torch
import dgl
from dgl import graphbolt as gb

work = sys.argv[1]
load = lambda name: json.load(open(os.path.join(work, name)))
summary, feats, labels = load("summary.json"), load("features.json"), load("labels.json")
n, e = summary["manifest"]["num_nodes"], summary["manifest"]["num_edges"]
matched = []

def check(what, ok, detail=""):
    if not ok:
        sys.exit(f"MISMATCH: {what} {detail}")
    matched.append(what)

# GraphBolt.
ds = gb.OnDiskDataset(os.path.join(work, "graphbolt")).load()
g = ds.graph
check("graphbolt nodes", g.total_num_nodes == n, f"{g.total_num_nodes} != {n}")
check("graphbolt edges", g.total_num_edges == e, f"{g.total_num_edges} != {e}")
ids = torch.tensor([r["node"] for r in feats["rows"]])
want = np.array([r["values"] for r in feats["rows"]], dtype=np.float32)
got = ds.feature.read("node", None, "feat", ids).numpy()
check(f"{len(ids)} feature rows", np.array_equal(got, want))
want_l = np.array(labels["labels"])
got_l = ds.feature.read("node", None, "label", torch.arange(len(want_l))).numpy().reshape(-1)
check(f"{len(want_l)} labels", np.array_equal(got_l, want_l))
task = ds.tasks[0]
sizes = [len(task.train_set), len(task.validation_set), len(task.test_set)]
want_s = [summary["splits"][k] for k in ("train", "valid", "test")]
check("split sizes", sizes == want_s, f"{sizes} != {want_s}")
check("num_classes", task.metadata["num_classes"] == summary["manifest"]["num_classes"])
ds16 = gb.OnDiskDataset(os.path.join(work, "graphbolt-f16")).load()
f16 = load("features-f16.json")
got16 = ds16.feature.read("node", None, "feat", torch.tensor([r["node"] for r in f16["rows"]]))
check("float16 feature rows (--keep-f16)", got16.dtype == torch.float16 and
      np.array_equal(got16.float().numpy(), np.array([r["values"] for r in f16["rows"]], dtype=np.float32)))
indptr, indices = g.csc_indptr.numpy(), g.indices.numpy()

# DGL chunked graph format -> DGLGraph -> partition_graph.
cdir = os.path.join(work, "chunked")
meta = json.load(open(os.path.join(cdir, "metadata.json")))
et = meta["edge_type"][0]
chunks = [np.loadtxt(os.path.join(cdir, p), dtype=np.int64, ndmin=2).reshape(-1, 2)
          for p in meta["edges"][et]["data"]]
assert [len(c) for c in chunks] == meta["num_edges_per_chunk"][0]
edges = np.concatenate(chunks)
num_nodes = sum(meta["num_nodes_per_chunk"][0])
dg = dgl.graph((torch.from_numpy(edges[:, 0]), torch.from_numpy(edges[:, 1])), num_nodes=num_nodes)
for key, spec in meta["node_data"]["_N"].items():
    arr = np.concatenate([np.load(os.path.join(cdir, p)) for p in spec["data"]])
    dg.ndata[key] = torch.from_numpy(arr)
check("chunked nodes/edges", (dg.num_nodes(), dg.num_edges()) == (n, e))
# The same graph as GraphBolt's CSC: identical (dst, src) pairs.
gb_dst = np.repeat(np.arange(n), np.diff(indptr))
gb_pairs = np.stack([gb_dst, indices.astype(np.int64)], axis=1)
gb_pairs = gb_pairs[np.lexsort((gb_pairs[:, 1], gb_pairs[:, 0]))]
ch_pairs = edges[:, ::-1]
ch_pairs = ch_pairs[np.lexsort((ch_pairs[:, 1], ch_pairs[:, 0]))]
check("chunked edges == graphbolt CSC", np.array_equal(gb_pairs, ch_pairs))
check("chunked masks == split sizes",
      [int(dg.ndata[k].sum()) for k in ("train_mask", "val_mask", "test_mask")] == want_s)
check("chunked features == graphbolt features",
      np.array_equal(dg.ndata["feat"].numpy(), ds.feature.read("node", None, "feat", torch.arange(n)).numpy()))
out = os.path.join(work, "partitioned")
dgl.distributed.partition_graph(dg, "ginex", 2, out, part_method="metis", balance_edges=True)
inner = 0
for p in range(2):
    pg, nfeat, _, book, name, _, _ = dgl.distributed.load_partition(os.path.join(out, "ginex.json"), p)
    inner += int(pg.ndata["inner_node"].sum())
check("partition_graph(num_parts=2) covers every node", inner == n, f"{inner} != {n}")
print("dgl-check: all matched (dgl %s, torch %s): %s" % (dgl.__version__, torch.__version__, "; ".join(matched)))
PYEOF
