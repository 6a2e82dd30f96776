//! `ginex epoch`: one epoch of data preparation under a policy, measured.

use ginex::internals::sample::link::{LinkExclude, LinkTask};
use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use serde::Serialize;

use crate::args::{Fanouts, MergeGap};
use crate::machine::{machine_description, peak_rss_bytes};
use ginex::internals::cache::Policy;
use ginex::internals::error::{Error, Result};
use ginex::internals::exec::builder::EpochConfigBuilder;
use ginex::internals::exec::config::{CacheConfig, FirstSuperbatch, GinexOptions, Lockstep};
use ginex::internals::exec::epoch::{run_epoch, EpochConfig, EpochReport};
use ginex::internals::exec::pipeline::Pipeline;
use ginex::internals::exec::plan::{ExplicitSizes, MemoryPlan};
use ginex::internals::exec::report::ReportJson;
use ginex::internals::import::locality::Scatter;
use ginex::internals::sample::labor::{Sampler, SamplerConfig};
use ginex::internals::store::Store;

/// Run one epoch of data preparation (sample, inspect, gather, cache
/// updates) without a model, and report stage times and cache counters.
///
/// Example: ginex epoch STORE --policy ginex --feature-cache-bytes 1GiB --neighbor-cache-bytes 256MiB
#[derive(Debug, Args)]
pub struct EpochArgs {
    /// The data path.
    #[command(flatten)]
    pub data: DataArgs,
    /// Epoch.
    #[arg(long, default_value_t = 0)]
    pub epoch: u64,
    /// Write the full report (per-batch counters included) as JSON here:
    /// written beside it and renamed into place when the epoch succeeds, so
    /// an existing file is replaced only by a complete report.
    #[arg(long)]
    pub report: Option<PathBuf>,
}

/// What an epoch's batches are drawn from and how: the store, the batch
/// size, the fanouts and the run seed. Every command that samples shares
/// these flags: `sample` and `inspect` directly, `epoch` and `train`
/// through [`DataArgs`].
#[derive(Debug, Args)]
pub struct SamplingArgs {
    /// The store.
    pub store: PathBuf,
    /// Seeds per batch.
    #[arg(long, default_value_t = 1000)]
    pub batch_size: usize,
    /// Neighbors sampled per hop, the seeds' hop first (-1 = all
    /// neighbors): 10,10,10 for all relations, or on a typed store per
    /// relation, one count per hop each: cites=10:5,writes=5:5,*=2:0 (`*`:
    /// every relation not named; a relation not covered is not sampled;
    /// names as the schema lists them, or src:name:dst).
    #[arg(long, default_value = "10,10,10", value_parser = crate::args::fanouts, allow_hyphen_values = true)]
    pub fanouts: Fanouts,
    /// Run seed (sampling and the per-epoch shuffle of the seeds).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The sampler: neighbor (uniform, GraphSAGE), or layer-neighbor
    /// sampling labor-0, labor-1, labor-* (one random number per candidate
    /// vertex shared by the batch's targets: fewer distinct vertices;
    /// edges carry importance weights).
    #[arg(long, default_value = "neighbor", value_parser = crate::args::sampler)]
    pub sampler: Sampler,
    /// LABOR: the same random number per vertex at every hop.
    #[arg(long)]
    pub layer_dependency: bool,
    /// LABOR: random numbers correlated across this many consecutive
    /// batches (1 = independent).
    #[arg(long, default_value_t = 1)]
    pub batch_dependency: u64,
}

impl SamplingArgs {
    /// The sampler and its options, checked.
    pub fn sampler_config(&self) -> Result<SamplerConfig> {
        let c = SamplerConfig {
            sampler: self.sampler,
            layer_dependency: self.layer_dependency,
            batch_dependency: self.batch_dependency,
        };
        c.check()?;
        Ok(c)
    }
}

