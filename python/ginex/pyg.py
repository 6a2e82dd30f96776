"""ginex as a PyG backend: existing PyG training code runs out of core with
one changed import and one changed argument.

* :class:`FeatureStore` — PyG's ``torch_geometric.data.FeatureStore`` over a
  ginex store: every node type's ``x`` and ``y`` and the split masks
  (``train_mask``, ``val_mask``, ``test_mask``) as ``TensorAttr``\\ s, read
  through the store (every page checked against its CRC). Read-only.
* :class:`GraphStore` — PyG's ``GraphStore``: every relation as a sorted CSC
  ``EdgeAttr`` with its size, for code that asks for the whole structure.
* :class:`NeighborLoader` — PyG's own ``NodeLoader`` with a ginex sampler
  (:class:`GinexSampler`): batches are sampled by ginex's executor (its
  neighbor cache) and their features come through the Belady feature
  cache, because the loader, not torch's sampler, owns each epoch's seed
  order and hands it to the native inspector ahead of time. The batches are
  PyG's: ``Data`` / ``HeteroData`` with ``n_id``, ``batch_size``,
  ``num_sampled_nodes``, ``num_sampled_edges``, ``input_id``, ``x``, ``y``
  and the masks.
* :class:`LinkNeighborLoader` — PyG's own ``LinkLoader`` over
  ``ginex.LinkLoader``'s link batches, the same way: ``Data`` with
  ``edge_label_index`` / ``edge_label`` (binary) or ``src_index`` /
  ``dst_pos_index`` / ``dst_neg_index`` (triplet), the batch's own edges
  left out of its ``edge_index``.

Only ``torch`` and ``torch_geometric`` are needed: PyG's own sampler backends
``pyg-lib`` and ``torch-sparse`` are not (ginex samples natively).

Sampling semantics: PyG's ``NeighborLoader`` — each hop samples the
in-neighbours of the nodes first reached at the hop before, and every
sampled node appears once in ``n_id``, by hop. ginex's native sampler also
re-draws the nodes of earlier hops at each hop (PyG's old
``NeighborSampler``); those re-draws are left out of ``edge_index`` here. A
node reached only through a re-draw stays in ``n_id`` (at the hop that
reached it) without edges, so a model's outputs on the seeds are PyG's.
"""

import os

import numpy as np

try:
    import torch
    from torch_geometric.data import EdgeAttr, TensorAttr
    from torch_geometric.data import FeatureStore as _PygFeatureStore
    from torch_geometric.data import GraphStore as _PygGraphStore
    from torch_geometric.loader import LinkLoader as _PygLinkLoader
    from torch_geometric.loader import NodeLoader
    from torch_geometric.sampler import (
        BaseSampler,
        HeteroSamplerOutput,
        NegativeSampling,
        NodeSamplerInput,
        SamplerOutput,
    )
except ImportError as e:  # pragma: no cover - exercised without torch_geometric
    raise ImportError(
        f"ginex.pyg needs torch and torch_geometric ({e}); install them with "
        "pip install \"ginex[pyg]\" (or pip install torch torch_geometric). "
        "pyg-lib and torch-sparse are not needed."
    ) from e

from . import GinexError, LinkLoader, Loader, Store
from ._ginex import _pyg_csc, _pyg_relation_csc

__all__ = [
    "FeatureStore",
    "GinexSampler",
    "GraphStore",
    "LinkNeighborLoader",
    "NeighborLoader",
    "ReadOnlyStoreError",
]

# The store's split names and PyG's mask attributes.
_MASKS = (("train", "train_mask"), ("valid", "val_mask"), ("test", "test_mask"))


class ReadOnlyStoreError(GinexError):
    """A write to a ginex store through PyG's interface: stores are
    checksummed and read-only; build a new one (``ginex.import_arrays``)."""


def _open(store):
    if isinstance(store, Store):
        return store
    if isinstance(store, (str, os.PathLike)):
        return Store(store)
    raise TypeError(f"store: expected a ginex.Store or a path, got {type(store).__name__}")


def _read_only(what, store):
    return ReadOnlyStoreError(
        f"{what}: {store.path} is a read-only ginex store (checksummed on disk); "
        "build a new store with ginex.import_arrays to change its tensors or edges"
    )


class _Type:
    """One node type's id range and feature width (a typed store's type, or
    the whole of an untyped store as type None)."""

    __slots__ = ("name", "offset", "count", "dim")

    def __init__(self, name, offset, count, dim):
        self.name, self.offset, self.count, self.dim = name, offset, count, dim


def _types(store):
    schema = store.schema()
    if schema is None:
        orig = store.original_ids()
        if orig is not None and len(orig) and int(orig[-1]) >= store.num_nodes:
            raise ValueError(
                f"store: {store.path}: its original ids are not 0..{store.num_nodes} "
                "(a --remap store), and PyG numbers nodes densely; re-import it with dense ids"
            )
        return {None: _Type(None, 0, store.num_nodes, store.feature_dim)}
    return {
        t["name"]: _Type(t["name"], t["offset"], t["count"], t["dim"]) for t in schema["node_types"]
    }


