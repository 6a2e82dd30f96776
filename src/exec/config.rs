//! What an epoch runs: the policy, cache sizes, batches, the superbatch
//! schedule, where runtime files go.

use std::path::PathBuf;

use serde::{Serialize, Serializer};

use crate::cache::{DynamicKind, Kind, Policy};
use crate::error::{Error, Result};
pub use crate::inspect::lockstep::Lockstep;
pub use crate::inspect::superbatches::FirstSuperbatch;

/// What an epoch runs: the cache policy with its own options, then the
/// sampling, the caches' sizes, the I/O options and the run files.
/// [`EpochConfigBuilder`](crate::exec::builder::EpochConfigBuilder) makes
/// one for a store.
///
/// Serialized (the `parameters` of `ginex epoch --report`) as one flat
/// object: the policy and every policy option (those of another policy
/// read as their defaults, so the report keeps one shape), then the
/// fields below by name, `merge_gap_pages` as `read_merge_gap` and `link`
/// as `task` (`node`, or `link (neg K, MODE[, undirected])`). Where files
/// go (`run_dir`, `neighbor_cache`) and what the caller hands over in
/// memory (`seed_nodes`, `out_degree_prior`, `link_positives`) are left
/// out.
#[derive(Debug, Clone, Serialize)]
pub struct EpochConfig {
    /// Feature-cache policy, with the options only it has.
    #[serde(flatten)]
    pub cache: CacheConfig,
    /// Feature-cache capacity in rows.
    pub feature_cache_rows: usize,
    /// Neighbor-cache budget in bytes (0 = none; unused by `mmap`).
    pub neighbor_cache_bytes: u64,
    /// Seeds per batch.
    pub batch_size: usize,
    /// Fanouts: one count per hop for all relations, or per relation.
    pub fanouts: crate::sample::fanouts::Fanouts,
    /// The sampler that draws them (neighbor sampling unless told).
    pub sampler: crate::sample::labor::SamplerConfig,
    /// Run seed.
    pub seed: u64,
    /// Epoch number.
    pub epoch: u64,
    /// Sampling workers (`ginex`'s superbatch sampling).
    pub workers: usize,
    /// Directory for runtime files.
    #[serde(skip)]
    pub run_dir: PathBuf,
    /// The neighbor cache file (None: the default location beside the
    /// store, see [`crate::sample::neighbor_cache_reuse`]); built there when missing.
    #[serde(skip)]
    pub neighbor_cache: Option<PathBuf>,
    /// Feature pages at most this far apart are read as one, the pages
    /// between them dropped (None: one read per page; see
    /// [`GatherOptions::merge_gap_pages`](crate::store::gather::GatherOptions::merge_gap_pages)).
    #[serde(rename = "read_merge_gap")]
    pub merge_gap_pages: Option<u64>,
    /// Whether a gather may read its pages' span in one sequential pass
    /// when the read-cost model prices it lower (see
    /// [`crate::store::read_cost`]).
    pub sequential_reads: crate::store::read_cost::SequentialReads,
    /// The device's read cost (`ginex bench io` fits it).
    #[serde(serialize_with = "read_cost_arg")]
    pub read_cost: crate::store::read_cost::ReadCostModel,
    /// Neighbour-list reads in flight at most (the feature gathers keep
    /// their own depth, [`feature_queue_depth`](Self::feature_queue_depth)).
    pub list_queue_depth: usize,
    /// Feature-page reads in flight at most, per reader (the gathers' and
    /// the staged init's). Same batches, misses and pages at every depth.
    pub feature_queue_depth: usize,
    /// Stop after this many batches (None = the whole epoch).
    pub max_batches: Option<u64>,
    /// Seed nodes: the training split shuffled per epoch (None), or these
    /// nodes in this order (evaluation, prediction).
    #[serde(skip)]
    pub seed_nodes: Option<Vec<u64>>,
    /// The store's reuse prior, where the caller has it already (the
    /// `--memory` planner derives it from the out-degrees its cache split
    /// counts, and [`MemoryPlan::apply`](crate::exec::plan::MemoryPlan::apply)
    /// hands it on), so the run does not count them again; None: the run
    /// computes it. Used only where [`GinexOptions::reuse_prior`] is on.
    #[serde(skip)]
    pub out_degree_prior: Option<std::sync::Arc<crate::cache::belady::ReusePrior>>,
    /// Link batches: positive edges with negatives ([`crate::sample::link`])
    /// instead of node seeds; None: node batches.
    #[serde(rename = "task", serialize_with = "task_name")]
    pub link: Option<crate::sample::link::LinkTask>,
    /// The link epoch's training positives where the caller has them
    /// (None: every edge of the CSC, each undirected pair once).
    #[serde(skip)]
    pub link_positives: Option<std::sync::Arc<crate::sample::link::LinkPositives>>,
}

