"""ginex.Loader against `ginex epoch`, across policies, and abandoned."""

import gc
import json
import os
import threading
import zlib

import numpy as np
import pytest

import ginex
from conftest import run_cli

FANOUTS = [5, 4]
BATCH = 200
SEED = 3


def loader(store_path, **kw):
    args = dict(fanouts=FANOUTS, batch_size=BATCH, seed=SEED, memory="256MiB")
    args.update(kw)
    return ginex.Loader(ginex.Store(store_path), **args)


def cli_epoch(store_path, tmp_path, policy):
    report = tmp_path / f"{policy}.json"
    run_cli(
        "ginex", "epoch", store_path, "--policy", policy, "--memory", "256MiB",
        "--fanouts", ",".join(map(str, FANOUTS)), "--batch-size", BATCH,
        "--seed", SEED, "--report", report,
    )
    return json.loads(report.read_text())


@pytest.mark.parametrize("policy", ["ginex", "lru", "mmap"])
def test_batches_match_the_checksums_of_ginex_epoch(store_path, tmp_path, policy):
    want = cli_epoch(store_path, tmp_path, policy)
    ld = loader(store_path, policy=policy)
    got = []
    for b in ld:
        assert b.x.dtype == np.float32 and b.x.shape == (len(b.ids), 24)
        assert zlib.crc32(b.x.tobytes()) == b.checksum  # f32 store: x is the stored bytes
        got.append(b.checksum)
    assert got == [p["checksum"] for p in want["per_batch"]]
    assert len(ld) == len(got)
    r = ld.report
    assert (r["hits"], r["misses"]) == (want["hits"], want["misses"])
    assert r["per_batch"] == want["per_batch"]
    assert r["seconds"]["gather"] >= 0


def batches(ld):
    return [
        (b.ids.tobytes(), b.x.tobytes(), b.y.tobytes(), [e.tobytes() for e in b.edge_index], b.size)
        for b in ld
    ]


def test_every_policy_yields_identical_batches(store_path):
    ref = batches(loader(store_path, policy="none", memory=None))
    assert len(ref) == 2  # 300 training nodes (gen splits 10%), batches of 200
    for p in ginex.POLICIES:
        for memory in ("256MiB", None):
            assert batches(loader(store_path, policy=p, memory=memory)) == ref, (p, memory)


def test_batches_follow_pyg_conventions(store_path, raw):
    s = ginex.Store(store_path)
    ld = loader(store_path)
    first = True
    for b in ld:
        n = len(b.ids)
        assert b.batch_size == len(b.y) <= BATCH
        assert np.array_equal(b.y, raw.y[b.ids[: b.batch_size]])
        assert np.array_equal(b.x, raw.x[b.ids])
        assert len(np.unique(b.ids)) == n
        # NeighborLoader order: hop 1 (edges into the seeds) first, the input layer last.
        assert b.size[0][1] == b.batch_size and b.size[-1][0] == n
        for i, (ei, (num_src, num_dst)) in enumerate(b.adjs):
            assert ei.dtype == np.int64 and ei.shape[0] == 2
            assert ei[0].max() < num_src and ei[1].max() < num_dst
            if i + 1 < len(b.size):
                assert b.size[i + 1][1] == num_src
            if first:  # every edge is a real in-edge of its target
                for src, dst in ei.T[:50]:
                    assert b.ids[src] in s.in_neighbors(int(b.ids[dst]))
        # fanout of the layer nearest the seeds
        counts = np.bincount(b.edge_index[0][1], minlength=b.batch_size)
        assert counts.max() <= FANOUTS[0]
        first = False
    # The documented flag gives ginex's own order (input layer first).
    b0 = next(iter(loader(store_path)))
    b1 = next(iter(loader(store_path, input_layer_first=True)))
    assert [e.tobytes() for e in b1.edge_index] == [e.tobytes() for e in reversed(b0.edge_index)]
    assert b1.size == list(reversed(b0.size))


def test_splits_shuffle_and_epochs(store_path, raw):
    ids = lambda ld: np.concatenate([b.ids[: b.batch_size] for b in ld])  # noqa: E731
    assert np.array_equal(ids(loader(store_path, shuffle=False)), raw.train)
    assert np.array_equal(ids(loader(store_path, split="valid", shuffle=False)), raw.valid)
    v = ids(loader(store_path, split="test"))
    assert sorted(v) == sorted(raw.test) and not np.array_equal(v, raw.test)
    ld = loader(store_path)
    e0, e1 = ids(ld), ids(ld)  # each pass is the next epoch, reshuffled
    assert sorted(e0) == sorted(e1) and not np.array_equal(e0, e1)
    assert np.array_equal(ids(loader(store_path, epoch=1)), e1)
    assert len(loader(store_path, max_batches=1)) == 1
    assert len(list(loader(store_path, max_batches=1))) == 1


