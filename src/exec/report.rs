//! What an epoch hands its consumer (one gathered batch at a time) and what
//! it reports at the end: per-batch counters, stage times, reads.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

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
    /// A link batch's edges over its seeds; None for a node batch.
    pub link: Option<&'a crate::sample::link::LinkLabels>,
}

/// Per-batch counters (serialized as one entry of the report's `per_batch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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
    /// reuse prior): the store's recorded out-degrees read, or one pass
    /// over an older store's topology.
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
    /// Bytes read by the gather engine for feature rows (neighbour lists:
    /// `list_bytes_read`).
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
    /// Of `feature_read`, the staged init's reader's (`--pipeline full`:
    /// it runs beside the executor's gathers, so the two overlap in time).
    pub init_reader_read: Duration,
    /// Of `pages_read`, the staged init's reader's.
    pub init_reader_pages: u64,
    /// Of `feature_read`, the read rounds during which a neighbour-list
    /// read was in flight at some point (the inspector's, beside the
    /// gathers under `--pipeline full`).
    pub feature_read_beside_lists: Duration,
    /// Of `pages_read`, those read in such rounds.
    pub pages_beside_lists: u64,
    /// Of `feature_read`, the executor's read rounds during which the
    /// staged init's or read-ahead's reader had a round in flight.
    pub feature_read_beside_init: Duration,
    /// Of `pages_read`, those read in such rounds.
    pub pages_beside_init: u64,
    /// Neighbor-cache hit ratio of sampling, if a cache was used.
    pub neighbor_hit_ratio: Option<f64>,
    /// Reads sampling issued for neighbour lists that missed the neighbor
    /// cache (CSC segments a few pages apart merged into one read).
    pub list_reads: u64,
    /// Bytes those reads took.
    pub list_bytes_read: u64,
    /// Of `list_reads`, those issued while a feature read was in flight
    /// (the next superbatch's sampling beside the gathers, under `--pipeline
    /// full`): they share the device with it.
    pub list_reads_beside_gathers: u64,
    /// The bytes of those.
    pub list_bytes_beside_gathers: u64,
    /// Where the time outside the stages goes: startup, the first read,
    /// CPU seconds by role.
    pub timeline: Timeline,
}

/// When an epoch's I/O started and what CPU it spent, by role: where its
/// time outside the I/O stages goes. CPU seconds say it on a loaded
/// machine, where wall time does not.
#[derive(Debug, Clone, Copy, Default)]
pub struct Timeline {
    /// From the process's start to the epoch's (opening the store, the
    /// memory plan; set by the command that ran the epoch, zero otherwise).
    pub startup: Duration,
    /// The process's CPU time (user and system, every thread) before the
    /// epoch started.
    pub startup_cpu: Duration,
    /// From the epoch's start to its first feature read (None: it read
    /// none).
    pub first_read: Option<Duration>,
    /// From the epoch's start to its first batch handed to the consumer.
    pub first_batch: Option<Duration>,
    /// How long the device holding the feature file had a request in
    /// flight during the epoch (every process's; None where its file
    /// system has no block device: [`crate::io::device_busy`]).
    pub device_busy: Option<Duration>,
    /// The process's CPU time in user mode during the epoch.
    pub cpu_user: Duration,
    /// The process's CPU time in the kernel during the epoch.
    pub cpu_system: Duration,
    /// CPU time of the epoch's threads by role, in
    /// [`Role::ALL`](crate::io::cpu_time::Role::ALL)'s order: executor,
    /// init readers, sampling, changesets (process-wide counters: epochs
    /// running at once in one process share them).
    pub role_cpu: [Duration; 4],
    /// When the first feature read was issued (`first_read` once the
    /// epoch is over).
    pub(crate) first_read_at: Option<std::time::Instant>,
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
        self.feature_read_beside_lists += Duration::from_nanos(stats.read_ns_beside_lists);
        self.pages_beside_lists += stats.pages_beside_lists;
        self.feature_read_beside_init += Duration::from_nanos(stats.read_ns_beside_init);
        self.pages_beside_init += stats.pages_beside_init;
        if let Some(at) = stats.first_read {
            let first = self.timeline.first_read_at.get_or_insert(at);
            *first = (*first).min(at);
        }
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

