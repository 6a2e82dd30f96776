//! Link prediction through the data path: training passes over the
//! store's training edges in link batches (each positive edge with K
//! negatives, uniform destination corruption, as PyG's and DGL's samplers
//! do), and evaluation of held-out edges against their negatives from the
//! node embeddings the encoder computes (AUC and AP pooled, MRR and
//! Hits@K per positive: [`crate::link_metrics`]).
//!
//! A link batch is a batch whose seeds are the distinct endpoints of its
//! positives and negatives (first-appearance order); the executor samples
//! and gathers it like any batch, so every cache policy serves it, and the
//! decoder scores the pairs from the seeds' final-layer outputs.

use std::collections::HashMap;

use crate::error::{Error, Result};
use crate::exec::epoch::EpochConfig;
use crate::format::edge_splits::{EdgeSplit, EdgeSplits};
use crate::link_metrics::LinkMetrics;
use crate::rng::{stream_seed, Wyrand};
use crate::store::gather::{GatherOptions, Gatherer};
use crate::store::Store;
use crate::train::eval::{logits, predict_trainer};
use crate::train::layerwise::{layerwise_logits, LayerStats, LayerwiseOptions};
use crate::train::options::TrainOptions;
use crate::train::pass::pass;
use crate::train::trainer::{LinkPairs, StepStats, Trainer};

/// Random-stream purposes of link batches (see [`crate::rng`]).
const PURPOSE_EDGE_ORDER: u64 = 0x4c49_4e4b_0001;
const PURPOSE_NEGATIVES: u64 = 0x4c49_4e4b_0002;
const PURPOSE_EVAL_NEGATIVES: u64 = 0x4c49_4e4b_0003;

/// How a link batch draws its negatives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NegSampling {
    /// The positive's source with a uniformly drawn destination (PyG's
    /// and DGL's link samplers, OGB's evaluation negatives).
    #[default]
    Corrupt,
    /// A uniformly drawn source and destination (GAE's training
    /// negatives, drawn as its evaluation negatives are).
    Random,
}

impl NegSampling {
    /// Parses `corrupt` or `random`.
    pub fn parse(s: &str) -> Result<Self> {
        Error::parse_name(
            s,
            "negative sampling",
            &[NegSampling::Corrupt, NegSampling::Random],
            NegSampling::name,
        )
    }

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            NegSampling::Corrupt => "corrupt",
            NegSampling::Random => "random",
        }
    }
}

/// Positive edges as two parallel id lists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Edges {
    /// Sources.
    pub src: Vec<u64>,
    /// Destinations.
    pub dst: Vec<u64>,
}

impl Edges {
    /// Edges.
    pub fn len(&self) -> usize {
        self.src.len()
    }

    /// No edges.
    pub fn is_empty(&self) -> bool {
        self.src.is_empty()
    }
}

/// The training positives of `store`: its training split when it stores
/// one, else every message-passing edge of the CSC (each pair once on an
/// undirected store: the direction with source < destination, and
/// self-loops once).
pub fn training_edges(store: &Store, splits: Option<&EdgeSplits>) -> Result<Edges> {
    if let Some(train) = splits.and_then(|s| s.train.as_ref()) {
        return Ok(Edges {
            src: train.src.clone(),
            dst: train.dst.clone(),
        });
    }
    let undirected = splits.is_some_and(|s| s.undirected);
    let n = store.num_nodes();
    let mut edges = Edges::default();
    let mut gatherer = Gatherer::new(store, &GatherOptions::default())?;
    let mut first = 0u64;
    while first < n {
        let nodes: Vec<u64> = (first..(first + 65_536).min(n)).collect();
        gatherer.visit_lists(store, &nodes, &mut |i, list| {
            let v = first + i as u64;
            for &u in list {
                if !undirected || u <= v {
                    edges.src.push(u);
                    edges.dst.push(v);
                }
            }
        })?;
        first += nodes.len() as u64;
    }
    Ok(edges)
}

