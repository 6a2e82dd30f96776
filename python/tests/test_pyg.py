"""ginex.pyg: PyG's FeatureStore / GraphStore over a store, and the drop-in
NeighborLoader checked against PyG's own code (models, to_hetero, scripts).
Needs torch and torch_geometric (tools/python-check.sh installs them into
the project venv; with GINEX_SKIP_TRAIN=1 they may be absent and these
tests skip, saying so)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ginex
from conftest import run_cli

torch = pytest.importorskip("torch", reason="ginex.pyg needs torch (tools/python-check.sh installs it)")
pytest.importorskip("torch_geometric", reason="ginex.pyg needs torch_geometric (pip install 'ginex[pyg]')")

from torch_geometric.data import EdgeAttr, TensorAttr  # noqa: E402
from torch_geometric.nn import GCN, GraphSAGE  # noqa: E402

from ginex.pyg import (  # noqa: E402
    FeatureStore,
    GraphStore,
    NeighborLoader,
    ReadOnlyStoreError,
)

SCRIPTS = Path(__file__).parent / "pyg_scripts"


def test_feature_store_serves_x_y_and_masks(store_path, raw):
    fs = FeatureStore(store_path)
    n, dim = raw.x.shape
    names = sorted(a.attr_name for a in fs.get_all_tensor_attrs())
    assert names == sorted(["x", "y", "train_mask", "val_mask", "test_mask"])
    assert all(a.group_name is None for a in fs.get_all_tensor_attrs())
    assert fs.get_tensor_size(TensorAttr(None, "x")) == (n, dim)
    assert fs.get_tensor_size(TensorAttr(None, "y")) == (n,)
    ids = torch.tensor([5, 0, 2999, 17, 5])
    x = fs.get_tensor(TensorAttr(None, "x", ids))
    assert x.dtype == torch.float32
    assert np.array_equal(x.numpy(), raw.x[ids.numpy()].astype(np.float32))
    assert fs.get_tensor(TensorAttr(None, "y", None)).tolist() == raw.y.astype(np.int64).tolist()
    mask = fs.get_tensor(TensorAttr(None, "val_mask", None)).numpy()
    assert np.array_equal(np.flatnonzero(mask), np.sort(raw.valid))
    x2, y2 = fs.multi_get_tensor([TensorAttr(None, "x", ids[:2]), TensorAttr(None, "y", ids[:2])])
    assert np.array_equal(x2.numpy(), x[:2].numpy()) and y2.tolist() == raw.y[[5, 0]].tolist()
    with pytest.raises(ValueError, match="node id 3000 is out of range"):
        fs.get_tensor(TensorAttr(None, "x", torch.tensor([3000])))
    with pytest.raises(KeyError):
        fs.get_tensor(TensorAttr(None, "edge_attr", None))


def test_feature_and_graph_stores_are_read_only(store_path):
    fs, gs = FeatureStore(store_path), GraphStore(store_path)
    with pytest.raises(ReadOnlyStoreError, match="read-only ginex store"):
        fs.put_tensor(torch.zeros(3, 24), TensorAttr(None, "x", None))
    with pytest.raises(ReadOnlyStoreError, match="read-only"):
        fs.remove_tensor(TensorAttr(None, "y", None))
    with pytest.raises(ReadOnlyStoreError, match="read-only"):
        gs.put_edge_index((torch.zeros(1, dtype=torch.long),) * 2, EdgeAttr(None, "coo", size=(3, 3)))
    with pytest.raises(ReadOnlyStoreError, match="read-only"):
        gs.remove_edge_index(EdgeAttr(None, "csc"))
    assert isinstance(ReadOnlyStoreError("x"), ginex.GinexError)


def test_graph_store_hands_out_the_csc(store_path, raw):
    store = ginex.Store(store_path)
    gs = GraphStore(store)
    (attr,) = gs.get_all_edge_attrs()
    n = store.num_nodes
    assert (attr.edge_type, attr.layout.value, attr.is_sorted, attr.size) == (None, "csc", True, (n, n))
    row, colptr = gs.get_edge_index(attr)
    assert colptr.shape == (n + 1,) and row.shape == (store.num_edges,)
    for v in range(0, n, 7):
        assert row[colptr[v]:colptr[v + 1]].tolist() == store.in_neighbors(v).tolist()
    # PyG's own conversion: the COO holds every input edge.
    src, dst, _ = gs.coo()
    got = set(zip(src.tolist(), dst.tolist()))
    assert got == set(map(tuple, raw.edges.tolist()))


def test_graph_store_of_a_reordered_store_is_in_original_ids(tmp_path, raw):
    s = ginex.import_arrays(tmp_path / "bfs", raw.edges.T, x=raw.x, reorder="bfs")
    assert s.original_ids() is not None
    src, dst, _ = GraphStore(s).coo()
    assert set(zip(src.tolist(), dst.tolist())) == set(map(tuple, raw.edges.tolist()))
    row, colptr = GraphStore(s).get_edge_index(None, "csc")
    assert all(bool((row[colptr[v]:colptr[v + 1]].diff() > 0).all()) for v in range(0, 3000, 97))


def _small_graph(tmp_path, n=300, e=1500, dim=12, seed=0):
    """A random graph (no repeated edges, no self-loops) and its store."""
    rng = np.random.default_rng(seed)
    pairs = rng.integers(0, n, (e, 2))
    pairs = np.unique(pairs[pairs[:, 0] != pairs[:, 1]], axis=0)
    x = rng.standard_normal((n, dim)).astype(np.float32)
    y = rng.integers(0, 4, n)
    store = ginex.import_arrays(tmp_path / "small", pairs.T, x=x, y=y, train=np.arange(0, n, 3))
    return store, torch.from_numpy(x), torch.from_numpy(pairs.T.copy())


def _full_batch_equals(model, loader, x, edge_index):
    model.eval()
    with torch.no_grad():
        full = model(x, edge_index)
        batches = list(loader)
        assert len(batches) == 1
        b = batches[0]
        out = model(b.x, b.edge_index)[: b.batch_size]
    seeds = b.n_id[: b.batch_size]
    assert torch.allclose(out, full[seeds], atol=1e-5), (out - full[seeds]).abs().max()
    return b


@pytest.mark.parametrize("make", [
    lambda d: GraphSAGE(d, 16, num_layers=2, out_channels=5),
    lambda d: GCN(d, 16, num_layers=2, out_channels=5),
], ids=["sage", "gcn"])
def test_full_fanouts_one_batch_equals_full_batch(tmp_path, make):
    store, x, edge_index = _small_graph(tmp_path)
    torch.manual_seed(0)
    model = make(x.shape[1])
    loader = NeighborLoader(store, num_neighbors=[-1, -1], batch_size=x.shape[0], shuffle=True)
    b = _full_batch_equals(model, loader, x, edge_index)
    # Every node a seed: each edge once (ginex's re-draws of earlier hops are dropped).
    assert b.edge_index.shape[1] == edge_index.shape[1]
    assert b.num_sampled_nodes == [x.shape[0], 0, 0] and b.num_sampled_edges == [edge_index.shape[1], 0]
    assert sorted(b.input_id.tolist()) == list(range(x.shape[0]))


def test_full_fanouts_on_some_seeds_equal_full_batch_for_sage(tmp_path):
    store, x, edge_index = _small_graph(tmp_path)
    torch.manual_seed(1)
    model = GraphSAGE(x.shape[1], 16, num_layers=2, out_channels=5)
    seeds = torch.tensor([3, 77, 150, 299, 12])
    loader = NeighborLoader(store, num_neighbors=[-1, -1], input_nodes=seeds, batch_size=5)
    b = _full_batch_equals(model, loader, x, edge_index)
    assert b.n_id[:5].tolist() == seeds.tolist() and b.input_id.tolist() == [0, 1, 2, 3, 4]


def test_batches_are_pygs_and_follow_ginex_epochs(store_path, raw):
    loader = NeighborLoader(store_path, num_neighbors=[5, 3], input_nodes="train", batch_size=100,
                            shuffle=True, memory="128MiB", policy="ginex", seed=4)
    native = ginex.Loader(ginex.Store(store_path), [5, 3], batch_size=100, memory="128MiB",
                          policy="ginex", seed=4)
    assert len(loader) == len(native) == -(-len(raw.train) // 100)
    for epoch in range(2):  # each pass is the next epoch, reshuffled like ginex.Loader's
        seen = []
        nbs = list(native)
        assert len(nbs) == len(loader)
        for b, nb in zip(loader, nbs):
            bs = b.batch_size
            assert b.n_id.tolist() == nb.ids.tolist()
            assert np.array_equal(b.x.numpy(), nb.x)
            assert b.y[:bs].tolist() == nb.y.tolist()
            assert b.y.tolist() == raw.y[b.n_id.numpy()].tolist()
            assert b.train_mask[:bs].all()
            assert sum(b.num_sampled_nodes) == b.num_nodes == len(b.n_id)
            assert sum(b.num_sampled_edges) == b.edge_index.shape[1]
            assert b.input_id.tolist() == np.searchsorted(np.sort(raw.train), b.n_id[:bs].numpy()).tolist()
            # Hop k's edges point into the nodes first reached at hop k-1.
            ends = np.cumsum(b.num_sampled_nodes)
            start = 0
            for k, c in enumerate(b.num_sampled_edges):
                dst = b.edge_index[1, start:start + c]
                lo = 0 if k == 0 else ends[k - 1]
                assert bool(((dst >= lo) & (dst < ends[k])).all())
                assert bool((b.edge_index[0, start:start + c] < ends[k + 1]).all())
                start += c
            seen.extend(b.n_id[:bs].tolist())
        assert sorted(seen) == sorted(raw.train.tolist())
        assert loader.report is not None and loader.report["per_batch"]
        assert [p["checksum"] for p in loader.report["per_batch"]] == [
            p["checksum"] for p in native.report["per_batch"]]
    assert loader.config["policy"] == "ginex" and loader.memory_plan is not None


def test_neighbor_loader_samples_with_labor(store_path):
    """``sampler`` and LABOR's options reach the native loader: the PyG
    batches hold the native LABOR batches' nodes."""
    kw = dict(batch_size=100, memory="128MiB", seed=2, shuffle=True)
    loader = NeighborLoader(store_path, num_neighbors=[5, 3], input_nodes="train",
                            sampler="labor-1", layer_dependency=True, batch_dependency=3, **kw)
    native = ginex.Loader(ginex.Store(store_path), [5, 3], sampler="labor-1",
                          layer_dependency=True, batch_dependency=3, **kw)
    plain = ginex.Loader(ginex.Store(store_path), [5, 3], **kw)
    nbs = list(native)
    assert [b.n_id.tolist() for b in loader] == [nb.ids.tolist() for nb in nbs]
    assert sum(len(nb.ids) for nb in nbs) < sum(len(b.ids) for b in plain)
    assert loader.config["sampler"] == "labor-1" and loader.config["layer_dependency"]
    with pytest.raises(ValueError, match="^sampler"):
        NeighborLoader(store_path, [2], sampler="labor-2")


