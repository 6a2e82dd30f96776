//! Verification of any file ginex writes, by its header's kind: a store
//! directory through [`Store::verify`](crate::store::Store::verify), a
//! runtime file record by record, a neighbor cache list by list; and a
//! training checkpoint (no common header: its metadata records its
//! weights' length and CRC), [`verify_dir`].

use std::path::{Path, PathBuf};

use crate::checkpoint_meta::{read_latest_file, read_meta_file, CheckpointMeta, WeightsRecord};
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

/// Length and CRC-32 of the file `path`, streamed.
pub fn weights_of_file(path: &Path) -> Result<WeightsRecord> {
    let file = open(path)?;
    let bytes = file
        .metadata()
        .map_err(|e| Error::io("stat", path, e))?
        .len();
    let crc32 = crate::io::read::stream_crc(&file, path, 0, bytes, |_, _| Ok(()))?;
    Ok(WeightsRecord { bytes, crc32 })
}

/// What [`verify_checkpoint`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifiedCheckpoint {
    /// The checkpoint's name (`epoch-NNNNN`).
    pub stem: String,
    /// Its metadata.
    pub meta: CheckpointMeta,
    /// Whether the weights were checked against a recorded CRC (false for a
    /// checkpoint saved before format 3: see [`NO_WEIGHTS_CRC`]).
    pub weights_checked: bool,
}

/// What is said of a checkpoint saved before its metadata recorded the
/// weights' CRC (format 3): accepted, its weights unverified.
pub const NO_WEIGHTS_CRC: &str = "its metadata carries no CRC of its weights (saved by a ginex before checkpoint format 3), so its .ot is not verified; every checkpoint saved from now on carries one (train one more epoch with --resume, or retrain, to have it verified)";

/// Verifies checkpoint `stem` of `dir`: its metadata parses, is the
/// metadata of that epoch, its run identity matches its keys, and its
/// `.ot` has the length and CRC-32 the metadata records. A damaged `.ot`,
/// or one of another epoch or run put in its place, is refused.
pub fn verify_checkpoint(dir: &Path, stem: &str) -> Result<VerifiedCheckpoint> {
    let json = dir.join(format!("{stem}.json"));
    let meta = read_meta_file(&json)?;
    let named: Option<u64> = stem.strip_prefix("epoch-").and_then(|d| d.parse().ok());
    if named != Some(meta.epoch) {
        return Err(Error::corrupt(
            &json,
            0,
            format!(
                "this is the metadata of epoch {}, not of {stem}: a checkpoint file of another epoch was put in its place",
                meta.epoch
            ),
        ));
    }
    let Some(want) = meta.weights else {
        return Ok(VerifiedCheckpoint {
            stem: stem.to_string(),
            meta,
            weights_checked: false,
        });
    };
    let ot = dir.join(format!("{stem}.ot"));
    let got = weights_of_file(&ot)?;
    if got != want {
        return Err(Error::corrupt(
            &ot,
            0,
            format!(
                "the weights do not match their metadata {}: it records {} bytes with CRC-32 {:08x}, the file has {} bytes with CRC-32 {:08x}; the file is damaged, or is the .ot of another epoch or run. Restore it from a backup, or start the run again (train without --resume, with --overwrite)",
                json.display(),
                want.bytes,
                want.crc32,
                got.bytes,
                got.crc32
            ),
        ));
    }
    Ok(VerifiedCheckpoint {
        stem: stem.to_string(),
        meta,
        weights_checked: true,
    })
}

