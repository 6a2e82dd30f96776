"""One timed epoch of a PyG-style loader, for tools/peers/run.sh.

    python pyg_run.py --impl pyg   --export GBDIR [options]
    python pyg_run.py --impl ginex --store STORE  [options]

``pyg``: PyG's own ``torch_geometric.loader.NeighborLoader`` on a ``Data``
whose ``x`` is the exported ``data/feat.npy`` opened as a ``numpy.memmap``
(``np.load(mmap_mode="r")``, wrapped by ``torch.from_numpy``, no copy) and
whose ``edge_index`` (``edges/edges.npy``) and labels are in memory — what a
PyG user does with a feature matrix larger than memory. PyG samples through
``torch-sparse`` (or ``pyg-lib`` where installed).

``ginex``: ``ginex.pyg.NeighborLoader`` on the store, with ``memory`` =
the cgroup's limit less this process's resident set after its imports
(VmRSS) less ``--reserve`` (default 128 MiB).

Both: the store's train split (or ``--seeds``) as input nodes, the same fanouts, batch size,
shuffle, workers and seed. With ``--train`` every batch also takes one
GraphSAGE step (``torch_geometric.nn.GraphSAGE``, Adam, cross entropy on
the seeds). Prints progress lines ``{"progress": ...}`` and a final JSON
line: seeds, batches, setup and epoch seconds, seeds/s, mean loss and
accuracy on the seeds (with ``--train``), this process's baseline memory.
"""
import argparse
import json
import os
import sys
import time
import warnings


def resident_bytes():
    """This process's resident set (anonymous and mapped file pages)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return None


def cgroup_usage_and_limit():
    """(resident bytes of this process, limit of its v1 memory cgroup or
    v2's). Not the cgroup's usage: that counts reclaimable page cache."""
    usage, limit = _cgroup_usage_and_limit()
    return resident_bytes(), limit


def _cgroup_usage_and_limit():
    with open("/proc/self/cgroup") as f:
        lines = [l.rstrip("\n").split(":", 2) for l in f]
    for _, ctl, path in lines:
        if "memory" in ctl.split(","):
            d = "/sys/fs/cgroup/memory" + path
            return (int(open(d + "/memory.usage_in_bytes").read()),
                    int(open(d + "/memory.limit_in_bytes").read()))
    for _, ctl, path in lines:
        if ctl == "":
            for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
                d = root + path
                if os.path.exists(d + "/memory.current"):
                    lim = open(d + "/memory.max").read().strip()
                    return (int(open(d + "/memory.current").read()),
                            None if lim == "max" else int(lim))
    return None, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--impl", choices=["pyg", "ginex"], required=True)
    ap.add_argument("--export", help="the store's `ginex-export graphbolt` directory (pyg)")
    ap.add_argument("--store", help="the ginex store (ginex)")
    ap.add_argument("--fanouts", default="10,5")
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seeds", help="a .npy of input node ids (default: the train split)")
    ap.add_argument("--train", action="store_true", help="a GraphSAGE step per batch")
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--reserve", type=int, default=128 << 20,
                    help="bytes kept out of ginex's memory budget for batches and the model")
    ap.add_argument("--memory", type=int, help="ginex's budget in bytes (default: from the cgroup)")
    a = ap.parse_args()
    fanouts = [int(f) for f in a.fanouts.split(",")]

    import numpy as np
    import torch
    import torch_geometric
    from torch_geometric.nn import GraphSAGE

    torch.manual_seed(a.seed)
    t_setup = time.monotonic()
    info = {"impl": a.impl, "train": a.train, "fanouts": fanouts, "batch_size": a.batch_size,
            "workers": a.workers, "torch": torch.__version__, "pyg": torch_geometric.__version__,
            "torch_threads": torch.get_num_threads()}
    if a.impl == "pyg":
        from torch_geometric.data import Data
        from torch_geometric.loader import NeighborLoader
        import torch_geometric.typing as tgt

        info["sampler_backend"] = ("pyg-lib" if getattr(tgt, "WITH_PYG_LIB", False)
                                   else "torch-sparse" if getattr(tgt, "WITH_TORCH_SPARSE", False)
                                   else "none")
        feat = np.load(os.path.join(a.export, "data", "feat.npy"), mmap_mode="r")
        assert isinstance(feat, np.memmap)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a read-only memmap: PyG only reads x
            x = torch.from_numpy(feat)
        edge_index = torch.from_numpy(np.load(os.path.join(a.export, "edges", "edges.npy")))
        y = torch.from_numpy(np.load(os.path.join(a.export, "data", "label.npy")))
        train = torch.from_numpy(np.load(a.seeds or os.path.join(a.export, "set", "train_seed_nodes.npy")))
        data = Data(x=x, edge_index=edge_index, y=y, num_nodes=x.shape[0])
        base, limit = cgroup_usage_and_limit()
        loader = NeighborLoader(data, num_neighbors=fanouts, input_nodes=train,
                                batch_size=a.batch_size, shuffle=True, num_workers=a.workers)
        dim, num_classes = x.shape[1], int(y.max()) + 1
    else:
        import ginex
        from ginex.pyg import NeighborLoader

        store = ginex.Store(a.store)
        base, limit = cgroup_usage_and_limit()
        memory = a.memory
        if memory is None and limit is not None and limit < (1 << 50):
            memory = limit - base - a.reserve
        kw = {"memory": f"{memory // (1 << 20)}MiB"} if memory else {}
        info["ginex_memory"] = kw.get("memory")
        inputs = np.load(a.seeds) if a.seeds else "train"
        loader = NeighborLoader(store, num_neighbors=fanouts, input_nodes=inputs,
                                batch_size=a.batch_size, shuffle=True, num_workers=a.workers,
                                seed=a.seed, **kw)
        dim, num_classes = store.feature_dim, store.num_classes
    info["baseline_bytes"], info["limit_bytes"] = base, limit
    info["setup_s"] = round(time.monotonic() - t_setup, 3)

    model = opt = None
    if a.train:
        model = GraphSAGE(dim, a.hidden, num_layers=len(fanouts), out_channels=num_classes)
        opt = torch.optim.Adam(model.parameters(), lr=0.003)
    seeds = batches = correct = 0
    loss_sum = 0.0
    t0 = time.monotonic()
    last = t0
    for batch in loader:
        bs = batch.batch_size
        if a.train:
            out = model(batch.x.float(), batch.edge_index)[:bs]
            yb = batch.y[:bs].long()
            keep = yb >= 0
            loss = torch.nn.functional.cross_entropy(out[keep], yb[keep])
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss_sum += float(loss) * bs
            correct += int((out.argmax(1)[keep] == yb[keep]).sum())
        else:
            _ = batch.x.sum()  # touch the features as a consumer would
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
    if a.impl == "ginex" and getattr(loader, "report", None) is not None:
        rep = loader.report
        rep = json.loads(rep) if isinstance(rep, str) else rep
        keep = ("hits", "misses", "pages_read", "bytes_read", "miss_ratio", "optimal_total")
        info["ginex_report"] = {k: rep[k] for k in keep if k in rep}
    print(json.dumps({"result": info}), flush=True)


if __name__ == "__main__":
    main()
