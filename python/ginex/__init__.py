"""ginex from Python: checksummed on-disk graph stores and the
Belady-cached neighbor-sampling loader of ``ginex epoch``.

* :class:`Store` opens a store (``ginex.Store(path)``) and reads features,
  labels, splits and neighbors into numpy arrays.
* :func:`import_arrays` builds a store from arrays (PyG's
  ``data.edge_index``, ``data.x``, ``data.y`` and masks), as
  ``ginex-import files`` does from files.
* :class:`Loader` iterates batches (``ids``, ``x``, ``y``, per-layer
  ``edge_index`` and ``size``) prepared by the native executor under a cache
  policy; see its docstring for the layer order. On a typed store,
  ``batch.hetero()`` gives a :class:`HeteroBatch`: per-type ``x_dict`` and
  ``n_id_dict``, per-relation ``edge_index_dict`` (PyG's heterogeneous
  ``NeighborLoader`` layout) and ``to_hetero_data()`` for PyG.
* :func:`LinkLoader` iterates link batches (positive edges with ``neg``
  negatives each) in PyG ``LinkNeighborLoader``'s layout.

numpy in and out; torch users call ``torch.from_numpy`` (zero-copy).
Errors are Python exceptions carrying the CLI's message: ``ValueError``
for bad input, ``OSError`` for I/O, ``FileExistsError`` for an existing
output, :class:`CorruptStoreError` for a damaged store, :class:`GinexError`
otherwise.
"""

import os
import shutil
import tempfile

import numpy as np

from ._ginex import (
    POLICIES,
    Batch,
    CorruptStoreError,
    Epoch,
    GinexError,
    Loader,
    Store,
)
from ._ginex import import_files as _import_files
from .hetero import HeteroBatch

__all__ = [
    "Batch",
    "CorruptStoreError",
    "Epoch",
    "GinexError",
    "HeteroBatch",
    "LinkLoader",
    "Loader",
    "POLICIES",
    "Store",
    "import_arrays",
]

__version__ = "0.1.0"

_DTYPES = ("f32", "f16", "bf16")


def _array(name, value):
    """``value`` as a numpy array (torch tensors, lists and arrays)."""
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor
        value = value.detach().cpu().numpy()
    try:
        return np.asarray(value)
    except Exception as e:  # noqa: BLE001 - any conversion failure is the caller's input
        raise ValueError(f"{name}: cannot be read as an array ({e})") from None


def _check_ids(name, ids, n, what):
    if ids.size == 0:
        return
    lo, hi = int(ids.min()), int(ids.max())
    if lo < 0:
        raise ValueError(f"{name}: node id {lo} is negative")
    if hi >= n:
        raise ValueError(f"{name}: node id {hi} is out of range ({what} has {n} nodes)")


def _id_list(name, value, n, what):
    """A boolean mask of length ``n`` or an integer index array, as int64 ids."""
    a = _array(name, value)
    if a.dtype == np.bool_:
        if a.ndim != 1 or a.shape[0] != n:
            raise ValueError(
                f"{name}: a boolean mask must have shape ({n},) ({what} has {n} nodes), got {a.shape}"
            )
        return np.flatnonzero(a).astype(np.int64)
    if a.dtype.kind not in "iu":
        raise ValueError(
            f"{name}: expected a boolean mask or integer node ids, got dtype {a.dtype}"
        )
    if a.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array of node ids, got shape {a.shape}")
    _check_ids(name, a, n, what)
    if len(np.unique(a)) != len(a):
        raise ValueError(f"{name}: node ids repeat")
    return a.astype(np.int64)