    /// JSON form of the counters and stage times ([`ReportJson`] as a
    /// [`Value`]).
    pub fn to_json(&self) -> Value {
        // Integers, floats, options and a vector: serializing cannot fail
        // (a non-finite ratio is written as null, as `json!` did).
        serde_json::to_value(ReportJson::new(self)).unwrap_or_default()
    }
}

/// The report's JSON document: what [`EpochReport::to_json`] writes, with
/// the totals computed from the per-batch counters (`ginex epoch` writes
/// it at the top level of its report). Written only: readers pick the
/// keys they need from the document.
#[derive(Debug, Serialize)]
pub struct ReportJson<'a> {
    /// [`EpochReport::hits`].
    pub hits: u64,
    /// [`EpochReport::misses`].
    pub misses: u64,
    /// [`EpochReport::miss_ratio`].
    pub miss_ratio: f64,
    /// [`EpochReport::batch_misses`].
    pub batch_misses: u64,
    /// [`EpochReport::init_reads`].
    pub init_reads: u64,
    /// [`EpochReport::read_ahead`].
    pub read_ahead_rows: u64,
    /// [`EpochReport::optimal_init_reads`].
    pub optimal_init_reads: u64,
    /// [`EpochReport::superbatches`].
    pub superbatches: u64,
    /// [`EpochReport::paged_superbatches`].
    pub paged_superbatches: u64,
    /// [`EpochReport::page_companions`].
    pub page_companions: u64,
    /// [`EpochReport::planned_page_reads`].
    pub planned_page_reads: u64,
    /// [`EpochReport::optimal_total`], when the inspector planned (null
    /// otherwise).
    pub optimal_total: Option<u64>,
    /// [`EpochReport::neighbor_cache_reused`].
    pub neighbor_cache_reused: bool,
    /// [`EpochReport::pages_read`].
    pub pages_read: u64,
    /// [`EpochReport::feature_reads`].
    pub feature_reads: u64,
    /// [`EpochReport::bytes_read`].
    pub bytes_read: u64,
    /// [`EpochReport::sequential_passes`].
    pub sequential_passes: u64,
    /// [`EpochReport::neighbor_hit_ratio`].
    pub neighbor_cache_hit_ratio: Option<f64>,
    /// [`EpochReport::init_reader_pages`].
    pub init_reader_pages: u64,
    /// [`EpochReport::pages_beside_lists`].
    pub pages_beside_lists: u64,
    /// [`EpochReport::pages_beside_init`].
    pub pages_beside_init: u64,
    /// [`EpochReport::list_reads`].
    pub list_reads: u64,
    /// [`EpochReport::list_bytes_read`].
    pub list_bytes_read: u64,
    /// [`EpochReport::list_reads_beside_gathers`].
    pub list_reads_beside_gathers: u64,
    /// [`EpochReport::list_bytes_beside_gathers`].
    pub list_bytes_beside_gathers: u64,
    /// Stage times in seconds.
    pub seconds: StageSeconds,
    /// [`EpochReport::batches`].
    pub per_batch: &'a [BatchStat],
    /// [`EpochReport::optimal_misses`].
    pub optimal_misses: &'a [u64],
}

