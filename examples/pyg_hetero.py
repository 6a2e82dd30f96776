"""Training PyG's ``to_hetero(GraphSAGE)`` on a typed ginex store through
``batch.hetero()``.

A typed store with features on every node type (the loader gathers every
sampled node's row), e.g. the MAG-shaped synthetic graph:

    ginex gen --hetero --nodes 100000 --dim 32 --classes 8 --out mag
    ginex derive-features mag --type author --from paper --via writes --out mag-a
    ginex derive-features mag-a --type field --from paper --via has_topic --out mag-af
    python examples/pyg_hetero.py mag-af [--epochs N]

``batch.hetero()`` lays a batch out as PyG's heterogeneous NeighborLoader
does: ``x_dict`` and ``n_id_dict`` per node type, ``edge_index_dict`` per
``(src, rel, dst)`` in type-local indices (all hops merged, the seeds' hop
first), ``num_sampled_nodes_dict`` / ``num_sampled_edges_dict``;
``to_hetero_data()`` makes it a ``HeteroData``. The seeds (the split's
papers) are the first ``batch_size`` papers.

Skipped (exit 0) when torch or torch_geometric is not installed.
"""

import argparse
import sys

import ginex

try:
    import torch
    import torch.nn.functional as F
    from torch_geometric.nn import SAGEConv, to_hetero
except ImportError as e:  # pragma: no cover - depends on the environment
    print(f"skipped: this example needs torch and torch_geometric ({e.name} is not installed)")
    sys.exit(0)


class SAGE(torch.nn.Module):
    def __init__(self, hidden, classes):
        super().__init__()
        self.conv1 = SAGEConv((-1, -1), hidden)
        self.conv2 = SAGEConv((-1, -1), classes)

    def forward(self, x, edge_index):
        return self.conv2(self.conv1(x, edge_index).relu(), edge_index)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("store", help="a typed store whose node types all have features")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--memory", default="1GiB")
    args = ap.parse_args()
    store = ginex.Store(args.store)
    if store.schema() is None:
        sys.exit(f"{args.store} is not a typed store; see examples/pyg_sage.py")
    torch.manual_seed(0)
    loader = ginex.Loader(store, fanouts=[10, 5], batch_size=500, memory=args.memory)
    model = None
    for epoch in range(args.epochs):
        total = 0.0
        for batch in loader:
            data = batch.hetero().to_hetero_data()
            if model is None:  # lazy shapes: one forward pass sizes the layers
                model = to_hetero(SAGE(64, store.num_classes), data.metadata(), aggr="sum")
                with torch.no_grad():
                    model(data.x_dict, data.edge_index_dict)
                opt = torch.optim.Adam(model.parameters(), lr=0.01)
            seeds = data["paper"]  # the split's seeds: batch.hetero().input_type
            opt.zero_grad()
            out = model(data.x_dict, data.edge_index_dict)["paper"][: seeds.batch_size]
            loss = F.cross_entropy(out, seeds.y)
            loss.backward()
            opt.step()
            total += loss.item()
        print(f"epoch {epoch}: loss {total / len(loader):.3f}, "
              f"miss ratio {loader.report['miss_ratio']:.3f}")

    correct = seen = 0
    with torch.no_grad():
        for batch in ginex.Loader(store, fanouts=[10, 5], batch_size=2000, split="test"):
            data = batch.hetero().to_hetero_data()
            n = data["paper"].batch_size
            pred = model(data.x_dict, data.edge_index_dict)["paper"][:n].argmax(dim=1)
            correct += int((pred == data["paper"].y).sum())
            seen += n
    print(f"test accuracy {correct / seen:.3f} on {seen} papers")


if __name__ == "__main__":
    main()
