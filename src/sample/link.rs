//! Link batches: batches of positive training edges with `K` negatives
//! each (uniform destination corruption), for link prediction (#40).
//!
//! A link batch is a node batch whose seeds are the endpoints of its
//! edges, so the inspector plans their features like any seeds and every
//! cache policy runs it unchanged. Its seeds are the distinct endpoints
//! in first-appearance order (`src_0, dst_0, negatives of 0, src_1, …`);
//! its [`LinkLabels`] index them.
//!
//! Determinism: the epoch's edge order is the positives' indices in the
//! task's [`EdgeOrder`] (by default shuffled from the run seed exactly as
//! node seeds are); batch
//! `b`'s negatives (from the task's [`NegSource`]: uniform, or the
//! batch's own endpoints) come from a random stream keyed by its batch seed
//! ([`batch_seed`]), so a batch depends on (seed, epoch, batch) only and
//! is the same whatever the worker count or schedule.
//!
//! Exclusion (DGL's `exclude="self"`): the batch's own positive edges
//! `s → d` (and on undirected stores their reverses `d → s`) are removed
//! from the in-lists its sampler draws from, at every hop, so a model
//! cannot read the answer off the sampled graph.

use crate::error::{Error, Result};
use crate::rng::{stream_seed, Wyrand};
pub use crate::sample::edge_order::EdgeOrder;
pub use crate::sample::negatives::NegSource;
use crate::sample::seeds::batch_seed;
use crate::sample::source::NeighborSource;
use rustc_hash::FxHashMap;

/// How a link batch presents its negatives (PyG's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NegMode {
    /// `edge_label_index` and `edge_label`: positives labelled 1, then
    /// negatives labelled 0 ([`LinkLabels::binary`]).
    #[default]
    Binary,
    /// `src_index`, `dst_pos_index`, `dst_neg_index` (`P × K`).
    Triplet,
}

impl NegMode {
    /// Parses `binary` or `triplet`.
    pub fn parse(s: &str) -> Result<NegMode> {
        match s {
            "binary" => Ok(NegMode::Binary),
            "triplet" => Ok(NegMode::Triplet),
            other => Err(Error::invalid_argument(format!(
                "--neg-mode {other:?}: expected binary or triplet"
            ))),
        }
    }

    /// The name [`parse`](Self::parse) takes.
    pub fn name(self) -> &'static str {
        match self {
            NegMode::Binary => "binary",
            NegMode::Triplet => "triplet",
        }
    }
}

/// The supervision of a link batch, as indices into the batch's seeds
/// (`ids[..num_seeds]`): P positive edges, K negatives each (uniform
/// destination corruption: the source is the positive's source).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkLabels {
    /// Source of each positive edge (P).
    pub src: Vec<u32>,
    /// Destination of each positive edge (P).
    pub dst: Vec<u32>,
    /// Negatives per positive (K).
    pub neg: usize,
    /// Negative destinations, `P × K` row-major: negative `j` of positive
    /// `i` is `(src[i], neg_dst[i * K + j])`.
    pub neg_dst: Vec<u32>,
}

impl LinkLabels {
    /// Positive edges (P).
    pub fn num_pos(&self) -> usize {
        self.src.len()
    }

    /// Binary mode: (edge_label_index rows [src; dst], edge_label): P
    /// positives labelled 1 first, then P*K negatives labelled 0 (source =
    /// the positive's source, repeated K times in order).
    pub fn binary(&self) -> (Vec<u32>, Vec<u32>, Vec<f32>) {
        let (p, k) = (self.src.len(), self.neg);
        let mut src = Vec::with_capacity(p * (1 + k));
        let mut dst = Vec::with_capacity(p * (1 + k));
        src.extend_from_slice(&self.src);
        dst.extend_from_slice(&self.dst);
        for (i, &s) in self.src.iter().enumerate() {
            src.extend(std::iter::repeat_n(s, k));
            dst.extend_from_slice(&self.neg_dst[i * k..(i + 1) * k]);
        }
        let mut label = vec![1f32; p];
        label.resize(p * (1 + k), 0.0);
        (src, dst, label)
    }

