//! The inspector: samples a `ginex` run's superbatches and computes their
//! changesets in order, each starting from the cache the one before ends
//! with.

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use super::timed;
use crate::cache::belady::ReusePrior;
use crate::error::{Error, Result};
use crate::exec::access_summary::AccessSummary;
use crate::exec::prepared::{Prepared, PriorTime};
use crate::inspect::superbatch::{
    precompute_changesets, sample_superbatch_with, SampledSuperbatch, SuperbatchSpec,
};
use crate::io::cpu_time::{Role, RoleGuard};
use crate::sample::sampler::EpochSampler;
use crate::store::Store;

/// The inspector side: samples superbatches, and precomputes their
/// changesets in order, carrying each one's final cache into the next.
pub(super) struct Inspector<'a> {
    pub(super) sampler: &'a EpochSampler<'a>,
    pub(super) dir: &'a Path,
    pub(super) specs: Vec<SuperbatchSpec>,
    pub(super) carry_over: bool,
    /// Whether the superbatches' files stay once dropped.
    pub(super) keep_runs: bool,
    /// The store the reuse prior is computed from (none without a prior).
    pub(super) prior_of: Option<&'a Store>,
    /// Set before the run where its configuration brings the prior
    /// ([`EpochConfig::out_degree_prior`]).
    pub(super) prior: OnceLock<Arc<ReusePrior>>,
    /// The first init goes to the executor as soon as S(0)'s first rounds
    /// fix it ([`GinexOptions::early_first_init`]).
    pub(super) early_first_init: bool,
}

impl Inspector<'_> {
    /// S(s): its files are removed when dropped, unless the run keeps them.
    pub(super) fn sample(&self, s: usize) -> Result<SampledSuperbatch> {
        self.sample_with(s, false, &mut |_| {})
    }

    /// S(s), handing each lockstep round's ids to `round` as it is
    /// sampled, the first rounds short when `ramp_up`.
    pub(super) fn sample_with(
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
    pub(super) fn compute_prior(&self) -> Result<(Duration, Instant)> {
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
    pub(super) fn prior_beside_first(&self) -> Result<(PriorTime, SampledSuperbatch)> {
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
    pub(super) fn prepare(
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
    pub(super) fn prepare_beside_next(
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