/// One link batch: `positives` (indices into `edges`) with `neg`
/// negatives each, drawn by `sampling`. Returns the batch's seeds (the distinct
/// endpoints in first-appearance order: source, destination, negatives of
/// positive 0, then of positive 1, …) and its pairs as local indices:
/// the positives first (label 1), then every negative (label 0).
pub fn link_batch(
    edges: &Edges,
    positives: &[usize],
    (neg, sampling): (usize, NegSampling),
    num_nodes: u64,
    rng: &mut Wyrand,
) -> (Vec<u64>, LinkPairs) {
    let mut seeds = Vec::new();
    let mut local: HashMap<u64, i64> = HashMap::new();
    let mut at = |v: u64| {
        *local.entry(v).or_insert_with(|| {
            seeds.push(v);
            seeds.len() as i64 - 1
        })
    };
    let p = positives.len();
    let mut pairs = LinkPairs {
        src: Vec::with_capacity(p * (1 + neg)),
        dst: Vec::with_capacity(p * (1 + neg)),
        label: Vec::with_capacity(p * (1 + neg)),
    };
    let (mut neg_src, mut neg_dst) = (Vec::new(), Vec::new());
    for &e in positives {
        let (s, d) = (at(edges.src[e]), at(edges.dst[e]));
        pairs.src.push(s);
        pairs.dst.push(d);
        pairs.label.push(1.0);
        for _ in 0..neg {
            neg_src.push(match sampling {
                NegSampling::Corrupt => s,
                NegSampling::Random => at(rng.below(num_nodes.max(1))),
            });
            neg_dst.push(at(rng.below(num_nodes.max(1))));
        }
    }
    pairs.label.resize(p + neg_src.len(), 0.0);
    pairs.src.extend(neg_src);
    pairs.dst.extend(neg_dst);
    (seeds, pairs)
}

/// One training pass over `edges` in link batches of `data.batch_size`
/// positives with `neg` negatives each, shuffled per epoch; calls
/// `after_step` after each batch with its statistics. Each batch goes
/// through the data path on its own (its seeds are its endpoints).
pub(crate) fn link_train_pass(
    store: &Store,
    data: &EpochConfig,
    trainer: &mut Trainer,
    (edges, neg): (&Edges, (usize, NegSampling)),
    after_step: &mut dyn FnMut(&StepStats),
) -> Result<crate::exec::epoch::EpochReport> {
    let mut order: Vec<usize> = (0..edges.len()).collect();
    let mut rng = Wyrand(stream_seed(data.seed, PURPOSE_EDGE_ORDER, data.epoch));
    for i in (1..order.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        order.swap(i, j);
    }
    let mut report = crate::exec::epoch::EpochReport::default();
    let batch = data.batch_size.max(1);
    for (b, chunk) in order.chunks(batch).enumerate() {
        let mut rng = Wyrand(stream_seed(
            stream_seed(data.seed, PURPOSE_NEGATIVES, data.epoch),
            PURPOSE_NEGATIVES,
            b as u64,
        ));
        let (seeds, pairs) = link_batch(edges, chunk, neg, store.num_nodes(), &mut rng);
        let mut cfg = data.clone();
        cfg.batch_size = seeds.len();
        cfg.seed_nodes = Some(seeds);
        let r = pass(store, &cfg, &[], &mut |tb| {
            let s = trainer.link_train_step(&tb, &pairs)?;
            after_step(&s);
            Ok(())
        })?;
        accumulate(&mut report, r);
    }
    Ok(report)
}

/// Adds one batch's pass to the epoch's report: its batches (numbered on)
/// and the stage times the training log shows.
fn accumulate(total: &mut crate::exec::epoch::EpochReport, r: crate::exec::epoch::EpochReport) {
    let first = total.batches.len() as u64;
    total.batches.extend(r.batches.into_iter().map(|mut b| {
        b.batch += first;
        b
    }));
    total.sample += r.sample;
    total.changeset += r.changeset;
    total.load_runs += r.load_runs;
    total.cache_init += r.cache_init;
    total.gather += r.gather;
    total.cache_update += r.cache_update;
    total.wall += r.wall;
    total.neighbor_hit_ratio = r.neighbor_hit_ratio.or(total.neighbor_hit_ratio);
}

/// The held-out positives of `split` and their negatives (`k` per
/// positive, row-major): `draw` uniform destination corruptions per
/// positive when given, else the split's own negatives, else (a split
/// stored without negatives) one corruption per positive. Corruptions
/// come from a fixed stream, so every epoch and every run evaluates the
/// same pairs.
pub fn held_out_pairs(
    split: &EdgeSplit,
    num_nodes: u64,
    draw: Option<usize>,
) -> (Edges, Edges, usize) {
    let pos = Edges {
        src: split.src.clone(),
        dst: split.dst.clone(),
    };
    match (&split.negatives, draw) {
        (Some(n), None) => (
            pos,
            Edges {
                src: n.src.clone(),
                dst: n.dst.clone(),
            },
            n.k,
        ),
        (_, draw) => {
            let k = draw.unwrap_or(1).max(1);
            let mut rng = Wyrand(stream_seed(0, PURPOSE_EVAL_NEGATIVES, k as u64));
            let mut neg = Edges::default();
            for &s in &pos.src {
                for _ in 0..k {
                    neg.src.push(s);
                    neg.dst.push(rng.below(num_nodes.max(1)));
                }
            }
            (pos, neg, k)
        }
    }
}

