"""ginex from Python with nothing but numpy: arrays in, batches out.

Builds a small planted-class graph with numpy, imports it with
ginex.import_arrays, then trains a one-layer mean-aggregation classifier
(softmax regression on [x_seed, mean of sampled neighbors]) on batches from
ginex.Loader under the `ginex` cache policy, and prints the epoch reports.

    python examples/numpy_only.py [WORKDIR]
"""

import os
import sys
import tempfile

import numpy as np

import ginex


def make_graph(n=20000, classes=8, dim=32, degree=10, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, n)
    centroids = rng.normal(size=(classes, dim))
    x = (centroids[y] + 2.0 * rng.normal(size=(n, dim))).astype(np.float32)
    # edges mostly within a class (homophily), as (2, E) like PyG's edge_index
    dst = np.repeat(np.arange(n), degree)
    same = rng.random(dst.size) < 0.8
    by_class = [np.flatnonzero(y == c) for c in range(classes)]
    src = rng.integers(0, n, dst.size)
    for c in range(classes):
        pick = same & (y[dst] == c)
        src[pick] = rng.choice(by_class[c], pick.sum())
    edge_index = np.stack([src, dst])
    perm = rng.permutation(n)
    train, valid, test = perm[: n // 2], perm[n // 2 : 3 * n // 4], perm[3 * n // 4 :]
    return edge_index, x, y, train, valid, test


def features(batch, w, b):
    """[x of the seeds, mean of their sampled neighbors] for the layer nearest the seeds."""
    (src, dst), (_, num_dst) = batch.edge_index[0], batch.size[0]
    agg = np.zeros((num_dst, batch.x.shape[1]), dtype=np.float32)
    np.add.at(agg, dst, batch.x[src])
    agg /= np.maximum(np.bincount(dst, minlength=num_dst), 1)[:, None]
    h = np.concatenate([batch.x[:num_dst], agg], axis=1)
    return h[: batch.batch_size] @ w + b, h[: batch.batch_size]


def main():
    work = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="ginex-numpy-")
    path = os.path.join(work, "store")
    if os.path.exists(path):
        store = ginex.Store(path)
    else:
        edge_index, x, y, train, valid, test = make_graph()
        store = ginex.import_arrays(path, edge_index, x=x, y=y, train=train, valid=valid, test=test)
    print(store)
    classes, dim = store.num_classes, store.feature_dim
    rng = np.random.default_rng(0)
    w = (0.01 * rng.normal(size=(2 * dim, classes))).astype(np.float32)
    b = np.zeros(classes, dtype=np.float32)

    loader = ginex.Loader(store, fanouts=[10], batch_size=512, policy="ginex", memory="512MiB")
    for epoch in range(3):
        loss = 0.0
        for batch in loader:
            logits, h = features(batch, w, b)
            p = np.exp(logits - logits.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            loss += -np.log(p[np.arange(len(batch.y)), batch.y] + 1e-9).mean()
            p[np.arange(len(batch.y)), batch.y] -= 1
            w -= 0.5 * h.T @ p / len(batch.y)
            b -= 0.5 * p.mean(axis=0)
        r = loader.report
        print(
            f"epoch {epoch}: loss {loss / len(loader):.3f}, {len(loader)} batches, "
            f"hits {r['hits']}, misses {r['misses']} (miss ratio {r['miss_ratio']:.3f})"
        )

    correct = total = 0
    for batch in ginex.Loader(store, fanouts=[10], batch_size=2048, split="test", shuffle=False, memory="512MiB"):
        logits, _ = features(batch, w, b)
        correct += int((logits.argmax(axis=1) == batch.y).sum())
        total += len(batch.y)
    print(f"test accuracy {correct / total:.3f} on {total} nodes")


if __name__ == "__main__":
    main()
