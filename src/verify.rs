//! Verification of any file ginex writes, by its header's kind: a store
//! directory through [`Store::verify`](crate::store::Store::verify), a
//! runtime file record by record, a neighbor cache list by list.

use std::path::Path;

use crate::error::{Error, Result};
use crate::format::header::{FileHeader, FileKind, HEADER_SIZE};
use crate::format::neighbor_cache::Codec;
use crate::io::read::{open, read_exact_at};
use crate::sample::neighbor_cache::NeighborCache;
use crate::sample::source::ListCache;

/// What [`verify_file`] checked in a file that is not part of a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileReport {
    /// A runtime file (samples or changes): every record's CRC and framing.
    Runtime {
        /// Which runtime file.
        kind: FileKind,
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
            let records = crate::inspect::runfile::read_all(path, header.kind)?;
            Ok(FileReport::Runtime {
                kind: header.kind,
                records: records.len() as u64,
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
