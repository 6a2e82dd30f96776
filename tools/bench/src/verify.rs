//! `ginex bench verify`: `ginex-dump --verify` throughput against a plain
//! sequential read of the same files, in the same process.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;

use crate::machine::{drop_caches, machine_description};
use ginex::internals::error::{Error, Result};
use ginex::internals::format::header::FileKind;
use ginex::internals::format::manifest::store_file_name;
use ginex::internals::store::Store;

/// Arguments of `ginex bench verify`.
#[derive(Debug, Args)]
pub struct VerifyBenchArgs {
    /// The store to verify.
    pub store: PathBuf,
    /// Rounds of (plain read, verify); the best of each is reported.
    #[arg(long, default_value_t = 2)]
    pub rounds: u32,
    /// Drop the OS page cache before each measurement (needs root).
    #[arg(long)]
    pub drop_caches: bool,
}

/// Reads every file of the store sequentially (8 MiB reads), checking nothing.
fn plain_read(dir: &Path, files: &[PathBuf]) -> Result<u64> {
    let mut buf = vec![0u8; 8 << 20];
    let mut total = 0;
    for f in files {
        let path = dir.join(f);
        let mut file = std::fs::File::open(&path).map_err(|e| Error::io("open", &path, e))?;
        loop {
            let n = file
                .read(&mut buf)
                .map_err(|e| Error::io("read", &path, e))?;
            if n == 0 {
                break;
            }
            total += n as u64;
        }
    }
    Ok(total)
}

/// `ginex bench verify`: verify throughput against a plain sequential read
/// of the same bytes, in the same process.
pub fn run_verify_bench(args: &VerifyBenchArgs, out: &mut dyn Write) -> Result<()> {
    let store = Store::open(&args.store)?;
    let mut files: Vec<PathBuf> = store
        .manifest()
        .files
        .iter()
        .map(|f| PathBuf::from(f.name()))
        .collect();
    files.push(PathBuf::from(store_file_name(FileKind::Manifest)));
    let (mut best_read, mut best_verify) = (f64::MAX, f64::MAX);
    let mut bytes = 0;
    for _ in 0..args.rounds.max(1) {
        if args.drop_caches {
            drop_caches()?;
        }
        let t = Instant::now();
        bytes = plain_read(store.dir(), &files)?;
        best_read = best_read.min(t.elapsed().as_secs_f64());
        if args.drop_caches {
            drop_caches()?;
        }
        let t = Instant::now();
        store.verify()?;
        best_verify = best_verify.min(t.elapsed().as_secs_f64());
    }
    let mb = bytes as f64 / 1e6;
    let w = |e| Error::io("write", "<stdout>", e);
    writeln!(out, "bench verify: {}", args.store.display()).map_err(w)?;
    writeln!(out, "  machine: {}", machine_description()).map_err(w)?;
    writeln!(
        out,
        "  dataset: {} nodes, {} edges, dim {} {}; {mb:.1} MB in {} files; rounds {}, page cache {}",
        store.num_nodes(),
        store.num_edges(),
        store.feature_dim(),
        store.dtype().name(),
        files.len(),
        args.rounds,
        if args.drop_caches { "dropped before each pass" } else { "warm after the first pass" }
    )
    .map_err(w)?;
    writeln!(
        out,
        "  plain sequential read  {best_read:>8.2} s  {:>8.0} MB/s",
        mb / best_read
    )
    .map_err(w)?;
    writeln!(
        out,
        "  verify                 {best_verify:>8.2} s  {:>8.0} MB/s",
        mb / best_verify
    )
    .map_err(w)?;
    writeln!(
        out,
        "  verify / plain read throughput: {:.2}",
        best_read / best_verify
    )
    .map_err(w)?;
    Ok(())
}
