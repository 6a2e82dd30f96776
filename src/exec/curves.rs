//! The policy lab: miss-ratio curves of every feature-cache policy from one
//! sampled access trace, with no feature I/O (`ginex bench curves`).
//!
//! A [`Trace`] is the ids each batch gathers, in order — sampled once with
//! the executor's own sampler ([`sample_trace`]: same seed, epoch and
//! batches as `ginex epoch`), or read from `.npy` files. [`replay`] runs it
//! through one policy at one cache size with the code the executor runs,
//! minus the row bytes, so the counts are exact, not estimates:
//!
//! * dynamic policies (`lru`, `sieve`, `s3fifo`, `clock`, `2q`: every dynamic row
//!   of the policy table) replay through
//!   [`Residency`](crate::cache::dynamic::Residency), the bookkeeping half
//!   of the executor's row caches (same batch semantics, see
//!   [`crate::cache::dynamic`]); they start empty;
//! * `ginex` (exact Belady) and `ginex-kK` (k-hop) compute the changesets
//!   of each superbatch with the inspector's [`compute_changesets_from`],
//!   carrying each superbatch's final cache into the next as the executor
//!   does; the per-batch misses are the executor's, and the rows each
//!   superbatch's init reads are counted;
//! * `degree` and `presc` select their static rows exactly as the executor
//!   does; the preload is counted.
//!
//! Init rows count as misses for every policy (a dynamic cache pays for
//! its cold start in its first batches), so `miss ratio = (init + batch
//! misses) / accesses`. [`RunCounts::batch_misses`] alone is what
//! `run_epoch` reports per batch.
//!
//! A trace may span several epochs (`epochs > 1`); it is then replayed as
//! one continuous run — a cache that lives across epochs — whereas
//! `ginex train` starts every epoch with a fresh cache.

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::cache::belady::{cheapest_plan, PageGroups, ReusePrior};
use crate::cache::static_policy::{top_k, top_presampled};
use crate::cache::{DynamicKind, Policy};
use crate::error::{Error, Result};
use crate::exec::config::{CacheConfig, FirstSuperbatch};
use crate::import::npy::{NpyFile, NpyType};
use crate::import::npy_write::NpyWriter;
use crate::sample::sampler::EpochSampler;
use crate::sample::source::InMemoryTopology;
use crate::store::Store;

/// An access trace: batch `b` gathers `ids[offsets[b]..offsets[b + 1]]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trace {
    /// Every batch's ids, concatenated.
    pub ids: Vec<u64>,
    /// Batch boundaries: `num_batches + 1` entries, starting at 0.
    pub offsets: Vec<u64>,
}

impl Trace {
    /// A trace of the given batches.
    pub fn from_batches<B: AsRef<[u64]>>(batches: &[B]) -> Self {
        let mut t = Trace {
            ids: Vec::new(),
            offsets: vec![0],
        };
        for b in batches {
            t.push(b.as_ref());
        }
        t
    }

    /// Appends one batch.
    pub fn push(&mut self, batch: &[u64]) {
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        self.ids.extend_from_slice(batch);
        self.offsets.push(self.ids.len() as u64);
    }

