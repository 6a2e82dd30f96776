"""ginex.LinkLoader: PyG LinkNeighborLoader's fields, both modes, the
batch's own edges excluded, and `ginex epoch --task link`'s batches."""

import json
import zlib

import numpy as np
import pytest

import ginex
from conftest import run_cli

FANOUTS = [5, 4]
BATCH = 500
NEG = 2
SEED = 3


def link_loader(store_path, **kw):
    args = dict(fanouts=FANOUTS, batch_size=BATCH, neg=NEG, seed=SEED, max_batches=3)
    args.update(kw)
    return ginex.LinkLoader(ginex.Store(store_path), **args)


def test_binary_batches_are_labelled_edges_over_the_seeds(store_path):
    s = ginex.Store(store_path)
    n = 0
    for b in link_loader(store_path):
        n += 1
        p = BATCH
        ei, y = b.edge_label_index, b.edge_label
        assert ei.dtype == np.int64 and ei.shape == (2, p * (1 + NEG))
        assert y.dtype == np.float32 and list(y) == [1.0] * p + [0.0] * (p * NEG)
        assert b.src_index is None and b.dst_pos_index is None and b.dst_neg_index is None
        assert ei.max() < b.batch_size <= len(b.ids)
        # Seeds: the distinct endpoints, in first-appearance order.
        assert sorted(set(ei.ravel())) == list(range(b.batch_size))
        # Negatives keep their positive's source, K per positive in order.
        assert np.array_equal(ei[0, p:], np.repeat(ei[0, :p], NEG))
        pos = set()
        for u, v in ei[:, :p].T[:100]:
            src, dst = int(b.ids[u]), int(b.ids[v])
            assert src in s.in_neighbors(dst)  # a real edge
            pos.add((src, dst))
        # The batch's own edges are not in its sampled neighbourhoods.
        for layer in b.edge_index:
            sampled = set(zip(b.ids[layer[0]].tolist(), b.ids[layer[1]].tolist()))
            assert not (pos & sampled)
    assert n == 3


def test_triplet_mode_is_the_same_batches_presented_as_triplets(store_path):
    for bb, bt in zip(link_loader(store_path), link_loader(store_path, neg_mode="triplet")):
        assert np.array_equal(bb.ids, bt.ids) and bb.checksum == bt.checksum
        assert bt.edge_label_index is None and bt.edge_label is None
        p = len(bt.src_index)
        assert bt.dst_neg_index.shape == (p, NEG) and bt.dst_neg_index.dtype == np.int64
        assert np.array_equal(bt.src_index, bb.edge_label_index[0, :p])
        assert np.array_equal(bt.dst_pos_index, bb.edge_label_index[1, :p])
        assert np.array_equal(bt.dst_neg_index.ravel(), bb.edge_label_index[1, p:])


def test_link_batches_match_ginex_epoch_task_link(store_path, tmp_path):
    report = tmp_path / "link.json"
    run_cli(
        "ginex", "epoch", store_path, "--task", "link", "--neg", NEG,
        "--fanouts", ",".join(map(str, FANOUTS)), "--batch-size", BATCH,
        "--seed", SEED, "--max-batches", 3, "--report", report,
    )
    want = json.loads(report.read_text())
    got = [b.checksum for b in link_loader(store_path)]
    assert got == [p["checksum"] for p in want["per_batch"]]
    assert want["parameters"]["task"] == f"link (neg {NEG}, binary)"
    for b in link_loader(store_path, max_batches=1):
        assert zlib.crc32(b.x.tobytes()) == b.checksum
    ld = link_loader(store_path, max_batches=None)
    assert len(ld) == -(-ginex.Store(store_path).num_edges // BATCH)
    assert ld.config["neg"] == NEG and ld.config["neg_mode"] == "binary"


def test_link_loader_rejects_bad_arguments(store_path):
    with pytest.raises(ValueError, match="^neg_mode"):
        link_loader(store_path, neg_mode="pairs")
    with pytest.raises(ValueError, match="^neg"):
        link_loader(store_path, neg=-1)
    with pytest.raises(TypeError, match="split"):
        link_loader(store_path, split="valid")


def test_a_neg_that_cannot_fit_memory_raises_and_the_interpreter_survives(store_path):
    # neg=10**8 used to abort the interpreter allocating 400 GB (rc 134).
    with pytest.raises(ValueError, match=r"neg 100000000: .* at most --neg \d+ fits"):
        link_loader(store_path, neg=10**8)
    with pytest.raises(ValueError, match="more than --memory"):
        link_loader(store_path, neg=10**5, memory="64MiB")
    assert next(iter(link_loader(store_path))) is not None


def test_negatives_and_edge_order_match_ginex_epoch(store_path, tmp_path):
    report = tmp_path / "local.json"
    run_cli(
        "ginex", "epoch", store_path, "--task", "link", "--neg", NEG,
        "--fanouts", ",".join(map(str, FANOUTS)), "--batch-size", BATCH,
        "--seed", SEED, "--max-batches", 3, "--report", report,
        "--negatives", "batch", "--edge-order", "blocked:4",
    )
    want = json.loads(report.read_text())
    assert want["parameters"]["task"] == f"link (neg {NEG}, binary, negatives batch, edge order blocked:4)"
    ld = link_loader(store_path, negatives="batch", edge_order="blocked:4")
    got = []
    for b in ld:
        got.append(b.checksum)
        # In-batch negatives are endpoints of the batch's positives.
        p = BATCH
        ends = set(b.edge_label_index[:, :p].ravel())
        assert set(b.edge_label_index[1, p:]) <= ends
    assert got == [p["checksum"] for p in want["per_batch"]]
    assert ld.config["negatives"] == "batch" and ld.config["edge_order"] == "blocked:4"
    with pytest.raises(ValueError, match="^negatives"):
        link_loader(store_path, negatives="mixed:2")
    with pytest.raises(ValueError, match="^edge_order"):
        link_loader(store_path, edge_order="blocked:0")
    with pytest.raises(ValueError, match="^negatives"):
        ginex.Loader(ginex.Store(store_path), FANOUTS, negatives="batch")
