//! What an epoch hands its consumer (one gathered batch at a time) and what
//! it reports at the end: per-batch counters, stage times, reads.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};

use crate::sample::sampler::Hop;
use crate::store::gather::GatherStats;

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
    /// Of `init_reads`, the rows of a superbatch's init read while the
    /// superbatch before it ran (`ginex`, [`Pipeline::Full`]).
    ///
    /// [`Pipeline::Full`]: crate::exec::pipeline::Pipeline::Full
    pub read_ahead: u64,
    /// The init reads the inspector planned (`ginex` only; equals
    /// `init_reads` when the executor followed the plan).
    pub optimal_init_reads: u64,
    /// Superbatches whose changesets admit page companions, of
    /// `superbatches` (`ginex`).
    pub paged_superbatches: u64,
    /// Superbatches executed (`ginex`).
    pub superbatches: u64,
    /// Page companions read: rows on pages a batch's misses read, cached
    /// for a later batch (`ginex`; not counted as misses: their pages are
    /// read anyway).
    pub page_companions: u64,
    /// Feature pages the inspector's plans read, summed over superbatches
    /// (`ginex`; the executor's `pages_read` differs where a read-ahead
    /// chunk or a gather splits a page's rows between two reads).
    pub planned_page_reads: u64,
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
    /// Ranking nodes by out-degree for the changesets (`ginex` with a
    /// reuse prior): one pass over the topology.
    pub reuse_prior: Duration,
    /// Reuse-prior time not hidden behind the first superbatch's sampling.
    pub reuse_prior_exposed: Duration,
    /// Building the neighbor cache (zero when an existing one was reused).
    pub neighbor_cache_build: Duration,
    /// Whether an existing neighbor cache was opened instead of built.
    pub neighbor_cache_reused: bool,
    /// Distinct feature pages the gather engine needed (its gathers' page
    /// runs, each counted once per gather).
    pub pages_read: u64,
    /// Feature reads it issued: needed pages a few pages apart are merged
    /// into one read, so this is at most `pages_read`.
    pub feature_reads: u64,
    /// Bytes read by the gather engine (rows and neighbor lists).
    pub bytes_read: u64,
    /// Feature gathers read as one sequential pass over their span instead
    /// of random reads (see [`crate::store::read_cost`]).
    pub sequential_passes: u64,
    /// What the read-cost model predicted the feature reads would take
    /// (device time at queue depth 64, summed over gathers).
    pub predicted_read: Duration,
    /// What the feature reads took (wall time inside the reader, summed
    /// over gathers; the staged init's reader runs beside the batches).
    pub feature_read: Duration,
    /// Neighbor-cache hit ratio of sampling, if a cache was used.
    pub neighbor_hit_ratio: Option<f64>,
}

impl EpochReport {
    /// Total hits.
    pub fn hits(&self) -> u64 {
        self.batches.iter().map(|b| b.hits).sum()
    }

    /// Adds a gatherer's feature reads (`stats`) to the counters.
    pub(crate) fn add_gather_stats(&mut self, stats: &GatherStats) {
        self.pages_read += stats.unique_pages;
        self.feature_reads += stats.feature_reads;
        self.bytes_read += stats.bytes_read;
        self.sequential_passes += stats.sequential_passes;
        self.predicted_read += Duration::from_nanos(stats.predicted_read_ns);
        self.feature_read += Duration::from_nanos(stats.read_ns);
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
            + self.reuse_prior
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
            "batch_misses": self.batch_misses(), "init_reads": self.init_reads, "read_ahead_rows": self.read_ahead,
            "optimal_init_reads": self.optimal_init_reads,
            "superbatches": self.superbatches, "paged_superbatches": self.paged_superbatches,
            "page_companions": self.page_companions, "planned_page_reads": self.planned_page_reads, "optimal_total": (!self.optimal_misses.is_empty()).then(|| self.optimal_total()),
            "neighbor_cache_reused": self.neighbor_cache_reused,
            "pages_read": self.pages_read, "feature_reads": self.feature_reads, "bytes_read": self.bytes_read,
            "sequential_passes": self.sequential_passes,
            "neighbor_cache_hit_ratio": self.neighbor_hit_ratio,
            "seconds": {
                "sample": self.sample.as_secs_f64(), "reuse_prior": self.reuse_prior.as_secs_f64(), "changeset": self.changeset.as_secs_f64(),
                "load_runs": self.load_runs.as_secs_f64(), "cache_init": self.cache_init.as_secs_f64(),
                "gather": self.gather.as_secs_f64(), "cache_update": self.cache_update.as_secs_f64(),
                "total": self.total().as_secs_f64(), "neighbor_cache_build": self.neighbor_cache_build.as_secs_f64(),
                "changeset_exposed": self.changeset_exposed.as_secs_f64(), "reuse_prior_exposed": self.reuse_prior_exposed.as_secs_f64(), "wall": self.wall.as_secs_f64(),
                "feature_read": self.feature_read.as_secs_f64(), "predicted_read": self.predicted_read.as_secs_f64(),
            },
            "per_batch": self.batches.iter().map(|b| json!({"batch": b.batch, "hits": b.hits, "misses": b.misses, "checksum": b.checksum})).collect::<Vec<_>>(),
            "optimal_misses": self.optimal_misses,
        })
    }
}