    /// Checks the shapes and that every index is below `num_seeds`
    /// (`what` names the record in the error).
    pub fn check(&self, num_seeds: usize, what: &str) -> Result<()> {
        let bad = |why: String| Error::invalid_argument(format!("{what}: {why}"));
        if self.dst.len() != self.src.len() {
            return Err(bad(format!(
                "{} positive sources but {} destinations",
                self.src.len(),
                self.dst.len()
            )));
        }
        if self.src.len().checked_mul(self.neg) != Some(self.neg_dst.len()) {
            return Err(bad(format!(
                "{} negatives for {} positives with K = {}",
                self.neg_dst.len(),
                self.src.len(),
                self.neg
            )));
        }
        let all = self.src.iter().chain(&self.dst).chain(&self.neg_dst);
        if let Some(&i) = all.into_iter().find(|&&i| i as usize >= num_seeds) {
            return Err(bad(format!(
                "edge endpoint {i} is not below the batch's {num_seeds} seeds"
            )));
        }
        Ok(())
    }
}

/// The training positives of a link epoch, store ids (`src[i] → dst[i]`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkPositives {
    /// Sources.
    pub src: Vec<u64>,
    /// Destinations.
    pub dst: Vec<u64>,
    /// The ids negative destinations are drawn from (None: every node; a
    /// relation's positives: its destination type's ids).
    pub neg_range: Option<std::ops::Range<u64>>,
}

/// The relation `text` (`src:rel:dst`) of `store`'s schema, by index, for
/// link prediction on one relation (`--target-relation`). Refused: a
/// homogeneous store, a malformed or unknown name, and a relation whose
/// two node types another relation connects too (an edge's relation is
/// told by its endpoints' types).
pub fn target_relation(store: &crate::store::Store, text: &str) -> Result<usize> {
    let what = |why: String| {
        Error::invalid_argument(format!(
            "--target-relation {text}: {} {why}",
            store.dir().display()
        ))
    };
    let schema = store.schema().ok_or_else(|| {
        what("is homogeneous (one node type, no relations): link prediction on one relation needs a typed store".into())
    })?;
    let names: Vec<String> = schema
        .relations
        .iter()
        .map(|r| schema.canonical(r))
        .collect();
    if text.split(':').count() != 3 {
        return Err(Error::invalid_argument(format!(
            "--target-relation {text}: expected SRC:REL:DST, one of {}",
            names.join(", ")
        )));
    }
    let r = names.iter().position(|n| n == text).ok_or_else(|| {
        what(format!(
            "has no such relation; its relations: {}",
            names.join(", ")
        ))
    })?;
    let rel = &schema.relations[r];
    if let Some(other) = schema
        .relations
        .iter()
        .enumerate()
        .find(|&(i, o)| i != r && o.src == rel.src && o.dst == rel.dst)
    {
        return Err(what(format!(
            "also has {} between the same node types; an edge's relation is told by its endpoints' types, so link prediction needs a relation that is alone between its types",
            names[other.0]
        )));
    }
    Ok(r)
}

/// The relation link prediction runs on: the one `named`
/// (`--target-relation`, [`target_relation`]), else the one the store's
/// edge splits are of (`ginex-import --target-relation`), else none.
/// Refused: a name other than the splits' relation.
pub fn link_relation(
    store: &crate::store::Store,
    named: Option<&str>,
    splits: Option<&crate::format::edge_splits::EdgeSplits>,
) -> Result<Option<usize>> {
    let of_splits = splits.and_then(|s| s.relation).map(|r| r as usize);
    let Some(name) = named else {
        return Ok(of_splits);
    };
    let r = target_relation(store, name)?;
    match (of_splits, store.schema()) {
        (Some(s), Some(schema)) if s != r => Err(Error::invalid_argument(format!(
            "--target-relation {name}: the edge splits of {} are of {}; link prediction on another relation would train on its held-out edges' graph but evaluate nothing of it",
            store.dir().display(),
            schema
                .relations
                .get(s)
                .map_or_else(|| format!("relation {s}"), |rel| schema.canonical(rel))
        ))),
        _ => Ok(Some(r)),
    }
}

impl LinkPositives {
    /// Every edge of `source`'s CSC, in CSC order (by destination, then
    /// source); with `undirected`, each pair once: the direction with
    /// `src < dst`, and self-loops once (the edge-split contract's
    /// "no explicit train split").
    /// `edges` (the CSC's edge count, or 0 when unknown) sizes the lists
    /// up front, so they are not regrown past it.
    pub fn from_csc(
        source: &dyn NeighborSource,
        undirected: bool,
        edges: u64,
    ) -> Result<LinkPositives> {
        const CHUNK: u64 = 1 << 16;
        let n = source.num_nodes();
        let want = if undirected { edges / 2 + 1 } else { edges } as usize;
        let mut out = LinkPositives {
            src: Vec::with_capacity(want),
            dst: Vec::with_capacity(want),
            neg_range: None,
        };
        let mut lo = 0;
        while lo < n {
            let nodes: Vec<u64> = (lo..(lo + CHUNK).min(n)).collect();
            source.with_lists(&nodes, &mut |i, list| {
                let v = nodes[i];
                for &u in list {
                    if !undirected || u <= v {
                        out.src.push(u);
                        out.dst.push(v);
                    }
                }
            })?;
            lo += CHUNK;
        }
        out.src.shrink_to_fit();
        out.dst.shrink_to_fit();
        Ok(out)
    }