/// The data-path flags `ginex epoch` and `ginex train` share: the
/// sampling flags and the data path's caches, planner and pipeline.
#[derive(Debug, Args)]
pub struct DataArgs {
    /// The store, batches, fanouts and seed.
    #[command(flatten)]
    pub sampling: SamplingArgs,
    /// Feature-cache policy. Every policy but mmap checks the page CRC of every feature
    /// read; mmap (the PyG+ baseline) reads through the page cache and checks
    /// nothing.
    #[arg(long, default_value = "ginex", value_parser = crate::args::policy())]
    pub policy: Policy,
    /// One memory budget for the whole process (e.g. 3GiB): the planner
    /// measures a few batches and sizes the neighbor cache, the feature
    /// cache and the superbatch to fit, prints the plan, and refuses a
    /// budget it cannot meet with the minimum it needs. Explicit cache and
    /// superbatch sizes override its choices.
    #[arg(long, value_parser = crate::args::bytes, allow_hyphen_values = true)]
    pub memory: Option<u64>,
    /// Feature-cache size (rows = bytes / row bytes) [default: 256MiB, or
    /// planned with --memory].
    #[arg(long, value_parser = crate::args::bytes)]
    pub feature_cache_bytes: Option<u64>,
    /// Neighbor-cache size (0 = none) [default: 0, or planned with
    /// --memory]. Built once beside the store (STORE.ncache/) and reused by
    /// every later run with the same size; see `ginex cache build`.
    #[arg(long, value_parser = crate::args::bytes)]
    pub neighbor_cache_bytes: Option<u64>,
    /// Neighbor-cache file to use instead of the default location (must
    /// match the store, codec and size; built there if missing).
    #[arg(long)]
    pub neighbor_cache: Option<PathBuf>,
    /// Batches per superbatch (ginex), at least 1 [default: 100, or planned
    /// with --memory].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub superbatch: Option<u64>,
    /// How the ginex inspector overlaps the executor: serial; overlap
    /// (changesets of a superbatch computed while the next one samples, the
    /// main loop alone, as in Ginex); full, the default (the next superbatch
    /// is also sampled during the main loop, and a superbatch's init rows
    /// are read while its batches run). Results are identical; only the
    /// time differs.
    #[arg(long, default_value = "full", value_parser = crate::args::pipeline)]
    pub pipeline: Pipeline,
    /// Rebuild the feature cache from nothing at every superbatch (Ginex's
    /// original init) instead of carrying it over; for comparison.
    #[arg(long)]
    pub no_carry_over: bool,
    /// Drop the rows a superbatch does not use again, as superbatch-local
    /// Belady (Ginex) does, instead of ranking them by out-degree so the
    /// cache carries the likeliest reused rows into the next superbatch;
    /// for comparison. Each superbatch's own reads are optimal either way.
    #[arg(long)]
    pub no_reuse_prior: bool,
    /// Admit rows by row only: without it, a batch that misses a row reads
    /// its whole 4 KiB page, and the changesets may also cache the page's
    /// other rows the superbatch uses later (page companions), in every
    /// superbatch where that reads fewer pages than rows alone; for
    /// comparison.
    #[arg(long)]
    pub no_page_companions: bool,
    /// How long the ginex epoch's first superbatches are: auto, the
    /// default (with --memory: full where the store's topology is larger
    /// than the budget, since every lockstep round then reads most of it
    /// however short, and the first superbatch is sampled in one round;
    /// short otherwise); short (16 batches, then twice the one before up
    /// to --superbatch, so the first batch waits for a short sampling and
    /// changesets); full (every superbatch --superbatch batches). The same
    /// batches either way; misses are optimal per superbatch.
    #[arg(long, default_value = "auto", value_parser = crate::args::first_superbatch)]
    pub first_superbatch: FirstSuperbatch,
    /// k of the k-hop approximation (ginex).
    #[arg(long, default_value_t = 1, value_parser = crate::args::at_least_one)]
    pub changeset_every: usize,
    /// Pre-sampling epochs (presc).
    #[arg(long, default_value_t = 1)]
    pub presc_rounds: u64,
    /// Sampling workers (default: cores). The inspector samples rounds of
    /// workers × 4 batches (at least 16) in lockstep, each hop's lists read
    /// once, or the whole superbatch (`--lockstep`).
    #[arg(long, value_parser = crate::args::at_least_one)]
    pub workers: Option<usize>,
    /// How many batches the ginex inspector samples in lockstep (each
    /// hop's lists read once for them all, in file order): auto, the
    /// default (the whole superbatch where the --memory plan fits its
    /// batches in half the caches' budget, rounds otherwise; rounds
    /// without --memory); superbatch (the whole superbatch, and without
    /// --memory too); rounds (workers × 4 batches, at least 16). The
    /// batches are the same; only the reads and the memory differ.
    #[arg(long, default_value = "auto", value_parser = crate::args::lockstep)]
    pub lockstep: Lockstep,
    /// Directory for runtime files (default: STORE.runs beside the store).
    /// Each run writes only in a new `run-PID-NANOS/` directory of its own
    /// inside it and removes only that; nothing else there is touched.
    #[arg(long)]
    pub run_dir: Option<PathBuf>,
    /// Keep runtime files after each superbatch.
    #[arg(long)]
    pub keep_runs: bool,
    /// Feature pages needed at most this many pages apart are read as one
    /// read, the pages between them read and dropped (fewer, larger reads:
    /// a superbatch's init is dense enough to gain), and so are the CSC
    /// pages of the neighbour lists a sampling round reads; `off` reads
    /// every page on its own. `ginex bench io` measures the trade-off on a
    /// device.
    #[arg(long, default_value_t = MergeGap::default(), value_parser = crate::args::merge_gap)]
    pub read_merge_gap: MergeGap,
    /// Read a gather's pages in one sequential pass over their span (reads
    /// of up to 1 MiB, the pages between read and dropped) instead of
    /// random reads: `auto` where the read-cost model prices the pass
    /// lower (only while reads are merged), `never`, or `always` (for
    /// comparison). Batches are the same either way.
    #[arg(long, default_value = "auto", value_parser = crate::args::sequential_reads)]
    pub sequential_reads: ginex::internals::store::read_cost::SequentialReads,
    /// Neighbour-list reads in flight at most (the feature reads keep
    /// their own, `--feature-queue-depth`).
    #[arg(long, default_value_t = ginex::internals::exec::config::DEFAULT_LIST_QUEUE_DEPTH as u64, value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub list_queue_depth: u64,
    /// Feature-page reads in flight at most, per reader (the gathers' and
    /// ginex's staged init's): deeper keeps the device busy while a
    /// reader's thread waits for a core. Same batches, misses and pages at
    /// every depth.
    #[arg(long, default_value_t = ginex::internals::exec::config::DEFAULT_FEATURE_QUEUE_DEPTH as u64, value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub feature_queue_depth: u64,
    /// The device's read cost at queue depth 64, in microseconds: a read,
    /// a page of a small read, a page of a large read. The default is this
    /// project's machine; `ginex bench io STORE` fits a device's and
    /// prints the value to pass.
    #[arg(long, default_value_t = ginex::internals::store::read_cost::ReadCostModel::default(), value_parser = crate::args::read_cost)]
    pub read_cost: ginex::internals::store::read_cost::ReadCostModel,
    /// Stop each pass after this many batches.
    #[arg(long)]
    pub max_batches: Option<u64>,
    /// What a batch holds: `node` (seed nodes of the training split) or
    /// `link` (--batch-size positive edges, the store's train edge split
    /// or else every edge, shuffled per epoch, with --neg negatives each; the seeds are their
    /// endpoints, and the batch's own edges are left out of its sampled
    /// neighbourhoods).
    #[arg(long, default_value = "node", value_parser = ["node", "link"])]
    pub task: String,
    /// Negatives per positive edge (--task link): uniform destination
    /// corruption (the positive's source, a node drawn uniformly).
    #[arg(long, default_value_t = 1)]
    pub neg: usize,
    /// Where the training negatives come from (--task link): uniform (a
    /// node drawn uniformly: PyG's and DGL's), batch (the batch's own
    /// positive endpoints, degree-weighted: no extra feature rows or
    /// neighbourhoods to read) or mixed:F (a share F in [0, 1] from the
    /// batch, the rest uniform) [default: uniform]. Evaluation keeps the
    /// store's or uniform negatives.
    #[arg(long, value_name = "SOURCE", value_parser = crate::args::negatives)]
    pub negatives: Option<ginex::NegSource>,
    /// The order a link epoch visits its training edges in (--task link):
    /// random (shuffled) or blocked[:P] (blocks of P source × P
    /// destination node-id ranges, P = 16 by default, visited so that
    /// consecutive blocks share a range; shuffled per epoch at both
    /// levels) [default: random].
    #[arg(long, value_name = "ORDER", value_parser = crate::args::edge_order)]
    pub edge_order: Option<ginex::EdgeOrder>,
    /// How link batches present their negatives (--task link): binary
    /// (labelled edges) or triplet (source, positive and negative
    /// destinations), PyG's names.
    #[arg(long, default_value = "binary", value_parser = crate::args::neg_mode)]
    pub neg_mode: ginex::NegMode,
    /// The graph is undirected (--task link; implied by a store whose edge
    /// splits are undirected): each pair is one positive (the direction
    /// with src <= dst), and a batch leaves both directions of its edges
    /// out of its neighbourhoods.
    #[arg(long)]
    pub undirected: bool,
    /// Link prediction on one relation of a typed store (--task link),
    /// SRC:REL:DST (author:writes:paper): its edges are the positives,
    /// negatives are drawn from its destination type.
    #[arg(long, value_name = "SRC:REL:DST")]
    pub target_relation: Option<String>,
    /// Which edges a link batch leaves out of its sampled neighbourhoods
    /// (--task link; DGL's exclude=): self (its own positive edges, and
    /// their reverses with --undirected, so a model cannot read the answer
    /// off the graph) or none (every batch samples the whole graph: the
    /// GAE protocol's full-batch training, where one batch of every
    /// training edge would otherwise see no graph).
    /// [default: self]
    #[arg(long, value_parser = crate::args::link_exclude)]
    pub exclude: Option<LinkExclude>,
}