def _local_rows(attr, index, count):
    """``index`` (PyG's: None, a tensor of ids or a mask, a slice, an int,
    a list or an array) as int64 type-local rows, range-checked."""
    if index is None:
        return np.arange(count, dtype=np.int64)
    if isinstance(index, slice):
        return np.arange(count, dtype=np.int64)[index]
    if isinstance(index, torch.Tensor):
        index = index.detach().cpu().numpy()
    a = np.asarray(index)
    if a.dtype == np.bool_:
        if a.shape != (count,):
            raise ValueError(f"{attr}: a mask index must have shape ({count},), got {a.shape}")
        return np.flatnonzero(a)
    if a.dtype.kind not in "iu":
        raise ValueError(f"{attr}: index must hold integer node ids, got dtype {a.dtype}")
    a = a.reshape(-1).astype(np.int64, copy=False)
    if a.size and (int(a.min()) < 0 or int(a.max()) >= count):
        bad = int(a.min()) if int(a.min()) < 0 else int(a.max())
        raise ValueError(f"{attr}: node id {bad} is out of range (the type has {count} nodes)")
    return a


class FeatureStore(_PygFeatureStore):
    """PyG's ``FeatureStore`` over a ginex store (``ginex.Store`` or path).

    Attributes (``TensorAttr(group_name, attr_name)``; ``group_name`` is the
    node type, None on an untyped store): ``x`` (float32 ``(n, dim)``, the
    type's own dimension) for featured types; ``y`` (int64, -1 = no label)
    and ``train_mask`` / ``val_mask`` / ``test_mask`` (bool) when the store
    has labels / splits — on a typed store only for the types that have
    labelled nodes / split members. Every ``x`` read goes through the store
    and checks each page's CRC; labels and splits are read (and checked)
    once, when the store is opened here. ``put`` / ``remove`` raise
    :class:`ReadOnlyStoreError`.
    """

    def __init__(self, store):
        super().__init__()
        self.store = _open(store)
        self._types = _types(self.store)
        self._typed = self.store.schema() is not None
        labels = self.store.labels()
        self._labels = labels
        splits = self.store.splits()
        self._masks = {}
        if splits is not None:
            n = self.store.num_nodes
            for split, name in _MASKS:
                m = np.zeros(n, dtype=np.bool_)
                m[splits[split]] = True
                self._masks[name] = m
        self._attrs = []
        for t in self._types.values():
            span = slice(t.offset, t.offset + t.count)
            if t.dim > 0:
                self._attrs.append((t.name, "x"))
            if labels is not None and (not self._typed or (labels[span] >= 0).any()):
                self._attrs.append((t.name, "y"))
            if self._masks and (
                not self._typed or any(m[span].any() for m in self._masks.values())
            ):
                self._attrs.extend((t.name, name) for _, name in _MASKS)
        # The batch the loader is assembling: {group: (node tensor, x tensor)}.
        self._staged = {}

    def _type(self, attr):
        t = self._types.get(attr.group_name)
        if t is None or (attr.group_name, attr.attr_name) not in self._attrs:
            return None
        return t

    def _get_tensor(self, attr):
        t = self._type(attr)
        if t is None:
            have = ", ".join(f"{g}.{n}" if g else n for g, n in self._attrs)
            raise KeyError(
                f"{self.store.path}: no tensor {attr.group_name!r}/{attr.attr_name!r} (it has {have})"
            )
        name, index = attr.attr_name, attr.index
        if name == "x":
            staged = self._staged.get(t.name)
            if staged is not None and index is staged[0]:
                return staged[1]
        rows = _local_rows(f"{t.name}.{name}" if t.name else name, index, t.count)
        if name == "x":
            x = self.store.features(rows + t.offset)
            if self._typed and x.shape[1] != t.dim:
                x = np.ascontiguousarray(x[:, : t.dim])
            return torch.from_numpy(x)
        if name == "y":
            return torch.from_numpy(self._labels[rows + t.offset].astype(np.int64))
        return torch.from_numpy(self._masks[name][rows + t.offset])

    def _multi_get_tensor(self, attrs):
        return [self._get_tensor(a) for a in attrs]

    def _get_tensor_size(self, attr):
        t = self._type(attr)
        if t is None:
            return None
        return (t.count, t.dim) if attr.attr_name == "x" else (t.count,)

    def get_all_tensor_attrs(self):
        # Fresh objects: PyG's loaders set `index` on the ones they get.
        return [TensorAttr(group, name) for group, name in self._attrs]

    def _put_tensor(self, tensor, attr):
        raise _read_only(f"put_tensor({attr.group_name!r}, {attr.attr_name!r})", self.store)

    def _remove_tensor(self, attr):
        raise _read_only(f"remove_tensor({attr.group_name!r}, {attr.attr_name!r})", self.store)

    def _stage(self, batch):
        """Serves ``x`` of the next ``multi_get_tensor`` whose index is the
        batch's node tensor from rows the loader already fetched."""
        self._staged = batch

    def __repr__(self):
        return f"ginex.pyg.FeatureStore({self.store.path!s}, attrs={len(self._attrs)})"


