"""Typed (heterogeneous) batches: :meth:`ginex.Batch.hetero` on a typed
store's batch, laid out as PyG's heterogeneous ``NeighborLoader`` lays out
a ``HeteroData`` mini-batch. numpy throughout; :meth:`HeteroBatch.to_hetero_data`
builds a ``torch_geometric.data.HeteroData`` when torch_geometric is
installed (nothing else here needs torch).
"""

import numpy as np

__all__ = ["HeteroBatch"]


class HeteroBatch:
    """The typed view of one batch (made by :meth:`ginex.Batch.hetero`).

    Node types are the schema's, in its order, every one of them (a type
    with no node in the batch has empty arrays); edge types are
    ``(src, rel, dst)`` name tuples, every relation of the schema.

    * ``x_dict``: ``{type: float32 (n_t, dim_t)}``, the rows of the type's
      nodes in the type's own dimension — featured types only (a
      featureless type has no entry).
    * ``n_id_dict``: ``{type: int64 (n_t,)}``, type-local ids (global id
      minus the type's first id), PyG's per-type ``n_id``. The type's
      nodes are in batch order: its seeds first, then the nodes first
      reached at hop 1, 2, ...
    * ``global_id_dict``: the same nodes' global ids (entries of
      ``batch.ids``); ``pos_dict``: their positions in ``batch.ids`` (and
      rows of ``batch.x``).
    * ``num_sampled_nodes_dict``: ``{type: [seeds, hop 1, ...]}``.
    * ``edge_index_dict``: ``{(src, rel, dst): int64 (2, E)}``, row 0 the
      neighbour (an index into the ``src`` type's nodes), row 1 the target
      (into the ``dst`` type's): **all hops merged, the seeds' hop first**,
      ``num_sampled_edges_dict[(src, rel, dst)]`` edges per hop — PyG's
      layout, so ``torch_geometric.utils.trim_to_layer`` applies.
    * ``edge_index_dicts``: the per-layer split, one dict per entry of
      ``batch.edge_index`` and in its order (PyG's hop order unless the
      loader has ``input_layer_first=True``); ``size_dicts`` gives each
      layer's ``{type: (num_src, num_dst)}`` — a type's targets are a
      prefix of its sources, which are a prefix of its nodes, so the
      indices are the same as in the merged lists.
    * ``batch_size_dict``: ``{type: seeds of the type}``; ``input_type``:
      the seeds' type when they are all of one type (a split's seeds are),
      else None; ``batch_size``: all seeds.
    * ``y_dict``: ``{type: int64 labels of the type's seeds}`` (empty for a
      type without seeds), or None when the store has no labels; ``y``:
      ``batch.y``. Labels cover the seeds only, so ``y[:batch_size]`` is
      all of it, as PyG's training loops read it.

    ginex's sampler re-samples every node collected so far at each hop
    (PyG's ``NeighborSampler``, not ``NeighborLoader``'s frontier-only
    expansion): a node can have in-edges in several hops, and the merged
    lists hold every hop's draws. A plain ``to_hetero`` model applied to
    ``edge_index_dict`` aggregates over all of them; use
    ``edge_index_dicts`` for exactly one sampled layer per model layer.
    """

    def __init__(self, batch, node_types, relations, input_layer_first):
        self.batch_size = batch.batch_size
        self.y = batch.y
        self.node_types = [t["name"] for t in node_types]
        self.edge_types = [tuple(r["key"]) for r in relations]
        self.pos_dict = {}
        self.global_id_dict = {}
        self.n_id_dict = {}
        self.x_dict = {}
        self.num_sampled_nodes_dict = {}
        self.batch_size_dict = {}
        self.y_dict = None if batch.y is None else {}
        ids, x = batch.ids, batch.x
        for t in node_types:
            name, pos = t["name"], t["positions"]
            seeds = t["num_sampled_nodes"][0]
            self.pos_dict[name] = pos
            self.global_id_dict[name] = ids[pos]
            self.n_id_dict[name] = self.global_id_dict[name] - t["offset"]
            if t["has_features"]:
                # Rows come in the store's row format (the widest type's
                # dimension); the type's own features are its first dim.
                self.x_dict[name] = x[pos, : t["dim"]]
            self.num_sampled_nodes_dict[name] = list(t["num_sampled_nodes"])
            self.batch_size_dict[name] = seeds
            if self.y_dict is not None:
                self.y_dict[name] = batch.y[pos[:seeds]]
        with_seeds = [n for n, s in self.batch_size_dict.items() if s]
        self.input_type = with_seeds[0] if len(with_seeds) == 1 else None
        self.edge_index_dict = {}
        self.num_sampled_edges_dict = {}
        for r in relations:
            key = tuple(r["key"])
            self.edge_index_dict[key] = r["edge_index"]
            self.num_sampled_edges_dict[key] = list(r["num_sampled_edges"])

        # The per-hop split: hop k (from the seeds) is edges
        # [sum(counts[:k]), sum(counts[:k + 1])) of each merged list.
        hops = len(batch.edge_index)
        by_hop = []
        for k in range(hops):
            edges = {}
            for key, ei in self.edge_index_dict.items():
                counts = self.num_sampled_edges_dict[key]
                start = sum(counts[:k])
                edges[key] = np.ascontiguousarray(ei[:, start : start + counts[k]])
            sizes = {}
            for name, counts in self.num_sampled_nodes_dict.items():
                sizes[name] = (sum(counts[: k + 2]), sum(counts[: k + 1]))
            by_hop.append((edges, sizes))
        if input_layer_first:
            by_hop.reverse()
        self.edge_index_dicts = [e for e, _ in by_hop]
        self.size_dicts = [s for _, s in by_hop]

    def metadata(self):
        """``(node_types, edge_types)``, as ``HeteroData.metadata()`` (what
        ``torch_geometric.nn.to_hetero`` takes)."""
        return list(self.node_types), list(self.edge_types)

    def to_hetero_data(self):
        """A ``torch_geometric.data.HeteroData`` as PyG's heterogeneous
        ``NeighborLoader`` yields: per node type ``x`` (featured types),
        ``n_id``, ``num_nodes``, ``num_sampled_nodes``; per edge type
        ``edge_index`` and ``num_sampled_edges``; on each type with seeds
        ``batch_size`` and ``y`` (the seeds' labels). Tensors share memory
        with this batch's arrays (``torch.from_numpy``). Needs torch and
        torch_geometric (``ImportError`` without them)."""
        try:
            import torch
            from torch_geometric.data import HeteroData
        except ImportError as e:
            raise ImportError(
                "HeteroBatch.to_hetero_data() needs torch and torch_geometric "
                f"({e}); the numpy dicts (x_dict, edge_index_dict, ...) need neither"
            ) from e
        data = HeteroData()
        for name in self.node_types:
            node = data[name]
            node.n_id = torch.from_numpy(self.n_id_dict[name])
            node.num_nodes = len(self.n_id_dict[name])
            node.num_sampled_nodes = list(self.num_sampled_nodes_dict[name])
            if name in self.x_dict:
                node.x = torch.from_numpy(self.x_dict[name])
            if self.batch_size_dict[name]:
                node.batch_size = self.batch_size_dict[name]
                if self.y_dict is not None:
                    node.y = torch.from_numpy(self.y_dict[name])
        for key in self.edge_types:
            data[key].edge_index = torch.from_numpy(self.edge_index_dict[key])
            data[key].num_sampled_edges = list(self.num_sampled_edges_dict[key])
        return data

    def __repr__(self):
        nodes = ", ".join(f"{t}={len(self.n_id_dict[t])}" for t in self.node_types)
        edges = sum(ei.shape[1] for ei in self.edge_index_dict.values())
        return (
            f"ginex.HeteroBatch(nodes=({nodes}), edges={edges}, "
            f"batch_size={self.batch_size}, layers={len(self.edge_index_dicts)})"
        )