/// A feature-cache policy with the options that only it has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheConfig {
    /// Belady changesets from the inspector's runtime files.
    Ginex(GinexOptions),
    /// Static cache of the highest out-degree nodes (PaGraph).
    Degree,
    /// Static cache of the nodes most often sampled in pre-sampling epochs
    /// (FGNN's PreSC).
    Presc {
        /// Pre-sampling epochs.
        rounds: u64,
    },
    /// A dynamic row cache (any policy of [`Kind::Dynamic`]).
    Dynamic(DynamicKind),
    /// No application cache: memory-mapped files through the page cache.
    Mmap,
    /// No cache: every row read through the gather engine.
    None,
}

/// Pre-sampling epochs of `presc` unless told otherwise.
pub const DEFAULT_PRESC_ROUNDS: u64 = 1;

impl CacheConfig {
    /// `policy` with its default options (by its [`Kind`] in the policy
    /// table).
    pub fn of(policy: Policy) -> CacheConfig {
        if let Some(kind) = policy.dynamic() {
            return CacheConfig::Dynamic(kind);
        }
        match policy.entry().kind {
            Kind::Belady => CacheConfig::Ginex(GinexOptions::default()),
            Kind::Degree => CacheConfig::Degree,
            Kind::Presc => CacheConfig::Presc {
                rounds: DEFAULT_PRESC_ROUNDS,
            },
            Kind::Mmap => CacheConfig::Mmap,
            // (A dynamic row is a `DynamicKind`, above.)
            Kind::None | Kind::Dynamic(_) => CacheConfig::None,
        }
    }

    /// `policy` with `ginex`'s options if it is `ginex` and `presc_rounds`
    /// if it is `presc` (the other policies have no options): how the
    /// command line and the loaders, which take every option whatever
    /// the policy, reduce to one configuration.
    pub fn new(policy: Policy, ginex: GinexOptions, presc_rounds: u64) -> CacheConfig {
        match CacheConfig::of(policy) {
            CacheConfig::Ginex(_) => CacheConfig::Ginex(ginex),
            CacheConfig::Presc { .. } => CacheConfig::Presc {
                rounds: presc_rounds,
            },
            other => other,
        }
    }

    /// The policy this configures.
    pub fn policy(&self) -> Policy {
        match self {
            CacheConfig::Ginex(_) => Policy::Ginex,
            CacheConfig::Degree => Policy::Degree,
            CacheConfig::Presc { .. } => Policy::Presc,
            CacheConfig::Dynamic(kind) => kind.policy(),
            CacheConfig::Mmap => Policy::Mmap,
            CacheConfig::None => Policy::None,
        }
    }

    /// The `ginex` policy's options, if this is it.
    pub fn ginex(&self) -> Option<&GinexOptions> {
        match self {
            CacheConfig::Ginex(g) => Some(g),
            _ => None,
        }
    }

    /// The `ginex` policy's options to change, if this is it.
    pub fn ginex_mut(&mut self) -> Option<&mut GinexOptions> {
        match self {
            CacheConfig::Ginex(g) => Some(g),
            _ => None,
        }
    }
}

