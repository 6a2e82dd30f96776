//! The training loop over the executor: per epoch, one training pass
//! (`train/pass.rs`), evaluation on the validation and test nodes
//! when due ([`crate::train::eval`]), one log line, and a checkpoint
//! written atomically at the epoch's end ([`crate::train::checkpoint`]);
//! a resumed run continues exactly.

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use crate::checkpoint_meta::Progress;
use crate::error::{Error, Result};
use crate::exec::epoch::EpochReport;
use crate::format::edge_splits::EdgeSplits;
use crate::link_metrics::LinkMetrics;
use crate::progress::{human_rate, Bar};
use crate::sample::link::{LinkPositives, LinkTask, NegMode};
use crate::store::Store;
use crate::train::checkpoint::{
    checkpoint_meta, latest_stem, load_stem, prepare_fresh_dir, remove_stale_temporaries,
    save_checkpoint, MODEL_KEYS, REPLAY_KEYS, STORE_KEYS,
};
use crate::train::decoder::Task;
use crate::train::eval::evaluate;
use crate::train::link::{evaluate_link, link_train_pass, relation_splits, training_edges};
use crate::train::options::TrainOptions;
use crate::train::pass::pass;
use crate::train::target::Target;
use crate::train::trainer::{StepStats, Trainer};

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
    /// Link prediction: every metric on the validation edges, when
    /// evaluated (`valid_acc` holds the one the best epoch is chosen by:
    /// [`LinkMetrics::selection`]).
    pub valid_link: Option<LinkMetrics>,
    /// Link prediction: every metric on the test edges, when evaluated.
    pub test_link: Option<LinkMetrics>,
}

impl EpochResult {
    /// JSON form for the report ([`EpochJson`] as a [`Value`]).
    pub fn to_json(&self) -> Value {
        // Numbers and options: serializing cannot fail (a non-finite loss
        // is written as null, as `json!` did).
        serde_json::to_value(EpochJson::new(self)).unwrap_or_default()
    }
}

/// One epoch of the training report: what [`EpochResult::to_json`]
/// writes. Written only.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct EpochJson {
    /// [`EpochResult::epoch`].
    pub epoch: u64,
    /// [`EpochResult::loss`].
    pub loss: f64,
    /// [`EpochResult::train_acc`].
    pub train_acc: f64,
    /// Seeds trained per second of the pass.
    pub seeds_per_s: f64,
    /// [`EpochResult::wall`] in seconds.
    pub wall_seconds: f64,
    /// The data path's neighbor-cache hit ratio.
    pub neighbor_cache_hit_ratio: Option<f64>,
    /// [`EpochResult::valid_acc`].
    pub valid_acc: Option<f64>,
    /// [`EpochResult::test_acc`].
    pub test_acc: Option<f64>,
    /// [`EpochResult::lr`].
    pub lr: f64,
    /// [`EpochResult::valid_link`] (absent for node classification).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_link: Option<LinkMetrics>,
    /// [`EpochResult::test_link`] (absent for node classification).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test_link: Option<LinkMetrics>,
    /// Stage times in seconds.
    pub seconds: EpochSeconds,
    /// The feature cache's counters.
    pub feature_cache: FeatureCacheJson,
}

/// The stage times of an [`EpochJson`], in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct EpochSeconds {
    /// Sampling.
    pub sample: f64,
    /// Changeset precomputation.
    pub changeset: f64,
    /// Reading runtime files back.
    pub load_runs: f64,
    /// Cache initialisation.
    pub cache_init: f64,
    /// Gathering rows.
    pub gather: f64,
    /// Applying cache updates.
    pub cache_update: f64,
    /// [`StageTimes::transfer`].
    pub transfer: f64,
    /// [`StageTimes::compute`].
    pub compute: f64,
}

/// The feature-cache counters of an [`EpochJson`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct FeatureCacheJson {
    /// [`EpochReport::hits`].
    pub hits: u64,
    /// [`EpochReport::misses`].
    pub misses: u64,
    /// [`EpochReport::miss_ratio`].
    pub miss_ratio: f64,
}

