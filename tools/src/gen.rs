//! `ginex gen`: synthetic datasets, as a store or as raw files.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;

use clap::{Args, ValueEnum};

use crate::machine::{machine_description, peak_rss_bytes};
use crate::size::parse_bytes;
use ginex::internals::error::{Error, Result};
use ginex::internals::format::pages::Dtype;
use ginex::internals::import::reorder::{check_target_free, reorder_store, Reorder, TempStore};
use ginex::internals::import::synth::{
    generate_raw, generate_store, Progress, RawEdgeFormat, SynthParams, SynthReport,
};

/// Generate a synthetic power-law graph (R-MAT) with planted classes.
///
/// Each node gets a class; edges prefer same-class endpoints (--homophily);
/// features are a class centroid plus noise (--feature-noise), so a node's
/// neighbours carry information its own features lack. Output is a store
/// (--out) or raw .npy and edge-list files (--raw) that `ginex-import files`
/// reads back. Deterministic for a given --seed, whatever the thread count.
///
/// Example: ginex gen --nodes 1000000 --avg-degree 20 --dim 128 --out data/g1m
#[derive(Debug, Args)]
pub struct GenArgs {
    /// Number of nodes.
    #[arg(long, default_value_t = 100_000)]
    pub nodes: u64,
    /// Edges drawn per node; self-loops and duplicates are then dropped.
    #[arg(long, default_value_t = 10.0)]
    pub avg_degree: f64,
    /// Feature dimension.
    #[arg(long, default_value_t = 64)]
    pub dim: u32,
    /// Number of planted classes (labels).
    #[arg(long, default_value_t = 16)]
    pub classes: u32,
    /// Probability that an edge is built to join same-class nodes.
    #[arg(long, default_value_t = 0.8)]
    pub homophily: f64,
    /// Standard deviation of the per-element feature noise (class centroids
    /// have unit norm).
    #[arg(long, default_value_t = 1.0)]
    pub feature_noise: f32,
    /// Feature dtype: f32, f16, bf16 or q8 (8-bit codes with a per-row
    /// scale; lossy, see docs/ginex.md).
    #[arg(long, default_value = "f32")]
    pub dtype: String,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Train, valid, test fractions.
    #[arg(long, default_value = "0.1,0.05,0.05")]
    pub split: String,
    /// Memory budget for the whole run (e.g. 512MiB, 2GiB); the CSC build
    /// spills to temporary files to stay within it.
    #[arg(long, default_value = "2GiB")]
    pub memory: String,
    /// Write a store at this path. Refused, before anything is written, if
    /// it exists; built in a staging directory beside it and renamed into
    /// place.
    #[arg(long, conflicts_with = "raw", required_unless_present = "raw")]
    pub out: Option<PathBuf>,
    /// Node order of the store: auto (measure the pages a few sampled
    /// batches read together under the generator's order and under bfs
    /// and degree, and renumber by the best where it reads 1.10x fewer
    /// pages or better; the decision and the figures are printed), none
    /// (the generator's), degree (descending in-degree) or bfs
    /// (breadth-first over in-neighbour lists from the hubs, each node's
    /// in-neighbours numbered together, hottest first). A reordered store keeps every
    /// node's original id, and the ids passed in or handed back (predict,
    /// sample, Python) stay original. It is built, then written again
    /// renumbered (twice the disk space while both exist). Raw files and
    /// --hetero keep the generator's order (auto) or refuse degree and bfs.
    #[arg(long, default_value = "auto", value_parser = crate::args::reorder)]
    pub reorder: ginex::internals::import::reorder::Reorder,
    /// The batches --reorder auto measures on.
    #[command(flatten)]
    pub layout: crate::args::LayoutSampleArgs,
    /// Write raw files (features.npy, labels.npy, edges.npy or edges.csv,
    /// {train,valid,test}_ids.npy, meta.json) into this new directory:
    /// refused, before anything is written, if it exists; staged beside it
    /// and renamed into place.
    #[arg(long)]
    pub raw: Option<PathBuf>,
    /// Edge file format with --raw.
    #[arg(long, value_enum, default_value_t = RawEdges::Npy)]
    pub raw_edges: RawEdges,
    /// A typed graph shaped like MAG: node types paper (40 % of --nodes;
    /// features, labels, splits), author (50 %) and field (10 %), both
    /// featureless; relations cites, writes, topic_of (into papers),
    /// written_by and has_topic (out of them). `ginex-dump` shows the
    /// schema. Not with --raw or --reorder.
    #[arg(long, conflicts_with = "raw")]
    pub hetero: bool,
    /// With --hetero: give authors features of their own, of this
    /// dimension (0: featureless). Each type keeps its own dimension and
    /// dtype in the store; rows read back widened to the widest.
    #[arg(long, default_value_t = 0, requires = "hetero")]
    pub author_dim: u32,
    /// With --author-dim: the authors' dtype (default: --dtype).
    #[arg(long, requires = "author_dim")]
    pub author_dtype: Option<String>,
    /// No progress bars.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Edge file format of `--raw`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RawEdges {
    /// `edges.npy`, shape (E, 2), rows [src, dst].
    Npy,
    /// `edges.csv` with a `src,dst` header.
    Csv,
}

