"""Loader throughput from Python vs `ginex epoch`, same store, policy and
memory, interleaved in one run (the issue 18 benchmark).

    python python/bench_loader.py --ginex target/release/ginex [--store S] [--policy ginex]

Without --store it generates one with `ginex gen` under --work. The Python
side times iter(loader) to the end of a loop that touches every batch the
way a trainer does (x, y and each layer's edge_index as numpy arrays); the
native side is `ginex epoch`'s own epoch wall time (run_epoch), so process
start and planning are outside both. Prints the machine, the dataset and
the parameters with every figure; the ratio is median vs median.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import ginex


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ginex", required=True, help="the ginex binary (a release build)")
    ap.add_argument("--store")
    ap.add_argument("--work", default=None)
    ap.add_argument("--nodes", type=int, default=200000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--policy", default="ginex")
    ap.add_argument("--memory", default="1GiB")
    ap.add_argument("--fanouts", default="10,10")
    ap.add_argument("--batch-size", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="ginex-bench-py-")
    store = a.store or os.path.join(work, "store")
    if not os.path.exists(store):
        subprocess.run([a.ginex, "gen", "--nodes", str(a.nodes), "--dim", str(a.dim), "--out", store],
                       check=True, capture_output=True)
    fanouts = [int(f) for f in a.fanouts.split(",")]
    s = ginex.Store(store)
    params = dict(policy=a.policy, memory=a.memory, fanouts=fanouts, batch_size=a.batch_size, seed=0)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"store: {store}: {s.num_nodes} nodes, {s.num_edges} edges, dim {s.feature_dim} {s.dtype}")
    print(f"parameters: {params}")

    native, python = [], []
    for rep in range(a.reps):
        report = os.path.join(work, f"epoch-{rep}.json")
        subprocess.run([a.ginex, "epoch", store, "--policy", a.policy, "--memory", a.memory,
                        "--fanouts", a.fanouts, "--batch-size", str(a.batch_size), "--seed", "0",
                        "--report", report], check=True, capture_output=True)
        r = json.load(open(report))
        native.append((r["seconds"]["wall"], len(r["per_batch"])))

        loader = ginex.Loader(s, **params)
        n_seeds = n_batches = 0
        t = time.perf_counter()
        for b in loader:
            n_seeds += b.batch_size
            n_batches += 1
            _ = (b.x, b.y, [e for e in b.edge_index])
        python.append((time.perf_counter() - t, n_batches, n_seeds))
        assert [p["checksum"] for p in loader.report["per_batch"]] == [p["checksum"] for p in r["per_batch"]]

    n_seeds = python[0][2]
    med_native = statistics.median(w for w, _ in native)
    med_python = statistics.median(w for w, _, _ in python)
    batches = native[0][1]
    print(f"ginex epoch : {med_native:.3f} s/epoch  {n_seeds / med_native:10.0f} seeds/s  {batches / med_native:8.1f} batches/s  (runs {[round(w, 3) for w, _ in native]})")
    print(f"Python loop : {med_python:.3f} s/epoch  {n_seeds / med_python:10.0f} seeds/s  {batches / med_python:8.1f} batches/s  (runs {[round(w, 3) for w, _, _ in python]})")
    print(f"ratio (Python / native throughput): {med_native / med_python:.3f}")


if __name__ == "__main__":
    sys.exit(main())