    /// The training positives of relation `r` of `store`'s schema
    /// ([`target_relation`]): the edges of its train split between the
    /// relation's source and destination types when the store has one,
    /// else every such edge of the CSC (with `undirected` and one type on
    /// both ends, each pair once); negatives are drawn from the
    /// destination type.
    pub fn of_relation(
        store: &crate::store::Store,
        r: usize,
        undirected: bool,
    ) -> Result<LinkPositives> {
        let schema = store
            .schema()
            .ok_or_else(|| Error::internal("a relation's positives on a homogeneous store"))?;
        let rel = &schema.relations[r];
        let (src_ids, dst_ids) = (
            schema.node_types[rel.src as usize].ids(),
            schema.node_types[rel.dst as usize].ids(),
        );
        let keep = |u: u64, v: u64| {
            src_ids.contains(&u)
                && dst_ids.contains(&v)
                && (!undirected || rel.src != rel.dst || u <= v)
        };
        let mut out = LinkPositives {
            neg_range: Some(dst_ids.clone()),
            ..LinkPositives::default()
        };
        if let Some(train) = store.edge_splits()?.and_then(|s| s.train) {
            for (&u, &v) in train.src.iter().zip(&train.dst) {
                if keep(u, v) {
                    out.src.push(u);
                    out.dst.push(v);
                }
            }
            return Ok(out);
        }
        let opts = crate::store::gather::GatherOptions::default();
        let mut gatherer = crate::store::gather::Gatherer::new(store, &opts)?;
        let mut lo = dst_ids.start;
        while lo < dst_ids.end {
            let nodes: Vec<u64> = (lo..(lo + 65_536).min(dst_ids.end)).collect();
            gatherer.visit_lists(store, &nodes, &mut |i, list| {
                for &u in list {
                    if keep(u, nodes[i]) {
                        out.src.push(u);
                        out.dst.push(nodes[i]);
                    }
                }
            })?;
            lo += nodes.len() as u64;
        }
        Ok(out)
    }

    /// Positive edges.
    pub fn len(&self) -> usize {
        self.src.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.src.is_empty()
    }
}

/// What makes an epoch's batches link batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkTask {
    /// Negatives per positive (K, `--neg`).
    pub neg: usize,
    /// How batches present them (the loaders'; sampling ignores it).
    pub mode: NegMode,
    /// Whether the graph is undirected: each pair is one positive and a
    /// batch's positives exclude their reverse edges too.
    pub undirected: bool,
    /// Which edges a batch leaves out of its sampled neighbourhoods.
    pub exclude: LinkExclude,
    /// Where the negatives come from (`--negatives`).
    pub negatives: NegSource,
    /// The order the epoch visits the positives in (`--edge-order`).
    pub order: EdgeOrder,
}

impl Default for LinkTask {
    /// One uniform negative per positive, binary mode, directed, each
    /// batch's own edges excluded, the edges shuffled.
    fn default() -> Self {
        LinkTask {
            neg: 1,
            mode: NegMode::default(),
            undirected: false,
            exclude: LinkExclude::Own,
            negatives: NegSource::Uniform,
            order: EdgeOrder::Random,
        }
    }
}

impl LinkTask {
    /// Refuses a `--neg` whose batches cannot fit `budget` (None: this
    /// machine's memory): a batch of `batch_size` positives (at most
    /// `edges`, the graph's) holds `neg` negative destinations each, and
    /// every one is a seed with an id, a label index and a feature row of
    /// `row_bytes`.
    pub fn check_negatives(
        &self,
        (batch_size, edges): (usize, u64),
        row_bytes: u64,
        budget: Option<u64>,
    ) -> Result<()> {
        crate::size::PerItemCount {
            option: "--neg",
            value: self.neg as u64,
            items: ((batch_size as u64).min(edges), "positives a batch"),
            entry: (row_bytes + 16, "a seed's id, label index and feature row"),
        }
        .check(budget)
    }
}

