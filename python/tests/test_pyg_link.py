"""ginex.pyg.LinkNeighborLoader: PyG LinkNeighborLoader's batches from
ginex.LinkLoader's, in binary and triplet mode, and a PyG GraphSAGE link
predictor trained through it. Needs torch and torch_geometric (skips
without them, saying so)."""

import numpy as np
import pytest

import ginex
from conftest import run_cli

torch = pytest.importorskip("torch", reason="ginex.pyg needs torch (tools/python-check.sh installs it)")
pytest.importorskip("torch_geometric", reason="ginex.pyg needs torch_geometric (pip install 'ginex[pyg]')")

from torch_geometric.data import Data  # noqa: E402
from torch_geometric.nn import GraphSAGE  # noqa: E402
from torch_geometric.sampler import NegativeSampling  # noqa: E402

from ginex.pyg import LinkNeighborLoader  # noqa: E402

FANOUTS = [5, 4]
BATCH = 200
NEG = 2
SEED = 3


def _graph(tmp_path, n=400, e=3000, dim=16, seed=0):
    """A random graph with no repeated edges and its store."""
    rng = np.random.default_rng(seed)
    pairs = rng.integers(0, n, (e, 2))
    pairs = np.unique(pairs[pairs[:, 0] != pairs[:, 1]], axis=0)
    x = rng.standard_normal((n, dim)).astype(np.float32)
    store = ginex.import_arrays(tmp_path / "g", pairs.T, x=x, y=rng.integers(0, 3, n))
    return store, x, pairs


def _edges(store):
    return {(int(u), int(v)) for v in range(store.num_nodes) for u in store.in_neighbors(v)}


