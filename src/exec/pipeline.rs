//! The `ginex` policy's superbatch loop (Ginex §3.1, Fig. 9): for every
//! superbatch `s`, sample it (S), precompute its changesets from the cache
//! the previous superbatch ends with (C), then execute it (E): init the
//! cache, and per batch gather, hand the rows to the consumer, apply the
//! update.
//!
//! Dependencies: C(s) needs S(s) and C(s−1) (its final cache); E(s) needs
//! C(s) and E(s−1). Three schedules honour them, and every one writes the
//! same runtime files and gathers the same bytes — only the overlap
//! differs:
//!
//! * [`Pipeline::Serial`] — S(0) C(0) E(0) S(1) C(1) E(1) …
//! * [`Pipeline::Overlap`] — the paper's: C(s) runs while S(s+1) samples,
//!   then E(s) runs alone (sampling and the main loop both want the I/O):
//!   S(0) | C(0)∥S(1) | E(0) | C(1)∥S(2) | E(1) …
//! * [`Pipeline::Full`] (the default) — sampling and changesets of the
//!   next superbatch also overlap the main loop of this one, so a trainer
//!   consuming batches never waits for the inspector while the next
//!   superbatch is prepared; and the init rows of a superbatch are read by
//!   a thread of their own while its batches run, each batch waiting only
//!   for the chunks it needs ([`crate::exec::staged_init`]). C(0) has no
//!   main loop to hide behind, but superbatch 0 starts from an empty cache,
//!   so its init is known once it is sampled
//!   ([`fresh_init`](crate::inspect::changeset::fresh_init)): the executor
//!   reads it while C(0) runs. Its `cache_init` time is the time the
//!   executor waited for init rows.
//!
//! At most two superbatches' runtime files exist at any time (a superbatch's
//! files are removed right after it executes, unless they are kept, and
//! with it whenever a stage drops it unexecuted: after an error, or when
//! the stage after it is gone; see
//! [`OwnedFiles`](crate::inspect::superbatch::OwnedFiles)). The executor
//! streams a superbatch's records and updates from them a batch at a time
//! ([`SuperbatchReader`]); what it looks ahead with is the
//! superbatch's access summary, a few bytes per cache row.
//!
//! The changesets' [`ReusePrior`] (a pass over the topology) is computed
//! once, before C(0) needs it: beside S(0) under `overlap` and `full`,
//! first under `serial`. The report counts its time, and the part of it
//! that ran on after S(0) finished as not hidden. (Run after S(0) instead,
//! beside the first init's reads, it spares S(0) a core, but its count,
//! 4 bytes a node, then meets a filling cache and raises the peak memory;
//! measured in `docs/performance.md`, "Where the reuse prior runs".)

use std::sync::{mpsc, OnceLock};
use std::time::{Duration, Instant};

use crate::cache::feature_cache::{init_chunk_rows, FeatureCache, RowSource};
use crate::error::{Error, Result};
use crate::exec::access_summary::AccessSummary;
use crate::exec::config::EpochConfig;
pub use crate::exec::config::Pipeline;
use crate::exec::read_ahead::{plan_read_ahead, ReadAhead};
use crate::exec::report::{BatchStat, EpochBatch, EpochReport};
use crate::exec::rows::GatherRows;
use crate::exec::staged_init::{
    chunks_in_page_order, join_reader, spawn_reader, with_staged_init, Arrivals, InitChunk,
};
use crate::format::pages::FeatureLayout;
use crate::inspect::changeset::{fresh_init, Changesets, PageGroups, ReusePrior, Update};
use crate::inspect::superbatch::{
    precompute_changesets, sample_superbatch, OwnedFiles, RunParams, SampledRecord,
    SampledSuperbatch, SuperbatchReader, SuperbatchSpec,
};
use crate::sample::sampler::{decode_hops, EpochSampler};
use crate::store::gather::GatherStats;

