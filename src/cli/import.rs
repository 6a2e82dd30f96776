//! `ginex-import`: datasets in. This stop implements `files`; `ogb` and
//! `dgl` come with the rest of the importer issue.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use clap::{Args, Parser, Subcommand};

use crate::cli::size::parse_bytes;
use crate::error::{Error, Result};
use crate::format::pages::Dtype;
use crate::import::files::{import_files, FilesImport};
use crate::store::edges::CscOptions;

/// Import a dataset into a ginex store (written atomically, verified).
#[derive(Debug, Parser)]
#[command(name = "ginex-import", version)]
pub struct ImportCli {
    /// The input format.
    #[command(subcommand)]
    pub command: ImportCommand,
}

/// Input formats.
#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// An edge list (CSV/TSV/space text, optionally .gz, or .npy (E,2)/(2,E))
    /// plus a feature matrix (.npy), optional labels and splits.
    ///
    /// Example: ginex-import files --edges edges.npy --features feat.npy --labels labels.npy
    ///          --train-ids train.npy --valid-ids valid.npy --test-ids test.npy --out STORE
    Files(FilesArgs),
}

/// `ginex-import files`.
#[derive(Debug, Args)]
pub struct FilesArgs {
    /// Edge list: text (`src dst` per line; `#`/`%` comments, header line,
    /// CRLF, BOM and .gz handled) or .npy of integer ids.
    #[arg(long)]
    pub edges: PathBuf,
    /// Feature matrix .npy (nodes x dim; float16/32/64, C order).
    #[arg(long)]
    pub features: PathBuf,
    /// Store dtype for the features: f32, f16 or bf16.
    #[arg(long, default_value = "f32")]
    pub dtype: String,
    /// Labels .npy, shape (N,) or (N,1): integers (-1 = missing) or floats (NaN = missing).
    #[arg(long)]
    pub labels: Option<PathBuf>,
    /// Number of classes (default: largest label + 1).
    #[arg(long)]
    pub num_classes: Option<u32>,
    /// Training node ids (.npy or one per line).
    #[arg(long)]
    pub train_ids: Option<PathBuf>,
    /// Validation node ids.
    #[arg(long)]
    pub valid_ids: Option<PathBuf>,
    /// Test node ids.
    #[arg(long)]
    pub test_ids: Option<PathBuf>,
    /// Random split fractions instead of id files, e.g. 0.8,0.1,0.1.
    #[arg(long, conflicts_with_all = ["train_ids", "valid_ids", "test_ids"])]
    pub split: Option<String>,
    /// Seed of --split.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Add the reverse of every edge.
    #[arg(long)]
    pub undirected: bool,
    /// Drop edges from a node to itself.
    #[arg(long)]
    pub remove_self_loops: bool,
    /// Keep one copy of repeated edges.
    #[arg(long)]
    pub dedup: bool,
    /// Require this many nodes (must equal the feature rows).
    #[arg(long)]
    pub num_nodes: Option<u64>,
    /// Keep NaN/Inf feature values instead of refusing them.
    #[arg(long)]
    pub allow_nonfinite: bool,
    /// Memory budget (the CSC build spills to disk beyond it).
    #[arg(long, default_value = "2GiB")]
    pub memory: String,
    /// The store to create (must not exist).
    #[arg(long)]
    pub out: PathBuf,
}

/// Runs `ginex-import`.
pub fn run(cli: &ImportCli, out: &mut dyn Write) -> Result<()> {
    match &cli.command {
        ImportCommand::Files(a) => {
            let split = match &a.split {
                None => None,
                Some(s) => {
                    let v: Vec<f64> = s
                        .split(',')
                        .map(|x| x.trim().parse::<f64>())
                        .collect::<std::result::Result<_, _>>()
                        .map_err(|_| {
                            Error::invalid_argument(format!(
                                "--split {s:?}: expected three fractions"
                            ))
                        })?;
                    let arr: [f64; 3] = v.try_into().map_err(|_| {
                        Error::invalid_argument(format!("--split {s:?}: expected three fractions"))
                    })?;
                    if arr.iter().any(|f| !(0.0..=1.0).contains(f))
                        || arr.iter().sum::<f64>() > 1.0 + 1e-9
                    {
                        return Err(Error::invalid_argument(format!(
                            "--split {s:?}: fractions must be in [0, 1] and sum to at most 1"
                        )));
                    }
                    Some(arr)
                }
            };
            let opts = FilesImport {
                edges: a.edges.clone(),
                features: a.features.clone(),
                dtype: Dtype::parse(&a.dtype)?,
                labels: a.labels.clone(),
                num_classes: a.num_classes,
                split_files: [a.train_ids.clone(), a.valid_ids.clone(), a.test_ids.clone()],
                split,
                seed: a.seed,
                undirected: a.undirected,
                csc: CscOptions {
                    dedup: a.dedup,
                    remove_self_loops: a.remove_self_loops,
                },
                num_nodes: a.num_nodes,
                allow_nonfinite: a.allow_nonfinite,
                memory: parse_bytes(&a.memory)?,
                out: a.out.clone(),
            };
            let started = Instant::now();
            let r = import_files(&opts)?;
            let w = |e| Error::io("write", "<stdout>", e);
            writeln!(out, "imported {} (verified)", a.out.display()).map_err(w)?;
            writeln!(
                out,
                "  {} nodes, {} edges read, {} kept ({} duplicates, {} self-loops dropped)",
                r.nodes,
                r.edges_read,
                r.csc.edges_out,
                r.csc.duplicates_removed,
                r.csc.self_loops_removed
            )
            .map_err(w)?;
            for (phase, d) in &r.phases {
                writeln!(out, "  {phase:<26} {:>9.2} s", d.as_secs_f64()).map_err(w)?;
            }
            let secs = started.elapsed().as_secs_f64();
            writeln!(
                out,
                "  total {secs:.2} s, {:.2}M edges/s",
                r.edges_read as f64 / 1e6 / secs.max(1e-9)
            )
            .map_err(w)
        }
    }
}
