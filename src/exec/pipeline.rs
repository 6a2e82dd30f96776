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
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::cache::feature_cache::{FeatureCache, RowSource};
use crate::error::Result;
pub use crate::exec::config::Pipeline;
use crate::exec::config::{EpochConfig, GinexOptions};
use crate::exec::prepared::superbatch_specs;
use crate::exec::report::{EpochBatch, EpochReport};
use crate::exec::rows::GatherRows;
use crate::sample::sampler::EpochSampler;
use crate::store::gather::GatherOptions;
use crate::store::Store;

mod executor;
mod feed;
mod inspector;

use executor::{Executor, OpenRows};
use feed::{full_superbatches_of_files, Ahead, Feed, Inline};
use inspector::Inspector;

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
pub(super) fn timed<T>(slot: &mut Duration, f: impl FnOnce() -> T) -> T {
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

#[cfg(test)]
mod tests;
