//! The one place an [`EpochConfig`] is made: the defaults, the sizes a
//! caller gives, the memory plan that fills the ones it leaves open, and
//! [`MemoryPlan::apply`]. The [`LoaderBuilder`](crate::LoaderBuilder),
//! the `ginex epoch` / `train` / `predict` flags and the benches wrap it.
//!
//! ```text
//! EpochConfigBuilder::new()        the defaults of EpochConfig / GinexOptions
//!     .policy(..).batch_size(..)   what the caller sets
//!     .sizes(ExplicitSizes {..})   feature / neighbor cache, superbatch (None: open)
//!     .memory(Some(budget))        plan the open sizes under one budget
//!     .build(store, extra)         -> (EpochConfig, Option<MemoryPlan>)
//! ```
//!
//! A caller whose own memory is measured on the configuration before it is
//! planned (a model's first batch) takes [`unplanned`](EpochConfigBuilder::unplanned)
//! first and then [`plan`](EpochConfigBuilder::plan).

use std::path::PathBuf;
use std::sync::Arc;

use crate::cache::Policy;
use crate::error::{Error, Result};
use crate::exec::config::{
    default_workers, feature_cache_rows_for, CacheConfig, EpochConfig, GinexOptions, Pipeline,
    DEFAULT_PRESC_ROUNDS,
};
use crate::exec::plan::{plan_epoch_with, ExplicitSizes, MemoryPlan, WorkingSet};
use crate::sample::fanouts::Fanouts;
use crate::sample::labor::SamplerConfig;
use crate::sample::link::{LinkPositives, LinkTask};
use crate::store::read_cost::{ReadCostModel, SequentialReads};
use crate::store::Store;

/// Builds an [`EpochConfig`] for a store: starts from the defaults
/// ([`EpochConfig::default`], [`GinexOptions::default`]), takes what the
/// caller sets, sizes the caches (given, planned under a memory budget, or
/// the defaults: [`feature_cache_rows_for`], no neighbor cache) and puts
/// the runtime files beside the store (`STORE.runs`) unless told.
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until build() or unplanned() is called"]
pub struct EpochConfigBuilder {
    /// The fields set as they are; `cache`, `feature_cache_rows`,
    /// `neighbor_cache_bytes`, `run_dir` and `workers` are made by
    /// [`unplanned`](Self::unplanned) from the fields below.
    config: EpochConfig,
    policy: Policy,
    ginex: GinexOptions,
    presc_rounds: u64,
    sizes: ExplicitSizes,
    memory: Option<u64>,
    workers: Option<usize>,
    run_dir: Option<PathBuf>,
}

impl Default for EpochConfigBuilder {
    fn default() -> Self {
        let config = EpochConfig::default();
        EpochConfigBuilder {
            policy: config.cache.policy(),
            config,
            ginex: GinexOptions::default(),
            presc_rounds: DEFAULT_PRESC_ROUNDS,
            sizes: ExplicitSizes::default(),
            memory: None,
            workers: None,
            run_dir: None,
        }
    }
}

impl EpochConfigBuilder {
    /// The defaults of every run.
    pub fn new() -> Self {
        Self::default()
    }

    /// The feature-cache policy (its options: [`ginex`](Self::ginex),
    /// [`presc_rounds`](Self::presc_rounds); the others have none).
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// The `ginex` policy's options (used only under it). Their
    /// `superbatch` is the default an explicit or planned superbatch
    /// ([`sizes`](Self::sizes), [`memory`](Self::memory)) replaces.
    pub fn ginex(mut self, options: GinexOptions) -> Self {
        self.ginex = options;
        self
    }

    /// k of the k-hop changeset approximation (`ginex`; 1 = exact).
    pub fn changeset_every(mut self, k: usize) -> Self {
        self.ginex.changeset_every = k;
        self
    }

