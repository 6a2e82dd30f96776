"""PyG's GraphSAGE node classification with NeighborLoader, as in PyG's
documentation (examples/graph_sage.py-style), run on a ginex store.

The changes from the PyG script, marked CHANGED: the NeighborLoader import
and the data argument (a ginex store path instead of an in-memory
``Data``; the training nodes as the store's split name). Everything else is
PyG's own code.

    python sage_node_classification.py STORE [EPOCHS]

Prints one JSON line: per-epoch mean training loss and the validation
accuracy.
"""

import json
import sys

import torch
import torch.nn.functional as F
from torch_geometric.nn import GraphSAGE

from ginex.pyg import NeighborLoader  # CHANGED: was `from torch_geometric.loader import NeighborLoader`

data = sys.argv[1]  # CHANGED: was `data = dataset[0]`
epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
torch.manual_seed(0)

train_loader = NeighborLoader(
    data,
    num_neighbors=[10, 10],
    batch_size=64,
    input_nodes="train",  # CHANGED: was `data.train_mask`
    shuffle=True,
)
val_loader = NeighborLoader(data, num_neighbors=[10, 10], batch_size=256, input_nodes="val")

first = next(iter(train_loader))
num_classes = int(max(b.y.max() for b in val_loader)) + 1
model = GraphSAGE(first.num_features, hidden_channels=64, num_layers=2, out_channels=num_classes)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)


def train():
    model.train()
    total_loss = total = 0
    for batch in train_loader:
        optimizer.zero_grad()
        out = model(batch.x, batch.edge_index)[: batch.batch_size]
        y = batch.y[: batch.batch_size]
        loss = F.cross_entropy(out, y)
        loss.backward()
        optimizer.step()
        total_loss += float(loss) * batch.batch_size
        total += batch.batch_size
    return total_loss / total


@torch.no_grad()
def test(loader):
    model.eval()
    correct = total = 0
    for batch in loader:
        out = model(batch.x, batch.edge_index)[: batch.batch_size]
        correct += int((out.argmax(-1) == batch.y[: batch.batch_size]).sum())
        total += batch.batch_size
    return correct / total


losses = [train() for _ in range(epochs)]
print(json.dumps({"losses": losses, "val_acc": test(val_loader)}))
