//! How the planner divides the caches' budget between the neighbor cache
//! and the feature cache: by measured benefit, reads saved per byte.
//!
//! Both caches save reads of the same device: a neighbor-list lookup that
//! hits the neighbor cache saves a CSC read, a row that hits the feature
//! cache saves a feature-page read. The planner already samples a few of
//! the epoch's own batches ([`WorkingSet::probe`]); they say which lists
//! the sampler looks up and which rows the batches gather
//! ([`ProbeAccesses`]). For each share of the budget in
//! [`NEIGHBOR_SHARES`] it predicts the reads both caches leave:
//!
//! * **lists** — the neighbor cache holds lists in its build's order,
//!   out-degree / in-degree descending (`sample::neighbor_cache`), until
//!   its budget is spent; a lookup hits when its list is among them. A
//!   list's bytes are its in-degree times the index width, scaled by the
//!   codec's compression measured on lists the probe looked up.
//! * **rows** — a feature cache of `R` rows is priced as the static cache
//!   of the `R` highest out-degree nodes (the `degree` policy): a row hits
//!   when its node is among them. Belady and the dynamic policies hit more
//!   than that at every size, so the feature cache's benefit is
//!   underestimated alike for every share; what the split compares is how
//!   the two caches' benefits fall off.
//!
//! Nodes are bucketed by a quantised log of their score (eight buckets a
//! doubling), so choosing costs the out-degrees (the store's recorded
//! table, or one pass over an older store's topology, as the `degree`
//! policy and the reuse prior use) and a few
//! passes over the probe, never a sort of the nodes.
//!
//! [`WorkingSet::probe`]: crate::exec::plan::WorkingSet::probe

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::format::neighbor_cache::Codec;
use crate::sample::sampler::SampledBatch;
use crate::sample::source::{NeighborSource, StoreSource};
use crate::store::gather::GatherOptions;
use crate::store::Store;

/// Shares of the caches' budget the planner prices for the neighbor cache.
pub const NEIGHBOR_SHARES: [f64; 10] = [
    0.0,
    1.0 / 64.0,
    1.0 / 32.0,
    1.0 / 16.0,
    1.0 / 8.0,
    3.0 / 16.0,
    1.0 / 4.0,
    3.0 / 8.0,
    1.0 / 2.0,
    3.0 / 4.0,
];

/// The share a run gets when none is measured, and the one kept when no
/// other is predicted to save at least [`MIN_GAIN`] of its reads.
pub const DEFAULT_NEIGHBOR_SHARE: f64 = 1.0 / 8.0;

/// A share replaces the default only when it is predicted to leave this
/// much fewer reads (1 %): the prediction is coarse, and a stable split
/// lets runs under one budget reuse the neighbor cache built before.
pub const MIN_GAIN: f64 = 0.01;

/// Lists the compression ratio is measured on.
const COMPRESSION_SAMPLE: usize = 512;

/// Score buckets a doubling.
const BUCKETS_PER_DOUBLING: f64 = 8.0;
/// Buckets in all: scores from 2^-64 to 2^64.
const BUCKETS: usize = 128 * 8;

/// What the probe's batches touched.
#[derive(Debug, Clone, Default)]
pub struct ProbeAccesses {
    /// Nodes whose in-neighbor lists the sampler looked up (once per hop
    /// that drew from them).
    pub lookups: Vec<u64>,
    /// Nodes whose rows the batches gathered.
    pub rows: Vec<u64>,
}

impl ProbeAccesses {
    /// Adds a sampled batch: every hop looks up the lists of the ids
    /// sampled before it, and the batch gathers every id.
    pub fn add(&mut self, batch: &SampledBatch) {
        for hop in &batch.hops {
            self.lookups.extend_from_slice(&batch.ids[..hop.num_dst]);
        }
        self.rows.extend_from_slice(&batch.ids);
    }
}

/// One priced share.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PricedShare {
    /// Share of the caches' budget for the neighbor cache.
    pub share: f64,
    /// Neighbor-cache bytes.
    #[serde(rename = "neighbor_cache_bytes")]
    pub neighbor_bytes: u64,
    /// Feature-cache rows the rest holds.
    #[serde(rename = "feature_cache_rows")]
    pub feature_rows: u64,
    /// Predicted list reads and row reads of the probe's batches.
    pub list_reads: f64,
    /// See `list_reads`.
    pub row_reads: f64,
}

