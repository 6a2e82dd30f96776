//! Typed (heterogeneous) batches: what a store's schema (format/schema.md)
//! says about a sampled batch. Node types are contiguous global id ranges
//! and a store holds at most one relation per ordered (source type,
//! destination type) pair, so a node's type follows from its id and an
//! edge's relation from its endpoints' types. [`TypeIndex`] answers both;
//! the trainer's R-GCN / R-SAGE annotation (`train::model::Hop::annotate`)
//! and [`TypedBatch`] (the loaders' typed view) go through it.
//!
//! [`TypedBatch`]'s docs give its layout (PyG's heterogeneous
//! `NeighborLoader`'s).

use crate::error::{Error, Result};
use crate::format::schema::Schema;
use crate::sample::sampler::Hop;
use rustc_hash::FxHashMap;

/// Most node types for which [`TypeIndex`] keeps a dense pair table
/// (`types²` entries); more use a hash map.
const DENSE_TYPES: usize = 256;

/// Node types of global ids and relations of edges under a schema.
#[derive(Debug, Clone)]
pub struct TypeIndex<'s> {
    schema: &'s Schema,
    /// `relation + 1` of (src type, dst type) at `src * types + dst`
    /// (0 = none), when there are at most [`DENSE_TYPES`] types.
    dense: Vec<u32>,
    /// The same keyed by `src << 32 | dst`, for more types.
    sparse: FxHashMap<u64, u32>,
}

impl<'s> TypeIndex<'s> {
    /// The index of `schema`.
    pub fn new(schema: &'s Schema) -> Self {
        let types = schema.node_types.len();
        let mut dense = Vec::new();
        let mut sparse = FxHashMap::default();
        if types <= DENSE_TYPES {
            dense = vec![0u32; types * types];
            for (r, rel) in schema.relations.iter().enumerate() {
                if let Some(slot) = dense.get_mut(rel.src as usize * types + rel.dst as usize) {
                    *slot = r as u32 + 1;
                }
            }
        } else {
            for (r, rel) in schema.relations.iter().enumerate() {
                sparse.insert(u64::from(rel.src) << 32 | u64::from(rel.dst), r as u32);
            }
        }
        TypeIndex {
            schema,
            dense,
            sparse,
        }
    }

    /// The schema.
    pub fn schema(&self) -> &'s Schema {
        self.schema
    }

    /// The type of global id `v`; an error past the last type's ids.
    pub fn node_type(&self, v: u64) -> Result<u32> {
        let t = self.schema.type_of(v);
        match self.schema.node_types.get(t) {
            Some(ty) if ty.ids().contains(&v) => Ok(t as u32),
            _ => Err(Error::invalid_argument(format!(
                "node {v} is past the node types of the schema ({} ids)",
                self.schema
                    .node_types
                    .last()
                    .map_or(0, |t| t.offset + t.count)
            ))),
        }
    }

    /// The type of each id.
    pub fn node_types(&self, ids: &[u64]) -> Result<Vec<u32>> {
        ids.iter().map(|&v| self.node_type(v)).collect()
    }

    /// The relation from type `src` to type `dst`, or an error naming both
    /// types (an edge between them contradicts the schema).
    pub fn relation(&self, src: u32, dst: u32) -> Result<usize> {
        let types = self.schema.node_types.len();
        let found = if types <= DENSE_TYPES {
            self.dense
                .get(src as usize * types + dst as usize)
                .and_then(|&r| r.checked_sub(1))
        } else {
            self.sparse
                .get(&(u64::from(src) << 32 | u64::from(dst)))
                .copied()
        };
        found.map(|r| r as usize).ok_or_else(|| {
            let name = |t: u32| {
                self.schema
                    .node_types
                    .get(t as usize)
                    .map_or("?", |t| t.name.as_str())
            };
            Error::invalid_argument(format!(
                "an edge joins node types {} ({src}) and {} ({dst}), which no relation joins",
                name(src),
                name(dst)
            ))
        })
    }

    /// The relation of the edge from local node `s` to local node `d`,
    /// where `types[i]` is local node `i`'s type; an error for an index
    /// past `types`.
    pub fn edge_relation(&self, types: &[u32], s: usize, d: usize) -> Result<usize> {
        match (types.get(s), types.get(d)) {
            (Some(&ts), Some(&td)) => self.relation(ts, td),
            _ => Err(Error::invalid_argument(format!(
                "an edge {s} -> {d} has a local index past the hop's {} nodes",
                types.len()
            ))),
        }
    }
}

