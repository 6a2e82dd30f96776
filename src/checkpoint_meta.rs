//! The trainer's checkpoint metadata (`CHECKPOINT_DIR/epoch-NNNNN.json`
//! and the `LATEST` pointer), read and validated without tch: the `train`
//! feature writes and uses it (`train::checkpoint`), and the fuzz crate targets
//! this parser without libtorch (`fuzz/fuzz_targets/checkpoint_meta.rs`).
//!
//! The document is a JSON object (`train::checkpoint::checkpoint_meta` writes it);
//! this module checks what every reader relies on: a bounded size, valid
//! JSON, an object, an `epoch` number, progress fields of the right types
//! and a best epoch not after the checkpoint's own epoch. The configuration
//! keys are compared with the run's by the trainer (`MUST_MATCH`).
//!
//! [`Progress`] is serialized by serde (the trainer flattens it into the
//! document it writes) but read here key by key: a damaged document is
//! refused with a message naming the key, what it holds and what was
//! expected, which serde's messages do not say.

#![deny(clippy::unwrap_used, clippy::indexing_slicing)]

use std::io::Read;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, Result};

/// Largest metadata document read (a checkpoint's is about 1 KiB; a
/// corrupt or hostile file must not be read whole into memory).
pub const MAX_META_BYTES: u64 = 1 << 20;
/// Largest `LATEST` file read (it holds one checkpoint name).
pub const MAX_LATEST_BYTES: u64 = 4096;

/// Where a run stands after an epoch: what the checkpoint metadata records
/// beyond the configuration, so a resumed run continues its selection.
/// Serialized with the document's key names (`best_valid_acc`,
/// `best_test_acc`); read back by [`parse_value`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Progress {
    /// Epoch with the best validation accuracy so far.
    pub best_epoch: Option<u64>,
    /// That accuracy.
    #[serde(rename = "best_valid_acc")]
    pub best_valid: Option<f64>,
    /// Test accuracy at that epoch.
    #[serde(rename = "best_test_acc")]
    pub best_test: Option<f64>,
    /// Evaluations since the best (early stopping).
    pub evals_since_best: u64,
    /// The run trained all its epochs.
    pub complete: bool,
    /// The run stopped early.
    pub stopped_early: bool,
}

/// A parsed, validated metadata document.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointMeta {
    /// The epoch the checkpoint was saved after.
    pub epoch: u64,
    /// The run's progress.
    pub progress: Progress,
    /// The decoder of a link-prediction checkpoint (`"task": "link"`,
    /// `"decoder": NAME`); None for node classification (no `task` key, as
    /// in every checkpoint written before link prediction).
    pub link_decoder: Option<String>,
    /// The whole document (configuration keys included).
    pub value: Value,
}

/// Parses the metadata document `bytes` read from `path` (for errors).
pub fn parse_meta(bytes: &[u8], path: &Path) -> Result<CheckpointMeta> {
    if bytes.len() as u64 > MAX_META_BYTES {
        return Err(Error::corrupt(
            path,
            MAX_META_BYTES,
            format!(
                "checkpoint metadata is over the {MAX_META_BYTES}-byte limit (MAX_META_BYTES); not a checkpoint's metadata"
            ),
        ));
    }
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|e| Error::corrupt(path, 0, format!("not valid JSON: {e}")))?;
    parse_value(value, path)
}