impl DataArgs {
    /// The training positives of `--target-relation`, or of the relation
    /// the store's edge splits are of (None for neither).
    pub fn relation_positives(
        &self,
        store: &Store,
    ) -> Result<Option<std::sync::Arc<ginex::internals::sample::link::LinkPositives>>> {
        use ginex::internals::sample::link::{link_relation, LinkPositives};
        if let (Some(name), false) = (&self.target_relation, self.task == "link") {
            return Err(Error::invalid_argument(format!(
                "--target-relation {name} is for --task link"
            )));
        }
        if self.task != "link" {
            return Ok(None);
        }
        let splits = store.edge_splits()?;
        let Some(r) = link_relation(store, self.target_relation.as_deref(), splits.as_ref())?
        else {
            return Ok(None);
        };
        let undirected = self.undirected || splits.is_some_and(|s| s.undirected);
        Ok(Some(std::sync::Arc::new(LinkPositives::of_relation(
            store, r, undirected,
        )?)))
    }

    /// The link task of `--task link` (None for `node`). Refused: a
    /// negative source or an edge order on a node task.
    pub fn link_task(&self) -> Result<Option<LinkTask>> {
        if self.task != "link" {
            let given = [
                ("--negatives", self.negatives.map(|n| n.name())),
                ("--edge-order", self.edge_order.map(|o| o.name())),
                ("--exclude", self.exclude.map(|e| e.name().into())),
            ];
            if let Some((flag, Some(v))) = given.into_iter().find(|(_, v)| v.is_some()) {
                return Err(Error::invalid_argument(format!(
                    "{flag} {v} is for --task link (node batches have no negatives, no edges to order and no positive edges to exclude)"
                )));
            }
            return Ok(None);
        }
        Ok(Some(LinkTask {
            neg: self.neg,
            mode: self.neg_mode,
            undirected: self.undirected,
            exclude: self.exclude.unwrap_or_default(),
            negatives: self.negatives.unwrap_or_default(),
            order: self.edge_order.unwrap_or_default(),
        }))
    }

