//! The plan a budget gets ([`MemoryPlan`]): what each part of the memory
//! pays for, its one-line description, and how it sets a run's sizes
//! ([`MemoryPlan::apply`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cache::belady::ReusePrior;
use crate::exec::cache_split::CacheSplit;
use crate::exec::config::FirstSuperbatch;
use crate::exec::lockstep::LockstepPlan;
use crate::exec::superbatch_fit::SuperbatchFit;

use super::WorkingSet;

/// How a budget is spent; its serde form is the report's `memory_plan`
/// object (the field names are the keys, `working_set` nested).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryPlan {
    /// The budget.
    pub memory: u64,
    /// Process, store residents, seed order, address table, extra.
    pub fixed: u64,
    /// Rows of the largest batch (several buffers) and I/O buffers.
    pub batch_buffers: u64,
    /// Left to the page cache.
    pub page_cache_reserve: u64,
    /// Superbatches in flight (`ginex`).
    pub superbatch_bytes: u64,
    /// The batches a whole-superbatch lockstep round holds beyond the
    /// per-worker round `batch_buffers` counts (`ginex`; 0 in rounds;
    /// all of them for an automatic superbatch, whose plan counts no round).
    #[serde(default)]
    pub lockstep_bytes: u64,
    /// How the inspector samples (`ginex`): the whole superbatch in
    /// lockstep, or rounds, and why.
    #[serde(default)]
    pub lockstep: LockstepPlan,
    /// Batches per superbatch.
    pub superbatch: u64,
    /// Neighbor-cache budget.
    pub neighbor_cache_bytes: u64,
    /// Feature-cache rows.
    pub feature_cache_rows: u64,
    /// Feature-cache bytes (rows and slot bookkeeping).
    pub feature_cache_bytes: u64,
    /// The batches it was measured on.
    pub working_set: WorkingSet,
    /// How the caches' budget was split, when it was measured.
    #[serde(rename = "neighbor_cache_split", default)]
    pub split: Option<CacheSplit>,
    /// The reuse prior, derived from the out-degrees the split counted
    /// when the run uses one (not in the report): [`apply`](Self::apply)
    /// hands it to the run, which then does not count them again. The
    /// fixed part counts it either way.
    #[serde(skip)]
    pub reuse_prior: Option<std::sync::Arc<ReusePrior>>,
    /// Where the automatic superbatch was shortened to the longest whose
    /// batches' distinct rows (estimated) fit the feature cache: its
    /// batches and those rows ([`crate::exec::superbatch_fit`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superbatch_fit: Option<SuperbatchFit>,
    /// The store's topology is larger than the budget: the automatic
    /// superbatch is as long as its lockstep round may be, and
    /// [`apply`](Self::apply) resolves an automatic first superbatch to
    /// one full round ([`crate::exec::list_bound`]).
    #[serde(default)]
    pub lists_dwarf_memory: bool,
}

impl MemoryPlan {
    /// Everything planned.
    pub fn total(&self) -> u64 {
        self.fixed
            + self.batch_buffers
            + self.page_cache_reserve
            + self.superbatch_bytes
            + self.lockstep_bytes
            + self.neighbor_cache_bytes
            + self.feature_cache_bytes
    }

    /// JSON form (the serde form as a [`Value`]).
    pub fn to_json(&self) -> Value {
        // Integers and floats only: serializing cannot fail (a non-finite
        // mean is written as null, as `json!` did).
        serde_json::to_value(self).unwrap_or_default()
    }

    /// A few lines for people.
    pub fn describe(&self) -> String {
        let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
        format!(
            "memory plan for {:.0} MiB: fixed {:.0} MiB, batch buffers {:.0} MiB (largest measured batch {} rows), \
             page-cache reserve {:.0} MiB, superbatches in flight {:.0} MiB ({} batches each), \
             neighbor cache {:.0} MiB{}, feature cache {:.0} MiB ({} rows); planned {:.0} MiB{}{}{}",
            mib(self.memory),
            mib(self.fixed),
            mib(self.batch_buffers),
            self.working_set.max_ids,
            mib(self.page_cache_reserve),
            mib(self.superbatch_bytes),
            self.superbatch,
            mib(self.neighbor_cache_bytes),
            self.split.as_ref().map_or(String::new(), |s| format!(
                " ({:.1} % of the caches: the share predicted to read least)",
                100.0 * s.share
            )),
            mib(self.feature_cache_bytes),
            self.feature_cache_rows,
            mib(self.total()),
            if self.lockstep.batches > 0 {
                format!("; {}", self.lockstep.describe())
            } else {
                String::new()
            },
            self.superbatch_fit.map_or(String::new(), |f| format!(
                "; superbatches of at most {} batches: their ~{} distinct rows (estimated from the probe) fit the feature cache, so their misses are read at init",
                f.batches, f.distinct_rows
            )),
            if self.lists_dwarf_memory {
                "; the topology is larger than the budget, so each lockstep round reads most of it: \
                 superbatches as long as their round fits, each sampled in one round"
            } else {
                ""
            }
        )
    }
}

impl MemoryPlan {
    /// `config` with this plan's feature-cache rows, neighbor-cache bytes
    /// and superbatch size.
    pub fn apply(&self, config: &mut crate::exec::config::EpochConfig) {
        config.feature_cache_rows = self.feature_cache_rows as usize;
        config.neighbor_cache_bytes = self.neighbor_cache_bytes;
        if self.reuse_prior.is_some() {
            config.out_degree_prior = self.reuse_prior.clone();
        }
        if let Some(ginex) = config.cache.ginex_mut() {
            ginex.superbatch = self.superbatch;
            if self.lockstep.batches > 0 {
                ginex.lockstep = self.lockstep.lockstep();
            }
            if ginex.first_superbatch == FirstSuperbatch::Auto {
                ginex.first_superbatch = if self.lists_dwarf_memory {
                    // One round a superbatch: short ones, and the early
                    // init's short rounds, would each read most lists.
                    ginex.early_first_init = false;
                    FirstSuperbatch::Full
                } else {
                    FirstSuperbatch::Short
                };
            }
        }
    }
}
