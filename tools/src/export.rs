//! `ginex-export`: a store out to other systems — `dgl` (DGL's chunked
//! graph format, DistDGL's input) and `graphbolt` (GraphBolt's on-disk
//! dataset). The output is staged and renamed into place: nothing or a
//! complete export at `--out`.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use clap::{Args, Parser, Subcommand};

use crate::size::parse_bytes;
use ginex::internals::error::{Error, Result};
use ginex::internals::export::dgl::{export_dgl, DglExport};
use ginex::internals::export::graphbolt::{export_graphbolt, GraphBoltExport};
use ginex::internals::export::{EdgeFormat, ExportOptions, ExportReport};

/// Export a ginex store to DGL's chunked graph format or GraphBolt's
/// on-disk dataset.
#[derive(Debug, Parser)]
#[command(name = "ginex-export", version)]
pub struct ExportCli {
    /// The output format.
    #[command(subcommand)]
    pub command: ExportCommand,
}

/// Output formats.
#[derive(Debug, Subcommand)]
pub enum ExportCommand {
    /// DGL's chunked graph format (metadata.json + edge_index/ + node_data/),
    /// the input of DistDGL's partition pipeline.
    ///
    /// Example: ginex-export dgl STORE --out chunked --chunks 4
    Dgl(DglArgs),
    /// GraphBolt's on-disk dataset (metadata.yaml + .npy), for
    /// dgl.graphbolt.OnDiskDataset.
    ///
    /// Example: ginex-export graphbolt STORE --out gb
    Graphbolt(GraphBoltArgs),
}

/// Options of both subcommands.
#[derive(Debug, Args)]
pub struct CommonExportArgs {
    /// The store to export.
    pub store: PathBuf,
    /// The directory to create. Refused, before anything is written, if it
    /// exists; written in a staging directory beside it and renamed into
    /// place (a failed or killed export leaves nothing at the path).
    #[arg(long)]
    pub out: PathBuf,
    /// Keep f16 features as float16 (default: widen to float32, which every
    /// DGL tool reads; bf16 is always widened, numpy has no bfloat16).
    #[arg(long)]
    pub keep_f16: bool,
    /// Memory budget: the store's indptr (8 bytes a node) plus stream buffers.
    #[arg(long, default_value = "2GiB")]
    pub memory: String,
    /// No progress bars on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

impl CommonExportArgs {
    fn options(&self) -> Result<ExportOptions> {
        Ok(ExportOptions {
            memory: parse_bytes(&self.memory)?,
            keep_f16: self.keep_f16,
            quiet: self.quiet,
        })
    }
}

/// `ginex-export dgl`.
#[derive(Debug, Args)]
pub struct DglArgs {
    /// Store, output and budget.
    #[command(flatten)]
    pub common: CommonExportArgs,
    /// Number of chunks (P) for nodes and edges.
    #[arg(long, default_value_t = 1)]
    pub chunks: u64,
    /// Edge chunks as csv (`src dst` lines) or numpy ((E, 2) int64).
    #[arg(long, default_value = "csv")]
    pub edge_format: String,
    /// graph_name in metadata.json (default: the store directory's name).
    #[arg(long)]
    pub graph_name: Option<String>,
}

/// `ginex-export graphbolt`.
#[derive(Debug, Args)]
pub struct GraphBoltArgs {
    /// Store, output and budget.
    #[command(flatten)]
    pub common: CommonExportArgs,
    /// Edges as numpy ((2, E) int64) or csv (`src,dst` lines).
    #[arg(long, default_value = "numpy")]
    pub edge_format: String,
    /// dataset_name in metadata.yaml (default: the store directory's name).
    #[arg(long)]
    pub dataset_name: Option<String>,
}

/// Prints an export's report.
pub fn print_report(out: &mut dyn Write, r: &ExportReport, secs: f64) -> Result<()> {
    let w = |e| Error::io("write", "<stdout>", e);
    writeln!(out, "exported {}", r.path.display()).map_err(w)?;
    writeln!(
        out,
        "  {} nodes, {} edges, features as {}; {} files, {:.1} MB",
        r.nodes,
        r.edges,
        r.feature_descr,
        r.files,
        r.bytes_written as f64 / 1e6
    )
    .map_err(w)?;
    writeln!(out, "  {}", r.edge_note()).map_err(w)?;
    for (phase, d) in &r.phases {
        writeln!(out, "  {phase:<12} {:>9.2} s", d.as_secs_f64()).map_err(w)?;
    }
    writeln!(
        out,
        "  total {secs:.2} s, {:.0} MB/s written",
        r.bytes_written as f64 / 1e6 / secs.max(1e-9)
    )
    .map_err(w)?;
    writeln!(out, "  rebuild the same store: {}", r.reimport).map_err(w)
}

/// Runs `ginex-export`.
pub fn run(cli: &ExportCli, out: &mut dyn Write) -> Result<()> {
    let started = Instant::now();
    crate::create_parent_dirs(match &cli.command {
        ExportCommand::Dgl(a) => &a.common.out,
        ExportCommand::Graphbolt(a) => &a.common.out,
    })?;
    let report = match &cli.command {
        ExportCommand::Dgl(a) => export_dgl(&DglExport {
            store: a.common.store.clone(),
            out: a.common.out.clone(),
            chunks: a.chunks,
            edge_format: EdgeFormat::parse(&a.edge_format)?,
            graph_name: a.graph_name.clone(),
            options: a.common.options()?,
        })?,
        ExportCommand::Graphbolt(a) => export_graphbolt(&GraphBoltExport {
            store: a.common.store.clone(),
            out: a.common.out.clone(),
            edge_format: EdgeFormat::parse(&a.edge_format)?,
            dataset_name: a.dataset_name.clone(),
            options: a.common.options()?,
        })?,
    };
    print_report(out, &report, started.elapsed().as_secs_f64())
}