/// Validates a metadata document already parsed as JSON.
pub fn parse_value(value: Value, path: &Path) -> Result<CheckpointMeta> {
    let obj = value.as_object().ok_or_else(|| {
        Error::corrupt(
            path,
            0,
            "checkpoint metadata is not a JSON object".to_string(),
        )
    })?;
    let bad = |key: &str, want: &str| {
        Error::corrupt(
            path,
            0,
            format!(
                "checkpoint metadata: {key:?} is {}, not {want}",
                obj.get(key).map_or("missing".to_string(), Value::to_string)
            ),
        )
    };
    let epoch = obj
        .get("epoch")
        .and_then(Value::as_u64)
        .ok_or_else(|| bad("epoch", "an epoch number (no epoch number)"))?;
    // Optional values: missing or null is None, anything else must be
    // of the type asked for.
    let present = |key: &str| obj.get(key).filter(|v| !v.is_null());
    let opt_u64 = |key: &str| {
        present(key)
            .map(|v| {
                v.as_u64()
                    .ok_or_else(|| bad(key, "an epoch number or null"))
            })
            .transpose()
    };
    let opt_f64 = |key: &str| {
        present(key)
            .map(|v| v.as_f64().ok_or_else(|| bad(key, "a number or null")))
            .transpose()
    };
    let flag = |key: &str| match obj.get(key) {
        None => Ok(false),
        Some(v) => v.as_bool().ok_or_else(|| bad(key, "true or false")),
    };
    let progress = Progress {
        best_epoch: opt_u64("best_epoch")?,
        best_valid: opt_f64("best_valid_acc")?,
        best_test: opt_f64("best_test_acc")?,
        evals_since_best: opt_u64("evals_since_best")?.unwrap_or(0),
        complete: flag("complete")?,
        stopped_early: flag("stopped_early")?,
    };
    let link_decoder = match present("task").map(Value::as_str) {
        None | Some(Some("node")) => None,
        Some(Some("link")) => Some(
            present("decoder")
                .and_then(Value::as_str)
                .filter(|d| !d.is_empty() && d.len() <= 64)
                .ok_or_else(|| bad("decoder", "a decoder's name (a link task has one)"))?
                .to_string(),
        ),
        Some(_) => return Err(bad("task", "\"node\", \"link\" or null")),
    };
    if let Some(best) = progress.best_epoch {
        if best > epoch {
            return Err(Error::corrupt(
                path,
                0,
                format!(
                    "checkpoint metadata: best epoch {best} is after the checkpoint's own epoch {epoch}"
                ),
            ));
        }
    }
    Ok(CheckpointMeta {
        epoch,
        progress,
        link_decoder,
        value,
    })
}

/// Reads and parses the metadata file `path` (at most
/// [`MAX_META_BYTES`] + 1 bytes are read).
pub fn read_meta_file(path: &Path) -> Result<CheckpointMeta> {
    parse_meta(&read_bounded(path, MAX_META_BYTES)?, path)
}

/// The checkpoint name (`epoch-NNNNN`) held by a `LATEST` file's `text`.
pub fn parse_latest(text: &[u8], path: &Path) -> Result<String> {
    let name = std::str::from_utf8(text)
        .map_err(|_| Error::corrupt(path, 0, "LATEST is not UTF-8 text".to_string()))?
        .trim();
    let digits = name.strip_prefix("epoch-").unwrap_or("");
    if text.len() as u64 > MAX_LATEST_BYTES
        || digits.is_empty()
        || !digits.bytes().all(|b| b.is_ascii_digit())
    {
        let shown: String = name.chars().take(64).collect();
        return Err(Error::corrupt(
            path,
            0,
            format!("{shown:?} is not a checkpoint name (epoch-NNNNN)"),
        ));
    }
    Ok(name.to_string())
}

/// Reads the `LATEST` file `path`; `None` when it does not exist.
pub fn read_latest_file(path: &Path) -> Result<Option<String>> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io("read", path, e)),
        Ok(_) => {}
    }
    parse_latest(&read_bounded(path, MAX_LATEST_BYTES)?, path).map(Some)
}

