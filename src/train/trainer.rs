//! One training step and one evaluation step over a gathered batch, with an
//! Adam optimizer whose state we own, so checkpoints hold the model *and*
//! the optimizer exactly and a resumed run continues bit for bit on CPU.

use std::path::Path;

use tch::{nn, Device, Kind, Tensor};

use crate::error::{Error, Result};
use crate::train::decoder::{Decoder, Task};
use crate::train::model::{Gnn, GnnSpec, Hop, HopTensors, InitKind, ModelKind, ModelSpec};

mod link_steps;
pub use link_steps::LinkPairs;

/// Model and optimizer settings (Ginex's defaults).
#[derive(Debug, Clone)]
pub struct TrainConfig {
    /// Architecture.
    pub model: ModelKind,
    /// Hidden width.
    pub hidden: i64,
    /// Dropout between layers.
    pub dropout: f64,
    /// Adam learning rate.
    pub lr: f64,
    /// Layers (= sampled hops).
    pub layers: usize,
    /// Seed of the parameter initialisation and dropout.
    pub seed: u64,
    /// Weight decay: L2 added to the gradient (Adam, as the reference
    /// implementations) or decoupled (AdamW).
    pub weight_decay: f64,
    /// Adam with L2 or AdamW.
    pub optimizer: OptimizerKind,
    /// Dropout on the input features.
    pub input_dropout: f64,
    /// Weight initialisation (`None`: the model's paper default).
    pub init: Option<InitKind>,
    /// GAT: heads of the hidden layers.
    pub heads: i64,
    /// GAT: heads of the last layer (averaged).
    pub out_heads: i64,
    /// GAT: dropout on attention coefficients.
    pub attn_dropout: f64,
    /// R-GCN, R-SAGE: the destination node type of each relation of the
    /// store (set from its schema by training and prediction, see
    /// [`relation_dst`]); empty: one relation.
    pub relation_dst: Vec<i64>,
    /// Node types whose input rows get a learnable embedding added (by
    /// name; [`TrainConfig::for_store`] finds their id ranges).
    pub embed: Vec<EmbedTable>,
    /// R-GCN: relation weights as mixes of this many shared bases (basis
    /// decomposition); 0: a full weight per relation.
    pub num_bases: usize,
    /// Node classification, or link prediction with a decoder (the last
    /// layer's outputs are then node embeddings).
    pub task: Task,
    /// The architecture's own options (`--model NAME:KEY=VALUE,...`, the
    /// checkpoint document's `options`): see [`TrainConfig::model_spec`].
    /// Empty: its defaults.
    pub model_options: serde_json::Map<String, serde_json::Value>,
}

/// A learnable embedding of one node type: a row per node of the type,
/// added to the type's input features (zero rows for a featureless type
/// given `ginex derive-features --reduce zero`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbedTable {
    /// The node type's name.
    pub name: String,
    /// Its first global id.
    pub offset: u64,
    /// Its node count: the table's rows.
    pub count: u64,
}

/// Most rows of one embedding table: the table, its gradient and Adam's
/// two moments live in memory (16 bytes per value).
pub const MAX_EMBED_ROWS: u64 = 1 << 20;

impl EmbedTable {
    /// The table of the type `name`, its ids not yet looked up
    /// ([`TrainConfig::for_store`] does).
    pub fn named(name: impl Into<String>) -> EmbedTable {
        EmbedTable {
            name: name.into(),
            offset: 0,
            count: 0,
        }
    }
}

