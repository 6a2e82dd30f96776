//! Train a two-layer GraphSAGE (mean aggregation + root weight) on a
//! `Loader`'s batches with tch, through ginex's public API only.
//!
//! ```text
//! export GINEX_VENV=$PWD/.venv; eval "$(bash tools/setup-libtorch.sh --env)"
//! cargo run -p ginex --features train --example tch_sage
//! ```
//!
//! The store is generated in a temporary directory. Each batch becomes
//! tensors: features (`ids.len() × dim`), and per hop (input layer first)
//! the edge lists in local indices; layer `l` computes, for the
//! `hops[l].num_dst` targets, `W_root · h[target] + W_neigh · mean(h[sources])`.
//! The seeds are the last layer's targets; their labels drive the loss.

use ginex::{Batch, Loader, Split, Store};
use tch::nn::{self, Module, OptimizerConfig};
use tch::{Device, Kind, Tensor};

struct Layer {
    root: nn::Linear,
    neigh: nn::Linear,
}

struct Sage {
    layers: Vec<Layer>,
}

impl Sage {
    fn new(p: &nn::Path, dims: &[i64]) -> Sage {
        let layers = dims
            .windows(2)
            .enumerate()
            .map(|(i, w)| Layer {
                root: nn::linear(p / format!("root{i}"), w[0], w[1], Default::default()),
                neigh: nn::linear(
                    p / format!("neigh{i}"),
                    w[0],
                    w[1],
                    nn::LinearConfig {
                        bias: false,
                        ..Default::default()
                    },
                ),
            })
            .collect();
        Sage { layers }
    }

    /// Logits of the seeds of `batch`.
    fn forward(&self, batch: &Batch, train: bool) -> Tensor {
        let rows = batch.rows_f32();
        let mut h = Tensor::from_slice(&rows).view([batch.ids.len() as i64, batch.dim as i64]);
        for (l, (hop, layer)) in batch.hops.iter().zip(&self.layers).enumerate() {
            let src: Vec<i64> = hop.src.iter().map(|&s| i64::from(s)).collect();
            let dst: Vec<i64> = hop.dst.iter().map(|&d| i64::from(d)).collect();
            let (src, dst) = (Tensor::from_slice(&src), Tensor::from_slice(&dst));
            let n = hop.num_dst as i64;
            let width = h.size()[1];
            let sum = Tensor::zeros([n, width], (Kind::Float, Device::Cpu)).index_add(
                0,
                &dst,
                &h.index_select(0, &src),
            );
            let deg = Tensor::zeros([n], (Kind::Float, Device::Cpu))
                .index_add(
                    0,
                    &dst,
                    &Tensor::ones([src.size()[0]], (Kind::Float, Device::Cpu)),
                )
                .clamp_min(1.0)
                .unsqueeze(1);
            let mean = sum / deg;
            let mut out = layer.root.forward(&h.narrow(0, 0, n)) + layer.neigh.forward(&mean);
            if l + 1 < self.layers.len() {
                out = out.relu().dropout(0.5, train);
            }
            h = out;
        }
        h.narrow(0, 0, batch.num_seeds as i64)
    }
}

fn loader(store: &Store, split: Split, epoch: u64) -> ginex::Result<Loader> {
    Loader::builder(store)
        .fanouts([10, 10])
        .batch_size(256)
        .memory("512MiB")
        .split(split)
        .seed(0)
        .epoch(epoch)
        .build()
}

/// Labelled seeds of `batch` as (positions, labels) tensors.
fn targets(batch: &Batch) -> (Tensor, Tensor) {
    let labels = batch.labels.as_deref().unwrap_or_default();
    let keep: Vec<i64> = (0..labels.len() as i64)
        .filter(|&i| labels[i as usize] >= 0)
        .collect();
    let y: Vec<i64> = keep
        .iter()
        .map(|&i| i64::from(labels[i as usize]))
        .collect();
    (Tensor::from_slice(&keep), Tensor::from_slice(&y))
}

fn accuracy(store: &Store, model: &Sage, split: Split) -> ginex::Result<f64> {
    let (mut right, mut total) = (0i64, 0i64);
    for batch in loader(store, split, 0)? {
        let batch = batch?;
        let (keep, y) = targets(&batch);
        let pred = tch::no_grad(|| model.forward(&batch, false))
            .index_select(0, &keep)
            .argmax(1, false);
        right += pred.eq_tensor(&y).sum(Kind::Int64).int64_value(&[]);
        total += y.size()[0];
    }
    Ok(right as f64 / total.max(1) as f64)
}

fn main() -> ginex::Result<()> {
    let tmp = tempfile::tempdir().map_err(|e| ginex::Error::io("create", "a temp dir", e))?;
    let path = tmp.path().join("store");
    let params = ginex::SynthParams {
        nodes: 20_000,
        avg_degree: 12.0,
        dim: 32,
        classes: 8,
        feature_noise: 2.0,
        seed: 1,
        split: [0.3, 0.1, 0.1],
        ..Default::default()
    };
    ginex::generate_store(&params, &path, &ginex::NoProgress)?;
    let store = Store::open(&path)?;
    tch::manual_seed(0);
    let vs = nn::VarStore::new(Device::Cpu);
    let dims = [store.feature_dim() as i64, 64, store.num_classes() as i64];
    let model = Sage::new(&vs.root(), &dims);
    let mut opt = nn::Adam::default()
        .build(&vs, 0.01)
        .map_err(|e| ginex::Error::invalid_argument(format!("optimizer: {e}")))?;
    for epoch in 0..4 {
        let (mut loss_sum, mut steps) = (0.0, 0);
        let mut train = loader(&store, Split::Train, epoch)?;
        for batch in &mut train {
            let batch = batch?;
            let (keep, y) = targets(&batch);
            let logits = model.forward(&batch, true).index_select(0, &keep);
            let loss = logits.cross_entropy_for_logits(&y);
            opt.backward_step(&loss);
            loss_sum += loss.double_value(&[]);
            steps += 1;
        }
        let r = train.report().expect("the epoch ended");
        println!(
            "epoch {epoch}: loss {:.4}, valid accuracy {:.3}, feature-cache miss ratio {:.3}",
            loss_sum / f64::from(steps.max(1)),
            accuracy(&store, &model, Split::Valid)?,
            r.miss_ratio()
        );
    }
    println!(
        "test accuracy {:.3}",
        accuracy(&store, &model, Split::Test)?
    );
    Ok(())
}