/// A superbatch whose changesets are computed and written. Its records
/// and updates stay in its files (the executor streams them); it keeps
/// only what the executor looks ahead with.
struct Prepared {
    spec: SuperbatchSpec,
    /// Removed when dropped, unless the run keeps its runtime files.
    files: OwnedFiles,
    /// `C[0]`, for the read-ahead of the superbatch before it.
    init: Vec<u64>,
    /// The changesets' statistics (`updates` and `final_cache` emptied).
    stats: Changesets,
    /// Which batches use the rows of the init and of the final cache.
    summary: AccessSummary,
    sample_time: Duration,
    changeset_time: Duration,
    /// Time the changesets ran with no sampling beside them.
    changeset_exposed: Duration,
    /// The reuse prior's time and the part of it not hidden behind S(0)
    /// (the first superbatch carries them; zero on the others).
    prior_time: Duration,
    prior_exposed: Duration,
}

/// Computes the changesets' reuse prior (a pass over the topology).
pub(crate) type MakePrior<'a> = &'a (dyn Fn() -> Result<ReusePrior> + Sync);

/// The superbatches of an epoch of `total` batches on the store `store_id`
/// identifies.
fn specs(
    config: &EpochConfig,
    total: u64,
    store_id: u32,
    reuse_prior: bool,
    rows_per_page: u64,
) -> Vec<SuperbatchSpec> {
    let per_sb = config.superbatch.max(1);
    let run = RunParams {
        store_id,
        seed: config.seed,
        epoch: config.epoch,
        seed_order: RunParams::seed_order_of(config.seed_nodes.as_deref()),
        batch_size: config.batch_size as u64,
        fanouts: config.fanouts.clone(),
        carry_over: config.carry_over,
        reuse_prior,
    };
    (0..total.div_ceil(per_sb))
        .map(|sb| {
            let first = sb * per_sb;
            SuperbatchSpec {
                index: sb,
                first_batch: first,
                num_batches: per_sb.min(total - first),
                workers: config.workers.max(1),
                capacity: config.feature_cache_rows,
                every: config.changeset_every.max(1),
                page_companions: PageGroups::of(rows_per_page).filter(|_| config.page_companions),
                run: run.clone(),
            }
        })
        .collect()
}

/// The inspector side: samples superbatches, and precomputes their
/// changesets in order, carrying each one's final cache into the next.
struct Inspector<'a> {
    sampler: &'a EpochSampler<'a>,
    dir: &'a std::path::Path,
    specs: Vec<SuperbatchSpec>,
    carry_over: bool,
    make_prior: Option<MakePrior<'a>>,
    prior: OnceLock<ReusePrior>,
}

impl Inspector<'_> {
    fn sample(&self, s: usize) -> Result<SampledSuperbatch> {
        sample_superbatch(self.sampler, &self.specs[s], self.dir)
    }

    /// Computes the reuse prior unless it is computed already (none when
    /// the run has no prior); returns the time it took and when it ended.
    fn compute_prior(&self) -> Result<(Duration, Instant)> {
        let started = Instant::now();
        if self.prior.get().is_none() {
            let prior = match self.make_prior {
                Some(make) => make()?,
                None => ReusePrior::none(),
            };
            let _ = self.prior.set(prior);
        }
        Ok((started.elapsed(), Instant::now()))
    }

    /// The prior computed beside S(0), `prior` (its time and end), charged
    /// to `first`: the part that ran on after S(0) finished is exposed.
    fn charge_prior(first: &mut Prepared, prior: (Duration, Instant), sampled_at: Instant) {
        first.prior_time = prior.0;
        first.prior_exposed = prior.1.saturating_duration_since(sampled_at).min(prior.0);
    }

    /// C(s) from the cache `carried` (replaced by this superbatch's final
    /// cache); on error the superbatch's files are removed (dropped).
    fn prepare(
        &self,
        sampled: SampledSuperbatch,
        s: usize,
        carried: &mut Vec<u64>,
    ) -> Result<Prepared> {
        let spec = self.specs[s].clone();
        // Every schedule computes it before C(0); this is a no-op then.
        self.compute_prior()?;
        let prior = self.prior.get_or_init(ReusePrior::none);
        let start = if self.carry_over {
            std::mem::take(carried)
        } else {
            Vec::new()
        };
        let (mut changesets, changeset_time) =
            precompute_changesets(&sampled, &spec, &start, prior)?;
        let summary = AccessSummary::new(
            &sampled.trace,
            &changesets.init,
            &changesets.final_cache,
            &changesets.updates,
        );
        drop(sampled.trace);
        *carried = std::mem::take(&mut changesets.final_cache);
        changesets.updates = Vec::new();
        Ok(Prepared {
            spec,
            files: sampled.files,
            init: std::mem::take(&mut changesets.init),
            stats: changesets,
            summary,
            sample_time: sampled.sample_time,
            changeset_time,
            changeset_exposed: Duration::ZERO,
            prior_time: Duration::ZERO,
            prior_exposed: Duration::ZERO,
        })
    }

    /// C(s) while S(s+1) samples (when there is one); the time C(s) ran on
    /// after sampling finished is its exposed time.
    fn prepare_beside_next(
        &self,
        sampled: SampledSuperbatch,
        s: usize,
        carried: &mut Vec<u64>,
    ) -> Result<(Prepared, Option<SampledSuperbatch>)> {
        if s + 1 >= self.specs.len() {
            let started = Instant::now();
            let mut p = self.prepare(sampled, s, carried)?;
            p.changeset_exposed = started.elapsed().min(p.changeset_time);
            return Ok((p, None));
        }
        let (prepared, next, waited) = std::thread::scope(|scope| {
            let worker = scope.spawn(|| self.prepare(sampled, s, carried));
            let next = self.sample(s + 1);
            let waited = Instant::now();
            let prepared = worker
                .join()
                .unwrap_or_else(|_| Err(Error::internal("changeset thread panicked")));
            (prepared, next, waited.elapsed())
        });
        // Whatever fails, the other side's files go when it is dropped.
        let (mut p, n) = (prepared?, next?);
        p.changeset_exposed = waited.min(p.changeset_time);
        Ok((p, Some(n)))
    }
}