impl PricedShare {
    /// Predicted reads in all.
    pub fn reads(&self) -> f64 {
        self.list_reads + self.row_reads
    }
}

/// The split chosen, and every share priced (the plan JSON's
/// `neighbor_cache_split`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheSplit {
    /// Neighbor-cache bytes chosen.
    #[serde(rename = "neighbor_cache_bytes")]
    pub neighbor_bytes: u64,
    /// The share chosen.
    pub share: f64,
    /// Every share priced, in [`NEIGHBOR_SHARES`] order.
    pub priced: Vec<PricedShare>,
    /// Measured bytes of a cached list over its raw bytes.
    pub compression: f64,
    /// List lookups and rows of the probed batches (what the reads are
    /// out of).
    pub lookups: u64,
    /// See `lookups`.
    pub rows: u64,
}

impl CacheSplit {
    /// Whether the chosen share is predicted to serve every list lookup of
    /// the probed batches from the neighbor cache (less than half a read
    /// left): the sampler then reads no lists.
    pub fn serves_every_list(&self) -> bool {
        self.priced
            .iter()
            .find(|p| p.share == self.share)
            .is_some_and(|p| p.list_reads < 0.5)
    }
}

/// `2^(k/8)` for `k` in 1..=7: where the eight buckets of a doubling
/// begin, as a mantissa in `[1, 2)`.
const EIGHTH_ROOTS_OF_TWO: [f64; 7] = [
    1.090_507_732_665_257_7,
    1.189_207_115_002_721,
    1.296_839_554_651_009_6,
    std::f64::consts::SQRT_2,
    1.542_210_825_407_940_7,
    1.681_792_830_507_429,
    1.834_008_086_409_342_4,
];

/// Bucket of a positive score: `floor(8 log2(score))`, offset by half the
/// buckets and clamped. Read from the float's exponent and where its
/// mantissa lies among the eighth roots of two: a `log2` and a `floor` a
/// node took 85 ms of the plan on 3 M nodes (two libm calls each).
fn bucket(score: f64) -> usize {
    if score <= 0.0 || score.is_nan() {
        return 0;
    }
    if !score.is_normal() {
        return bucket_by_log2(score);
    }
    let bits = score.to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as i64 - 1023;
    let mantissa = f64::from_bits((bits & ((1 << 52) - 1)) | (1023 << 52));
    let eighths = EIGHTH_ROOTS_OF_TWO.partition_point(|&root| root <= mantissa) as i64;
    let b = exponent * BUCKETS_PER_DOUBLING as i64 + eighths + (BUCKETS / 2) as i64;
    b.clamp(0, BUCKETS as i64 - 1) as usize
}

/// [`bucket`] by its definition (subnormal and infinite scores).
fn bucket_by_log2(score: f64) -> usize {
    let b = (score.log2() * BUCKETS_PER_DOUBLING).floor() + (BUCKETS / 2) as f64;
    b.clamp(0.0, (BUCKETS - 1) as f64) as usize
}

/// A cache filled in descending score order: `weight[b]` of capacity is
/// taken by the nodes of bucket `b`. Returns, per bucket, the share of its
/// nodes inside a cache of `capacity` (1 above the bucket it runs out in,
/// a fraction in it, 0 below).
fn filled(weight: &[f64], capacity: f64) -> Vec<f64> {
    let mut left = capacity.max(0.0);
    let mut share = vec![0.0; weight.len()];
    for b in (0..weight.len()).rev() {
        if left <= 0.0 {
            break;
        }
        if weight[b] <= left {
            share[b] = 1.0;
            left -= weight[b];
        } else {
            share[b] = left / weight[b];
            left = 0.0;
        }
    }
    share
}