    /// Number of batches.
    pub fn num_batches(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// Total accesses.
    pub fn accesses(&self) -> u64 {
        self.ids.len() as u64
    }

    /// The ids of batch `b`.
    pub fn batch(&self, b: usize) -> &[u64] {
        &self.ids[self.offsets[b] as usize..self.offsets[b + 1] as usize]
    }

    /// Every batch, in order.
    pub fn batches(&self) -> impl Iterator<Item = &[u64]> {
        (0..self.num_batches()).map(|b| self.batch(b))
    }

    /// Checks the trace against a store of `num_nodes` nodes: offsets start
    /// at 0, never decrease and end at the id count; ids are below
    /// `num_nodes`; no batch lists an id twice. `name` is used in errors.
    pub fn validate(&self, num_nodes: u64, name: &Path) -> Result<()> {
        let bad = |pos: u64, what: String| Error::corrupt(name, pos, what);
        if self.offsets.first() != Some(&0) {
            return Err(bad(0, "batch offsets must start with 0".into()));
        }
        for (b, w) in self.offsets.windows(2).enumerate() {
            if w[1] < w[0] {
                return Err(bad(
                    b as u64 + 1,
                    format!("batch offset {} is below the previous one {}", w[1], w[0]),
                ));
            }
        }
        let last = *self.offsets.last().unwrap_or(&0);
        if last != self.ids.len() as u64 {
            return Err(bad(
                self.offsets.len() as u64 - 1,
                format!(
                    "the last batch offset is {last} but the trace holds {} ids",
                    self.ids.len()
                ),
            ));
        }
        let mut seen = vec![u32::MAX; num_nodes as usize];
        for b in 0..self.num_batches() {
            let first = self.offsets[b] as usize;
            for (k, &id) in self.batch(b).iter().enumerate() {
                let at = (first + k) as u64;
                let slot = seen.get_mut(id as usize).ok_or_else(|| {
                    bad(
                        at,
                        format!("node {id} (batch {b}) is not below the node count {num_nodes}"),
                    )
                })?;
                if *slot == b as u32 {
                    return Err(bad(at, format!("batch {b} lists node {id} twice")));
                }
                *slot = b as u32;
            }
        }
        Ok(())
    }

    /// Writes the trace as two `.npy` arrays (see [`offsets_path`]): the
    /// ids (`<u8`, shape `(accesses,)`) at `path`, the batch offsets
    /// (`<u8`, shape `(batches + 1,)`) beside it.
    pub fn write_npy(&self, path: &Path) -> Result<()> {
        for (p, values) in [
            (path.to_path_buf(), &self.ids),
            (offsets_path(path), &self.offsets),
        ] {
            let mut w = NpyWriter::create_output(&p, "<u8", &[])?;
            let mut bytes = Vec::with_capacity(1 << 20);
            for chunk in values.chunks(1 << 17) {
                bytes.clear();
                for v in chunk {
                    bytes.extend_from_slice(&v.to_le_bytes());
                }
                w.write(&bytes, chunk.len() as u64)?;
            }
            w.finish()?;
        }
        Ok(())
    }

    /// Reads a trace written by [`Trace::write_npy`] (or by numpy: any
    /// 1-D integer arrays; negative values are refused). Call
    /// [`Trace::validate`] before replaying it.
    pub fn read_npy(path: &Path) -> Result<Self> {
        Ok(Trace {
            ids: read_u64_array(path)?,
            offsets: read_u64_array(&offsets_path(path))?,
        })
    }
}

/// Where the batch offsets of a trace at `path` live: `t.npy` →
/// `t.offsets.npy` (`.offsets.npy` appended to any other name).
pub fn offsets_path(path: &Path) -> PathBuf {
    let s = path.as_os_str().to_string_lossy();
    match s.strip_suffix(".npy") {
        Some(stem) => PathBuf::from(format!("{stem}.offsets.npy")),
        None => PathBuf::from(format!("{s}.offsets.npy")),
    }
}

fn read_u64_array(path: &Path) -> Result<Vec<u64>> {
    let f = NpyFile::open(path)?;
    if f.header.shape.len() != 1 || matches!(f.header.dtype, NpyType::Float(_) | NpyType::Bool) {
        return Err(Error::corrupt(
            path,
            0,
            format!(
                "expected a 1-D integer array, found shape {:?} of {:?}",
                f.header.shape, f.header.dtype
            ),
        ));
    }
    let n = f.len();
    let mut out = Vec::with_capacity(n as usize);
    let (mut raw, mut vals) = (Vec::new(), Vec::new());
    let block = 1u64 << 17;
    let mut first = 0;
    while first < n {
        let count = block.min(n - first) as usize;
        f.read_ints(first, count, &mut raw, &mut vals)?;
        for (k, &v) in vals.iter().enumerate() {
            let v = u64::try_from(v).map_err(|_| {
                Error::corrupt(
                    path,
                    first + k as u64,
                    format!(
                        "element {} is {v}, not a node id or offset",
                        first + k as u64
                    ),
                )
            })?;
            out.push(v);
        }
        first += count as u64;
    }
    Ok(out)
}

/// Which batches to sample.
#[derive(Debug, Clone)]
pub struct TraceSpec {
    /// Seeds per batch.
    pub batch_size: usize,
    /// Fanouts (one count per hop, or per relation).
    pub fanouts: crate::sample::fanouts::Fanouts,
    /// Run seed.
    pub seed: u64,
    /// First epoch.
    pub epoch: u64,
    /// Epochs, consecutive from `epoch`.
    pub epochs: u64,
    /// Stop after this many batches in all (None = every batch).
    pub max_batches: Option<u64>,
    /// Sampling threads.
    pub workers: usize,
}

/// Samples the trace the executor would gather: the batches of `epochs`
/// epochs from `epoch` on, over the training split, with the executor's
/// sampler (so `ginex epoch` with the same seed, epoch, batch size,
/// fanouts and `--max-batches` gathers exactly these ids).
pub fn sample_trace(store: &Store, topo: &InMemoryTopology, spec: &TraceSpec) -> Result<Trace> {
    let train = store.splits()?.map(|s| s.train).unwrap_or_default();
    if train.is_empty() {
        return Err(Error::invalid_argument(format!(
            "{} has no training nodes (no splits file or an empty train split)",
            store.dir().display()
        )));
    }
    let fanouts = spec.fanouts.resolve(store.schema())?;
    trace_of(spec, &|e| {
        EpochSampler::new(topo, &train, spec.batch_size, fanouts.clone(), spec.seed, e)
    })
}

/// [`sample_trace`] of link batches (`ginex epoch --task link`): the
/// positives of [`link_positives`](crate::exec::sampler::link_positives),
/// `task.neg` negatives each, drawn out of every node.
pub fn sample_link_trace(
    store: &Store,
    topo: &InMemoryTopology,
    spec: &TraceSpec,
    task: crate::sample::link::LinkTask,
) -> Result<Trace> {
    let mut task = task;
    let (positives, undirected) =
        crate::exec::sampler::link_positives(store, topo, task.undirected)?;
    task.undirected = undirected;
    let link = crate::sample::link::LinkEpoch {
        positives,
        task,
        neg_range: 0..store.num_nodes(),
    };
    let fanouts = spec.fanouts.resolve(store.schema())?;
    trace_of(spec, &|e| {
        EpochSampler::link(
            topo,
            link.clone(),
            spec.batch_size,
            fanouts.clone(),
            spec.seed,
            e,
        )
    })
}

/// The trace of `spec`'s epochs, epoch `e`'s batches from `sampler(e)`.
fn trace_of<'s>(
    spec: &TraceSpec,
    sampler: &dyn Fn(u64) -> Result<EpochSampler<'s>>,
) -> Result<Trace> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(spec.workers.max(1))
        .build()
        .map_err(|e| Error::threads("sampling threads", e))?;
    let mut trace = Trace::from_batches::<Vec<u64>>(&[]);
    let mut left = spec.max_batches.unwrap_or(u64::MAX);
    for e in spec.epoch..spec.epoch.saturating_add(spec.epochs) {
        let sampler = sampler(e)?;
        let n = sampler.num_batches().min(left);
        // Rounds of a few batches per thread: bounded memory, batch order.
        let round = (spec.workers.max(1) * 4) as u64;
        let mut next = 0;
        while next < n {
            let upto = (next + round).min(n);
            let sampled: Vec<Result<Vec<u64>>> = pool.install(|| {
                (next..upto)
                    .into_par_iter()
                    .map(|b| sampler.sample(b).map(|s| s.ids))
                    .collect()
            });
            for ids in sampled {
                trace.push(&ids?);
            }
            next = upto;
        }
        left -= n;
        if left == 0 {
            break;
        }
    }
    Ok(trace)
}