impl TrainConfig {
    /// This configuration for `store`: the destination type of each of its
    /// relations ([`relation_dst`]) and the id range of each embedded type.
    /// Refuses embedding on an untyped store, an unknown type, and a type
    /// of more than [`MAX_EMBED_ROWS`] nodes.
    pub fn for_store(&self, store: &crate::store::Store) -> Result<TrainConfig> {
        let embed = self
            .embed
            .iter()
            .map(|e| {
                let schema = store.schema().ok_or_else(|| {
                    Error::invalid_argument(format!(
                        "--embed {}: {} is untyped (it has no node types)",
                        e.name,
                        store.dir().display()
                    ))
                })?;
                let t = schema
                    .type_index(&e.name)
                    .map(|i| &schema.node_types[i])
                    .ok_or_else(|| {
                        let all: Vec<&str> =
                            schema.node_types.iter().map(|t| t.name.as_str()).collect();
                        Error::invalid_argument(format!(
                            "--embed {}: {} has no such node type (its types: {})",
                            e.name,
                            store.dir().display(),
                            all.join(", ")
                        ))
                    })?;
                if t.count > MAX_EMBED_ROWS {
                    return Err(Error::invalid_argument(format!(
                        "--embed {}: {} nodes, more than the {MAX_EMBED_ROWS} an in-memory \
                         embedding takes; derive its features instead \
                         (ginex derive-features --reduce mean)",
                        e.name, t.count
                    )));
                }
                Ok(EmbedTable {
                    name: t.name.clone(),
                    offset: t.offset,
                    count: t.count,
                })
            })
            .collect::<Result<_>>()?;
        Ok(TrainConfig {
            relation_dst: relation_dst(store),
            embed,
            ..self.clone()
        })
    }
}

/// The destination node type of each relation of `store` (empty for an
/// untyped store): what [`TrainConfig::relation_dst`] holds for it.
pub fn relation_dst(store: &crate::store::Store) -> Vec<i64> {
    store.schema().map_or_else(Vec::new, |s| {
        s.relations.iter().map(|r| i64::from(r.dst)).collect()
    })
}

/// The optimizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptimizerKind {
    /// Adam; weight decay is L2 added to the gradient (`torch.optim.Adam`).
    Adam,
    /// AdamW; weight decay is decoupled (`torch.optim.AdamW`).
    AdamW,
}

impl OptimizerKind {
    /// Parses `adam` or `adamw`.
    pub fn parse(s: &str) -> Result<Self> {
        Error::parse_name(
            s,
            "optimizer",
            &[OptimizerKind::Adam, OptimizerKind::AdamW],
            OptimizerKind::name,
        )
    }

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            OptimizerKind::Adam => "adam",
            OptimizerKind::AdamW => "adamw",
        }
    }
}

impl TrainConfig {
    /// The initialisation in effect.
    pub fn init_kind(&self) -> InitKind {
        self.init
            .unwrap_or_else(|| InitKind::default_for(self.model))
    }

    /// The architecture with its options ([`TrainConfig::model_options`]
    /// read by the architecture: an option it does not have, or a value
    /// of the wrong type, is refused).
    pub fn model_spec(&self) -> Result<ModelSpec> {
        ModelSpec::with_options(self.model, &self.model_options)
    }

    /// The model this configuration builds. Options that
    /// [`model_spec`](Self::model_spec) refuses (a run or a prediction
    /// refuses them first) build the architecture's defaults.
    pub fn spec(&self, in_dim: i64, classes: i64) -> GnnSpec {
        GnnSpec {
            model: self
                .model_spec()
                .unwrap_or_else(|_| ModelSpec::default_for(self.model)),
            in_dim,
            hidden: self.hidden,
            classes,
            layers: self.layers,
            dropout: self.dropout,
            input_dropout: self.input_dropout,
            heads: self.heads,
            out_heads: self.out_heads,
            attn_dropout: self.attn_dropout,
            init: self.init_kind(),
            relation_dst: self.relation_dst.clone(),
            num_bases: self.num_bases,
        }
    }
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            model: ModelKind::Sage,
            hidden: 256,
            dropout: 0.5,
            lr: 0.003,
            layers: 3,
            seed: 0,
            weight_decay: 0.0,
            optimizer: OptimizerKind::Adam,
            input_dropout: 0.0,
            init: None,
            heads: 8,
            out_heads: 1,
            attn_dropout: 0.0,
            relation_dst: Vec::new(),
            embed: Vec::new(),
            num_bases: 0,
            task: Task::Node,
            model_options: serde_json::Map::new(),
        }
    }
}

