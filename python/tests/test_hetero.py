"""Batch.hetero(): the typed view of a typed store's batches, in PyG's
heterogeneous NeighborLoader layout, mapped back to the untyped batch."""

import numpy as np
import pytest

import ginex
from conftest import run_cli


@pytest.fixture(scope="module")
def typed_path(tmp_path_factory):
    """`ginex gen --hetero` with features derived for authors and fields
    (the loader needs features on every type)."""
    d = tmp_path_factory.mktemp("typed")
    run_cli("ginex", "gen", "--hetero", "--nodes", 2000, "--dim", 4, "--quiet", "--out", d / "mag")
    for src, target, via, out in [("mag", "author", "writes", "mag-a"),
                                  ("mag-a", "field", "has_topic", "mag-af")]:
        run_cli("ginex", "derive-features", d / src, "--type", target, "--from", "paper",
                "--via", via, "--out", d / out)
    return d / "mag-af"


def typed_loader(path, **kw):
    args = dict(fanouts=[4, 3], batch_size=30, policy="lru", seed=2, memory="256MiB")
    args.update(kw)
    return ginex.Loader(ginex.Store(path), **args)


@pytest.mark.parametrize("input_layer_first", [False, True])
def test_hetero_batches_map_back_to_the_untyped_batch(typed_path, input_layer_first):
    s = ginex.Store(typed_path)
    schema = s.schema()
    names = [t["name"] for t in schema["node_types"]]
    offsets = np.array([t["offset"] for t in schema["node_types"]])
    edge_types = [(names[r["src"]], r["name"], names[r["dst"]]) for r in schema["relations"]]
    labels = s.labels()  # a typed store's ids are its global ids

    def type_of(ids):
        return np.searchsorted(offsets, ids, side="right") - 1

    batches = 0
    for b in typed_loader(typed_path, input_layer_first=input_layer_first):
        batches += 1
        h = b.hetero()
        assert isinstance(h, ginex.HeteroBatch)
        assert h.metadata() == (names, edge_types)
        # The training split's seeds are papers.
        assert h.input_type == "paper" and h.batch_size == b.batch_size
        assert h.batch_size_dict == {"paper": b.batch_size, "author": 0, "field": 0}
        assert np.array_equal(h.y_dict["paper"], b.y)

        total = 0
        for ti, t in enumerate(names):
            pos, g = h.pos_dict[t], h.global_id_dict[t]
            assert pos.dtype == g.dtype == h.n_id_dict[t].dtype == np.int64
            assert np.array_equal(b.ids[pos], g) and (type_of(g) == ti).all()
            assert np.array_equal(h.n_id_dict[t], g - offsets[ti])
            assert h.x_dict[t].dtype == np.float32 and h.x_dict[t].shape == (len(g), 4)
            assert np.array_equal(h.x_dict[t], b.x[pos])
            if len(g):
                assert np.array_equal(h.x_dict[t], s.features(g))
            counts = h.num_sampled_nodes_dict[t]
            assert len(counts) == 3 and sum(counts) == len(g)
            seeds = h.batch_size_dict[t]
            assert counts[0] == seeds
            # The type's seeds first, then batch order.
            assert (pos[:seeds] < b.batch_size).all() and (pos[seeds:] >= b.batch_size).all()
            assert (np.diff(pos) > 0).all()
            assert np.array_equal(h.y_dict[t], labels[g[:seeds]])
            total += len(g)
        assert total == len(b.ids)

        # Each layer: the typed edges are the untyped layer's, each under
        # the relation its endpoints' types name.
        assert len(h.edge_index_dicts) == len(h.size_dicts) == len(b.edge_index)
        for i, (ei, (num_src, num_dst)) in enumerate(zip(b.edge_index, b.size)):
            want = sorted(zip(b.ids[ei[0]].tolist(), b.ids[ei[1]].tolist()))
            got = []
            layer, sizes = h.edge_index_dicts[i], h.size_dicts[i]
            assert list(layer) == edge_types
            for (src, rel, dst), e in layer.items():
                assert e.dtype == np.int64 and e.shape[0] == 2
                assert (e[0] < sizes[src][0]).all() and (e[1] < sizes[dst][1]).all()
                u, v = h.global_id_dict[src][e[0]], h.global_id_dict[dst][e[1]]
                assert (type_of(u) == names.index(src)).all()
                assert (type_of(v) == names.index(dst)).all()
                got += zip(u.tolist(), v.tolist())
            assert sorted(got) == want
            assert sum(n for n, _ in sizes.values()) == num_src
            assert sum(n for _, n in sizes.values()) == num_dst

        # The merged lists: the layers concatenated, the seeds' hop first.
        pyg_order = h.edge_index_dicts[::-1] if input_layer_first else h.edge_index_dicts
        assert list(h.edge_index_dict) == edge_types
        for key, e in h.edge_index_dict.items():
            assert e.shape == (2, sum(h.num_sampled_edges_dict[key]))
            assert [d[key].shape[1] for d in pyg_order] == h.num_sampled_edges_dict[key]
            assert np.array_equal(e, np.concatenate([d[key] for d in pyg_order], axis=1))
        assert sum(e.shape[1] for e in h.edge_index_dict.values()) == sum(
            e.shape[1] for e in b.edge_index)
    assert batches == 3  # 80 training papers (10 % of 800), batches of 30


