//! `ginex bench export STORE`: `ginex-export dgl` (csv and numpy edges) and
//! `ginex-export graphbolt` against a plain copy of the store's bytes
//! measured in the same invocation — the I/O floor of an exporter that
//! reads every byte of the store once and writes about as many.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;

use crate::machine::{drop_caches, machine_description, peak_rss_bytes};
use ginex::internals::error::{Error, Result};
use ginex::internals::export::dgl::{export_dgl, DglExport};
use ginex::internals::export::graphbolt::{export_graphbolt, GraphBoltExport};
use ginex::internals::export::{store_bytes, EdgeFormat, ExportOptions, ExportReport};
use ginex::internals::format::header::FileKind;
use ginex::internals::format::manifest::store_file_name;
use ginex::internals::size::parse_bytes;
use ginex::internals::store::Store;

/// Arguments of `ginex bench export`.
#[derive(Debug, Args)]
pub struct ExportBenchArgs {
    /// The store to export.
    pub store: PathBuf,
    /// Memory budget of the exports.
    #[arg(long, default_value = "2GiB")]
    pub memory: String,
    /// Chunks of the DGL exports.
    #[arg(long, default_value_t = 4)]
    pub chunks: u64,
    /// Where the exports and the copy are written (default: beside STORE);
    /// removed after each measurement.
    #[arg(long)]
    pub scratch: Option<PathBuf>,
    /// Rounds of (plain copy, exports); every round is printed.
    #[arg(long, default_value_t = 1)]
    pub rounds: u32,
    /// Sync and drop the OS page cache before each measurement (needs root).
    #[arg(long)]
    pub drop_caches: bool,
}

/// Copies every file of the store into one file under `scratch` (8 MiB
/// blocks, fsync at the end) and removes it; returns the bytes copied.
fn plain_copy(store: &Store, scratch: &Path) -> Result<u64> {
    let target = scratch.join(format!("bench-export-copy-{}", std::process::id()));
    // create_new: the file removed below is the one created here.
    let mut out = std::fs::File::options()
        .write(true)
        .create_new(true)
        .open(&target)
        .map_err(|e| Error::io("create", &target, e))?;
    let mut buf = vec![0u8; 8 << 20];
    let mut total = 0u64;
    let mut files: Vec<PathBuf> = store
        .manifest()
        .files
        .iter()
        .map(|f| store.dir().join(f.name()))
        .collect();
    files.push(store.dir().join(store_file_name(FileKind::Manifest)));
    for f in &files {
        let mut input = std::fs::File::open(f).map_err(|e| Error::io("open", f, e))?;
        loop {
            let n = input.read(&mut buf).map_err(|e| Error::io("read", f, e))?;
            if n == 0 {
                break;
            }
            out.write_all(buf.get(..n).unwrap_or_default())
                .map_err(|e| Error::io("write", &target, e))?;
            total += n as u64;
        }
    }
    out.sync_all().map_err(|e| Error::io("fsync", &target, e))?;
    drop(out);
    std::fs::remove_file(&target).map_err(|e| Error::io("remove", &target, e))?;
    Ok(total)
}

/// One export the bench measures: its name and the export into a target.
type Run<'a> = (&'a str, Box<dyn Fn(&Path) -> Result<ExportReport> + 'a>);