/// A gathered batch ready for the model.
#[derive(Debug, Clone)]
pub struct TrainBatch {
    /// The store id of each row (the embedded types' rows get their
    /// embedding).
    pub ids: Vec<u64>,
    /// Row-major features of every sampled node (`rows × dim`).
    pub features: Vec<f32>,
    /// Feature dimension.
    pub dim: usize,
    /// Hops from the input layer to the seeds.
    pub hops: Vec<Hop>,
    /// Label of each seed, `-1` = missing (skipped by the loss).
    pub labels: Vec<i64>,
    /// GCN's `d̂` (graph in-degree + 1) of every sampled node, in row
    /// order; empty = use the sampled block's degrees.
    pub degrees: Vec<f32>,
    /// A link batch's positive and negative edges over its seeds (the
    /// first rows); None for a node batch.
    pub link: Option<crate::sample::link::LinkLabels>,
}

/// Loss and accuracy of one step.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StepStats {
    /// Summed cross-entropy over labelled seeds.
    pub loss_sum: f64,
    /// Correct predictions among labelled seeds.
    pub correct: u64,
    /// Labelled seeds.
    pub labelled: u64,
    /// Time to build tensors and move them to the device.
    pub transfer: std::time::Duration,
    /// Time of forward, backward and the optimizer step.
    pub compute: std::time::Duration,
}

impl StepStats {
    /// Adds another step's (or pass's) counters and times to these.
    pub fn add(&mut self, s: &StepStats) {
        self.loss_sum += s.loss_sum;
        self.correct += s.correct;
        self.labelled += s.labelled;
        self.transfer += s.transfer;
        self.compute += s.compute;
    }

    /// Mean loss over the labelled seeds (0 when none).
    pub fn mean_loss(&self) -> f64 {
        self.loss_sum / self.labelled.max(1) as f64
    }

    /// Accuracy over the labelled seeds (0 when none).
    pub fn accuracy(&self) -> f64 {
        self.correct as f64 / self.labelled.max(1) as f64
    }
}

const BETA1: f64 = 0.9;
const BETA2: f64 = 0.999;
const EPS: f64 = 1e-8;

/// Model + optimizer on a device.
pub struct Trainer {
    vs: nn::VarStore,
    model: Gnn,
    /// The link task's decoder (None for node classification).
    decoder: Option<Decoder>,
    /// One learnable table per embedded type (rows × input width).
    embeddings: Vec<(EmbedTable, Tensor)>,
    config: TrainConfig,
    device: Device,
    adam_m: Vec<Tensor>,
    adam_v: Vec<Tensor>,
    step: i64,
    lr: f64,
}

impl Trainer {
    /// A fresh model for `in_dim` features and `classes` classes on `device`
    /// (for a link task, `classes` is the width of the node embeddings the
    /// decoder scores).
    pub fn new(config: TrainConfig, in_dim: i64, classes: i64, device: Device) -> Self {
        tch::manual_seed(config.seed as i64);
        let vs = nn::VarStore::new(device);
        let model = Gnn::from_spec(&vs.root(), &config.spec(in_dim, classes));
        let decoder = config.task.decoder().map(|kind| {
            Decoder::new(
                &(vs.root() / "decoder"),
                kind,
                classes,
                config.dropout,
                config.init_kind(),
            )
        });
        let embeddings = config
            .embed
            .iter()
            .map(|e| {
                let init = nn::Init::Randn {
                    mean: 0.0,
                    stdev: 0.1,
                };
                let table = (vs.root() / "embed").var(&e.name, &[e.count as i64, in_dim], init);
                (e.clone(), table)
            })
            .collect();
        let vars = Self::ordered_vars(&vs);
        let adam_m = vars.iter().map(Tensor::zeros_like).collect();
        let adam_v = vars.iter().map(Tensor::zeros_like).collect();
        let lr = config.lr;
        Trainer {
            vs,
            model,
            decoder,
            embeddings,
            config,
            device,
            adam_m,
            adam_v,
            step: 0,
            lr,
        }
    }

    /// The device tensors live on.
    pub fn device(&self) -> Device {
        self.device
    }

    /// The configuration.
    pub fn config(&self) -> &TrainConfig {
        &self.config
    }

    /// Sets the learning rate of the next steps (a schedule's value).
    pub fn set_lr(&mut self, lr: f64) {
        self.lr = lr;
    }

