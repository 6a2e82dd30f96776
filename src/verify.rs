//! Verification of any file ginex writes, by its header's kind: a store
//! directory through [`Store::verify`](crate::store::Store::verify), a
//! runtime file record by record, a neighbor cache list by list.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::format::header::{FileHeader, FileKind, HEADER_SIZE};
use crate::format::neighbor_cache::Codec;
use crate::format::runtime::RunStamp;
use crate::inspect::runfile::RunReader;
use crate::io::read::{open, read_exact_at};
use crate::sample::neighbor_cache::NeighborCache;
use crate::sample::source::ListCache;

/// What [`verify_file`] checked in a file that is not part of a store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileReport {
    /// A runtime file (samples or changes): every record's CRC and framing.
    Runtime {
        /// Which runtime file.
        kind: FileKind,
        /// The store, run and parameters its run record names.
        stamp: RunStamp,
        /// Records read.
        records: u64,
        /// File length.
        bytes: u64,
    },
    /// A neighbor cache: its checksums and every list decoded and sorted.
    NeighborCache {
        /// Lists held.
        lists: u64,
        /// Their encoding.
        codec: Codec,
        /// File length.
        bytes: u64,
    },
}

/// Verifies one file that is not a store directory (runtime files and
/// neighbor caches). A file of a store is refused with a message naming the
/// store directory as the thing to verify.
pub fn verify_file(path: &Path) -> Result<FileReport> {
    let mut head = [0u8; HEADER_SIZE];
    let file = open(path)?;
    let len = file
        .metadata()
        .map_err(|e| Error::io("stat", path, e))?
        .len();
    if len < HEADER_SIZE as u64 {
        return Err(Error::corrupt(
            path,
            0,
            format!(
                "the file is shorter than the {HEADER_SIZE}-byte common header every ginex file starts with (torn write, or not a ginex file)"
            ),
        ));
    }
    read_exact_at(&file, path, 0, &mut head)?;
    let header = FileHeader::decode(&head, path)?;
    match header.kind {
        FileKind::RunSamples | FileKind::RunChanges => {
            let (stamp, records) = crate::inspect::runfile::read_all(path, header.kind)?;
            Ok(FileReport::Runtime {
                kind: header.kind,
                stamp,
                // The run record counts.
                records: records.len() as u64 + 1,
                bytes: header.file_len(),
            })
        }
        FileKind::NeighborCache => {
            let cache = NeighborCache::open_unbound(path)?;
            let mut ids = Vec::new();
            for v in cache.cached_nodes() {
                ids.clear();
                ListCache::lookup(&cache, v, &mut ids)?;
                if ids.windows(2).any(|w| w[1] < w[0]) {
                    return Err(Error::corrupt(
                        path,
                        64,
                        format!("cached list of node {v} is not sorted"),
                    ));
                }
            }
            Ok(FileReport::NeighborCache {
                lists: cache.header().count,
                codec: cache.header().codec,
                bytes: header.file_len(),
            })
        }
        kind => Err(Error::invalid_argument(format!(
            "{} is a {} file of a store; verify the store directory that holds it",
            path.display(),
            kind.name()
        ))),
    }
}

/// What [`check_run_file`] compared a runtime file with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunFileCheck {
    /// The store whose identity matched (given, or found from the file's
    /// place in `STORE.runs/...`).
    pub store: Option<PathBuf>,
    /// Other runtime files of the same run directory that agreed.
    pub siblings: u64,
}

/// The store a runtime file belongs to by its place: the nearest ancestor
/// directory `D` named `*.runs` (the default run directory, `STORE.runs`)
/// whose sibling store directory `S` (`S.with_extension("runs") == D`,
/// holding a `MANIFEST`) exists.
pub fn store_of_run_file(path: &Path) -> Option<PathBuf> {
    let dir = path
        .ancestors()
        .skip(1)
        .find(|d| d.extension().is_some_and(|e| e == "runs"))?;
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let stem = dir.with_extension("");
    if stem.join("MANIFEST").is_file() {
        return Some(stem);
    }
    // `with_extension("runs")` replaced an extension of the store's name.
    let entries = std::fs::read_dir(&parent).ok()?;
    entries
        .flatten()
        .map(|e| e.path())
        .find(|s| s.with_extension("runs") == dir && s.join("MANIFEST").is_file())
}

/// Ties a verified runtime file to its store and run: the file's stamp
/// (`stamp`) must name `store` (or, when None, the store found by
/// [`store_of_run_file`], if any), its name `sb-NNNNNN.*` the superbatch it
/// records, and every other runtime file in its directory the same run
/// (store, seed, epoch, seed order, parameters; the other file of the same
/// superbatch the same stamp). Errors name both files or the store and each
/// field that differs.
pub fn check_run_file(path: &Path, stamp: &RunStamp, store: Option<&Path>) -> Result<RunFileCheck> {
    let mut check = RunFileCheck::default();
    let store_dir = store
        .map(Path::to_path_buf)
        .or_else(|| store_of_run_file(path));
    if let Some(dir) = store_dir {
        let s = crate::store::Store::open(&dir)?;
        let id = crate::sample::neighbor_cache::store_identity(&s);
        if stamp.store_id != id {
            return Err(Error::invalid_argument(format!(
                "{}: runtime file of another store, refused: it records store {:#010x}, {} is {id:#010x}",
                path.display(),
                stamp.store_id,
                dir.display()
            )));
        }
        check.store = Some(dir);
    }
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if let Some(index) = superbatch_of_name(name) {
        if index != stamp.superbatch {
            return Err(Error::invalid_argument(format!(
                "{}: the file is named for superbatch {index} but records superbatch {} (renamed or copied from elsewhere)",
                path.display(),
                stamp.superbatch
            )));
        }
    }
    let Some(dir) = path.parent() else {
        return Ok(check);
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(check);
    };
    let mut others: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .and_then(superbatch_of_name)
                .is_some()
                && p.file_name() != path.file_name()
        })
        .collect();
    others.sort();
    for other in others {
        let kind = if other.extension().is_some_and(|e| e == "samples") {
            FileKind::RunSamples
        } else {
            FileKind::RunChanges
        };
        // Another run's file that is being deleted, or a damaged one, is
        // not this file's fault: only stamps that can be read are compared.
        let Ok(reader) = RunReader::open(&other, kind) else {
            continue;
        };
        let theirs = reader.stamp();
        let same_superbatch = other.file_stem() == path.file_stem();
        let mut ours = stamp.clone();
        if !same_superbatch {
            // Fields a superbatch has of its own.
            ours.superbatch = theirs.superbatch;
            ours.first_batch = theirs.first_batch;
            ours.num_batches = theirs.num_batches;
        }
        let diff = ours.differences_as(theirs, "the other file", "this file");
        if !diff.is_empty() {
            return Err(Error::invalid_argument(format!(
                "{}: runtime file of another run than {} beside it, refused ({})",
                path.display(),
                other.display(),
                diff.join("; ")
            )));
        }
        check.siblings += 1;
    }
    Ok(check)
}

/// `N` of a runtime file named `sb-N.samples` or `sb-N.changes`.
fn superbatch_of_name(name: &str) -> Option<u64> {
    let rest = name.strip_prefix("sb-")?;
    let digits = rest
        .strip_suffix(".samples")
        .or_else(|| rest.strip_suffix(".changes"))?;
    digits.parse().ok()
}
