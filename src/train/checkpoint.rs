//! Checkpoints: a checkpoint directory holds one run. `LATEST` names the
//! newest `epoch-NNNNN` (`.ot` model + optimizer, `.json` metadata), and
//! that metadata names the best epoch by validation accuracy, whose files
//! are kept too (every other epoch's files are removed once `LATEST` moved
//! on). Every file is written atomically; a resumed run continues exactly.
//! `predict` uses the best epoch (the latest when nothing was evaluated).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use crate::checkpoint_meta::Progress;
use crate::error::{Error, Result};
use crate::io::durable::{atomic_temporary_owner, write_atomic};
use crate::sample::neighbor_cache::store_identity;
use crate::store::Store;
use crate::train::model::{InitKind, ModelKind};
use crate::train::options::TrainOptions;
use crate::train::trainer::{TrainConfig, Trainer};

/// The checkpoint's metadata: the configuration (what must match to
/// resume, and what `predict` rebuilds the model from) and the progress.
pub(crate) fn checkpoint_meta(
    store: &Store,
    opts: &TrainOptions,
    in_dim: i64,
    classes: i64,
    epoch: u64,
    progress: &Progress,
) -> Value {
    let m = &opts.model;
    json!({
        "format": 2, "epoch": epoch, "epochs": opts.epochs, "model": m.model.name(), "hidden": m.hidden, "layers": m.layers,
        "dropout": m.dropout, "input_dropout": m.input_dropout, "lr": m.lr, "lr_schedule": opts.lr_schedule.to_json(),
        "weight_decay": m.weight_decay, "optimizer": m.optimizer.name(), "init": m.init_kind().name(),
        "heads": m.heads, "out_heads": m.out_heads, "attn_dropout": m.attn_dropout,
        "seed": m.seed, "in_dim": in_dim, "classes": classes,
        "store_manifest_crc": store_identity(store), "store_nodes": store.num_nodes(),
        "batch_size": opts.data.batch_size, "fanouts": opts.data.fanouts,
        "eval_fanouts": opts.eval_fanouts.as_ref().unwrap_or(&opts.data.fanouts),
        "eval_every": opts.eval_every, "early_stop": opts.early_stop,
        "best_epoch": progress.best_epoch, "best_valid_acc": progress.best_valid,
        "best_test_acc": progress.best_test, "evals_since_best": progress.evals_since_best,
        "complete": progress.complete, "stopped_early": progress.stopped_early,
    })
}

/// Keys that shape the model: `predict` takes them from the checkpoint.
pub(crate) const MODEL_KEYS: [&str; 7] = [
    "model",
    "hidden",
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
    write_checkpoint_file(dir, &format!("{stem}.ot"), |p| trainer.save(p))?;
    write_checkpoint_file(dir, &format!("{stem}.json"), |p| {
        std::fs::write(p, serde_json::to_vec_pretty(meta).unwrap_or_default())
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
fn read_meta(dir: &Path, stem: &str) -> Result<Value> {
    crate::checkpoint_meta::read_meta_file(&dir.join(format!("{stem}.json"))).map(|m| m.value)
}

/// The stem `LATEST` names, or `None` when `dir` holds no `LATEST`.
pub(crate) fn latest_stem(dir: &Path) -> Result<Option<String>> {
    crate::checkpoint_meta::read_latest_file(&dir.join("LATEST"))
}

/// The metadata of the latest checkpoint in `dir`.
pub fn latest_meta(dir: &Path) -> Result<Value> {
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
) -> Result<Value> {
    let meta = read_meta(dir, stem)?;
    let mismatches: Vec<String> = keys
        .iter()
        .filter(|k| meta[**k] != expected[**k])
        .map(|k| format!("{k} is {} there and {} here", meta[*k], expected[*k]))
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
        let what = match latest_meta(dir) {
            Ok(m) => format!(
                "a {} run at epoch {} of {}{}",
                m["model"].as_str().unwrap_or("?"),
                m["epoch"],
                m["epochs"],
                if m["complete"].as_bool() == Some(true) {
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

/// The model configuration a checkpoint was trained with (for `predict`):
/// the model's shape from its metadata, the rest at defaults.
pub fn config_from_meta(meta: &Value) -> Result<TrainConfig> {
    let bad = |k: &str| {
        Error::invalid_argument(format!(
            "checkpoint metadata has no valid {k:?} (written by an older ginex?)"
        ))
    };
    let int = |k: &str| meta[k].as_i64().ok_or_else(|| bad(k));
    let model = ModelKind::parse(meta["model"].as_str().ok_or_else(|| bad("model"))?)?;
    Ok(TrainConfig {
        model,
        hidden: int("hidden")?,
        layers: int("layers")? as usize,
        heads: meta["heads"].as_i64().unwrap_or(1),
        out_heads: meta["out_heads"].as_i64().unwrap_or(1),
        seed: meta["seed"].as_u64().unwrap_or(0),
        init: meta["init"].as_str().and_then(|s| InitKind::parse(s).ok()),
        ..TrainConfig::default()
    })
}

/// Which checkpoint of `dir` `predict` uses: the best epoch by validation
/// accuracy when the run recorded one, else the latest. Returns its stem
/// and metadata.
pub fn predict_checkpoint(dir: &Path) -> Result<(String, Value)> {
    let latest = latest_meta(dir)?;
    let stem = match latest["best_epoch"].as_u64() {
        Some(b) => stem_of(b),
        None => stem_of(latest["epoch"].as_u64().ok_or_else(|| {
            Error::corrupt(
                dir.join("LATEST"),
                0,
                "the latest checkpoint has no epoch number",
            )
        })?),
    };
    let meta = read_meta(dir, &stem)?;
    Ok((stem, meta))
}
