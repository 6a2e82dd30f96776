//! `ginex-dump --verify FILE`: the report line for a file that is not a
//! store (the checks are the library's `verify::verify_file`).

use std::path::Path;

use ginex::internals::error::Result;
use ginex::internals::verify::FileReport;

/// The line `ginex-dump --verify FILE` prints for a file that is not a store.
/// A runtime file is also tied to its store (`store`, or the one its place
/// `STORE.runs/...` names) and to the other runtime files of its run.
pub(super) fn verify_file(path: &Path, store: Option<&Path>) -> Result<String> {
    Ok(match ginex::internals::verify::verify_file(path)? {
        FileReport::Runtime {
            kind,
            stamp,
            records,
            bytes,
        } => {
            let check = ginex::internals::verify::check_run_file(path, &stamp, store)?;
            let store = match &check.store {
                Some(s) => format!("matches store {}", s.display()),
                None => "store not checked (pass --store STORE)".to_string(),
            };
            format!(
                "ok: {} verified: {} file, {records} records, {bytes} bytes; {}; {store}, agrees with {} other runtime file(s) beside it",
                path.display(),
                kind.name(),
                stamp.describe(),
                check.siblings
            )
        }
        FileReport::NeighborCache {
            lists,
            codec,
            bytes,
        } => {
            if store.is_some() {
                return Err(ginex::internals::error::Error::invalid_argument(
                    "--store is for runtime files; compare a neighbor cache with `ginex cache verify CACHE --store STORE`",
                ));
            }
            format!(
            "ok: {} verified: neighbor cache, {lists} lists ({}), {bytes} bytes; use `ginex cache verify CACHE --store STORE` to compare with its store",
            path.display(),
            codec.name(),
        )
        }
    })
}