impl EpochJson {
    /// The report entry of `r`.
    fn new(r: &EpochResult) -> Self {
        let d = &r.times.data;
        EpochJson {
            epoch: r.epoch,
            loss: r.loss,
            train_acc: r.train_acc,
            seeds_per_s: r.seeds as f64 / r.wall.as_secs_f64().max(1e-9),
            wall_seconds: r.wall.as_secs_f64(),
            neighbor_cache_hit_ratio: d.neighbor_hit_ratio,
            valid_acc: r.valid_acc,
            test_acc: r.test_acc,
            lr: r.lr,
            valid_link: r.valid_link.clone(),
            test_link: r.test_link.clone(),
            seconds: EpochSeconds {
                sample: d.sample.as_secs_f64(),
                changeset: d.changeset.as_secs_f64(),
                load_runs: d.load_runs.as_secs_f64(),
                cache_init: d.cache_init.as_secs_f64(),
                gather: d.gather.as_secs_f64(),
                cache_update: d.cache_update.as_secs_f64(),
                transfer: r.times.transfer.as_secs_f64(),
                compute: r.times.compute.as_secs_f64(),
            },
            feature_cache: FeatureCacheJson {
                hits: d.hits(),
                misses: d.misses(),
                miss_ratio: d.miss_ratio(),
            },
        }
    }
}

fn log_line(log: &mut dyn Write, line: &str) -> Result<()> {
    writeln!(log, "{line}").map_err(|e| Error::io("write", "<log>", e))
}