    /// The epoch configuration these flags give for `store` (epoch 0):
    /// its [`build`](EpochConfigBuilder::build) plans it under `--memory`
    /// when it is given; [`unplanned`](EpochConfigBuilder::unplanned) and
    /// [`plan`](EpochConfigBuilder::plan) for a caller that measures its
    /// own memory on the configuration first.
    pub fn builder(&self, store: &Store) -> Result<EpochConfigBuilder> {
        // Before any work (the positives, the plan): a --neg whose batches
        // cannot fit. (The other numbers are refused later, in the command
        // line's words.)
        let link = self.link_task()?;
        if let Some(l) = &link {
            l.check_negatives(
                (self.sampling.batch_size, store.num_edges()),
                store.layout().row_bytes() as u64,
                self.memory,
            )?;
        }
        let ginex = GinexOptions {
            changeset_every: self.changeset_every,
            pipeline: self.pipeline,
            carry_over: !self.no_carry_over,
            reuse_prior: !self.no_reuse_prior,
            page_companions: !self.no_page_companions,
            keep_runs: self.keep_runs,
            first_superbatch: self.first_superbatch,
            lockstep: self.lockstep,
            ..GinexOptions::default()
        };
        Ok(EpochConfigBuilder::new()
            .policy(self.policy)
            .ginex(ginex)
            .presc_rounds(self.presc_rounds)
            .memory(self.memory)
            .sizes(ExplicitSizes {
                feature_cache_bytes: self.feature_cache_bytes,
                neighbor_cache_bytes: self.neighbor_cache_bytes,
                superbatch: self.superbatch,
            })
            .batch_size(self.sampling.batch_size)
            .fanouts(self.sampling.fanouts.clone())
            .sampler(self.sampling.sampler_config()?)
            .seed(self.sampling.seed)
            .workers(self.workers)
            .run_dir(self.run_dir.clone())
            .neighbor_cache(self.neighbor_cache.clone())
            .merge_gap_pages(self.read_merge_gap.pages())
            .sequential_reads(self.sequential_reads)
            .read_cost(self.read_cost)
            .list_queue_depth(self.list_queue_depth as usize)
            .feature_queue_depth(self.feature_queue_depth as usize)
            .max_batches(self.max_batches)
            .link(link)
            .link_positives(self.relation_positives(store)?))
    }
}