impl GenArgs {
    /// The generator parameters these flags describe.
    pub fn params(&self) -> Result<SynthParams> {
        let split: Vec<f64> = self
            .split
            .split(',')
            .map(|s| s.trim().parse::<f64>())
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| {
                Error::invalid_argument(format!(
                    "--split {:?} must be three comma-separated fractions",
                    self.split
                ))
            })?;
        let split: [f64; 3] = split.try_into().map_err(|_| {
            Error::invalid_argument(format!(
                "--split {:?} must be three comma-separated fractions",
                self.split
            ))
        })?;
        let p = SynthParams {
            nodes: self.nodes,
            avg_degree: self.avg_degree,
            dim: self.dim,
            classes: self.classes,
            homophily: self.homophily,
            feature_noise: self.feature_noise,
            dtype: Dtype::parse(&self.dtype)?,
            seed: self.seed,
            split,
            memory: parse_bytes(&self.memory)?,
            hetero: self.hetero,
            author_features: match self.author_dim {
                0 => None,
                dim => Some((
                    dim,
                    Dtype::parse(self.author_dtype.as_deref().unwrap_or(&self.dtype))?,
                )),
            },
        };
        if self.hetero && self.reorder.renumbers() {
            return Err(Error::invalid_argument(
                "--hetero with --reorder: renumbering would break the node types' id ranges",
            ));
        }
        p.validate()?;
        Ok(p)
    }
}

/// Progress bars on stderr, one per phase.
pub struct BarProgress {
    quiet: bool,
    bar: Mutex<Option<indicatif::ProgressBar>>,
}

impl BarProgress {
    /// Bars unless `quiet`.
    pub fn new(quiet: bool) -> Self {
        BarProgress {
            quiet,
            bar: Mutex::new(None),
        }
    }
}

impl Progress for BarProgress {
    fn begin(&self, phase: &'static str, total: u64) {
        let bar = crate::progress_bar(total, phase, self.quiet);
        bar.set_style(crate::bar_style(
            "{msg:>10} [{bar:30}] {human_pos}/{human_len} {rate} eta {eta}",
        ));
        if let Ok(mut slot) = self.bar.lock() {
            *slot = Some(bar);
        }
    }
    fn advance(&self, done: u64) {
        if let Ok(slot) = self.bar.lock() {
            if let Some(bar) = slot.as_ref() {
                bar.inc(done);
            }
        }
    }
    fn end(&self) {
        if let Ok(mut slot) = self.bar.lock() {
            if let Some(bar) = slot.take() {
                bar.finish_and_clear();
            }
        }
    }
}

