//! The `ginex` tool's subcommands: generate, sample, inspect, run an epoch,
//! train and predict (feature `train`), neighbor caches, benchmarks.

use std::io::Write;

use clap::{Parser, Subcommand};

use ginex::internals::error::Result;

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
    Gen(crate::gen::GenArgs),
    /// Give a featureless node type of a typed store features: the mean of
    /// its neighbours' over one relation (writes a new store).
    DeriveFeatures(crate::derive::DeriveArgs),
    /// Sample one batch and print it as JSON (a debugging aid).
    Sample(crate::sample::SampleArgs),
    /// Sample one superbatch into runtime files and precompute its Belady
    /// changesets; prints the optimal miss statistics as JSON.
    Inspect(crate::sample::InspectArgs),
    /// Run one epoch of data preparation under a cache policy, measured.
    Epoch(crate::epoch::EpochArgs),
    /// Train a GNN (GraphSAGE, GCN, GAT or MLP) through the out-of-core data path.
    #[cfg(feature = "train")]
    Train(Box<crate::train::TrainArgs>),
    /// Write final-layer outputs of a trained model as .npy.
    #[cfg(feature = "train")]
    Predict(crate::train::PredictArgs),
    /// Build or verify a neighbor cache.
    #[command(subcommand)]
    Cache(crate::neighbor_cache::CacheCommand),
    /// Run a benchmark and print its report.
    #[command(subcommand)]
    Bench(crate::bench::BenchCommand),
}

/// Runs a parsed command line, writing the report to `out`.
pub fn run(cli: GinexCli, out: &mut dyn Write) -> Result<()> {
    match cli.command {
        GinexCommand::Gen(args) => crate::gen::run(&args, out),
        GinexCommand::DeriveFeatures(args) => crate::derive::run(&args, out),
        GinexCommand::Sample(args) => crate::sample::run_sample(&args, out),
        GinexCommand::Inspect(args) => crate::sample::run_inspect(&args, out),
        GinexCommand::Cache(cmd) => crate::neighbor_cache::run(&cmd, out),
        GinexCommand::Epoch(args) => crate::epoch::run(&args, out),
        #[cfg(feature = "train")]
        GinexCommand::Train(args) => crate::train::run_train(&args, out),
        #[cfg(feature = "train")]
        GinexCommand::Predict(args) => crate::train::run_predict(&args, out),
        GinexCommand::Bench(cmd) => crate::bench::run(cmd, out, crate::epoch::child_epoch),
    }
}
