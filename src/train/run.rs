//! The training loop over the executor: the epoch's batches are gathered on
//! a producer thread and handed through a bounded channel, so gathering
//! batch `i + 1` overlaps the model's compute on batch `i`. Evaluation uses
//! the same data path on the validation and test nodes; checkpoints are
//! written atomically at epoch ends and a resumed run continues exactly.
//!
//! A checkpoint directory holds one run: `LATEST` names the newest
//! `epoch-NNNNN` (`.ot` model + optimizer, `.json` metadata), and that
//! metadata names the best epoch by validation accuracy, whose files are
//! kept too (every other epoch's files are removed once `LATEST` moved on).
//! `predict` uses the best epoch (the latest when nothing was evaluated).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::sync_channel;
use std::time::Duration;

use serde_json::{json, Value};
use tch::Device;

use crate::checkpoint_meta::Progress;
use crate::error::{Error, Result};
use crate::exec::epoch::{run_epoch, EpochBatch, EpochConfig, EpochReport};
use crate::io::durable::write_atomic;
use crate::progress::{human_rate, Bar};
use crate::sample::neighbor_cache::store_identity;
use crate::store::Store;
use crate::train::model::{Hop, InitKind, ModelKind};
use crate::train::trainer::{StepStats, TrainBatch, TrainConfig, Trainer};

/// Learning-rate schedule over the epochs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LrSchedule {
    /// The same rate every epoch.
    Constant,
    /// Multiplied by `gamma` every `every` epochs.
    Step {
        /// Epochs per step.
        every: u64,
        /// Factor per step.
        gamma: f64,
    },
    /// Cosine annealing from the rate to 0 over the run's epochs.
    Cosine,
}

impl LrSchedule {
    /// Parses `constant`, `step` (with `every`, `gamma`) or `cosine`.
    pub fn parse(s: &str, every: u64, gamma: f64) -> Result<Self> {
        match s {
            "constant" => Ok(LrSchedule::Constant),
            "step" if every > 0 => Ok(LrSchedule::Step { every, gamma }),
            "step" => Err(Error::invalid_argument("--lr-step-every must be positive")),
            "cosine" => Ok(LrSchedule::Cosine),
            _ => Err(Error::invalid_argument(format!(
                "unknown --lr-schedule {s:?}; use constant, step or cosine"
            ))),
        }
    }

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            LrSchedule::Constant => "constant",
            LrSchedule::Step { .. } => "step",
            LrSchedule::Cosine => "cosine",
        }
    }

    /// The rate of `epoch` of `epochs` from the base rate `lr`.
    pub fn lr(self, lr: f64, epoch: u64, epochs: u64) -> f64 {
        match self {
            LrSchedule::Constant => lr,
            LrSchedule::Step { every, gamma } => lr * gamma.powi((epoch / every) as i32),
            LrSchedule::Cosine => {
                let t = epoch as f64 / epochs.max(1) as f64;
                lr * 0.5 * (1.0 + (std::f64::consts::PI * t).cos())
            }
        }
    }

    fn to_json(self) -> Value {
        match self {
            LrSchedule::Step { every, gamma } => {
                json!({"kind": "step", "every": every, "gamma": gamma})
            }
            _ => json!({"kind": self.name()}),
        }
    }
}

/// Everything `ginex train` needs.
#[derive(Debug, Clone)]
pub struct TrainOptions {
    /// Model and optimizer.
    pub model: TrainConfig,
    /// The data path (policy, caches, batch size, fanouts, seed, …); its
    /// `epoch` and `seed_nodes` are set per pass.
    pub data: EpochConfig,
    /// Epochs to train (in total, including resumed ones).
    pub epochs: u64,
    /// Evaluate every this many epochs (0 = never).
    pub eval_every: u64,
    /// Checkpoint directory.
    pub checkpoint: Option<PathBuf>,
    /// Continue from the latest checkpoint there.
    pub resume: bool,
    /// Replace another run's checkpoints in `checkpoint` (without it,
    /// such a directory is refused unless `resume`).
    pub overwrite: bool,
    /// Learning-rate schedule.
    pub lr_schedule: LrSchedule,
    /// Fanouts of evaluation passes (`None`: the training fanouts; `-1` =
    /// full neighbourhoods).
    pub eval_fanouts: Option<Vec<i64>>,
    /// Stop after this many evaluations without a better validation
    /// accuracy.
    pub early_stop: Option<u64>,
    /// Compute device.
    pub device: Device,
}