/// Reads at most `limit + 1` bytes of `path` (one more than allowed, so
/// the parser reports the file as too long).
fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>> {
    let file = std::fs::File::open(path).map_err(|e| Error::io("read", path, e))?;
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io("read", path, e))?;
    Ok(bytes)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    const META: &str = r#"{"format": 2, "epoch": 4, "model": "sage", "best_epoch": 3,
        "best_valid_acc": 0.5, "best_test_acc": null, "evals_since_best": 1,
        "complete": false, "stopped_early": false}"#;

    #[test]
    fn a_checkpoints_metadata_parses() {
        let m = parse_meta(META.as_bytes(), Path::new("epoch-00004.json")).unwrap();
        assert_eq!(m.epoch, 4);
        assert_eq!(m.progress.best_epoch, Some(3));
        assert_eq!(m.progress.best_valid, Some(0.5));
        assert_eq!(m.progress.best_test, None);
        assert_eq!(m.value["model"], "sage");
        assert_eq!(m.link_decoder, None);
    }

    #[test]
    fn a_link_checkpoint_names_its_decoder() {
        let path = Path::new("epoch-00001.json");
        let m = parse_meta(br#"{"epoch": 1, "task": "link", "decoder": "dot"}"#, path).unwrap();
        assert_eq!(m.link_decoder.as_deref(), Some("dot"));
        let node = parse_meta(br#"{"epoch": 1, "task": "node"}"#, path).unwrap();
        assert_eq!(node.link_decoder, None);
        for (doc, want) in [
            (
                &br#"{"epoch": 1, "task": "link"}"#[..],
                "\"decoder\" is missing",
            ),
            (
                br#"{"epoch": 1, "task": "link", "decoder": 3}"#,
                "\"decoder\" is 3",
            ),
            (br#"{"epoch": 1, "task": 7}"#, "\"task\" is 7"),
            (br#"{"epoch": 1, "task": "graph"}"#, "\"task\" is \"graph\""),
        ] {
            let err = parse_meta(doc, path).unwrap_err().to_string();
            assert!(err.contains(want), "{err}");
        }
    }

    #[test]
    fn progress_round_trips_through_the_document() {
        let path = Path::new("epoch-00009.json");
        for progress in [
            Progress::default(),
            Progress {
                best_epoch: Some(7),
                best_valid: Some(0.625),
                best_test: None,
                evals_since_best: 2,
                complete: true,
                stopped_early: true,
            },
        ] {
            let mut doc = serde_json::to_value(progress).unwrap();
            doc["epoch"] = 9.into();
            let text = serde_json::to_vec_pretty(&doc).unwrap();
            let m = parse_meta(&text, path).unwrap();
            assert_eq!((m.epoch, m.progress), (9, progress));
        }
        let keys: Vec<String> = serde_json::to_value(Progress::default())
            .unwrap()
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(
            keys,
            [
                "best_epoch",
                "best_test_acc",
                "best_valid_acc",
                "complete",
                "evals_since_best",
                "stopped_early"
            ]
        );
    }

    #[test]
    fn an_old_document_without_progress_reads_with_defaults() {
        // Written before the progress keys: the epoch and the configuration.
        let old = br#"{"epoch": 3, "model": "sage", "hidden": 16, "layers": 2}"#;
        let m = parse_meta(old, Path::new("epoch-00003.json")).unwrap();
        assert_eq!((m.epoch, m.progress), (3, Progress::default()));
    }

    #[test]
    fn damaged_metadata_is_named() {
        for (doc, want) in [
            ("[1, 2]", "not a JSON object"),
            ("{\"epoch\": -1}", "\"epoch\" is -1, not an epoch number"),
            ("{}", "\"epoch\" is missing"),
            (
                "{\"epoch\": 1, \"best_epoch\": \"x\"}",
                "\"best_epoch\" is \"x\"",
            ),
            (
                "{\"epoch\": 1, \"complete\": 1}",
                "\"complete\" is 1, not true or false",
            ),
            ("{\"epoch\": 1, \"best_epoch\": 2}", "best epoch 2 is after"),
            ("{\"epoch\": 1", "not valid JSON"),
        ] {
            let err = parse_meta(doc.as_bytes(), Path::new("m.json"))
                .unwrap_err()
                .to_string();
            assert!(err.contains("m.json") && err.contains(want), "{doc}: {err}");
        }
        let huge = vec![b' '; MAX_META_BYTES as usize + 1];
        let err = parse_meta(&huge, Path::new("m.json"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("limit"), "{err}");
    }

    #[test]
    fn latest_names_a_checkpoint() {
        let p = Path::new("LATEST");
        assert_eq!(parse_latest(b"epoch-00012\n", p).unwrap(), "epoch-00012");
        for bad in [
            &b"epoch-"[..],
            b"../x",
            b"epoch-1/2",
            b"\xff",
            b"epoch-00001x",
        ] {
            assert!(parse_latest(bad, p).is_err(), "{bad:?}");
        }
    }
}
