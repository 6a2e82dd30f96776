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
//!   for the chunks it needs ([`crate::exec::staged_init`]). S(0) and C(0)
//!   have no main loop to hide behind, but superbatch 0 starts from an
//!   empty cache, so its init is the first rows it uses up to the cache's
//!   size ([`fresh_init`](crate::cache::belady::fresh_init)), known as soon
//!   as S(0)'s first lockstep rounds hold that many distinct rows
//!   ([`FreshInit`]): the executor reads it while the rest of S(0) samples
//!   and C(0) runs. Its `cache_init` time is the time the executor waited
//!   for init rows.
//!
//! One driver runs them all (`drive`): per superbatch, prepare (take it
//! from the schedule's `Feed`, which ran S and C beside what the
//! `Schedule` lets them run beside), execute, clean up. What differs is
//! the feed: `Inline` runs the inspector on the executor's thread between
//! superbatches (`serial`, `overlap`), `Ahead` on threads of its own,
//! ahead of the executor (`full`). Every stage's time goes into the report
//! through one timer (`timed`).
//!
//! A superbatch's runtime files remove themselves when dropped, unless the
//! run keeps them ([`OwnedFiles`]): once it executed, and whenever a stage
//! drops it unexecuted (after an error or a panic, or when the stage after
//! it is gone). At most two superbatches' files exist at any time (three
//! under `full` with rows of 512 bytes or more:
//! `full_superbatches_of_files`). The executor streams a superbatch's
//! records and updates from them a batch at a time ([`SuperbatchReader`]);
//! what it looks ahead with is the superbatch's access summary, a few
//! bytes per cache row.
//!
//! The changesets' [`ReusePrior`] (the store's recorded out-degrees, or a
//! pass over an older store's topology) is computed
//! once, before C(0) needs it: beside S(0) under `overlap` and `full`,
//! first under `serial`. The report counts its time, and the part of it
//! that ran on after S(0) finished as not hidden. (Run after S(0) instead,
//! beside the first init's reads, it spares S(0) a core, but its count,
//! 4 bytes a node, then meets a filling cache and raises the peak memory;
//! measured in `docs/lab/performance-journal.md`, "Where the reuse prior runs".)

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, OnceLock};
use std::time::{Duration, Instant};

use crate::cache::belady::{fresh_init, FreshInit, ReusePrior, Update};
use crate::cache::feature_cache::{FeatureCache, RowSource};
use crate::error::{Error, Result};
use crate::exec::access_summary::AccessSummary;
pub use crate::exec::config::Pipeline;
use crate::exec::config::{EpochConfig, GinexOptions};
use crate::exec::prepared::{superbatch_specs, Prepared, PriorTime};
use crate::exec::read_ahead::{plan_read_ahead, ReadAhead};
use crate::exec::report::{BatchStat, EpochBatch, EpochReport};
use crate::exec::rows::GatherRows;
use crate::exec::staged_init::{
    chunks_in_page_order, join_reader, spawn_reader, with_staged_init, Arrivals, InitChunk,
};
use crate::format::sections::FeatureSections;
use crate::inspect::superbatch::{
    precompute_changesets, sample_superbatch_with, OwnedFiles, SampledRecord, SampledSuperbatch,
    SuperbatchReader, SuperbatchSpec,
};
use crate::io::cpu_time::{Role, RoleGuard};
use crate::sample::sampler::{decode_hops_with, EpochSampler};
use crate::store::gather::{GatherOptions, GatherStats};
use crate::store::Store;

/// What a `ginex` run reads and where it writes, built once by
/// [`run_epoch`](crate::exec::epoch::run_epoch).
pub(crate) struct GinexRun<'a> {
    pub config: &'a EpochConfig,
    /// The `ginex` options of `config`.
    pub ginex: &'a GinexOptions,
    /// The store: its layout, its identity (stamped into the runtime
    /// files), its topology (the reuse prior), its feature file (the
    /// staged init's own reader opens it with `options`).
    pub store: &'a Store,
    pub options: &'a GatherOptions,
    pub sampler: &'a EpochSampler<'a>,
    /// Where the executor reads its misses.
    pub rows: &'a GatherRows<'a>,
    /// The run's own directory for its runtime files.
    pub dir: &'a Path,
}

