"""Training PyG's GraphSAGE (SAGEConv) on a ginex store through ginex.Loader.

The store is a ginex store (STORE argument), or, without one, a synthetic
graph made with numpy and imported with ginex.import_arrays (PyG users
import their own `data` the same way:
``ginex.import_arrays(path, data.edge_index, x=data.x, y=data.y,
train=data.train_mask, valid=data.val_mask, test=data.test_mask)``).

ginex.Loader yields, per batch, ``x`` (float32 rows of ``ids``, seeds
first), ``y`` (labels of the seeds) and per layer ``edge_index`` / ``size``
in NeighborLoader's hop order: ``edge_index[0]`` holds the edges into the
seeds, the last one the input layer's. A model applies them last to first.

Skipped (exit 0) when torch or torch_geometric is not installed.

    python examples/pyg_sage.py [STORE] [--epochs N]
"""

import argparse
import os
import sys
import tempfile

import numpy as np

import ginex

try:
    import torch
    import torch.nn.functional as F
    from torch_geometric.nn import SAGEConv
except ImportError as e:  # pragma: no cover - depends on the environment
    print(f"skipped: this example needs torch and torch_geometric ({e.name} is not installed)")
    sys.exit(0)


class SAGE(torch.nn.Module):
    def __init__(self, dim, hidden, classes, layers):
        super().__init__()
        sizes = [dim] + [hidden] * (layers - 1) + [classes]
        self.convs = torch.nn.ModuleList(SAGEConv(a, b) for a, b in zip(sizes, sizes[1:]))

    def forward(self, x, edge_index, size):
        # edge_index / size are in hop order (seeds first): the first conv
        # takes the input layer, the last one.
        for i, conv in enumerate(self.convs):
            ei, (num_src, num_dst) = edge_index[-1 - i], size[-1 - i]
            x = conv((x[:num_src], x[:num_dst]), ei)
            if i + 1 < len(self.convs):
                x = F.relu(x)
        return x


def synthetic_store(path, n=20000, classes=8, dim=32, degree=10):
    rng = np.random.default_rng(0)
    y = rng.integers(0, classes, n)
    x = (rng.normal(size=(classes, dim))[y] + 2 * rng.normal(size=(n, dim))).astype(np.float32)
    dst = np.repeat(np.arange(n), degree)
    src = rng.integers(0, n, dst.size)
    same = rng.random(dst.size) < 0.8
    for c in range(classes):
        pick = same & (y[dst] == c)
        src[pick] = rng.choice(np.flatnonzero(y == c), pick.sum())
    train = np.zeros(n, dtype=bool)
    train[: n // 2] = True
    test = ~train
    return ginex.import_arrays(path, np.stack([src, dst]), x=x, y=y, train=train, test=test)


def to_torch(batch):
    ei = [torch.from_numpy(e) for e in batch.edge_index]  # zero-copy
    return torch.from_numpy(batch.x), ei, batch.size, torch.from_numpy(batch.y)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("store", nargs="?")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--policy", default="ginex")
    ap.add_argument("--memory", default="1GiB")
    args = ap.parse_args()
    if args.store:
        store = ginex.Store(args.store)
    else:
        store = synthetic_store(os.path.join(tempfile.mkdtemp(prefix="ginex-pyg-"), "store"))
    print(store)
    torch.manual_seed(0)
    model = SAGE(store.feature_dim, 64, store.num_classes, layers=2)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    loader = ginex.Loader(store, fanouts=[10, 5], batch_size=1000, policy=args.policy, memory=args.memory)
    for epoch in range(args.epochs):
        model.train()
        total = 0.0
        for batch in loader:
            x, ei, size, y = to_torch(batch)
            opt.zero_grad()
            out = model(x, ei, size)[: batch.batch_size]
            loss = F.cross_entropy(out, y)
            loss.backward()
            opt.step()
            total += loss.item()
        r = loader.report
        print(f"epoch {epoch}: loss {total / len(loader):.3f}, miss ratio {r['miss_ratio']:.3f}, "
              f"gather {r['seconds']['gather']:.2f} s")

    model.eval()
    correct = seen = 0
    with torch.no_grad():
        for batch in ginex.Loader(store, fanouts=[10, 5], batch_size=2000, split="test", shuffle=False):
            x, ei, size, y = to_torch(batch)
            pred = model(x, ei, size)[: batch.batch_size].argmax(dim=1)
            correct += int((pred == y).sum())
            seen += len(y)
    print(f"test accuracy {correct / seen:.3f} on {seen} nodes")


if __name__ == "__main__":
    main()
