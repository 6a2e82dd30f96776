//! The superbatches of a `ginex` epoch as the pipeline
//! ([`crate::exec::pipeline`]) sees them: what each one is
//! ([`superbatch_specs`]: where the epoch is cut and the run parameters
//! stamped into its files) and what the inspector hands the executor once
//! its changesets are written ([`Prepared`], with the inspector's times).

use std::time::{Duration, Instant};

use crate::cache::belady::{Changesets, PageGroups};
use crate::exec::access_summary::AccessSummary;
use crate::exec::config::{EpochConfig, GinexOptions};
use crate::exec::report::EpochReport;
use crate::format::runtime::LinkStamp;
use crate::inspect::superbatch::{OwnedFiles, RunParams, SuperbatchSpec};
use crate::sample::sampler::EpochSampler;
use crate::store::Store;

/// A superbatch whose changesets are computed and written. Its records
/// and updates stay in its files (the executor streams them); it keeps
/// only what the executor looks ahead with.
pub(super) struct Prepared {
    pub(super) spec: SuperbatchSpec,
    /// Removed when dropped, unless the run keeps its runtime files.
    pub(super) files: OwnedFiles,
    /// `C[0]`, for the read-ahead of the superbatch before it.
    pub(super) init: Vec<u64>,
    /// The changesets' statistics (`updates` and `final_cache` emptied).
    pub(super) stats: Changesets,
    /// Which batches use the rows of the init and of the final cache.
    pub(super) summary: AccessSummary,
    pub(super) sample_time: Duration,
    pub(super) changeset_time: Duration,
    /// Time the changesets ran with no sampling beside them.
    pub(super) changeset_exposed: Duration,
    /// The reuse prior's time and the part of it not hidden behind S(0)
    /// (the first superbatch carries them; zero on the others).
    pub(super) prior: PriorTime,
}

impl Prepared {
    /// Adds the inspector's times and the changesets' statistics to `report`.
    pub(super) fn account(&self, report: &mut EpochReport) {
        report.sample += self.sample_time;
        report.changeset += self.changeset_time;
        report.changeset_exposed += self.changeset_exposed;
        report.reuse_prior += self.prior.took;
        report.reuse_prior_exposed += self.prior.exposed;
        report.optimal_misses.extend_from_slice(&self.stats.misses);
        report.optimal_init_reads += self.stats.init_reads;
        report.superbatches += 1;
        report.paged_superbatches += u64::from(self.stats.paged);
        report.planned_page_reads += self.stats.page_reads.unwrap_or(0);
    }
}

/// The reuse prior's time, and the part of it that nothing hid.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct PriorTime {
    pub(super) took: Duration,
    pub(super) exposed: Duration,
}

impl PriorTime {
    /// Computed alone: all of it is exposed.
    pub(super) fn alone(took: Duration) -> PriorTime {
        PriorTime {
            took,
            exposed: took,
        }
    }

    /// Computed beside S(0), ending at `ended`: the part that ran on after
    /// S(0) finished (`sampled_at`) is exposed.
    pub(super) fn beside(took: Duration, ended: Instant, sampled_at: Instant) -> PriorTime {
        PriorTime {
            took,
            exposed: ended.saturating_duration_since(sampled_at).min(took),
        }
    }
}

/// The superbatches of an epoch of `total` batches of `config` on
/// `store`, sampled by `sampler`, cut where
/// [`FirstSuperbatch::bounds`](crate::exec::config::FirstSuperbatch::bounds)
/// cuts them (as the policy lab's simulator does).
pub(super) fn superbatch_specs(
    config: &EpochConfig,
    ginex: &GinexOptions,
    store: &Store,
    sampler: &EpochSampler<'_>,
    total: u64,
) -> Vec<SuperbatchSpec> {
    let per_sb = ginex.superbatch.max(1);
    let (fanouts, relation_fanouts) = sampler.fanouts.stamp();
    let params = RunParams {
        store_id: crate::sample::neighbor_cache::store_identity(store),
        seed: config.seed,
        epoch: config.epoch,
        seed_order: RunParams::seed_order_of(config.seed_nodes.as_deref()),
        batch_size: config.batch_size as u64,
        fanouts,
        relation_fanouts,
        sampler: sampler.fanouts.sampler_stamp(),
        carry_over: ginex.carry_over,
        reuse_prior: ginex.reuse_prior,
        link: sampler.link.as_ref().map(|l| LinkStamp {
            neg: l.task.neg as u64,
            undirected: l.task.undirected,
            own_edges_kept: l.task.exclude == crate::sample::link::LinkExclude::Nothing,
        }),
    };
    let companions =
        PageGroups::of_sections(store.feature_sections()).filter(|_| ginex.page_companions);
    ginex
        .first_superbatch
        .bounds(total, per_sb)
        .into_iter()
        .enumerate()
        .map(|(sb, batches)| SuperbatchSpec {
            index: sb as u64,
            first_batch: batches.start,
            num_batches: batches.end - batches.start,
            workers: config.workers.max(1),
            lockstep: ginex.lockstep,
            capacity: config.feature_cache_rows,
            every: ginex.changeset_every.max(1),
            page_companions: companions.clone(),
            run: params.clone(),
        })
        .collect()
}