/// What the split is priced on, whatever the caches' budget: the lists'
/// bytes and the nodes per score bucket (a pass over the store's nodes),
/// and the probe's lookups and rows per bucket. Measured once a plan:
/// the planner prices several budgets on it (an automatic superbatch's
/// fit plans twice).
#[derive(Debug, Clone)]
pub struct SplitBasis {
    compression: f64,
    /// Per bucket of out/in degree: the lists' cached bytes.
    list_bytes: Vec<f64>,
    /// Per bucket of out-degree: nodes.
    row_nodes: Vec<f64>,
    /// Per bucket: the probe's list lookups, and its rows.
    list_hist: Vec<f64>,
    row_hist: Vec<f64>,
    lookups: u64,
    rows: u64,
    empty_cache: u64,
}

impl SplitBasis {
    /// Measures the basis of `store` (with its `out_degrees` and the
    /// `nodes` counted on them) and the probe's accesses.
    pub fn measure(
        store: &Store,
        (out_degrees, nodes): (&[u32], &SplitNodes),
        probe: &ProbeAccesses,
    ) -> Result<Self> {
        let width = store.index_width().bytes() as f64;
        let indptr = store.indptr();
        let in_degree = |v: usize| indptr[v + 1] - indptr[v];
        let compression = measured_compression(store, &probe.lookups)?;
        let list_bytes = nodes
            .list_entries
            .iter()
            .zip(&nodes.lists)
            .map(|(&entries, &lists)| entries as f64 * width * compression + 2.0 * lists as f64)
            .collect();
        let list_score = |v: usize| f64::from(out_degrees[v]) / in_degree(v).max(1) as f64;
        let row_score = |v: usize| f64::from(out_degrees[v]) + 1.0;
        let (mut list_hist, mut row_hist) = (vec![0.0; BUCKETS], vec![0.0; BUCKETS]);
        for &v in &probe.lookups {
            list_hist[bucket(list_score(v as usize))] += 1.0;
        }
        for &v in &probe.rows {
            row_hist[bucket(row_score(v as usize))] += 1.0;
        }
        Ok(SplitBasis {
            compression,
            list_bytes,
            row_nodes: nodes.row_nodes.clone(),
            list_hist,
            row_hist,
            lookups: probe.lookups.len() as u64,
            rows: probe.rows.len() as u64,
            empty_cache: crate::sample::neighbor_cache::empty_cache_bytes(store),
        })
    }
}

/// The store's half of a [`SplitBasis`], which needs no probe: one pass
/// over the nodes, counted beside the probe's batches where the plan can.
#[derive(Debug, Clone)]
pub struct SplitNodes {
    /// Per bucket of out/in degree: the lists' entries (their in-degrees).
    list_entries: Vec<u64>,
    /// Per bucket of out/in degree: the non-empty lists.
    lists: Vec<u64>,
    /// Per bucket of out-degree: nodes.
    row_nodes: Vec<f64>,
}

impl SplitNodes {
    /// Counts the buckets of `store`'s nodes by their `out_degrees`.
    pub fn count(store: &Store, out_degrees: &[u32]) -> Self {
        let indptr = store.indptr();
        let n = (store.num_nodes() as usize).min(out_degrees.len());
        let (mut list_entries, mut lists) = (vec![0u64; BUCKETS], vec![0u64; BUCKETS]);
        let mut row_nodes = vec![0.0; BUCKETS];
        for (v, &out) in out_degrees.iter().enumerate().take(n) {
            let d = indptr[v + 1] - indptr[v];
            if d > 0 {
                let b = bucket(f64::from(out) / d as f64);
                list_entries[b] += d;
                lists[b] += 1;
            }
            row_nodes[bucket(f64::from(out) + 1.0)] += 1.0;
        }
        SplitNodes {
            list_entries,
            lists,
            row_nodes,
        }
    }
}

