//! Where a store's neighbor caches live, and finding one instead of
//! building it again.
//!
//! A neighbor cache is a pure function of (store, codec, budget), so it is
//! built once, offline (`ginex cache build`, or the first run that needs
//! it), and every later run opens it. The default location is beside the
//! store, `STORE.ncache/<codec>-<budget>-<store identity>.ncache` (the
//! identity is the manifest's CRC, in hex); a run may name any path
//! instead.
//!
//! No cache is ever replaced or removed: a store rebuilt in place has
//! another identity, so its cache gets another name and the old file is
//! left where it is. A cache at a path the user named, or a damaged one
//! at the default location, that does not match is an error that says what
//! differs.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::format::neighbor_cache::Codec;
use crate::sample::neighbor_cache::{build_picked, store_identity, NeighborCache, Pick};
use crate::store::Store;

/// The default neighbor-cache path of `store` for `codec` and `budget`
/// ([`Pick::Degree`]'s lists).
pub fn default_path(store: &Store, codec: Codec, budget: u64) -> PathBuf {
    default_path_picked(store, codec, budget, &Pick::Degree)
}

/// The default neighbor-cache path of `store` for `codec`, `budget` and
/// `pick`: [`Pick::Reads`] adds `reads-<model fingerprint>-` before the
/// budget (the file's bytes do not record the pick; its name does).
pub fn default_path_picked(store: &Store, codec: Codec, budget: u64, pick: &Pick<'_>) -> PathBuf {
    let picked = match pick {
        Pick::Degree => String::new(),
        Pick::Reads(model) => format!("reads-{:08x}-", model.fingerprint()),
    };
    let dir = store.dir();
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "store".into());
    dir.with_file_name(format!("{name}.ncache")).join(format!(
        "{}-{picked}{budget}-{:08x}.ncache",
        codec.name(),
        store_identity(store)
    ))
}

/// How a run got its neighbor cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NcacheOrigin {
    /// An existing, matching cache was opened.
    Reused,
    /// The cache was built now, taking this long.
    Built(Duration),
}

/// What differs between a cache file and what a run asks for, if anything.
fn mismatch(cache: &NeighborCache<'_>, store: &Store, codec: Codec, budget: u64) -> Option<String> {
    let h = cache.header();
    let mut why = Vec::new();
    if h.num_nodes != store.num_nodes() || h.store_crc != store_identity(store) {
        why.push(format!(
            "it was built for another store (manifest checksum {:#010x}, this store's is {:#010x})",
            h.store_crc,
            store_identity(store)
        ));
    }
    if h.codec != codec {
        why.push(format!(
            "its codec is {}, not {}",
            h.codec.name(),
            codec.name()
        ));
    }
    match h.budget {
        Some(b) if b == budget => {}
        Some(b) => why.push(format!(
            "it was built for a budget of {b} bytes, not {budget}"
        )),
        None => why.push("it records no budget (format 1.0)".into()),
    }
    (!why.is_empty()).then(|| why.join("; "))
}

/// Opens the neighbor cache of `store` for `codec` and `budget` at `path`
/// (None: the default location), building it first when there is none.
pub fn open_or_build<'s>(
    store: &'s Store,
    codec: Codec,
    budget: u64,
    path: Option<&Path>,
) -> Result<(NeighborCache<'s>, PathBuf, NcacheOrigin)> {
    open_or_build_picked(store, codec, budget, path, &Pick::Degree)
}

/// [`open_or_build`] with the lists a new cache holds chosen by `pick`
/// (an existing cache is opened whatever its pick: the lists it holds are
/// exact, only which ones differs). Without a `path`, a cache at `pick`'s
/// default location is opened, else one at [`default_path`] (where `ginex
/// cache build` writes), else one is built at `pick`'s.
pub fn open_or_build_picked<'s>(
    store: &'s Store,
    codec: Codec,
    budget: u64,
    path: Option<&Path>,
    pick: &Pick<'_>,
) -> Result<(NeighborCache<'s>, PathBuf, NcacheOrigin)> {
    let explicit = path.is_some();
    let path = path.map_or_else(
        || {
            // A cache built ahead of time (`ginex cache build`, the degree
            // pick's name) is used where this pick has none.
            let own = default_path_picked(store, codec, budget, pick);
            let built = default_path(store, codec, budget);
            match own.symlink_metadata().is_err() && built.symlink_metadata().is_ok() {
                true => built,
                false => own,
            }
        },
        Path::to_path_buf,
    );
    if path.symlink_metadata().is_ok() {
        let cache = NeighborCache::open_unbound(&path)?;
        match mismatch(&cache, store, codec, budget) {
            None => return Ok((cache.bind(store)?, path, NcacheOrigin::Reused)),
            // Never replaced: this run did not create it.
            Some(why) if explicit => {
                return Err(Error::invalid_argument(format!(
                    "neighbor cache {} does not match this run: {why}; build one with `ginex cache build {} --budget {budget} --codec {}`",
                    path.display(),
                    store.dir().display(),
                    codec.name()
                )))
            }
            Some(why) => {
                return Err(Error::invalid_argument(format!(
                    "neighbor cache {} at the default location does not match this run: {why}; ginex does not remove files it did not create in this run: remove it, and the run builds a new one",
                    path.display()
                )))
            }
        }
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| Error::io("create directory", parent, e))?;
    }
    let started = Instant::now();
    match build_picked(store, budget, codec, &path, pick) {
        Ok(_) => {}
        // Another run built it meanwhile: use theirs.
        Err(Error::AlreadyExists { .. }) => {
            let cache = NeighborCache::open(&path, store)?;
            if let Some(why) = mismatch(&cache, store, codec, budget) {
                return Err(Error::invalid_argument(format!(
                    "neighbor cache {} appeared while building it and does not match: {why}",
                    path.display()
                )));
            }
            return Ok((cache, path, NcacheOrigin::Reused));
        }
        Err(e) => return Err(e),
    }
    let built = started.elapsed();
    // The build's per-list buffers are freed; give them back before the
    // caches of the run are allocated.
    crate::io::heap::release_free_memory();
    Ok((
        NeighborCache::open(&path, store)?,
        path,
        NcacheOrigin::Built(built),
    ))
}