/// Runs `f`, adding the time it took to `slot`: the pipeline's one stage
/// timer.
fn timed<T>(slot: &mut Duration, f: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let out = f();
    *slot += started.elapsed();
    out
}

/// What runs beside what under a [`Pipeline`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Schedule {
    /// The reuse prior while S(0) samples, and C(s) while S(s+1) samples.
    beside_sampling: bool,
    /// The inspector on threads of its own, ahead of the executor: S and C
    /// of the next superbatches while E(s) runs.
    ahead_of_executor: bool,
    /// A superbatch's init read while its batches run, the next one's
    /// init read ahead during its main loop.
    staged_init: bool,
}

impl Schedule {
    fn of(pipeline: Pipeline) -> Schedule {
        let (beside_sampling, ahead_of_executor, staged_init) = match pipeline {
            Pipeline::Serial => (false, false, false),
            Pipeline::Overlap => (true, false, false),
            Pipeline::Full => (true, true, true),
        };
        Schedule {
            beside_sampling,
            ahead_of_executor,
            staged_init,
        }
    }
}

/// The inspector side: samples superbatches, and precomputes their
/// changesets in order, carrying each one's final cache into the next.
struct Inspector<'a> {
    sampler: &'a EpochSampler<'a>,
    dir: &'a Path,
    specs: Vec<SuperbatchSpec>,
    carry_over: bool,
    /// Whether the superbatches' files stay once dropped.
    keep_runs: bool,
    /// The store the reuse prior is computed from (none without a prior).
    prior_of: Option<&'a Store>,
    /// Set before the run where its configuration brings the prior
    /// ([`EpochConfig::out_degree_prior`]).
    prior: OnceLock<Arc<ReusePrior>>,
    /// The first init goes to the executor as soon as S(0)'s first rounds
    /// fix it ([`GinexOptions::early_first_init`]).
    early_first_init: bool,
}