def import_arrays(
    out,
    edge_index,
    x=None,
    y=None,
    train=None,
    valid=None,
    test=None,
    undirected=False,
    dtype="f32",
    memory="2GiB",
    num_nodes=None,
    num_classes=None,
    reorder="none",
):
    """Builds a store at ``out`` from arrays — what ``ginex-import files``
    does from files — and returns it opened as a :class:`Store`.

    * ``edge_index``: integer array of shape (2, E), row 0 the source and
      row 1 the target of each edge (PyG's ``data.edge_index``).
    * ``x``: float16/32/64 features (N, dim); without it the store gets
      all-zero features of width 1.
    * ``y``: labels (N,) or (N, 1): integers (-1 = none) or floats
      (NaN = none).
    * ``train`` / ``valid`` / ``test``: boolean masks of length N or integer
      node-id arrays (PyG's ``data.train_mask`` ...).
    * ``undirected``: add the reverse of every edge. ``dtype``: the store's
      feature dtype (f32, f16, bf16). ``memory``: the import's budget (the
      CSC build spills to disk beyond it).
    * ``num_nodes``: the node count when there is no ``x`` (default: the
      largest id + 1). ``num_classes``: default the largest label + 1.
    * ``reorder``: the store's node order, ``"none"``, ``"degree"`` or
      ``"bfs"`` (``--reorder``); the store keeps the original ids, and
      every id the returned :class:`Store` and a ``Loader`` take or give is
      one of them (an index into these arrays).

    The arrays are checked first (wrong dtypes, shapes and out-of-range ids
    raise ``ValueError`` naming the argument), then staged as ``.npy`` files
    in a fresh ``.OUT.import-arrays-XXXX/`` beside the store (this call's
    own, removed afterwards; nothing else is removed) and
    imported; the store is written atomically and verified, so a failure
    leaves no store.
    """
    out = os.fspath(out)
    if dtype not in _DTYPES:
        raise ValueError(f"dtype: {dtype!r}: expected one of {', '.join(_DTYPES)}")
    if os.path.lexists(out):
        raise FileExistsError(f"{out} already exists; choose another path or remove it first")

    ei = _array("edge_index", edge_index)
    if ei.dtype.kind not in "iu":
        raise ValueError(f"edge_index: expected integer node ids, got dtype {ei.dtype}")
    if ei.ndim != 2 or ei.shape[0] != 2:
        raise ValueError(f"edge_index: expected shape (2, E), got {ei.shape}")

    feats = None
    if x is not None:
        feats = _array("x", x)
        if feats.dtype not in (np.float16, np.float32, np.float64):
            raise ValueError(f"x: expected float16, float32 or float64 features, got dtype {feats.dtype}")
        if feats.ndim != 2 or feats.shape[1] == 0:
            raise ValueError(f"x: expected shape (N, dim) with dim >= 1, got {feats.shape}")
        if num_nodes is not None and num_nodes != feats.shape[0]:
            raise ValueError(f"num_nodes: {num_nodes} but x has {feats.shape[0]} rows")
        n, what = feats.shape[0], "x"
    elif num_nodes is not None:
        if int(num_nodes) < 0:
            raise ValueError(f"num_nodes: {num_nodes} is negative")
        n, what = int(num_nodes), "num_nodes"
    else:
        n = int(ei.max()) + 1 if ei.size else 0
        what = "edge_index"
    _check_ids("edge_index", ei, n, what)

    labels = None
    if y is not None:
        labels = _array("y", y)
        if labels.dtype.kind not in "iuf":
            raise ValueError(f"y: expected integer or float labels, got dtype {labels.dtype}")
        if labels.ndim == 2 and labels.shape[1] == 1:
            labels = labels[:, 0]
        if labels.ndim != 1 or labels.shape[0] != n:
            raise ValueError(f"y: expected shape ({n},) or ({n}, 1) ({what} has {n} nodes), got {labels.shape}")

    splits = {}
    for name, value in (("train", train), ("valid", valid), ("test", test)):
        if value is not None:
            splits[name] = _id_list(name, value, n, what)
    if splits:
        seen = np.zeros(n, dtype=np.uint8)
        for name, ids in splits.items():
            if seen[ids].any():
                raise ValueError(f"{name}: node {int(ids[seen[ids] != 0][0])} is already in another split")
            seen[ids] = 1

    # A staging directory of this call's own (mkdtemp creates a fresh,
    # unique one beside the target): nothing that exists is removed or
    # reused, and the cleanup below removes only it.
    target = out.rstrip("/") or out
    parent = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(parent):
        raise FileNotFoundError(f"{out}: its folder {parent} does not exist; create it first")
    stage = tempfile.mkdtemp(
        prefix="." + os.path.basename(target) + ".import-arrays-",
        dir=parent,
    )
    names = {}
    try:
        def save(name, arr):
            path = os.path.join(stage, name + ".npy")
            np.save(path, arr, allow_pickle=False)
            names[path] = name
            return path

        kwargs = {}
        # (E, 2) rows of (source, target), the orientation of `ginex gen --raw`.
        edges = save("edge_index", np.ascontiguousarray(ei.T))
        if feats is not None:
            kwargs["features"] = save("x", np.ascontiguousarray(feats))
        elif n:
            kwargs["num_nodes"] = n
        if labels is not None:
            kwargs["labels"] = save("y", np.ascontiguousarray(labels))
        for name, ids in splits.items():
            kwargs[name] = save(name, ids)
        try:
            _import_files(
                out,
                edges,
                undirected=undirected,
                dtype=dtype,
                memory=memory,
                num_classes=num_classes,
                reorder=reorder,
                **kwargs,
            )
        except Exception as e:
            # Name the arguments, not the staged files.
            msg = str(e)
            for path, name in names.items():
                msg = msg.replace(path, name)
            if msg != str(e):
                raise type(e)(msg) from None
            raise
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return Store(out)


