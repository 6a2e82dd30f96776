//! Checkpoints: a checkpoint directory holds one run. `LATEST` names the
//! newest `epoch-NNNNN` (`.ot` model + optimizer, `.json` metadata), and
//! that metadata names the best epoch by validation accuracy, whose files
//! are kept too (every other epoch's files are removed once `LATEST` moved
//! on). Every file is written atomically; a resumed run continues exactly.
//! `predict` uses the best epoch (the latest when nothing was evaluated).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::checkpoint_meta::{run_identity, CheckpointMeta, Progress, WeightsRecord};
use crate::error::{Error, Result};
use crate::io::durable::{atomic_temporary_owner, write_atomic};
use crate::sample::neighbor_cache::store_identity;
use crate::store::Store;
use crate::train::decoder::{DecoderKind, Task};
use crate::train::model::{InitKind, ModelKind, ModelSpec};
use crate::train::options::{LrSchedule, TrainOptions};
use crate::train::trainer::{EmbedTable, TrainConfig, Trainer};
use crate::verify::{verify_checkpoint, verify_dir, weights_of_file, NO_WEIGHTS_CRC};

/// Version of the metadata document ([`CheckpointDoc::format`]). 3: the
/// document records its weights' length and CRC-32 (`weights`) and the
/// run's identity (`run_identity`), added by [`save_checkpoint`].
const META_FORMAT: u32 = 3;

/// The checkpoint's metadata document (`epoch-NNNNN.json`): the
/// configuration (what must match to resume, and what `predict` rebuilds
/// the model from) and the progress. Written only; readers validate it
/// with [`crate::checkpoint_meta::parse_meta`] and compare keys.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct CheckpointDoc<'a> {
    /// [`META_FORMAT`].
    pub format: u32,
    /// The epoch the checkpoint was saved after.
    pub epoch: u64,
    /// Epochs the run trains in total.
    pub epochs: u64,
    /// [`ModelKind::name`].
    pub model: &'static str,
    /// [`Task::name`] of a link-prediction run (absent for node
    /// classification, as before link prediction existed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<&'static str>,
    /// [`DecoderKind::name`] of a link-prediction run (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decoder: Option<&'static str>,
    /// Hidden width.
    pub hidden: i64,
    /// Node types with a learnable embedding (absent when none, as
    /// before embeddings existed).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub embed: Vec<&'a str>,
    /// R-GCN's bases (absent when 0, a full weight per relation, as
    /// before basis decomposition existed).
    #[serde(skip_serializing_if = "is_zero")]
    pub num_bases: usize,
    /// The architecture's own options, every key ([`ModelSpec::options`];
    /// absent for an architecture without options, as every one before
    /// GIN).
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub options: Map<String, Value>,
    /// Layers (hops).
    pub layers: usize,
    /// Dropout between layers.
    pub dropout: f64,
    /// Dropout on the input features.
    pub input_dropout: f64,
    /// Base learning rate.
    pub lr: f64,
    /// Learning-rate schedule.
    pub lr_schedule: LrSchedule,
    /// Weight decay.
    pub weight_decay: f64,
    /// The optimizer's name.
    pub optimizer: &'static str,
    /// The weight initialisation's name.
    pub init: &'static str,
    /// GAT attention heads of the hidden layers.
    pub heads: i64,
    /// GAT attention heads of the output layer.
    pub out_heads: i64,
    /// GAT attention dropout.
    pub attn_dropout: f64,
    /// The run's seed.
    pub seed: u64,
    /// Input feature width.
    pub in_dim: i64,
    /// Classes.
    pub classes: i64,
    /// [`store_identity`] of the store trained on.
    pub store_manifest_crc: u32,
    /// Nodes of that store.
    pub store_nodes: u64,
    /// Seeds per batch.
    pub batch_size: usize,
    /// Training fanouts (a list of counts, or per-relation text).
    pub fanouts: &'a crate::sample::fanouts::Fanouts,
    /// Evaluation fanouts (the training ones unless given).
    pub eval_fanouts: &'a crate::sample::fanouts::Fanouts,
    /// Evaluate every this many epochs.
    pub eval_every: u64,
    /// Evaluations without improvement before stopping.
    pub early_stop: Option<u64>,
    /// Where the run stands (its keys at the document's top level).
    #[serde(flatten)]
    pub progress: Progress,
}