/// A policy of the lab.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CurvePolicy {
    /// Belady changesets per superbatch; `every = 1` is exact, `k > 1` the
    /// k-hop approximation.
    Ginex {
        /// k of the k-hop approximation.
        every: usize,
    },
    /// Static: highest out-degree.
    Degree,
    /// Static: most sampled in pre-sampling epochs.
    Presc,
    /// A dynamic row cache.
    Dynamic(DynamicKind),
}

impl CurvePolicy {
    /// The default line-up: exact Belady, k-hop 2/4/8, the static and the
    /// dynamic baselines (every dynamic policy of the policy table, in its
    /// order).
    pub const DEFAULT: [CurvePolicy; 6 + DynamicKind::ALL.len()] = {
        let mut all = [CurvePolicy::Degree; 6 + DynamicKind::ALL.len()];
        all[0] = CurvePolicy::Ginex { every: 1 };
        all[1] = CurvePolicy::Ginex { every: 2 };
        all[2] = CurvePolicy::Ginex { every: 4 };
        all[3] = CurvePolicy::Ginex { every: 8 };
        all[5] = CurvePolicy::Presc;
        let mut i = 0;
        while i < DynamicKind::ALL.len() {
            all[6 + i] = CurvePolicy::Dynamic(DynamicKind::ALL[i]);
            i += 1;
        }
        all
    };

