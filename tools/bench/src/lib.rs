//! The benchmark harness, `ginex bench …`: benchmarks that report ratios
//! against a baseline measured in the same invocation, with machine,
//! dataset and parameters; and what measuring needs, which the CLI's
//! reporting commands share (the machine line, memory cgroups, SVG charts,
//! report files).
//!
//! The CLI crate (`ginex-cli`) depends on this one and adds
//! [`BenchCommand`] as `ginex bench`; the one thing the harness needs of
//! the CLI, parsing `ginex epoch`'s arguments for `bench outofcore`'s
//! children, comes in as [`ChildEpochParser`].

use std::io::Write;

use clap::Subcommand;

use ginex::internals::error::Result;

pub mod args;
pub mod cgroup;
pub mod changeset;
pub mod curves;
pub mod export;
pub mod import;
pub mod io;
pub mod machine;
pub mod outofcore;
pub mod outofcore_json;
pub mod outofcore_report;
pub mod policies;
pub mod report;
pub mod sample;
pub mod sampler;
pub mod svg;
pub mod verify;

pub use outofcore::ChildEpochParser;
pub use report::{create_parent_dirs, sorted_json, write_report};

/// The benchmarks.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// `ginex-dump --verify` throughput against a plain sequential read of
    /// the same files.
    Verify(verify::VerifyBenchArgs),
    /// Miss-path throughput: Ginex-style pread per row vs batched pread vs
    /// io_uring at several queue depths, and fio on the same file.
    Io(io::IoBenchArgs),
    /// Exact Belady changeset cost vs sampling time, and k-hop miss ratios.
    Changeset(changeset::ChangesetBenchArgs),
    /// Neighbor-cache codecs, hit ratios by budget, and sampling throughput
    /// in memory vs from disk behind each cache.
    Sample(sample::SampleBenchArgs),
    /// Neighbor against layer-neighbor (LABOR) sampling: distinct vertices
    /// and edges per batch, sampling time, ratios to neighbor sampling.
    Sampler(sampler::SamplerBenchArgs),
    /// Miss ratio and epoch time of every feature-cache policy by cache size.
    Policies(policies::PoliciesBenchArgs),
    /// Miss-ratio curves of every policy (Belady, k-hop, static, LRU,
    /// SIEVE, S3-FIFO, CLOCK) replayed from one sampled trace, no feature I/O.
    Curves(curves::CurvesBenchArgs),
    /// `ginex-export dgl` / `graphbolt` against a plain copy of the store's
    /// bytes: seconds, MB/s, ratio, peak RSS.
    Export(export::ExportBenchArgs),
    /// `ginex-import files` on a raw dataset (`ginex gen --raw`) against a
    /// plain copy of the same inputs: phases, edges/s, peak RSS.
    Import(import::ImportBenchArgs),
    /// Every policy's whole epoch as its own process inside a memory cgroup
    /// of `--memory` (page cache included): wall time, misses, bytes read,
    /// cgroup peak and OOM kills, ratios to ginex.
    Outofcore(outofcore::OutOfCoreBenchArgs),
}

/// Runs one benchmark, printing its report to `out`; `bench outofcore`
/// reads its children's `ginex epoch` arguments with `epoch_args`.
pub fn run(cmd: BenchCommand, out: &mut dyn Write, epoch_args: ChildEpochParser) -> Result<()> {
    match cmd {
        BenchCommand::Verify(args) => verify::run_verify_bench(&args, out),
        BenchCommand::Io(args) => io::run_io_bench(&args, out),
        BenchCommand::Changeset(args) => changeset::run_changeset_bench(&args, out),
        BenchCommand::Sample(args) => sample::run_sample_bench(&args, out),
        BenchCommand::Sampler(args) => sampler::run_sampler_bench(&args, out),
        BenchCommand::Policies(args) => policies::run_policies_bench(&args, out),
        BenchCommand::Curves(args) => curves::run_curves_bench(&args, out),
        BenchCommand::Export(args) => export::run_export_bench(&args, out),
        BenchCommand::Import(args) => import::run_import_bench(&args, out),
        BenchCommand::Outofcore(args) => outofcore::run_outofcore_bench(&args, out, epoch_args),
    }
}