impl<'a> CheckpointDoc<'a> {
    /// The document of `opts` on `store` after `epoch`.
    fn new(
        store: &Store,
        opts: &'a TrainOptions,
        (in_dim, classes): (i64, i64),
        epoch: u64,
        progress: &Progress,
    ) -> Result<Self> {
        let m = &opts.model;
        Ok(CheckpointDoc {
            format: META_FORMAT,
            epoch,
            epochs: opts.epochs,
            model: m.model.name(),
            task: (m.task != Task::Node).then(|| m.task.name()),
            decoder: m.task.decoder().map(DecoderKind::name),
            hidden: m.hidden,
            embed: m.embed.iter().map(|e| e.name.as_str()).collect(),
            num_bases: m.num_bases,
            options: m.model_spec()?.options(),
            layers: m.layers,
            dropout: m.dropout,
            input_dropout: m.input_dropout,
            lr: m.lr,
            lr_schedule: opts.lr_schedule,
            weight_decay: m.weight_decay,
            optimizer: m.optimizer.name(),
            init: m.init_kind().name(),
            heads: m.heads,
            out_heads: m.out_heads,
            attn_dropout: m.attn_dropout,
            seed: m.seed,
            in_dim,
            classes,
            store_manifest_crc: store_identity(store),
            store_nodes: store.num_nodes(),
            batch_size: opts.data.batch_size,
            fanouts: &opts.data.fanouts,
            eval_fanouts: opts.eval_fanouts.as_ref().unwrap_or(&opts.data.fanouts),
            eval_every: opts.eval_every,
            early_stop: opts.early_stop,
            progress: *progress,
        })
    }