impl TrainOptions {
    /// Options for `model` over `data` with every other knob at its default.
    pub fn new(model: TrainConfig, data: EpochConfig, epochs: u64) -> Self {
        TrainOptions {
            model,
            data,
            epochs,
            eval_every: 1,
            checkpoint: None,
            resume: false,
            overwrite: false,
            lr_schedule: LrSchedule::Constant,
            eval_fanouts: None,
            early_stop: None,
            device: Device::Cpu,
        }
    }
}

/// Time per stage of one epoch.
#[derive(Debug, Clone, Default)]
pub struct StageTimes {
    /// Data preparation stages, from the executor.
    pub data: EpochReport,
    /// Host-to-device transfer (and tensor creation).
    pub transfer: Duration,
    /// Forward, backward and optimizer.
    pub compute: Duration,
}

/// One epoch's results.
#[derive(Debug, Clone, Default)]
pub struct EpochResult {
    /// Epoch number.
    pub epoch: u64,
    /// Mean training loss over labelled seeds.
    pub loss: f64,
    /// Training accuracy (with dropout on, as the batches were trained).
    pub train_acc: f64,
    /// Validation accuracy, when evaluated.
    pub valid_acc: Option<f64>,
    /// Test accuracy, when evaluated.
    pub test_acc: Option<f64>,
    /// Stage times.
    pub times: StageTimes,
    /// Mean loss of each batch, in order.
    pub batch_losses: Vec<f64>,
    /// Wall time of the training pass.
    pub wall: Duration,
    /// Seeds trained on.
    pub seeds: u64,
    /// Learning rate of the epoch.
    pub lr: f64,
}

impl EpochResult {
    /// JSON form for the report.
    pub fn to_json(&self) -> Value {
        let d = &self.times.data;
        json!({
            "epoch": self.epoch, "loss": self.loss, "train_acc": self.train_acc,
            "seeds_per_s": self.seeds as f64 / self.wall.as_secs_f64().max(1e-9), "wall_seconds": self.wall.as_secs_f64(),
            "neighbor_cache_hit_ratio": d.neighbor_hit_ratio,
            "valid_acc": self.valid_acc, "test_acc": self.test_acc, "lr": self.lr,
            "seconds": {
                "sample": d.sample.as_secs_f64(), "changeset": d.changeset.as_secs_f64(),
                "load_runs": d.load_runs.as_secs_f64(), "cache_init": d.cache_init.as_secs_f64(),
                "gather": d.gather.as_secs_f64(), "cache_update": d.cache_update.as_secs_f64(),
                "transfer": self.times.transfer.as_secs_f64(), "compute": self.times.compute.as_secs_f64(),
            },
            "feature_cache": {"hits": d.hits(), "misses": d.misses(), "miss_ratio": d.miss_ratio()},
        })
    }
}

fn to_train_batch(b: &EpochBatch<'_>, store: &Store, labels: &[i32]) -> TrainBatch {
    let dim = store.feature_dim() as usize;
    let mut features = vec![0f32; b.ids.len() * dim];
    store.dtype().decode_to_f32(b.rows, &mut features);
    let hops = b
        .hops
        .iter()
        .map(|h| Hop {
            num_dst: h.num_dst,
            num_src: h.num_src,
            src: h.src.iter().map(|&x| i64::from(x)).collect(),
            dst: h.dst.iter().map(|&x| i64::from(x)).collect(),
        })
        .collect();
    let labels = b.ids[..b.num_seeds]
        .iter()
        .map(|&v| labels.get(v as usize).map_or(-1, |&l| i64::from(l)))
        .collect();
    // GCN's d̂: the graph's in-degree (CSC indptr) plus the self-loop.
    let indptr = store.indptr();
    let degrees = b
        .ids
        .iter()
        .map(|&v| (indptr[v as usize + 1] - indptr[v as usize]) as f32 + 1.0)
        .collect();
    TrainBatch {
        features,
        dim,
        hops,
        labels,
        degrees,
    }
}

