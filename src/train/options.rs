//! What a training run is asked to do: the model and optimizer, the data
//! path, the epochs, evaluation, checkpoints and the learning-rate
//! schedule.

use std::path::PathBuf;

use serde::Serialize;
use tch::Device;

use crate::error::{Error, Result};
use crate::exec::epoch::EpochConfig;
use crate::train::trainer::TrainConfig;

/// Learning-rate schedule over the epochs. Serialized as the checkpoint
/// metadata's `lr_schedule`: `{"kind": NAME}`, with `every` and `gamma`
/// for `step`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
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
    pub eval_fanouts: Option<crate::sample::fanouts::Fanouts>,
    /// Stop after this many evaluations without a better validation
    /// accuracy.
    pub early_stop: Option<u64>,
    /// Compute device.
    pub device: Device,
    /// The node type to classify on a typed store (None: the only
    /// labelled type; see [`crate::train::target`]).
    pub target_type: Option<String>,
    /// Link prediction: the training batches' task (`--neg` negatives
    /// per positive edge, their `--negatives` source, the `--edge-order`,
    /// the `--exclude`d edges; its `undirected` is implied too by a store
    /// whose edge splits are: each pair is one training positive, and a
    /// batch leaves both directions of its edges out of its
    /// neighbourhoods). Evaluation ignores it.
    pub link: crate::sample::link::LinkTask,
    /// Link prediction: how the training negatives are paired.
    pub neg_sampling: NegSampling,
    /// Link prediction on one relation `src:rel:dst` of a typed store
    /// (`--target-relation`): its edges are the positives (and the
    /// held-out edges evaluated), negatives its destination type's nodes.
    pub target_relation: Option<String>,
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
            target_type: None,
            link: crate::sample::link::LinkTask::default(),
            neg_sampling: NegSampling::Corrupt,
            target_relation: None,
        }
    }
}

/// How a link batch draws its negatives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NegSampling {
    /// The positive's source with a uniformly drawn destination (PyG's
    /// and DGL's link samplers, OGB's evaluation negatives).
    #[default]
    Corrupt,
    /// A uniformly drawn source and destination (GAE's training
    /// negatives, drawn as its evaluation negatives are).
    Random,
}

impl NegSampling {
    /// Parses `corrupt` or `random`.
    pub fn parse(s: &str) -> Result<Self> {
        Error::parse_name(
            s,
            "negative sampling",
            &[NegSampling::Corrupt, NegSampling::Random],
            NegSampling::name,
        )
    }

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            NegSampling::Corrupt => "corrupt",
            NegSampling::Random => "random",
        }
    }
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
    fn lr_schedules_serialize_as_the_metadata_records_them() {
        let json = |s: LrSchedule| serde_json::to_value(s).unwrap();
        assert_eq!(
            json(LrSchedule::Constant),
            serde_json::json!({"kind": "constant"})
        );
        assert_eq!(
            json(LrSchedule::Cosine),
            serde_json::json!({"kind": "cosine"})
        );
        assert_eq!(
            json(LrSchedule::Step {
                every: 3,
                gamma: 0.5
            }),
            serde_json::json!({"kind": "step", "every": 3, "gamma": 0.5})
        );
    }
}
