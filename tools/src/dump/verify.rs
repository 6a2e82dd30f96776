//! `ginex-dump --verify FILE`: the report line for a file that is not a
//! store (the checks are the library's `verify::verify_file`).

use std::path::Path;

use ginex::error::Result;
use ginex::verify::FileReport;

/// The line `ginex-dump --verify FILE` prints for a file that is not a store.
pub(super) fn verify_file(path: &Path) -> Result<String> {
    Ok(match ginex::verify::verify_file(path)? {
        FileReport::Runtime {
            kind,
            records,
            bytes,
        } => format!(
            "ok: {} verified: {} file, {records} records, {bytes} bytes",
            path.display(),
            kind.name(),
        ),
        FileReport::NeighborCache {
            lists,
            codec,
            bytes,
        } => format!(
            "ok: {} verified: neighbor cache, {lists} lists ({}), {bytes} bytes; use `ginex cache verify CACHE --store STORE` to compare with its store",
            path.display(),
            codec.name(),
        ),
    })
}
