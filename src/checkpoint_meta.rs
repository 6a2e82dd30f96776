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
//! document it writes) and the keys this module checks are read back by
//! serde too, through `serde_path_to_error`: a damaged document is refused
//! with a message naming the key that failed, what it holds and what was
//! expected.

#![deny(clippy::unwrap_used, clippy::indexing_slicing)]

use std::io::Read;
use std::path::Path;

use serde::{Deserialize, Serialize};
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
    /// The weights file it describes (checkpoint format 3; `None` in a
    /// document written before, whose weights cannot be verified).
    pub weights: Option<WeightsRecord>,
    /// The run's identity ([`run_identity`]; `None` before format 3).
    pub identity: Option<u32>,
    /// The decoder of a link-prediction checkpoint (`"task": "link"`,
    /// `"decoder": NAME`); None for node classification (no `task` key, as
    /// in every checkpoint written before link prediction).
    pub link_decoder: Option<String>,
    /// The whole document (configuration keys included).
    pub value: Value,
}

/// What a checkpoint's metadata records of its weights file (the
/// document's `weights` object): the file, its length and its CRC-32, so a
/// flipped bit or the `.ot` of another epoch or run is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WeightsRecord {
    /// Bytes of the `.ot` file.
    pub bytes: u64,
    /// CRC-32 (IEEE) of the whole `.ot` file.
    pub crc32: u32,
}

/// The keys that make a run's identity: the store it trains on and the
/// model it trains (its shape, seed and initialisation). A key absent from
/// a document is left out. `task` and `decoder` are the link-prediction
/// keys, absent from node-classification runs; `options` an architecture's
/// own options, absent for an architecture without any.
pub const IDENTITY_KEYS: [&str; 16] = [
    "store_manifest_crc",
    "store_nodes",
    "model",
    "hidden",
    "layers",
    "embed",
    "num_bases",
    "heads",
    "out_heads",
    "in_dim",
    "classes",
    "seed",
    "init",
    "task",
    "decoder",
    "options",
];

/// The run identity of a metadata document: CRC-32 of `key=value\n` for
/// each of [`IDENTITY_KEYS`] the document holds (values as compact JSON).
/// Every checkpoint of one run has the same identity; the document
/// records it as `run_identity`.
pub fn run_identity(value: &Value) -> u32 {
    let mut h = crc32fast::Hasher::new();
    for key in IDENTITY_KEYS {
        if let Some(v) = value.get(key) {
            h.update(format!("{key}={v}\n").as_bytes());
        }
    }
    h.finalize()
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

/// The keys of a metadata document [`parse_value`] checks, as serde reads
/// them (missing or null optional values are None; the configuration keys
/// stay in [`CheckpointMeta::value`]).
#[derive(Deserialize)]
struct Checked {
    epoch: Option<u64>,
    best_epoch: Option<u64>,
    best_valid_acc: Option<f64>,
    best_test_acc: Option<f64>,
    evals_since_best: Option<u64>,
    #[serde(default)]
    complete: bool,
    #[serde(default)]
    stopped_early: bool,
    task: Option<Task>,
    /// Checked only for a link task (a node checkpoint's is ignored).
    decoder: Option<Value>,
    weights: Option<WeightsRecord>,
    run_identity: Option<u32>,
}

/// A checkpoint's `task`.
#[derive(Deserialize, PartialEq)]
#[serde(rename_all = "lowercase")]
enum Task {
    Node,
    Link,
}

/// What each key [`Checked`] reads must hold, as the refusal says it.
const EXPECTED: [(&str, &str); 11] = [
    ("epoch", "an epoch number (no epoch number)"),
    ("best_epoch", "an epoch number or null"),
    ("best_valid_acc", "a number or null"),
    ("best_test_acc", "a number or null"),
    ("evals_since_best", "an epoch number or null"),
    ("complete", "true or false"),
    ("stopped_early", "true or false"),
    ("task", "\"node\", \"link\" or null"),
    ("decoder", "a decoder's name (a link task has one)"),
    (
        "weights",
        "an object {\"bytes\": N, \"crc32\": CRC} (the .ot file's length and CRC-32)",
    ),
    ("run_identity", "a CRC-32 (a number below 2^32)"),
];

/// Validates a metadata document already parsed as JSON.
pub fn parse_value(value: Value, path: &Path) -> Result<CheckpointMeta> {
    let obj = value.as_object().ok_or_else(|| {
        Error::corrupt(
            path,
            0,
            "checkpoint metadata is not a JSON object".to_string(),
        )
    })?;
    let bad = |key: &str| {
        let want = EXPECTED
            .iter()
            .find(|(k, _)| *k == key)
            .map_or("valid", |(_, w)| w);
        Error::corrupt(
            path,
            0,
            format!(
                "checkpoint metadata: {key:?} is {}, not {want}",
                obj.get(key).map_or("missing".to_string(), Value::to_string)
            ),
        )
    };
    let c: Checked =
        serde_path_to_error::deserialize(&value).map_err(|e| match e.path().iter().next() {
            Some(serde_path_to_error::Segment::Map { key }) => bad(key),
            _ => Error::corrupt(path, 0, format!("checkpoint metadata: {}", e.inner())),
        })?;
    let epoch = c.epoch.ok_or_else(|| bad("epoch"))?;
    let progress = Progress {
        best_epoch: c.best_epoch,
        best_valid: c.best_valid_acc,
        best_test: c.best_test_acc,
        evals_since_best: c.evals_since_best.unwrap_or(0),
        complete: c.complete,
        stopped_early: c.stopped_early,
    };
    let link_decoder = match c.task {
        None | Some(Task::Node) => None,
        Some(Task::Link) => Some(
            c.decoder
                .as_ref()
                .and_then(Value::as_str)
                .filter(|d| !d.is_empty() && d.len() <= 64)
                .ok_or_else(|| bad("decoder"))?
                .to_string(),
        ),
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
    if let Some(recorded) = c.run_identity {
        let computed = run_identity(&value);
        if recorded != computed {
            return Err(Error::corrupt(
                path,
                0,
                format!(
                    "checkpoint metadata: run_identity {recorded:08x} does not match its store and model keys ({computed:08x}): the document was edited or damaged"
                ),
            ));
        }
    }
    Ok(CheckpointMeta {
        epoch,
        progress,
        weights: c.weights,
        identity: c.run_identity,
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
