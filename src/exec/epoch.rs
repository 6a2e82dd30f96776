//! One epoch of data preparation, exactly as training runs it, for any
//! policy: sample, (inspect and precompute changesets,) gather each batch's
//! feature rows through the policy's cache, hand them to a consumer.

use std::cell::RefCell;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::cache::dynamic::{new_row_cache, RowGather};
use crate::cache::feature_cache::{FeatureCache, RowSource};
use crate::cache::static_policy::{top_out_degree, top_presampled};
use crate::error::{Error, Result};
use crate::exec::mmap::MmapStore;
use crate::exec::pipeline::{run_ginex, Pipeline};
use crate::exec::policy::Policy;
use crate::exec::run_dir::RunDir;
use crate::format::ncache::Codec;
use crate::sample::ncache_reuse::{open_or_build, NcacheOrigin};
use crate::sample::sampler::{EpochSampler, Hop};
use crate::sample::source::{ListCache, StoreSource};
use crate::store::gather::{GatherOptions, Gatherer};
use crate::store::Store;

/// What an epoch runs.
#[derive(Debug, Clone)]
pub struct EpochConfig {
    /// Feature-cache policy.
    pub policy: Policy,
    /// Feature-cache capacity in rows.
    pub feature_cache_rows: usize,
    /// Neighbor-cache budget in bytes (0 = none; unused by `mmap`).
    pub neighbor_cache_bytes: u64,
    /// Seeds per batch.
    pub batch_size: usize,
    /// Fanouts.
    pub fanouts: Vec<i64>,
    /// Batches per superbatch (`ginex`).
    pub superbatch: u64,
    /// k of the k-hop approximation (`ginex`).
    pub changeset_every: usize,
    /// Run seed.
    pub seed: u64,
    /// Epoch number.
    pub epoch: u64,
    /// Pre-sampling epochs (`presc`).
    pub presc_rounds: u64,
    /// Sampling workers (`ginex`'s superbatch sampling).
    pub workers: usize,
    /// Directory for runtime files.
    pub run_dir: PathBuf,
    /// The neighbor cache file (None: the default location beside the
    /// store, see [`crate::sample::ncache_reuse`]); built there when missing.
    pub neighbor_cache: Option<PathBuf>,
    /// Keep runtime files after each superbatch (in this run's own
    /// directory under `run_dir`, named in the report).
    pub keep_runs: bool,
    /// How the `ginex` inspector overlaps the executor.
    pub pipeline: Pipeline,
    /// `ginex`: each superbatch starts with the cache the previous one ended
    /// with (false: every superbatch's cache is rebuilt from nothing, as
    /// Ginex does; kept for comparison).
    pub carry_over: bool,
    /// Stop after this many batches (None = the whole epoch).
    pub max_batches: Option<u64>,
    /// Seed nodes: the training split shuffled per epoch (None), or these
    /// nodes in this order (evaluation, prediction).
    pub seed_nodes: Option<Vec<u64>>,
}

/// One gathered batch, as the consumer receives it.
pub struct EpochBatch<'a> {
    /// Batch index in the epoch.
    pub batch: u64,
    /// Sampled ids, seeds first.
    pub ids: &'a [u64],
    /// Seeds: `ids[..num_seeds]`.
    pub num_seeds: usize,
    /// Hops, input layer first.
    pub hops: &'a [Hop],
    /// `ids.len()` rows in the store dtype, in `ids` order.
    pub rows: &'a [u8],
}

/// Per-batch counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchStat {
    /// Batch index.
    pub batch: u64,
    /// Rows served from the cache.
    pub hits: u64,
    /// Rows read from disk (or the page cache, for `mmap`).
    pub misses: u64,
    /// CRC-32 of the gathered rows.
    pub checksum: u32,
}