/// The `ginex epoch --report` document: the library's counters and stage
/// times ([`ReportJson`], at the top level) with the run's parameters, its
/// store and the machine.
#[derive(Debug, Serialize)]
pub struct EpochReportDoc<'a> {
    /// Counters and stage times.
    #[serde(flatten)]
    pub report: ReportJson<'a>,
    /// The policy's name.
    pub policy: &'static str,
    /// What the epoch was run with (see [`EpochConfig`]'s serialized
    /// form).
    pub parameters: &'a EpochConfig,
    /// Whether rows were checked against their page CRCs (all but `mmap`).
    pub crc_checked: bool,
    /// The store read.
    pub store: ReportStore<'a>,
    /// [`machine_description`].
    pub machine: String,
    /// [`peak_rss_bytes`].
    pub peak_rss_bytes: Option<u64>,
    /// The memory plan, when `--memory` planned the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_plan: Option<&'a MemoryPlan>,
}

/// The `store` of an [`EpochReportDoc`].
#[derive(Debug, Serialize)]
pub struct ReportStore<'a> {
    /// The store's directory.
    pub path: &'a std::path::Path,
    /// Nodes.
    pub nodes: u64,
    /// Edges.
    pub edges: u64,
    /// Feature width.
    pub dim: u32,
    /// Feature dtype name.
    pub dtype: &'static str,
}

impl<'a> EpochReportDoc<'a> {
    /// The document of `r`, run on `store` with `config`.
    pub fn new(store: &'a Store, config: &'a EpochConfig, r: &'a EpochReport) -> Self {
        EpochReportDoc {
            report: ReportJson::new(r),
            policy: config.cache.policy().name(),
            parameters: config,
            crc_checked: config.cache != CacheConfig::Mmap,
            store: ReportStore {
                path: store.dir(),
                nodes: store.num_nodes(),
                edges: store.num_edges(),
                dim: store.feature_dim(),
                dtype: store.dtype().name(),
            },
            machine: machine_description(),
            peak_rss_bytes: peak_rss_bytes(),
            memory_plan: None,
        }
    }
}

/// `doc` as a [`serde_json::Value`]; fails only on a store path that is not
/// UTF-8 (JSON strings are).
fn to_json(doc: &EpochReportDoc<'_>) -> Result<serde_json::Value> {
    serde_json::to_value(doc).map_err(|e| {
        Error::invalid_argument(format!(
            "{}: the report cannot be written as JSON: {e}",
            doc.store.path.display()
        ))
    })
}

/// Batches whose sampled nodes price the layout's scatter (the hint).
const SCATTER_BATCHES: u64 = 8;

/// Runs `ginex epoch`: the human table goes to stderr, a summary line to `out`.
pub fn run(args: &EpochArgs, out: &mut dyn Write) -> Result<()> {
    let began = std::time::Instant::now();
    let store = Store::open(&args.data.sampling.store)?;
    let (mut config, plan) = args.data.builder(&store)?.build(&store, &|_| 0)?;
    // The plan measures epoch 0's first batches (as it always has); the
    // run is of `--epoch`.
    config.epoch = args.epoch;
    if let Some(p) = &plan {
        eprintln!("{}", p.describe());
    }
    let mut progress = EpochProgress::new(&store, &config)?;
    // The layout's scatter, from the first batches' sampled nodes (no
    // extra reads): the hint after the report.
    let mut scatter = Scatter::default();
    let layout = store.layout();
    let rows = store.feature_rows();
    let measure = store.schema().is_none();
    let startup = began.elapsed();
    let r = run_epoch(&store, &config, &mut |b| {
        progress.batch(b);
        if measure && scatter.batches < SCATTER_BATCHES {
            scatter.add(b.ids, &layout, rows)?;
        }
        Ok(())
    });
    drop(progress);
    let mut r = r?;
    r.timeline.startup = startup;
    if let Some(path) = &args.report {
        let doc = EpochReportDoc {
            memory_plan: plan.as_ref(),
            ..EpochReportDoc::new(&store, &config, &r)
        };
        crate::write_report(
            path,
            serde_json::to_vec_pretty(&to_json(&doc)?).unwrap_or_default(),
        )?;
    }
    print_report(&store, &config, &r);
    if let Some(hint) = layout
        .num_pages(rows)
        .ok()
        .and_then(|pages| scatter.hint(store.dir(), pages))
    {
        eprintln!("{hint}");
    }
    let summary = EpochSummary {
        policy: config.cache.policy().name(),
        batches: r.batches.len(),
        hits: r.hits(),
        misses: r.misses(),
        miss_ratio: r.miss_ratio(),
        seconds: r.total().as_secs_f64(),
        wall_seconds: r.wall.as_secs_f64(),
    };
    // Through a `Value`: its keys print sorted, as they always have.
    let line = serde_json::to_value(summary).unwrap_or_default();
    writeln!(out, "{line}").map_err(|e| Error::io("write", "<stdout>", e))
}