impl Inspector<'_> {
    /// S(s): its files are removed when dropped, unless the run keeps them.
    fn sample(&self, s: usize) -> Result<SampledSuperbatch> {
        self.sample_with(s, false, &mut |_| {})
    }

    /// S(s), handing each lockstep round's ids to `round` as it is
    /// sampled, the first rounds short when `ramp_up`.
    fn sample_with(
        &self,
        s: usize,
        ramp_up: bool,
        round: &mut dyn FnMut(&[Vec<u64>]),
    ) -> Result<SampledSuperbatch> {
        let mut sampled =
            sample_superbatch_with(self.sampler, &self.specs[s], self.dir, ramp_up, round)?;
        if self.keep_runs {
            sampled.files.keep_on_drop();
        }
        Ok(sampled)
    }

    /// Computes the reuse prior unless it is known already (computed, or
    /// brought by the run's configuration; none when the run has no
    /// prior); returns the time it took (zero when known) and when it
    /// ended.
    fn compute_prior(&self) -> Result<(Duration, Instant)> {
        let mut took = Duration::ZERO;
        if self.prior.get().is_none() {
            timed(&mut took, || -> Result<()> {
                let prior = match self.prior_of {
                    Some(store) => ReusePrior::of_store(store)?,
                    None => ReusePrior::none(),
                };
                let _ = self.prior.set(Arc::new(prior));
                Ok(())
            })?;
        }
        Ok((took, Instant::now()))
    }

    /// The reuse prior computed while S(0) samples, and S(0).
    fn prior_beside_first(&self) -> Result<(PriorTime, SampledSuperbatch)> {
        let (prior, first) = std::thread::scope(|scope| {
            let worker = scope.spawn(|| {
                let _cpu = RoleGuard::start(Role::Changesets);
                self.compute_prior()
            });
            let first = self.sample(0);
            let prior = worker
                .join()
                .unwrap_or_else(|_| Err(Error::internal("reuse-prior thread panicked")));
            (prior, first)
        });
        let first = first?;
        let (took, ended) = prior?;
        Ok((PriorTime::beside(took, ended, first.sampled_at), first))
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
        let prior = self.prior.get_or_init(|| Arc::new(ReusePrior::none()));
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
            prior: PriorTime::default(),
        })
    }

    /// C(s), while S(s+1) samples when `beside` and there is one, which
    /// comes back with it; the time C(s) ran on after sampling finished (all
    /// of it, alone) is its exposed time.
    fn prepare_beside_next(
        &self,
        sampled: SampledSuperbatch,
        s: usize,
        carried: &mut Vec<u64>,
        beside: bool,
    ) -> Result<(Prepared, Option<SampledSuperbatch>)> {
        if !beside || s + 1 >= self.specs.len() {
            let mut alone = Duration::ZERO;
            let mut p = timed(&mut alone, || self.prepare(sampled, s, carried))?;
            p.changeset_exposed = alone.min(p.changeset_time);
            return Ok((p, None));
        }
        let (prepared, next, waited) = std::thread::scope(|scope| {
            let worker = scope.spawn(|| {
                let _cpu = RoleGuard::start(Role::Changesets);
                self.prepare(sampled, s, carried)
            });
            let next = self.sample(s + 1);
            let mut waited = Duration::ZERO;
            let prepared = timed(&mut waited, || worker.join())
                .unwrap_or_else(|_| Err(Error::internal("changeset thread panicked")));
            (prepared, next, waited)
        });
        // Whatever fails, the other side's files go when it is dropped.
        let (mut p, n) = (prepared?, next?);
        p.changeset_exposed = waited.min(p.changeset_time);
        Ok((p, Some(n)))
    }
}

/// The inspector's side of a schedule: superbatches with their changesets
/// computed, in order, for the executor.
trait Feed {
    /// The first superbatch's init, known before its changesets
    /// ([`fresh_init`]); only a feed ahead of the executor has it in time.
    fn first_init(&mut self) -> Option<Vec<u64>>;
    /// Superbatch `s`, prepared, with its exposed times charged.
    fn next(&mut self, s: usize) -> Result<Prepared>;
    /// The init of the superbatch after the one executing, without waiting:
    /// `None` while its changesets are not computed.
    fn poll_next_init(&mut self) -> Option<Vec<u64>>;
    /// The superbatch handed last executed, and its files are gone.
    fn executed(&mut self);
}

/// The inspector on the executor's thread, between superbatches
/// ([`Pipeline::Serial`], [`Pipeline::Overlap`]).
struct Inline<'i, 'a> {
    inspector: &'i Inspector<'a>,
    /// C(s) while S(s+1) samples.
    beside_sampling: bool,
    /// The next superbatch, sampled beside the changesets before it.
    sampled: Option<SampledSuperbatch>,
    /// The cache the last superbatch prepared ends with.
    carried: Vec<u64>,
    /// The reuse prior's time, for the first superbatch.
    prior: Option<PriorTime>,
}

impl<'i, 'a> Inline<'i, 'a> {
    /// Computes the reuse prior: beside S(0) when the schedule samples
    /// beside, first otherwise.
    fn start(inspector: &'i Inspector<'a>, beside_sampling: bool) -> Result<Self> {
        let (prior, sampled) = if beside_sampling {
            let (prior, first) = inspector.prior_beside_first()?;
            (prior, Some(first))
        } else {
            (PriorTime::alone(inspector.compute_prior()?.0), None)
        };
        Ok(Inline {
            inspector,
            beside_sampling,
            sampled,
            carried: Vec::new(),
            prior: Some(prior),
        })
    }
}

