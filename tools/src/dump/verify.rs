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

/// The line `ginex-dump --verify CK` prints for a checkpoint directory
/// (`ginex train --checkpoint CK`): the checkpoints `train --resume` and
/// `predict` load, verified as they verify them
/// (`verify::verify_dir`).
pub(super) fn verify_checkpoints(dir: &Path) -> Result<String> {
    use ginex::internals::verify::{verify_dir, NO_WEIGHTS_CRC};
    let verified = verify_dir(dir)?;
    let parts: Vec<String> = verified
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let role = if i == 0 { "latest" } else { "best" };
            let role = match v.meta.progress.best_epoch {
                Some(b) if i == 0 && b == v.meta.epoch => "latest and best",
                _ => role,
            };
            match (v.weights_checked, v.meta.weights) {
                (true, Some(w)) => format!(
                    "{} ({role}): weights {} bytes, CRC-32 {:08x} match its metadata",
                    v.stem, w.bytes, w.crc32
                ),
                _ => format!("{} ({role}): metadata valid; {NO_WEIGHTS_CRC}", v.stem),
            }
        })
        .collect();
    Ok(format!(
        "ok: {} verified: {} checkpoint(s) of one run; {}",
        dir.display(),
        verified.len(),
        parts.join("; ")
    ))
}