/// The policy's name and every policy's options, those of another policy
/// at their defaults (one shape for every policy).
impl Serialize for CacheConfig {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Options<'a> {
            policy: &'static str,
            #[serde(flatten)]
            ginex: &'a GinexOptions,
            presc_rounds: u64,
        }
        let defaults = GinexOptions::default();
        Options {
            policy: self.policy().name(),
            ginex: self.ginex().unwrap_or(&defaults),
            presc_rounds: match self {
                CacheConfig::Presc { rounds } => *rounds,
                _ => DEFAULT_PRESC_ROUNDS,
            },
        }
        .serialize(s)
    }
}

/// `read_cost` as `--read-cost` takes it.
fn read_cost_arg<S: Serializer>(
    m: &crate::store::read_cost::ReadCostModel,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(&m.to_arg())
}

/// `link` as the report's `task`: `node`, or `link (neg K, MODE[,
/// undirected][, exclude none][, negatives SOURCE][, edge order ORDER])`
/// (the last two where not uniform and random).
fn task_name<S: Serializer>(
    link: &Option<crate::sample::link::LinkTask>,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    match link {
        None => s.serialize_str("node"),
        Some(l) => s.serialize_str(&format!(
            "link (neg {}, {}{}{}{}{})",
            l.neg,
            l.mode.name(),
            if l.undirected { ", undirected" } else { "" },
            if l.exclude == crate::sample::link::LinkExclude::Nothing {
                ", exclude none"
            } else {
                ""
            },
            if l.negatives == crate::sample::link::NegSource::Uniform {
                String::new()
            } else {
                format!(", negatives {}", l.negatives.name())
            },
            if l.order == crate::sample::link::EdgeOrder::Random {
                String::new()
            } else {
                format!(", edge order {}", l.order.name())
            }
        )),
    }
}

/// The options of the `ginex` policy (the inspector–executor).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GinexOptions {
    /// Batches per superbatch.
    pub superbatch: u64,
    /// How long the first superbatches are: `short` starts the epoch with
    /// a short one and doubles up to [`superbatch`](Self::superbatch), so
    /// the first batch waits for a short sampling and changesets; `full`
    /// cuts every superbatch at `superbatch`; `auto` (the default) is
    /// resolved by the `--memory` plan: `full`, sampled in one round,
    /// where the topology is larger than the budget
    /// ([`crate::exec::list_bound`]), `short` otherwise and without a plan.
    /// The same batches either way; misses are optimal per superbatch.
    pub first_superbatch: FirstSuperbatch,
    /// k of the k-hop approximation (1: exact changesets).
    pub changeset_every: usize,
    /// How the inspector overlaps the executor.
    pub pipeline: Pipeline,
    /// Each superbatch starts with the cache the previous one ended with
    /// (false: every superbatch's cache is rebuilt from nothing, as Ginex
    /// does; kept for comparison).
    pub carry_over: bool,
    /// Rank the nodes a superbatch does not use again by out-degree, so the
    /// cache carries the likeliest reused rows into the next superbatch and
    /// never leaves slots empty (false: drop them, as superbatch-local
    /// Belady does; see
    /// [`ReusePrior`](crate::cache::belady::ReusePrior)).
    pub reuse_prior: bool,
    /// A batch that misses a row reads its whole page; let the changesets
    /// also admit the page's other rows the superbatch uses later (page
    /// companions), per superbatch when that reads fewer pages (see
    /// [`plan_superbatch`](crate::inspect::superbatch::plan_superbatch);
    /// false: rows only, for comparison).
    pub page_companions: bool,
    /// Keep runtime files after each superbatch (in this run's own
    /// directory under `run_dir`, named in the report).
    pub keep_runs: bool,
    /// Under [`Pipeline::Full`], read the first superbatch's init as soon
    /// as its first (short) sampling rounds fix it (false: once the whole
    /// superbatch is sampled; for comparison). The same bytes either way.
    pub early_first_init: bool,
    /// How many of a superbatch's batches the inspector samples hop by
    /// hop together (the `--memory` planner resolves [`Lockstep::Auto`]).
    pub lockstep: Lockstep,
}

