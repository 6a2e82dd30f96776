#!/usr/bin/env python3
"""Gives a raw dataset (as `ginex gen --raw DIR` writes it) random node ids.

The same graph, features, labels and splits, with node v renamed to
perm[v] for a seeded random permutation perm of 0..N: the layout a dataset
whose ids carry no locality has (hash-assigned or crawled ids). Used to
measure `--reorder auto` on a random-id store (docs/lab/performance-journal.md,
"Reorder where it pays"):

    ginex gen --nodes 1000000 --avg-degree 15 --dim 128 --raw work/raw
    python3 tools/permute_ids.py work/raw work/raw-random --seed 1
    ginex-import files --edges work/raw-random/edges.npy \
        --features work/raw-random/features.npy \
        --labels work/raw-random/labels.npy \
        --train-ids work/raw-random/train_ids.npy \
        --valid-ids work/raw-random/valid_ids.npy \
        --test-ids work/raw-random/test_ids.npy --reorder none --out work/random

Reads features through a memory map and writes them a block at a time, so
memory stays near the edge arrays plus one block. Needs numpy.
"""

import argparse
import json
import os
import shutil
import sys

import numpy as np

BLOCK_ROWS = 1 << 16


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", help="raw directory from `ginex gen --raw`")
    ap.add_argument("dst", help="new directory (refused if it exists)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if os.path.exists(a.dst):
        print(f"{a.dst} already exists", file=sys.stderr)
        return 1
    feats = np.load(os.path.join(a.src, "features.npy"), mmap_mode="r")
    n = feats.shape[0]
    rng = np.random.default_rng(a.seed)
    order = rng.permutation(n)  # order[new] = old
    new_of = np.empty(n, dtype=np.int64)  # new_of[old] = new
    new_of[order] = np.arange(n, dtype=np.int64)
    os.makedirs(a.dst)
    out = np.lib.format.open_memmap(
        os.path.join(a.dst, "features.npy"), mode="w+", dtype=feats.dtype, shape=feats.shape
    )
    for lo in range(0, n, BLOCK_ROWS):
        hi = min(n, lo + BLOCK_ROWS)
        out[lo:hi] = feats[np.sort(order[lo:hi])][np.argsort(np.argsort(order[lo:hi]))]
    out.flush()
    del out
    labels = np.load(os.path.join(a.src, "labels.npy"))
    np.save(os.path.join(a.dst, "labels.npy"), labels[order])
    edges = np.load(os.path.join(a.src, "edges.npy"))
    np.save(os.path.join(a.dst, "edges.npy"), new_of[edges].astype(edges.dtype))
    for split in ("train", "valid", "test"):
        path = os.path.join(a.src, f"{split}_ids.npy")
        if os.path.exists(path):
            ids = np.load(path)
            np.save(os.path.join(a.dst, f"{split}_ids.npy"), np.sort(new_of[ids]).astype(ids.dtype))
    meta = os.path.join(a.src, "meta.json")
    if os.path.exists(meta):
        with open(meta) as f:
            m = json.load(f)
        m["node_ids"] = f"permuted by tools/permute_ids.py, seed {a.seed}"
        with open(os.path.join(a.dst, "meta.json"), "w") as f:
            json.dump(m, f, indent=2)
    print(f"{n} nodes, {len(edges)} edges renamed by a random permutation (seed {a.seed}) into {a.dst}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