/// The summary line `ginex epoch` prints to stdout.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EpochSummary {
    /// The policy's name.
    pub policy: &'static str,
    /// Batches run.
    pub batches: usize,
    /// [`EpochReport::hits`].
    pub hits: u64,
    /// [`EpochReport::misses`].
    pub misses: u64,
    /// [`EpochReport::miss_ratio`].
    pub miss_ratio: f64,
    /// [`EpochReport::total`] in seconds.
    pub seconds: f64,
    /// [`EpochReport::wall`] in seconds.
    pub wall_seconds: f64,
}

/// The progress of an epoch's batches (a bar of batches, the superbatch
/// under `ginex`, seeds/s, the time left) through the library's progress
/// sink: drawn on a terminal, silent otherwise.
pub struct EpochProgress {
    bar: ginex::progress::Bar,
    superbatch: Option<(u64, u64)>,
    started: std::time::Instant,
    seeds: u64,
}

impl EpochProgress {
    /// Progress of one pass of `config` over `store`.
    pub fn new(store: &Store, config: &EpochConfig) -> Result<EpochProgress> {
        let train = store.splits()?.map_or(0, |s| s.train.len());
        let total = config.num_batches(train);
        Ok(EpochProgress {
            bar: ginex::progress::Bar::new(total, "epoch", false),
            superbatch: config.cache.ginex().map(|g| {
                let size = g.superbatch.max(1);
                (size, total.div_ceil(size))
            }),
            started: std::time::Instant::now(),
            seeds: 0,
        })
    }

    /// A batch was handed out.
    pub fn batch(&mut self, b: &ginex::internals::exec::epoch::EpochBatch<'_>) {
        self.seeds += b.num_seeds as u64;
        self.bar.inc(1);
        if self.bar.is_shown() {
            let rate = ginex::progress::human_rate(
                self.seeds as f64 / self.started.elapsed().as_secs_f64().max(1e-9),
                "seeds",
            );
            self.bar.set_message(&match self.superbatch {
                Some((size, n)) => format!("superbatch {}/{n}, {rate}", b.batch / size + 1),
                None => rate,
            });
        }
    }
}

impl Drop for EpochProgress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

/// The human table on stderr.
fn print_report(store: &Store, config: &EpochConfig, r: &EpochReport) {
    let s = |d: std::time::Duration| d.as_secs_f64();
    let cache = match config.cache {
        CacheConfig::Mmap => "no feature cache: the OS page cache".to_string(),
        CacheConfig::None => "no feature cache".to_string(),
        _ => format!("{} feature-cache rows", config.feature_cache_rows),
    };
    eprintln!(
        "epoch {} of {} with policy {} ({cache})",
        config.epoch,
        store.dir().display(),
        config.cache.policy().name(),
    );
    if let Some(g) = config.cache.ginex() {
        eprintln!(
            "  superbatch {} batches (first {}), pipeline {}, carry-over {}, reuse prior {}, lockstep {}",
            g.superbatch,
            g.first_superbatch.name(),
            g.pipeline.name(),
            if g.carry_over { "on" } else { "off" },
            if g.reuse_prior { "out-degree" } else { "none" },
            g.lockstep.name()
        );
    }
    if config.cache == CacheConfig::Mmap {
        eprintln!("  checksums: NOT checked (mmap reads pages without their CRCs)");
    }
    eprintln!("  {:<18} {:>9}", "stage", "seconds");
    for (name, d) in [
        ("sample", r.sample),
        ("reuse prior", r.reuse_prior),
        ("  not hidden", r.reuse_prior_exposed),
        ("changeset", r.changeset),
        ("  not hidden", r.changeset_exposed),
        ("load runs", r.load_runs),
        ("cache init", r.cache_init),
        ("gather", r.gather),
        ("cache update", r.cache_update),
        ("sum of stages", r.total()),
        ("wall", r.wall),
    ] {
        eprintln!("  {name:<18} {:>9.3}", s(d));
    }
    let t = &r.timeline;
    let at = |d: Option<std::time::Duration>| d.map_or("-".into(), |d| format!("{:.3} s", s(d)));
    eprintln!(
        "  timeline: startup {:.3} s (store, plan; CPU {:.2} s), first feature read at {}, first batch at {}",
        s(t.startup),
        s(t.startup_cpu),
        at(t.first_read),
        at(t.first_batch),
    );
    if let Some(busy) = t.device_busy {
        eprintln!(
            "  device busy {:.2} s of the epoch's {:.2} s ({:.0} %; every process's reads on it)",
            s(busy),
            s(r.wall),
            100.0 * s(busy) / s(r.wall).max(1e-9),
        );
    }
    eprintln!(
        "  CPU during the epoch: user {:.2} s, system {:.2} s; by role: executor {:.2} s, init readers {:.2} s, sampling {:.2} s, changesets {:.2} s",
        s(t.cpu_user),
        s(t.cpu_system),
        s(t.role_cpu[0]),
        s(t.role_cpu[1]),
        s(t.role_cpu[2]),
        s(t.role_cpu[3]),
    );
    if config.neighbor_cache_bytes > 0 && config.cache != CacheConfig::Mmap {
        eprintln!(
            "  neighbor cache: {} ({:.1} s to build), hit ratio {}",
            if r.neighbor_cache_reused {
                "reused"
            } else {
                "built"
            },
            s(r.neighbor_cache_build),
            r.neighbor_hit_ratio
                .map_or("-".into(), |h| format!("{h:.3}"))
        );
    }
    if config.cache != CacheConfig::Mmap {
        eprintln!(
            "  neighbour lists read: {} reads, MB read {:.1} ({} reads, {:.1} MB of them beside a feature read)",
            r.list_reads,
            r.list_bytes_read as f64 / 1e6,
            r.list_reads_beside_gathers,
            r.list_bytes_beside_gathers as f64 / 1e6
        );
    }
    let pages = if config.cache == CacheConfig::Mmap {
        "pages read not measured (page cache)".to_string()
    } else {
        format!(
            "pages needed {} in {} reads ({} gathers as sequential passes), MB read {:.1}; \
             feature reads {:.2} s (the read-cost model predicted {:.2} s)",
            r.pages_read,
            r.feature_reads,
            r.sequential_passes,
            r.bytes_read as f64 / 1e6,
            s(r.feature_read),
            s(r.predicted_read),
        )
    };
    eprintln!(
        "  batches {}, hits {}, misses {} ({} at init), miss ratio {:.4}, {pages}",
        r.batches.len(),
        r.hits(),
        r.misses(),
        r.init_reads,
        r.miss_ratio(),
    );
    if let Some(g) = config.cache.ginex() {
        eprintln!(
            "  optimum of this schedule: {} reads ({} at init); init rows read during the superbatch before: {}",
            r.optimal_total(),
            r.optimal_init_reads,
            r.read_ahead
        );
        if g.page_companions {
            eprintln!(
                "  page companions: {} of {} superbatches admit them, {} rows read with their pages; planned pages {}",
                r.paged_superbatches, r.superbatches, r.page_companions, r.planned_page_reads
            );
        }
    }
    if let Some(dir) = &r.kept_runs {
        eprintln!("  runtime files kept in {}", dir.display());
    }
}