def LinkLoader(
    store, fanouts, batch_size=1000, neg=1, neg_mode="binary", undirected=False,
    negatives="uniform", edge_order="random", **kwargs,
):
    """Link batches for link prediction, PyG ``LinkNeighborLoader``'s way.

    Each batch holds ``batch_size`` positive edges (every edge of the graph,
    shuffled per epoch from ``seed`` and the epoch; each pair once with
    ``undirected=True``) and ``neg`` negatives per positive (uniform
    destination corruption: the positive's source, a node drawn uniformly).
    The batch's seeds (``ids[:batch_size]`` of the batch, its
    ``batch_size`` attribute) are the distinct endpoints; its sampled
    neighbourhoods leave out the batch's own positive edges (and, with
    ``undirected=True``, their reverses), DGL's ``exclude="self"``.

    ``neg_mode="binary"``: ``edge_label_index`` ((2, P(1+K)) int64 indices
    into ``ids``: the P positives, then the P×K negatives) and
    ``edge_label`` (float32, 1 for positives, 0 for negatives).
    ``neg_mode="triplet"``: ``src_index`` and ``dst_pos_index`` (P each)
    and ``dst_neg_index`` ((P, K)). Batches are the same in both modes;
    only their presentation differs.

    ``negatives``: where the negatives come from, as ``ginex epoch
    --negatives``: ``"uniform"``, ``"batch"`` (the batch's own positive
    endpoints, degree-weighted: no extra rows to read) or ``"mixed:F"`` (a
    share F from the batch). ``edge_order``: ``"random"`` or
    ``"blocked[:P]"`` (blocks of node-id ranges, as ``--edge-order``).

    Every other argument is :class:`Loader`'s (``policy``, ``memory``,
    ``seed``, ``epoch``, ``max_batches``, ``workers``, ``run_dir``,
    ``superbatch``, ``input_layer_first``), except ``split`` and
    ``shuffle``, which link batches do not use.
    """
    for unused in ("split", "shuffle"):
        if unused in kwargs:
            raise TypeError(f"LinkLoader() does not take {unused!r}: link batches cover every edge")
    if isinstance(neg, bool) or not isinstance(neg, int) or neg < 0:
        raise ValueError(f"neg: {neg!r} must be a count of negatives (an int >= 0)")
    return Loader(
        store, fanouts, batch_size=batch_size, neg=neg, neg_mode=neg_mode,
        undirected=undirected, negatives=negatives, edge_order=edge_order, **kwargs,
    )
