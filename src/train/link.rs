//! Link prediction through the data path: training passes over the
//! store's training edges in link batches (each positive edge with K
//! negatives, uniform destination corruption, as PyG's and DGL's samplers
//! do), and evaluation of held-out edges against their negatives from the
//! node embeddings the encoder computes (AUC and AP pooled, MRR and
//! Hits@K per positive: [`crate::link_metrics`]).
//!
//! Training runs the data path's link epochs ([`crate::sample::link`]): a
//! link batch is a batch whose seeds are the distinct endpoints of its
//! positives and negatives (first-appearance order), its own positive
//! edges left out of its sampled neighbourhoods; the inspector plans it
//! and the executor gathers it like any batch, so every cache policy
//! serves it, and the decoder scores the pairs from the seeds'
//! final-layer outputs.

use std::collections::HashMap;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::exec::epoch::EpochConfig;
use crate::format::edge_splits::{EdgeSplit, EdgeSplits};
use crate::link_metrics::LinkMetrics;
use crate::rng::{stream_seed, Wyrand};
use crate::sample::link::{LinkLabels, LinkPositives, LinkTask};
use crate::store::gather::{GatherOptions, Gatherer};
use crate::store::Store;
use crate::train::eval::{logits, predict_trainer};
use crate::train::layerwise::{layerwise_logits, LayerStats, LayerwiseOptions};
pub use crate::train::options::NegSampling;
use crate::train::options::TrainOptions;
use crate::train::pass::pass;
use crate::train::trainer::{LinkPairs, StepStats, TrainBatch, Trainer};