def test_neighbor_loader_refuses_what_it_does_not_do(store_path):
    with pytest.raises(ValueError, match="replace=True: not supported"):
        NeighborLoader(store_path, [2], replace=True)
    with pytest.raises(ValueError, match="disjoint"):
        NeighborLoader(store_path, [2], disjoint=True)
    with pytest.raises(ValueError, match="node id 5000 is out of range"):
        NeighborLoader(store_path, [2], input_nodes=torch.tensor([1, 5000]))
    with pytest.raises(ValueError, match="repeat"):
        NeighborLoader(store_path, [2], input_nodes=[1, 1])
    with pytest.raises(ValueError, match="batch_size"):
        NeighborLoader(store_path, [2], batch_size=0)
    with pytest.raises(ValueError, match="fanouts"):
        NeighborLoader(store_path, [0])
    # 65 hops: refused at the argument, not as a corrupt run record.
    with pytest.raises(ValueError, match="^fanouts: .*65 hops; at most 64"):
        NeighborLoader(store_path, [2] * 65)
    loader = NeighborLoader(store_path, [2], input_nodes=torch.tensor([1, 2, 3]), batch_size=2,
                            drop_last=True)
    assert [b.batch_size for b in loader] == [2]


def test_pyg_graphsage_script_trains_unchanged(store_path):
    r = subprocess.run([sys.executable, SCRIPTS / "sage_node_classification.py", store_path, "6"],
                       capture_output=True, text=True, env=_env())
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["losses"][-1] < out["losses"][0]
    assert 0.0 <= out["val_acc"] <= 1.0