/// Verifies a checkpoint directory as `train --resume` and `predict` use
/// it: the checkpoint `LATEST` names and, when the run recorded a best
/// epoch other than the latest, that one too ([`verify_checkpoint`]), and
/// that both are of one run (the same run identity). Latest first.
pub fn verify_dir(dir: &Path) -> Result<Vec<VerifiedCheckpoint>> {
    let latest_path = dir.join("LATEST");
    let stem = read_latest_file(&latest_path)?.ok_or_else(|| {
        Error::invalid_argument(format!(
            "{} holds no checkpoint (no LATEST file)",
            dir.display()
        ))
    })?;
    let latest = verify_checkpoint(dir, &stem)?;
    let (epoch, best, identity) = (
        latest.meta.epoch,
        latest.meta.progress.best_epoch,
        latest.meta.identity,
    );
    let mut out = vec![latest];
    if let Some(best) = best.filter(|&b| b != epoch) {
        let v = verify_checkpoint(dir, &format!("epoch-{best:05}"))?;
        if let (Some(a), Some(b)) = (identity, v.meta.identity) {
            if a != b {
                return Err(Error::corrupt(
                    dir.join(format!("{}.json", v.stem)),
                    0,
                    format!(
                        "the best checkpoint {} is of another run than the latest, {stem} (run identity {b:08x}, not {a:08x}): the directory mixes two runs' files",
                        v.stem
                    ),
                ));
            }
        }
        out.push(v);
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::checkpoint_meta::{parse_value, run_identity};
    use serde_json::Value;

    const META: &str = r#"{"format": 2, "epoch": 4, "model": "sage", "best_epoch": 3,
        "best_valid_acc": 0.5, "best_test_acc": null, "evals_since_best": 1,
        "complete": false, "stopped_early": false}"#;

    /// A checkpoint `epoch-{epoch:05}` in `dir` as `save_checkpoint` seals
    /// it: `weights` bytes as its `.ot`, their record and the run identity
    /// in its metadata (`extra` keys added before sealing).
    fn sealed(dir: &Path, epoch: u64, weights: &[u8], extra: Value) -> Value {
        let stem = format!("epoch-{epoch:05}");
        let ot = dir.join(format!("{stem}.ot"));
        std::fs::write(&ot, weights).unwrap();
        let mut doc = serde_json::json!({"format": 3, "epoch": epoch, "model": "sage",
            "hidden": 8, "layers": 2, "seed": 1, "store_manifest_crc": 7, "store_nodes": 40});
        for (k, v) in extra.as_object().unwrap() {
            doc[k] = v.clone();
        }
        doc["weights"] = serde_json::to_value(weights_of_file(&ot).unwrap()).unwrap();
        doc["run_identity"] = run_identity(&doc).into();
        std::fs::write(
            dir.join(format!("{stem}.json")),
            serde_json::to_vec(&doc).unwrap(),
        )
        .unwrap();
        doc
    }

    #[test]
    fn a_checkpoint_proves_its_weights_and_its_run() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        sealed(d, 1, &[1u8; 300], serde_json::json!({}));
        sealed(d, 2, &[2u8; 300], serde_json::json!({"best_epoch": 1}));
        std::fs::write(d.join("LATEST"), "epoch-00002").unwrap();
        let v = verify_dir(d).unwrap();
        assert_eq!(v.len(), 2, "the latest and the best");
        assert!(v.iter().all(|c| c.weights_checked));
        assert_eq!(
            (v[0].stem.as_str(), v[1].stem.as_str()),
            ("epoch-00002", "epoch-00001")
        );

        // A flipped bit in the latest weights.
        let ot = d.join("epoch-00002.ot");
        let mut bytes = std::fs::read(&ot).unwrap();
        bytes[150] ^= 0x10;
        std::fs::write(&ot, &bytes).unwrap();
        let err = verify_dir(d).unwrap_err().to_string();
        assert!(
            err.contains("epoch-00002.ot")
                && err.contains("the weights do not match their metadata"),
            "{err}"
        );
        // The .ot of another epoch (same length) put in its place.
        std::fs::copy(d.join("epoch-00001.ot"), &ot).unwrap();
        let err = verify_checkpoint(d, "epoch-00002").unwrap_err().to_string();
        assert!(err.contains("another epoch or run"), "{err}");
        bytes[150] ^= 0x10;
        std::fs::write(&ot, &bytes).unwrap();
        verify_dir(d).unwrap();

        // The .json of another epoch in its place.
        std::fs::copy(d.join("epoch-00001.json"), d.join("epoch-00002.json")).unwrap();
        let err = verify_checkpoint(d, "epoch-00002").unwrap_err().to_string();
        assert!(
            err.contains("metadata of epoch 1, not of epoch-00002"),
            "{err}"
        );

        // The best epoch of another run (another seed: another identity).
        sealed(d, 2, &bytes, serde_json::json!({"best_epoch": 1}));
        sealed(d, 1, &[1u8; 300], serde_json::json!({"seed": 9}));
        let err = verify_dir(d).unwrap_err().to_string();
        assert!(err.contains("of another run than the latest"), "{err}");
    }

    #[test]
    fn edited_identity_and_bad_weights_records_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut doc = sealed(dir.path(), 3, b"w", serde_json::json!({}));
        doc["hidden"] = 64.into();
        let err = parse_value(doc, Path::new("m.json"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("run_identity") && err.contains("edited"),
            "{err}"
        );
        for w in [
            serde_json::json!(5),
            serde_json::json!({"bytes": 1}),
            serde_json::json!({"bytes": 1, "crc32": 1u64 << 32}),
        ] {
            let doc = serde_json::json!({"epoch": 1, "weights": w});
            let err = parse_value(doc, Path::new("m.json"))
                .unwrap_err()
                .to_string();
            assert!(err.contains("\"weights\""), "{err}");
        }
    }

    #[test]
    fn a_checkpoint_without_a_weights_crc_is_accepted_unverified() {
        // Format 2 (before the weights record): accepted, said unverified.
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("epoch-00000.ot"), b"old weights").unwrap();
        std::fs::write(
            d.join("epoch-00000.json"),
            META.replace("\"epoch\": 4", "\"epoch\": 0")
                .replace("\"best_epoch\": 3", "\"best_epoch\": 0"),
        )
        .unwrap();
        std::fs::write(d.join("LATEST"), "epoch-00000\n").unwrap();
        let v = verify_dir(d).unwrap();
        assert_eq!(v.len(), 1);
        assert!(!v[0].weights_checked);
        assert_eq!(v[0].meta.weights, None);
        assert!(NO_WEIGHTS_CRC.contains("not verified"));
    }
}