def test_binary_batches_are_pygs_link_batches(store_path, raw):
    s = ginex.Store(store_path)
    loader = LinkNeighborLoader(store_path, num_neighbors=FANOUTS, batch_size=BATCH,
                                neg_sampling_ratio=NEG, shuffle=True, seed=SEED, memory="128MiB")
    native = ginex.LinkLoader(s, FANOUTS, batch_size=BATCH, neg=NEG, seed=SEED, memory="128MiB")
    assert len(loader) == len(native) == -(-s.num_edges // BATCH)
    edges = loader.edge_label_index
    assert edges.shape == (2, s.num_edges)
    seen = 0
    nbs = list(native)
    assert len(nbs) == len(loader)
    for i, (b, nb) in enumerate(zip(loader, nbs)):
        assert isinstance(b, Data)
        p = b.input_id.numel()
        assert p == (BATCH if i < len(loader) - 1 else s.num_edges - BATCH * (len(loader) - 1))
        seen += p
        assert b.n_id.tolist() == nb.ids.tolist()
        assert np.array_equal(b.x.numpy(), nb.x)
        assert b.y.tolist() == raw.y[b.n_id.numpy()].tolist()
        assert b.edge_label_index.shape == (2, p * (1 + NEG)) and b.edge_label_index.dtype == torch.long
        assert b.edge_label.dtype == torch.float32
        assert b.edge_label.tolist() == [1.0] * p + [0.0] * (p * NEG)
        assert not hasattr(b, "src_index") or b.src_index is None
        assert sum(b.num_sampled_nodes) == len(b.n_id) == b.num_nodes
        assert sum(b.num_sampled_edges) == b.edge_index.shape[1]
        # Positives are the edges input_id names, in global ids.
        gpos = b.n_id[b.edge_label_index[:, :p]]
        assert torch.equal(gpos, edges[:, b.input_id])
        for u, v in gpos.t().tolist()[:50]:
            assert u in s.in_neighbors(v)
        # Negatives keep their positive's source.
        assert torch.equal(b.edge_label_index[0, p:], b.edge_label_index[0, :p].repeat_interleave(NEG))
        # The batch's own positives are not in its edge_index.
        sampled = set(map(tuple, b.n_id[b.edge_index].t().tolist()))
        assert not (set(map(tuple, gpos.t().tolist())) & sampled)
    assert seen == s.num_edges
    assert loader.report is not None
    assert [q["checksum"] for q in loader.report["per_batch"]] == [
        q["checksum"] for q in native.report["per_batch"]]
    assert loader.config["neg"] == NEG and loader.memory_plan is not None


def test_every_positive_once_per_epoch_and_epochs_reshuffle(tmp_path):
    store, _, pairs = _graph(tmp_path)
    loader = LinkNeighborLoader(store, num_neighbors=[3], batch_size=128)
    epochs = []
    for _ in range(2):
        ids = torch.cat([b.input_id for b in loader])
        assert sorted(ids.tolist()) == list(range(len(pairs)))
        got = loader.edge_label_index[:, ids].t().tolist()
        assert sorted(map(tuple, got)) == sorted(map(tuple, pairs.tolist()))
        epochs.append(ids.tolist())
        b = next(iter(loader))
        assert b.edge_label.tolist() == [1.0] * b.input_id.numel()  # no negatives asked
    assert epochs[0] != epochs[1]


def test_blocked_order_and_batch_negatives_still_cover_every_positive(tmp_path):
    store, _, pairs = _graph(tmp_path)
    loader = LinkNeighborLoader(store, num_neighbors=[3], batch_size=128, neg_sampling_ratio=1,
                                negatives="batch", edge_order="blocked:4")
    ids = []
    for b in loader:
        ids += b.input_id.tolist()
        p = b.input_id.numel()
        # In-batch negatives: each negative destination is a positive endpoint.
        ends = set(b.edge_label_index[:, :p].ravel().tolist())
        assert set(b.edge_label_index[1, p:].tolist()) <= ends
    assert sorted(ids) == list(range(len(pairs)))


def test_an_undirected_edge_split_store_trains_on_its_pairs_once(tmp_path):
    rng = np.random.default_rng(5)
    n = 300
    pairs = rng.integers(0, n, (1500, 2))
    pairs = np.unique(np.sort(pairs[pairs[:, 0] != pairs[:, 1]], axis=1), axis=0)
    np.save(tmp_path / "edges.npy", pairs)
    np.save(tmp_path / "x.npy", rng.standard_normal((n, 8)).astype(np.float32))
    run_cli("ginex-import", "files", "--edges", tmp_path / "edges.npy", "--features", tmp_path / "x.npy",
            "--undirected", "--edge-split", "0.8,0.1,0.1", "--split-seed", 1,
            "--out", tmp_path / "lp", "-q")
    s = ginex.Store(tmp_path / "lp")
    kept = {(u, v) for u, v in _edges(s) if u < v}  # the training pairs, once each
    assert 0 < len(kept) < len(pairs)
    loader = LinkNeighborLoader(s, num_neighbors=[4, 4], batch_size=100, neg_sampling_ratio=1)
    got = []
    for b in loader:
        p = b.input_id.numel()
        pos = b.n_id[b.edge_label_index[:, :p]].t().tolist()
        got.extend(map(tuple, pos))
        sampled = set(map(tuple, b.n_id[b.edge_index].t().tolist()))
        # Neither direction of a positive pair is in the batch's edge_index.
        assert not ({(u, v) for u, v in pos} | {(v, u) for u, v in pos}) & sampled
    assert sorted(tuple(sorted(e)) for e in got) == sorted(kept)


@pytest.mark.parametrize("neg", [1, 3])
def test_triplet_mode_matches_pygs_layout(store_path, neg):
    kw = dict(num_neighbors=FANOUTS, batch_size=BATCH, seed=SEED)
    tl = LinkNeighborLoader(store_path, neg_sampling=NegativeSampling("triplet", neg), **kw)
    bl = LinkNeighborLoader(store_path, neg_sampling=dict(mode="binary", amount=neg), **kw)
    for i, (t, b) in enumerate(zip(tl, bl)):
        if i == 3:
            break
        p = t.input_id.numel()
        assert "edge_label_index" not in t and "edge_label" not in t
        assert torch.equal(t.n_id, b.n_id) and torch.equal(t.edge_index, b.edge_index)
        assert t.src_index.shape == (p,) and t.dst_pos_index.shape == (p,)
        # PyG squeezes one negative per positive to shape (P,).
        assert t.dst_neg_index.shape == ((p,) if neg == 1 else (p, neg))
        assert torch.equal(t.src_index, b.edge_label_index[0, :p])
        assert torch.equal(t.dst_pos_index, b.edge_label_index[1, :p])
        assert torch.equal(t.dst_neg_index.reshape(-1), b.edge_label_index[1, p:])
        assert int(t.dst_neg_index.max()) < len(t.n_id)


def test_link_loader_refuses_what_it_does_not_do(store_path):
    with pytest.raises(ValueError, match="^edge_label_index: .*cannot take given edges"):
        LinkNeighborLoader(store_path, [2], edge_label_index=torch.tensor([[0], [1]]))
    with pytest.raises(ValueError, match="^shuffle=False"):
        LinkNeighborLoader(store_path, [2], shuffle=False)
    with pytest.raises(ValueError, match="^neg_sampling: amount 0.5"):
        LinkNeighborLoader(store_path, [2], neg_sampling_ratio=0.5)
    with pytest.raises(ValueError, match="weighted negatives"):
        LinkNeighborLoader(store_path, [2], neg_sampling=NegativeSampling(
            "binary", 1, dst_weight=torch.ones(3000)))
    with pytest.raises(ValueError, match="edge_label=.*not supported"):
        LinkNeighborLoader(store_path, [2], edge_label=torch.ones(3))
    with pytest.raises(ValueError, match="replace=True: not supported"):
        LinkNeighborLoader(store_path, [2], replace=True)
    with pytest.raises(ValueError, match="drop_last"):
        LinkNeighborLoader(store_path, [2], drop_last=True)
    with pytest.raises(ValueError, match="batch_size"):
        LinkNeighborLoader(store_path, [2], batch_size=0)
    loader = LinkNeighborLoader(store_path, [2], batch_size=50)
    with pytest.raises(RuntimeError, match="inside its epoch"):
        loader([0, 1])


def test_typed_stores_are_refused(tmp_path):
    run_cli("ginex", "gen", "--hetero", "--nodes", 500, "--dim", 4, "--quiet", "--out", tmp_path / "mag")
    with pytest.raises(ValueError, match="typed store; ginex.pyg.LinkNeighborLoader takes untyped"):
        LinkNeighborLoader(tmp_path / "mag", [2])


class _LinkPredictor(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.gnn = GraphSAGE(dim, 32, num_layers=2, out_channels=32)

    def forward(self, x, edge_index, edge_label_index):
        h = self.gnn(x, edge_index)
        return (h[edge_label_index[0]] * h[edge_label_index[1]]).sum(-1)


def test_pyg_graphsage_link_predictor_trains(tmp_path):
    # Nodes in 4 communities, edges within them: features say the community.
    rng = np.random.default_rng(1)
    n, k = 400, 8
    comm = np.arange(n) % k
    src = rng.integers(0, n, 6000)
    dst = (src + k * rng.integers(1, n // k, 6000)) % n  # same community
    pairs = np.unique(np.stack([src, dst], 1), axis=0)
    x = (np.eye(k)[comm] + 0.3 * rng.standard_normal((n, k))).astype(np.float32)
    store = ginex.import_arrays(tmp_path / "comm", pairs.T, x=x)
    torch.manual_seed(0)
    model = _LinkPredictor(k)
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    loader = LinkNeighborLoader(store, num_neighbors=[5, 5], batch_size=256,
                                neg_sampling_ratio=1, shuffle=True, seed=2)
    first, last = [], []
    for epoch in range(3):
        for b in loader:
            opt.zero_grad()
            out = model(b.x, b.edge_index, b.edge_label_index)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(out, b.edge_label)
            loss.backward()
            opt.step()
            if epoch == 0 and len(first) < 3:
                first.append(loss.item())
            if epoch == 2:
                last.append(loss.item())
    # Untrained, the loss is about log 2; trained, well under it.
    assert np.mean(last) < 0.75 * np.mean(first), (first, last)
    assert np.mean(last) < 0.75 * np.log(2), last