class GraphStore(_PygGraphStore):
    """PyG's ``GraphStore`` over a ginex store: one ``EdgeAttr`` per relation
    (``edge_type`` None on an untyped store, the ``(src, rel, dst)`` names on
    a typed one), layout ``csc``, sorted, ``size`` = (source nodes,
    destination nodes). ``get_edge_index`` returns ``(row, colptr)`` (int64;
    PyG's CSC pair), read once through the store (every segment's CRC
    checked) and kept; ``coo()`` / ``csr()`` convert as PyG does. ``put`` /
    ``remove`` raise :class:`ReadOnlyStoreError`."""

    def __init__(self, store):
        super().__init__()
        self.store = _open(store)
        types = _types(self.store)
        schema = self.store.schema()
        self._relations = {}  # edge_type -> relation index (None: untyped)
        self._edge_attrs = []
        if schema is None:
            n = self.store.num_nodes
            self._relations[None] = None
            self._edge_attrs.append((None, (n, n)))
        else:
            names = [t["name"] for t in schema["node_types"]]
            for i, r in enumerate(schema["relations"]):
                key = (names[r["src"]], r["name"], names[r["dst"]])
                self._relations[key] = i
                self._edge_attrs.append((key, (types[key[0]].count, types[key[2]].count)))
        self._csc = {}

    def get_all_edge_attrs(self):
        return [EdgeAttr(key, "csc", is_sorted=True, size=size) for key, size in self._edge_attrs]

    def _get_edge_index(self, edge_attr):
        key = edge_attr.edge_type
        if key not in self._relations or edge_attr.layout.value != "csc":
            return None
        if key not in self._csc:
            i = self._relations[key]
            colptr, row = _pyg_csc(self.store) if i is None else _pyg_relation_csc(self.store, i)
            self._csc[key] = (torch.from_numpy(row), torch.from_numpy(colptr))
        return self._csc[key]

    def _put_edge_index(self, edge_index, edge_attr):
        raise _read_only(f"put_edge_index({edge_attr.edge_type!r})", self.store)

    def _remove_edge_index(self, edge_attr):
        raise _read_only(f"remove_edge_index({edge_attr.edge_type!r})", self.store)

    def __repr__(self):
        return f"ginex.pyg.GraphStore({self.store.path!s}, edge_types={len(self._edge_attrs)})"


def _frontier(edge_index, num_dst_before):
    """The edges of one hop (sorted by target, as ginex emits them) whose
    target is at or after ``num_dst_before``: the nodes first reached at
    the hop before (the re-draws of older nodes are dropped)."""
    start = int(np.searchsorted(edge_index[1], num_dst_before, side="left"))
    return edge_index[:, start:]


def _stack(parts):
    if not parts:
        return torch.empty(0, dtype=torch.long), torch.empty(0, dtype=torch.long)
    if len(parts) == 1:
        ei = parts[0]
    else:
        ei = np.concatenate(parts, axis=1)
    return torch.from_numpy(np.ascontiguousarray(ei[0])), torch.from_numpy(np.ascontiguousarray(ei[1]))


def _sampler_output(feature_store, b, metadata):
    """An untyped native batch as PyG's ``SamplerOutput`` (each hop's
    frontier edges, PyG's per-hop counts), its rows staged in
    ``feature_store`` for PyG's ``filter_fn``. Node and link batches alike:
    a link batch's seeds are its edges' endpoints."""
    parts, num_edges = [], []
    num_nodes = [b.batch_size]
    before = 0
    for ei, (num_src, num_dst) in zip(b.edge_index, b.size):
        kept = _frontier(ei, before)
        parts.append(kept)
        num_edges.append(kept.shape[1])
        num_nodes.append(num_src - num_dst)
        before = num_dst
    row, col = _stack(parts)
    node = torch.from_numpy(b.ids)
    feature_store._stage({None: (node, torch.from_numpy(b.x))})
    return SamplerOutput(
        node=node,
        row=row,
        col=col,
        edge=None,
        batch=None,
        num_sampled_nodes=num_nodes,
        num_sampled_edges=num_edges,
        metadata=metadata,
    )


