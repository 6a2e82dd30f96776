//! `ginex cache build|verify`: the offline neighbor cache.

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, Subcommand};

use ginex::internals::error::{Error, Result};
use ginex::internals::exec::plan::{BASE_PROCESS_BYTES, LIBTORCH_RESIDENT_BYTES};
use ginex::internals::format::neighbor_cache::Codec;
use ginex::internals::sample::neighbor_cache::{build, build_bytes, NeighborCache};
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
    /// With --memory and no --budget: the largest cache whose build fits
    /// --memory.
    #[arg(long, value_parser = crate::args::bytes, required_unless_present = "memory")]
    pub budget: Option<u64>,
    /// One memory budget for the whole build (e.g. 2GiB): the process, the
    /// store's resident tables (`indptr`, page CRCs, segment table), 8
    /// bytes a node while the lists are chosen, then the cache itself. A
    /// --budget whose build would not fit is refused before anything is
    /// read.
    #[arg(long, value_parser = crate::args::bytes)]
    pub memory: Option<u64>,
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
            let codec = Codec::parse(&a.codec)?;
            let budget = build_budget(&store, a.budget, a.memory)?;
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

/// What building a cache of `budget` bytes for `store` holds at most: the
/// process ([`BASE_PROCESS_BYTES`], libtorch's code in a `train` build),
/// the store's resident tables and the build's own memory
/// ([`build_bytes`]).
fn build_footprint(store: &Store, budget: u64) -> u64 {
    BASE_PROCESS_BYTES
        + LIBTORCH_RESIDENT_BYTES
        + store.resident_bytes()
        + build_bytes(store.num_nodes(), budget)
}

/// The cache budget of `ginex cache build`: `--budget` when its build fits
/// `--memory` (or no `--memory` is given), else refused; with `--memory`
/// alone, the largest budget whose build fits.
fn build_budget(store: &Store, budget: Option<u64>, memory: Option<u64>) -> Result<u64> {
    let mib = |b: u64| b.div_ceil(1 << 20);
    match (budget, memory) {
        (Some(b), None) => Ok(b),
        (Some(b), Some(m)) if build_footprint(store, b) <= m => Ok(b),
        (Some(b), Some(m)) => Err(Error::invalid_argument(format!(
            "building a {} MiB cache of {} nodes takes up to {} MiB, above --memory {} MiB \
             (the store's resident tables {} MiB, 8 bytes a node while the lists are chosen, \
             then the cache); give a smaller --budget, or --memory alone for the largest that fits",
            mib(b),
            store.num_nodes(),
            mib(build_footprint(store, b)),
            m >> 20,
            mib(store.resident_bytes())
        ))),
        (None, Some(m)) => {
            if build_footprint(store, 0) > m {
                return Err(Error::invalid_argument(format!(
                    "--memory {} MiB cannot build a neighbor cache of {} nodes: choosing its lists \
                     takes {} MiB with the store's resident tables",
                    m >> 20,
                    store.num_nodes(),
                    mib(build_footprint(store, 0))
                )));
            }
            // The largest budget whose footprint fits (it grows with the
            // budget): a binary search.
            let (mut fits, mut over) = (0u64, m + 1);
            while over - fits > 1 {
                let mid = fits + (over - fits) / 2;
                if build_footprint(store, mid) <= m {
                    fits = mid;
                } else {
                    over = mid;
                }
            }
            Ok(fits)
        }
        (None, None) => Err(Error::invalid_argument("give --budget or --memory")),
    }
}