/// Prices every share of `caches` bytes (the neighbor cache at most
/// `topology_bytes`; `feature_rows(bytes)`: the rows a feature cache of
/// `bytes` holds) on `basis`, and picks the one predicted to leave the
/// fewest reads (the default unless another saves [`MIN_GAIN`]).
pub fn choose_split(
    basis: &SplitBasis,
    caches: u64,
    topology_bytes: u64,
    feature_rows: &dyn Fn(u64) -> u64,
) -> CacheSplit {
    let misses = |hist: &[f64], inside: &[f64]| -> f64 {
        hist.iter().zip(inside).map(|(h, s)| h * (1.0 - s)).sum()
    };
    let priced: Vec<PricedShare> = NEIGHBOR_SHARES
        .iter()
        .map(|&share| {
            let neighbor_bytes = neighbor_budget(caches, share, topology_bytes);
            let feature_rows = feature_rows(caches - neighbor_bytes);
            let lists = neighbor_bytes.saturating_sub(basis.empty_cache) as f64;
            let list_reads = if neighbor_bytes == 0 {
                basis.lookups as f64
            } else {
                misses(&basis.list_hist, &filled(&basis.list_bytes, lists))
            };
            PricedShare {
                share,
                neighbor_bytes,
                feature_rows,
                list_reads,
                row_reads: misses(
                    &basis.row_hist,
                    &filled(&basis.row_nodes, feature_rows as f64),
                ),
            }
        })
        .collect();
    let default = priced
        .iter()
        .find(|p| p.share == DEFAULT_NEIGHBOR_SHARE)
        .copied()
        .unwrap_or(priced[0]);
    let best = priced
        .iter()
        .copied()
        .min_by(|a, b| a.reads().total_cmp(&b.reads()))
        .unwrap_or(default);
    let chosen = if best.reads() < default.reads() * (1.0 - MIN_GAIN) {
        best
    } else {
        default
    };
    CacheSplit {
        neighbor_bytes: chosen.neighbor_bytes,
        share: chosen.share,
        priced,
        compression: basis.compression,
        lookups: basis.lookups,
        rows: basis.rows,
    }
}

/// The neighbor-cache bytes of `share` of `caches`: at most what the whole
/// topology takes, in whole 64 KiB (so runs under one budget find the
/// cache built before).
pub fn neighbor_budget(caches: u64, share: f64, topology_bytes: u64) -> u64 {
    ((caches as f64 * share) as u64).min(topology_bytes) >> 16 << 16
}

