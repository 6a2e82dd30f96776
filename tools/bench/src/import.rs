//! `ginex bench import`: `ginex-import files` on a raw dataset (the layout
//! `ginex gen --raw` writes), against a plain copy of the same input bytes
//! measured in the same invocation — the I/O floor of any importer that
//! reads its inputs once and writes a store of about their size.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;

use crate::machine::{drop_caches, machine_description, peak_rss_bytes};
use ginex::internals::error::{Error, Result};
use ginex::internals::import::files::{import_files, FilesImport};
use ginex::internals::import::pipeline::ImportReport;

/// Arguments of `ginex bench import`.
#[derive(Debug, Args)]
pub struct ImportBenchArgs {
    /// A raw dataset directory: edges.npy or edges.csv, features.npy,
    /// labels.npy, {train,valid,test}_ids.npy (`ginex gen --raw`).
    pub raw: PathBuf,
    /// Edge file to import instead of RAW/edges.npy (e.g. a CSV file).
    #[arg(long)]
    pub edges: Option<PathBuf>,
    /// Memory budget of the import.
    #[arg(long, default_value = "2GiB", value_parser = crate::args::bytes)]
    pub memory: u64,
    /// Where the stores and the copy are written (default: beside RAW);
    /// removed after each round.
    #[arg(long)]
    pub scratch: Option<PathBuf>,
    /// Rounds of (plain copy, import); every round is printed.
    #[arg(long, default_value_t = 1)]
    pub rounds: u32,
    /// Sync and drop the OS page cache before each measurement (needs root).
    #[arg(long)]
    pub drop_caches: bool,
}

fn edges_path(args: &ImportBenchArgs) -> PathBuf {
    args.edges
        .clone()
        .unwrap_or_else(|| args.raw.join("edges.npy"))
}

/// The input files of the import, in the order they are read.
fn inputs(args: &ImportBenchArgs) -> Result<Vec<PathBuf>> {
    let mut files = vec![edges_path(args), args.raw.join("features.npy")];
    for optional in [
        "labels.npy",
        "train_ids.npy",
        "valid_ids.npy",
        "test_ids.npy",
    ] {
        let p = args.raw.join(optional);
        if p.is_file() {
            files.push(p);
        }
    }
    for f in &files {
        if !f.is_file() {
            return Err(Error::invalid_argument(format!(
                "{} is missing; RAW must be a `ginex gen --raw` directory",
                f.display()
            )));
        }
    }
    Ok(files)
}

/// Copies every input into one file under `scratch` (8 MiB blocks, fsync at
/// the end) and removes it; returns the bytes copied.
fn plain_copy(files: &[PathBuf], scratch: &Path) -> Result<u64> {
    let target = scratch.join("bench-import-copy");
    // create_new: the file removed below is the one created here.
    let mut out = std::fs::File::options()
        .write(true)
        .create_new(true)
        .open(&target)
        .map_err(|e| Error::io("create", &target, e))?;
    let mut buf = vec![0u8; 8 << 20];
    let mut total = 0u64;
    for f in files {
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

fn import_once(args: &ImportBenchArgs, out: &Path) -> Result<ImportReport> {
    let mut opts = FilesImport::new(edges_path(args), out);
    opts.features = Some(args.raw.join("features.npy"));
    let raw = |name: &str| Some(args.raw.join(name)).filter(|p| p.is_file());
    opts.labels = raw("labels.npy");
    opts.split_files = [
        raw("train_ids.npy"),
        raw("valid_ids.npy"),
        raw("test_ids.npy"),
    ];
    opts.common.memory = args.memory;
    import_files(&opts)
}

/// `ginex bench import`.
pub fn run_import_bench(args: &ImportBenchArgs, out: &mut dyn Write) -> Result<()> {
    let files = inputs(args)?;
    let scratch = args.scratch.clone().unwrap_or_else(|| {
        args.raw
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."))
    });
    let w = |e| Error::io("write", "<stdout>", e);
    let input_bytes: u64 = files
        .iter()
        .map(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0))
        .sum();
    writeln!(out, "bench import: {}", args.raw.display()).map_err(w)?;
    writeln!(out, "  machine: {}", machine_description()).map_err(w)?;
    writeln!(
        out,
        "  inputs: {} ({:.1} MB); memory {}; rounds {}; page cache {}",
        files
            .iter()
            .filter_map(|f| f.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(", "),
        input_bytes as f64 / 1e6,
        args.memory,
        args.rounds,
        if args.drop_caches {
            "synced and dropped before each measurement"
        } else {
            "as found"
        }
    )
    .map_err(w)?;
    for round in 1..=args.rounds.max(1) {
        if args.drop_caches {
            drop_caches()?;
        }
        let started = Instant::now();
        let copied = plain_copy(&files, &scratch)?;
        let copy_s = started.elapsed().as_secs_f64();
        if args.drop_caches {
            drop_caches()?;
        }
        let store = scratch.join(format!("bench-import-store-{}", std::process::id()));
        let started = Instant::now();
        let report = import_once(args, &store);
        let import_s = started.elapsed().as_secs_f64();
        // Remove the store this import created (a failed import removed
        // its own staging, and an existing target is refused), then report.
        if report.is_ok() {
            std::fs::remove_dir_all(&store).map_err(|e| Error::io("remove", &store, e))?;
        }
        let report = report?;
        writeln!(
            out,
            "  round {round}: {} nodes, {} edges",
            report.nodes, report.edges_read
        )
        .map_err(w)?;
        writeln!(
            out,
            "    plain copy of the inputs  {copy_s:>8.2} s  {:>7.0} MB/s",
            copied as f64 / 1e6 / copy_s.max(1e-9)
        )
        .map_err(w)?;
        for (phase, d) in &report.phases {
            writeln!(out, "    {phase:<26} {:>8.2} s", d.as_secs_f64()).map_err(w)?;
        }
        writeln!(
            out,
            "    import total               {import_s:>8.2} s  {:>6.2}M edges/s  {:.2}x the plain copy",
            report.edges_read as f64 / 1e6 / import_s.max(1e-9),
            import_s / copy_s.max(1e-9)
        )
        .map_err(w)?;
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