/// Runs one pass of the data path over `data` and feeds every batch to
/// `step` on this thread while the next is gathered on another.
fn pass(
    store: &Store,
    data: &EpochConfig,
    labels: &[i32],
    step: &mut dyn FnMut(TrainBatch) -> Result<()>,
) -> Result<EpochReport> {
    let (tx, rx) = sync_channel::<TrainBatch>(2);
    std::thread::scope(|scope| {
        let producer = scope.spawn(move || {
            run_epoch(store, data, &mut |b| {
                tx.send(to_train_batch(b, store, labels))
                    .map_err(|_| Error::invalid_argument("the trainer stopped"))
            })
        });
        let mut failure = None;
        for batch in rx.iter() {
            if let Err(e) = step(batch) {
                failure = Some(e);
                break;
            }
        }
        // Dropping the receiver stops the producer at its next send.
        drop(rx);
        let produced = producer
            .join()
            .map_err(|_| Error::invalid_argument("the data-preparation thread panicked"))?;
        match failure {
            Some(e) => Err(e),
            None => produced,
        }
    })
}

/// Final-layer outputs (logits) of `trainer` for `nodes`, in `nodes`
/// order, through the data path `data` (its fanouts; `-1` = full
/// neighbourhoods): `nodes.len() × classes` values.
pub fn logits(
    store: &Store,
    trainer: &Trainer,
    data: &EpochConfig,
    nodes: &[u64],
) -> Result<Vec<f32>> {
    let labels = store.labels()?.unwrap_or_default();
    let mut data = data.clone();
    data.seed_nodes = Some(nodes.to_vec());
    let mut out = Vec::with_capacity(nodes.len() * store.num_classes() as usize);
    let bar = Bar::new(data.num_batches(0), "predict", false);
    let (started, mut done) = (std::time::Instant::now(), 0u64);
    pass(store, &data, &labels, &mut |b| {
        out.extend(trainer.predict(&b)?);
        done += b.labels.len() as u64;
        bar.inc_with_message(|| {
            human_rate(
                done as f64 / started.elapsed().as_secs_f64().max(1e-9),
                "nodes",
            )
        });
        Ok(())
    })?;
    bar.finish_and_clear();
    Ok(out)
}

/// Accuracy of `trainer` on `nodes` (the split called `what`) through the
/// data path.
fn evaluate(
    store: &Store,
    trainer: &Trainer,
    data: &EpochConfig,
    labels: &[i32],
    (what, nodes): (&str, &[u64]),
) -> Result<Option<f64>> {
    if nodes.is_empty() {
        return Ok(None);
    }
    let mut cfg = data.clone();
    cfg.seed_nodes = Some(nodes.to_vec());
    let mut total = StepStats::default();
    let bar = Bar::new(cfg.num_batches(0), what, false);
    pass(store, &cfg, labels, &mut |b| {
        total.add(&trainer.eval_step(&b)?);
        bar.inc_with_message(|| format!("acc {:.4}", total.accuracy()));
        Ok(())
    })?;
    bar.finish_and_clear();
    Ok(Some(total.accuracy()))
}

