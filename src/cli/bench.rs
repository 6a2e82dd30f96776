//! `ginex bench …`: benchmarks that report ratios against a baseline
//! measured in the same invocation, with machine, dataset and parameters.

use std::io::Write;

use clap::Subcommand;

use crate::error::Result;

/// The benchmarks.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// `ginex-dump --verify` throughput against a plain sequential read of
    /// the same files.
    Verify(crate::cli::dump::VerifyBenchArgs),
    /// Miss-path throughput: Ginex-style pread per row vs batched pread vs
    /// io_uring at several queue depths, and fio on the same file.
    Io(crate::cli::bench_io::IoBenchArgs),
    /// Exact Belady changeset cost vs sampling time, and k-hop miss ratios.
    Changeset(crate::cli::bench_changeset::ChangesetBenchArgs),
    /// Neighbor-cache codecs, hit ratios by budget, and sampling throughput
    /// in memory vs from disk behind each cache.
    Sample(crate::cli::bench_sample::SampleBenchArgs),
    /// Miss ratio and epoch time of every feature-cache policy by cache size.
    Policies(crate::cli::bench_policies::PoliciesBenchArgs),
    /// `ginex-import files` on a raw dataset (`ginex gen --raw`) against a
    /// plain copy of the same inputs: phases, edges/s, peak RSS.
    Import(crate::cli::bench_import::ImportBenchArgs),
    /// `ginex-export dgl` / `graphbolt` against a plain copy of the store's
    /// bytes: seconds, MB/s, ratio, peak RSS.
    Export(crate::cli::bench_export::ExportBenchArgs),
}

/// Runs one benchmark, printing its report to `out`.
pub fn run(cmd: BenchCommand, out: &mut dyn Write) -> Result<()> {
    match cmd {
        BenchCommand::Verify(args) => crate::cli::dump::run_verify_bench(&args, out),
        BenchCommand::Io(args) => crate::cli::bench_io::run_io_bench(&args, out),
        BenchCommand::Changeset(args) => {
            crate::cli::bench_changeset::run_changeset_bench(&args, out)
        }
        BenchCommand::Sample(args) => crate::cli::bench_sample::run_sample_bench(&args, out),
        BenchCommand::Policies(args) => crate::cli::bench_policies::run_policies_bench(&args, out),
        BenchCommand::Import(args) => crate::cli::bench_import::run_import_bench(&args, out),
        BenchCommand::Export(args) => crate::cli::bench_export::run_export_bench(&args, out),
    }
}

/// One line naming the machine: CPU model, cores, memory.
pub fn machine_description() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "unknown cpu".into());
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let mem_kib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
        })
        .unwrap_or(0);
    format!(
        "{cpu}, {cores} cores, {:.1} GiB RAM",
        mem_kib as f64 / (1 << 20) as f64
    )
}

/// Writes back dirty pages and drops the whole OS page cache (needs root),
/// so the next read measures the device.
pub fn drop_caches() -> Result<()> {
    crate::io::durable::sync_all();
    std::fs::write("/proc/sys/vm/drop_caches", b"3\n")
        .map_err(|e| crate::error::Error::io("write", "/proc/sys/vm/drop_caches", e))
}

/// Peak resident set size of this process in bytes (`VmHWM`), if known.
pub fn peak_rss_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: u64 = s
        .lines()
        .find(|l| l.starts_with("VmHWM"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kib * 1024)
}