class GinexSampler(BaseSampler):
    """The sampler :class:`NeighborLoader` gives PyG's ``NodeLoader``: it
    hands out the batch ginex's executor prepared for these seeds (sampled
    with ginex's sampler and neighbor cache, rows through the Belady feature
    cache) as PyG's ``SamplerOutput`` / ``HeteroSamplerOutput``, and stages
    the rows in the :class:`FeatureStore`, which serves them to PyG's
    ``filter_fn``. It works only inside its loader, which owns the epoch's
    seed order; ``sample_from_edges`` is not supported."""

    def __init__(self, loader):
        self._loader = loader

    def sample_from_nodes(self, index, **kwargs):
        loader = self._loader
        b = loader._current
        if b is None:
            raise RuntimeError(
                "ginex.pyg.GinexSampler samples only inside its NeighborLoader's epoch "
                "(iterate the loader); calling loader(index) directly is not supported"
            )
        seeds = index.node.numpy()
        if loader._typed:
            h = b.hetero()
            if not np.array_equal(h.n_id_dict[loader._input_type][: h.batch_size], seeds):
                raise RuntimeError("ginex.pyg: the native batch's seeds differ from the loader's")
            return self._hetero(index, h)
        if not np.array_equal(b.ids[: b.batch_size], seeds):
            raise RuntimeError("ginex.pyg: the native batch's seeds differ from the loader's")
        return _sampler_output(loader.feature_store, b, (index.input_id, index.time))

    def _hetero(self, index, h):
        node, staged = {}, {}
        for name in h.node_types:
            node[name] = torch.from_numpy(h.n_id_dict[name])
            if name in h.x_dict:
                staged[name] = (node[name], torch.from_numpy(np.ascontiguousarray(h.x_dict[name])))
        row, col, num_edges = {}, {}, {}
        for key in h.edge_types:
            ei, counts = h.edge_index_dict[key], h.num_sampled_edges_dict[key]
            dst_counts = h.num_sampled_nodes_dict[key[2]]
            parts, kept_counts, start = [], [], 0
            for k, c in enumerate(counts):
                kept = _frontier(ei[:, start : start + c], sum(dst_counts[:k]))
                parts.append(kept)
                kept_counts.append(kept.shape[1])
                start += c
            row[key], col[key] = _stack(parts)
            num_edges[key] = kept_counts
        self._loader.feature_store._stage(staged)
        return HeteroSamplerOutput(
            node=node,
            row=row,
            col=col,
            edge=None,
            batch=None,
            num_sampled_nodes={k: list(v) for k, v in h.num_sampled_nodes_dict.items()},
            num_sampled_edges=num_edges,
            metadata=(index.input_id, index.time),
        )

    def sample_from_edges(self, index, neg_sampling=None):
        raise NotImplementedError(
            "ginex.pyg.NeighborLoader samples from nodes; use ginex.pyg.LinkNeighborLoader for link batches"
        )


class _EpochBatches(torch.utils.data.Sampler):
    """The DataLoader's batch sampler: each pass runs one native epoch and
    yields its batches' seed positions (indices into ``input_nodes``) in
    the native order, making each batch current for :class:`GinexSampler`."""

    def __init__(self, loader):
        self._loader = loader

    def __len__(self):
        return len(self._loader._native)

    def __iter__(self):
        loader = self._loader
        epoch = iter(loader._native)
        try:
            for b in epoch:
                if loader._typed:
                    seeds = b.ids[: b.batch_size] - loader._input_offset
                else:
                    seeds = b.ids[: b.batch_size]
                loader._current = b
                yield loader._positions(seeds)
        finally:
            loader._current = None
            loader.feature_store._stage({})
            epoch.close()


# PyG NeighborLoader arguments ginex does not support, with their defaults.
def _stores(data):
    """``data`` as a (FeatureStore, GraphStore) pair: the pair itself, or
    both opened over a store (a path or a ``ginex.Store``)."""
    if isinstance(data, tuple) and len(data) == 2 and isinstance(data[0], FeatureStore):
        feature_store, graph_store = data
        if not isinstance(graph_store, GraphStore):
            raise TypeError("data: expected (ginex.pyg.FeatureStore, ginex.pyg.GraphStore)")
        return feature_store, graph_store
    store = _open(data)
    return FeatureStore(store), GraphStore(store)


def _check_batching(batch_size, num_workers):
    if not isinstance(batch_size, int) or batch_size <= 0:
        raise ValueError(f"batch_size: {batch_size!r} must be a positive integer")
    if num_workers is not None and num_workers < 0:
        raise ValueError(f"num_workers: {num_workers} must be >= 0")


def _refuse_unsupported(kwargs, table, loader, why, filter_per_worker):
    """Pops PyG's arguments in ``table`` (name: default) from ``kwargs``,
    refusing any given a value other than its default, and a true
    ``filter_per_worker``, naming ``ginex.pyg.<loader>`` and ``why``."""
    for name, default in table.items():
        if name in kwargs:
            value = kwargs.pop(name)
            if value is not default and value != default:
                raise ValueError(f"{name}={value!r}: not supported by ginex.pyg.{loader} ({why})")
    if filter_per_worker:
        raise ValueError(f"filter_per_worker=True: ginex.pyg.{loader} filters in this process")