/// Trains; prints one line per epoch to `log`; returns every epoch's
/// results (none when `--resume` finds the run already complete).
pub fn train(store: &Store, opts: &TrainOptions, log: &mut dyn Write) -> Result<Vec<EpochResult>> {
    let supervision = Supervision::of(store, opts)?;
    let in_dim = i64::from(store.feature_dim());
    let classes = match supervision {
        Supervision::Node { .. } => i64::from(store.num_classes()),
        // The encoder's last layer: node embeddings of the hidden width.
        Supervision::Link { .. } => opts.model.hidden,
    };
    check_options(store, opts)?;
    // The checkpoint directory is this run's until it returns.
    let _owner = opts
        .checkpoint
        .as_deref()
        .map(|dir| crate::io::dir_lock::DirLock::acquire(dir, "another training run"))
        .transpose()?;
    let model = opts.model.for_store(store)?;
    let mut trainer = Trainer::new(model, in_dim, classes, opts.device);
    let Some((start, mut progress)) = resume(store, opts, (in_dim, classes), &mut trainer, log)?
    else {
        return Ok(Vec::new());
    };
    let mut results = Vec::new();
    for epoch in start..opts.epochs {
        let mut r = match &supervision {
            Supervision::Node {
                labels,
                splits,
                narrowed,
            } => train_epoch(
                store,
                opts,
                &mut trainer,
                labels,
                (&splits.train, *narrowed),
                epoch,
            )?,
            Supervision::Link {
                positives,
                undirected,
                ..
            } => link_epoch(store, opts, &mut trainer, (positives, *undirected), epoch)?,
        };
        if opts.eval_every > 0 && ((epoch + 1) % opts.eval_every == 0 || epoch + 1 == opts.epochs) {
            let mut eval = opts.data.clone();
            eval.epoch = epoch;
            if let Some(f) = &opts.eval_fanouts {
                eval.fanouts = f.clone();
            }
            match &supervision {
                Supervision::Node { labels, splits, .. } => {
                    r.valid_acc =
                        evaluate(store, &trainer, &eval, labels, ("valid", &splits.valid))?;
                    r.test_acc = evaluate(store, &trainer, &eval, labels, ("test", &splits.test))?;
                }
                Supervision::Link {
                    splits: Some(splits),
                    neg_range,
                    ..
                } => {
                    let range = neg_range.clone();
                    r.valid_link =
                        evaluate_link(store, &trainer, &eval, (&splits.valid, range.clone()))?;
                    r.test_link = evaluate_link(store, &trainer, &eval, (&splits.test, range))?;
                    r.valid_acc = r.valid_link.as_ref().and_then(LinkMetrics::selection);
                    r.test_acc = r.test_link.as_ref().and_then(LinkMetrics::selection);
                }
                Supervision::Link { splits: None, .. } => {}
            }
            record_evaluation(&mut progress, &r);
        }
        if opts
            .early_stop
            .is_some_and(|n| progress.evals_since_best >= n)
        {
            progress.stopped_early = true;
        }
        progress.complete = progress.stopped_early || epoch + 1 == opts.epochs;
        log_epoch(log, &r, supervision.metric())?;
        if let Some(dir) = &opts.checkpoint {
            save_checkpoint(
                dir,
                &trainer,
                &checkpoint_meta(store, opts, in_dim, classes, epoch, &progress)?,
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
        let metric = supervision.metric();
        log_line(
            log,
            &format!(
                "best epoch {b}: valid {metric} {v:.4}, test {metric} {}{}",
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

/// What the epochs learn from: the nodes' labels and the node splits, or
/// the training edges and the edge splits.
enum Supervision {
    Node {
        labels: Vec<i32>,
        splits: crate::format::tables::Splits,
        /// The training split is its target type's part (see [`Target`]).
        narrowed: bool,
    },
    Link {
        /// The training edges (the data path's link epochs draw on them).
        positives: Arc<LinkPositives>,
        /// Each pair is one positive, and a batch leaves both directions
        /// of its edges out of its neighbourhoods.
        undirected: bool,
        /// None: the store has no held-out edges (no evaluation).
        splits: Option<Box<EdgeSplits>>,
        /// The nodes held-out edges without negatives draw theirs from
        /// (a relation's destination type, else every node).
        neg_range: std::ops::Range<u64>,
    },
}

impl Supervision {
    fn of(store: &Store, opts: &TrainOptions) -> Result<Self> {
        if let Task::Link(_) = opts.model.task {
            let splits = store.edge_splits()?;
            let undirected = opts.link.undirected || splits.as_ref().is_some_and(|s| s.undirected);
            let relation = crate::sample::link::link_relation(
                store,
                opts.target_relation.as_deref(),
                splits.as_ref(),
            )?;
            let (positives, splits) = match relation {
                None => (training_edges(store, splits.as_ref(), undirected)?, splits),
                Some(r) => {
                    let positives = LinkPositives::of_relation(store, r, undirected)?;
                    (positives, splits.map(|s| relation_splits(store, r, s)))
                }
            };
            let neg_range = positives.neg_range.clone().unwrap_or(0..store.num_nodes());
            if positives.is_empty() {
                return Err(Error::invalid_argument(format!(
                    "{} has no training edges to learn links from",
                    store.dir().display()
                )));
            }
            return Ok(Supervision::Link {
                positives: Arc::new(positives),
                undirected,
                splits: splits.map(Box::new),
                neg_range,
            });
        }
        let labels = store.labels()?.ok_or_else(|| {
            Error::invalid_argument(format!(
                "{} has no labels to train on",
                store.dir().display()
            ))
        })?;
        let target = Target::choose(store, &labels, opts.target_type.as_deref())?;
        let all_splits = store.splits()?.unwrap_or_default();
        let narrowed = target.narrows(&all_splits);
        let splits = target.splits(all_splits);
        Ok(Supervision::Node {
            labels,
            splits,
            narrowed,
        })
    }

    /// The name of the validation score the best epoch is chosen by.
    fn metric(&self) -> &'static str {
        match self {
            Supervision::Node { .. } => "acc",
            Supervision::Link {
                splits: Some(s), ..
            } if s.valid.negatives.as_ref().is_some_and(|n| n.k > 1) => "MRR",
            Supervision::Link { .. } => "AUC",
        }
    }
}

/// Refuses options that disagree with each other.
fn check_options(store: &Store, opts: &TrainOptions) -> Result<()> {
    opts.model.model_spec()?;
    if opts.model.layers != opts.data.fanouts.num_hops() {
        return Err(Error::invalid_argument(format!(
            "the model has {} layers but --fanouts gives {} hops",
            opts.model.layers,
            opts.data.fanouts.num_hops()
        )));
    }
    opts.data.fanouts.resolve(store.schema())?;
    if let Some(f) = &opts.eval_fanouts {
        if f.num_hops() != opts.model.layers {
            return Err(Error::invalid_argument(format!(
                "the model has {} layers but --eval-fanouts gives {} hops",
                opts.model.layers,
                f.num_hops()
            )));
        }
        f.resolve(store.schema()).map_err(|e| {
            Error::invalid_argument(e.to_string().replace("--fanouts", "--eval-fanouts"))
        })?;
    }
    if opts.model.task != Task::Node && opts.link.neg == 0 {
        return Err(Error::invalid_argument(
            "--neg must be at least 1: link prediction learns from negatives",
        ));
    }
    if opts.resume && opts.checkpoint.is_none() {
        return Err(Error::invalid_argument("--resume needs --checkpoint DIR"));
    }
    Ok(())
}

/// Prepares the checkpoint directory and, with `--resume`, loads its
/// latest checkpoint into `trainer`: the first epoch to train and the
/// progress so far, or None when the run there is already complete.
fn resume(
    store: &Store,
    opts: &TrainOptions,
    (in_dim, classes): (i64, i64),
    trainer: &mut Trainer,
    log: &mut dyn Write,
) -> Result<Option<(u64, Progress)>> {
    let progress = Progress::default();
    let Some(dir) = &opts.checkpoint else {
        return Ok(Some((0, progress)));
    };
    remove_stale_temporaries(dir);
    if !opts.resume {
        prepare_fresh_dir(dir, opts.overwrite)?;
        return Ok(Some((0, progress)));
    }
    let Some(stem) = latest_stem(dir)? else {
        log_line(
            log,
            &format!(
                "no checkpoint in {} yet: starting at epoch 0",
                dir.display()
            ),
        )?;
        return Ok(Some((0, progress)));
    };
    let expected = checkpoint_meta(store, opts, in_dim, classes, 0, &progress)?;
    let must_match = [&MODEL_KEYS[..], &STORE_KEYS, &REPLAY_KEYS].concat();
    // Validated by `load_stem`: an epoch number and typed progress.
    let meta = load_stem(dir, &stem, trainer, &expected, &must_match)?;
    let done = meta.epoch;
    let mut progress = meta.progress;
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
        return Ok(None);
    }
    progress.complete = false;
    log_line(
        log,
        &format!("resumed from {} after epoch {done}{best}", dir.display()),
    )?;
    Ok(Some((done + 1, progress)))
}

/// One training pass over the training seeds `train` (the store's split, or
/// its target type's part when `narrowed`).
fn train_epoch(
    store: &Store,
    opts: &TrainOptions,
    trainer: &mut Trainer,
    labels: &[i32],
    (train, narrowed): (&[u64], bool),
    epoch: u64,
) -> Result<EpochResult> {
    // Dropout draws depend only on (seed, epoch): resumed runs match.
    tch::manual_seed(crate::rng::stream_seed(opts.model.seed, 21, epoch) as i64 & i64::MAX);
    let lr = opts.lr_schedule.lr(opts.model.lr, epoch, opts.epochs);
    trainer.set_lr(lr);
    let mut data = opts.data.clone();
    data.epoch = epoch;
    // The store's training split, shuffled per epoch by the sampler; on a
    // typed store with several labelled types, its target type's part,
    // shuffled the same way.
    data.seed_nodes =
        narrowed.then(|| crate::sample::sampler::epoch_order(train, data.seed, epoch));
    let mut total = StepStats::default();
    let mut batch_losses = Vec::new();
    let mut seeds = 0u64;
    let started = std::time::Instant::now();
    // Batches, running loss, seeds/s and the time left, on a terminal.
    let bar = Bar::new(
        data.num_batches(train.len()),
        &format!("epoch {epoch}"),
        false,
    );
    let report = pass(store, &data, labels, &mut |b| {
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
    Ok(epoch_result(
        epoch,
        &total,
        report,
        batch_losses,
        (started, seeds),
        lr,
    ))
}

/// One training pass over the training edges in the data path's link
/// batches.
fn link_epoch(
    store: &Store,
    opts: &TrainOptions,
    trainer: &mut Trainer,
    (positives, undirected): (&Arc<LinkPositives>, bool),
    epoch: u64,
) -> Result<EpochResult> {
    tch::manual_seed(crate::rng::stream_seed(opts.model.seed, 21, epoch) as i64 & i64::MAX);
    let lr = opts.lr_schedule.lr(opts.model.lr, epoch, opts.epochs);
    trainer.set_lr(lr);
    let mut data = opts.data.clone();
    data.epoch = epoch;
    let mut total = StepStats::default();
    let mut batch_losses = Vec::new();
    let started = std::time::Instant::now();
    let bar = Bar::new(
        positives.len().div_ceil(data.batch_size.max(1)) as u64,
        &format!("epoch {epoch}"),
        false,
    );
    let report = link_train_pass(
        store,
        &data,
        trainer,
        (
            positives,
            LinkTask {
                mode: NegMode::Binary,
                undirected,
                ..opts.link
            },
            opts.neg_sampling,
        ),
        &mut |s| {
            batch_losses.push(s.mean_loss());
            total.add(s);
            bar.inc_with_message(|| {
                format!(
                    "loss {:.4}, {}",
                    total.mean_loss(),
                    human_rate(
                        total.labelled as f64 / started.elapsed().as_secs_f64().max(1e-9),
                        "pairs"
                    )
                )
            });
        },
    )?;
    bar.finish_and_clear();
    Ok(epoch_result(
        epoch,
        &total,
        report,
        batch_losses,
        (started, total.labelled),
        lr,
    ))
}

/// Keeps the best validation accuracy (and the test accuracy with it) in
/// `progress`, counting the evaluations since.
/// A training epoch's result from its summed steps `total`, the data
/// path's `report`, each batch's loss, when it started and the seeds (or
/// pairs) it trained on, and its learning rate; evaluation fields empty.
fn epoch_result(
    epoch: u64,
    total: &StepStats,
    report: EpochReport,
    batch_losses: Vec<f64>,
    (started, seeds): (Instant, u64),
    lr: f64,
) -> EpochResult {
    EpochResult {
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
    }
}

fn record_evaluation(progress: &mut Progress, r: &EpochResult) {
    if let Some(v) = r.valid_acc {
        if progress.best_valid.is_none_or(|b| v > b) {
            progress.best_valid = Some(v);
            progress.best_test = r.test_acc;
            progress.best_epoch = Some(r.epoch);
            progress.evals_since_best = 0;
        } else {
            progress.evals_since_best += 1;
        }
    }
}

/// The epoch's log line.
fn log_epoch(log: &mut dyn Write, r: &EpochResult, metric: &str) -> Result<()> {
    let t = &r.times;
    let fmt = |a: Option<f64>| a.map_or("-".to_string(), |x| format!("{:.4}", x));
    // Link training counts pairs (positives and negatives), not seeds.
    let (train, unit) = if metric == "acc" {
        ("train acc", "seeds")
    } else {
        ("train pair acc", "pairs")
    };
    writeln!(
        log,
        "epoch {}: loss {:.4}, {train} {:.4}, valid {metric} {}, test {metric} {} | {:.1}s, {}, feature-cache miss ratio {:.3}{} | sample {:.2}s changeset {:.2}s cache init {:.2}s gather {:.2}s update {:.2}s transfer {:.2}s compute {:.2}s",
        r.epoch,
        r.loss,
        r.train_acc,
        fmt(r.valid_acc),
        fmt(r.test_acc),
        r.wall.as_secs_f64(),
        human_rate(r.seeds as f64 / r.wall.as_secs_f64().max(1e-9), unit),
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
    for (what, m) in [("valid", &r.valid_link), ("test", &r.test_link)] {
        if let Some(m) = m {
            log_line(log, &format!("  {what}: {}", m.describe()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::exec::epoch::BatchStat;

    #[test]
    fn an_epochs_json_has_the_keys_json_wrote() {
        let r = EpochResult {
            epoch: 3,
            loss: 1.25,
            train_acc: 0.5,
            valid_acc: Some(0.75),
            test_acc: None,
            times: StageTimes {
                data: EpochReport {
                    batches: vec![BatchStat {
                        batch: 0,
                        hits: 3,
                        misses: 1,
                        checksum: 9,
                    }],
                    sample: Duration::from_millis(500),
                    gather: Duration::from_millis(250),
                    neighbor_hit_ratio: Some(0.5),
                    ..EpochReport::default()
                },
                transfer: Duration::from_millis(125),
                compute: Duration::from_secs(2),
            },
            batch_losses: vec![1.25],
            wall: Duration::from_secs(4),
            seeds: 1000,
            lr: 0.01,
            valid_link: None,
            test_link: None,
        };
        let want = serde_json::json!({
            "epoch": 3, "loss": 1.25, "train_acc": 0.5,
            "seeds_per_s": 250.0, "wall_seconds": 4.0,
            "neighbor_cache_hit_ratio": 0.5,
            "valid_acc": 0.75, "test_acc": null, "lr": 0.01,
            "seconds": {
                "sample": 0.5, "changeset": 0.0, "load_runs": 0.0, "cache_init": 0.0,
                "gather": 0.25, "cache_update": 0.0, "transfer": 0.125, "compute": 2.0,
            },
            "feature_cache": {"hits": 3, "misses": 1, "miss_ratio": 0.25},
        });
        assert_eq!(r.to_json(), want);
    }
}
