//! clap value parsers: flags are parsed into their types when the command
//! line is read, so a bad value is refused with clap's usage message before
//! any work starts. The parsing logic itself stays in the library
//! (`Policy::parse`, `parse_fanouts`, `ModelKind::parse`, …) or in
//! `size.rs`.

use ginex::internals::cache::{Policy, TABLE};
use ginex::internals::exec::config::Lockstep;
use ginex::internals::exec::pipeline::Pipeline;

/// `--fanouts`, its type, its display and byte sizes: the parsers the
/// benchmark harness shares (`ginex_bench::args`).
pub use ginex_bench::args::{bytes, fanouts, first_superbatch, show_fanouts, Fanouts};

/// `--eval-fanouts`: as [`fanouts`], its errors naming `--eval-fanouts`.
pub fn eval_fanouts(s: &str) -> Result<Fanouts, String> {
    Fanouts::parse_as(s, "--eval-fanouts").map_err(|e| e.to_string())
}

/// Parses `--sampler`.
pub fn sampler(s: &str) -> Result<ginex::internals::sample::labor::Sampler, String> {
    ginex::internals::sample::labor::Sampler::parse(s).map_err(|e| e.to_string())
}

/// `--policy NAME`: a name of the policy table, each listed in `--help`
/// with its line (an unknown name is refused with the list).
pub fn policy() -> impl clap::builder::TypedValueParser<Value = Policy> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(
        TABLE
            .iter()
            .map(|e| PossibleValue::new(e.name).help(e.about)),
    )
    .try_map(|s| Policy::parse(&s))
}

/// `--reorder auto|none|degree|bfs`.
pub fn reorder(s: &str) -> Result<ginex::internals::import::reorder::Reorder, String> {
    ginex::internals::import::reorder::Reorder::parse(s).map_err(|e| e.to_string())
}

/// The batches a layout is measured on (`--reorder auto`, `ginex-dump`'s
/// layout line): a default epoch's unless the runs use others.
#[derive(Debug, Clone, clap::Args)]
pub struct LayoutSampleArgs {
    /// Seeds a batch when measuring the layout (--reorder auto,
    /// ginex-dump): the batch size of the runs the store is for.
    #[arg(long, default_value_t = 1000)]
    pub layout_batch_size: usize,
    /// Fanouts when measuring the layout: the runs' fanouts (one count per
    /// hop, -1 = all).
    #[arg(long, default_value = "10,10,10")]
    pub layout_fanouts: String,
}

impl LayoutSampleArgs {
    /// The sample these flags describe.
    pub fn sample(
        &self,
    ) -> ginex::internals::error::Result<ginex::internals::import::locality::Sample> {
        let fanouts = ginex::internals::sample::sampler::parse_fanouts(&self.layout_fanouts)?;
        if self.layout_batch_size == 0 {
            return Err(ginex::internals::error::Error::invalid_argument(
                "--layout-batch-size must be at least 1",
            ));
        }
        Ok(ginex::internals::import::locality::Sample {
            batch_size: self.layout_batch_size,
            fanouts,
            ..ginex::internals::import::locality::Sample::default()
        })
    }
}

/// `--read-merge-gap`: a number of pages, or `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MergeGap(Option<u64>);

impl MergeGap {
    /// The gap in pages; `None` for `off`.
    pub fn pages(self) -> Option<u64> {
        self.0
    }
}

impl Default for MergeGap {
    /// The gather engine's default gap.
    fn default() -> Self {
        MergeGap(Some(
            ginex::internals::store::gather::DEFAULT_MERGE_GAP_PAGES,
        ))
    }
}

impl std::fmt::Display for MergeGap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(pages) => write!(f, "{pages}"),
            None => f.write_str("off"),
        }
    }
}

/// `--read-merge-gap 3` (pages) or `off`.
pub fn merge_gap(s: &str) -> Result<MergeGap, String> {
    match s {
        "off" => Ok(MergeGap(None)),
        _ => s.parse::<u64>().map(|g| MergeGap(Some(g))).map_err(|_| {
            format!("`{s}` is not a number of pages or `off` (e.g. --read-merge-gap 3)")
        }),
    }
}

/// `--sequential-reads auto|never|always`.
pub fn sequential_reads(
    s: &str,
) -> Result<ginex::internals::store::read_cost::SequentialReads, String> {
    ginex::internals::store::read_cost::SequentialReads::parse(s).map_err(|e| e.to_string())
}

