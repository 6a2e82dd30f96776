//! Helpers of the training tests (`train.rs`, `train_relational.rs`): a
//! small run's options, a trainer's parameters, a store's dense graph, the
//! full-neighbourhood data path and a tensor comparison.
#![allow(dead_code)]

use ginex::internals::cache::Policy;
use ginex::internals::exec::config::{CacheConfig, GinexOptions};
use ginex::internals::exec::epoch::EpochConfig;
use ginex::internals::train::model::ModelKind;
use ginex::internals::train::options::{LrSchedule, TrainOptions};
use ginex::internals::train::tch::{self, Tensor};
use ginex::internals::train::trainer::{TrainConfig, Trainer};
use ginex::Store;

/// The options of a small training run on `dir`: `model` over `policy`
/// for `epochs`, checkpointing to `dir/ckpt`.
pub fn options(
    dir: &std::path::Path,
    model: ModelKind,
    policy: Policy,
    epochs: u64,
    ckpt: &str,
) -> TrainOptions {
    TrainOptions {
        model: TrainConfig {
            model,
            hidden: 32,
            dropout: 0.3,
            lr: 0.01,
            layers: 2,
            seed: 1,
            ..TrainConfig::default()
        },
        data: EpochConfig {
            cache: CacheConfig::new(
                policy,
                GinexOptions {
                    superbatch: 6,
                    ..GinexOptions::default()
                },
                1,
            ),
            feature_cache_rows: 500,
            batch_size: 200,
            fanouts: vec![8, 4].into(),
            seed: 1,
            workers: 2,
            run_dir: dir.join("runs"),
            ..EpochConfig::default()
        },
        epochs,
        eval_every: 1,
        checkpoint: Some(dir.join(ckpt)),
        resume: false,
        overwrite: false,
        lr_schedule: LrSchedule::Constant,
        eval_fanouts: None,
        early_stop: None,
        device: tch::Device::Cpu,
        target_type: None,
        link: Default::default(),
        neg_sampling: Default::default(),
        target_relation: None,
    }
}

/// The model's named parameters (`layer0.root.weight`, …) on the CPU.
pub fn params(t: &Trainer) -> std::collections::HashMap<String, Tensor> {
    t.state()
        .into_iter()
        .filter_map(|(n, v)| n.strip_prefix("model.").map(|n| (n.to_string(), v)))
        .collect()
}

/// Dense inputs of the whole graph: features `X` (n × dim) and the
/// in-adjacency `A` (`A[i][j] = 1` when `j -> i`).
pub fn dense_graph(store: &Store) -> (Tensor, Tensor) {
    let n = store.num_nodes() as usize;
    let dim = store.feature_dim() as usize;
    let mut x = vec![0f32; n * dim];
    let ids: Vec<u64> = (0..n as u64).collect();
    store.read_feature_rows_f32(&ids, &mut x).unwrap();
    let mut a = vec![0f32; n * n];
    for i in 0..n {
        for j in store.in_neighbors(i as u64).unwrap() {
            a[i * n + j as usize] = 1.0;
        }
    }
    (
        Tensor::from_slice(&x).view([n as i64, dim as i64]),
        Tensor::from_slice(&a).view([n as i64, n as i64]),
    )
}

/// Full fanouts over batches of 37, no cache: every in-neighbour of
/// every node, as the dense references use them.
pub fn full_data(dir: &std::path::Path) -> EpochConfig {
    let mut d = options(dir, ModelKind::Gcn, Policy::None, 1, "unused").data;
    d.fanouts = vec![-1, -1].into();
    d.batch_size = 37;
    d
}

/// The largest absolute difference between `a` and `b` (taken in
/// `b`'s shape).
pub fn max_abs_diff(a: &[f32], b: &Tensor) -> f64 {
    let got = Tensor::from_slice(a).view(b.size().as_slice());
    (got - b).abs().max().double_value(&[])
}