    /// The document as JSON (its keys compared by [`load_stem`]).
    fn to_json(&self) -> Value {
        // Numbers, strings, options and lists: serializing cannot fail (a
        // non-finite rate is written as null, as `json!` did).
        serde_json::to_value(self).unwrap_or_default()
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The checkpoint's metadata as JSON: [`CheckpointDoc`].
pub(crate) fn checkpoint_meta(
    store: &Store,
    opts: &TrainOptions,
    in_dim: i64,
    classes: i64,
    epoch: u64,
    progress: &Progress,
) -> Result<Value> {
    CheckpointDoc::new(store, opts, (in_dim, classes), epoch, progress).map(|d| d.to_json())
}

/// Keys that shape the model: `predict` takes them from the checkpoint.
pub(crate) const MODEL_KEYS: [&str; 12] = [
    "model",
    "options",
    "task",
    "decoder",
    "hidden",
    "embed",
    "num_bases",
    "layers",
    "heads",
    "out_heads",
    "in_dim",
    "classes",
];

/// Keys that tie a checkpoint to its store.
pub(crate) const STORE_KEYS: [&str; 2] = ["store_manifest_crc", "store_nodes"];

/// Keys a resumed run must replay identically, beside the model's and the
/// store's.
pub(crate) const REPLAY_KEYS: [&str; 8] = [
    "seed",
    "init",
    "dropout",
    "input_dropout",
    "attn_dropout",
    "weight_decay",
    "optimizer",
    "lr",
];

/// [`write_atomic`] for a checkpoint file, with the crash-test hook
/// between writing the temporary file and renaming it.
fn write_checkpoint_file(
    dir: &Path,
    name: &str,
    write: impl FnOnce(&Path) -> Result<()>,
) -> Result<()> {
    write_atomic(dir, name, |p| {
        write(p)?;
        test_hook_sleep();
        Ok(())
    })
}

/// Test hook: `GINEX_TEST_CHECKPOINT_SLEEP_MS` sleeps inside every
/// checkpoint file write (after the temporary file is written, before it is
/// renamed), so a crash test can kill the process mid-write.
fn test_hook_sleep() {
    if let Some(ms) = std::env::var("GINEX_TEST_CHECKPOINT_SLEEP_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        std::thread::sleep(Duration::from_millis(ms));
    }
}

fn stem_of(epoch: u64) -> String {
    format!("epoch-{epoch:05}")
}

/// Saves model + optimizer + metadata for `epoch`, points `LATEST` at it,
/// then removes the files of epochs that are neither the latest nor the
/// best.
pub(crate) fn save_checkpoint(
    dir: &Path,
    trainer: &Trainer,
    meta: &Value,
    epoch: u64,
    best: Option<u64>,
) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io("create directory", dir, e))?;
    let stem = stem_of(epoch);
    let mut weights = None;
    write_checkpoint_file(dir, &format!("{stem}.ot"), |p| {
        trainer.save(p)?;
        weights = Some(weights_of_file(p)?);
        Ok(())
    })?;
    let meta = sealed_meta(meta, weights)?;
    write_checkpoint_file(dir, &format!("{stem}.json"), |p| {
        std::fs::write(p, serde_json::to_vec_pretty(&meta).unwrap_or_default())
            .map_err(|e| Error::io("write", p, e))
    })?;
    write_checkpoint_file(dir, "LATEST", |p| {
        std::fs::write(p, stem.as_bytes()).map_err(|e| Error::io("write", p, e))
    })?;
    let keep = [Some(stem), best.map(stem_of)];
    for (file, file_stem) in checkpoint_files(dir)? {
        if !keep.iter().flatten().any(|k| *k == file_stem) {
            std::fs::remove_file(&file).map_err(|e| Error::io("remove", &file, e))?;
        }
    }
    Ok(())
}

/// `meta` with what ties it to its weights and its run: `weights` (the
/// `.ot` file's length and CRC-32) and `run_identity`
/// ([`crate::checkpoint_meta::run_identity`]), both checked by
/// [`crate::verify::verify_checkpoint`].
fn sealed_meta(meta: &Value, weights: Option<WeightsRecord>) -> Result<Value> {
    let weights = weights.ok_or_else(|| Error::internal("checkpoint weights not written"))?;
    let mut meta = meta.clone();
    let identity = run_identity(&meta);
    let obj = meta
        .as_object_mut()
        .ok_or_else(|| Error::internal("checkpoint metadata is not an object"))?;
    obj.insert(
        "weights".into(),
        serde_json::to_value(weights).unwrap_or_default(),
    );
    obj.insert("run_identity".into(), identity.into());
    Ok(meta)
}