/// Exact changesets over superbatches of [`DEFAULT_SUPERBATCH`] batches
/// (the first ones short) under the `full` pipeline, with carry-over, the reuse prior and page
/// companions; runtime files removed.
impl Default for GinexOptions {
    fn default() -> Self {
        GinexOptions {
            superbatch: DEFAULT_SUPERBATCH,
            first_superbatch: FirstSuperbatch::Auto,
            changeset_every: 1,
            pipeline: Pipeline::default(),
            carry_over: true,
            reuse_prior: true,
            page_companions: true,
            keep_runs: false,
            early_first_init: true,
            lockstep: Lockstep::Auto,
        }
    }
}

/// Feature-cache bytes of a run that neither gives them nor plans a
/// `--memory` budget.
pub const DEFAULT_FEATURE_CACHE_BYTES: u64 = 256 << 20;
/// Batches per superbatch of a run that neither gives them nor plans a
/// `--memory` budget.
pub const DEFAULT_SUPERBATCH: u64 = 100;

/// The defaults of every run, in one place (the
/// [`EpochConfigBuilder`](crate::exec::builder::EpochConfigBuilder) starts
/// from them, and the CLI's flags, the
/// [`LoaderBuilder`](crate::LoaderBuilder) and the Python `Loader` through
/// it): the `ginex` policy with carry-over, the reuse prior and page
/// companions; 1000 seeds a batch with fanouts 10,10,10; exact changesets
/// over superbatches of [`DEFAULT_SUPERBATCH`] batches under the `full`
/// pipeline; one sampling worker per core; merged reads, a sequential
/// pass where this machine's read-cost model prices it lower; the whole
/// training split. No feature or neighbor cache: their sizes depend on the
/// store (`feature_cache_rows_for`) or the plan. Runtime files go under
/// the system's temporary directory (each run in a directory of its own).
impl Default for EpochConfig {
    fn default() -> Self {
        EpochConfig {
            cache: CacheConfig::Ginex(GinexOptions::default()),
            feature_cache_rows: 0,
            neighbor_cache_bytes: 0,
            batch_size: 1000,
            fanouts: crate::sample::fanouts::Fanouts::default(),
            sampler: Default::default(),
            seed: 0,
            epoch: 0,
            workers: default_workers(),
            run_dir: std::env::temp_dir().join("ginex-runs"),
            neighbor_cache: None,
            merge_gap_pages: Some(crate::store::gather::DEFAULT_MERGE_GAP_PAGES),
            sequential_reads: Default::default(),
            read_cost: Default::default(),
            list_queue_depth: DEFAULT_LIST_QUEUE_DEPTH,
            feature_queue_depth: DEFAULT_FEATURE_QUEUE_DEPTH,
            max_batches: None,
            seed_nodes: None,
            out_degree_prior: None,
            link: None,
            link_positives: None,
        }
    }
}

/// Default of [`EpochConfig::list_queue_depth`].
pub const DEFAULT_LIST_QUEUE_DEPTH: usize = 64;

/// Default of [`EpochConfig::feature_queue_depth`]: on the project's
/// machine a queue of 256 random page reads moves 15–20 % more than one of
/// 64 (`ginex bench io --qd 64,256`), and at 5× the features over the
/// budget every policy's epoch ran 12–15 % faster (docs/lab/performance-journal.md).
/// The read-cost model is fitted at 64 (`bench io`'s size sweep).
pub const DEFAULT_FEATURE_QUEUE_DEPTH: usize = 256;

/// One sampling worker per core.
pub fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Feature-cache rows for `bytes` (the default when None) of rows of
/// `row_bytes`, at most the store's `num_nodes`.
pub fn feature_cache_rows_for(bytes: Option<u64>, row_bytes: u64, num_nodes: u64) -> usize {
    (bytes.unwrap_or(DEFAULT_FEATURE_CACHE_BYTES) / row_bytes.max(1)).min(num_nodes) as usize
}