impl Feed for Inline<'_, '_> {
    fn first_init(&mut self) -> Option<Vec<u64>> {
        None
    }

    fn next(&mut self, s: usize) -> Result<Prepared> {
        let sampled = match self.sampled.take() {
            Some(sampled) => sampled,
            None => self.inspector.sample(s)?,
        };
        let (mut p, following) = self.inspector.prepare_beside_next(
            sampled,
            s,
            &mut self.carried,
            self.beside_sampling,
        )?;
        self.sampled = following;
        if let Some(prior) = self.prior.take() {
            p.prior = prior;
        }
        Ok(p)
    }

    fn poll_next_init(&mut self) -> Option<Vec<u64>> {
        None
    }

    fn executed(&mut self) {}
}

/// Superbatches whose files exist at once under [`Pipeline::Full`] for
/// feature rows of `row_bytes`: the one executed, the next one prepared,
/// and, where the plan affords it ([`prepares_two_ahead`]), the one
/// after it being sampled and prepared. With two, C(s + 1) starts with
/// E(s), so a superbatch whose init was read ahead whole runs its batches
/// before the next init is known, and the device idles through them and
/// the wait for C(s + 1) (random ids at 2.9×: 12 superbatches of 5
/// batches, every second one; `docs/lab/performance-journal.md`, "The next init known
/// a superbatch earlier"). The prepared superbatch's init and access
/// summary are what the third costs in memory
/// ([`PREPARED_AHEAD_BYTES_PER_CACHE_ROW`](crate::exec::plan::PREPARED_AHEAD_BYTES_PER_CACHE_ROW)).
///
/// [`prepares_two_ahead`]: crate::exec::plan::prepares_two_ahead
pub(crate) fn full_superbatches_of_files(row_bytes: usize) -> usize {
    if crate::exec::plan::prepares_two_ahead(row_bytes as u64) {
        3
    } else {
        2
    }
}

/// [`Pipeline::Full`]: a sampling thread and a changeset thread run ahead of
/// the executor. S(s) starts once E(s − k) has removed its files, so at
/// most k superbatches of files exist ([`full_superbatches_of_files`]);
/// C(s) runs as soon as S(s) and C(s−1) are done; the executor takes
/// superbatches as they are ready. Dropped, it stops both threads (what
/// they prepared is dropped with its files).
struct Ahead {
    ready: mpsc::Receiver<Result<Prepared>>,
    /// A superbatch executed (the sampler may start the one k later).
    done: Option<mpsc::Sender<()>>,
    /// `C[0]` of the first superbatch, which starts from an empty cache.
    first_init: mpsc::Receiver<Vec<u64>>,
    /// A superbatch received while the one before it runs.
    pending: Option<Result<Prepared>>,
}