    /// How the `ginex` inspector overlaps the executor.
    pub fn pipeline(mut self, pipeline: Pipeline) -> Self {
        self.ginex.pipeline = pipeline;
        self
    }

    /// Pre-sampling epochs of the `presc` policy.
    pub fn presc_rounds(mut self, rounds: u64) -> Self {
        self.presc_rounds = rounds;
        self
    }

    /// The sizes the caller fixes: feature-cache bytes, neighbor-cache
    /// bytes, batches per superbatch (each None: the plan's under a
    /// [`memory`](Self::memory) budget, else the default).
    pub fn sizes(mut self, sizes: ExplicitSizes) -> Self {
        self.sizes = sizes;
        self
    }

    /// Feature-cache bytes (None: planned, else the default).
    pub fn feature_cache_bytes(mut self, bytes: Option<u64>) -> Self {
        self.sizes.feature_cache_bytes = bytes;
        self
    }

    /// Neighbor-cache bytes (None: planned, else none).
    pub fn neighbor_cache_bytes(mut self, bytes: Option<u64>) -> Self {
        self.sizes.neighbor_cache_bytes = bytes;
        self
    }

    /// Batches per superbatch of `ginex` (None: planned, else the
    /// [`ginex`](Self::ginex) options').
    pub fn superbatch(mut self, batches: Option<u64>) -> Self {
        self.sizes.superbatch = batches;
        self
    }

    /// One memory budget for the data path (None: no plan).
    pub fn memory(mut self, bytes: Option<u64>) -> Self {
        self.memory = bytes;
        self
    }

    /// Seeds per batch.
    pub fn batch_size(mut self, n: usize) -> Self {
        self.config.batch_size = n;
        self
    }

    /// Fanouts, per hop or per relation.
    pub fn fanouts(mut self, fanouts: Fanouts) -> Self {
        self.config.fanouts = fanouts;
        self
    }

    /// The sampler and its LABOR options.
    pub fn sampler(mut self, sampler: SamplerConfig) -> Self {
        self.config.sampler = sampler;
        self
    }