/// Which edges a link batch leaves out of its sampled neighbourhoods
/// (`--exclude`, DGL's `exclude=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LinkExclude {
    /// Its own positive edges (and on undirected graphs their reverses),
    /// so a model cannot read the answer off the sampled graph (DGL's
    /// `exclude="self"`).
    #[default]
    Own,
    /// None: every batch samples from the whole message-passing graph
    /// (DGL's `exclude=None`; the GAE protocol's full-batch training,
    /// where one batch of every training edge would otherwise see no
    /// graph).
    Nothing,
}

impl LinkExclude {
    /// Parses `self` or `none`.
    pub fn parse(s: &str) -> Result<LinkExclude> {
        match s {
            "self" => Ok(LinkExclude::Own),
            "none" => Ok(LinkExclude::Nothing),
            other => Err(Error::invalid_argument(format!(
                "--exclude {other:?}: expected self (a batch leaves its own edges out of its neighbourhoods) or none"
            ))),
        }
    }

    /// The name [`parse`](Self::parse) takes.
    pub fn name(self) -> &'static str {
        match self {
            LinkExclude::Own => "self",
            LinkExclude::Nothing => "none",
        }
    }
}

const PURPOSE_NEGATIVES: u64 = 13;

/// One epoch of link batches over `positives`: their indices in the
/// task's edge order (shuffled from the run seed, or blocked), cut into
/// batches of `batch_size` positives.
#[derive(Debug, Clone)]
pub struct LinkEpoch {
    /// The training positives.
    pub positives: std::sync::Arc<LinkPositives>,
    /// Negatives per positive, whether reverses are excluded.
    pub task: LinkTask,
    /// Negative destinations are drawn out of `lo..hi` (uniformly, or
    /// from the batch's endpoints within it: the task's [`NegSource`]).
    pub neg_range: std::ops::Range<u64>,
}

/// One link batch before sampling.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkBatchSeeds {
    /// Distinct endpoints in first-appearance order.
    pub seeds: Vec<u64>,
    /// The batch's supervision, indices into `seeds`.
    pub labels: LinkLabels,
    /// The edges to leave out of its sampled neighbourhoods.
    pub excluded: Excluded,
}

impl LinkEpoch {
    /// The epoch's order of positive indices (a permutation of `0..P`,
    /// in the task's [`EdgeOrder`]).
    pub fn order(&self, seed: u64, epoch: u64) -> Vec<u64> {
        self.task
            .order
            .order(&self.positives.src, &self.positives.dst, seed, epoch)
    }

    /// Batch `b` of the epoch whose order is `order` (its positives'
    /// indices `edges`).
    pub fn batch(&self, edges: &[u64], seed: u64, epoch: u64, b: u64) -> Result<LinkBatchSeeds> {
        let k = self.task.neg;
        if k > 0 && self.neg_range.is_empty() {
            return Err(Error::invalid_argument(
                "--neg needs nodes to draw negatives from",
            ));
        }
        let mut rng = Wyrand(stream_seed(
            batch_seed(seed, epoch, b),
            PURPOSE_NEGATIVES,
            0,
        ));
        let mut local: FxHashMap<u64, u32> = FxHashMap::default();
        let mut seeds = Vec::with_capacity(edges.len() * (2 + k));
        let mut at = |v: u64, seeds: &mut Vec<u64>| -> u32 {
            let next = seeds.len() as u32;
            let l = *local.entry(v).or_insert(next);
            if l == next {
                seeds.push(v);
            }
            l
        };
        let mut labels = LinkLabels {
            neg: k,
            ..LinkLabels::default()
        };
        let mut excluded = Vec::with_capacity(edges.len() * 2);
        let source = self.task.negatives;
        // The batch's endpoints a negative may be (in the negative range),
        // each as often as it is one: a degree-weighted pool.
        let pool: Vec<u64> = if k > 0 && source.uses_batch() {
            edges
                .iter()
                .flat_map(|&e| {
                    [
                        self.positives.src[e as usize],
                        self.positives.dst[e as usize],
                    ]
                })
                .filter(|v| self.neg_range.contains(v))
                .collect()
        } else {
            Vec::new()
        };
        for &e in edges {
            let (s, d) = (
                self.positives.src[e as usize],
                self.positives.dst[e as usize],
            );
            labels.src.push(at(s, &mut seeds));
            labels.dst.push(at(d, &mut seeds));
            for _ in 0..k {
                let t = source.draw(&mut rng, &pool, &self.neg_range);
                labels.neg_dst.push(at(t, &mut seeds));
            }
            if self.task.exclude == LinkExclude::Own {
                // In-list of d holds s.
                excluded.push((d, s));
                if self.task.undirected {
                    excluded.push((s, d));
                }
            }
        }
        Ok(LinkBatchSeeds {
            seeds,
            labels,
            excluded: Excluded::new(excluded),
        })
    }
}