/// `ginex bench outofcore`'s children's `ginex epoch STORE EXTRA…`
/// arguments, parsed as `ginex epoch` parses them: the trace they sample
/// (batch size, fanouts, seed, epoch, `--max-batches`) and their link task
/// (the harness's [`ginex_bench::ChildEpochParser`]).
pub fn child_epoch(
    path: &std::path::Path,
    extra: &[String],
) -> Result<ginex_bench::outofcore::ChildEpoch> {
    #[derive(clap::Parser)]
    struct ChildEpoch {
        #[command(flatten)]
        epoch: EpochArgs,
    }
    let argv = ["epoch".to_string(), path.display().to_string()]
        .into_iter()
        .chain(extra.iter().cloned());
    let child = <ChildEpoch as clap::Parser>::try_parse_from(argv).map_err(|e| {
        Error::invalid_argument(format!(
            "the arguments after -- do not parse as `ginex epoch`'s: {e}"
        ))
    })?;
    let (data, epoch) = (&child.epoch.data, child.epoch.epoch);
    let trace = ginex::internals::exec::curves::TraceSpec {
        batch_size: data.sampling.batch_size,
        fanouts: data.sampling.fanouts.clone(),
        seed: data.sampling.seed,
        epoch,
        epochs: 1,
        max_batches: data.max_batches,
        workers: std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    Ok(ginex_bench::outofcore::ChildEpoch {
        trace,
        link: data.link_task()?,
    })
}
#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use ginex::internals::exec::config::DEFAULT_PRESC_ROUNDS;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        data: DataArgs,
    }

    /// The report document has the keys and values the `json!` form had
    /// (the library's counters at the top level, then the run's own).
    #[test]
    fn the_report_document_has_the_keys_json_wrote() {
        use ginex::internals::exec::epoch::BatchStat;
        use ginex::internals::exec::plan::WorkingSet;
        use serde_json::json;

        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("store");
        let synth = ginex::SynthParams {
            nodes: 300,
            dim: 4,
            ..Default::default()
        };
        ginex::generate_store(&synth, &path, &ginex::NoProgress).unwrap();
        let store = Store::open(&path).unwrap();
        let config = EpochConfig {
            merge_gap_pages: Some(3),
            ..EpochConfig::default()
        };
        let r = EpochReport {
            batches: vec![BatchStat {
                batch: 0,
                hits: 2,
                misses: 3,
                checksum: 7,
            }],
            optimal_misses: vec![1],
            gather: std::time::Duration::from_millis(1500),
            ..EpochReport::default()
        };
        let plan = MemoryPlan {
            memory: 1 << 30,
            fixed: 1,
            batch_buffers: 2,
            page_cache_reserve: 3,
            superbatch_bytes: 4,
            superbatch: 5,
            lockstep_bytes: 0,
            lockstep: Default::default(),
            neighbor_cache_bytes: 6,
            feature_cache_rows: 7,
            feature_cache_bytes: 8,
            working_set: WorkingSet {
                batches: 2,
                max_ids: 9,
                mean_ids: 8.5,
                mean_edges: 20.25,
                mean_candidates: 0.0,
            },
            split: None,
            reuse_prior: None,
            superbatch_fit: None,
            lists_dwarf_memory: false,
        };
        let doc = EpochReportDoc {
            memory_plan: Some(&plan),
            ..EpochReportDoc::new(&store, &config, &r)
        };
        let mut want = r.to_json();
        let g = config.cache.ginex().unwrap();
        want["policy"] = json!(config.cache.policy().name());
        want["parameters"] = json!({
            "feature_cache_rows": config.feature_cache_rows, "neighbor_cache_bytes": config.neighbor_cache_bytes,
            "batch_size": config.batch_size, "fanouts": config.fanouts, "superbatch": g.superbatch,
            "changeset_every": g.changeset_every, "seed": config.seed, "epoch": config.epoch,
            "pipeline": g.pipeline.name(), "carry_over": g.carry_over, "reuse_prior": g.reuse_prior,
            "page_companions": g.page_companions, "early_first_init": g.early_first_init,
            "first_superbatch": g.first_superbatch.name(), "lockstep": g.lockstep.name(),
            "read_merge_gap": config.merge_gap_pages,
            "sequential_reads": config.sequential_reads.name(), "read_cost": config.read_cost.to_arg(),
            "list_queue_depth": 64, "feature_queue_depth": 256,
            "presc_rounds": DEFAULT_PRESC_ROUNDS, "workers": config.workers, "task": "node",
            // Keys the serde form added to the hand-written copy's.
            "policy": "ginex", "keep_runs": false, "max_batches": null,
            "sampler": {"sampler": "neighbor", "layer_dependency": false, "batch_dependency": 1},
        });
        want["crc_checked"] = json!(true);
        want["store"] = json!({"path": store.dir(), "nodes": store.num_nodes(), "edges": store.num_edges(), "dim": store.feature_dim(), "dtype": store.dtype().name()});
        want["machine"] = json!(doc.machine);
        want["peak_rss_bytes"] = json!(doc.peak_rss_bytes);
        want["memory_plan"] = plan.to_json();
        assert_eq!(to_json(&doc).unwrap(), want);
        let without = to_json(&EpochReportDoc::new(&store, &config, &r)).unwrap();
        assert!(without.get("memory_plan").is_none(), "{without}");
        assert_eq!(without["optimal_total"], 1);
        assert_eq!(without["seconds"]["gather"], 1.5);
    }

    /// `ginex epoch STORE` with no flags runs `EpochConfig::default()`'s
    /// settings (the defaults are written in one place; the flags must not
    /// drift from them).
    #[test]
    fn the_flags_defaults_are_the_configuration_defaults() {
        let args = Cli::parse_from(["ginex", "store"]).data;
        let d = EpochConfig::default();
        let g = GinexOptions::default();
        assert_eq!(CacheConfig::of(args.policy), d.cache);
        assert_eq!(args.sampling.batch_size, d.batch_size);
        assert_eq!(args.sampling.fanouts, d.fanouts);
        assert_eq!(args.sampling.seed, d.seed);
        assert_eq!(args.changeset_every, g.changeset_every);
        assert_eq!(args.presc_rounds, DEFAULT_PRESC_ROUNDS);
        assert_eq!(args.pipeline, g.pipeline);
        assert_eq!(args.read_merge_gap.pages(), d.merge_gap_pages);
        assert_eq!(
            (args.sequential_reads, args.read_cost),
            (d.sequential_reads, d.read_cost)
        );
        assert_eq!(
            (
                args.list_queue_depth as usize,
                args.feature_queue_depth as usize
            ),
            (d.list_queue_depth, d.feature_queue_depth)
        );
        assert_eq!(
            (
                !args.no_carry_over,
                !args.no_reuse_prior,
                !args.no_page_companions
            ),
            (g.carry_over, g.reuse_prior, g.page_companions)
        );
        assert_eq!((args.keep_runs, args.max_batches), (g.keep_runs, None));
        assert_eq!(args.lockstep, g.lockstep);
        assert_eq!(args.first_superbatch, g.first_superbatch);
    }
}