/// Decoder scores of `pairs` from node embeddings: `rows[v]` is the row of
/// node `v` in `z` (`width` values each).
pub fn score_pairs(
    trainer: &Trainer,
    (z, width): (&[f32], usize),
    rows: &HashMap<u64, usize>,
    pairs: &Edges,
) -> Result<Vec<f32>> {
    let gather = |ids: &[u64]| -> Result<Vec<f32>> {
        let mut out = Vec::with_capacity(ids.len() * width);
        for v in ids {
            let r = rows
                .get(v)
                .ok_or_else(|| Error::internal(format!("node {v} has no embedding row")))?;
            out.extend_from_slice(&z[r * width..(r + 1) * width]);
        }
        Ok(out)
    };
    let mut scores = Vec::with_capacity(pairs.len());
    // Bounded working set: 64 Ki pairs at a time.
    for (s, d) in pairs.src.chunks(65_536).zip(pairs.dst.chunks(65_536)) {
        scores.extend(trainer.score_embeddings(&gather(s)?, &gather(d)?, width)?);
    }
    Ok(scores)
}

/// The distinct endpoints of `lists` of pairs, in first-appearance order,
/// and each one's row.
pub fn endpoints(lists: &[&Edges]) -> (Vec<u64>, HashMap<u64, usize>) {
    let mut nodes = Vec::new();
    let mut rows = HashMap::new();
    for e in lists {
        for &v in e.src.iter().chain(&e.dst) {
            rows.entry(v).or_insert_with(|| {
                nodes.push(v);
                nodes.len() - 1
            });
        }
    }
    (nodes, rows)
}

/// Every metric of `trainer` on the held-out `split`, its endpoints'
/// embeddings computed through the data path `data` (its fanouts; `-1` =
/// full neighbourhoods). `None` for an empty split.
pub fn evaluate_link(
    store: &Store,
    trainer: &Trainer,
    data: &EpochConfig,
    split: &EdgeSplit,
) -> Result<Option<LinkMetrics>> {
    if split.src.is_empty() {
        return Ok(None);
    }
    let (pos, neg, k) = held_out_pairs(split, store.num_nodes(), None);
    let (nodes, rows) = endpoints(&[&pos, &neg]);
    let z = logits(store, trainer, data, &nodes)?;
    let width = z.len() / nodes.len().max(1);
    let p = score_pairs(trainer, (&z, width), &rows, &pos)?;
    let n = score_pairs(trainer, (&z, width), &rows, &neg)?;
    LinkMetrics::compute(&p, &n, k).map(Some)
}

/// Node embeddings of a link-prediction checkpoint, computed layer-wise
/// over the whole graph with full neighbourhoods (exact, within the
/// layer-wise pass's memory budget).
pub struct Embeddings {
    /// The model they came from (its decoder scores pairs of them).
    pub trainer: Trainer,
    /// The nodes, in the order asked for (distinct).
    pub nodes: Vec<u64>,
    /// Each node's row.
    pub rows: HashMap<u64, usize>,
    /// `nodes.len() × width` values.
    pub values: Vec<f32>,
    /// Values per node.
    pub width: usize,
    /// Each layer's statistics.
    pub stats: Vec<LayerStats>,
}

impl Embeddings {
    /// The decoder's scores of `pairs`, whose endpoints must be among the
    /// nodes.
    pub fn score(&self, pairs: &Edges) -> Result<Vec<f32>> {
        score_pairs(&self.trainer, (&self.values, self.width), &self.rows, pairs)
    }
}

