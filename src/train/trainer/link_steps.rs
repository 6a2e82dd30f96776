//! The trainer's link-prediction steps: the supervision of a link batch
//! ([`LinkPairs`]), its pairs' logits through the task's decoder, a
//! training and an evaluation step under binary cross-entropy, and the
//! scores of given embeddings.

use tch::{Device, Kind, Tensor};

use super::{StepStats, TrainBatch, Trainer};
use crate::error::{Error, Result};
use crate::train::decoder::{bce_loss, Decoder};

/// The supervision of a link batch in PyG's binary form: pairs of the
/// batch's seeds (local indices into `ids[..num_seeds]`), each labelled 1
/// (a positive edge) or 0 (a negative).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LinkPairs {
    /// Local index of each pair's source.
    pub src: Vec<i64>,
    /// Local index of each pair's destination.
    pub dst: Vec<i64>,
    /// 1.0 for a positive, 0.0 for a negative.
    pub label: Vec<f32>,
}

impl LinkPairs {
    /// The binary form `(edge_label_index rows, edge_label)` of a link
    /// batch's labels (`LinkLabels::binary`).
    pub fn from_binary((src, dst, label): (Vec<u32>, Vec<u32>, Vec<f32>)) -> Self {
        LinkPairs {
            src: src.into_iter().map(i64::from).collect(),
            dst: dst.into_iter().map(i64::from).collect(),
            label,
        }
    }

    /// Pairs.
    pub fn len(&self) -> usize {
        self.label.len()
    }

    /// No pairs.
    pub fn is_empty(&self) -> bool {
        self.label.is_empty()
    }
}

impl Trainer {
    /// The decoder of a link task.
    fn decoder(&self) -> Result<&Decoder> {
        self.decoder.as_ref().ok_or_else(|| {
            Error::internal("a link step on a node-classification model (no decoder)")
        })
    }

    /// The logits of `pairs` of `batch`'s seeds and their labels.
    fn pair_logits(
        &self,
        batch: &TrainBatch,
        pairs: &LinkPairs,
        train: bool,
    ) -> Result<(Tensor, Tensor)> {
        let seeds = batch.hops.last().map_or(0, |h| h.num_dst) as i64;
        if pairs.src.len() != pairs.len() || pairs.dst.len() != pairs.len() {
            return Err(Error::internal(format!(
                "link pairs: {} sources, {} destinations, {} labels",
                pairs.src.len(),
                pairs.dst.len(),
                pairs.len()
            )));
        }
        if let Some(&i) = pairs
            .src
            .iter()
            .chain(&pairs.dst)
            .find(|&&i| !(0..seeds).contains(&i))
        {
            return Err(Error::internal(format!(
                "link pairs: local index {i} is not one of the batch's {seeds} seeds"
            )));
        }
        let (x, hops) = self.inputs(batch)?;
        let z = self.model.forward(&x, &hops, train)?;
        let at = |v: &[i64]| Tensor::from_slice(v).to_device(self.device);
        let logits = self.decoder()?.score(
            &z.index_select(0, &at(&pairs.src)),
            &z.index_select(0, &at(&pairs.dst)),
            train,
        )?;
        Ok((
            logits,
            Tensor::from_slice(&pairs.label).to_device(self.device),
        ))
    }

    /// A link batch: forward, binary cross-entropy over its positive and
    /// negative `pairs`, backward, Adam update. `correct` counts the pairs
    /// on the right side of logit 0.
    pub fn link_train_step(&mut self, batch: &TrainBatch, pairs: &LinkPairs) -> Result<StepStats> {
        if pairs.is_empty() {
            return Ok(StepStats::default());
        }
        let started = std::time::Instant::now();
        let (logits, labels) = self.pair_logits(batch, pairs, true)?;
        let loss = bce_loss(&logits, &labels);
        self.optimise(&loss);
        Ok(StepStats {
            loss_sum: loss.double_value(&[]) * pairs.len() as f64,
            correct: pair_correct(&logits, &labels),
            labelled: pairs.len() as u64,
            compute: started.elapsed(),
            ..StepStats::default()
        })
    }

    /// As [`link_train_step`](Self::link_train_step) without updating
    /// (dropout off).
    pub fn link_eval_step(&self, batch: &TrainBatch, pairs: &LinkPairs) -> Result<StepStats> {
        if pairs.is_empty() {
            return Ok(StepStats::default());
        }
        tch::no_grad(|| {
            let (logits, labels) = self.pair_logits(batch, pairs, false)?;
            Ok(StepStats {
                loss_sum: bce_loss(&logits, &labels).double_value(&[]) * pairs.len() as f64,
                correct: pair_correct(&logits, &labels),
                labelled: pairs.len() as u64,
                ..StepStats::default()
            })
        })
    }

    /// The decoder's logits of pairs of node embeddings: `src` and `dst`
    /// hold `width` values per pair (the final-layer outputs of each pair's
    /// nodes, as [`predict`](Self::predict) or layer-wise inference give
    /// them).
    pub fn score_embeddings(&self, src: &[f32], dst: &[f32], width: usize) -> Result<Vec<f32>> {
        if src.len() != dst.len() || width == 0 || src.len() % width != 0 {
            return Err(Error::internal(format!(
                "scoring pairs: {} and {} embedding values for width {width}",
                src.len(),
                dst.len()
            )));
        }
        let rows = (src.len() / width) as i64;
        let t = |v: &[f32]| {
            Tensor::from_slice(v)
                .view([rows, width as i64])
                .to_device(self.device)
        };
        tch::no_grad(|| {
            let scores = self
                .decoder()?
                .score(&t(src), &t(dst), false)?
                .to_device(Device::Cpu)
                .contiguous();
            Vec::<f32>::try_from(scores)
                .map_err(|e| Error::internal(format!("scores to host: {e}")))
        })
    }
}

/// How many pair logits fall on their label's side of 0.
fn pair_correct(logits: &Tensor, labels: &Tensor) -> u64 {
    logits
        .gt(0.0)
        .to_kind(Kind::Float)
        .eq_tensor(labels)
        .sum(Kind::Int64)
        .int64_value(&[]) as u64
}