impl Ahead {
    /// Starts the sampling and changeset threads in `scope`, at most
    /// `files` superbatches' files at once.
    fn spawn<'scope>(
        scope: &'scope std::thread::Scope<'scope, '_>,
        inspector: &'scope Inspector<'_>,
        files: usize,
    ) -> Ahead {
        let n = inspector.specs.len();
        let (sampled_tx, sampled_rx) = mpsc::sync_channel::<Result<SampledSuperbatch>>(1);
        let (ready_tx, ready_rx) = mpsc::sync_channel::<Result<Prepared>>(1);
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let (first_init_tx, first_init_rx) = mpsc::sync_channel::<Vec<u64>>(1);
        // The first init goes to the executor once: from the sampling
        // thread as soon as S(0)'s first rounds fix it, else from the
        // changeset thread once S(0) is sampled.
        let first_init_sent = Arc::new(AtomicBool::new(false));
        let (early_tx, early_sent) = (first_init_tx.clone(), first_init_sent.clone());
        scope.spawn(move || {
            let _cpu = RoleGuard::start(Role::Sampling);
            for s in 0..n {
                if s >= files && done_rx.recv().is_err() {
                    return; // the executor stopped
                }
                let sampled = if s == 0 && inspector.early_first_init {
                    let mut fresh = Some(FreshInit::new(inspector.specs[0].capacity));
                    // Short first rounds: the init is known sooner.
                    inspector.sample_with(0, true, &mut |round| {
                        send_known_init(&mut fresh, round, inspector, &early_tx, &early_sent);
                    })
                } else {
                    inspector.sample(s)
                };
                if !hand_on(&sampled_tx, sampled) {
                    return;
                }
            }
        });
        scope.spawn(move || {
            let _cpu = RoleGuard::start(Role::Changesets);
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
                    if !first_init_sent.swap(true, Ordering::SeqCst) {
                        let capacity = inspector.specs[0].capacity;
                        let _ = first_init_tx.send(fresh_init(&sampled.trace, capacity));
                    }
                }
                let prepared = sampled.and_then(|sampled| {
                    let sampled_at = sampled.sampled_at;
                    let mut p = inspector.prepare(sampled, s, &mut carried)?;
                    if let Some((took, ended)) = prior.take() {
                        p.prior = PriorTime::beside(took, ended, sampled_at);
                    }
                    Ok(p)
                });
                if !hand_on(&ready_tx, prepared) {
                    return;
                }
            }
        });
        Ahead {
            ready: ready_rx,
            done: Some(done_tx),
            first_init: first_init_rx,
            pending: None,
        }
    }
}

impl Feed for Ahead {
    /// None arrives when the inspector failed first.
    fn first_init(&mut self) -> Option<Vec<u64>> {
        self.first_init.recv().ok()
    }

    /// The time the executor waited for C(s) is its exposed time.
    fn next(&mut self, _s: usize) -> Result<Prepared> {
        let mut waited = Duration::ZERO;
        let mut p = timed(&mut waited, || match self.pending.take() {
            Some(received) => received,
            None => self
                .ready
                .recv()
                .map_err(|_| Error::internal("the inspector stopped"))?,
        })?;
        p.changeset_exposed = waited.min(p.changeset_time);
        Ok(p)
    }

    fn poll_next_init(&mut self) -> Option<Vec<u64>> {
        if self.pending.is_none() {
            self.pending = Some(self.ready.try_recv().ok()?);
        }
        match &self.pending {
            Some(Ok(next)) => Some(next.init.clone()),
            _ => None,
        }
    }

    fn executed(&mut self) {
        if let Some(done) = &self.done {
            let _ = done.send(());
        }
    }
}

impl Drop for Ahead {
    /// Unblocks the inspector threads (also when the executor failed or
    /// panicked), so that their scope can join them; what they prepared
    /// is dropped with its files.
    fn drop(&mut self) {
        self.pending = None;
        self.done = None;
        while self.ready.recv().is_ok() {}
    }
}

/// Adds a round of S(0) to the first superbatch's init (`fresh`; None
/// once sent) and sends the init to the executor (`tx`) as soon as it is
/// known and the reuse prior is (the prior's count, 4 bytes a node, is
/// gone before the init's rows fill the cache), unless `sent` says it
/// went already. The reads then start while the rest of S(0) samples.
fn send_known_init(
    fresh: &mut Option<FreshInit>,
    round: &[Vec<u64>],
    inspector: &Inspector<'_>,
    tx: &mpsc::SyncSender<Vec<u64>>,
    sent: &AtomicBool,
) {
    let Some(init) = fresh.as_mut() else {
        return;
    };
    let mut known = init.is_known();
    for ids in round {
        known = init.extend(ids);
        if known {
            break;
        }
    }
    if !known || inspector.prior.get().is_none() {
        return;
    }
    if let Some(init) = fresh.take() {
        if !sent.swap(true, Ordering::SeqCst) {
            let _ = tx.send(init.into_ids());
        }
    }
}