_UNSUPPORTED = {
    "input_time": None,
    "replace": False,
    "subgraph_type": "directional",
    "disjoint": False,
    "temporal_strategy": "uniform",
    "time_attr": None,
    "weight_attr": None,
    "neighbor_sampler": None,
    "directed": True,
    "sampler": None,
    "batch_sampler": None,
    "prefetch_factor": None,
    "persistent_workers": False,
    "worker_init_fn": None,
}


class _NativeViews:
    """What both drop-in loaders show of the native ``ginex.Loader`` behind
    them (``self._native``): its report, memory plan and configuration."""

    @property
    def report(self):
        """The report of the last epoch that ran to the end (a dict), or None."""
        return self._native.report

    @property
    def memory_plan(self):
        """The native loader's memory plan (a dict) when ``memory`` was given."""
        return self._native.memory_plan

    @property
    def config(self):
        """The native loader's configuration (a dict)."""
        return self._native.config


class NeighborLoader(_NativeViews, NodeLoader):
    """PyG's ``NeighborLoader`` on a ginex store: the same arguments and the
    same batches, sampled and fetched by ginex's executor.

    ``data``: a ginex store — a path, a ``ginex.Store`` or a
    ``(ginex.pyg.FeatureStore, ginex.pyg.GraphStore)`` pair — in place of
    PyG's ``Data`` / ``HeteroData``. ``num_neighbors``: a list of counts per
    hop (-1 = all), or on a typed store a ``{(src, rel, dst) or rel: [counts
    per hop]}`` dict (PyG's form; a relation not named is not sampled).
    ``input_nodes``: node ids, a boolean mask, None (every node), a split
    name (``"train"``, ``"val"``/``"valid"``, ``"test"``), or on a typed
    store ``(node_type, ids | mask | split | None)`` / ``node_type``.
    ``batch_size``, ``shuffle``, ``drop_last``, ``transform``,
    ``transform_sampler_output``, ``input_id`` as in PyG.

    ginex's knobs, as in ``ginex.Loader``: ``memory`` (one budget for the
    data path, planned by the memory planner), ``policy`` (one of
    ``ginex.POLICIES``), ``superbatch``, ``seed`` (shuffle order and draws:
    epoch ``e`` of a loader with ``seed`` is ``ginex epoch``'s),
    ``run_dir``, ``sampler`` (``"neighbor"``, or layer-neighbor sampling
    ``"labor-0"``, ``"labor-1"``, ``"labor-*"``, with ``layer_dependency``
    and ``batch_dependency``: ``ginex epoch --sampler``; the batches hold
    LABOR's subgraphs, and PyG's layers aggregate them unweighted — the
    importance weights are in the native loader's ``edge_weight``). ``num_workers`` sets the native executor's worker threads
    (torch's DataLoader runs in this process: the executor already prepares
    batches ahead on its own threads). After an epoch runs to the end,
    ``report`` holds its report (hits, misses, seconds per stage, ...);
    ``memory_plan`` and ``config`` are the native loader's.

    PyG arguments for temporal, weighted, disjoint or with-replacement
    sampling, and torch DataLoader's sampler arguments, raise ``ValueError``.
    """

    def __init__(
        self,
        data,
        num_neighbors,
        input_nodes=None,
        batch_size=1,
        shuffle=False,
        drop_last=False,
        num_workers=0,
        memory=None,
        policy="ginex",
        superbatch=None,
        seed=0,
        run_dir=None,
        transform=None,
        transform_sampler_output=None,
        input_id=None,
        filter_per_worker=None,
        is_sorted=False,
        sampler="neighbor",
        layer_dependency=False,
        batch_dependency=1,
        **kwargs,
    ):
        _refuse_unsupported(
            kwargs,
            _UNSUPPORTED,
            "NeighborLoader",
            "ginex samples uniformly without replacement, directed, one subgraph per batch",
            filter_per_worker,
        )
        feature_store, graph_store = _stores(data)
        store = feature_store.store
        self.feature_store = feature_store
        self._typed = feature_store._typed
        input_type, seeds = self._input_nodes(feature_store, input_nodes)
        _check_batching(batch_size, num_workers)
        self._input_type = input_type
        self._input_offset = feature_store._types[input_type].offset
        order = np.argsort(seeds, kind="stable")
        self._sorted_seeds, self._order = seeds[order], order
        max_batches = len(seeds) // batch_size if drop_last else None
        if max_batches == 0:
            raise ValueError(
                f"drop_last=True with batch_size {batch_size} and {len(seeds)} input nodes leaves no batch"
            )
        self._native = Loader(
            store,
            _fanouts(num_neighbors, graph_store),
            batch_size=batch_size,
            policy=policy,
            memory=memory,
            superbatch=superbatch,
            seed=seed,
            shuffle=shuffle,
            max_batches=max_batches,
            workers=num_workers or None,
            run_dir=run_dir,
            seeds=seeds + self._input_offset,
            sampler=sampler,
            layer_dependency=layer_dependency,
            batch_dependency=batch_dependency,
        )
        self._current = None
        self.num_neighbors = num_neighbors
        super().__init__(
            data=(feature_store, graph_store),
            node_sampler=GinexSampler(self),
            input_nodes=(input_type, torch.from_numpy(seeds)) if self._typed else torch.from_numpy(seeds),
            transform=transform,
            transform_sampler_output=transform_sampler_output,
            filter_per_worker=False,
            input_id=input_id,
            batch_sampler=_EpochBatches(self),
            num_workers=0,
            **kwargs,
        )

    @staticmethod
    def _input_nodes(fs, input_nodes):
        """``(node type, int64 type-local seed ids)`` from PyG's forms."""
        types = fs._types
        if fs._typed:
            if isinstance(input_nodes, str) and input_nodes in types:
                input_nodes = (input_nodes, None)
            if not (isinstance(input_nodes, (tuple, list)) and len(input_nodes) == 2
                    and input_nodes[0] in types):
                raise ValueError(
                    f"input_nodes: a typed store needs (node_type, ids | mask | split | None) "
                    f"with node_type one of {sorted(types)}, got {input_nodes!r}"
                )
            name, nodes = input_nodes
        else:
            name, nodes = None, input_nodes
        t = types[name]
        if nodes is None:
            return name, np.arange(t.count, dtype=np.int64)
        if isinstance(nodes, str):
            split = {"val": "valid", "train_mask": "train", "val_mask": "valid", "test_mask": "test"}.get(
                nodes, nodes
            )
            splits = fs.store.splits()
            if split not in ("train", "valid", "test"):
                raise ValueError(f"input_nodes: {nodes!r}: expected a split (train, val, test) or node ids")
            if splits is None:
                raise ValueError(f"input_nodes: {nodes!r}: {fs.store.path} has no splits")
            ids = splits[split]
            ids = ids[(ids >= t.offset) & (ids < t.offset + t.count)] - t.offset
            return name, ids.astype(np.int64)
        ids = _local_rows("input_nodes", nodes, t.count)
        if len(np.unique(ids)) != len(ids):
            raise ValueError("input_nodes: node ids repeat")
        return name, np.ascontiguousarray(ids)

    def _positions(self, seeds):
        """Positions of ``seeds`` in ``input_nodes`` (what PyG's NodeLoader
        indexes), as a list: torch's fetcher walks it element by element."""
        at = np.searchsorted(self._sorted_seeds, seeds)
        return self._order[at].tolist()

    def __repr__(self):
        return f"ginex.pyg.NeighborLoader({self.feature_store.store.path!s}, batches={len(self)})"


