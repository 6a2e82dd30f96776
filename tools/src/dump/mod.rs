//! `ginex-dump`: summarise a store (`summary`), verify every checksum
//! (`verify`), or print any single file as JSON (`json`; schema:
//! `format/dump-json.md`).

mod docs;
mod json;
mod summary;
mod verify;

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;

use ginex::internals::error::{Error, Result};
use ginex::internals::store::Store;

pub use json::file_json;

/// Inspect and verify ginex files.
///
///   ginex-dump STORE             summary: counts, dtype, sizes, degrees, files
///   ginex-dump --verify STORE    check every checksum; exit 1 naming the
///                                file and offset of the first damage
///   ginex-dump --verify FILE     check a runtime file (every record) and
///                                that it belongs to its store and run
///   ginex-dump --verify CK       check a checkpoint directory: the latest
///                                and best checkpoints' weights (CRC-32),
///                                epochs and run identity
///   ginex-dump --json PATH       print one file (or a store's summary) as JSON
#[derive(Debug, Parser)]
#[command(name = "ginex-dump", version, verbatim_doc_comment)]
pub struct DumpArgs {
    /// A store directory, or with --json any single file of a store.
    pub path: PathBuf,
    /// Check every checksum of every file and the structure of every table.
    #[arg(long, conflicts_with = "json")]
    pub verify: bool,
    /// Print the file's header and decoded contents as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// With --json: print at most this many items (rows, lists, ids, …) and
    /// mark the output `"truncated": true`.
    #[arg(long)]
    pub limit: Option<usize>,
    /// With --verify of a runtime file: the store it must belong to (default:
    /// the store whose run directory `STORE.runs` holds it, if any).
    #[arg(long, value_name = "STORE")]
    pub store: Option<PathBuf>,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    /// The batches the summary's layout line is measured on.
    #[command(flatten)]
    pub layout: crate::args::LayoutSampleArgs,
}

/// Runs `ginex-dump`.
pub fn run(args: &DumpArgs, out: &mut dyn Write) -> Result<()> {
    let write_err = |e: std::io::Error| Error::io("write", "<stdout>", e);
    if args.json {
        let value = if args.path.is_dir() {
            json::summary_json(&Store::open(&args.path)?, args.limit)?
        } else {
            json::file_json(&args.path, args.limit)?
        };
        serde_json::to_writer(&mut *out, &value).map_err(|e| write_err(e.into()))?;
        return writeln!(out).map_err(write_err);
    }
    // A single file (runtime file, neighbor cache): its kind comes from
    // the common header; it is shown (and checked) on its own.
    if args.path.is_file() {
        return writeln!(
            out,
            "{}",
            verify::verify_file(&args.path, args.store.as_deref())?
        )
        .map_err(write_err);
    }
    // A checkpoint directory (`ginex train --checkpoint CK`): its latest
    // and best checkpoints, verified as resume and predict verify them.
    if args.path.join("LATEST").is_file() && !args.path.join("MANIFEST").exists() {
        return writeln!(out, "{}", verify::verify_checkpoints(&args.path)?).map_err(write_err);
    }
    if args.store.is_some() {
        return Err(Error::invalid_argument(
            "--store is for verifying a runtime file (ginex-dump --verify FILE --store STORE)",
        ));
    }
    let store = Store::open(&args.path)?;
    if args.verify {
        let total: u64 = store.manifest().files.iter().map(|f| f.len).sum();
        let bar = crate::progress_bar(total, "verify", args.quiet);
        let started = Instant::now();
        let mut base = 0u64;
        let mut last = 0u64;
        let report = store.verify_with_progress(&mut |done| {
            // Progress restarts per file; keep a running total.
            if done < last {
                base += last;
            }
            last = done;
            bar.set_position(base + done);
        })?;
        bar.finish_and_clear();
        let secs = started.elapsed().as_secs_f64();
        return writeln!(
            out,
            "ok: {} verified: {} files, {} feature pages, {} segments, {:.1} MB in {secs:.2} s ({:.0} MB/s)",
            args.path.display(),
            report.files,
            report.pages,
            report.segments,
            report.bytes as f64 / 1e6,
            report.bytes as f64 / 1e6 / secs.max(1e-9)
        )
        .map_err(write_err);
    }
    summary::print_summary(&store, &args.layout.sample()?, out).map_err(write_err)
}