/// The stage times of a [`ReportJson`], in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StageSeconds {
    /// [`EpochReport::sample`].
    pub sample: f64,
    /// [`EpochReport::reuse_prior`].
    pub reuse_prior: f64,
    /// [`EpochReport::changeset`].
    pub changeset: f64,
    /// [`EpochReport::load_runs`].
    pub load_runs: f64,
    /// [`EpochReport::cache_init`].
    pub cache_init: f64,
    /// [`EpochReport::gather`].
    pub gather: f64,
    /// [`EpochReport::cache_update`].
    pub cache_update: f64,
    /// [`EpochReport::total`].
    pub total: f64,
    /// [`EpochReport::neighbor_cache_build`].
    pub neighbor_cache_build: f64,
    /// [`EpochReport::changeset_exposed`].
    pub changeset_exposed: f64,
    /// [`EpochReport::reuse_prior_exposed`].
    pub reuse_prior_exposed: f64,
    /// [`EpochReport::wall`].
    pub wall: f64,
    /// [`EpochReport::feature_read`] (not a stage: the reads' own time,
    /// summed over gathers).
    pub feature_read: f64,
    /// [`EpochReport::init_reader_read`].
    pub init_reader_read: f64,
    /// [`EpochReport::feature_read_beside_lists`].
    pub feature_read_beside_lists: f64,
    /// [`EpochReport::feature_read_beside_init`].
    pub feature_read_beside_init: f64,
    /// [`EpochReport::predicted_read`].
    pub predicted_read: f64,
    /// [`Timeline::startup`] (not a stage, as every key below).
    pub startup: f64,
    /// [`Timeline::startup_cpu`].
    pub startup_cpu: f64,
    /// [`Timeline::first_read`].
    pub first_read: Option<f64>,
    /// [`Timeline::first_batch`].
    pub first_batch: Option<f64>,
    /// [`Timeline::device_busy`].
    pub device_busy: Option<f64>,
    /// [`Timeline::cpu_user`].
    pub cpu_user: f64,
    /// [`Timeline::cpu_system`].
    pub cpu_system: f64,
    /// [`Timeline::role_cpu`]: the executor's thread.
    pub cpu_executor: f64,
    /// [`Timeline::role_cpu`]: the init readers.
    pub cpu_init_reader: f64,
    /// [`Timeline::role_cpu`]: sampling.
    pub cpu_sampling: f64,
    /// [`Timeline::role_cpu`]: changesets.
    pub cpu_changesets: f64,
}

