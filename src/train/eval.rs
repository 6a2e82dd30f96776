//! Evaluation and prediction through the data path: accuracy on a split,
//! final-layer outputs for any nodes, and `predict` with the checkpoint
//! it uses.

use crate::checkpoint_meta::Progress;
use crate::error::{Error, Result};
use crate::exec::epoch::EpochConfig;
use crate::progress::{human_rate, Bar};
use crate::store::Store;
use crate::train::checkpoint::{
    checkpoint_meta, load_stem, predict_checkpoint, MODEL_KEYS, STORE_KEYS,
};
use crate::train::layerwise::{
    layerwise_logits_with, LayerStats, LayerwiseMethod, LayerwiseOptions,
};
use crate::train::options::TrainOptions;
use crate::train::pass::pass;
use crate::train::trainer::{StepStats, Trainer};

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
pub(crate) fn evaluate(
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

/// Final-layer outputs (logits) for `nodes` with the checkpoint `predict`
/// uses (see [`predict_checkpoint`]), in `nodes` order: `nodes.len() ×
/// classes` values. `opts.model` must match the checkpoint's model shape.
pub fn predict(store: &Store, opts: &TrainOptions, nodes: &[u64]) -> Result<Vec<f32>> {
    let trainer = predict_trainer(store, opts)?;
    logits(store, &trainer, &opts.data, nodes)
}

/// As [`predict`], layer by layer over the whole graph with full
/// neighbourhoods (exact inference, see [`crate::train::layerwise`]);
/// `opts.data`'s fanouts are not used. Also returns each layer's
/// statistics.
pub fn predict_layerwise(
    store: &Store,
    opts: &TrainOptions,
    nodes: &[u64],
    layerwise: &LayerwiseOptions,
    method: LayerwiseMethod,
) -> Result<(Vec<f32>, Vec<LayerStats>)> {
    let trainer = predict_trainer(store, opts)?;
    layerwise_logits_with(store, &trainer, nodes, layerwise, method)
}

/// The model `predict` uses, loaded from `opts.checkpoint` (whose model
/// `opts.model` describes).
pub fn predict_trainer(store: &Store, opts: &TrainOptions) -> Result<Trainer> {
    let in_dim = i64::from(store.feature_dim());
    // A link model's last layer gives embeddings of the hidden width.
    let classes = match opts.model.task {
        crate::train::decoder::Task::Node => i64::from(store.num_classes()),
        crate::train::decoder::Task::Link(_) => opts.model.hidden,
    };
    let dir = opts
        .checkpoint
        .as_ref()
        .ok_or_else(|| Error::invalid_argument("predict needs --checkpoint DIR"))?;
    let model = opts.model.for_store(store)?;
    let mut trainer = Trainer::new(model, in_dim, classes, opts.device);
    let (stem, _) = predict_checkpoint(dir)?;
    let keys = [&MODEL_KEYS[..], &STORE_KEYS].concat();
    load_stem(
        dir,
        &stem,
        &mut trainer,
        &checkpoint_meta(store, opts, in_dim, classes, 0, &Progress::default())?,
        &keys,
    )?;
    Ok(trainer)
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
