"""Throughput of the PyG drop-in against ginex.Loader (the issue 41 target:
``ginex.pyg.NeighborLoader`` iterates >= 0.9x the seeds/s of
``ginex.Loader`` on the same store and memory), and with ``--link K`` the
link drop-in ``ginex.pyg.LinkNeighborLoader`` against ``ginex.LinkLoader``
(K negatives per positive, binary mode; positive edges/s, every edge of the
graph a positive).

    python python/bench_pyg.py --ginex target/release/ginex [--store S] [--memory 1GiB] [--link K]

Without --store it generates one under --work: ``ginex gen`` with --ginex,
else uniform random edges through ``ginex.import_arrays``. Both
sides run the same epochs (same store, policy, memory, fanouts, batch size,
seed, shuffled training split), interleaved rep by rep; each times
``iter(loader)`` to the end of a loop that touches every batch as a
trainer does (x, y, edge_index). The drop-in's batches are PyG ``Data``
objects built by PyG's NodeLoader. Prints the machine, load, the dataset
and the parameters with every figure; the ratio is median vs median.
"""

import argparse
import os
import platform
import statistics
import subprocess
import tempfile
import time

import numpy as np
import torch

import ginex
from ginex.pyg import LinkNeighborLoader, NeighborLoader


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ginex", help="the ginex binary, to generate a store")
    ap.add_argument("--store")
    ap.add_argument("--work", default=None)
    ap.add_argument("--nodes", type=int, default=200000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--policy", default="ginex")
    ap.add_argument("--memory", default="1GiB")
    ap.add_argument("--fanouts", default="10,10")
    ap.add_argument("--batch-size", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--torch-threads", type=int, default=None,
                    help="torch.set_num_threads (default: torch's own). Only the drop-in calls torch "
                         "(PyG stacks row/col into edge_index); on an oversubscribed machine torch's "
                         "parallel copies wait on busy cores")
    ap.add_argument("--link", type=int, default=None, metavar="K",
                    help="time link batches (K negatives each) instead of node batches")
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="ginex-bench-pyg-")
    os.makedirs(work, exist_ok=True)
    store = a.store or os.path.join(work, "store")
    if not os.path.exists(store):
        if a.ginex:
            subprocess.run([a.ginex, "gen", "--nodes", str(a.nodes), "--dim", str(a.dim), "--out", store],
                           check=True, capture_output=True)
        else:  # uniform random edges (avg in-degree 10), 10 % training nodes
            rng = np.random.default_rng(0)
            n = a.nodes
            ginex.import_arrays(store, rng.integers(0, n, (2, 10 * n)),
                                x=rng.standard_normal((n, a.dim), dtype=np.float32),
                                y=rng.integers(0, 10, n), train=np.arange(0, n, 10))
    fanouts = [int(f) for f in a.fanouts.split(",")]
    if a.torch_threads:
        torch.set_num_threads(a.torch_threads)
    s = ginex.Store(store)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()}")
    print(f"store: {store}: {s.num_nodes} nodes, {s.num_edges} edges, dim {s.feature_dim} {s.dtype}")
    print(f"parameters: policy {a.policy}, memory {a.memory}, fanouts {fanouts}, "
          f"batch {a.batch_size}, {'every edge' if a.link is not None else 'split train'} shuffled, "
          f"seed 0, {a.reps} reps, "
          f"torch threads {torch.get_num_threads()}")

    if a.link is None:
        native = ginex.Loader(s, fanouts, batch_size=a.batch_size, policy=a.policy, memory=a.memory, seed=0)
        dropin = NeighborLoader(s, num_neighbors=fanouts, input_nodes="train", batch_size=a.batch_size,
                                shuffle=True, policy=a.policy, memory=a.memory, seed=0)
        names, unit = ("ginex.Loader", "ginex.pyg.NeighborLoader"), "seeds"
    else:
        print(f"link: {a.link} negatives per positive, binary; batch = positive edges")
        native = ginex.LinkLoader(s, fanouts, batch_size=a.batch_size, neg=a.link, policy=a.policy,
                                  memory=a.memory, seed=0)
        dropin = LinkNeighborLoader(s, num_neighbors=fanouts, batch_size=a.batch_size,
                                    neg_sampling_ratio=a.link, shuffle=True, policy=a.policy,
                                    memory=a.memory, seed=0)
        names, unit = ("ginex.LinkLoader", "ginex.pyg.LinkNeighborLoader"), "positives"
    times = {name: [] for name in names}
    seeds = {}
    for rep in range(a.reps):
        for name, loader in zip(names, (native, dropin)):
            n = 0
            t = time.perf_counter()
            for b in loader:
                if a.link is None:
                    _ = (b.x, b.y, b.edge_index)
                    n += b.batch_size
                else:
                    _ = (b.x, b.edge_index, b.edge_label_index, b.edge_label)
                    n += int((b.edge_label == 1).sum())
            times[name].append(time.perf_counter() - t)
            seeds[name] = n
    assert seeds[names[0]] == seeds[names[1]]
    n = seeds[names[0]]
    med = {k: statistics.median(v) for k, v in times.items()}
    for k, v in times.items():
        print(f"{k:30s}: {med[k]:.3f} s/epoch  {n / med[k]:10.0f} {unit}/s  (runs {[round(x, 3) for x in v]})")
    print(f"ratio (drop-in / {names[0]} {unit}/s): {med[names[0]] / med[names[1]]:.3f}")
    print(f"load after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
