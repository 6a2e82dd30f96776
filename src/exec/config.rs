//! What an epoch runs: the policy, cache sizes, batches, the superbatch
//! schedule, where runtime files go.

use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::exec::policy::Policy;

/// What an epoch runs.
#[derive(Debug, Clone)]
pub struct EpochConfig {
    /// Feature-cache policy.
    pub policy: Policy,
    /// Feature-cache capacity in rows.
    pub feature_cache_rows: usize,
    /// Neighbor-cache budget in bytes (0 = none; unused by `mmap`).
    pub neighbor_cache_bytes: u64,
    /// Seeds per batch.
    pub batch_size: usize,
    /// Fanouts: one count per hop for all relations, or per relation.
    pub fanouts: crate::sample::fanouts::Fanouts,
    /// Batches per superbatch (`ginex`).
    pub superbatch: u64,
    /// k of the k-hop approximation (`ginex`).
    pub changeset_every: usize,
    /// Run seed.
    pub seed: u64,
    /// Epoch number.
    pub epoch: u64,
    /// Pre-sampling epochs (`presc`).
    pub presc_rounds: u64,
    /// Sampling workers (`ginex`'s superbatch sampling).
    pub workers: usize,
    /// Directory for runtime files.
    pub run_dir: PathBuf,
    /// The neighbor cache file (None: the default location beside the
    /// store, see [`crate::sample::neighbor_cache_reuse`]); built there when missing.
    pub neighbor_cache: Option<PathBuf>,
    /// Keep runtime files after each superbatch (in this run's own
    /// directory under `run_dir`, named in the report).
    pub keep_runs: bool,
    /// How the `ginex` inspector overlaps the executor.
    pub pipeline: Pipeline,
    /// `ginex`: each superbatch starts with the cache the previous one ended
    /// with (false: every superbatch's cache is rebuilt from nothing, as
    /// Ginex does; kept for comparison).
    pub carry_over: bool,
    /// `ginex`: rank the nodes a superbatch does not use again by
    /// out-degree, so the cache carries the likeliest reused rows into the
    /// next superbatch and never leaves slots empty (false: drop them, as
    /// superbatch-local Belady does; see
    /// [`ReusePrior`](crate::inspect::changeset::ReusePrior)).
    pub reuse_prior: bool,
    /// `ginex`: a batch that misses a row reads its whole page; let the
    /// changesets also admit the page's other rows the superbatch uses
    /// later (page companions), per superbatch when that reads fewer pages
    /// (see [`plan_superbatch`](crate::inspect::superbatch::plan_superbatch);
    /// false: rows only, for comparison).
    pub page_companions: bool,
    /// Feature pages at most this far apart are read as one, the pages
    /// between them dropped (None: one read per page; see
    /// [`GatherOptions::merge_gap_pages`](crate::store::gather::GatherOptions::merge_gap_pages)).
    pub merge_gap_pages: Option<u64>,
    /// Whether a gather may read its pages' span in one sequential pass
    /// when the read-cost model prices it lower (see
    /// [`crate::store::read_cost`]).
    pub sequential_reads: crate::store::read_cost::SequentialReads,
    /// The device's read cost (`ginex bench io` fits it).
    pub read_cost: crate::store::read_cost::ReadCostModel,
    /// Stop after this many batches (None = the whole epoch).
    pub max_batches: Option<u64>,
    /// Seed nodes: the training split shuffled per epoch (None), or these
    /// nodes in this order (evaluation, prediction).
    pub seed_nodes: Option<Vec<u64>>,
}

/// Feature-cache bytes of a run that neither gives them nor plans a
/// `--memory` budget.
pub const DEFAULT_FEATURE_CACHE_BYTES: u64 = 256 << 20;
/// Batches per superbatch of a run that neither gives them nor plans a
/// `--memory` budget.
pub const DEFAULT_SUPERBATCH: u64 = 100;

/// The defaults of every run, in one place (the CLI's flags, the
/// [`LoaderBuilder`](crate::LoaderBuilder) and the Python `Loader` start
/// from them): the `ginex` policy with carry-over, the reuse prior and page
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
            policy: Policy::Ginex,
            feature_cache_rows: 0,
            neighbor_cache_bytes: 0,
            batch_size: 1000,
            fanouts: crate::sample::fanouts::Fanouts::default(),
            superbatch: DEFAULT_SUPERBATCH,
            changeset_every: 1,
            seed: 0,
            epoch: 0,
            presc_rounds: 1,
            workers: default_workers(),
            run_dir: std::env::temp_dir().join("ginex-runs"),
            neighbor_cache: None,
            keep_runs: false,
            pipeline: Pipeline::default(),
            carry_over: true,
            reuse_prior: true,
            page_companions: true,
            merge_gap_pages: Some(crate::store::gather::DEFAULT_MERGE_GAP_PAGES),
            sequential_reads: Default::default(),
            read_cost: Default::default(),
            max_batches: None,
            seed_nodes: None,
        }
    }
}

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
