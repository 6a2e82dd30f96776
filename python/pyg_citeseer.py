"""Accuracy through the drop-in: PyG's GraphSAGE (torch_geometric.nn)
trained on Citeseer (Planetoid public split) with batches from
``ginex.pyg.NeighborLoader`` (the issue 41 target: >= 0.68 test accuracy
over 3 seeds).

    python python/pyg_citeseer.py [--data DIR] [--work work/citeseer] [--epochs 50] [--seeds 0,1,2]

--data defaults to $CITESEER or ../shared/data/citeseer beside the
checkout (as tools/citeseer.sh).

Imports the .npy files into a store (undirected) once, then per seed trains
a 2-layer GraphSAGE (hidden 64, dropout 0.5, Adam lr 0.01, weight decay
5e-4) for --epochs epochs (default 50) on sampled batches (fanouts 25, 10; the 120
training nodes in batches of 32, shuffled), evaluates validation and test
with full fanouts (-1: exact, every in-neighbour) and reports the test
accuracy at the best validation epoch. Prints the machine, the dataset and
the parameters with the numbers.
"""

import argparse
import os
import platform
import statistics
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch_geometric.nn import GraphSAGE

import ginex
from ginex.pyg import NeighborLoader


def store_of(data, work):
    path = os.path.join(work, "citeseer.ginex")
    if os.path.exists(path):
        return ginex.Store(path)
    os.makedirs(work, exist_ok=True)
    load = lambda name: np.load(os.path.join(data, name + ".npy"))  # noqa: E731
    return ginex.import_arrays(path, load("edges").T, x=load("features"), y=load("labels"),
                               train=load("train"), valid=load("valid"), test=load("test"),
                               undirected=True)


@torch.no_grad()
def accuracy(model, loader):
    model.eval()
    correct = total = 0
    for b in loader:
        out = model(b.x, b.edge_index)[: b.batch_size]
        correct += int((out.argmax(-1) == b.y[: b.batch_size]).sum())
        total += b.batch_size
    return correct / total


def run(store, seed, epochs, fanouts):
    torch.manual_seed(seed)
    train = NeighborLoader(store, num_neighbors=fanouts, input_nodes="train", batch_size=32,
                           shuffle=True, seed=seed)
    val = NeighborLoader(store, num_neighbors=[-1, -1], input_nodes="val", batch_size=500)
    test = NeighborLoader(store, num_neighbors=[-1, -1], input_nodes="test", batch_size=1000)
    model = GraphSAGE(store.feature_dim, 64, num_layers=2, out_channels=store.num_classes, dropout=0.5)
    opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    best = (-1.0, 0.0, 0)
    for epoch in range(epochs):
        model.train()
        for b in train:
            opt.zero_grad()
            out = model(b.x, b.edge_index)[: b.batch_size]
            F.cross_entropy(out, b.y[: b.batch_size]).backward()
            opt.step()
        v = accuracy(model, val)
        if v > best[0]:
            best = (v, accuracy(model, test), epoch)
    return best


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    ap.add_argument("--data", default=os.environ.get(
        "CITESEER", os.path.join(root, "..", "shared", "data", "citeseer")))
    ap.add_argument("--work", default=os.path.join(here, "..", "work", "citeseer"))
    ap.add_argument("--epochs", type=int, default=50)
    ap.add_argument("--threads", type=int, default=1,
                    help="torch's intra-op threads (1: the model is small; more threads only contend on a shared machine)")
    ap.add_argument("--seeds", default="0,1,2")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    store = store_of(a.data, a.work)
    fanouts = [25, 10]
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, load {os.getloadavg()}")
    print(f"dataset: {a.data}: {store.num_nodes} nodes, {store.num_edges} edges (both directions), "
          f"dim {store.feature_dim}, {store.num_classes} classes")
    print(f"parameters: GraphSAGE 2 layers hidden 64 dropout 0.5, Adam lr 0.01 wd 5e-4, "
          f"fanouts {fanouts}, batch 32, {a.epochs} epochs, test at the best validation epoch, "
          f"{a.threads} torch thread(s)")
    accs = []
    for seed in (int(s) for s in a.seeds.split(",")):
        t = time.perf_counter()
        val, acc, epoch = run(store, seed, a.epochs, fanouts)
        accs.append(acc)
        print(f"seed {seed}: val {val:.4f} test {acc:.4f} (epoch {epoch}), {time.perf_counter() - t:.1f} s")
    print(f"test accuracy: mean {statistics.mean(accs):.4f}, min {min(accs):.4f}, "
          f"max {max(accs):.4f} over {len(accs)} seeds")


if __name__ == "__main__":
    main()