/// Runs `ginex gen`, printing a summary with timings to `out`.
pub fn run(args: &GenArgs, out: &mut dyn Write) -> Result<()> {
    let p = args.params()?;
    if args.raw.is_some() && args.reorder.renumbers() {
        return Err(Error::invalid_argument(
            "--reorder applies to a store (--out); raw files keep the generator's ids",
        ));
    }
    if let Some(path) = args.out.as_ref().or(args.raw.as_ref()) {
        crate::create_parent_dirs(path)?;
    }
    let progress = BarProgress::new(args.quiet);
    let started = Instant::now();
    let mut decision = None;
    let report = match (&args.out, &args.raw) {
        (Some(path), _) if args.reorder == Reorder::None || p.hetero => {
            generate_store(&p, path, &progress)?
        }
        (Some(path), _) => {
            check_target_free(path)?;
            // Up front, naming --out: the unordered store is built first,
            // beside it, under a name the user never gave.
            ginex::internals::import::synth::check_space(&p, path, None)?;
            let unordered = TempStore::beside(path);
            let mut r = generate_store(&p, unordered.path(), &progress)?;
            let done = reorder_store(
                unordered.path(),
                path,
                args.reorder,
                ginex::internals::format::csc::DEFAULT_SEGMENT_BYTES,
                &args.layout.sample()?,
            )?;
            let phase = match &done.decision {
                Some(d) if d.chosen == Reorder::None => "reorder auto (kept)",
                _ => "reorder + verify",
            };
            r.phases.push((phase, done.took));
            r.path = done.path;
            decision = done.decision;
            r
        }
        (None, Some(dir)) => {
            let fmt = match args.raw_edges {
                RawEdges::Npy => RawEdgeFormat::Npy,
                RawEdges::Csv => RawEdgeFormat::Csv,
            };
            generate_raw(&p, dir, fmt, &progress)?
        }
        (None, None) => return Err(Error::invalid_argument("give --out STORE or --raw DIR")),
    };
    print_report(&p, &report, started.elapsed().as_secs_f64(), out)
        .and_then(|()| match decision {
            Some(d) => writeln!(out, "  {d}"),
            None => Ok(()),
        })
        .map_err(|e| Error::io("write", "<stdout>", e))
}

fn print_report(
    p: &SynthParams,
    r: &SynthReport,
    secs: f64,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    writeln!(out, "generated {}", r.path.display())?;
    writeln!(
        out,
        "  parameters: nodes {} avg-degree {} dim {} {} classes {} homophily {} noise {} seed {} memory {} MiB",
        p.nodes,
        p.avg_degree,
        p.dim,
        p.dtype.name(),
        p.classes,
        p.homophily,
        p.feature_noise,
        p.seed,
        p.memory >> 20
    )?;
    if let Some((dim, dtype)) = p.author_features {
        writeln!(out, "  authors' features: dim {dim} {}", dtype.name())?;
    }
    writeln!(
        out,
        "  edges: {} drawn, {} kept ({} self-loops, {} duplicates dropped)",
        r.edges_drawn, r.edges, r.self_loops_removed, r.duplicates_removed
    )?;
    for (phase, d) in &r.phases {
        writeln!(out, "  {phase:<26} {:>9.2} s", d.as_secs_f64())?;
    }
    let mb = r.bytes_written as f64 / 1e6;
    writeln!(
        out,
        "  total {secs:.2} s, {mb:.1} MB written, {:.1} MB/s",
        mb / secs.max(1e-9)
    )?;
    if let Some(rss) = peak_rss_bytes() {
        writeln!(
            out,
            "  peak RSS {:.1} MiB (budget {} MiB)",
            rss as f64 / (1 << 20) as f64,
            p.memory >> 20
        )?;
    }
    writeln!(out, "  machine: {}", machine_description())
}