/// The executor side: one feature cache for the whole epoch.
struct Executor<'a, 'c, 'r> {
    cache: FeatureCache,
    rows: &'a dyn RowSource,
    /// Staged init ([`Pipeline::Full`]): opens the init reader's own rows.
    staged: Option<OpenRows<'r>>,
    layout: FeatureLayout,
    row_bytes: usize,
    keep_runs: bool,
    consume: &'a mut (dyn FnMut(&EpochBatch<'_>) -> Result<()> + 'c),
    out: Vec<u8>,
    window: Vec<u8>,
}

impl Executor<'_, '_, '_> {
    fn execute(
        &mut self,
        p: Prepared,
        next: Option<NextInit<'_>>,
        report: &mut EpochReport,
    ) -> Result<()> {
        report.sample += p.sample_time;
        report.changeset += p.changeset_time;
        report.changeset_exposed += p.changeset_exposed;
        report.reuse_prior += p.prior_time;
        report.reuse_prior_exposed += p.prior_exposed;
        report.optimal_misses.extend_from_slice(&p.stats.misses);
        report.optimal_init_reads += p.stats.init_reads;
        report.superbatches += 1;
        report.paged_superbatches += u64::from(p.stats.paged);
        report.planned_page_reads += p.stats.page_reads.unwrap_or(0);
        let result = self.run(&p, next, report);
        let Prepared { files, .. } = p;
        if self.keep_runs {
            files.keep();
        } else {
            files.remove()?;
        }
        // The superbatch's records and small allocations are freed: give
        // the heap back before the next one grows it again.
        crate::io::heap::release_free_memory();
        result
    }

    fn run(
        &mut self,
        p: &Prepared,
        next: Option<NextInit<'_>>,
        report: &mut EpochReport,
    ) -> Result<()> {
        let started = Instant::now();
        let mut files = SuperbatchReader::open(p.files.paths(), &p.spec.stamp())?;
        let init = files.take_init();
        report.load_runs += started.elapsed();

        let Some(open_rows) = self.staged else {
            let started = Instant::now();
            report.init_reads += self.cache.init(&init, self.rows)?;
            report.cache_init += started.elapsed();
            return self.main_loop(p, &mut files, None, next, report);
        };
        let started = Instant::now();
        let load = self.cache.begin_init(&init)?;
        drop(init);
        let chunks = self.init_chunks(&load, Some(&p.summary));
        report.cache_init += started.elapsed();
        let ((), stats) = with_staged_init(
            chunks,
            open_rows,
            |rows| rows.stats(),
            |arrivals| self.main_loop(p, &mut files, Some(arrivals), next, report),
        )?;
        count_init_reads(load.len(), stats, report);
        Ok(())
    }

    /// The init rows `load` in chunks of 8 MiB (smaller for small inits,
    /// so that the first batches do not wait for all of it), each needed
    /// by the first batch that uses it (`summary`; without one, by the
    /// first batch).
    fn init_chunks(&self, load: &[u64], summary: Option<&AccessSummary>) -> Vec<InitChunk> {
        let layout = self.layout;
        let chunk_rows = (load.len() / 32).clamp(64, init_chunk_rows(self.row_bytes).max(64));
        let page_of = |id| layout.locate(id).page;
        match summary {
            Some(s) => chunks_in_page_order(
                load,
                |id| s.first_use(id),
                s.num_batches(),
                page_of,
                chunk_rows,
            ),
            None => chunks_in_page_order(load, |_| 0, 0, page_of, chunk_rows),
        }
    }

    /// Reads `init` into the cache before its superbatch's changesets exist
    /// (staged init only): the first superbatch starts from an empty cache,
    /// so its init is known once it is sampled ([`fresh_init`]), and is read
    /// while its changesets are computed. The superbatch's own init then
    /// finds those rows cached and reads nothing.
    fn init_ahead(&mut self, init: &[u64], report: &mut EpochReport) -> Result<()> {
        let Some(open_rows) = self.staged else {
            return Ok(());
        };
        let started = Instant::now();
        let load = self.cache.begin_init(init)?;
        let chunks = self.init_chunks(&load, None);
        let cache = &mut self.cache;
        let ((), stats) = with_staged_init(
            chunks,
            open_rows,
            |rows| rows.stats(),
            |arrivals| arrivals.finish(cache),
        )?;
        report.cache_init += started.elapsed();
        count_init_reads(load.len(), stats, report);
        Ok(())
    }

    /// The batches of a superbatch whose init is done, or (`arrivals`)
    /// arriving, streamed from its `files`: each batch waits for the init
    /// rows it needs, a non-empty update for all of them (it may evict
    /// one). Once they are all in, and the next superbatch's init is known
    /// (`next`), that init is read ahead ([`crate::exec::read_ahead`]).
    fn main_loop(
        &mut self,
        p: &Prepared,
        files: &mut SuperbatchReader,
        mut arrivals: Option<&mut Arrivals>,
        mut next: Option<NextInit<'_>>,
        report: &mut EpochReport,
    ) -> Result<()> {
        self.window.clear();
        std::thread::scope(|scope| {
            let mut ahead: Option<Running<'_>> = None;
            let mut run = || -> Result<()> {
                let batches = p.summary.num_batches();
                let mut i = 0;
                while let Some((record, update)) = files.next_batch()? {
                    let window_end = (i + 1) % p.spec.every.max(1) == 0 || i + 1 == batches;
                    let work = (&record, &update);
                    self.batch(p, (i, window_end), work, arrivals.as_deref_mut(), report)?;
                    let own_init_done = arrivals.as_deref().is_none_or(Arrivals::is_done);
                    if let (None, Some(open), true) = (&ahead, self.staged, own_init_done) {
                        if let Some(init) = next.as_mut().and_then(|poll| poll()) {
                            ahead = Some(self.start_read_ahead(scope, open, p, &init));
                        }
                    }
                    if let Some(running) = ahead.as_mut() {
                        let started = Instant::now();
                        running.ahead.after_batch(i, &mut self.cache)?;
                        report.cache_update += started.elapsed();
                    }
                    i += 1;
                }
                let started = Instant::now();
                if let Some(a) = arrivals.as_deref_mut() {
                    a.finish(&mut self.cache)?;
                }
                if let Some(running) = ahead.as_mut() {
                    running.ahead.finish(&mut self.cache)?;
                }
                report.cache_init += started.elapsed();
                Ok(())
            };
            let result = run();
            let Some(Running {
                ahead,
                reader,
                rows,
            }) = ahead
            else {
                return result;
            };
            // The reader stops once its end is dropped (after an error).
            drop(ahead);
            let stats = join_reader(reader)?;
            result?;
            count_init_reads(rows, stats, report);
            report.read_ahead += rows as u64;
            Ok(())
        })
    }

    /// Batch `i` of a superbatch (`window_end`: the last of its window of
    /// `every` batches): waits for its init rows (`arrivals`), gathers it,
    /// hands it to the consumer, and applies its update (at the window's
    /// end).
    fn batch(
        &mut self,
        p: &Prepared,
        (i, window_end): (usize, bool),
        (rec, update): (&SampledRecord, &Update),
        mut arrivals: Option<&mut Arrivals>,
        report: &mut EpochReport,
    ) -> Result<()> {
        if let Some(a) = arrivals.as_deref_mut() {
            let started = Instant::now();
            a.wait_for(i, &mut self.cache)?;
            report.cache_init += started.elapsed();
        }
        let rb = self.row_bytes;
        let b = p.spec.first_batch + i as u64;
        let hops = decode_hops(&rec.adj)?;
        let num_seeds = hops.last().map_or(rec.ids.len(), |h| h.num_dst);
        self.out.resize(rec.ids.len() * rb, 0);
        let companions = if p.spec.every == 1 {
            page_companions(update, rec.ids.len(), &p.files)?
        } else {
            Vec::new()
        };
        let started = Instant::now();
        let misses = self
            .cache
            .gather_with(&rec.ids, &companions, &mut self.out, self.rows)?;
        report.page_companions += companions.len() as u64;
        report.gather += started.elapsed();
        report.batches.push(BatchStat {
            batch: b,
            hits: rec.ids.len() as u64 - misses,
            misses,
            checksum: crc32fast::hash(&self.out),
        });
        (self.consume)(&EpochBatch {
            batch: b,
            ids: &rec.ids,
            num_seeds,
            hops: &hops,
            rows: &self.out,
        })?;
        if !update.is_empty() {
            if let Some(a) = arrivals {
                let started = Instant::now();
                a.finish(&mut self.cache)?;
                report.cache_init += started.elapsed();
            }
        }
        let started = Instant::now();
        if p.spec.every == 1 {
            self.cache.apply(update, &self.out)?;
        } else {
            self.window.extend_from_slice(&self.out);
            if window_end {
                self.cache.apply(update, &self.window)?;
                self.window.clear();
            }
        }
        report.cache_update += started.elapsed();
        Ok(())
    }

    /// Starts reading `next_init` (the next superbatch's) ahead, during
    /// the rest of superbatch `p`, through a reader in `scope`.
    fn start_read_ahead<'scope, 'o: 'scope>(
        &self,
        scope: &'scope std::thread::Scope<'scope, '_>,
        open: OpenRows<'o>,
        p: &Prepared,
        next_init: &[u64],
    ) -> Running<'scope> {
        let plan = plan_read_ahead(&self.cache, next_init, &p.summary, p.spec.every);
        let rows = plan.load.len();
        let chunks = self.init_chunks(&plan.load, None);
        let (arrivals, reader) =
            spawn_reader(scope, chunks, open, |r| r.stats(), READ_AHEAD_CHUNKS);
        Running {
            ahead: ReadAhead::new(plan, arrivals, false),
            reader,
            rows,
        }
    }
}

