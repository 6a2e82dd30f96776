//! `ginex cache build|verify`: the offline neighbor cache.

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, Subcommand};

use ginex::internals::error::{Error, Result};
use ginex::internals::format::neighbor_cache::Codec;
use ginex::internals::sample::neighbor_cache::{build, NeighborCache};
use ginex::internals::sample::neighbor_cache_reuse::default_path;
use ginex::internals::store::Store;

/// Neighbor-cache commands.
#[derive(Debug, Subcommand)]
pub enum CacheCommand {
    /// Build a neighbor cache for a store within a byte budget: the lists of
    /// the nodes with the highest out-degree / in-degree, encoded with a codec.
    Build(CacheBuildArgs),
    /// Check a cache file against its store: checksums, tables, every list.
    Verify(CacheVerifyArgs),
}

/// `ginex cache build`.
#[derive(Debug, Args)]
pub struct CacheBuildArgs {
    /// The store.
    pub store: PathBuf,
    /// Size limit of the cache file (e.g. 256MiB); everything counts.
    #[arg(long, value_parser = crate::args::bytes)]
    pub budget: u64,
    /// List codec: raw (Ginex), zstd-list (Ginex++), delta-bitpack,
    /// block-bitpack (delta-bitpack with a compact block location table).
    #[arg(long, default_value = "block-bitpack")]
    pub codec: String,
    /// Output file [default: STORE.ncache/CODEC-BUDGET-STOREID.ncache
    /// beside the store, where `ginex epoch`, `train` and the benches look
    /// for it]. An existing file is refused before anything is written;
    /// the cache is written to a temporary file beside it and renamed into
    /// place, so a killed build leaves no partial cache.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// `ginex cache verify`.
#[derive(Debug, Args)]
pub struct CacheVerifyArgs {
    /// The cache file.
    pub cache: PathBuf,
    /// The store it was built for.
    #[arg(long)]
    pub store: PathBuf,
}

/// Runs a cache command.
pub fn run(cmd: &CacheCommand, out: &mut dyn Write) -> Result<()> {
    let w = |e: std::io::Error| Error::io("write", "<stdout>", e);
    match cmd {
        CacheCommand::Build(a) => {
            let store = Store::open(&a.store)?;
            let (budget, codec) = (a.budget, Codec::parse(&a.codec)?);
            let path = a
                .out
                .clone()
                .unwrap_or_else(|| default_path(&store, codec, budget));
            crate::create_parent_dirs(&path)?;
            let r = build(&store, budget, codec, &path)?;
            writeln!(
                out,
                "built {}: {} lists of {} ({:.1}%), {} ids, codec {}, {} bytes ({:.2} bytes/id in the blob)",
                r.path.display(),
                r.lists,
                store.num_nodes(),
                100.0 * r.lists as f64 / store.num_nodes().max(1) as f64,
                r.ids,
                r.codec.name(),
                r.bytes,
                r.blob_bytes as f64 / r.ids.max(1) as f64
            )
            .map_err(w)
        }
        CacheCommand::Verify(a) => {
            let store = Store::open(&a.store)?;
            let cache = NeighborCache::open(&a.cache, &store)?;
            let n = cache.verify_lists(&store)?;
            writeln!(
                out,
                "ok: {} verified against {}: {n} lists identical to the store's",
                a.cache.display(),
                a.store.display()
            )
            .map_err(w)
        }
    }
}