/// Edges a batch leaves out of its sampled neighbourhoods, as (target,
/// in-neighbour) pairs, sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Excluded(Vec<(u64, u64)>);

impl Excluded {
    /// The set of `pairs` (target, in-neighbour).
    pub fn new(mut pairs: Vec<(u64, u64)>) -> Excluded {
        pairs.sort_unstable();
        pairs.dedup();
        Excluded(pairs)
    }

    /// Whether nothing is excluded.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `v`'s in-list `list` without its excluded neighbours into `out`
    /// (every copy of a multi-edge); false (and `out` untouched) when
    /// none of `v`'s edges is excluded.
    pub fn filter(&self, v: u64, list: &[u64], out: &mut Vec<u64>) -> bool {
        let lo = self.0.partition_point(|&(t, _)| t < v);
        let hi = self.0.partition_point(|&(t, _)| t <= v);
        if lo == hi {
            return false;
        }
        let gone = &self.0[lo..hi];
        out.clear();
        out.extend(
            list.iter()
                .copied()
                .filter(|u| gone.binary_search(&(v, *u)).is_err()),
        );
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_lists_positives_then_negatives_with_the_sources_repeated() {
        let l = LinkLabels {
            src: vec![0, 3],
            dst: vec![1, 4],
            neg: 2,
            neg_dst: vec![2, 1, 5, 0],
        };
        let (s, d, y) = l.binary();
        assert_eq!(s, [0, 3, 0, 0, 3, 3]);
        assert_eq!(d, [1, 4, 2, 1, 5, 0]);
        assert_eq!(y, [1.0, 1.0, 0.0, 0.0, 0.0, 0.0]);
        l.check(6, "x").unwrap();
        let e = l.check(5, "link record").unwrap_err().to_string();
        assert!(e.contains("link record") && e.contains("5 seeds"), "{e}");
        let mut torn = l.clone();
        torn.neg_dst.pop();
        assert!(torn.check(6, "x").is_err());
    }

    #[test]
    fn excluded_filters_every_copy_of_the_pair_and_only_it() {
        let x = Excluded::new(vec![(5, 2), (5, 7), (9, 1)]);
        let mut out = vec![42];
        assert!(!x.filter(6, &[1, 2], &mut out));
        assert_eq!(out, [42]);
        assert!(x.filter(5, &[1, 2, 2, 3, 7], &mut out));
        assert_eq!(out, [1, 3]);
    }

    #[test]
    fn a_batch_excludes_its_own_edges_unless_told_not_to() {
        let positives = std::sync::Arc::new(LinkPositives {
            src: vec![0, 2, 4],
            dst: vec![1, 3, 5],
            neg_range: None,
        });
        let epoch = |undirected, exclude| LinkEpoch {
            positives: positives.clone(),
            task: LinkTask {
                neg: 1,
                mode: NegMode::Binary,
                undirected,
                exclude,
                ..LinkTask::default()
            },
            neg_range: 0..6,
        };
        let own = epoch(true, LinkExclude::Own)
            .batch(&[0, 2], 7, 0, 0)
            .unwrap();
        assert_eq!(
            own.excluded,
            Excluded::new(vec![(1, 0), (0, 1), (5, 4), (4, 5)])
        );
        let directed = epoch(false, LinkExclude::Own)
            .batch(&[0, 2], 7, 0, 0)
            .unwrap();
        assert_eq!(directed.excluded, Excluded::new(vec![(1, 0), (5, 4)]));
        let none = epoch(true, LinkExclude::Nothing)
            .batch(&[0, 2], 7, 0, 0)
            .unwrap();
        assert!(none.excluded.is_empty());
        // The seeds and the supervision are the same either way.
        assert_eq!((none.seeds, none.labels), (own.seeds, own.labels));
        for e in [LinkExclude::Own, LinkExclude::Nothing] {
            assert_eq!(LinkExclude::parse(e.name()).unwrap(), e);
        }
        assert!(LinkExclude::parse("reverse").is_err());
    }

    #[test]
    fn neg_mode_parses_its_names() {
        for m in [NegMode::Binary, NegMode::Triplet] {
            assert_eq!(NegMode::parse(m.name()).unwrap(), m);
        }
        assert!(NegMode::parse("pairs").is_err());
    }
}