    fn ordered_vars(vs: &nn::VarStore) -> Vec<Tensor> {
        let mut named: Vec<(String, Tensor)> = vs.variables().into_iter().collect();
        named.sort_by(|a, b| a.0.cmp(&b.0));
        named.into_iter().map(|(_, t)| t).collect()
    }

    fn inputs(&self, batch: &TrainBatch) -> Result<(Tensor, Vec<HopTensors>)> {
        let rows = batch.hops.first().map_or(0, |h| h.num_src);
        if batch.features.len() != rows * batch.dim {
            return Err(Error::internal(format!(
                "batch has {} feature values for {rows} rows of {}",
                batch.features.len(),
                batch.dim
            )));
        }
        let x = Tensor::from_slice(&batch.features)
            .view([rows as i64, batch.dim as i64])
            .to_device(self.device);
        let x = self.embedded(x, &batch.ids)?;
        let degrees = (!batch.degrees.is_empty()).then_some(batch.degrees.as_slice());
        let hops = batch
            .hops
            .iter()
            .map(|h| HopTensors::with_degrees(h, degrees, self.device))
            .collect::<Result<Vec<_>>>()?;
        Ok((x, hops))
    }

    /// `x` (one row per id of `ids`) with each embedded type's rows plus
    /// their embedding, in the autograd graph (the tables learn).
    fn embedded(&self, x: Tensor, ids: &[u64]) -> Result<Tensor> {
        if self.embeddings.is_empty() {
            return Ok(x);
        }
        if ids.len() as i64 != x.size()[0] {
            return Err(Error::internal(format!(
                "{} ids for {} input rows",
                ids.len(),
                x.size()[0]
            )));
        }
        let mut x = x;
        for (e, table) in &self.embeddings {
            let (at, rows): (Vec<i64>, Vec<i64>) = ids
                .iter()
                .enumerate()
                .filter(|&(_, &v)| (e.offset..e.offset + e.count).contains(&v))
                .map(|(i, &v)| (i as i64, (v - e.offset) as i64))
                .unzip();
            if at.is_empty() {
                continue;
            }
            let at = Tensor::from_slice(&at).to_device(self.device);
            let rows = table.index_select(0, &Tensor::from_slice(&rows).to_device(self.device));
            x = x.index_add(0, &at, &rows);
        }
        Ok(x)
    }

    fn labelled(&self, batch: &TrainBatch) -> (Tensor, Tensor) {
        let keep: Vec<i64> = batch
            .labels
            .iter()
            .enumerate()
            .filter(|(_, &l)| l >= 0)
            .map(|(i, _)| i as i64)
            .collect();
        let targets: Vec<i64> = keep.iter().map(|&i| batch.labels[i as usize]).collect();
        (
            Tensor::from_slice(&keep).to_device(self.device),
            Tensor::from_slice(&targets).to_device(self.device),
        )
    }

    /// Forward, cross-entropy on labelled seeds, backward, Adam update.
    pub fn train_step(&mut self, batch: &TrainBatch) -> Result<StepStats> {
        let started = std::time::Instant::now();
        let (x, hops) = self.inputs(batch)?;
        let transfer = started.elapsed();
        let started = std::time::Instant::now();
        let Some((chosen, targets, labelled)) = self.scored(batch, &x, &hops, true)? else {
            return Ok(StepStats::default());
        };
        let loss = chosen.cross_entropy_for_logits(&targets);
        self.optimise(&loss);
        let correct = correct(&chosen, &targets);
        Ok(StepStats {
            loss_sum: loss.double_value(&[]) * labelled as f64,
            correct,
            labelled,
            transfer,
            compute: started.elapsed(),
        })
    }

    /// The logits of the labelled seeds, their labels and their count;
    /// None when no seed of the batch is labelled.
    fn scored(
        &self,
        batch: &TrainBatch,
        x: &Tensor,
        hops: &[HopTensors],
        train: bool,
    ) -> Result<Option<(Tensor, Tensor, u64)>> {
        let logits = self.model.forward(x, hops, train)?;
        let (keep, targets) = self.labelled(batch);
        let labelled = targets.size()[0] as u64;
        if labelled == 0 {
            return Ok(None);
        }
        Ok(Some((logits.index_select(0, &keep), targets, labelled)))
    }