/// What an epoch did.
#[derive(Debug, Clone, Default)]
pub struct EpochReport {
    /// Per-batch counters.
    pub batches: Vec<BatchStat>,
    /// Optimal misses per batch from the inspector (`ginex` only).
    pub optimal_misses: Vec<u64>,
    /// Rows read to fill the cache before batches run: the static
    /// policies' preload, `ginex`'s superbatch inits. Counted as misses.
    pub init_reads: u64,
    /// The init reads the inspector planned (`ginex` only; equals
    /// `init_reads` when the executor followed the plan).
    pub optimal_init_reads: u64,
    /// Changeset precomputation time not hidden behind sampling.
    pub changeset_exposed: Duration,
    /// Wall time of the whole epoch (stages overlap under a pipeline, so
    /// this is less than their sum).
    pub wall: Duration,
    /// This run's runtime-file directory, when its files were kept.
    pub kept_runs: Option<PathBuf>,
    /// Stage times.
    pub sample: Duration,
    /// Changeset precomputation time (`ginex`).
    pub changeset: Duration,
    /// Reading runtime files back (`ginex`).
    pub load_runs: Duration,
    /// Cache initialisation (static selection included).
    pub cache_init: Duration,
    /// Gathering rows.
    pub gather: Duration,
    /// Applying updates (`ginex`).
    pub cache_update: Duration,
    /// Building the neighbor cache (zero when an existing one was reused).
    pub neighbor_cache_build: Duration,
    /// Whether an existing neighbor cache was opened instead of built.
    pub neighbor_cache_reused: bool,
    /// Pages read by the gather engine.
    pub pages_read: u64,
    /// Bytes read by the gather engine (rows and neighbor lists).
    pub bytes_read: u64,
    /// Neighbor-cache hit ratio of sampling, if a cache was used.
    pub neighbor_hit_ratio: Option<f64>,
}

impl EpochReport {
    /// Total hits.
    pub fn hits(&self) -> u64 {
        self.batches.iter().map(|b| b.hits).sum()
    }

    /// Total misses: rows read by batches plus rows read at init.
    pub fn misses(&self) -> u64 {
        self.batch_misses() + self.init_reads
    }

    /// Misses of the batches alone.
    pub fn batch_misses(&self) -> u64 {
        self.batches.iter().map(|b| b.misses).sum()
    }

    /// The optimum of the `ginex` schedule: planned init reads plus the
    /// inspector's per-batch misses.
    pub fn optimal_total(&self) -> u64 {
        self.optimal_init_reads + self.optimal_misses.iter().sum::<u64>()
    }

    /// Misses / accesses (init reads count as misses; accesses are the
    /// batches' rows).
    pub fn miss_ratio(&self) -> f64 {
        self.misses() as f64 / (self.hits() + self.batch_misses()).max(1) as f64
    }

    /// Data-preparation time (everything but the offline neighbor-cache build).
    pub fn total(&self) -> Duration {
        self.sample
            + self.changeset
            + self.load_runs
            + self.cache_init
            + self.gather
            + self.cache_update
    }

    /// JSON form of the counters and stage times.
    pub fn to_json(&self) -> Value {
        json!({
            "hits": self.hits(), "misses": self.misses(), "miss_ratio": self.miss_ratio(),
            "batch_misses": self.batch_misses(), "init_reads": self.init_reads,
            "optimal_init_reads": self.optimal_init_reads,
            "neighbor_cache_reused": self.neighbor_cache_reused,
            "pages_read": self.pages_read, "bytes_read": self.bytes_read,
            "neighbor_cache_hit_ratio": self.neighbor_hit_ratio,
            "seconds": {
                "sample": self.sample.as_secs_f64(), "changeset": self.changeset.as_secs_f64(),
                "load_runs": self.load_runs.as_secs_f64(), "cache_init": self.cache_init.as_secs_f64(),
                "gather": self.gather.as_secs_f64(), "cache_update": self.cache_update.as_secs_f64(),
                "total": self.total().as_secs_f64(), "neighbor_cache_build": self.neighbor_cache_build.as_secs_f64(),
                "changeset_exposed": self.changeset_exposed.as_secs_f64(), "wall": self.wall.as_secs_f64(),
            },
            "per_batch": self.batches.iter().map(|b| json!({"batch": b.batch, "hits": b.hits, "misses": b.misses, "checksum": b.checksum})).collect::<Vec<_>>(),
            "optimal_misses": self.optimal_misses,
        })
    }
}