/// The `epoch-*.ot` / `epoch-*.json` files of `dir` with their stems.
fn checkpoint_files(dir: &Path) -> Result<Vec<(PathBuf, String)>> {
    let mut out = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(Error::io("read directory", dir, e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| Error::io("read directory", dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(stem) = name
            .strip_suffix(".ot")
            .or_else(|| name.strip_suffix(".json"))
        {
            if stem.starts_with("epoch-") {
                out.push((entry.path(), stem.to_string()));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Removes the temporary checkpoint files [`write_atomic`] names
/// (`.NAME.tmp-PID-NANOS-N`, NAME one of `LATEST`, `epoch-*.ot`,
/// `epoch-*.json`) of processes that are no longer alive: what a run of
/// this checkpoint series killed mid-write left. Matches only that exact
/// form ([`atomic_temporary_owner`]), so no other file is removed.
pub(crate) fn remove_stale_temporaries(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let checkpoint_name = |n: &str| {
        n == "LATEST" || (n.starts_with("epoch-") && (n.ends_with(".ot") || n.ends_with(".json")))
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = atomic_temporary_owner(&name, checkpoint_name) else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Reads the metadata of `stem` in `dir` (validated by
/// [`crate::checkpoint_meta::parse_meta`]).
fn read_meta(dir: &Path, stem: &str) -> Result<CheckpointMeta> {
    crate::checkpoint_meta::read_meta_file(&dir.join(format!("{stem}.json")))
}

/// The stem `LATEST` names, or `None` when `dir` holds no `LATEST`.
pub(crate) fn latest_stem(dir: &Path) -> Result<Option<String>> {
    crate::checkpoint_meta::read_latest_file(&dir.join("LATEST"))
}

/// The metadata of the latest checkpoint in `dir`.
pub fn latest_meta(dir: &Path) -> Result<Value> {
    latest_checkpoint(dir).map(|m| m.value)
}

/// The validated metadata of the latest checkpoint in `dir`.
fn latest_checkpoint(dir: &Path) -> Result<CheckpointMeta> {
    let stem = latest_stem(dir)?.ok_or_else(|| {
        Error::invalid_argument(format!(
            "{} holds no checkpoint (no LATEST file)",
            dir.display()
        ))
    })?;
    read_meta(dir, &stem)
}

/// Loads checkpoint `stem` into `trainer` after checking its metadata
/// against `expected` on `keys` (every mismatch reported at once).
pub(crate) fn load_stem(
    dir: &Path,
    stem: &str,
    trainer: &mut Trainer,
    expected: &Value,
    keys: &[&str],
) -> Result<CheckpointMeta> {
    // The metadata is that epoch's and the weights are those it records.
    let verified = verify_checkpoint(dir, stem)?;
    if !verified.weights_checked {
        tracing::warn!(
            "checkpoint {}: {NO_WEIGHTS_CRC}",
            dir.join(format!("{stem}.ot")).display()
        );
    }
    let meta = verified.meta;
    let found = &meta.value;
    let mismatches: Vec<String> = keys
        .iter()
        .filter(|k| found[**k] != expected[**k])
        .map(|k| format!("{k} is {} there and {} here", found[*k], expected[*k]))
        .collect();
    if !mismatches.is_empty() {
        return Err(Error::invalid_argument(format!(
            "checkpoint {} does not match this run: {}",
            dir.join(format!("{stem}.json")).display(),
            mismatches.join("; ")
        )));
    }
    trainer.load(&dir.join(format!("{stem}.ot")))?;
    Ok(meta)
}

/// Before a fresh (not resumed) run: refuses a directory holding another
/// run's checkpoints unless `overwrite`, which removes them.
pub(crate) fn prepare_fresh_dir(dir: &Path, overwrite: bool) -> Result<()> {
    let files = checkpoint_files(dir)?;
    let latest = dir.join("LATEST");
    if files.is_empty() && !latest.exists() {
        return Ok(());
    }
    if !overwrite {
        let what = match latest_checkpoint(dir) {
            Ok(m) => format!(
                "a {} run at epoch {} of {}{}",
                m.value["model"].as_str().unwrap_or("?"),
                m.epoch,
                m.value["epochs"],
                if m.progress.complete {
                    ", complete"
                } else {
                    ""
                }
            ),
            Err(_) => format!("{} checkpoint files", files.len()),
        };
        return Err(Error::invalid_argument(format!(
            "{} already holds checkpoints of another run ({what}): pass --resume to continue it, --overwrite to replace it, or choose another --checkpoint directory",
            dir.display()
        )));
    }
    for (file, _) in files {
        std::fs::remove_file(&file).map_err(|e| Error::io("remove", &file, e))?;
    }
    if latest.exists() {
        std::fs::remove_file(&latest).map_err(|e| Error::io("remove", &latest, e))?;
    }
    Ok(())
}

/// What `predict` takes from a checkpoint's metadata to rebuild its
/// model. Read leniently, as metadata written by older versions may lack
/// keys or hold other types: a key that is missing or of another type is
/// `None` ([`lenient`]); [`config_from_meta`] refuses a missing model
/// shape and defaults the rest.
#[derive(Debug, Default, PartialEq, Deserialize)]
struct ModelMeta {
    /// [`ModelKind::name`].
    #[serde(default, deserialize_with = "lenient")]
    model: Option<String>,
    /// Hidden width.
    #[serde(default, deserialize_with = "lenient")]
    hidden: Option<i64>,
    /// Layers.
    #[serde(default, deserialize_with = "lenient")]
    layers: Option<i64>,
    /// GAT heads (1 when absent).
    #[serde(default, deserialize_with = "lenient")]
    heads: Option<i64>,
    /// GAT output heads (1 when absent).
    #[serde(default, deserialize_with = "lenient")]
    out_heads: Option<i64>,
    /// Seed (0 when absent).
    #[serde(default, deserialize_with = "lenient")]
    seed: Option<u64>,
    /// [`InitKind::name`] (the model's default when absent or unknown).
    #[serde(default, deserialize_with = "lenient")]
    init: Option<String>,
    /// Embedded node types (none when absent).
    #[serde(default, deserialize_with = "lenient")]
    embed: Option<Vec<String>>,
    /// R-GCN's bases (0 when absent).
    #[serde(default, deserialize_with = "lenient")]
    num_bases: Option<usize>,
    /// The architecture's own options (its defaults when absent).
    #[serde(default, deserialize_with = "lenient")]
    options: Option<Map<String, Value>>,
    /// [`Task::name`] (node classification when absent).
    #[serde(default, deserialize_with = "lenient")]
    task: Option<String>,
    /// [`DecoderKind::name`] of a link task.
    #[serde(default, deserialize_with = "lenient")]
    decoder: Option<String>,
}

/// A value of type `T`, or `None` when the document holds another type
/// there (the key's absence is `#[serde(default)]`).
fn lenient<'de, D, T>(d: D) -> std::result::Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    Ok(serde_json::from_value(Value::deserialize(d)?).ok())
}

/// The model configuration a checkpoint was trained with (for `predict`):
/// the model's shape from its metadata, the rest at defaults.
pub fn config_from_meta(meta: &Value) -> Result<TrainConfig> {
    let bad = |k: &str| {
        Error::invalid_argument(format!(
            "checkpoint metadata has no valid {k:?} (written by an older ginex?)"
        ))
    };
    // Every field is lenient, so only a document that is not an object
    // fails (checked first: serde would take an array as the fields in
    // order).
    if !meta.is_object() {
        return Err(bad("model"));
    }
    let m = ModelMeta::deserialize(meta).map_err(|_| bad("model"))?;
    let model = ModelKind::parse(m.model.as_deref().ok_or_else(|| bad("model"))?)?;
    let model_options = m.options.unwrap_or_default();
    // Options this build's architecture does not read would be dropped.
    ModelSpec::with_options(model, &model_options).map_err(|_| bad("options"))?;
    // A task this version does not know is refused: its outputs would be
    // misread.
    let task = match (m.task.as_deref(), m.decoder.as_deref()) {
        (None | Some("node"), _) => Task::Node,
        (Some("link"), Some(d)) => Task::Link(DecoderKind::parse(d).map_err(|_| bad("decoder"))?),
        (Some("link"), None) => return Err(bad("decoder")),
        (Some(_), _) => return Err(bad("task")),
    };
    Ok(TrainConfig {
        task,
        model,
        hidden: m.hidden.ok_or_else(|| bad("hidden"))?,
        layers: m.layers.ok_or_else(|| bad("layers"))? as usize,
        heads: m.heads.unwrap_or(1),
        out_heads: m.out_heads.unwrap_or(1),
        seed: m.seed.unwrap_or(0),
        init: m.init.and_then(|s| InitKind::parse(&s).ok()),
        embed: m
            .embed
            .unwrap_or_default()
            .into_iter()
            .map(EmbedTable::named)
            .collect(),
        num_bases: m.num_bases.unwrap_or(0),
        model_options,
        ..TrainConfig::default()
    })
}

/// Which checkpoint of `dir` `predict` uses: the best epoch by validation
/// accuracy when the run recorded one, else the latest. Returns its stem
/// and metadata.
pub fn predict_checkpoint(dir: &Path) -> Result<(String, Value)> {
    // The latest and the best, verified and of one run.
    let verified = verify_dir(dir)?;
    let chosen = verified
        .into_iter()
        .last()
        .ok_or_else(|| Error::internal("a verified checkpoint directory with no checkpoint"))?;
    Ok((chosen.stem, chosen.meta.value))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::checkpoint_meta::parse_value;

    fn doc(progress: Progress) -> CheckpointDoc<'static> {
        CheckpointDoc {
            format: META_FORMAT,
            epoch: 5,
            epochs: 10,
            model: "gat",
            task: None,
            decoder: None,
            hidden: 64,
            embed: Vec::new(),
            num_bases: 0,
            options: Map::new(),
            layers: 2,
            dropout: 0.5,
            input_dropout: 0.25,
            lr: 0.01,
            lr_schedule: LrSchedule::Step {
                every: 3,
                gamma: 0.5,
            },
            weight_decay: 0.05,
            optimizer: "adamw",
            init: "glorot",
            heads: 4,
            out_heads: 1,
            attn_dropout: 0.125,
            seed: 42,
            in_dim: 100,
            classes: 47,
            store_manifest_crc: 0xfeed_f00d,
            store_nodes: 1000,
            batch_size: 512,
            fanouts: Box::leak(Box::new(vec![10, 5].into())),
            eval_fanouts: Box::leak(Box::new(vec![-1, -1].into())),
            eval_every: 1,
            early_stop: None,
            progress,
        }
    }

    #[test]
    fn the_document_has_the_keys_json_wrote() {
        let d = doc(Progress {
            best_epoch: Some(4),
            best_valid: Some(0.75),
            best_test: None,
            evals_since_best: 1,
            complete: false,
            stopped_early: false,
        });
        let want = serde_json::json!({
            "format": 3, "epoch": 5, "epochs": 10, "model": "gat", "hidden": 64, "layers": 2,
            "dropout": 0.5, "input_dropout": 0.25, "lr": 0.01,
            "lr_schedule": {"kind": "step", "every": 3, "gamma": 0.5},
            "weight_decay": 0.05, "optimizer": "adamw", "init": "glorot",
            "heads": 4, "out_heads": 1, "attn_dropout": 0.125,
            "seed": 42, "in_dim": 100, "classes": 47,
            "store_manifest_crc": 0xfeed_f00d_u32, "store_nodes": 1000,
            "batch_size": 512, "fanouts": [10, 5], "eval_fanouts": [-1, -1],
            "eval_every": 1, "early_stop": null,
            "best_epoch": 4, "best_valid_acc": 0.75, "best_test_acc": null,
            "evals_since_best": 1, "complete": false, "stopped_early": false,
        });
        assert_eq!(d.to_json(), want);
    }

    #[test]
    fn the_document_reads_back() {
        let progress = Progress {
            best_epoch: Some(3),
            best_valid: Some(0.5),
            best_test: Some(0.375),
            evals_since_best: 2,
            complete: true,
            stopped_early: true,
        };
        let d = doc(progress);
        let text = serde_json::to_vec_pretty(&d.to_json()).unwrap();
        let m = crate::checkpoint_meta::parse_meta(&text, Path::new("epoch-00005.json")).unwrap();
        assert_eq!((m.epoch, m.progress), (5, progress));
        let c = config_from_meta(&m.value).unwrap();
        assert_eq!(c.model, ModelKind::Gat);
        assert_eq!((c.hidden, c.layers, c.heads, c.out_heads), (64, 2, 4, 1));
        assert_eq!((c.seed, c.init), (42, Some(InitKind::Glorot)));
    }

    #[test]
    fn a_link_document_records_its_task_and_decoder() {
        let mut d = doc(Progress::default());
        d.task = Some("link");
        d.decoder = Some("mlp");
        let v = d.to_json();
        assert_eq!((&v["task"], &v["decoder"]), (&"link".into(), &"mlp".into()));
        let c = config_from_meta(&v).unwrap();
        assert_eq!(c.task, Task::Link(DecoderKind::Mlp));
        // A node run writes neither key, as before link prediction.
        let v = doc(Progress::default()).to_json();
        assert!(v.get("task").is_none() && v.get("decoder").is_none());
        assert_eq!(config_from_meta(&v).unwrap().task, Task::Node);
    }

    /// Whose fault: a damaged checkpoint document is `Corrupt` (naming the
    /// file), a directory without checkpoints the caller's argument.
    #[test]
    fn a_damaged_checkpoint_is_corrupt_not_the_callers_argument() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("LATEST"), "epoch-00001").unwrap();
        let json = dir.path().join("epoch-00001.json");
        std::fs::write(&json, b"{\"epoch\": 1, \"model\": ").unwrap();
        match latest_meta(dir.path()).unwrap_err() {
            Error::Corrupt { path, .. } => assert_eq!(path, json),
            other => panic!("{other:?}"),
        }
        let empty = tempfile::tempdir().unwrap();
        let err = latest_meta(empty.path()).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
    }

    #[test]
    fn an_old_document_reads_with_defaults() {
        // Before heads, out_heads, seed and init were recorded; and a
        // value of another type is taken as absent, as before.
        let old = serde_json::json!({"epoch": 2, "model": "sage", "hidden": 16, "layers": 3,
            "heads": "x", "init": "unknown"});
        parse_value(old.clone(), Path::new("epoch-00002.json")).unwrap();
        let c = config_from_meta(&old).unwrap();
        assert_eq!(c.model, ModelKind::Sage);
        assert_eq!((c.hidden, c.layers, c.heads, c.out_heads), (16, 3, 1, 1));
        assert_eq!((c.seed, c.init), (0, None));
    }

    #[test]
    fn a_document_without_the_models_shape_is_refused() {
        for (doc, key) in [
            (serde_json::json!({"epoch": 1}), "\"model\""),
            (serde_json::json!({"model": 3}), "\"model\""),
            (
                serde_json::json!({"model": "sage", "layers": 2}),
                "\"hidden\"",
            ),
            (
                serde_json::json!({"model": "sage", "hidden": 1.5, "layers": 2}),
                "\"hidden\"",
            ),
            (
                serde_json::json!({"model": "sage", "hidden": 8}),
                "\"layers\"",
            ),
            (serde_json::json!([1]), "\"model\""),
        ] {
            let err = config_from_meta(&doc).unwrap_err().to_string();
            assert!(err.contains(&format!("no valid {key}")), "{doc}: {err}");
        }
        for (task, decoder, key) in [
            ("link", None, "\"decoder\""),
            ("link", Some("cosine"), "\"decoder\""),
            ("graph", None, "\"task\""),
        ] {
            let doc = serde_json::json!({"model": "gcn", "hidden": 8, "layers": 2,
                "task": task, "decoder": decoder});
            let err = config_from_meta(&doc).unwrap_err().to_string();
            assert!(err.contains(&format!("no valid {key}")), "{doc}: {err}");
        }
        let err = config_from_meta(&serde_json::json!({"model": "nope", "hidden": 8, "layers": 2}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("nope"), "{err}");
    }
}