/// Bytes of the neighbor cache's encoding over the raw bytes (in-degree ×
/// index width) of up to [`COMPRESSION_SAMPLE`] distinct lists of
/// `lookups` (1 when there are none).
fn measured_compression(store: &Store, lookups: &[u64]) -> Result<f64> {
    let mut sample: Vec<u64> = lookups.to_vec();
    sample.sort_unstable();
    sample.dedup();
    let step = sample.len().div_ceil(COMPRESSION_SAMPLE).max(1);
    let picked: Vec<u64> = sample.into_iter().step_by(step).collect();
    let width = store.index_width();
    let (mut raw, mut encoded) = (0u64, 0u64);
    let mut scratch = Vec::new();
    let mut failed = None;
    // One batched read of the picked lists (not one read each).
    let source = StoreSource::new(store, None, &GatherOptions::default())?;
    source.with_lists(&picked, &mut |_, list| {
        scratch.clear();
        match Codec::BlockBitpack.encode(list, width, &mut scratch) {
            Ok(()) => {
                raw += list.len() as u64 * width.bytes() as u64;
                encoded += scratch.len() as u64;
            }
            Err(e) => {
                failed.get_or_insert(e);
            }
        }
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    Ok(if raw == 0 {
        1.0
    } else {
        encoded as f64 / raw as f64
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_eight_a_doubling_and_ordered() {
        assert_eq!(bucket(2.0) - bucket(1.0), 8);
        assert!(bucket(1.5) > bucket(1.0) && bucket(1.5) < bucket(2.0));
        assert_eq!(bucket(0.0), 0);
        assert_eq!(bucket(f64::MAX), BUCKETS - 1);
    }

    /// The bucket read from the float's bits is the one its definition
    /// gives, on the scores the planner makes (out-degree + 1, and
    /// out-degree over in-degree) and across the exponent range.
    #[test]
    fn buckets_from_the_bits_match_the_definition() {
        for (k, &root) in EIGHTH_ROOTS_OF_TWO.iter().enumerate() {
            assert!((root - 2f64.powf((k + 1) as f64 / 8.0)).abs() < 1e-15);
        }
        let mut scores: Vec<f64> = Vec::new();
        for out in 0..600u32 {
            scores.push(f64::from(out) + 1.0);
            for inn in 1..300u64 {
                scores.push(f64::from(out) / inn as f64);
            }
        }
        for e in -70..70 {
            for k in 0..64 {
                scores.push(2f64.powi(e) * (1.0 + k as f64 / 64.0));
            }
        }
        scores.extend([f64::MIN_POSITIVE / 4.0, f64::INFINITY, f64::MAX, 1e300]);
        for s in scores {
            assert_eq!(bucket(s), bucket_by_log2(s), "score {s}");
        }
        assert_eq!(bucket(f64::NAN), 0);
    }

    #[test]
    fn a_cache_fills_the_highest_buckets_first() {
        let w = [4.0, 2.0, 3.0];
        assert_eq!(filled(&w, 0.0), vec![0.0, 0.0, 0.0]);
        assert_eq!(filled(&w, 4.0), vec![0.0, 0.5, 1.0]);
        assert_eq!(filled(&w, 100.0), vec![1.0, 1.0, 1.0]);
    }

    /// The basis counted in two halves (the nodes beside the probe, the
    /// compression through one batched read) is the one its definition
    /// gives: each list's bytes, in-degree × width × the codec's ratio
    /// on the probe's lists read one by one, plus 2, in its bucket.
    #[test]
    fn the_basis_prices_each_list_as_its_definition_does() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("store");
        let synth = crate::import::synth::SynthParams {
            nodes: 3000,
            avg_degree: 12.0,
            dim: 4,
            ..Default::default()
        };
        crate::import::synth::generate_store(&synth, &path, &crate::progress::NoProgress).unwrap();
        let store = Store::open(&path).unwrap();
        let out = crate::sample::neighbor_cache::out_degrees(&store).unwrap();
        // More distinct lookups than the sample takes, repeated, unsorted.
        let lookups: Vec<u64> = (0..3000u64).rev().chain(0..50).collect();
        let probe = ProbeAccesses {
            lookups: lookups.clone(),
            rows: (0..3000u64).step_by(7).collect(),
        };
        let nodes = SplitNodes::count(&store, &out);
        let basis = SplitBasis::measure(&store, (&out, &nodes), &probe).unwrap();

        let width = store.index_width();
        let mut distinct = lookups.clone();
        distinct.sort_unstable();
        distinct.dedup();
        let step = distinct.len().div_ceil(COMPRESSION_SAMPLE);
        assert!(step > 1, "the sample must skip lists");
        let (mut raw, mut encoded) = (0u64, 0u64);
        for &v in distinct.iter().step_by(step) {
            let list = store.in_neighbors(v).unwrap();
            let mut bytes = Vec::new();
            Codec::BlockBitpack
                .encode(&list, width, &mut bytes)
                .unwrap();
            raw += list.len() as u64 * width.bytes() as u64;
            encoded += bytes.len() as u64;
        }
        assert!(raw > 0);
        assert_eq!(basis.compression, encoded as f64 / raw as f64);

        let indptr = store.indptr();
        let (mut list_bytes, mut row_nodes) = (vec![0.0; BUCKETS], vec![0.0; BUCKETS]);
        for v in 0..store.num_nodes() as usize {
            let d = indptr[v + 1] - indptr[v];
            if d > 0 {
                let score = f64::from(out[v]) / d as f64;
                list_bytes[bucket(score)] +=
                    d as f64 * width.bytes() as f64 * basis.compression + 2.0;
            }
            row_nodes[bucket(f64::from(out[v]) + 1.0)] += 1.0;
        }
        assert_eq!(basis.row_nodes, row_nodes);
        assert!(list_bytes.iter().filter(|&&b| b > 0.0).count() > 3);
        for (b, (&got, &want)) in basis.list_bytes.iter().zip(&list_bytes).enumerate() {
            assert!(
                (got - want).abs() <= 1e-9 * want.max(1.0),
                "bucket {b}: {got} against {want}"
            );
        }
        assert_eq!(basis.lookups, lookups.len() as u64);
        assert_eq!(basis.list_hist.iter().sum::<f64>(), lookups.len() as f64);
    }

    #[test]
    fn the_neighbor_budget_is_capped_and_in_whole_64_kib() {
        assert_eq!(neighbor_budget(1 << 30, 0.125, u64::MAX), 128 << 20);
        assert_eq!(neighbor_budget(1 << 30, 0.5, 100 << 20), 100 << 20);
        assert_eq!(neighbor_budget(100_000, 0.5, u64::MAX), 0);
    }
}