/// Random-stream purpose of evaluation negatives (see [`crate::rng`]).
const PURPOSE_EVAL_NEGATIVES: u64 = 0x4c49_4e4b_0003;

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
/// one, else every message-passing edge of the CSC (each pair once when
/// `undirected`: the direction with source < destination, and self-loops
/// once).
pub fn training_edges(
    store: &Store,
    splits: Option<&EdgeSplits>,
    undirected: bool,
) -> Result<LinkPositives> {
    if let Some(train) = splits.and_then(|s| s.train.as_ref()) {
        return Ok(LinkPositives {
            src: train.src.clone(),
            dst: train.dst.clone(),
            neg_range: None,
        });
    }
    let n = store.num_nodes();
    let mut edges = LinkPositives::default();
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

/// The pairs a training step scores from a data-path link batch's
/// `labels` (the positives, label 1, then every negative, label 0, as
/// [`LinkLabels::binary`] lists them). `Corrupt` keeps the batch's
/// negatives as drawn (the positive's source, a uniform destination).
/// `Random` pairs each drawn destination with the next one instead
/// (negative `m` is `(t_m, t_{m+1 mod P·K})`): both endpoints are
/// independent uniform draws, GAE's training negatives, and both are
/// already among the batch's seeds; a batch with a single negative keeps
/// it as drawn.
pub fn link_pairs(labels: &LinkLabels, sampling: NegSampling) -> LinkPairs {
    let mut pairs = LinkPairs::from_binary(labels.binary());
    let p = labels.num_pos();
    let negatives = pairs.len() - p;
    if sampling == NegSampling::Random && negatives > 1 {
        let dst = &pairs.dst[p..];
        let src: Vec<i64> = (0..negatives).map(|m| dst[(m + 1) % negatives]).collect();
        pairs.src.truncate(p);
        pairs.src.extend(src);
    }
    pairs
}

/// One pass of the data path's link batches over `positives`
/// ([`crate::sample::link`]): `data.batch_size` positives each with
/// `task.neg` negatives, shuffled per epoch, each batch's own positive
/// edges (and with `task.undirected` their reverses) left out of its
/// sampled neighbourhoods, and every batch planned by the inspector like
/// any other (so the Belady plan covers the endpoints' features). Feeds
/// each batch and its pairs ([`link_pairs`]) to `step`.
pub fn link_pass(
    store: &Store,
    data: &EpochConfig,
    (positives, task, sampling): (&Arc<LinkPositives>, LinkTask, NegSampling),
    step: &mut dyn FnMut(TrainBatch, LinkPairs) -> Result<()>,
) -> Result<crate::exec::epoch::EpochReport> {
    let mut cfg = data.clone();
    cfg.link = Some(task);
    cfg.link_positives = Some(positives.clone());
    cfg.seed_nodes = None;
    pass(store, &cfg, &[], &mut |tb| {
        let pairs = link_pairs(
            tb.link
                .as_ref()
                .ok_or_else(|| Error::internal("a link epoch's batch has no link labels"))?,
            sampling,
        );
        step(tb, pairs)
    })
}

/// One training pass ([`link_pass`]); calls `after_step` after each
/// batch with its statistics.
pub(crate) fn link_train_pass(
    store: &Store,
    data: &EpochConfig,
    trainer: &mut Trainer,
    link: (&Arc<LinkPositives>, LinkTask, NegSampling),
    after_step: &mut dyn FnMut(&StepStats),
) -> Result<crate::exec::epoch::EpochReport> {
    link_pass(store, data, link, &mut |tb, pairs| {
        let s = trainer.link_train_step(&tb, &pairs)?;
        after_step(&s);
        Ok(())
    })
}

/// `splits`' held-out edges of relation `r` of `store`'s schema (source
/// of its source type, destination of its destination type) and their
/// negatives; the train split as it is ([`LinkPositives::of_relation`]
/// picks its edges).
pub fn relation_splits(store: &Store, r: usize, mut splits: EdgeSplits) -> EdgeSplits {
    let Some(schema) = store.schema() else {
        return splits;
    };
    let rel = &schema.relations[r];
    let (src_ids, dst_ids) = (
        schema.node_types[rel.src as usize].ids(),
        schema.node_types[rel.dst as usize].ids(),
    );
    // A pair of an undirected split may be stored either way round.
    let of_rel = |u: u64, v: u64| src_ids.contains(&u) && dst_ids.contains(&v);
    let undirected = splits.undirected;
    let keep = |split: &mut EdgeSplit| {
        let rows: Vec<(usize, bool)> = (0..split.src.len())
            .filter_map(|i| {
                let (u, v) = (split.src[i], split.dst[i]);
                match (of_rel(u, v), undirected && of_rel(v, u)) {
                    (true, _) => Some((i, false)),
                    (false, true) => Some((i, true)),
                    _ => None,
                }
            })
            .collect();
        let pick = |a: &[u64], b: &[u64], k: usize| -> Vec<u64> {
            rows.iter()
                .flat_map(|&(i, flip)| {
                    (if flip { b } else { a })[i * k..(i + 1) * k]
                        .iter()
                        .copied()
                })
                .collect()
        };
        *split = EdgeSplit {
            src: pick(&split.src, &split.dst, 1),
            dst: pick(&split.dst, &split.src, 1),
            negatives: split
                .negatives
                .as_ref()
                .map(|n| crate::format::edge_splits::Negatives {
                    k: n.k,
                    src: pick(&n.src, &n.dst, n.k),
                    dst: pick(&n.dst, &n.src, n.k),
                }),
        };
    };
    keep(&mut splits.valid);
    keep(&mut splits.test);
    splits
}

/// The held-out positives of `split` and their negatives (`k` per
/// positive, row-major): `draw` uniform destination corruptions per
/// positive when given, else the split's own negatives, else (a split
/// stored without negatives) one corruption per positive. Corruptions
/// come from a fixed stream, so every epoch and every run evaluates the
/// same pairs.
pub fn held_out_pairs(
    split: &EdgeSplit,
    neg_range: std::ops::Range<u64>,
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
                    let width = neg_range.end.saturating_sub(neg_range.start).max(1);
                    neg.dst.push(neg_range.start + rng.below(width));
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
/// full neighbourhoods); negatives, where the split has none, one per
/// positive out of `neg_range`. `None` for an empty split.
pub fn evaluate_link(
    store: &Store,
    trainer: &Trainer,
    data: &EpochConfig,
    (split, neg_range): (&EdgeSplit, std::ops::Range<u64>),
) -> Result<Option<LinkMetrics>> {
    if split.src.is_empty() {
        return Ok(None);
    }
    let (pos, neg, k) = held_out_pairs(split, neg_range, None);
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
    fn link_pairs_keep_corruptions_or_pair_the_drawn_nodes_for_random() {
        let labels = LinkLabels {
            src: vec![0, 2],
            dst: vec![1, 3],
            neg: 2,
            neg_dst: vec![4, 5, 6, 1],
        };
        let corrupt = link_pairs(&labels, NegSampling::Corrupt);
        assert_eq!(corrupt.src, [0, 2, 0, 0, 2, 2]);
        assert_eq!(corrupt.dst, [1, 3, 4, 5, 6, 1]);
        assert_eq!(corrupt.label, [1.0, 1.0, 0.0, 0.0, 0.0, 0.0]);
        // Random: each negative's source is the next negative's drawn
        // destination (wrapping), the positives untouched.
        let random = link_pairs(&labels, NegSampling::Random);
        assert_eq!(random.src, [0, 2, 5, 6, 1, 4]);
        assert_eq!(random.dst, corrupt.dst);
        assert_eq!(random.label, corrupt.label);
        // One negative in the batch: kept as drawn.
        let one = LinkLabels {
            src: vec![0],
            dst: vec![1],
            neg: 1,
            neg_dst: vec![2],
        };
        assert_eq!(
            link_pairs(&one, NegSampling::Random),
            link_pairs(&one, NegSampling::Corrupt)
        );
    }

    #[test]
    fn held_out_pairs_use_the_splits_negatives_or_draw_one_each() {
        let mut split = EdgeSplit {
            src: vec![1, 2],
            dst: vec![3, 4],
            negatives: None,
        };
        let (pos, neg, k) = held_out_pairs(&split, 0..10, None);
        assert_eq!((pos.len(), neg.len(), k), (2, 2, 1));
        assert_eq!(neg.src, vec![1, 2]);
        assert!(neg.dst.iter().all(|&v| v < 10));
        assert_eq!(held_out_pairs(&split, 0..10, None).1, neg);
        let (_, drawn, k) = held_out_pairs(&split, 0..10, Some(4));
        assert_eq!((drawn.len(), k), (8, 4));
        assert_eq!(drawn.src, vec![1, 1, 1, 1, 2, 2, 2, 2]);
        // A relation's negatives come from its destination type's ids.
        let (_, typed, _) = held_out_pairs(&split, 5..7, Some(8));
        assert!(typed.dst.iter().all(|v| (5..7).contains(v)), "{typed:?}");
        assert!(typed.dst.contains(&5) && typed.dst.contains(&6));
        split.negatives = Some(crate::format::edge_splits::Negatives {
            k: 3,
            src: vec![1; 6],
            dst: vec![0, 5, 6, 7, 8, 9],
        });
        let (_, neg, k) = held_out_pairs(&split, 0..10, None);
        assert_eq!((neg.len(), k), (6, 3));
        // Drawn negatives replace the stored ones when asked for.
        assert_eq!(held_out_pairs(&split, 0..10, Some(2)).2, 2);
        let (nodes, rows) = endpoints(&[&pos, &neg]);
        assert_eq!(&nodes[..4], &[1, 2, 3, 4]);
        assert_eq!(rows[&0], 4);
    }
}