def test_hetero_data_for_pyg(typed_path):
    b = next(iter(typed_loader(typed_path, max_batches=1)))
    h = b.hetero()
    try:
        import torch_geometric  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="needs torch and torch_geometric"):
            h.to_hetero_data()
        return
    data = h.to_hetero_data()
    assert data.metadata() == h.metadata()
    assert data["paper"].batch_size == b.batch_size
    assert data["paper"].y.tolist() == b.y.tolist()
    for t in h.node_types:
        assert data[t].n_id.tolist() == h.n_id_dict[t].tolist()
        assert data[t].x.numpy().tobytes() == h.x_dict[t].tobytes()
        assert data.num_sampled_nodes_dict[t] == h.num_sampled_nodes_dict[t]
    for key in h.edge_types:
        assert data[key].edge_index.tolist() == h.edge_index_dict[key].tolist()
        assert data.num_sampled_edges_dict[key] == h.num_sampled_edges_dict[key]


def test_an_untyped_batch_has_no_hetero_view(store_path):
    b = next(iter(ginex.Loader(ginex.Store(store_path), fanouts=[2], batch_size=50,
                               max_batches=1)))
    with pytest.raises(ValueError, match="not a typed store"):
        b.hetero()


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """A chunked graph whose authors have 2 features (stored f32) and
    papers 4 (stored f16): each type keeps its own dimension."""
    import json

    d = tmp_path_factory.mktemp("mixed")
    rng = np.random.default_rng(0)
    authors, papers = 200, 500
    writes = np.stack([rng.integers(0, authors, 2 * papers), np.repeat(np.arange(papers), 2)], 1)
    cites = np.stack([rng.integers(0, papers, papers), np.arange(papers)], 1)
    author_feat = rng.standard_normal((authors, 2)).astype(np.float32)
    paper_feat = rng.standard_normal((papers, 4)).astype(np.float32)
    files = {
        "writes.npy": writes.astype(np.int64),
        "cites.npy": cites.astype(np.int64),
        "author-feat.npy": author_feat,
        "paper-feat.npy": paper_feat,
        "paper-label.npy": rng.integers(0, 3, papers).astype(np.int64),
        "paper-train.npy": np.arange(papers) % 4 == 0,
    }
    for name, array in files.items():
        np.save(d / name, array)

    def numpy(name):
        return {"format": {"name": "numpy"}, "data": [name]}

    meta = {
        "graph_name": "mixed",
        "node_type": ["author", "paper"],
        "num_nodes_per_chunk": [[authors], [papers]],
        "edge_type": ["author:writes:paper", "paper:cites:paper"],
        "num_edges_per_chunk": [[len(writes)], [len(cites)]],
        "edges": {"author:writes:paper": numpy("writes.npy"),
                  "paper:cites:paper": numpy("cites.npy")},
        "node_data": {
            "author": {"feat": numpy("author-feat.npy")},
            "paper": {"feat": numpy("paper-feat.npy"), "label": numpy("paper-label.npy"),
                      "train_mask": numpy("paper-train.npy")},
        },
        "edge_data": {},
    }
    (d / "metadata.json").write_text(json.dumps(meta))
    run_cli("ginex-import", "dgl", d / "metadata.json", "--dtype", "f32,paper=f16",
            "--quiet", "--out", d / "store")
    return d / "store", author_feat, paper_feat


def test_hetero_x_dict_keeps_each_types_dimension(mixed):
    path, author_feat, paper_feat = mixed
    s = ginex.Store(path)
    types = {t["name"]: t for t in s.schema()["node_types"]}
    assert (types["author"]["dim"], types["author"]["dtype"]) == (2, "f32")
    assert (types["paper"]["dim"], types["paper"]["dtype"]) == (4, "f16")
    papers_as_stored = paper_feat.astype(np.float16).astype(np.float32)
    batches = 0
    for b in typed_loader(path):
        batches += 1
        h = b.hetero()
        assert b.x.shape[1] == 4  # the row format: the widest type
        a, p = h.n_id_dict["author"], h.n_id_dict["paper"]
        assert h.x_dict["author"].shape == (len(a), 2)
        assert np.array_equal(h.x_dict["author"], author_feat[a])
        assert np.array_equal(h.x_dict["paper"], papers_as_stored[p])
        # Authors' rows are zero past their own two columns.
        assert (b.x[h.pos_dict["author"], 2:] == 0).all()
    assert batches == 5  # 125 training papers, batches of 30