impl EpochConfig {
    /// Batches a pass of this configuration runs when the training split
    /// has `train_nodes` nodes (its seeds are `seed_nodes` when given), for
    /// progress displays.
    pub fn num_batches(&self, train_nodes: usize) -> u64 {
        let seeds = self.seed_nodes.as_ref().map_or(train_nodes, Vec::len);
        let all = seeds.div_ceil(self.batch_size.max(1)) as u64;
        self.max_batches.map_or(all, |m| m.min(all))
    }
}

/// How the `ginex` inspector's stages overlap the executor (see
/// [`crate::exec::pipeline`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pipeline {
    /// Every stage alone.
    Serial,
    /// Changesets of `s` while `s+1` samples; the main loop alone (Ginex).
    Overlap,
    /// Also sample and precompute `s+1` during the main loop of `s`, and
    /// read `s`'s init rows while its batches run (staged init, see
    /// [`crate::exec::staged_init`]). The default: the fastest measured.
    #[default]
    Full,
}

impl Serialize for Pipeline {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl Pipeline {
    /// Every schedule.
    pub const ALL: [Pipeline; 3] = [Pipeline::Serial, Pipeline::Overlap, Pipeline::Full];

    /// Name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Pipeline::Serial => "serial",
            Pipeline::Overlap => "overlap",
            Pipeline::Full => "full",
        }
    }

    /// Parses a name.
    pub fn parse(s: &str) -> Result<Pipeline> {
        Error::parse_name(s, "pipeline", &Pipeline::ALL, Pipeline::name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::link::{LinkExclude, LinkTask, NegMode};

    /// The serialized configuration is one flat object: another policy's
    /// options read as their defaults, the policy's own as set, the link
    /// task as its text; paths and in-memory inputs are left out.
    #[test]
    fn the_configuration_serializes_flat_with_every_policys_options() {
        let presc = EpochConfig {
            cache: CacheConfig::Presc { rounds: 3 },
            link: Some(LinkTask {
                neg: 2,
                mode: NegMode::Triplet,
                undirected: true,
                exclude: LinkExclude::Nothing,
                ..LinkTask::default()
            }),
            merge_gap_pages: None,
            seed_nodes: Some(vec![1, 2]),
            ..EpochConfig::default()
        };
        let v = serde_json::to_value(&presc).unwrap();
        assert_eq!(v["policy"], "presc");
        assert_eq!(v["presc_rounds"], 3);
        assert_eq!(v["superbatch"], DEFAULT_SUPERBATCH);
        assert_eq!(v["pipeline"], "full");
        assert_eq!(v["task"], "link (neg 2, triplet, undirected, exclude none)");
        let local = EpochConfig {
            link: Some(LinkTask {
                negatives: crate::sample::link::NegSource::Batch,
                order: crate::sample::link::EdgeOrder::Blocked { ranges: 8 },
                ..LinkTask::default()
            }),
            ..EpochConfig::default()
        };
        assert_eq!(
            serde_json::to_value(&local).unwrap()["task"],
            "link (neg 1, binary, negatives batch, edge order blocked:8)"
        );
        assert!(v["read_merge_gap"].is_null());
        for gone in ["run_dir", "neighbor_cache", "seed_nodes", "cache", "link"] {
            assert!(v.get(gone).is_none(), "{gone}: {v}");
        }
        let ginex = EpochConfig {
            cache: CacheConfig::Ginex(GinexOptions {
                superbatch: 7,
                pipeline: Pipeline::Serial,
                carry_over: false,
                ..GinexOptions::default()
            }),
            ..EpochConfig::default()
        };
        let v = serde_json::to_value(&ginex).unwrap();
        assert_eq!(
            (
                &v["policy"],
                &v["superbatch"],
                &v["pipeline"],
                &v["carry_over"]
            ),
            (&"ginex".into(), &7.into(), &"serial".into(), &false.into())
        );
        assert_eq!(
            (&v["presc_rounds"], &v["task"]),
            (&1.into(), &"node".into())
        );
        assert_eq!(v["read_cost"], ginex.read_cost.to_arg());
        assert_eq!(v["sequential_reads"], "auto");
    }
}