/// The page companions `update` inserts after a batch of `len` rows
/// ([`Update::companions`]); a gap is a corrupt changes file.
fn page_companions(update: &Update, len: usize, files: &OwnedFiles) -> Result<Vec<u64>> {
    update.companions(len).map_err(|(id, pos, expected)| {
        Error::corrupt(
            &files.paths().changes,
            0,
            format!(
                "update inserts node {id} from position {pos}, past the batch's {len} rows, \
                 where the next page companion belongs at {expected}"
            ),
        )
    })
}

/// A read-ahead under way: its executor end, its reader, its rows.
struct Running<'scope> {
    ahead: ReadAhead,
    reader: std::thread::ScopedJoinHandle<'scope, Option<GatherStats>>,
    rows: usize,
}

/// Chunks the read-ahead's reader may run ahead of the executor, which
/// takes them between batches (the planner's
/// [`STAGED_INIT_CHUNKS`](crate::exec::plan::STAGED_INIT_CHUNKS) counts
/// them).
const READ_AHEAD_CHUNKS: usize = 1;

/// Asks, without waiting, for the next superbatch's init (`C[0]`): `None`
/// while its changesets are not computed.
type NextInit<'a> = &'a mut dyn FnMut() -> Option<Vec<u64>>;

/// Opens a row source for another thread (the staged init's reader).
type OpenRows<'a> = &'a (dyn Fn() -> Result<GatherRows<'a>> + Sync);

/// Runs the `ginex` policy over `total` batches of `sampler`, writing
/// runtime files (stamped with `store_id`, the run and its parameters)
/// under `dir`; misses are read through `rows`, a staged init's rows
/// through a source `open_rows` opens; the changesets rank nodes beyond
/// each superbatch by the prior `make_prior` computes (none without it).
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_ginex(
    config: &EpochConfig,
    sampler: &EpochSampler<'_>,
    rows: &dyn RowSource,
    open_rows: OpenRows<'_>,
    layout: FeatureLayout,
    num_nodes: u64,
    store_id: u32,
    dir: &std::path::Path,
    make_prior: Option<MakePrior<'_>>,
    report: &mut EpochReport,
    consume: &mut dyn FnMut(&EpochBatch<'_>) -> Result<()>,
) -> Result<()> {
    let total = config
        .max_batches
        .map_or(sampler.num_batches(), |m| m.min(sampler.num_batches()));
    let specs = specs(
        config,
        total,
        store_id,
        make_prior.is_some(),
        layout.rows_per_page() as u64,
    );
    let n = specs.len();
    if n == 0 {
        return Ok(());
    }
    let inspector = Inspector {
        sampler,
        dir,
        specs,
        carry_over: config.carry_over,
        make_prior,
        prior: OnceLock::new(),
    };
    let mut executor = Executor {
        cache: FeatureCache::new(num_nodes, config.feature_cache_rows, rows.row_bytes())?,
        rows,
        staged: (config.pipeline == Pipeline::Full).then_some(open_rows),
        layout,
        row_bytes: rows.row_bytes(),
        keep_runs: config.keep_runs,
        consume,
        out: Vec::new(),
        window: Vec::new(),
    };
    let mut carried = Vec::new();
    match config.pipeline {
        Pipeline::Serial => {
            let prior = inspector.compute_prior()?;
            for s in 0..n {
                let sampled = inspector.sample(s)?;
                let started = Instant::now();
                let mut prepared = inspector.prepare(sampled, s, &mut carried)?;
                prepared.changeset_exposed = started.elapsed().min(prepared.changeset_time);
                if s == 0 {
                    // Nothing runs beside it: all of it is exposed.
                    (prepared.prior_time, prepared.prior_exposed) = (prior.0, prior.0);
                }
                executor.execute(prepared, None, report)?;
            }
            Ok(())
        }
        Pipeline::Overlap => {
            let (prior, first) = std::thread::scope(|scope| {
                let worker = scope.spawn(|| inspector.compute_prior());
                let first = inspector.sample(0);
                let prior = worker
                    .join()
                    .unwrap_or_else(|_| Err(Error::internal("reuse-prior thread panicked")));
                (prior, first)
            });
            let first = first?;
            let prior = prior?;
            let sampled_at = first.sampled_at;
            let mut next = Some(first);
            for s in 0..n {
                let sampled = next
                    .take()
                    .ok_or_else(|| Error::internal("superbatch not sampled"))?;
                let (mut prepared, following) =
                    inspector.prepare_beside_next(sampled, s, &mut carried)?;
                if s == 0 {
                    Inspector::charge_prior(&mut prepared, prior, sampled_at);
                }
                next = following;
                executor.execute(prepared, None, report)?;
            }
            Ok(())
        }
        Pipeline::Full => run_full(&inspector, &mut executor, n, report),
    }
}

/// Counts an init's `rows` and its reader's reads (`stats`) in `report`.
fn count_init_reads(rows: usize, stats: Option<GatherStats>, report: &mut EpochReport) {
    if let Some(stats) = stats {
        report.add_gather_stats(&stats);
    }
    report.init_reads += rows as u64;
}

/// Hands a stage's result to the next stage; returns whether the stage
/// goes on: not after an error, nor when the next stage is gone (then the
/// superbatch, which nobody will execute, is dropped with its files).
fn hand_on<T>(tx: &mpsc::SyncSender<Result<T>>, item: Result<T>) -> bool {
    let failed = item.is_err();
    tx.send(item).is_ok() && !failed
}

/// [`Pipeline::Full`]: a sampling thread and a changeset thread run ahead of
/// the executor. S(s) starts once E(s−2) has removed its files, so at most
/// two superbatches of files exist; C(s) runs as soon as S(s) and C(s−1)
/// are done; the executor takes superbatches as they are ready.
fn run_full(
    inspector: &Inspector<'_>,
    executor: &mut Executor<'_, '_, '_>,
    n: usize,
    report: &mut EpochReport,
) -> Result<()> {
    let (sampled_tx, sampled_rx) = mpsc::sync_channel::<Result<SampledSuperbatch>>(1);
    let (ready_tx, ready_rx) = mpsc::sync_channel::<Result<Prepared>>(1);
    let (done_tx, done_rx) = mpsc::channel::<()>();
    // C[0] of the first superbatch, which starts from an empty cache.
    let (first_init_tx, first_init_rx) = mpsc::sync_channel::<Vec<u64>>(1);
    // A superbatch received while the one before it runs.
    let mut pending: Option<Result<Prepared>> = None;
    std::thread::scope(|scope| {
        scope.spawn(move || {
            for s in 0..n {
                if s >= 2 && done_rx.recv().is_err() {
                    return; // the executor stopped
                }
                if !hand_on(&sampled_tx, inspector.sample(s)) {
                    return;
                }
            }
        });
        scope.spawn(move || {
            // The prior, while S(0) samples: its count (4 bytes a node) is
            // gone before the first init's rows fill the cache.
            let mut prior = match inspector.compute_prior() {
                Ok(prior) => Some(prior),
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            let mut carried = Vec::new();
            for s in 0..n {
                let Ok(sampled) = sampled_rx.recv() else {
                    return;
                };
                if let (0, Ok(sampled)) = (s, &sampled) {
                    let capacity = inspector.specs[0].capacity;
                    let _ = first_init_tx.send(fresh_init(&sampled.trace, capacity));
                }
                let prepared = sampled.and_then(|sampled| {
                    let sampled_at = sampled.sampled_at;
                    let mut p = inspector.prepare(sampled, s, &mut carried)?;
                    if let Some(prior) = prior.take() {
                        Inspector::charge_prior(&mut p, prior, sampled_at);
                    }
                    Ok(p)
                });
                if !hand_on(&ready_tx, prepared) {
                    return;
                }
            }
        });
        let result = (|| -> Result<()> {
            // The first superbatch's init is read while its changesets are
            // computed (none arrives when the inspector failed first).
            if let Ok(init) = first_init_rx.recv() {
                executor.init_ahead(&init, report)?;
            }
            for _ in 0..n {
                let waited = Instant::now();
                let mut prepared = match pending.take() {
                    Some(received) => received,
                    None => ready_rx
                        .recv()
                        .map_err(|_| Error::internal("the inspector stopped"))?,
                }?;
                prepared.changeset_exposed = waited.elapsed().min(prepared.changeset_time);
                // The next superbatch, once its changesets are ready, for
                // its init to be read ahead.
                let mut next_init = || {
                    if pending.is_none() {
                        pending = Some(ready_rx.try_recv().ok()?);
                    }
                    match &pending {
                        Some(Ok(next)) => Some(next.init.clone()),
                        _ => None,
                    }
                };
                executor.execute(prepared, Some(&mut next_init), report)?;
                let _ = done_tx.send(());
            }
            Ok(())
        })();
        // Unblock the inspector threads; what they prepared is dropped
        // with its files.
        drop(pending.take());
        drop(done_tx);
        while ready_rx.recv().is_ok() {}
        result
    })
}