def test_loader_rejects_bad_arguments(store_path):
    cases = [
        ("fanouts", dict(fanouts=[])),
        ("fanouts", dict(fanouts=[5, 0])),
        ("batch_size", dict(batch_size=0)),
        ("policy", dict(policy="belady")),
        ("split", dict(split="dev")),
        ("memory", dict(memory="3 parsecs")),
        ("superbatch", dict(superbatch=-1)),
    ]
    for arg, kw in cases:
        with pytest.raises(ValueError, match=f"^{arg}"):
            loader(store_path, **kw)
    with pytest.raises(ValueError, match="store"):
        ginex.Loader(42, FANOUTS)


def loader_threads():
    """Native threads named by the loader (Linux: /proc/self/task/*/comm)."""
    names = []
    for t in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{t}/comm") as f:
                names.append(f.read().strip())
        except (FileNotFoundError, ProcessLookupError):
            pass  # the thread exited between the listing and the read
    return names


def assert_clean(run_dir, threads_before):
    gc.collect()
    assert not run_dir.exists() or os.listdir(run_dir) == []
    assert "ginex-loader" not in loader_threads()
    assert threading.active_count() == 1
    assert len(os.listdir("/proc/self/task")) <= threads_before


def test_an_abandoned_loader_leaves_no_runtime_files_and_no_threads(store_path, tmp_path):
    run_dir = tmp_path / "runs"

    def make():
        # small superbatches: runtime files exist while a batch is in hand
        return loader(store_path, policy="ginex", run_dir=run_dir, superbatch=1, batch_size=50)

    list(make())  # warm any global pools
    before = len(os.listdir("/proc/self/task"))

    # break
    for b in make():
        assert "ginex-loader" in loader_threads()
        assert run_dir.exists() and os.listdir(run_dir)
        break
    assert_clean(run_dir, before)

    # an exception out of the loop
    with pytest.raises(RuntimeError):
        for b in make():
            raise RuntimeError("training failed")
    assert_clean(run_dir, before)

    # garbage collection of an iterator in a reference cycle
    it = iter(make())
    next(it)
    cycle = [it]
    cycle.append(cycle)
    del it, cycle
    assert_clean(run_dir, before)

    # explicit close and the context manager
    it = iter(make())
    next(it)
    it.close()
    assert list(it) == []
    assert_clean(run_dir, before)
    with iter(make()) as it:
        next(it)
    assert_clean(run_dir, before)


def test_seeds_replace_the_split_in_their_order(store_path):
    store = ginex.Store(store_path)
    loader = ginex.Loader(store, [3], batch_size=2, seeds=np.array([5, 3, 2999]), shuffle=False)
    assert [b.ids[: b.batch_size].tolist() for b in loader] == [[5, 3], [2999]]
    assert loader.config["split"] == "seeds (3 nodes)"
    shuffled = ginex.Loader(store, [3], batch_size=10, seeds=list(range(40, 60)), shuffle=True, seed=1)
    got = [s for b in shuffled for s in b.ids[: b.batch_size].tolist()]
    assert sorted(got) == list(range(40, 60)) and got != list(range(40, 60))
    with pytest.raises(ValueError, match="seeds: node id 3 repeats"):
        ginex.Loader(store, [3], seeds=[3, 4, 3])
    with pytest.raises(ValueError, match="seeds: node id 3000 is not a node"):
        ginex.Loader(store, [3], seeds=[1, 3000])
    with pytest.raises(ValueError, match="seeds: node id -1 is negative"):
        ginex.Loader(store, [3], seeds=[1, -1])


def test_labor_samplers_and_their_options(store_path, tmp_path):
    """`sampler`, `layer_dependency`, `batch_dependency` reach the native
    loader: the batches are `ginex epoch --sampler`'s (checksums), carry
    weights summing to 1 per target, need fewer rows than neighbor
    sampling; wrong combinations name their argument."""
    neighbor = list(loader(store_path))
    lab = loader(store_path, sampler="labor-*", batch_dependency=2)
    assert lab.config["sampler"] == "labor-*" and lab.config["batch_dependency"] == 2
    batches = list(lab)
    for b in batches:
        for ei, w in zip(b.edge_index, b.edge_weight):
            assert w is not None and len(w) == ei.shape[1]
            sums = np.bincount(ei[1], weights=w)
            assert np.allclose(sums[sums > 0], 1.0, atol=1e-4)
    assert all(w is None for b in neighbor for w in b.edge_weight)
    rows = lambda bs: sum(len(b.ids) for b in bs)  # noqa: E731
    assert rows(batches) < rows(neighbor)
    report = tmp_path / "labor.json"
    run_cli(
        "ginex", "epoch", store_path, "--policy", "ginex", "--memory", "256MiB",
        "--fanouts", ",".join(map(str, FANOUTS)), "--batch-size", BATCH,
        "--seed", SEED, "--sampler", "labor-*", "--batch-dependency", 2, "--report", report,
    )
    want = [p["checksum"] for p in json.loads(report.read_text())["per_batch"]]
    assert [b.checksum for b in batches] == want
    for arg, kw in [
        ("sampler", dict(sampler="labor")),
        ("layer_dependency", dict(layer_dependency=True)),
        ("batch_dependency", dict(batch_dependency=3)),
        ("batch_dependency", dict(sampler="labor-0", batch_dependency=0)),
    ]:
        with pytest.raises(ValueError, match=f"^{arg}"):
            loader(store_path, **kw)