    /// Name: `ginex`, `ginex-k4`, `degree`, `presc`, or a dynamic policy's
    /// (`lru`, `sieve`, …).
    pub fn name(self) -> String {
        match self {
            CurvePolicy::Ginex { every: 1 } => "ginex".into(),
            CurvePolicy::Ginex { every } => format!("ginex-k{every}"),
            CurvePolicy::Degree => "degree".into(),
            CurvePolicy::Presc => "presc".into(),
            CurvePolicy::Dynamic(k) => k.name().into(),
        }
    }

    /// The lab's form of an epoch policy; None for `mmap` and `none`,
    /// which keep no feature cache to simulate.
    pub fn of(policy: Policy) -> Option<CurvePolicy> {
        match CacheConfig::of(policy) {
            CacheConfig::Ginex(g) => Some(CurvePolicy::Ginex {
                every: g.changeset_every,
            }),
            CacheConfig::Degree => Some(CurvePolicy::Degree),
            CacheConfig::Presc { .. } => Some(CurvePolicy::Presc),
            CacheConfig::Dynamic(kind) => Some(CurvePolicy::Dynamic(kind)),
            CacheConfig::Mmap | CacheConfig::None => None,
        }
    }

    /// Parses a name (see [`CurvePolicy::name`]): an epoch policy's name
    /// ([`Policy::parse`]) or `ginex-kK`.
    pub fn parse(s: &str) -> Result<Self> {
        if let Some(k) = s.strip_prefix("ginex-k") {
            if let Ok(every @ 1..) = k.parse::<usize>() {
                return Ok(CurvePolicy::Ginex { every });
            }
        }
        Policy::parse(s)
            .ok()
            .and_then(CurvePolicy::of)
            .ok_or_else(|| {
                let names: Vec<&str> = Policy::ALL
                    .into_iter()
                    .filter(|&p| CurvePolicy::of(p).is_some())
                    .map(Policy::name)
                    .collect();
                Error::invalid_argument(format!(
                    "unknown policy {s:?} for the policy lab; use ginex-kK (k-hop, e.g. ginex-k4) or one of {}",
                    names.join(", ")
                ))
            })
    }
}

/// What the static policies select, ranked (a prefix of `k` rows is the
/// policy's selection for capacity `k`, exactly as the executor selects).
#[derive(Debug, Clone, Default)]
pub struct StaticRanks {
    /// Nodes by out-degree, highest first (ties by id).
    pub degree: Vec<u64>,
    /// Nodes by pre-sampling count, highest first (ties by id).
    pub presc: Vec<u64>,
}

impl StaticRanks {
    /// Ranks up to `k` nodes for each static policy among `policies`
    /// (the others stay empty), as `ginex epoch` selects them, `presc`
    /// with `presc_rounds` pre-sampling epochs of `spec`'s batches.
    pub fn compute(
        store: &Store,
        topo: &InMemoryTopology,
        spec: &TraceSpec,
        presc_rounds: u64,
        k: usize,
        policies: &[CurvePolicy],
    ) -> Result<Self> {
        let mut ranks = StaticRanks::default();
        if policies.contains(&CurvePolicy::Degree) {
            let deg = crate::sample::neighbor_cache::out_degrees(store)?;
            ranks.degree = top_k(&deg.iter().map(|&d| u64::from(d)).collect::<Vec<_>>(), k);
        }
        if policies.contains(&CurvePolicy::Presc) {
            let train = store.splits()?.map(|s| s.train).unwrap_or_default();
            ranks.presc = top_presampled(
                topo,
                &train,
                spec.batch_size,
                &spec.fanouts.resolve(store.schema())?,
                spec.seed,
                presc_rounds,
                k,
            )?;
        }
        Ok(ranks)
    }
}

