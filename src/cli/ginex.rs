//! The `ginex` tool: generate synthetic data, benchmark (later: train).

use std::io::Write;

use clap::{Parser, Subcommand};

use crate::error::Result;

/// ginex: out-of-core GNN training on one machine with an SSD.
#[derive(Debug, Parser)]
#[command(name = "ginex", version, about, long_about = None)]
pub struct GinexCli {
    /// What to do.
    #[command(subcommand)]
    pub command: GinexCommand,
}

/// `ginex` subcommands.
#[derive(Debug, Subcommand)]
pub enum GinexCommand {
    /// Generate a synthetic power-law graph with planted classes, as a store
    /// (`--out`) or as raw .npy / edge-list files (`--raw`).
    Gen(crate::cli::gen::GenArgs),
    /// Sample one batch and print it as JSON (a debugging aid).
    Sample(crate::cli::sample::SampleArgs),
    /// Sample one superbatch into runtime files and precompute its Belady
    /// changesets; prints the optimal miss statistics as JSON.
    Inspect(crate::cli::sample::InspectArgs),
    /// Run one epoch of data preparation under a cache policy, measured.
    Epoch(crate::cli::epoch::EpochArgs),
    /// Train a GNN (GraphSAGE, GCN, GAT or MLP) through the out-of-core data path.
    #[cfg(feature = "train")]
    Train(Box<crate::cli::train::TrainArgs>),
    /// Write final-layer outputs of a trained model as .npy.
    #[cfg(feature = "train")]
    Predict(crate::cli::train::PredictArgs),
    /// Build or verify a neighbor cache.
    #[command(subcommand)]
    Cache(crate::cli::cache::CacheCommand),
    /// Run a benchmark and print its report.
    #[command(subcommand)]
    Bench(crate::cli::bench::BenchCommand),
}

/// Runs a parsed command line, writing the report to `out`.
pub fn run(cli: GinexCli, out: &mut dyn Write) -> Result<()> {
    match cli.command {
        GinexCommand::Gen(args) => crate::cli::gen::run(&args, out),
        GinexCommand::Sample(args) => crate::cli::sample::run_sample(&args, out),
        GinexCommand::Inspect(args) => crate::cli::sample::run_inspect(&args, out),
        GinexCommand::Cache(cmd) => crate::cli::cache::run(&cmd, out),
        GinexCommand::Epoch(args) => crate::cli::epoch::run(&args, out),
        #[cfg(feature = "train")]
        GinexCommand::Train(args) => crate::cli::train::run_train(&args, out),
        #[cfg(feature = "train")]
        GinexCommand::Predict(args) => crate::cli::train::run_predict(&args, out),
        GinexCommand::Bench(cmd) => crate::cli::bench::run(cmd, out),
    }
}