/// One node type's nodes in a [`TypedBatch`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypedNodes {
    /// The type's name.
    pub name: String,
    /// The type's first global id: type-local id = global id − `offset`.
    pub offset: u64,
    /// Whether the type has feature rows (a featureless type has none).
    pub has_features: bool,
    /// The type's own feature dimension (0: featureless). The batch's
    /// rows are in the store's row format, the widest type's dimension:
    /// the type's features are the first `dim` columns of its rows, the
    /// rest zero.
    pub dim: u32,
    /// Each node's position in the batch's `ids` (and so its feature row
    /// in the batch's rows), in batch order: the type's seeds first.
    pub positions: Vec<u32>,
    /// Each node's global id.
    pub ids: Vec<u64>,
    /// Nodes per hop, `L + 1` entries: the type's seeds, then the nodes
    /// first reached at hop 1, 2, … from the seeds (PyG's
    /// `num_sampled_nodes`).
    pub num_sampled: Vec<usize>,
    /// The labels of the type's seeds (`-1` = missing), when the batch has
    /// labels.
    pub seed_labels: Option<Vec<i32>>,
}

impl TypedNodes {
    /// Nodes of the type in the batch.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether the batch has no node of the type.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Seeds of the type (the first `num_seeds` nodes).
    pub fn num_seeds(&self) -> usize {
        self.num_sampled.first().copied().unwrap_or(0)
    }

    /// Type-local ids (global id − `offset`), PyG's per-type `n_id`.
    pub fn local_ids(&self) -> Vec<u64> {
        self.ids.iter().map(|&v| v - self.offset).collect()
    }
}

/// One relation's edges in a [`TypedBatch`], over all hops.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypedEdges {
    /// Index of the source node type.
    pub src_type: usize,
    /// The relation's name.
    pub name: String,
    /// Index of the destination node type.
    pub dst_type: usize,
    /// Type-local source of each edge: an index into the source type's
    /// [`TypedNodes`].
    pub src: Vec<u32>,
    /// Type-local target of each edge: an index into the destination
    /// type's [`TypedNodes`].
    pub dst: Vec<u32>,
    /// Edges per hop, the seeds' hop first (`L` entries, PyG's
    /// `num_sampled_edges`); the edges are stored in that order.
    pub num_sampled: Vec<usize>,
}

impl TypedEdges {
    /// Edges over all hops.
    pub fn len(&self) -> usize {
        self.src.len()
    }

    /// Whether the batch has no edge of the relation.
    pub fn is_empty(&self) -> bool {
        self.src.is_empty()
    }

    /// Hop `k`'s edges (`k = 0`: the edges into the seeds), as (sources,
    /// targets) in type-local indices; empty past the last hop.
    pub fn hop(&self, k: usize) -> (&[u32], &[u32]) {
        let start: usize = self.num_sampled.iter().take(k).sum();
        let end = start + self.num_sampled.get(k).copied().unwrap_or(0);
        (&self.src[start..end], &self.dst[start..end])
    }
}