def _fanouts(num_neighbors, graph_store):
    """PyG's ``num_neighbors`` as ``ginex.Loader`` fanouts: a list stays; a
    dict keyed by edge type (or relation name) becomes ``{relation: counts}``."""
    if isinstance(num_neighbors, dict):
        out = {}
        for key, counts in num_neighbors.items():
            rel = key[1] if isinstance(key, tuple) else key
            if rel in out:
                raise ValueError(
                    f"num_neighbors: relation {rel!r} appears twice; ginex keys fanouts by relation name"
                )
            out[rel] = list(counts)
        return out
    if isinstance(num_neighbors, (list, tuple)):
        return [int(c) for c in num_neighbors]
    raise ValueError(
        f"num_neighbors: expected a list of counts per hop or a {{edge_type: counts}} dict, got {num_neighbors!r}"
    )


# PyG LinkNeighborLoader arguments ginex does not support, with their defaults.
_LINK_UNSUPPORTED = dict(
    _UNSUPPORTED,
    edge_label=None,
    edge_label_time=None,
    custom_cls=None,
    input_id=None,
)


def _neg_count(neg_sampling, neg_sampling_ratio):
    """``(K, mode)`` from PyG's ``neg_sampling`` / ``neg_sampling_ratio``
    (K = 0 and binary: no negatives, every label 1)."""
    if neg_sampling_ratio is not None and neg_sampling_ratio != 0:
        if neg_sampling is not None:
            raise ValueError("neg_sampling and neg_sampling_ratio: give one of them")
        neg_sampling = NegativeSampling("binary", neg_sampling_ratio)
    if neg_sampling is None:
        return 0, "binary"
    if isinstance(neg_sampling, str):
        neg_sampling = NegativeSampling(neg_sampling)
    elif isinstance(neg_sampling, dict):
        neg_sampling = NegativeSampling(**neg_sampling)
    if not isinstance(neg_sampling, NegativeSampling):
        raise ValueError(f"neg_sampling: expected a NegativeSampling, a mode or a dict, got {neg_sampling!r}")
    if neg_sampling.src_weight is not None or neg_sampling.dst_weight is not None:
        raise ValueError(
            "neg_sampling: weighted negatives are not supported by ginex.pyg.LinkNeighborLoader "
            "(ginex draws negative destinations uniformly)"
        )
    amount = neg_sampling.amount
    if isinstance(amount, bool) or float(amount) != int(amount):
        raise ValueError(
            f"neg_sampling: amount {amount!r}: ginex draws a whole number of negatives per "
            "positive edge; give an integer"
        )
    return int(amount), neg_sampling.mode.value


