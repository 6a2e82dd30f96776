"""PyG's heterogeneous training with ``to_hetero`` (an R-GCN: one GraphConv
per relation, summed), as in PyG's heterogeneous-graph tutorial, run on a
typed ginex store.

The changes from the PyG script, marked CHANGED: the NeighborLoader import
and the data argument (a typed ginex store path instead of a
``HeteroData``; the metadata from the first batch instead of
``data.metadata()``; the training papers as the store's split name).

    python rgcn_to_hetero.py STORE [EPOCHS]

Prints one JSON line: per-epoch mean training loss.
"""

import json
import sys

import torch
import torch.nn.functional as F
from torch_geometric.nn import GraphConv, to_hetero

from ginex.pyg import NeighborLoader  # CHANGED: was `from torch_geometric.loader import NeighborLoader`

data = sys.argv[1]  # CHANGED: was `data = OGB_MAG(...)[0]`
epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 4
torch.manual_seed(0)

train_loader = NeighborLoader(
    data,
    num_neighbors=[8, 4],
    batch_size=32,
    input_nodes=("paper", "train"),  # CHANGED: was ("paper", data["paper"].train_mask)
    shuffle=True,
)
first = next(iter(train_loader))
metadata = first.metadata()  # CHANGED: was data.metadata()
num_classes = int(max(int(b["paper"].y.max()) for b in train_loader)) + 1


class GNN(torch.nn.Module):
    def __init__(self, hidden_channels, out_channels):
        super().__init__()
        self.conv1 = GraphConv((-1, -1), hidden_channels)
        self.conv2 = GraphConv((-1, -1), out_channels)

    def forward(self, x, edge_index):
        x = self.conv1(x, edge_index).relu()
        return self.conv2(x, edge_index)


model = to_hetero(GNN(32, num_classes), metadata, aggr="sum")
with torch.no_grad():  # Initialize lazy modules.
    model(first.x_dict, first.edge_index_dict)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)


def train():
    model.train()
    total_loss = total = 0
    for batch in train_loader:
        optimizer.zero_grad()
        batch_size = batch["paper"].batch_size
        out = model(batch.x_dict, batch.edge_index_dict)["paper"][:batch_size]
        loss = F.cross_entropy(out, batch["paper"].y[:batch_size])
        loss.backward()
        optimizer.step()
        total_loss += float(loss) * batch_size
        total += batch_size
    return total_loss / total


print(json.dumps({"losses": [train() for _ in range(epochs)]}))