/// The gather engine as a cache miss path.
struct GatherRows<'a> {
    store: &'a Store,
    gatherer: RefCell<Gatherer>,
}

impl RowSource for GatherRows<'_> {
    fn row_bytes(&self) -> usize {
        self.store.layout().row_bytes()
    }
    fn read_rows(&self, ids: &[u64], out: &mut [u8]) -> Result<()> {
        self.gatherer.borrow_mut().gather(self.store, ids, out)
    }
}

pub(crate) fn make_sampler<'s>(
    source: &'s dyn crate::sample::source::NeighborSource,
    config: &EpochConfig,
    train: &[u64],
) -> Result<EpochSampler<'s>> {
    match &config.seed_nodes {
        Some(order) => EpochSampler::with_order(
            source,
            order.clone(),
            config.batch_size,
            config.fanouts.clone(),
            config.seed,
            config.epoch,
        ),
        None => EpochSampler::new(
            source,
            train,
            config.batch_size,
            config.fanouts.clone(),
            config.seed,
            config.epoch,
        ),
    }
}

/// Runs one epoch of `config` on `store`, calling `consume` for every batch.
pub fn run_epoch(
    store: &Store,
    config: &EpochConfig,
    consume: &mut dyn FnMut(&EpochBatch<'_>) -> Result<()>,
) -> Result<EpochReport> {
    let train = store.splits()?.map(|s| s.train).unwrap_or_default();
    if config.seed_nodes.is_none() && train.is_empty() {
        return Err(Error::invalid_argument(format!(
            "{} has no training nodes (no splits file or an empty train split)",
            store.dir().display()
        )));
    }
    let started = Instant::now();
    let mut report = EpochReport::default();
    if config.policy == Policy::Mmap {
        let mapped = MmapStore::open(store)?;
        let sampler = make_sampler(&mapped, config, &train)?;
        run_per_batch(
            store,
            config,
            &sampler,
            Mode::Mmap(&mapped),
            &mut report,
            consume,
        )?;
        return Ok(report);
    }

    // Neighbor cache: opened where it was built before (offline), built
    // there first when missing.
    let ncache = if config.neighbor_cache_bytes > 0 {
        let (cache, _, origin) = open_or_build(
            store,
            Codec::BlockBitpack,
            config.neighbor_cache_bytes,
            config.neighbor_cache.as_deref(),
        )?;
        if let NcacheOrigin::Built(took) = origin {
            report.neighbor_cache_build = took;
        }
        report.neighbor_cache_reused = origin == NcacheOrigin::Reused;
        Some(cache)
    } else {
        None
    };
    let options = GatherOptions::default();
    let source = StoreSource::new(
        store,
        ncache.as_ref().map(|c| c as &dyn ListCache),
        &options,
    )?;
    let sampler = make_sampler(&source, config, &train)?;
    let rows = GatherRows {
        store,
        gatherer: RefCell::new(Gatherer::new(store, &options)?),
    };
    let capacity = config.feature_cache_rows;
    let result = match config.policy {
        Policy::Ginex => (|| {
            let run_dir = RunDir::create(&config.run_dir)?;
            run_ginex(
                config,
                &sampler,
                &rows,
                store.num_nodes(),
                run_dir.path(),
                &mut report,
                consume,
            )?;
            if config.keep_runs {
                report.kept_runs = Some(run_dir.keep());
            }
            Ok(())
        })(),
        Policy::Lru | Policy::Sieve | Policy::S3fifo | Policy::Clock => {
            let kind = config
                .policy
                .dynamic()
                .ok_or_else(|| Error::invalid_argument("internal: not a dynamic policy"))?;
            let mut cache = new_row_cache(
                kind,
                store.num_nodes(),
                capacity,
                store.layout().row_bytes(),
            )?;
            run_per_batch(
                store,
                config,
                &sampler,
                Mode::Dynamic(cache.as_mut(), &rows),
                &mut report,
                consume,
            )
        }
        Policy::Degree | Policy::Presc | Policy::None => {
            let started = Instant::now();
            let selected = match config.policy {
                Policy::Degree => top_out_degree(store, capacity)?,
                Policy::Presc => top_presampled(
                    &source,
                    &train,
                    config.batch_size,
                    &config.fanouts,
                    config.seed,
                    config.presc_rounds,
                    capacity,
                )?,
                _ => Vec::new(),
            };
            let mut cache = FeatureCache::new(
                store.num_nodes(),
                if config.policy == Policy::None {
                    0
                } else {
                    capacity
                },
                store.layout().row_bytes(),
            )?;
            report.init_reads = cache.init(&selected, &rows)?;
            report.cache_init = started.elapsed();
            run_per_batch(
                store,
                config,
                &sampler,
                Mode::Static(&mut cache, &rows),
                &mut report,
                consume,
            )
        }
        Policy::Mmap => Err(Error::invalid_argument(
            "internal: the mmap policy runs before the cache policies",
        )),
    };
    let stats = rows.gatherer.borrow().stats();
    report.pages_read = stats.unique_pages;
    report.bytes_read = stats.bytes_read;
    if ncache.is_some() {
        let c = source.counters();
        report.neighbor_hit_ratio =
            Some(c.cache_hits as f64 / (c.cache_hits + c.cache_misses).max(1) as f64);
    }
    drop(ncache);
    report.wall = started.elapsed();
    result.map(|()| report)
}

enum Mode<'a, 'b> {
    Mmap(&'a MmapStore<'b>),
    Dynamic(&'a mut dyn RowGather, &'a GatherRows<'b>),
    Static(&'a mut FeatureCache, &'a GatherRows<'b>),
}

/// Sample-then-gather per batch (every policy but `ginex`).
fn run_per_batch(
    store: &Store,
    config: &EpochConfig,
    sampler: &EpochSampler<'_>,
    mut mode: Mode<'_, '_>,
    report: &mut EpochReport,
    consume: &mut dyn FnMut(&EpochBatch<'_>) -> Result<()>,
) -> Result<()> {
    let rb = store.layout().row_bytes();
    let batches = config
        .max_batches
        .map_or(sampler.num_batches(), |m| m.min(sampler.num_batches()));
    let mut out = Vec::new();
    for b in 0..batches {
        let started = Instant::now();
        let batch = sampler.sample(b)?;
        report.sample += started.elapsed();
        out.resize(batch.ids.len() * rb, 0);
        let started = Instant::now();
        let misses = match &mut mode {
            Mode::Mmap(m) => {
                m.gather(&batch.ids, &mut out)?;
                batch.ids.len() as u64
            }
            Mode::Dynamic(cache, rows) => cache.gather(&batch.ids, &mut out, *rows)?,
            Mode::Static(cache, rows) => cache.gather(&batch.ids, &mut out, *rows)?,
        };
        report.gather += started.elapsed();
        report.batches.push(BatchStat {
            batch: b,
            hits: batch.ids.len() as u64 - misses,
            misses,
            checksum: crate::format::crc32(&out),
        });
        consume(&EpochBatch {
            batch: b,
            ids: &batch.ids,
            num_seeds: batch.num_seeds,
            hops: &batch.hops,
            rows: &out,
        })?;
    }
    Ok(())
}