    /// Backward from `loss` and one Adam update.
    fn optimise(&mut self, loss: &Tensor) {
        let vars = Self::ordered_vars(&self.vs);
        for v in &vars {
            let mut g = v.grad();
            if g.defined() {
                let _ = g.zero_();
            }
        }
        loss.backward();
        self.adam_update(&vars);
    }

    fn adam_update(&mut self, vars: &[Tensor]) {
        self.step += 1;
        let (lr, t) = (self.lr, self.step as f64);
        let wd = self.config.weight_decay;
        let decoupled = self.config.optimizer == OptimizerKind::AdamW;
        let bc1 = 1.0 - BETA1.powf(t);
        let bc2 = 1.0 - BETA2.powf(t);
        tch::no_grad(|| {
            for ((p, m), v) in vars.iter().zip(&mut self.adam_m).zip(&mut self.adam_v) {
                let mut g = p.grad();
                if !g.defined() {
                    continue;
                }
                if wd != 0.0 {
                    if decoupled {
                        let mut p = p.shallow_clone();
                        let _ = p.g_mul_scalar_(1.0 - lr * wd);
                    } else {
                        g = &g + p * wd;
                    }
                }
                let _ = m.g_mul_scalar_(BETA1).g_add_(&(&g * (1.0 - BETA1)));
                let _ = v.g_mul_scalar_(BETA2).g_add_(&(&g * &g * (1.0 - BETA2)));
                let denom = (&*v / bc2).sqrt() + EPS;
                let update = (&*m / bc1) / denom * lr;
                let mut p = p.shallow_clone();
                let _ = p.g_sub_(&update);
            }
        });
    }

    /// Accuracy on a batch without updating (dropout off).
    pub fn eval_step(&self, batch: &TrainBatch) -> Result<StepStats> {
        tch::no_grad(|| {
            let (x, hops) = self.inputs(batch)?;
            let Some((chosen, targets, labelled)) = self.scored(batch, &x, &hops, false)? else {
                return Ok(StepStats::default());
            };
            let loss = chosen.cross_entropy_for_logits(&targets).double_value(&[]);
            Ok(StepStats {
                loss_sum: loss * labelled as f64,
                correct: correct(&chosen, &targets),
                labelled,
                ..StepStats::default()
            })
        })
    }

    /// Final-layer outputs (logits) of the seeds.
    pub fn predict(&self, batch: &TrainBatch) -> Result<Vec<f32>> {
        tch::no_grad(|| {
            let (x, hops) = self.inputs(batch)?;
            let logits = self
                .model
                .forward(&x, &hops, false)?
                .to_device(Device::Cpu)
                .contiguous();
            Vec::<f32>::try_from(logits.view([-1]))
                .map_err(|e| Error::internal(format!("logits to host: {e}")))
        })
    }

    /// Number of layers of the model.
    pub fn num_layers(&self) -> usize {
        self.model.num_layers()
    }

    /// Layer `i` as a sum over in-edges (see [`Gnn::sum_layer`]); None
    /// also when the model has learned input rows (featureless node
    /// types), which streaming inference does not add.
    pub fn sum_layer(&self, i: usize) -> Option<(crate::train::model::SumLayer, bool)> {
        if !self.embeddings.is_empty() {
            return None;
        }
        self.model.sum_layer(i)
    }

    /// Output width of layer `i` (see [`Gnn::out_width`]).
    pub fn layer_width(&self, i: usize) -> Option<i64> {
        self.model.out_width(i)
    }

    /// Layer `i` alone in evaluation mode: the outputs of `hop`'s
    /// `num_dst` targets (`num_dst × layer_width(i)` values) from the rows
    /// of its sources (`rows`, `num_src × dim`, targets first), with GCN's
    /// `d̂` of each source when given. Layer-wise inference calls this.
    pub fn layer_outputs(
        &self,
        i: usize,
        (ids, rows): (&[u64], &[f32]),
        dim: usize,
        hop: &Hop,
        degrees: Option<&[f32]>,
    ) -> Result<Vec<f32>> {
        if rows.len() != hop.num_src * dim {
            return Err(Error::internal(format!(
                "layer {i}: {} input values for {} rows of {dim}",
                rows.len(),
                hop.num_src
            )));
        }
        tch::no_grad(|| {
            let x = Tensor::from_slice(rows)
                .view([hop.num_src as i64, dim as i64])
                .to_device(self.device);
            let x = if i == 0 { self.embedded(x, ids)? } else { x };
            let hop = HopTensors::with_degrees(hop, degrees, self.device)?;
            let out = self
                .model
                .layer(i, &x, &hop, false)?
                .to_device(Device::Cpu)
                .contiguous();
            Vec::<f32>::try_from(out.view([-1]))
                .map_err(|e| Error::internal(format!("layer outputs to host: {e}")))
        })
    }