    /// The run seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.config.seed = seed;
        self
    }

    /// The epoch number.
    pub fn epoch(mut self, epoch: u64) -> Self {
        self.config.epoch = epoch;
        self
    }

    /// Sampling workers (None: one per core).
    pub fn workers(mut self, n: Option<usize>) -> Self {
        self.workers = n;
        self
    }

    /// Directory for runtime files (None: `STORE.runs` beside the store).
    pub fn run_dir(mut self, dir: Option<PathBuf>) -> Self {
        self.run_dir = dir;
        self
    }

    /// The neighbor cache file (None: the default location).
    pub fn neighbor_cache(mut self, path: Option<PathBuf>) -> Self {
        self.config.neighbor_cache = path;
        self
    }

    /// Feature pages at most this far apart read as one (None: a read per
    /// page).
    pub fn merge_gap_pages(mut self, pages: Option<u64>) -> Self {
        self.config.merge_gap_pages = pages;
        self
    }

    /// Neighbour-list reads in flight at most (at least 1).
    pub fn list_queue_depth(mut self, depth: usize) -> Self {
        self.config.list_queue_depth = depth.max(1);
        self
    }

    /// Feature-page reads in flight at most, per reader (at least 1).
    pub fn feature_queue_depth(mut self, depth: usize) -> Self {
        self.config.feature_queue_depth = depth.max(1);
        self
    }

    /// Sequential passes over a gather's span.
    pub fn sequential_reads(mut self, mode: SequentialReads) -> Self {
        self.config.sequential_reads = mode;
        self
    }

    /// The device's read cost.
    pub fn read_cost(mut self, model: ReadCostModel) -> Self {
        self.config.read_cost = model;
        self
    }

    /// Stop after this many batches (None: the whole epoch).
    pub fn max_batches(mut self, n: Option<u64>) -> Self {
        self.config.max_batches = n;
        self
    }

    /// Seed nodes in this order (None: the training split shuffled per
    /// epoch).
    pub fn seed_nodes(mut self, nodes: Option<Vec<u64>>) -> Self {
        self.config.seed_nodes = nodes;
        self
    }

    /// Link batches (None: node batches).
    pub fn link(mut self, task: Option<LinkTask>) -> Self {
        self.config.link = task;
        self
    }

    /// The link epoch's positives, where the caller has them.
    pub fn link_positives(mut self, positives: Option<Arc<LinkPositives>>) -> Self {
        self.config.link_positives = positives;
        self
    }

    /// The memory budget, if one was given.
    pub fn memory_budget(&self) -> Option<u64> {
        self.memory
    }

    /// Refuses what no run can take: fanouts that do not fit `store`'s
    /// schema, no seeds per batch, a zero k or superbatch, link batches
    /// whose negatives cannot fit the memory budget. (The command
    /// line's parsers refuse the numbers first, in their own words.)
    pub fn check(&self, store: &Store) -> Result<()> {
        self.config.fanouts.resolve(store.schema())?;
        if self.config.batch_size == 0 {
            return Err(Error::invalid_argument("batch size must be at least 1"));
        }
        if self.ginex.changeset_every == 0 {
            return Err(Error::invalid_argument(
                "changeset_every must be at least 1",
            ));
        }
        if self.sizes.superbatch == Some(0) {
            return Err(Error::invalid_argument("superbatch must be at least 1"));
        }
        if let Some(link) = &self.config.link {
            link.check_negatives(
                (self.config.batch_size, store.num_edges()),
                store.layout().row_bytes() as u64,
                self.memory,
            )?;
        }
        Ok(())
    }

    /// The configuration for `store` with its explicit or default sizes,
    /// before a memory budget plans the open ones ([`plan`](Self::plan)).
    pub fn unplanned(&self, store: &Store) -> EpochConfig {
        let ginex = GinexOptions {
            superbatch: self.sizes.superbatch.unwrap_or(self.ginex.superbatch),
            ..self.ginex.clone()
        };
        EpochConfig {
            cache: CacheConfig::new(self.policy, ginex, self.presc_rounds),
            feature_cache_rows: feature_cache_rows_for(
                self.sizes.feature_cache_bytes,
                store.layout().row_bytes() as u64,
                store.num_nodes(),
            ),
            neighbor_cache_bytes: self.sizes.neighbor_cache_bytes.unwrap_or(0),
            workers: self.workers.unwrap_or_else(default_workers),
            run_dir: self
                .run_dir
                .clone()
                .unwrap_or_else(|| store.dir().with_extension("runs")),
            ..self.config.clone()
        }
    }

    /// Plans `config` (this builder's [`unplanned`](Self::unplanned)
    /// configuration) under the memory budget, when one was given, with
    /// `extra_bytes(working set)` for what the caller needs beside the data
    /// path, and applies the plan to it; returns the plan to be shown.
    pub fn plan(
        &self,
        store: &Store,
        config: &mut EpochConfig,
        extra_bytes: &dyn Fn(&WorkingSet) -> u64,
    ) -> Result<Option<MemoryPlan>> {
        let Some(memory) = self.memory else {
            return Ok(None);
        };
        let plan = plan_epoch_with(store, config, memory, self.sizes, extra_bytes)?;
        plan.apply(config);
        Ok(Some(plan))
    }

    /// The configuration for `store`, planned under the memory budget when
    /// one was given ([`unplanned`](Self::unplanned), then
    /// [`plan`](Self::plan)).
    pub fn build(
        &self,
        store: &Store,
        extra_bytes: &dyn Fn(&WorkingSet) -> u64,
    ) -> Result<(EpochConfig, Option<MemoryPlan>)> {
        let mut config = self.unplanned(store);
        let plan = self.plan(store, &mut config, extra_bytes)?;
        Ok((config, plan))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(dir: &std::path::Path) -> Store {
        let path = dir.join("store");
        let synth = crate::import::synth::SynthParams {
            nodes: 400,
            dim: 8,
            ..Default::default()
        };
        crate::import::synth::generate_store(&synth, &path, &crate::progress::NoProgress).unwrap();
        Store::open(&path).unwrap()
    }

    /// With nothing set, the builder's configuration is
    /// `EpochConfig::default()` with the store's default feature cache
    /// and its runtime files beside the store.
    #[test]
    fn the_defaults_are_the_configuration_defaults() {
        let tmp = tempfile::tempdir().unwrap();
        let store = store(tmp.path());
        let (c, plan) = EpochConfigBuilder::new().build(&store, &|_| 0).unwrap();
        assert!(plan.is_none());
        let d = EpochConfig::default();
        let row_bytes = store.layout().row_bytes() as u64;
        assert_eq!(
            c.feature_cache_rows,
            feature_cache_rows_for(None, row_bytes, store.num_nodes())
        );
        assert_eq!(c.feature_cache_rows, 400, "256 MiB holds every row");
        assert_eq!(c.run_dir, store.dir().with_extension("runs"));
        assert_eq!(
            (c.cache, c.neighbor_cache_bytes, c.batch_size, c.workers),
            (d.cache, 0, d.batch_size, d.workers)
        );
        assert_eq!(
            (c.fanouts, c.merge_gap_pages),
            (d.fanouts, d.merge_gap_pages)
        );
    }

    /// Explicit sizes are kept; the policy's options reach only it.
    #[test]
    fn explicit_sizes_and_policy_options_are_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let store = store(tmp.path());
        let sizes = ExplicitSizes {
            feature_cache_bytes: Some(10 * store.layout().row_bytes() as u64),
            neighbor_cache_bytes: Some(4096),
            superbatch: Some(7),
        };
        let b = EpochConfigBuilder::new()
            .sizes(sizes)
            .changeset_every(3)
            .presc_rounds(4)
            .workers(Some(2));
        let c = b.unplanned(&store);
        assert_eq!(
            (c.feature_cache_rows, c.neighbor_cache_bytes, c.workers),
            (10, 4096, 2)
        );
        let g = c.cache.ginex().unwrap();
        assert_eq!((g.superbatch, g.changeset_every), (7, 3));
        let presc = b.clone().policy(Policy::Presc).unplanned(&store);
        assert_eq!(presc.cache, CacheConfig::Presc { rounds: 4 });
        let lru = b.policy(Policy::Lru).unplanned(&store);
        assert_eq!(lru.cache, CacheConfig::of(Policy::Lru));
    }

    /// A budget plans the open sizes and applies them; an explicit size is
    /// the plan's too.
    #[test]
    fn a_budget_plans_the_open_sizes() {
        let tmp = tempfile::tempdir().unwrap();
        let store = store(tmp.path());
        let b = EpochConfigBuilder::new()
            .batch_size(20)
            .fanouts(Fanouts::Uniform(vec![5, 5]))
            .workers(Some(1))
            .run_dir(Some(tmp.path().join("runs")))
            .memory(Some(1 << 30))
            .sizes(ExplicitSizes {
                superbatch: Some(3),
                ..ExplicitSizes::default()
            });
        let (c, plan) = b.build(&store, &|_| 0).unwrap();
        let plan = plan.expect("a budget plans");
        assert_eq!(c.feature_cache_rows, plan.feature_cache_rows as usize);
        assert_eq!(c.neighbor_cache_bytes, plan.neighbor_cache_bytes);
        assert_eq!(
            (plan.superbatch, c.cache.ginex().unwrap().superbatch),
            (3, 3)
        );
        assert_eq!(c.run_dir, tmp.path().join("runs"));
        // A budget below what the plan needs is refused, as the planner does.
        let small = b.memory(Some(1)).build(&store, &|_| 0);
        assert!(small.is_err());
    }
}