/// `ginex bench export`: plan (the store, scratch, the exports), then each
/// round runs the plain copy and every export, reporting as it goes.
pub fn run_export_bench(args: &ExportBenchArgs, out: &mut dyn Write) -> Result<()> {
    let store = Store::open(&args.store)?;
    let scratch = args.scratch.clone().unwrap_or_else(|| {
        args.store
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."))
    });
    let options = ExportOptions {
        memory: parse_bytes(&args.memory)?,
        keep_f16: false,
        quiet: true,
    };
    let w = |e| Error::io("write", "<stdout>", e);
    let bytes = store_bytes(&store);
    report_export_header(args, &store, bytes, out)?;
    let runs = export_runs(args, &options);
    for round in 1..=args.rounds.max(1) {
        if args.drop_caches {
            drop_caches()?;
        }
        let started = Instant::now();
        let copied = plain_copy(&store, &scratch)?;
        let copy_s = started.elapsed().as_secs_f64();
        writeln!(out, "  round {round}:").map_err(w)?;
        writeln!(
            out,
            "    {:<24} {copy_s:>8.2} s  {:>7.0} MB/s of store bytes  (baseline)",
            "plain copy of the store",
            copied as f64 / 1e6 / copy_s.max(1e-9)
        )
        .map_err(w)?;
        for (name, run) in &runs {
            if args.drop_caches {
                drop_caches()?;
            }
            let target = scratch.join(format!("bench-export-{}", std::process::id()));
            let started = Instant::now();
            let report = run(&target);
            let secs = started.elapsed().as_secs_f64();
            // Only an export that succeeded created it (one that failed
            // removed its own staging, and an existing target is refused).
            if report.is_ok() {
                std::fs::remove_dir_all(&target).map_err(|e| Error::io("remove", &target, e))?;
            }
            let report = report?;
            writeln!(
                out,
                "    {name:<24} {secs:>8.2} s  {:>7.0} MB/s of store bytes, {:>7.0} MB/s written ({:.0} MB)  {:.2}x the plain copy's time",
                bytes as f64 / 1e6 / secs.max(1e-9),
                report.bytes_written as f64 / 1e6 / secs.max(1e-9),
                report.bytes_written as f64 / 1e6,
                secs / copy_s.max(1e-9)
            )
            .map_err(w)?;
        }
    }
    if let Some(rss) = peak_rss_bytes() {
        writeln!(
            out,
            "  peak RSS of this process {:.0} MiB (budget {})",
            rss as f64 / (1 << 20) as f64,
            args.memory
        )
        .map_err(w)?;
    }
    Ok(())
}

/// The report's header: machine, store, parameters.
fn report_export_header(
    args: &ExportBenchArgs,
    store: &Store,
    bytes: u64,
    out: &mut dyn Write,
) -> Result<()> {
    let w = |e| Error::io("write", "<stdout>", e);
    writeln!(out, "bench export: {}", args.store.display()).map_err(w)?;
    writeln!(out, "  machine: {}", machine_description()).map_err(w)?;
    writeln!(
        out,
        "  store: {} nodes, {} edges, dim {} {}, {:.1} MB; memory {}; dgl chunks {}; rounds {}; page cache {}",
        store.num_nodes(),
        store.num_edges(),
        store.feature_dim(),
        store.dtype().name(),
        bytes as f64 / 1e6,
        args.memory,
        args.chunks,
        args.rounds,
        if args.drop_caches {
            "synced and dropped before each measurement"
        } else {
            "as found"
        }
    )
    .map_err(w)?;
    Ok(())
}

/// The exports measured against the plain copy: DGL with CSV and with
/// numpy edges, GraphBolt.
fn export_runs<'a>(args: &'a ExportBenchArgs, options: &'a ExportOptions) -> Vec<Run<'a>> {
    vec![
        (
            "dgl, csv edges",
            Box::new(|o: &Path| {
                export_dgl(&DglExport {
                    chunks: args.chunks,
                    edge_format: EdgeFormat::Csv,
                    options: options.clone(),
                    ..DglExport::new(&args.store, o)
                })
            }),
        ),
        (
            "dgl, numpy edges",
            Box::new(|o: &Path| {
                export_dgl(&DglExport {
                    chunks: args.chunks,
                    edge_format: EdgeFormat::Numpy,
                    options: options.clone(),
                    ..DglExport::new(&args.store, o)
                })
            }),
        ),
        (
            "graphbolt, numpy edges",
            Box::new(|o: &Path| {
                export_graphbolt(&GraphBoltExport {
                    options: options.clone(),
                    ..GraphBoltExport::new(&args.store, o)
                })
            }),
        ),
    ]
}