@pytest.fixture(scope="module")
def typed_path(tmp_path_factory):
    d = tmp_path_factory.mktemp("typed-pyg")
    run_cli("ginex", "gen", "--hetero", "--nodes", 2000, "--dim", 4, "--quiet", "--out", d / "mag")
    for src, target, via, out in [("mag", "author", "writes", "mag-a"),
                                  ("mag-a", "field", "has_topic", "mag-af")]:
        run_cli("ginex", "derive-features", d / src, "--type", target, "--from", "paper",
                "--via", via, "--out", d / out)
    return d / "mag-af"


def test_typed_stores_give_hetero_data(typed_path):
    store = ginex.Store(typed_path)
    schema = store.schema()
    fs, gs = FeatureStore(store), GraphStore(store)
    names = [t["name"] for t in schema["node_types"]]
    for t in schema["node_types"]:
        assert fs.get_tensor_size(TensorAttr(t["name"], "x")) == (t["count"], t["dim"])
    x = fs.get_tensor(TensorAttr("paper", "x", torch.tensor([0, 3])))
    paper = next(t for t in schema["node_types"] if t["name"] == "paper")
    assert np.array_equal(x.numpy(), store.features([paper["offset"], paper["offset"] + 3])[:, :paper["dim"]])
    attrs = {a.edge_type: a for a in gs.get_all_edge_attrs()}
    for r in schema["relations"]:
        key = (names[r["src"]], r["name"], names[r["dst"]])
        row, colptr = gs.get_edge_index(attrs[key])
        assert len(row) == r["num_edges"]
        assert attrs[key].size == (schema["node_types"][r["src"]]["count"],
                                   schema["node_types"][r["dst"]]["count"])
        # The in-list of one destination node, relation by relation.
        dst = schema["node_types"][r["dst"]]
        src = schema["node_types"][r["src"]]
        for v in range(0, dst["count"], max(1, dst["count"] // 20)):
            full = store.in_neighbors(dst["offset"] + v)
            want = full[(full >= src["offset"]) & (full < src["offset"] + src["count"])] - src["offset"]
            assert row[colptr[v]:colptr[v + 1]].tolist() == want.tolist()

    loader = NeighborLoader(store, num_neighbors=[4, 3], input_nodes=("paper", "train"), batch_size=30,
                            shuffle=True, memory="256MiB", policy="lru", seed=2)
    native = ginex.Loader(store, [4, 3], batch_size=30, memory="256MiB", policy="lru", seed=2)
    batches = 0
    for b, nb in zip(loader, native):
        h = nb.hetero()
        assert b.metadata()[0] == h.node_types and sorted(b.metadata()[1]) == sorted(h.edge_types)
        bs = b["paper"].batch_size
        assert bs == nb.batch_size and b["paper"].input_id.shape == (bs,)
        assert b["paper"].y[:bs].tolist() == nb.y.tolist()
        for t in h.node_types:
            assert b[t].n_id.tolist() == h.n_id_dict[t].tolist()
            assert np.array_equal(b[t].x.numpy(), h.x_dict[t])
            assert b[t].num_sampled_nodes == h.num_sampled_nodes_dict[t]
        for key in h.edge_types:
            ei = b[key].edge_index
            assert sum(b[key].num_sampled_edges) == ei.shape[1]
            # Kept edges are a subset of ginex's, targets in the previous hop's new nodes.
            have = set(zip(*h.edge_index_dict[key].tolist()))
            assert set(zip(*ei.tolist())) <= have
            ends = np.cumsum(b[key[2]].num_sampled_nodes)
            start = 0
            for k, c in enumerate(b[key].num_sampled_edges):
                lo = 0 if k == 0 else ends[k - 1]
                assert bool(((ei[1, start:start + c] >= lo) & (ei[1, start:start + c] < ends[k])).all())
                start += c
        batches += 1
    assert batches == 3


def test_pyg_to_hetero_rgcn_script_trains_unchanged(typed_path):
    r = subprocess.run([sys.executable, SCRIPTS / "rgcn_to_hetero.py", typed_path, "5"],
                       capture_output=True, text=True, env=_env())
    assert r.returncode == 0, r.stderr
    losses = json.loads(r.stdout.strip().splitlines()[-1])["losses"]
    assert all(np.isfinite(losses)) and losses[-1] < losses[0]


def _env():
    env = dict(os.environ)
    root = str(Path(ginex.__file__).resolve().parents[1])
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_a_store_with_sparse_original_ids_is_refused(tmp_path):
    edges = tmp_path / "edges.txt"
    edges.write_text("10 2000\n2000 35\n35 10\n")
    run_cli("ginex-import", "files", "--edges", edges, "--remap", "--out", tmp_path / "s", "-q")
    with pytest.raises(ValueError, match="original ids are not 0..3"):
        FeatureStore(tmp_path / "s")
    with pytest.raises(ValueError, match="original ids are not 0..3"):
        GraphStore(tmp_path / "s")
    with pytest.raises(ValueError, match="original ids are not 0..3"):
        NeighborLoader(tmp_path / "s", [2])


def test_typed_num_neighbors_by_edge_type(typed_path):
    keys = [a.edge_type for a in GraphStore(typed_path).get_all_edge_attrs()]
    named = keys[:2]
    loader = NeighborLoader(typed_path, {k: [3, 2] for k in named}, input_nodes=("paper", "train"),
                            batch_size=40)
    assert loader.config["fanouts"] == ",".join(f"{k[1]}=3:2" for k in named)
    edges = {k: 0 for k in keys}
    for b in loader:
        for k in keys:
            edges[k] += b[k].edge_index.shape[1]
    assert all(edges[k] > 0 for k in named) and all(edges[k] == 0 for k in keys[2:])
    with pytest.raises(ValueError, match="fanouts"):
        NeighborLoader(typed_path, {("paper", "nope", "paper"): [2]}, input_nodes=("paper", None))
    with pytest.raises(ValueError, match="input_nodes: a typed store needs"):
        NeighborLoader(typed_path, [2], input_nodes=torch.tensor([1, 2]))