class _LinkSampler(BaseSampler):
    """The sampler :class:`LinkNeighborLoader` gives PyG's ``LinkLoader``:
    it hands out the link batch ginex's executor prepared for these
    positive edges as PyG's ``SamplerOutput``, its supervision (indices
    into ``n_id``) in the metadata PyG's ``LinkLoader.filter_fn`` reads.
    It works only inside its loader, which owns the epoch's edge order."""

    def __init__(self, loader):
        self._loader = loader

    def sample_from_nodes(self, index, **kwargs):
        raise NotImplementedError(
            "ginex.pyg.LinkNeighborLoader samples link batches; use ginex.pyg.NeighborLoader for node batches"
        )

    def sample_from_edges(self, index, neg_sampling=None):
        loader = self._loader
        b = loader._current
        if b is None:
            raise RuntimeError(
                "ginex.pyg.LinkNeighborLoader samples only inside its epoch "
                "(iterate the loader); calling loader(index) directly is not supported"
            )
        src, dst = _positives(b)
        if not (np.array_equal(b.ids[src], index.row.numpy()) and np.array_equal(b.ids[dst], index.col.numpy())):
            raise RuntimeError("ginex.pyg: the native batch's edges differ from the loader's")
        if loader.neg_mode == "triplet":
            p, k = len(src), loader.neg
            neg = torch.from_numpy(np.ascontiguousarray(b.dst_neg_index)).view(p, k).squeeze(-1)
            metadata = (
                index.input_id,
                torch.from_numpy(np.ascontiguousarray(b.src_index)),
                torch.from_numpy(np.ascontiguousarray(b.dst_pos_index)),
                neg,
                None,
            )
        else:
            metadata = (
                index.input_id,
                torch.from_numpy(np.ascontiguousarray(b.edge_label_index)),
                torch.from_numpy(np.ascontiguousarray(b.edge_label)),
                None,
            )
        return _sampler_output(loader.feature_store, b, metadata)


def _positives(b):
    """The batch's positive edges as indices into its ``ids``."""
    if b.src_index is not None:
        return b.src_index, b.dst_pos_index
    p = len(b.edge_label) - int(np.count_nonzero(b.edge_label == 0))
    return b.edge_label_index[0, :p], b.edge_label_index[1, :p]


class _LinkEpochBatches(torch.utils.data.Sampler):
    """The DataLoader's batch sampler: each pass runs one native link epoch
    and yields its batches' positive edges as positions in the loader's
    ``edge_label_index``, making each batch current for the sampler."""

    def __init__(self, loader):
        self._loader = loader

    def __len__(self):
        return len(self._loader._native)

    def __iter__(self):
        loader = self._loader
        epoch = iter(loader._native)
        try:
            for b in epoch:
                src, dst = _positives(b)
                loader._current = b
                yield loader._positions(b.ids[src], b.ids[dst])
        finally:
            loader._current = None
            loader.feature_store._stage({})
            epoch.close()


