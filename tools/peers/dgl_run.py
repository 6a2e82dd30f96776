"""One timed epoch of DGL GraphBolt on a `ginex-export graphbolt` directory,
for tools/peers/run.sh.

    python dgl_run.py --export GBDIR [--fanouts 10,5] [--batch-size 256]
                      [--workers 2] [--seed 0] [--train]

``gb.OnDiskDataset(GBDIR).load()`` (its preprocessing, done once by
``--prepare`` outside the timed runs), ``gb.ItemSampler`` over the task's
train set or ``--seeds`` (shuffled), ``sample_neighbor`` with the fanouts,
``fetch_feature`` of ``feat`` and ``gb.DataLoader`` with the workers. The
export's ``feat`` is ``in_memory: false``: GraphBolt memory-maps the numpy
file (DGL <= 2.3 has no disk-based feature store; DGL 2.4's
``DiskBasedFeature`` is not used). ``--train``: one GraphSAGE step per
batch (``dgl.nn.SAGEConv`` mean, Adam, cross entropy on the seeds). Prints
progress lines and a final ``{"result": ...}`` JSON line like pyg_run.py's.
"""
import argparse
import json
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--export", required=True)
    ap.add_argument("--fanouts", default="10,5")
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seeds", help="a .npy of input node ids (default: the train set)")
    ap.add_argument("--train", action="store_true")
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--prepare", action="store_true",
                    help="only load the dataset once (GraphBolt preprocesses it in place)")
    a = ap.parse_args()
    fanouts = [int(f) for f in a.fanouts.split(",")]

    import dgl
    import torch
    from dgl import graphbolt as gb

    torch.manual_seed(a.seed)
    t_setup = time.monotonic()
    ds = gb.OnDiskDataset(a.export).load()
    if a.prepare:
        print(json.dumps({"prepared": a.export, "dgl": dgl.__version__}))
        return
    graph, features, task = ds.graph, ds.feature, ds.tasks[0]
    info = {"impl": "graphbolt", "train": a.train, "fanouts": fanouts,
            "batch_size": a.batch_size, "workers": a.workers, "dgl": dgl.__version__,
            "torch": torch.__version__, "torch_threads": torch.get_num_threads()}
    items = task.train_set
    if a.seeds:
        import numpy as np

        ids = torch.from_numpy(np.load(a.seeds))
        labels = features.read("node", None, "label", ids).reshape(-1)
        ids = ids.to(graph.indices.dtype)  # the sampler wants the graph's id type
        items = gb.ItemSet((ids, labels), names=("seed_nodes", "labels"))
    pipe = gb.ItemSampler(items, batch_size=a.batch_size, shuffle=True)
    pipe = pipe.sample_neighbor(graph, fanouts)
    pipe = pipe.fetch_feature(features, node_feature_keys=["feat"])
    loader = gb.DataLoader(pipe, num_workers=a.workers)
    info["setup_s"] = round(time.monotonic() - t_setup, 3)

    model = opt = None
    if a.train:
        import dgl.nn as dglnn

        dim = features.size("node", None, "feat")[0]
        classes = int(task.metadata["num_classes"])
        sizes = [dim] + [a.hidden] * (len(fanouts) - 1) + [classes]
        layers = torch.nn.ModuleList(dglnn.SAGEConv(i, o, "mean")
                                     for i, o in zip(sizes[:-1], sizes[1:]))
        model = layers
        opt = torch.optim.Adam(model.parameters(), lr=0.003)
    seeds = batches = correct = 0
    loss_sum = 0.0
    t0 = time.monotonic()
    last = t0
    for mb in loader:
        x = mb.node_features["feat"]
        y = mb.labels
        bs = len(y)
        if a.train:
            h = x.float()
            blocks = mb.blocks
            for i, (layer, block) in enumerate(zip(model, blocks)):
                h = layer(block, h)
                if i < len(model) - 1:
                    h = torch.relu(h)
            keep = y >= 0
            loss = torch.nn.functional.cross_entropy(h[keep], y[keep].long())
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss_sum += float(loss) * bs
            correct += int((h.argmax(1)[keep] == y[keep]).sum())
        else:
            _ = x.sum()
        seeds += bs
        batches += 1
        now = time.monotonic()
        if now - last >= 5:
            last = now
            print(json.dumps({"progress": {"seeds": seeds, "batches": batches,
                                           "s": round(now - t0, 3)}}), flush=True)
    epoch = time.monotonic() - t0
    info.update(seeds=seeds, batches=batches, epoch_s=round(epoch, 3),
                seeds_per_s=round(seeds / epoch, 1))
    if a.train and seeds:
        info.update(loss=round(loss_sum / seeds, 4), train_acc=round(correct / seeds, 4))
    print(json.dumps({"result": info}), flush=True)


if __name__ == "__main__":
    main()