/// The embeddings of `nodes` (store ids; repeats are computed once) with
/// the checkpoint `predict` uses ([`predict_trainer`]; `opts.model` must
/// be a link model matching it).
pub fn link_embeddings(
    store: &Store,
    opts: &TrainOptions,
    nodes: &[u64],
    layerwise: &LayerwiseOptions,
) -> Result<Embeddings> {
    if opts.model.task.decoder().is_none() {
        return Err(Error::invalid_argument(
            "link embeddings need a link-prediction model (train --task link)",
        ));
    }
    let trainer = predict_trainer(store, opts)?;
    let mut distinct = Vec::with_capacity(nodes.len());
    let mut rows = HashMap::with_capacity(nodes.len());
    for &v in nodes {
        rows.entry(v).or_insert_with(|| {
            distinct.push(v);
            distinct.len() - 1
        });
    }
    let (values, stats) = layerwise_logits(store, &trainer, &distinct, layerwise)?;
    let width = values.len() / distinct.len().max(1);
    Ok(Embeddings {
        trainer,
        nodes: distinct,
        rows,
        values,
        width,
        stats,
    })
}

/// The popularity baseline of the OGB leaderboards' sanity checks: each
/// pair scored by its destination's in-degree in the message-passing
/// graph, the same candidates ranked as the model ranks them.
pub fn popularity_scores(store: &Store, pairs: &Edges) -> Vec<f32> {
    let indptr = store.indptr();
    pairs
        .dst
        .iter()
        .map(|&v| {
            let v = v as usize;
            indptr
                .get(v + 1)
                .zip(indptr.get(v))
                .map_or(0.0, |(b, a)| (b - a) as f32)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_batch_seeds_its_endpoints_once_and_labels_pairs() {
        let edges = Edges {
            src: vec![5, 7, 5],
            dst: vec![6, 5, 9],
        };
        let mut rng = Wyrand(3);
        let corrupt = (2, NegSampling::Corrupt);
        let (seeds, pairs) = link_batch(&edges, &[0, 1, 2], corrupt, 100, &mut rng);
        // Positives first, then 2 negatives each with the positive's source.
        assert_eq!(pairs.len(), 9);
        assert_eq!(&pairs.label[..3], &[1.0; 3]);
        assert!(pairs.label[3..].iter().all(|&l| l == 0.0));
        let global = |i: i64| seeds[i as usize];
        for (i, (s, d)) in [(5, 6), (7, 5), (5, 9)].into_iter().enumerate() {
            assert_eq!((global(pairs.src[i]), global(pairs.dst[i])), (s, d));
            for j in 0..2 {
                assert_eq!(global(pairs.src[3 + 2 * i + j]), s);
            }
        }
        let mut distinct = seeds.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), seeds.len());
        assert_eq!(&seeds[..2], &[5, 6]);
        // Deterministic from the stream.
        let again = link_batch(&edges, &[0, 1, 2], corrupt, 100, &mut Wyrand(3));
        assert_eq!(again, (seeds, pairs));
        // Random negatives draw their sources too.
        let random = (4, NegSampling::Random);
        let (seeds, pairs) = link_batch(&edges, &[0, 1, 2], random, 1000, &mut Wyrand(3));
        let sources: Vec<u64> = pairs.src[3..].iter().map(|&i| seeds[i as usize]).collect();
        assert!(sources.iter().any(|v| ![5, 7].contains(v)), "{sources:?}");
        assert!(pairs.label[3..].iter().all(|&l| l == 0.0));
    }

    #[test]
    fn held_out_pairs_use_the_splits_negatives_or_draw_one_each() {
        let mut split = EdgeSplit {
            src: vec![1, 2],
            dst: vec![3, 4],
            negatives: None,
        };
        let (pos, neg, k) = held_out_pairs(&split, 10, None);
        assert_eq!((pos.len(), neg.len(), k), (2, 2, 1));
        assert_eq!(neg.src, vec![1, 2]);
        assert!(neg.dst.iter().all(|&v| v < 10));
        assert_eq!(held_out_pairs(&split, 10, None).1, neg);
        let (_, drawn, k) = held_out_pairs(&split, 10, Some(4));
        assert_eq!((drawn.len(), k), (8, 4));
        assert_eq!(drawn.src, vec![1, 1, 1, 1, 2, 2, 2, 2]);
        split.negatives = Some(crate::format::edge_splits::Negatives {
            k: 3,
            src: vec![1; 6],
            dst: vec![0, 5, 6, 7, 8, 9],
        });
        let (_, neg, k) = held_out_pairs(&split, 10, None);
        assert_eq!((neg.len(), k), (6, 3));
        // Drawn negatives replace the stored ones when asked for.
        assert_eq!(held_out_pairs(&split, 10, Some(2)).2, 2);
        let (nodes, rows) = endpoints(&[&pos, &neg]);
        assert_eq!(&nodes[..4], &[1, 2, 3, 4]);
        assert_eq!(rows[&0], 4);
    }
}