class LinkNeighborLoader(_NativeViews, _PygLinkLoader):
    """PyG's ``LinkNeighborLoader`` on a ginex store: the same arguments and
    the same batches (``Data`` with ``n_id``, ``edge_index``, ``x``, ``y``,
    ``input_id``, ``num_sampled_nodes``, ``num_sampled_edges`` and, in
    binary mode, ``edge_label_index`` / ``edge_label`` — in triplet mode
    ``src_index``, ``dst_pos_index``, ``dst_neg_index``), built on
    :func:`ginex.LinkLoader`'s batches: ginex's executor samples them (the
    batch's own positive edges left out of its neighbourhoods) and fetches
    their rows through the Belady feature cache, because the loader owns
    each epoch's edge order and hands it to the inspector ahead of time.

    ``data``: a ginex store (a path, a ``ginex.Store`` or a
    ``(ginex.pyg.FeatureStore, ginex.pyg.GraphStore)`` pair) in place of
    PyG's ``Data``; untyped stores only. The positive edges are the store's
    training edges: its train edge split when it has one, else every edge
    of the graph (each pair once on an undirected store, or with
    ``undirected=True``). ``edge_label_index`` must be None (explicit edges
    are refused: ginex's link epochs run over the stored training edges);
    the loader's ``edge_label_index`` attribute holds every edge of the
    graph and a batch's ``input_id`` indexes it.

    ``neg_sampling_ratio=K`` or ``neg_sampling=NegativeSampling("binary" |
    "triplet", K)``: K uniform destination negatives per positive (the
    positive's source; K a whole number, no weights). Neither: every label
    is 1. ``shuffle``: ginex's link epochs are always shuffled
    (deterministically from ``seed`` and the epoch), so ``shuffle=False``
    is refused; the default (None) and True mean that order. ``drop_last``
    is refused. ``batch_size`` counts positive edges.

    ``memory``, ``policy``, ``superbatch``, ``seed``, ``run_dir``,
    ``num_workers`` (the native executor's threads), ``report``,
    ``memory_plan`` and ``config`` as in :class:`NeighborLoader`;
    ``negatives`` and ``edge_order`` (ginex's own, not PyG's) as in
    :func:`ginex.LinkLoader`: negatives from the batch's own endpoints and
    edges in blocks of node-id ranges, for epochs out of core.
    """

    def __init__(
        self,
        data,
        num_neighbors,
        edge_label_index=None,
        batch_size=1,
        shuffle=None,
        neg_sampling=None,
        neg_sampling_ratio=None,
        num_workers=0,
        memory=None,
        policy="ginex",
        superbatch=None,
        seed=0,
        run_dir=None,
        undirected=False,
        negatives="uniform",
        edge_order="random",
        transform=None,
        transform_sampler_output=None,
        filter_per_worker=None,
        is_sorted=False,
        drop_last=False,
        **kwargs,
    ):
        _refuse_unsupported(
            kwargs,
            _LINK_UNSUPPORTED,
            "LinkNeighborLoader",
            "ginex samples uniformly without replacement, directed, one subgraph per "
            "batch, over the store's training edges labelled 1",
            filter_per_worker,
        )
        if edge_label_index is not None:
            raise ValueError(
                "edge_label_index: ginex.pyg.LinkNeighborLoader trains on the store's training edges "
                "(its train edge split, else every edge) and cannot take given edges; leave it None "
                "(evaluate held-out edges with ginex.pyg.NeighborLoader over their endpoints)"
            )
        if shuffle is not None and not shuffle:
            raise ValueError(
                "shuffle=False: ginex's link epochs always shuffle the training edges "
                "(deterministically from seed and epoch); leave shuffle as None or True"
            )
        if drop_last:
            raise ValueError("drop_last=True: not supported by ginex.pyg.LinkNeighborLoader")
        feature_store, graph_store = _stores(data)
        store = feature_store.store
        if feature_store._typed:
            raise ValueError(
                f"data: {store.path} is a typed store; ginex.pyg.LinkNeighborLoader takes untyped "
                "stores (link batches over one relation are not supported yet)"
            )
        _check_batching(batch_size, num_workers)
        neg, mode = _neg_count(neg_sampling, neg_sampling_ratio)
        self.feature_store = feature_store
        self.neg, self.neg_mode = neg, mode
        self._native = LinkLoader(
            store,
            _fanouts(num_neighbors, graph_store),
            batch_size=batch_size,
            neg=neg,
            neg_mode=mode,
            undirected=undirected,
            negatives=negatives,
            edge_order=edge_order,
            policy=policy,
            memory=memory,
            superbatch=superbatch,
            seed=seed,
            workers=num_workers or None,
            run_dir=run_dir,
        )
        # Every edge of the graph (user ids), and its (src, dst) keys sorted
        # for mapping a batch's positives to their positions.
        row, colptr = graph_store.get_edge_index(EdgeAttr(None, "csc", size=graph_store._edge_attrs[0][1]))
        col = torch.repeat_interleave(torch.arange(len(colptr) - 1, dtype=torch.long), colptr.diff())
        edges = torch.stack([row, col])
        self._n = len(colptr) - 1
        keys = row.numpy() * self._n + col.numpy()
        self._key_order = np.argsort(keys, kind="stable")
        self._sorted_keys = keys[self._key_order]
        self._current = None
        self.num_neighbors = num_neighbors
        super().__init__(
            data=(feature_store, graph_store),
            link_sampler=_LinkSampler(self),
            edge_label_index=(None, edges),  # PyG's form for a (FeatureStore, GraphStore) pair
            neg_sampling=None if neg == 0 and mode == "binary" else NegativeSampling(mode, max(neg, 1)),
            transform=transform,
            transform_sampler_output=transform_sampler_output,
            filter_per_worker=False,
            batch_sampler=_LinkEpochBatches(self),
            num_workers=0,
            **kwargs,
        )
        self.edge_label_index = edges

    def _positions(self, src, dst):
        """Positions of the edges ``src -> dst`` in ``edge_label_index`` (the
        first of parallel edges), as a list."""
        keys = src.astype(np.int64) * self._n + dst.astype(np.int64)
        at = np.searchsorted(self._sorted_keys, keys)
        if at.size and (int(at.max()) >= len(self._sorted_keys) or not np.array_equal(self._sorted_keys[at], keys)):
            raise RuntimeError("ginex.pyg: a native link batch holds an edge that is not in the graph")
        return self._key_order[at].tolist()

    def __repr__(self):
        return f"ginex.pyg.LinkNeighborLoader({self.feature_store.store.path!s}, batches={len(self)})"
