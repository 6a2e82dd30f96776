"""ginex.Store and ginex.import_arrays against the CLI."""

import os
import shutil

import numpy as np
import pytest

import ginex
from conftest import cli_import


def store_files(path):
    return {f: (path / f).read_bytes() for f in sorted(os.listdir(path))}


def test_store_reads_what_was_imported(store_path, raw):
    s = ginex.Store(store_path)
    n = raw.x.shape[0]
    assert (s.num_nodes, s.feature_dim, s.dtype) == (n, raw.x.shape[1], "f32")
    assert s.num_edges == raw.edges.shape[0]
    assert s.num_classes == int(raw.y.max()) + 1
    ids = np.array([0, n - 1, 7, 7, 123], dtype=np.uint64)
    assert np.array_equal(s.features(ids), raw.x[ids.astype(np.int64)])
    assert s.features(np.array([], dtype=np.uint64)).shape == (0, raw.x.shape[1])
    want = raw.x[[3, 1, 4]]
    for ids in ([3, 1, 4], np.array([3, 1, 4]), np.array([3, 1, 4], dtype=np.int32),
                np.array([9, 3, 8, 1, 7, 4], dtype=np.uint32)[1::2]):
        assert np.array_equal(s.features(ids), want)
    assert np.array_equal(s.labels(), raw.y)
    sp = s.splits()
    assert np.array_equal(sp["train"], raw.train)
    assert np.array_equal(sp["valid"], raw.valid)
    assert np.array_equal(sp["test"], raw.test)
    assert s.original_ids() is None
    for v in (0, 5, n - 1):
        want = np.sort(raw.edges[raw.edges[:, 1] == v, 0])
        assert np.array_equal(np.sort(s.in_neighbors(v)), want)
    r = s.verify()
    assert r["pages"] > 0 and r["files"] > 0