impl<'a> ReportJson<'a> {
    /// The document of `r`.
    pub fn new(r: &'a EpochReport) -> Self {
        let t = &r.timeline;
        ReportJson {
            hits: r.hits(),
            misses: r.misses(),
            miss_ratio: r.miss_ratio(),
            batch_misses: r.batch_misses(),
            init_reads: r.init_reads,
            read_ahead_rows: r.read_ahead,
            optimal_init_reads: r.optimal_init_reads,
            superbatches: r.superbatches,
            paged_superbatches: r.paged_superbatches,
            page_companions: r.page_companions,
            planned_page_reads: r.planned_page_reads,
            optimal_total: (!r.optimal_misses.is_empty()).then(|| r.optimal_total()),
            neighbor_cache_reused: r.neighbor_cache_reused,
            pages_read: r.pages_read,
            feature_reads: r.feature_reads,
            bytes_read: r.bytes_read,
            sequential_passes: r.sequential_passes,
            neighbor_cache_hit_ratio: r.neighbor_hit_ratio,
            init_reader_pages: r.init_reader_pages,
            pages_beside_lists: r.pages_beside_lists,
            pages_beside_init: r.pages_beside_init,
            list_reads: r.list_reads,
            list_bytes_read: r.list_bytes_read,
            list_reads_beside_gathers: r.list_reads_beside_gathers,
            list_bytes_beside_gathers: r.list_bytes_beside_gathers,
            seconds: StageSeconds {
                sample: r.sample.as_secs_f64(),
                reuse_prior: r.reuse_prior.as_secs_f64(),
                changeset: r.changeset.as_secs_f64(),
                load_runs: r.load_runs.as_secs_f64(),
                cache_init: r.cache_init.as_secs_f64(),
                gather: r.gather.as_secs_f64(),
                cache_update: r.cache_update.as_secs_f64(),
                total: r.total().as_secs_f64(),
                neighbor_cache_build: r.neighbor_cache_build.as_secs_f64(),
                changeset_exposed: r.changeset_exposed.as_secs_f64(),
                reuse_prior_exposed: r.reuse_prior_exposed.as_secs_f64(),
                wall: r.wall.as_secs_f64(),
                feature_read: r.feature_read.as_secs_f64(),
                init_reader_read: r.init_reader_read.as_secs_f64(),
                feature_read_beside_lists: r.feature_read_beside_lists.as_secs_f64(),
                feature_read_beside_init: r.feature_read_beside_init.as_secs_f64(),
                predicted_read: r.predicted_read.as_secs_f64(),
                startup: t.startup.as_secs_f64(),
                startup_cpu: t.startup_cpu.as_secs_f64(),
                first_read: t.first_read.map(|d| d.as_secs_f64()),
                first_batch: t.first_batch.map(|d| d.as_secs_f64()),
                device_busy: t.device_busy.map(|d| d.as_secs_f64()),
                cpu_user: t.cpu_user.as_secs_f64(),
                cpu_system: t.cpu_system.as_secs_f64(),
                cpu_executor: t.role_cpu[0].as_secs_f64(),
                cpu_init_reader: t.role_cpu[1].as_secs_f64(),
                cpu_sampling: t.role_cpu[2].as_secs_f64(),
                cpu_changesets: t.role_cpu[3].as_secs_f64(),
            },
            per_batch: &r.batches,
            optimal_misses: &r.optimal_misses,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The document `to_json` wrote with `json!` before the serde form
    /// (with the counters added since: sequential passes, read times, list
    /// reads).
    fn json_macro_form(r: &EpochReport) -> Value {
        use serde_json::json;
        let mut seconds = json!({
                "sample": r.sample.as_secs_f64(), "reuse_prior": r.reuse_prior.as_secs_f64(), "changeset": r.changeset.as_secs_f64(),
                "load_runs": r.load_runs.as_secs_f64(), "cache_init": r.cache_init.as_secs_f64(),
                "gather": r.gather.as_secs_f64(), "cache_update": r.cache_update.as_secs_f64(),
                "total": r.total().as_secs_f64(), "neighbor_cache_build": r.neighbor_cache_build.as_secs_f64(),
                "changeset_exposed": r.changeset_exposed.as_secs_f64(), "reuse_prior_exposed": r.reuse_prior_exposed.as_secs_f64(), "wall": r.wall.as_secs_f64(),
                "feature_read": r.feature_read.as_secs_f64(), "init_reader_read": r.init_reader_read.as_secs_f64(),
                "feature_read_beside_lists": r.feature_read_beside_lists.as_secs_f64(),
                "feature_read_beside_init": r.feature_read_beside_init.as_secs_f64(),
                "predicted_read": r.predicted_read.as_secs_f64(),
        });
        let timeline = json!({
                "startup": r.timeline.startup.as_secs_f64(), "startup_cpu": r.timeline.startup_cpu.as_secs_f64(),
                "first_read": r.timeline.first_read.map(|d| d.as_secs_f64()),
                "first_batch": r.timeline.first_batch.map(|d| d.as_secs_f64()),
                "device_busy": r.timeline.device_busy.map(|d| d.as_secs_f64()),
                "cpu_user": r.timeline.cpu_user.as_secs_f64(), "cpu_system": r.timeline.cpu_system.as_secs_f64(),
                "cpu_executor": r.timeline.role_cpu[0].as_secs_f64(), "cpu_init_reader": r.timeline.role_cpu[1].as_secs_f64(),
                "cpu_sampling": r.timeline.role_cpu[2].as_secs_f64(), "cpu_changesets": r.timeline.role_cpu[3].as_secs_f64(),
        });
        if let (Some(s), Value::Object(t)) = (seconds.as_object_mut(), timeline) {
            s.extend(t);
        }
        json!({
            "hits": r.hits(), "misses": r.misses(), "miss_ratio": r.miss_ratio(),
            "batch_misses": r.batch_misses(), "init_reads": r.init_reads, "read_ahead_rows": r.read_ahead,
            "optimal_init_reads": r.optimal_init_reads,
            "superbatches": r.superbatches, "paged_superbatches": r.paged_superbatches,
            "page_companions": r.page_companions, "planned_page_reads": r.planned_page_reads,
            "optimal_total": (!r.optimal_misses.is_empty()).then(|| r.optimal_total()),
            "neighbor_cache_reused": r.neighbor_cache_reused,
            "pages_read": r.pages_read, "feature_reads": r.feature_reads, "bytes_read": r.bytes_read,
            "sequential_passes": r.sequential_passes,
            "neighbor_cache_hit_ratio": r.neighbor_hit_ratio,
            "init_reader_pages": r.init_reader_pages, "pages_beside_lists": r.pages_beside_lists,
            "pages_beside_init": r.pages_beside_init,
            "list_reads": r.list_reads, "list_bytes_read": r.list_bytes_read,
            "list_reads_beside_gathers": r.list_reads_beside_gathers,
            "list_bytes_beside_gathers": r.list_bytes_beside_gathers,
            "seconds": seconds,
            "per_batch": r.batches.iter().map(|b| json!({"batch": b.batch, "hits": b.hits, "misses": b.misses, "checksum": b.checksum})).collect::<Vec<_>>(),
            "optimal_misses": r.optimal_misses,
        })
    }

    #[test]
    fn the_report_json_keeps_its_keys_and_values() {
        let empty = EpochReport::default();
        assert_eq!(empty.to_json(), json_macro_form(&empty));
        assert!(empty.to_json()["optimal_total"].is_null());
        let r = EpochReport {
            batches: vec![
                BatchStat {
                    batch: 0,
                    hits: 3,
                    misses: 5,
                    checksum: 0xdead_beef,
                },
                BatchStat {
                    batch: 1,
                    hits: 7,
                    misses: 1,
                    checksum: 1,
                },
            ],
            optimal_misses: vec![4, 1],
            init_reads: 9,
            read_ahead: 2,
            optimal_init_reads: 8,
            paged_superbatches: 1,
            superbatches: 2,
            page_companions: 6,
            planned_page_reads: 11,
            changeset_exposed: Duration::from_millis(5),
            wall: Duration::from_millis(1500),
            sample: Duration::from_millis(250),
            changeset: Duration::from_millis(20),
            load_runs: Duration::from_millis(3),
            cache_init: Duration::from_millis(40),
            gather: Duration::from_millis(700),
            cache_update: Duration::from_millis(9),
            reuse_prior: Duration::from_millis(12),
            reuse_prior_exposed: Duration::from_millis(1),
            neighbor_cache_build: Duration::from_millis(30),
            neighbor_cache_reused: true,
            pages_read: 100,
            feature_reads: 60,
            bytes_read: 409_600,
            neighbor_hit_ratio: Some(0.25),
            list_reads: 13,
            list_bytes_read: 53_248,
            init_reader_read: Duration::from_millis(7),
            init_reader_pages: 30,
            feature_read_beside_lists: Duration::from_millis(6),
            pages_beside_lists: 20,
            feature_read_beside_init: Duration::from_millis(4),
            pages_beside_init: 10,
            list_reads_beside_gathers: 4,
            list_bytes_beside_gathers: 16_384,
            timeline: Timeline {
                startup: Duration::from_millis(600),
                startup_cpu: Duration::from_millis(150),
                first_read: Some(Duration::from_millis(250)),
                first_batch: None,
                device_busy: Some(Duration::from_millis(700)),
                cpu_user: Duration::from_millis(900),
                cpu_system: Duration::from_millis(300),
                role_cpu: [1, 2, 3, 4].map(Duration::from_millis),
                first_read_at: None,
            },
            ..EpochReport::default()
        };
        let v = r.to_json();
        assert_eq!(v, json_macro_form(&r));
        assert_eq!(v["optimal_total"], 13);
        assert_eq!(v["per_batch"][0]["checksum"], 0xdead_beef_u32);
        assert_eq!(v["seconds"]["wall"], 1.5);
        assert_eq!(v["seconds"]["first_read"], 0.25);
        assert!(v["seconds"]["first_batch"].is_null());
        assert_eq!(v["seconds"]["cpu_changesets"], 0.004);
    }
}