    /// Named tensors of the model and optimizer, for checkpoints.
    pub fn state(&self) -> Vec<(String, Tensor)> {
        let mut named: Vec<(String, Tensor)> = self.vs.variables().into_iter().collect();
        named.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out = Vec::new();
        for (i, (name, t)) in named.into_iter().enumerate() {
            out.push((format!("model.{name}"), t.to_device(Device::Cpu)));
            out.push((
                format!("adam_m.{name}"),
                self.adam_m[i].to_device(Device::Cpu),
            ));
            out.push((
                format!("adam_v.{name}"),
                self.adam_v[i].to_device(Device::Cpu),
            ));
        }
        out.push(("adam_step".into(), Tensor::from_slice(&[self.step])));
        out
    }

    /// Saves [`state`](Self::state) to `path` (the caller makes it atomic).
    pub fn save(&self, path: &Path) -> Result<()> {
        let state = self.state();
        let refs: Vec<(&str, &Tensor)> = state.iter().map(|(n, t)| (n.as_str(), t)).collect();
        Tensor::save_multi(&refs, path)
            .map_err(|e| Error::io("write", path, std::io::Error::other(e.to_string())))
    }

    /// Restores a state saved by [`save`](Self::save); refuses a state whose
    /// tensor names or shapes differ from this model's.
    pub fn load(&mut self, path: &Path) -> Result<()> {
        let loaded = Tensor::load_multi(path)
            .map_err(|e| Error::corrupt(path, 0, format!("not a readable checkpoint: {e}")))?;
        let mut by_name: std::collections::HashMap<String, Tensor> = loaded.into_iter().collect();
        let mut take = |name: String, like: &Tensor| -> Result<Tensor> {
            let t = by_name.remove(&name).ok_or_else(|| {
                Error::corrupt(
                    path,
                    0,
                    format!("checkpoint has no tensor {name}: it was saved by another model"),
                )
            })?;
            if t.size() != like.size() {
                return Err(Error::corrupt(
                    path,
                    0,
                    format!(
                        "tensor {name} has shape {:?}, this model needs {:?}",
                        t.size(),
                        like.size()
                    ),
                ));
            }
            Ok(t.to_device(self.device))
        };
        let mut named: Vec<(String, Tensor)> = self.vs.variables().into_iter().collect();
        named.sort_by(|a, b| a.0.cmp(&b.0));
        let mut restored = Vec::new();
        for (i, (name, var)) in named.iter().enumerate() {
            restored.push((var.shallow_clone(), take(format!("model.{name}"), var)?, i));
            self.adam_m[i] = take(format!("adam_m.{name}"), var)?;
            self.adam_v[i] = take(format!("adam_v.{name}"), var)?;
        }
        let step = by_name
            .remove("adam_step")
            .ok_or_else(|| Error::corrupt(path, 0, "checkpoint has no optimizer step"))?;
        tch::no_grad(|| {
            for (mut var, value, _) in restored {
                var.copy_(&value);
            }
        });
        self.step = step.int64_value(&[0]);
        Ok(())
    }
}