/// Hands a stage's result to the next stage; returns whether the stage
/// goes on: not after an error, nor when the next stage is gone (then the
/// superbatch, which nobody will execute, is dropped with its files).
fn hand_on<T>(tx: &mpsc::SyncSender<Result<T>>, item: Result<T>) -> bool {
    let failed = item.is_err();
    tx.send(item).is_ok() && !failed
}

/// The one driver of every schedule: per superbatch, prepare (from
/// `feed`), execute, clean up (its files go with it unless kept; the feed
/// hears that they are gone).
fn drive(
    feed: &mut dyn Feed,
    executor: &mut Executor<'_, '_, '_>,
    n: usize,
    report: &mut EpochReport,
) -> Result<()> {
    // The first superbatch's init is read while its changesets are
    // computed, where the feed knows it in time.
    if let Some(init) = feed.first_init() {
        executor.init_ahead(&init, report)?;
    }
    for s in 0..n {
        let prepared = feed.next(s)?;
        prepared.account(report);
        let result = executor.run(&prepared, &mut || feed.poll_next_init(), report);
        drop(prepared);
        // The superbatch's records and small allocations are freed: give
        // the heap back before the next one grows it again.
        crate::io::heap::release_free_memory();
        result?;
        feed.executed();
    }
    Ok(())
}

/// The executor side: one feature cache for the whole epoch.
struct Executor<'a, 'c, 'r> {
    cache: FeatureCache,
    rows: &'a dyn RowSource,
    /// Staged init ([`Pipeline::Full`]): opens the init reader's own rows.
    staged: Option<OpenRows<'r>>,
    layout: &'a FeatureSections,
    row_bytes: usize,
    consume: &'a mut (dyn FnMut(&EpochBatch<'_>) -> Result<()> + 'c),
    out: Vec<u8>,
    window: Vec<u8>,
}