/// The typed (heterogeneous) view of a batch ([`crate::Batch::typed`]).
///
/// # Layout (PyG's heterogeneous `NeighborLoader`)
///
/// * **Nodes, per type** ([`TypedNodes`], every type of the schema, in its
///   order, empty ones too): the batch's nodes of that type in batch order
///   (`ids` order), so the type's seeds come first and then the nodes first
///   reached at hop 1, hop 2, … — PyG's `data[t].n_id` order.
///   `num_sampled[k]` counts them per hop (`[seeds, hop 1, …]`, `L + 1`
///   entries, PyG's `num_sampled_nodes`). A node's **type-local index** is
///   its position in this list; its **type-local id** is its global id minus
///   the type's first id (PyG's per-type node ids).
/// * **Edges, per relation** ([`TypedEdges`], every relation of the schema,
///   in its order): `src[e]` indexes the source type's node list, `dst[e]`
///   the destination type's (PyG's `data[(src, rel, dst)].edge_index`,
///   row 0 the neighbour, row 1 the target). **One merged list over all
///   hops, the seeds' hop first** (`num_sampled[k]` edges of hop `k + 1`
///   counted from the seeds, PyG's `num_sampled_edges`), so PyG's
///   `trim_to_layer` applies; [`TypedEdges::hop`] is one hop's slice.
///
/// Because each hop's targets are a prefix of `ids` (the sampler's
/// layout), a type's targets in any hop are a prefix of its node list: the
/// per-hop split uses the same type-local indices as the merged list, and a
/// hop's per-type sizes are prefix sums of `num_sampled`
/// ([`TypedBatch::hop_size`]).
///
/// **Hops.** ginex's sampler re-samples every node collected so far at each
/// hop (as PyG's `NeighborSampler`, not `NeighborLoader`'s frontier-only
/// expansion), so a node can have in-edges in several hops, and the merged
/// list holds each hop's draws (an edge drawn in two hops is there twice):
/// a model that applies every layer to the merged lists (plain
/// `to_hetero`) aggregates over all of a node's draws; one that wants
/// exactly the sampled layers uses the per-hop split, layer `i` of `L`
/// (input layer first, [`crate::Batch::hops`] order) being hop `L - 1 - i`
/// from the seeds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypedBatch {
    /// Every node type of the schema, in its order.
    pub nodes: Vec<TypedNodes>,
    /// Every relation of the schema, in its order.
    pub edges: Vec<TypedEdges>,
}

impl TypedBatch {
    /// The typed view of a batch: `ids` seeds first, `hops` input layer
    /// first in local indices into `ids` (the sampler's layout, as in
    /// [`crate::Batch`]), `seed_labels` the labels of `ids[..num_seeds]`.
    /// Refuses a batch that does not have that layout, an id outside the
    /// schema and an edge between types no relation joins.
    pub fn new(
        schema: &Schema,
        ids: &[u64],
        num_seeds: usize,
        hops: &[Hop],
        seed_labels: Option<&[i32]>,
    ) -> Result<TypedBatch> {
        let bounds = hop_bounds(ids.len(), num_seeds, hops)?;
        if let Some(l) = seed_labels {
            if l.len() != num_seeds {
                return Err(Error::invalid_argument(format!(
                    "typed batch: {} seed labels for {num_seeds} seeds",
                    l.len()
                )));
            }
        }
        let index = TypeIndex::new(schema);
        let types = index.node_types(ids)?;
        let num_hops = hops.len();
        let mut nodes: Vec<TypedNodes> = schema
            .node_types
            .iter()
            .map(|t| TypedNodes {
                name: t.name.clone(),
                offset: t.offset,
                has_features: t.has_features(),
                dim: t.dim,
                positions: Vec::new(),
                ids: Vec::new(),
                num_sampled: vec![0; num_hops + 1],
                seed_labels: seed_labels.map(|_| Vec::new()),
            })
            .collect();
        // Type-local index of each local node.
        let mut local = vec![0u32; ids.len()];
        let mut hop = 0;
        for (i, (&v, &t)) in ids.iter().zip(&types).enumerate() {
            while hop < num_hops && i >= bounds[hop] {
                hop += 1;
            }
            let n = &mut nodes[t as usize];
            local[i] = n.ids.len() as u32;
            n.positions.push(i as u32);
            n.ids.push(v);
            n.num_sampled[hop] += 1;
            if let (Some(all), Some(mine)) = (seed_labels, n.seed_labels.as_mut()) {
                if let Some(&l) = all.get(i) {
                    mine.push(l);
                }
            }
        }
        let mut edges: Vec<TypedEdges> = schema
            .relations
            .iter()
            .map(|r| TypedEdges {
                src_type: r.src as usize,
                name: r.name.clone(),
                dst_type: r.dst as usize,
                src: Vec::new(),
                dst: Vec::new(),
                num_sampled: vec![0; num_hops],
            })
            .collect();
        // The seeds' hop first: hops.last(), then backwards.
        for (k, h) in hops.iter().rev().enumerate() {
            for (&s, &d) in h.src.iter().zip(&h.dst) {
                let (s, d) = (s as usize, d as usize);
                if s >= h.num_src || d >= h.num_dst {
                    return Err(Error::invalid_argument(format!(
                        "typed batch: hop {} from the seeds has an edge {s} -> {d} outside its {} sources and {} targets",
                        k + 1,
                        h.num_src,
                        h.num_dst
                    )));
                }
                let r = index.edge_relation(&types, s, d)?;
                let e = &mut edges[r];
                e.src.push(local[s]);
                e.dst.push(local[d]);
                e.num_sampled[k] += 1;
            }
        }
        Ok(TypedBatch { nodes, edges })
    }