/// How a trace is replayed.
#[derive(Debug, Clone)]
pub struct ReplayConfig {
    /// Nodes in the store.
    pub num_nodes: u64,
    /// Batches per superbatch for `ginex` (0 = the whole trace).
    pub superbatch: usize,
    /// Where `ginex`'s superbatches start (as the executor's
    /// `first_superbatch`: the same [`FirstSuperbatch::bounds`]).
    pub first_superbatch: FirstSuperbatch,
    /// How `ginex` ranks nodes beyond a superbatch (as the executor's
    /// `reuse_prior`: [`ReusePrior::from_out_degrees`] or none).
    pub prior: ReusePrior,
    /// Rows per page when `ginex` may admit page companions (as the
    /// executor's `page_companions` on a store of that layout); None: rows
    /// only.
    pub page_companions: Option<PageGroups>,
}

/// Misses of one policy at one size.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunCounts {
    /// Rows loaded before batches (static preload, Belady initial fills).
    pub init_misses: u64,
    /// Misses of each batch, as `run_epoch` counts them.
    pub batch_misses: Vec<u64>,
}

impl RunCounts {
    /// Init plus batch misses.
    pub fn total_misses(&self) -> u64 {
        self.init_misses + self.batch_misses.iter().sum::<u64>()
    }
}

/// Replays `trace` through `policy` with `capacity` rows. `ranks` must rank
/// at least `capacity` nodes (or every node) for the static policies.
pub fn replay(
    trace: &Trace,
    policy: CurvePolicy,
    capacity: usize,
    config: &ReplayConfig,
    ranks: &StaticRanks,
) -> Result<RunCounts> {
    match policy {
        CurvePolicy::Dynamic(kind) => replay_dynamic(trace, kind, capacity, config),
        CurvePolicy::Degree => replay_static(trace, &ranks.degree, capacity, config),
        CurvePolicy::Presc => replay_static(trace, &ranks.presc, capacity, config),
        CurvePolicy::Ginex { every } => replay_ginex(trace, capacity, every, config),
    }
}

fn replay_dynamic(
    trace: &Trace,
    kind: DynamicKind,
    capacity: usize,
    config: &ReplayConfig,
) -> Result<RunCounts> {
    let mut cache = kind.residency(config.num_nodes, capacity)?;
    let mut miss_at = Vec::new();
    let mut counts = RunCounts::default();
    for b in trace.batches() {
        cache.access(b, &mut miss_at)?;
        counts.batch_misses.push(miss_at.len() as u64);
    }
    Ok(counts)
}

fn replay_static(
    trace: &Trace,
    ranked: &[u64],
    capacity: usize,
    config: &ReplayConfig,
) -> Result<RunCounts> {
    let selected = &ranked[..capacity.min(ranked.len())];
    let mut cached = vec![false; config.num_nodes as usize];
    for &id in selected {
        cached[id as usize] = true;
    }
    let mut counts = RunCounts {
        init_misses: selected.len() as u64,
        batch_misses: Vec::with_capacity(trace.num_batches()),
    };
    for b in trace.batches() {
        let mut misses = 0u64;
        for &id in b {
            match cached.get(id as usize) {
                Some(true) => {}
                Some(false) => misses += 1,
                None => {
                    return Err(Error::OutOfRange(format!(
                        "node {id} is not below the node count {}",
                        config.num_nodes
                    )))
                }
            }
        }
        counts.batch_misses.push(misses);
    }
    Ok(counts)
}