impl<'r> Executor<'_, '_, 'r> {
    /// E(s): its init, then its batches; `next` asks for the next
    /// superbatch's init, to read it ahead.
    fn run(&mut self, p: &Prepared, next: NextInit<'_>, report: &mut EpochReport) -> Result<()> {
        let (mut files, init) = timed(&mut report.load_runs, || -> Result<_> {
            let mut files = SuperbatchReader::open(p.files.paths(), &p.spec.stamp())?;
            let init = files.take_init();
            Ok((files, init))
        })?;
        let Some(open_rows) = self.staged else {
            report.init_reads +=
                timed(&mut report.cache_init, || self.cache.init(&init, self.rows))?;
            return self.main_loop(p, &mut files, None, next, report);
        };
        let (load, chunks) = timed(&mut report.cache_init, || -> Result<_> {
            let load = self.cache.begin_init(&init)?;
            drop(init);
            let chunks = self.init_chunks(&load, Some(&p.summary));
            Ok((load, chunks))
        })?;
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
    /// so that the first batches do not wait for all of it, and for small
    /// caches, [`chunk_rows`](crate::exec::staged_init::chunk_rows)), each needed
    /// by the first batch that uses it (`summary`; without one, by the
    /// first batch).
    fn init_chunks(&self, load: &[u64], summary: Option<&AccessSummary>) -> Vec<InitChunk> {
        let layout = &self.layout;
        let chunk_rows =
            crate::exec::staged_init::chunk_rows(load.len(), self.cache.capacity(), self.row_bytes);
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
        let (rows, stats) = timed(&mut report.cache_init, || -> Result<_> {
            let load = self.cache.begin_init(init)?;
            let chunks = self.init_chunks(&load, None);
            let cache = &mut self.cache;
            let ((), stats) = with_staged_init(
                chunks,
                open_rows,
                |rows| rows.stats(),
                |arrivals| arrivals.finish(cache),
            )?;
            Ok((load.len(), stats))
        })?;
        count_init_reads(rows, stats, report);
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
        next: NextInit<'_>,
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
                    // Before the batch too: a superbatch whose init was
                    // read ahead whole has none to wait for, and its batch
                    // would leave the device idle.
                    self.read_ahead_once_ready(scope, &mut ahead, arrivals.as_deref(), p, next);
                    self.batch(p, (i, window_end), work, arrivals.as_deref_mut(), report)?;
                    self.read_ahead_once_ready(scope, &mut ahead, arrivals.as_deref(), p, next);
                    if let Some(running) = ahead.as_mut() {
                        timed(&mut report.cache_update, || {
                            running.ahead.after_batch(i, &mut self.cache)
                        })?;
                    }
                    i += 1;
                }
                timed(&mut report.cache_init, || -> Result<()> {
                    if let Some(a) = arrivals.as_deref_mut() {
                        a.finish(&mut self.cache)?;
                    }
                    if let Some(running) = ahead.as_mut() {
                        running.ahead.finish(&mut self.cache)?;
                    }
                    Ok(())
                })
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
            timed(&mut report.cache_init, || a.wait_for(i, &mut self.cache))?;
        }
        let rb = self.row_bytes;
        let b = p.spec.first_batch + i as u64;
        let hops = decode_hops_with(&rec.adj, p.spec.run.sampler.is_some())?;
        let num_seeds = hops.last().map_or(rec.ids.len(), |h| h.num_dst);
        if let Some(l) = &rec.link {
            l.check(num_seeds, &format!("link record of batch {b}"))
                .map_err(|e| Error::corrupt(&p.files.paths().samples, 0, e.to_string()))?;
        }
        self.out.resize(rec.ids.len() * rb, 0);
        let companions = if p.spec.every == 1 {
            page_companions(update, rec.ids.len(), &p.files)?
        } else {
            Vec::new()
        };
        let misses = timed(&mut report.gather, || {
            self.cache
                .gather_with(&rec.ids, &companions, &mut self.out, self.rows)
        })?;
        report.page_companions += companions.len() as u64;
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
            link: rec.link.as_ref(),
        })?;
        if !update.is_empty() {
            if let Some(a) = arrivals {
                timed(&mut report.cache_init, || a.finish(&mut self.cache))?;
            }
        }
        timed(&mut report.cache_update, || {
            if p.spec.every == 1 {
                return self.cache.apply(update, &self.out);
            }
            self.window.extend_from_slice(&self.out);
            if window_end {
                self.cache.apply(update, &self.window)?;
                self.window.clear();
            }
            Ok(())
        })
    }

    /// Starts the read-ahead of the next superbatch's init (into `ahead`,
    /// in `scope`) unless it runs: once the superbatch's own init is in
    /// (`arrivals` done) and the next init is known (`next`).
    fn read_ahead_once_ready<'scope>(
        &self,
        scope: &'scope std::thread::Scope<'scope, '_>,
        ahead: &mut Option<Running<'scope>>,
        arrivals: Option<&Arrivals>,
        p: &Prepared,
        next: NextInit<'_>,
    ) where
        'r: 'scope,
    {
        let own_init_done = arrivals.is_none_or(Arrivals::is_done);
        if let (None, Some(open), true) = (&ahead, self.staged, own_init_done) {
            if let Some(init) = next() {
                *ahead = Some(self.start_read_ahead(scope, open, p, &init));
            }
        }
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
/// ([`Update::companions`]); a gap, or more than a batch may read, is a
/// corrupt changes file.
fn page_companions(update: &Update, len: usize, files: &OwnedFiles) -> Result<Vec<u64>> {
    update
        .companions(len)
        .map_err(|reason| Error::corrupt(&files.paths().changes, 0, reason))
}

/// A read-ahead under way: its executor end, its reader, its rows.
struct Running<'scope> {
    ahead: ReadAhead,
    reader: std::thread::ScopedJoinHandle<'scope, Option<GatherStats>>,
    rows: usize,
}