    /// Sampled hops.
    pub fn num_hops(&self) -> usize {
        self.edges
            .first()
            .map(|e| e.num_sampled.len())
            .or_else(|| self.nodes.first().map(|n| n.num_sampled.len() - 1))
            .unwrap_or(0)
    }

    /// The `(source type, relation, destination type)` names of relation
    /// `r` (PyG's edge type).
    pub fn edge_type(&self, r: usize) -> Option<(&str, &str, &str)> {
        let e = self.edges.get(r)?;
        Some((
            self.nodes.get(e.src_type)?.name.as_str(),
            e.name.as_str(),
            self.nodes.get(e.dst_type)?.name.as_str(),
        ))
    }

    /// Hop `k`'s (from the seeds, `k = 0` into the seeds) sizes in node type
    /// `t`: `(sources, targets)`, each a prefix of the type's nodes.
    pub fn hop_size(&self, t: usize, k: usize) -> (usize, usize) {
        let Some(n) = self.nodes.get(t) else {
            return (0, 0);
        };
        let upto = |j: usize| n.num_sampled.iter().take(j + 1).sum::<usize>();
        (upto(k + 1), upto(k))
    }
}

/// `n_0 ..= n_L`: the nodes reached within `k` hops of the seeds (`n_0`
/// the seeds, `n_L` all of `ids`), checking the sampler's prefix layout.
fn hop_bounds(num_ids: usize, num_seeds: usize, hops: &[Hop]) -> Result<Vec<usize>> {
    let mut bounds = vec![num_seeds];
    for (k, h) in hops.iter().rev().enumerate() {
        let reached = bounds[k];
        if h.num_dst != reached || h.num_src < h.num_dst || h.src.len() != h.dst.len() {
            return Err(Error::invalid_argument(format!(
                "typed batch: hop {} from the seeds has {} targets and {} sources ({} and {} edge ends); the hops before it reach {reached} nodes",
                k + 1,
                h.num_dst,
                h.num_src,
                h.src.len(),
                h.dst.len()
            )));
        }
        bounds.push(h.num_src);
    }
    if bounds.last() != Some(&num_ids) {
        return Err(Error::invalid_argument(format!(
            "typed batch: the hops reach {} nodes but the batch has {num_ids} ids",
            bounds.last().copied().unwrap_or(0)
        )));
    }
    Ok(bounds)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::schema::{test_schema, NodeType, Relation};

    /// author 0..3 (featureless), paper 3..7, relations writes
    /// (author -> paper) and cites (paper -> paper).
    fn schema() -> Schema {
        test_schema(
            &[("author", 0, 3, 0), ("paper", 3, 4, 8)],
            &[(0, "writes", 1, 0), (1, "cites", 1, 0)],
        )
    }

    fn hop(num_dst: usize, num_src: usize, edges: &[(u32, u32)]) -> Hop {
        Hop {
            num_dst,
            num_src,
            src: edges.iter().map(|e| e.0).collect(),
            dst: edges.iter().map(|e| e.1).collect(),
            weights: Vec::new(),
        }
    }

    #[test]
    fn a_two_hop_batch_splits_by_type_and_relation() {
        let s = schema();
        // Seeds: papers 5, 3; hop 1 reaches author 1 and paper 6; hop 2
        // author 0.
        let ids = [5, 3, 1, 6, 0];
        let seeds_hop = hop(2, 4, &[(2, 0), (3, 0), (0, 1)]);
        let input = hop(4, 5, &[(4, 0), (1, 3), (2, 1)]);
        let b = TypedBatch::new(&s, &ids, 2, &[input, seeds_hop], Some(&[7, -1])).unwrap();
        let (author, paper) = (&b.nodes[0], &b.nodes[1]);
        assert_eq!(
            (author.ids.clone(), author.positions.clone()),
            (vec![1, 0], vec![2, 4])
        );
        assert_eq!(author.num_sampled, [0, 1, 1]);
        assert_eq!(author.local_ids(), [1, 0]);
        assert_eq!(author.seed_labels.as_deref(), Some(&[][..]));
        assert_eq!(paper.ids, [5, 3, 6]);
        assert_eq!(paper.num_sampled, [2, 1, 0]);
        assert_eq!(paper.local_ids(), [2, 0, 3]);
        assert_eq!(paper.seed_labels.as_deref(), Some(&[7, -1][..]));
        let (writes, cites) = (&b.edges[0], &b.edges[1]);
        // Seeds' hop first: author 1 -> paper 5; then author 0 -> paper 5,
        // author 1 -> paper 3.
        assert_eq!(
            (writes.src.clone(), writes.dst.clone()),
            (vec![0, 1, 0], vec![0, 0, 1])
        );
        assert_eq!(writes.num_sampled, [1, 2]);
        assert_eq!(writes.hop(1), (&[1, 0][..], &[0, 1][..]));
        assert_eq!(cites.src, [2, 0, 1]);
        assert_eq!(cites.dst, [0, 1, 2]);
        assert_eq!(cites.num_sampled, [2, 1]);
        assert_eq!(b.edge_type(0), Some(("author", "writes", "paper")));
        assert_eq!(b.num_hops(), 2);
        assert_eq!(b.hop_size(1, 0), (3, 2));
        assert_eq!(b.hop_size(0, 1), (2, 1));
    }

    #[test]
    fn batches_against_the_schema_or_the_layout_are_refused() {
        let s = schema();
        let e = TypedBatch::new(&s, &[3, 4], 1, &[hop(1, 2, &[(1, 0)])], None).unwrap();
        assert_eq!(e.edges[1].len(), 1);
        let no_rel = TypedBatch::new(&s, &[0, 1], 1, &[hop(1, 2, &[(1, 0)])], None);
        assert!(no_rel
            .unwrap_err()
            .to_string()
            .contains("joins node types author (0) and author (0)"));
        let past = TypedBatch::new(&s, &[3, 9], 1, &[hop(1, 2, &[])], None);
        assert!(past.unwrap_err().to_string().contains("node 9 is past"));
        let outside = TypedBatch::new(&s, &[3, 4], 1, &[hop(1, 2, &[(1, 1)])], None);
        assert!(outside
            .unwrap_err()
            .to_string()
            .contains("outside its 2 sources and 1 targets"));
        let short = TypedBatch::new(&s, &[3, 4, 5], 1, &[hop(1, 2, &[])], None);
        assert!(short
            .unwrap_err()
            .to_string()
            .contains("reach 2 nodes but the batch has 3"));
        let gap = TypedBatch::new(&s, &[3, 4], 1, &[hop(2, 2, &[])], None);
        assert!(gap.unwrap_err().to_string().contains("reach 1 nodes"));
        let labels = TypedBatch::new(&s, &[3], 1, &[], Some(&[]));
        assert!(labels
            .unwrap_err()
            .to_string()
            .contains("0 seed labels for 1 seeds"));
    }

    #[test]
    fn many_types_use_the_sparse_pair_map() {
        let types = DENSE_TYPES + 2;
        let s = Schema {
            node_types: (0..types as u64)
                .map(|i| NodeType {
                    name: format!("t{i}"),
                    offset: i,
                    count: 1,
                    dim: 0,
                    dtype: None,
                })
                .collect(),
            relations: vec![Relation {
                src: types as u32 - 1,
                name: "r".into(),
                dst: 0,
                num_edges: 0,
            }],
        };
        let index = TypeIndex::new(&s);
        assert_eq!(index.relation(types as u32 - 1, 0).unwrap(), 0);
        assert!(index.relation(0, types as u32 - 1).is_err());
    }
}
