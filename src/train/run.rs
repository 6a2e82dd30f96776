//! The training loop over the executor: the epoch's batches are gathered on
//! a producer thread and handed through a bounded channel, so gathering
//! batch `i + 1` overlaps the model's compute on batch `i`. Evaluation uses
//! the same data path on the validation and test nodes; checkpoints are
//! written atomically at epoch ends and a resumed run continues exactly.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::sync_channel;
use std::time::Duration;

use serde_json::{json, Value};
use tch::Device;

use crate::error::{Error, Result};
use crate::exec::epoch::{run_epoch, EpochBatch, EpochConfig, EpochReport};
use crate::io::durable::write_atomic;
use crate::sample::ncache::store_identity;
use crate::store::Store;
use crate::train::model::Hop;
use crate::train::trainer::{StepStats, TrainBatch, TrainConfig, Trainer};

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
    /// Compute device.
    pub device: Device,
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
}

impl EpochResult {
    /// JSON form for the report.
    pub fn to_json(&self) -> Value {
        let d = &self.times.data;
        json!({
            "epoch": self.epoch, "loss": self.loss, "train_acc": self.train_acc,
            "seeds_per_s": self.seeds as f64 / self.wall.as_secs_f64().max(1e-9), "wall_seconds": self.wall.as_secs_f64(),
            "neighbor_cache_hit_ratio": d.neighbor_hit_ratio,
            "valid_acc": self.valid_acc, "test_acc": self.test_acc,
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
    TrainBatch {
        features,
        dim,
        hops,
        labels,
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

/// Accuracy of `trainer` on `nodes` through the data path.
fn evaluate(
    store: &Store,
    trainer: &Trainer,
    data: &EpochConfig,
    labels: &[i32],
    nodes: &[u64],
) -> Result<Option<f64>> {
    if nodes.is_empty() {
        return Ok(None);
    }
    let mut cfg = data.clone();
    cfg.seed_nodes = Some(nodes.to_vec());
    let mut total = StepStats::default();
    pass(store, &cfg, labels, &mut |b| {
        let s = trainer.eval_step(&b)?;
        total.correct += s.correct;
        total.labelled += s.labelled;
        Ok(())
    })?;
    Ok(Some(total.correct as f64 / total.labelled.max(1) as f64))
}

/// The checkpoint's metadata: what must match to resume.
fn checkpoint_meta(
    store: &Store,
    opts: &TrainOptions,
    in_dim: i64,
    classes: i64,
    epoch: u64,
) -> Value {
    let m = &opts.model;
    json!({
        "format": 1, "epoch": epoch, "model": m.model.name(), "hidden": m.hidden, "layers": m.layers,
        "dropout": m.dropout, "lr": m.lr, "seed": m.seed, "in_dim": in_dim, "classes": classes,
        "store_manifest_crc": store_identity(store), "store_nodes": store.num_nodes(),
        "batch_size": opts.data.batch_size, "fanouts": opts.data.fanouts,
    })
}

const MUST_MATCH: [&str; 8] = [
    "model",
    "hidden",
    "layers",
    "in_dim",
    "classes",
    "store_manifest_crc",
    "store_nodes",
    "seed",
];

/// Saves model + optimizer + metadata for `epoch`, then points `LATEST` at it.
fn save_checkpoint(dir: &Path, trainer: &Trainer, meta: &Value, epoch: u64) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io("create directory", dir, e))?;
    let stem = format!("epoch-{epoch:05}");
    write_atomic(dir, &format!("{stem}.ot"), |p| trainer.save(p))?;
    write_atomic(dir, &format!("{stem}.json"), |p| {
        std::fs::write(p, serde_json::to_vec_pretty(meta).unwrap_or_default())
            .map_err(|e| Error::io("write", p, e))
    })?;
    write_atomic(dir, "LATEST", |p| {
        std::fs::write(p, stem.as_bytes()).map_err(|e| Error::io("write", p, e))
    })
}

/// Loads the latest checkpoint into `trainer` after checking it belongs to
/// this store and model; returns its epoch.
fn load_checkpoint(dir: &Path, trainer: &mut Trainer, expected: &Value) -> Result<u64> {
    let latest = dir.join("LATEST");
    let stem = std::fs::read_to_string(&latest).map_err(|e| Error::io("read", &latest, e))?;
    let stem = stem.trim();
    if !stem.starts_with("epoch-") || stem.contains('/') {
        return Err(Error::corrupt(
            &latest,
            0,
            format!("{stem:?} is not a checkpoint name"),
        ));
    }
    let meta_path = dir.join(format!("{stem}.json"));
    let meta: Value = std::fs::read(&meta_path)
        .map_err(|e| Error::io("read", &meta_path, e))
        .and_then(|b| {
            serde_json::from_slice(&b)
                .map_err(|e| Error::corrupt(&meta_path, 0, format!("not valid JSON: {e}")))
        })?;
    for key in MUST_MATCH {
        if meta[key] != expected[key] {
            return Err(Error::invalid_argument(format!(
                "checkpoint {} does not match this run: {key} is {} there and {} here",
                meta_path.display(),
                meta[key],
                expected[key]
            )));
        }
    }
    trainer.load(&dir.join(format!("{stem}.ot")))?;
    meta["epoch"]
        .as_u64()
        .ok_or_else(|| Error::corrupt(&meta_path, 0, "no epoch number"))
}

/// Trains; prints one line per epoch to `log`; returns every epoch's results.
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
    let mut trainer = Trainer::new(opts.model.clone(), in_dim, classes, opts.device);
    let mut start = 0;
    if opts.resume {
        let dir = opts
            .checkpoint
            .as_ref()
            .ok_or_else(|| Error::invalid_argument("--resume needs --checkpoint DIR"))?;
        let done = load_checkpoint(
            dir,
            &mut trainer,
            &checkpoint_meta(store, opts, in_dim, classes, 0),
        )?;
        start = done + 1;
        writeln!(log, "resumed from {} after epoch {done}", dir.display())
            .map_err(|e| Error::io("write", "<log>", e))?;
    }
    let mut results = Vec::new();
    for epoch in start..opts.epochs {
        // Dropout draws depend only on (seed, epoch): resumed runs match.
        tch::manual_seed(crate::rng::stream_seed(opts.model.seed, 21, epoch) as i64 & i64::MAX);
        let mut data = opts.data.clone();
        data.epoch = epoch;
        data.seed_nodes = None;
        let mut total = StepStats::default();
        let (mut transfer, mut compute) = (Duration::ZERO, Duration::ZERO);
        let mut batch_losses = Vec::new();
        let mut seeds = 0u64;
        let started = std::time::Instant::now();
        let report = pass(store, &data, &labels, &mut |b| {
            seeds += b.labels.len() as u64;
            let s = trainer.train_step(&b)?;
            batch_losses.push(s.loss_sum / s.labelled.max(1) as f64);
            transfer += s.transfer;
            compute += s.compute;
            total.loss_sum += s.loss_sum;
            total.correct += s.correct;
            total.labelled += s.labelled;
            Ok(())
        })?;
        let mut r = EpochResult {
            epoch,
            loss: total.loss_sum / total.labelled.max(1) as f64,
            train_acc: total.correct as f64 / total.labelled.max(1) as f64,
            times: StageTimes {
                data: report,
                transfer,
                compute,
            },
            batch_losses,
            wall: started.elapsed(),
            seeds,
            ..EpochResult::default()
        };
        if opts.eval_every > 0 && ((epoch + 1) % opts.eval_every == 0 || epoch + 1 == opts.epochs) {
            let mut eval = opts.data.clone();
            eval.epoch = epoch;
            r.valid_acc = evaluate(store, &trainer, &eval, &labels, &splits.valid)?;
            r.test_acc = evaluate(store, &trainer, &eval, &labels, &splits.test)?;
        }
        let t = &r.times;
        let fmt = |a: Option<f64>| a.map_or("-".to_string(), |x| format!("{:.4}", x));
        writeln!(
            log,
            "epoch {epoch}: loss {:.4} train {:.4} valid {} test {} | {:.0} seeds/s, feature-cache miss ratio {:.3}{} | sample {:.2}s changeset {:.2}s cache init {:.2}s gather {:.2}s update {:.2}s transfer {:.2}s compute {:.2}s",
            r.loss,
            r.train_acc,
            fmt(r.valid_acc),
            fmt(r.test_acc),
            r.seeds as f64 / r.wall.as_secs_f64().max(1e-9),
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
                &checkpoint_meta(store, opts, in_dim, classes, epoch),
                epoch,
            )?;
        }
        results.push(r);
    }
    Ok(results)
}

/// Final-layer outputs (logits) for `nodes` with the latest checkpoint's
/// model, in `nodes` order: `nodes.len() × classes` values.
pub fn predict(store: &Store, opts: &TrainOptions, nodes: &[u64]) -> Result<Vec<f32>> {
    let in_dim = i64::from(store.feature_dim());
    let classes = i64::from(store.num_classes());
    let dir = opts
        .checkpoint
        .as_ref()
        .ok_or_else(|| Error::invalid_argument("predict needs --checkpoint DIR"))?;
    let mut trainer = Trainer::new(opts.model.clone(), in_dim, classes, opts.device);
    load_checkpoint(
        dir,
        &mut trainer,
        &checkpoint_meta(store, opts, in_dim, classes, 0),
    )?;
    let labels = store.labels()?.unwrap_or_default();
    let mut data = opts.data.clone();
    data.seed_nodes = Some(nodes.to_vec());
    let mut out = Vec::with_capacity(nodes.len() * classes as usize);
    pass(store, &data, &labels, &mut |b| {
        out.extend(trainer.predict(&b)?);
        Ok(())
    })?;
    Ok(out)
}