/// Chunks the read-ahead's reader may run ahead of the executor, which
/// takes them between batches (the planner's
/// [`STAGED_INIT_CHUNKS`](crate::exec::staged_init::STAGED_INIT_CHUNKS) counts
/// them). Two: with one, the reader (a chunk in ~28 ms at 2.9× on 3 M
/// nodes) waited 0.3–0.4 s an epoch for the executor's batches (~70 ms
/// each) to take it; with two, 0.05–0.2 s.
const READ_AHEAD_CHUNKS: usize = 2;

/// Asks, without waiting, for the next superbatch's init (`C[0]`): `None`
/// while its changesets are not computed.
type NextInit<'a> = &'a mut dyn FnMut() -> Option<Vec<u64>>;

/// Opens a row source for another thread (the staged init's reader).
type OpenRows<'a> = &'a (dyn Fn() -> Result<GatherRows<'a>> + Sync);

/// Runs the `ginex` policy over the batches of `run`, writing its runtime
/// files (stamped with the store's identity, the run and its parameters)
/// in `run.dir`, under the schedule `run.ginex.pipeline`; the changesets
/// rank nodes beyond each superbatch by the store's out-degrees when
/// `run.ginex.reuse_prior` (by nothing otherwise).
pub(crate) fn run_ginex(
    run: &GinexRun<'_>,
    report: &mut EpochReport,
    consume: &mut dyn FnMut(&EpochBatch<'_>) -> Result<()>,
) -> Result<()> {
    let (config, sampler, store) = (run.config, run.sampler, run.store);
    let total = config
        .max_batches
        .map_or(sampler.num_batches(), |m| m.min(sampler.num_batches()));
    let specs = superbatch_specs(run.config, run.ginex, run.store, run.sampler, total);
    let n = specs.len();
    if n == 0 {
        return Ok(());
    }
    let ginex = run.ginex;
    let schedule = Schedule::of(ginex.pipeline);
    let inspector = Inspector {
        sampler,
        dir: run.dir,
        specs,
        carry_over: ginex.carry_over,
        keep_runs: ginex.keep_runs,
        prior_of: ginex.reuse_prior.then_some(store),
        prior: OnceLock::new(),
        early_first_init: ginex.early_first_init,
    };
    if let Some(prior) = config
        .out_degree_prior
        .clone()
        .filter(|_| ginex.reuse_prior)
    {
        let _ = inspector.prior.set(prior);
    }
    let init_chunk = crate::exec::staged_init::chunk_bytes(
        config.feature_cache_rows as u64,
        store.layout().row_bytes() as u64,
    );
    let open_rows = || GatherRows::for_staged_init(store, run.options, init_chunk);
    let rows: &dyn RowSource = run.rows;
    let mut executor = Executor {
        cache: FeatureCache::new(
            store.num_nodes(),
            config.feature_cache_rows,
            rows.row_bytes(),
        )?,
        rows,
        staged: schedule.staged_init.then_some(&open_rows as OpenRows<'_>),
        layout: store.feature_sections(),
        row_bytes: rows.row_bytes(),
        consume,
        out: Vec::new(),
        window: Vec::new(),
    };
    std::thread::scope(|scope| {
        let mut feed: Box<dyn Feed + '_> = if schedule.ahead_of_executor {
            let files = full_superbatches_of_files(rows.row_bytes());
            Box::new(Ahead::spawn(scope, &inspector, files))
        } else {
            Box::new(Inline::start(&inspector, schedule.beside_sampling)?)
        };
        drive(feed.as_mut(), &mut executor, n, report)
    })
}

/// Counts an init's `rows` and its reader's reads (`stats`) in `report`.
fn count_init_reads(rows: usize, stats: Option<GatherStats>, report: &mut EpochReport) {
    if let Some(stats) = stats {
        report.add_gather_stats(&stats);
        report.init_reader_read += std::time::Duration::from_nanos(stats.read_ns);
        report.init_reader_pages += stats.unique_pages;
    }
    report.init_reads += rows as u64;
}

#[cfg(test)]
mod tests;