def test_store_errors_are_exceptions_with_the_cli_message(store_path, tmp_path):
    s = ginex.Store(store_path)
    with pytest.raises(ValueError, match=r"^ids: node id 3000 is out of range"):
        s.features(np.array([1, 3000], dtype=np.uint64))
    with pytest.raises(ValueError, match=r"^ids: node id -2 is negative"):
        s.features(np.array([1, -2]))
    with pytest.raises(ValueError, match=r"^ids: expected a 1-D array"):
        s.features(np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"^ids: expected a 1-D array"):
        s.features(np.array([[1, 2]]))
    with pytest.raises(ValueError, match=r"^node: node id 99999 is out of range"):
        s.in_neighbors(99999)
    with pytest.raises(ValueError, match="nowhere is not a ginex store"):
        ginex.Store(tmp_path / "nowhere")
    # A flipped byte in a feature page: verify() names the file.
    bad = tmp_path / "bad"
    shutil.copytree(store_path, bad)
    pages = bad / "features.pages"
    b = bytearray(pages.read_bytes())
    b[len(b) // 2] ^= 0xFF
    pages.write_bytes(bytes(b))
    with pytest.raises(ginex.CorruptStoreError, match="features"):
        ginex.Store(bad).verify()
    assert issubclass(ginex.CorruptStoreError, ginex.GinexError)


@pytest.mark.parametrize("masks", [False, True])
def test_import_arrays_is_byte_identical_to_ginex_import_files(raw, store_path, tmp_path, masks):
    n = raw.x.shape[0]

    def split(ids):
        if not masks:
            return ids
        m = np.zeros(n, dtype=bool)
        m[ids] = True
        return m

    # PyG's orientation: edge_index (2, E), row 0 the source.
    s = ginex.import_arrays(
        tmp_path / "py", raw.edges.T, x=raw.x, y=raw.y,
        train=split(raw.train), valid=split(raw.valid), test=split(raw.test),
    )
    assert isinstance(s, ginex.Store)
    if masks:
        # masks give sorted ids: compare with the CLI on sorted id files.
        for name in ("train", "valid", "test"):
            np.save(tmp_path / f"{name}_ids.npy", np.sort(getattr(raw, name)))
        for f in ("edges", "features", "labels"):
            shutil.copy(raw.dir / f"{f}.npy", tmp_path / f"{f}.npy")
        cli_import(tmp_path, tmp_path / "cli")
        want = store_files(tmp_path / "cli")
    else:
        want = store_files(store_path)
    assert store_files(tmp_path / "py") == want
    assert not [n for n in os.listdir(tmp_path) if ".import-arrays" in n]


def test_import_arrays_options_match_the_cli(raw, tmp_path):
    ginex.import_arrays(
        tmp_path / "py", raw.edges.T, x=raw.x, y=raw.y, train=raw.train,
        valid=raw.valid, test=raw.test, undirected=True, dtype="f16", memory="64MiB",
    )
    cli_import(raw.dir, tmp_path / "cli", "--undirected", "--dtype", "f16", "--memory", "64MiB")
    assert store_files(tmp_path / "py") == store_files(tmp_path / "cli")
    s = ginex.Store(tmp_path / "py")
    assert s.dtype == "f16" and s.num_edges == 2 * raw.edges.shape[0]
    ginex.import_arrays(
        tmp_path / "py-bfs", raw.edges.T, x=raw.x, y=raw.y, train=raw.train,
        valid=raw.valid, test=raw.test, reorder="bfs",
    )
    cli_import(raw.dir, tmp_path / "cli-bfs", "--reorder", "bfs")
    assert store_files(tmp_path / "py-bfs") == store_files(tmp_path / "cli-bfs")
    with pytest.raises(ValueError, match=r'^reorder: .*unknown reorder "rcm"; use none, degree, bfs or auto'):
        ginex.import_arrays(tmp_path / "bad", raw.edges.T, reorder="rcm")


def test_import_arrays_without_features(raw, tmp_path):
    s = ginex.import_arrays(tmp_path / "s", raw.edges.T.astype(np.int64), num_nodes=3100)
    assert (s.num_nodes, s.feature_dim, s.labels(), s.splits()) == (3100, 1, None, None)
    assert np.array_equal(np.sort(s.in_neighbors(5)), np.sort(raw.edges[raw.edges[:, 1] == 5, 0]))


def bad_inputs(raw):
    n = raw.x.shape[0]
    e = raw.edges.T
    oob = e.copy()
    oob[1, 10] = n
    neg = e.astype(np.int64)
    neg[0, 3] = -4
    yield "edge_index", "dtype float64", dict(edge_index=e.astype(np.float64))
    yield "edge_index", r"shape \(2, E\)", dict(edge_index=raw.edges)
    yield "edge_index", "out of range", dict(edge_index=oob, x=raw.x)
    yield "edge_index", "negative", dict(edge_index=neg)
    yield "x", "dtype int32", dict(x=raw.x.astype(np.int32))
    yield "x", "shape", dict(x=raw.x[:, 0])
    yield "x", None, dict(x=np.where(np.arange(n)[:, None] == 5, np.nan, raw.x))
    yield "y", "shape", dict(x=raw.x, y=raw.y[:-1])
    yield "y", "dtype", dict(x=raw.x, y=raw.y.astype(str))
    yield "train", "out of range", dict(x=raw.x, train=np.array([0, n]))
    yield "train", "mask must have shape", dict(x=raw.x, train=np.ones(n + 1, dtype=bool))
    yield "valid", "dtype float", dict(x=raw.x, valid=raw.valid.astype(float))
    yield "test", "already in another split", dict(x=raw.x, train=raw.train, test=raw.train[:3])
    yield "dtype", "expected one of", dict(x=raw.x, dtype="f8")
    yield "memory", "not a size", dict(x=raw.x, memory="lots")


def test_import_arrays_rejects_bad_input_and_leaves_no_store(raw, tmp_path):
    for i, (arg, what, kw) in enumerate(bad_inputs(raw)):
        kw.setdefault("edge_index", raw.edges.T)
        out = tmp_path / f"s{i}"
        with pytest.raises(ValueError) as e:
            ginex.import_arrays(out, **kw)
        msg = str(e.value)
        assert arg in msg, (arg, msg)
        if what:
            assert __import__("re").search(what, msg), (what, msg)
        assert not out.exists(), msg
    assert sorted(os.listdir(tmp_path)) == []


def test_import_arrays_into_a_missing_folder_names_the_folder(raw, tmp_path):
    out = tmp_path / "no-such-folder" / "store"
    with pytest.raises(FileNotFoundError, match=r"no-such-folder does not exist; create it first"):
        ginex.import_arrays(out, raw.edges.T)
    assert sorted(os.listdir(tmp_path)) == []


def test_import_arrays_removes_only_its_own_staging(raw, tmp_path):
    # What the staging name of earlier versions was, and a user's file
    # beside the target: neither is removed or changed, on success or
    # on failure.
    theirs = tmp_path / "s.import-arrays.tmp"
    theirs.mkdir()
    (theirs / "keep.npy").write_bytes(b"mine")
    with pytest.raises(ValueError):
        ginex.import_arrays(tmp_path / "s", raw.edges.T.astype(np.int64), num_nodes=3100, y=np.zeros(3))
    ginex.import_arrays(tmp_path / "s", raw.edges.T.astype(np.int64), num_nodes=3100)
    assert (theirs / "keep.npy").read_bytes() == b"mine"
    assert sorted(os.listdir(tmp_path)) == ["s", "s.import-arrays.tmp"]


def test_import_arrays_refuses_an_existing_output(raw, store_path):
    before = store_files(store_path)
    with pytest.raises(FileExistsError, match="already exists"):
        ginex.import_arrays(store_path, raw.edges.T)
    assert store_files(store_path) == before


@pytest.mark.parametrize("order", ["degree", "bfs"])
def test_a_reordered_store_speaks_original_ids(data, raw, order):
    # Renumbered on disk, but every id in or out is the input's.
    path = data / f"store-{order}"
    if not path.exists():
        cli_import(data / "raw", path, "--reorder", order)
    s = ginex.Store(path)
    n = raw.x.shape[0]
    assert np.array_equal(s.original_ids(), np.arange(n))
    ids = np.array([0, n - 1, 7, 7, 123], dtype=np.uint64)
    assert np.array_equal(s.features(ids), raw.x[ids.astype(np.int64)])
    assert np.array_equal(s.labels(), raw.y)
    sp = s.splits()
    for k, want in (("train", raw.train), ("valid", raw.valid), ("test", raw.test)):
        assert np.array_equal(sp[k], np.sort(want))
    for v in (0, 5, n - 1):
        assert np.array_equal(s.in_neighbors(v), np.sort(raw.edges[raw.edges[:, 1] == v, 0]))
    with pytest.raises(ValueError, match=r"^ids: node id 3000 is not an original id"):
        s.features([3000])
    # The loader's ids are original ids: rows, labels and sampled edges agree
    # with the raw arrays, and the seeds are the training split.
    edges = set(map(tuple, raw.edges.tolist()))
    seeds = []
    for b in ginex.Loader(s, fanouts=[4, 3], batch_size=250, policy="none", seed=1):
        assert np.array_equal(b.x, raw.x[b.ids])
        assert np.array_equal(b.y, raw.y[b.ids[: b.batch_size]])
        for ei in b.edge_index:
            for u, v in zip(b.ids[ei[0]].tolist(), b.ids[ei[1]].tolist()):
                assert (u, v) in edges
        seeds.extend(b.ids[: b.batch_size].tolist())
    assert sorted(seeds) == sorted(raw.train.tolist())


def test_typed_store_schema(store_path, tmp_path):
    assert ginex.Store(store_path).schema() is None
    from conftest import run_cli
    path = tmp_path / "typed"
    run_cli("ginex", "gen", "--hetero", "--nodes", "2000", "--dim", "4", "--quiet", "--out", path)
    s = ginex.Store(path)
    schema = s.schema()
    types = [(t["name"], t["offset"], t["count"], t["dim"]) for t in schema["node_types"]]
    assert types == [("paper", 0, 800, 4), ("author", 800, 1000, 0), ("field", 1800, 200, 0)]
    rels = [r["canonical"] for r in schema["relations"]]
    assert rels == ["paper:cites:paper", "author:writes:paper", "field:topic_of:paper",
                    "paper:written_by:author", "paper:has_topic:field"]
    assert sum(r["num_edges"] for r in schema["relations"]) == s.num_edges
    assert s.features([0, 799]).shape == (2, 4)
    with pytest.raises(ValueError, match="author, which has no features"):
        s.features([800])


def test_loader_takes_per_relation_fanouts(tmp_path):
    from conftest import run_cli
    path = tmp_path / "typed"
    run_cli("ginex", "gen", "--hetero", "--nodes", "2000", "--dim", "4", "--quiet", "--out", path)
    for src, ty, via, out in (("typed", "author", "writes", "typed-a"),
                              ("typed-a", "field", "has_topic", "typed-af")):
        run_cli("ginex", "derive-features", tmp_path / src, "--type", ty, "--from", "paper",
                "--via", via, "--out", tmp_path / out)
    s = ginex.Store(tmp_path / "typed-af")
    authors = range(800, 1800)

    def batches(fanouts):
        ld = ginex.Loader(s, fanouts=fanouts, batch_size=100, policy="none", seed=2)
        return ld, [(b.ids.copy(), [e.copy() for e in b.edge_index]) for b in ld]

    # The text, one dict per hop (DGL) and a dict of per-hop lists (PyG)
    # are one set of fanouts.
    ld, want = batches("cites=3:1,writes=2:0")
    assert ld.config["fanouts"] == "cites=3:1,writes=2:0"
    for other in ([{"cites": 3, "writes": 2}, {"cites": 1}], {"cites": [3, 1], "writes": [2, 0]}):
        got = batches(other)[1]
        assert len(got) == len(want)
        for (ids, hops), (wids, whops) in zip(got, want):
            assert np.array_equal(ids, wids)
            assert all(np.array_equal(a, b) for a, b in zip(hops, whops))
    # Seeds' hop: at most 2 authors per paper; next hop: no author at all.
    for ids, hops in want:
        seeds_hop, next_hop = hops[0], hops[1]
        src = ids[seeds_hop[0]]
        per_target = np.bincount(seeds_hop[1][np.isin(src, authors)])
        assert per_target.max(initial=0) <= 2
        assert not np.isin(ids[next_hop[0]], authors).any()
    with pytest.raises(ValueError, match=r"^fanouts: .*no relation `citez`.*paper:cites:paper"):
        ginex.Loader(s, fanouts="citez=2", batch_size=100)
    with pytest.raises(ValueError, match=r"^fanouts: .*writes gives 1 hops"):
        ginex.Loader(s, fanouts={"cites": [3, 1], "writes": [2]}, batch_size=100)