/// How many of the logits' argmax equal the targets.
fn correct(logits: &Tensor, targets: &Tensor) -> u64 {
    logits
        .argmax(1, false)
        .eq_tensor(targets)
        .sum(Kind::Int64)
        .int64_value(&[]) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::decoder::DecoderKind;

    /// libtorch's generator is process-global: these tests create models
    /// one at a time.
    static TORCH: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// Two-class toy: the class is the sign of the neighbour mean.
    fn toy_batch(seed: u64) -> TrainBatch {
        let seeds = 32usize;
        let mut features = Vec::new();
        let mut labels = Vec::new();
        let (mut src, mut dst) = (Vec::new(), Vec::new());
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut rnd = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 1000) as f32 / 1000.0 - 0.5
        };
        // Seeds 0..32 carry noise; neighbours 32..96 carry the signal.
        for _ in 0..seeds {
            features.push(rnd());
        }
        for s in 0..seeds {
            let class = (s % 2) as i64;
            labels.push(if s % 7 == 3 { -1 } else { class });
            for k in 0..2 {
                let v = seeds + 2 * s + k;
                src.push(v as i64);
                dst.push(s as i64);
            }
        }
        for s in 0..seeds {
            for _ in 0..2 {
                features.push(if s % 2 == 1 { 1.0 } else { -1.0 } + 0.1 * rnd());
            }
        }
        TrainBatch {
            ids: (0..3 * seeds as u64).collect(),
            features,
            dim: 1,
            hops: vec![Hop::new(seeds, 3 * seeds, src, dst)],
            labels,
            degrees: Vec::new(),
            link: None,
        }
    }

    fn config(model: ModelKind) -> TrainConfig {
        TrainConfig {
            model,
            hidden: 8,
            dropout: 0.0,
            lr: 0.05,
            layers: 1,
            seed: 3,
            ..TrainConfig::default()
        }
    }

    #[test]
    fn sage_learns_from_neighbours_where_mlp_cannot() {
        let _torch = TORCH.lock().unwrap_or_else(|e| e.into_inner());
        let mut sage = Trainer::new(config(ModelKind::Sage), 1, 2, Device::Cpu);
        let mut mlp = Trainer::new(config(ModelKind::Mlp), 1, 2, Device::Cpu);
        for step in 0..150 {
            sage.train_step(&toy_batch(step)).unwrap();
            mlp.train_step(&toy_batch(step)).unwrap();
        }
        let test = toy_batch(999);
        let s = sage.eval_step(&test).unwrap();
        let m = mlp.eval_step(&test).unwrap();
        assert_eq!(s.labelled, 27); // 5 missing labels skipped
        assert!(s.correct >= 25, "sage {}/{}", s.correct, s.labelled);
        assert!(
            m.correct <= 22,
            "mlp {}/{} should be near chance",
            m.correct,
            m.labelled
        );
    }

    /// A link toy: 40 nodes in two groups (feature sign), each seed's
    /// neighbours from its own group; positives join nodes of one group,
    /// negatives nodes of different groups.
    fn link_batch(seed: u64) -> (TrainBatch, LinkPairs) {
        let nodes = 40usize;
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let group = |v: usize| v % 2;
        let mut features = Vec::new();
        for v in 0..nodes {
            let sign = if group(v) == 1 { 1.0 } else { -1.0 };
            features.push(sign + 0.3 * ((rnd() % 1000) as f32 / 1000.0 - 0.5));
            features.push((rnd() % 1000) as f32 / 1000.0 - 0.5);
        }
        let (mut src, mut dst) = (Vec::new(), Vec::new());
        for v in 0..nodes {
            for _ in 0..3 {
                let u = (rnd() as usize % (nodes / 2)) * 2 + group(v);
                src.push(u as i64);
                dst.push(v as i64);
            }
        }
        let mut pairs = LinkPairs::default();
        for _ in 0..60 {
            let a = rnd() as usize % nodes;
            let same = (rnd() as usize % (nodes / 2)) * 2 + group(a);
            let other = (rnd() as usize % (nodes / 2)) * 2 + 1 - group(a);
            for (b, label) in [(same, 1.0), (other, 0.0)] {
                pairs.src.push(a as i64);
                pairs.dst.push(b as i64);
                pairs.label.push(label);
            }
        }
        let batch = TrainBatch {
            ids: (0..nodes as u64).collect(),
            features,
            dim: 2,
            hops: vec![Hop::new(nodes, nodes, src, dst)],
            labels: vec![-1; nodes],
            degrees: Vec::new(),
            link: None,
        };
        (batch, pairs)
    }

    #[test]
    fn link_decoders_learn_which_pairs_are_edges() {
        let _torch = TORCH.lock().unwrap_or_else(|e| e.into_inner());
        for decoder in DecoderKind::ALL {
            let link = TrainConfig {
                task: Task::Link(decoder),
                ..config(ModelKind::Sage)
            };
            let mut trainer = Trainer::new(link, 2, 8, Device::Cpu);
            let (test, test_pairs) = link_batch(999);
            let before = trainer.link_eval_step(&test, &test_pairs).unwrap();
            for step in 0..60 {
                let (b, p) = link_batch(step);
                let s = trainer.link_train_step(&b, &p).unwrap();
                assert_eq!(s.labelled, 120);
            }
            let after = trainer.link_eval_step(&test, &test_pairs).unwrap();
            assert!(
                after.mean_loss() < before.mean_loss() && after.accuracy() >= 0.9,
                "{decoder:?}: loss {} -> {}, accuracy {}",
                before.mean_loss(),
                after.mean_loss(),
                after.accuracy()
            );
            // Scoring embeddings directly agrees with the batch's logits.
            let z = trainer.predict(&test).unwrap();
            let row = |v: i64| z[v as usize * 8..(v as usize + 1) * 8].to_vec();
            let (a, b): (Vec<f32>, Vec<f32>) = (row(0), row(1));
            let scored = trainer.score_embeddings(&a, &b, 8).unwrap();
            assert_eq!(scored.len(), 1);
            assert!(trainer.score_embeddings(&a, &b[..4], 8).is_err());
        }
    }

    #[test]
    fn link_steps_refuse_bad_pairs_and_node_models() {
        let _torch = TORCH.lock().unwrap_or_else(|e| e.into_inner());
        let link = TrainConfig {
            task: Task::Link(DecoderKind::Dot),
            ..config(ModelKind::Gcn)
        };
        let mut trainer = Trainer::new(link, 2, 4, Device::Cpu);
        let (b, mut p) = link_batch(1);
        p.dst[3] = 40;
        let err = trainer.link_train_step(&b, &p).unwrap_err();
        // The link sampler builds the pairs: a bad one is ginex's bug.
        assert!(matches!(err, Error::Internal(_)), "{err:?}");
        let err = err.to_string();
        assert!(err.contains("local index 40"), "{err}");
        p.label.pop();
        assert!(trainer.link_train_step(&b, &p).is_err());
        let mut node = Trainer::new(config(ModelKind::Gcn), 2, 4, Device::Cpu);
        let (b, p) = link_batch(1);
        let err = node.link_train_step(&b, &p).unwrap_err().to_string();
        assert!(err.contains("no decoder"), "{err}");
    }

    #[test]
    fn checkpoint_resume_is_bit_exact_and_mismatches_are_refused() {
        let _torch = TORCH.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let ckpt = dir.path().join("state.ot");
        let mut straight = Trainer::new(config(ModelKind::Gcn), 1, 2, Device::Cpu);
        let mut first = Trainer::new(config(ModelKind::Gcn), 1, 2, Device::Cpu);
        for step in 0..10 {
            straight.train_step(&toy_batch(step)).unwrap();
        }
        for step in 0..5 {
            first.train_step(&toy_batch(step)).unwrap();
        }
        first.save(&ckpt).unwrap();
        let mut resumed = Trainer::new(
            TrainConfig {
                seed: 77,
                ..config(ModelKind::Gcn)
            },
            1,
            2,
            Device::Cpu,
        );
        resumed.load(&ckpt).unwrap();
        for step in 5..10 {
            resumed.train_step(&toy_batch(step)).unwrap();
        }
        for ((n, a), (_, b)) in straight.state().iter().zip(resumed.state().iter()) {
            assert!(a.equal(b), "{n} differs after resume");
        }
        let mut other = Trainer::new(config(ModelKind::Gcn), 1, 3, Device::Cpu);
        let err = other.load(&ckpt).unwrap_err().to_string();
        assert!(err.contains("shape"), "{err}");
        let mut sage = Trainer::new(config(ModelKind::Sage), 1, 2, Device::Cpu);
        assert!(sage.load(&ckpt).is_err());
        std::fs::write(&ckpt, b"garbage").unwrap();
        assert!(first.load(&ckpt).is_err());
    }
}