fn replay_ginex(
    trace: &Trace,
    capacity: usize,
    every: usize,
    config: &ReplayConfig,
) -> Result<RunCounts> {
    let batches: Vec<&[u64]> = trace.batches().collect();
    let mut counts = RunCounts::default();
    let mut carried: Vec<u64> = Vec::new();
    let bounds = config
        .first_superbatch
        .bounds(batches.len() as u64, config.superbatch as u64);
    for range in bounds {
        let sb = &batches[range.start as usize..range.end as usize];
        let cs = cheapest_plan(
            sb,
            capacity,
            every,
            &carried,
            &config.prior,
            config.page_companions.clone(),
        )
        .map_err(|e| Error::internal(e.to_string()))?;
        counts.init_misses += cs.init_reads;
        counts.batch_misses.extend_from_slice(&cs.misses);
        carried = cs.final_cache;
    }
    Ok(counts)
}

/// One point of a curve.
#[derive(Debug, Clone, PartialEq)]
pub struct CurvePoint {
    /// The policy.
    pub policy: CurvePolicy,
    /// Cache size as a fraction of the rows.
    pub fraction: f64,
    /// Cache size in rows.
    pub capacity: usize,
    /// Init rows loaded.
    pub init_misses: u64,
    /// Init plus batch misses.
    pub misses: u64,
    /// `misses / accesses`.
    pub miss_ratio: f64,
    /// Replay time of this point.
    pub seconds: f64,
}

/// Replays `trace` through every policy at every size (fractions of
/// `config.num_nodes`) on `threads` threads. Points come back in
/// (size, policy) order.
pub fn curves(
    trace: &Trace,
    policies: &[CurvePolicy],
    fractions: &[f64],
    config: &ReplayConfig,
    ranks: &StaticRanks,
    threads: usize,
) -> Result<Vec<CurvePoint>> {
    let accesses = trace.accesses().max(1) as f64;
    let mut jobs: Vec<(usize, f64, CurvePolicy)> = Vec::new();
    for &f in fractions {
        for &p in policies {
            jobs.push((jobs.len(), f, p));
        }
    }
    // Slowest first (changesets), so the threads finish together.
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&j| match jobs[j].2 {
        CurvePolicy::Ginex { .. } => 0,
        CurvePolicy::Dynamic(_) => 1,
        _ => 2,
    });
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build()
        .map_err(|e| Error::threads("replay threads", e))?;
    let done: Vec<Result<(usize, CurvePoint)>> = pool.install(|| {
        order
            .par_iter()
            .with_max_len(1)
            .map(|&j| {
                let (at, fraction, policy) = jobs[j];
                let capacity = (config.num_nodes as f64 * fraction) as usize;
                let started = std::time::Instant::now();
                let counts = replay(trace, policy, capacity, config, ranks)?;
                let misses = counts.total_misses();
                Ok((
                    at,
                    CurvePoint {
                        policy,
                        fraction,
                        capacity,
                        init_misses: counts.init_misses,
                        misses,
                        miss_ratio: misses as f64 / accesses,
                        seconds: started.elapsed().as_secs_f64(),
                    },
                ))
            })
            .collect()
    });
    let mut points: Vec<(usize, CurvePoint)> = done.into_iter().collect::<Result<_>>()?;
    points.sort_by_key(|p| p.0);
    Ok(points.into_iter().map(|p| p.1).collect())
}

/// The number of distinct ids in `trace`.
pub fn distinct_ids(trace: &Trace, num_nodes: u64) -> u64 {
    let mut seen = vec![false; num_nodes as usize];
    let mut n = 0;
    for &id in &trace.ids {
        if let Some(s) = seen.get_mut(id as usize) {
            if !*s {
                *s = true;
                n += 1;
            }
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lab's line-up is the epoch policies' registry: every policy
    /// with a feature cache is in it, under the name the epoch uses.
    #[test]
    fn the_default_line_up_covers_every_cache_policy() {
        for policy in Policy::ALL {
            match CurvePolicy::of(policy) {
                Some(curve) => {
                    assert!(CurvePolicy::DEFAULT.contains(&curve), "{policy:?}");
                    assert_eq!(curve.name(), policy.name());
                    assert_eq!(CurvePolicy::parse(policy.name()).unwrap(), curve);
                }
                None => assert!(CurvePolicy::parse(policy.name()).is_err(), "{policy:?}"),
            }
        }
        for curve in CurvePolicy::DEFAULT {
            assert_eq!(CurvePolicy::parse(&curve.name()).unwrap(), curve);
        }
        assert!(CurvePolicy::parse("ginex-k0").is_err());
    }
}