/// `--read-cost 9.9,2.7,3.25` (µs a read, a page, a page of a large read).
pub fn read_cost(s: &str) -> Result<ginex::internals::store::read_cost::ReadCostModel, String> {
    ginex::internals::store::read_cost::ReadCostModel::parse(s).map_err(|e| e.to_string())
}

/// `--pipeline overlap` (serial, overlap, full).
pub fn pipeline(s: &str) -> Result<Pipeline, String> {
    Pipeline::parse(s).map_err(|e| e.to_string())
}

/// `--lockstep auto` (auto, rounds, superbatch).
pub fn lockstep(s: &str) -> Result<Lockstep, String> {
    Lockstep::parse(s).map_err(|e| e.to_string())
}

/// `--neg-mode binary` (binary, triplet).
pub fn neg_mode(s: &str) -> Result<ginex::NegMode, String> {
    ginex::NegMode::parse(s).map_err(|e| e.to_string())
}

/// `--negatives batch` (uniform, batch, mixed:F).
pub fn negatives(s: &str) -> Result<ginex::NegSource, String> {
    ginex::NegSource::parse(s).map_err(|e| e.to_string())
}

/// `--edge-order blocked:16` (random, blocked[:P]).
pub fn edge_order(s: &str) -> Result<ginex::EdgeOrder, String> {
    ginex::EdgeOrder::parse(s).map_err(|e| e.to_string())
}

/// `--exclude self` (self, none).
pub fn link_exclude(s: &str) -> Result<ginex::internals::sample::link::LinkExclude, String> {
    ginex::internals::sample::link::LinkExclude::parse(s).map_err(|e| e.to_string())
}

/// `--model sage`: a name of the library's table of architectures.
#[cfg(feature = "train")]
pub fn model(s: &str) -> Result<ginex::internals::train::model::ModelKind, String> {
    ginex::internals::train::model::ModelKind::parse(s).map_err(|e| e.to_string())
}

/// `--model gin:train_eps=true`: an architecture with its own options.
#[cfg(feature = "train")]
pub fn model_spec(s: &str) -> Result<ginex::internals::train::model::ModelSpec, String> {
    ginex::internals::train::model::ModelSpec::parse(s).map_err(|e| e.to_string())
}

/// `ginex train --help`'s text for `--model`: every architecture of the
/// library's table with its line.
#[cfg(feature = "train")]
pub fn model_help() -> String {
    format!(
        "Architecture, as NAME or NAME:KEY=VALUE,... with the architecture's own \
         options. The relational ones (rgcn, rsage) read each edge's relation from a \
         typed store's schema (on an untyped store every edge is one relation).\n\n{}",
        ginex::internals::train::model::ModelKind::help()
    )
}

/// `--optimizer adam` (adam, adamw).
#[cfg(feature = "train")]
pub fn optimizer(s: &str) -> Result<ginex::internals::train::trainer::OptimizerKind, String> {
    ginex::internals::train::trainer::OptimizerKind::parse(s).map_err(|e| e.to_string())
}

/// `--init glorot` (glorot or xavier, kaiming).
#[cfg(feature = "train")]
pub fn init(s: &str) -> Result<ginex::internals::train::model::InitKind, String> {
    ginex::internals::train::model::InitKind::parse(s).map_err(|e| e.to_string())
}

/// `--device auto` (CUDA when available), `cpu` or `cuda` (refused when no
/// CUDA device is available).
#[cfg(feature = "train")]
pub fn device(s: &str) -> Result<ginex::internals::train::tch::Device, String> {
    use ginex::internals::train::tch::{Cuda, Device};
    match s {
        "auto" => Ok(Device::cuda_if_available()),
        "cpu" => Ok(Device::Cpu),
        "cuda" if Cuda::is_available() => Ok(Device::Cuda(0)),
        "cuda" => Err("--device cuda but no CUDA device is available".into()),
        _ => Err(format!("--device {s:?}: use auto, cpu or cuda")),
    }
}

/// A count of 1 or more (`--workers`, `--changeset-every`): 0 is refused,
/// not clamped, as it would mean no workers or no changesets at all.
pub fn at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1 (0 would do no work)".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("`{s}` is not a whole number")),
    }
}