/// The checkpoint's metadata: the configuration (what must match to
/// resume, and what `predict` rebuilds the model from) and the progress.
fn checkpoint_meta(
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
const MODEL_KEYS: [&str; 7] = [
    "model",
    "hidden",
    "layers",
    "heads",
    "out_heads",
    "in_dim",
    "classes",
];

/// Keys that tie a checkpoint to its store.
const STORE_KEYS: [&str; 2] = ["store_manifest_crc", "store_nodes"];

/// Keys a resumed run must replay identically, beside the model's and the
/// store's.
const REPLAY_KEYS: [&str; 8] = [
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
fn save_checkpoint(
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

/// Removes temporary checkpoint files (`.NAME.tmp-PID`) of processes that
/// are no longer alive: what a run killed mid-write left.
fn remove_stale_temporaries(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some((_, pid)) = name.rsplit_once(".tmp-") else {
            continue;
        };
        if !name.starts_with('.') {
            continue;
        }
        if let Ok(pid) = pid.parse::<u32>() {
            if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// Reads the metadata of `stem` in `dir` (validated by
/// [`crate::checkpoint_meta::parse_meta`]).
fn read_meta(dir: &Path, stem: &str) -> Result<Value> {
    crate::checkpoint_meta::read_meta_file(&dir.join(format!("{stem}.json"))).map(|m| m.value)
}

/// The stem `LATEST` names, or `None` when `dir` holds no `LATEST`.
fn latest_stem(dir: &Path) -> Result<Option<String>> {
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
fn load_stem(
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
fn prepare_fresh_dir(dir: &Path, overwrite: bool) -> Result<()> {
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

fn log_line(log: &mut dyn Write, line: &str) -> Result<()> {
    writeln!(log, "{line}").map_err(|e| Error::io("write", "<log>", e))
}

/// Trains; prints one line per epoch to `log`; returns every epoch's
/// results (none when `--resume` finds the run already complete).
pub fn train(store: &Store, opts: &TrainOptions, log: &mut dyn Write) -> Result<Vec<EpochResult>> {
    let labels = store.labels()?.ok_or_else(|| {
        Error::invalid_argument(format!(
            "{} has no labels to train on",
            store.dir().display()
        ))
    })?;
    let splits = store.splits()?.unwrap_or_default();
    let in_dim = i64::from(store.feature_dim());
    let classes = i64::from(store.num_classes());
    if opts.model.layers != opts.data.fanouts.len() {
        return Err(Error::invalid_argument(format!(
            "the model has {} layers but --fanouts gives {} hops",
            opts.model.layers,
            opts.data.fanouts.len()
        )));
    }
    if let Some(f) = &opts.eval_fanouts {
        if f.len() != opts.model.layers {
            return Err(Error::invalid_argument(format!(
                "the model has {} layers but --eval-fanouts gives {} hops",
                opts.model.layers,
                f.len()
            )));
        }
    }
    if opts.resume && opts.checkpoint.is_none() {
        return Err(Error::invalid_argument("--resume needs --checkpoint DIR"));
    }
    let mut trainer = Trainer::new(opts.model.clone(), in_dim, classes, opts.device);
    let mut start = 0;
    let mut progress = Progress::default();
    if let Some(dir) = &opts.checkpoint {
        remove_stale_temporaries(dir);
        if !opts.resume {
            prepare_fresh_dir(dir, opts.overwrite)?;
        } else if let Some(stem) = latest_stem(dir)? {
            let expected = checkpoint_meta(store, opts, in_dim, classes, 0, &progress);
            let must_match = [&MODEL_KEYS[..], &STORE_KEYS, &REPLAY_KEYS].concat();
            let meta = load_stem(dir, &stem, &mut trainer, &expected, &must_match)?;
            let done = meta["epoch"].as_u64().ok_or_else(|| {
                Error::corrupt(dir.join(format!("{stem}.json")), 0, "no epoch number")
            })?;
            progress = crate::checkpoint_meta::parse_value(
                meta.clone(),
                &dir.join(format!("{stem}.json")),
            )?
            .progress;
            let best = progress.best_epoch.map_or(String::new(), |b| {
                format!(
                    "; best validation accuracy {:.4} at epoch {b} (test {:.4})",
                    progress.best_valid.unwrap_or(0.0),
                    progress.best_test.unwrap_or(f64::NAN)
                )
            });
            if progress.stopped_early || done + 1 >= opts.epochs {
                log_line(
                    log,
                    &format!(
                        "the run in {} is complete: {} after epoch {done}{best}; nothing to do (use --epochs to train longer, or --overwrite without --resume to start again)",
                        dir.display(),
                        if progress.stopped_early { "stopped early" } else { "trained" },
                    ),
                )?;
                return Ok(Vec::new());
            }
            progress.complete = false;
            start = done + 1;
            log_line(
                log,
                &format!("resumed from {} after epoch {done}{best}", dir.display()),
            )?;
        } else {
            log_line(
                log,
                &format!(
                    "no checkpoint in {} yet: starting at epoch 0",
                    dir.display()
                ),
            )?;
        }
    }
    let mut results = Vec::new();
    for epoch in start..opts.epochs {
        // Dropout draws depend only on (seed, epoch): resumed runs match.
        tch::manual_seed(crate::rng::stream_seed(opts.model.seed, 21, epoch) as i64 & i64::MAX);
        let lr = opts.lr_schedule.lr(opts.model.lr, epoch, opts.epochs);
        trainer.set_lr(lr);
        let mut data = opts.data.clone();
        data.epoch = epoch;
        data.seed_nodes = None;
        let mut total = StepStats::default();
        let mut batch_losses = Vec::new();
        let mut seeds = 0u64;
        let started = std::time::Instant::now();
        // Batches, running loss, seeds/s and the time left, on a terminal.
        let bar = Bar::new(
            data.num_batches(splits.train.len()),
            &format!("epoch {epoch}"),
            false,
        );
        let report = pass(store, &data, &labels, &mut |b| {
            seeds += b.labels.len() as u64;
            let s = trainer.train_step(&b)?;
            batch_losses.push(s.mean_loss());
            total.add(&s);
            bar.inc_with_message(|| {
                format!(
                    "loss {:.4}, {}",
                    total.mean_loss(),
                    human_rate(
                        seeds as f64 / started.elapsed().as_secs_f64().max(1e-9),
                        "seeds"
                    )
                )
            });
            Ok(())
        })?;
        bar.finish_and_clear();
        let mut r = EpochResult {
            epoch,
            loss: total.mean_loss(),
            train_acc: total.accuracy(),
            times: StageTimes {
                data: report,
                transfer: total.transfer,
                compute: total.compute,
            },
            batch_losses,
            wall: started.elapsed(),
            seeds,
            lr,
            ..EpochResult::default()
        };
        if opts.eval_every > 0 && ((epoch + 1) % opts.eval_every == 0 || epoch + 1 == opts.epochs) {
            let mut eval = opts.data.clone();
            eval.epoch = epoch;
            if let Some(f) = &opts.eval_fanouts {
                eval.fanouts = f.clone();
            }
            r.valid_acc = evaluate(store, &trainer, &eval, &labels, ("valid", &splits.valid))?;
            r.test_acc = evaluate(store, &trainer, &eval, &labels, ("test", &splits.test))?;
            if let Some(v) = r.valid_acc {
                if progress.best_valid.is_none_or(|b| v > b) {
                    progress.best_valid = Some(v);
                    progress.best_test = r.test_acc;
                    progress.best_epoch = Some(epoch);
                    progress.evals_since_best = 0;
                } else {
                    progress.evals_since_best += 1;
                }
            }
        }
        if opts
            .early_stop
            .is_some_and(|n| progress.evals_since_best >= n)
        {
            progress.stopped_early = true;
        }
        progress.complete = progress.stopped_early || epoch + 1 == opts.epochs;
        let t = &r.times;
        let fmt = |a: Option<f64>| a.map_or("-".to_string(), |x| format!("{:.4}", x));
        writeln!(
            log,
            "epoch {epoch}: loss {:.4}, train acc {:.4}, valid acc {}, test acc {} | {:.1}s, {}, feature-cache miss ratio {:.3}{} | sample {:.2}s changeset {:.2}s cache init {:.2}s gather {:.2}s update {:.2}s transfer {:.2}s compute {:.2}s",
            r.loss,
            r.train_acc,
            fmt(r.valid_acc),
            fmt(r.test_acc),
            r.wall.as_secs_f64(),
            human_rate(r.seeds as f64 / r.wall.as_secs_f64().max(1e-9), "seeds"),
            t.data.miss_ratio(),
            t.data.neighbor_hit_ratio.map_or(String::new(), |h| format!(", neighbor-cache hit ratio {h:.3}")),
            t.data.sample.as_secs_f64(),
            t.data.changeset.as_secs_f64(),
            t.data.cache_init.as_secs_f64(),
            t.data.gather.as_secs_f64(),
            t.data.cache_update.as_secs_f64(),
            t.transfer.as_secs_f64(),
            t.compute.as_secs_f64()
        )
        .map_err(|e| Error::io("write", "<log>", e))?;
        if let Some(dir) = &opts.checkpoint {
            save_checkpoint(
                dir,
                &trainer,
                &checkpoint_meta(store, opts, in_dim, classes, epoch, &progress),
                epoch,
                progress.best_epoch,
            )?;
        }
        results.push(r);
        if progress.stopped_early {
            log_line(
                log,
                &format!(
                    "early stop after epoch {epoch}: no better validation accuracy in {} evaluations",
                    progress.evals_since_best
                ),
            )?;
            break;
        }
    }
    if let (Some(b), Some(v)) = (progress.best_epoch, progress.best_valid) {
        log_line(
            log,
            &format!(
                "best epoch {b}: valid acc {v:.4}, test acc {}{}",
                progress.best_test.map_or("-".into(), |t| format!("{t:.4}")),
                if opts.checkpoint.is_some() {
                    " (the checkpoint predict uses)"
                } else {
                    ""
                }
            ),
        )?;
    }
    Ok(results)
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

/// Final-layer outputs (logits) for `nodes` with the checkpoint `predict`
/// uses (see [`predict_checkpoint`]), in `nodes` order: `nodes.len() ×
/// classes` values. `opts.model` must match the checkpoint's model shape.
pub fn predict(store: &Store, opts: &TrainOptions, nodes: &[u64]) -> Result<Vec<f32>> {
    let in_dim = i64::from(store.feature_dim());
    let classes = i64::from(store.num_classes());
    let dir = opts
        .checkpoint
        .as_ref()
        .ok_or_else(|| Error::invalid_argument("predict needs --checkpoint DIR"))?;
    let mut trainer = Trainer::new(opts.model.clone(), in_dim, classes, opts.device);
    let (stem, _) = predict_checkpoint(dir)?;
    let keys = [&MODEL_KEYS[..], &STORE_KEYS].concat();
    load_stem(
        dir,
        &stem,
        &mut trainer,
        &checkpoint_meta(store, opts, in_dim, classes, 0, &Progress::default()),
        &keys,
    )?;
    logits(store, &trainer, &opts.data, nodes)
}

/// Correct arg-max predictions and labelled nodes among `nodes` (restricted
/// to `only` when given), from `logits` (`nodes.len() × classes`); `None`
/// when no node counted has a label.
pub fn accuracy(
    logits: &[f32],
    classes: usize,
    nodes: &[u64],
    labels: &[i32],
    only: Option<&std::collections::HashSet<u64>>,
) -> Option<(u64, u64)> {
    let (mut correct, mut labelled) = (0u64, 0u64);
    for (&v, row) in nodes.iter().zip(logits.chunks_exact(classes.max(1))) {
        if only.is_some_and(|o| !o.contains(&v)) {
            continue;
        }
        let Some(&label) = labels.get(v as usize).filter(|&&l| l >= 0) else {
            continue;
        };
        let arg = row
            .iter()
            .enumerate()
            .fold(
                (0, f32::NEG_INFINITY),
                |b, (i, &x)| if x > b.1 { (i, x) } else { b },
            )
            .0;
        labelled += 1;
        correct += u64::from(arg == label as usize);
    }
    (labelled > 0).then_some((correct, labelled))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lr_schedules() {
        let c = LrSchedule::parse("constant", 0, 0.0).unwrap();
        assert_eq!(c.lr(0.01, 7, 10), 0.01);
        let s = LrSchedule::parse("step", 3, 0.5).unwrap();
        assert_eq!(
            [0, 2, 3, 5, 6].map(|e| s.lr(0.08, e, 10)),
            [0.08, 0.08, 0.04, 0.04, 0.02]
        );
        let cos = LrSchedule::parse("cosine", 0, 0.0).unwrap();
        assert_eq!(cos.lr(0.1, 0, 10), 0.1);
        assert!((cos.lr(0.1, 5, 10) - 0.05).abs() < 1e-12);
        assert!(LrSchedule::parse("step", 0, 0.5).is_err());
        assert!(LrSchedule::parse("linear", 1, 0.5).is_err());
    }

    #[test]
    fn accuracy_counts_labelled_nodes_only() {
        // 3 nodes x 2 classes; node 1 has no label.
        let logits = [0.0, 1.0, 5.0, 0.0, 2.0, 1.0];
        let labels = [1, -1, 1];
        assert_eq!(
            accuracy(&logits, 2, &[0, 1, 2], &labels, None),
            Some((1, 2))
        );
        let only: std::collections::HashSet<u64> = [2].into_iter().collect();
        assert_eq!(
            accuracy(&logits, 2, &[0, 1, 2], &labels, Some(&only)),
            Some((0, 1))
        );
        assert_eq!(accuracy(&logits[2..4], 2, &[1], &labels, None), None);
    }
}
