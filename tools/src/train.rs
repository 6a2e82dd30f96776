//! `ginex train` and `ginex predict` (cargo feature `train`).

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use serde::Serialize;

use crate::epoch::DataArgs;
use crate::machine::machine_description;
pub use crate::predict::{LayerwiseMethodArg, PredictArgs};
use crate::svg::{epoch_chart, Panel, Series};
use ginex::internals::error::{Error, Result};
use ginex::internals::exec::builder::EpochConfigBuilder;
use ginex::internals::exec::epoch::EpochConfig;
use ginex::internals::exec::plan::consumer_copy_bytes;
use ginex::internals::import::npy_write::NpyWriter;
use ginex::internals::sample::fanouts::Fanouts;
use ginex::internals::store::Store;
use ginex::internals::train::checkpoint::{config_from_meta, predict_checkpoint};
use ginex::internals::train::decoder::Task;
use ginex::internals::train::eval::{predict, predict_layerwise};
use ginex::internals::train::layerwise::LayerwiseOptions;
use ginex::internals::train::layerwise_stream::default_spill_dir;
use ginex::internals::train::link::NegSampling;
use ginex::internals::train::memory::{measure, ModelFootprint, FALLBACK_BYTES};
use ginex::internals::train::model::{InitKind, ModelKind, ModelSpec};
use ginex::internals::train::options::{LrSchedule, TrainOptions};
use ginex::internals::train::run::train;
use ginex::internals::train::trainer::{EmbedTable, OptimizerKind, TrainConfig};

/// Model flags shared by `train` and `predict`.
#[derive(Debug, Args)]
pub struct ModelArgs {
    /// Architecture, as NAME or NAME:KEY=VALUE,... with the
    /// architecture's own options. The relational ones (rgcn, rsage) read
    /// each edge's relation from a typed store's schema (on an untyped
    /// store every edge is one relation).
    #[arg(long, default_value = "sage", value_parser = crate::args::model_spec,
          long_help = crate::args::model_help())]
    pub model: ModelSpec,
    /// Hidden width.
    #[arg(long, default_value_t = 256)]
    pub hidden: i64,
    /// Typed stores: node types whose input rows get a learnable embedding
    /// (a row per node, added to the type's features; for a small
    /// featureless type, give it zero rows first with `ginex
    /// derive-features --type T --reduce zero`), e.g. --embed field.
    #[arg(long, value_delimiter = ',', value_name = "TYPE,...")]
    pub embed: Vec<String>,
    /// R-GCN: basis decomposition, each relation's weight a learned mix of
    /// this many shared bases (fewer parameters for stores of many
    /// relations); 0: a full weight per relation.
    #[arg(long, default_value_t = 0, value_name = "B")]
    pub num_bases: usize,
    /// Dropout between layers.
    #[arg(long, default_value_t = 0.5)]
    pub dropout: f64,
    /// Adam learning rate.
    #[arg(long, default_value_t = 0.003)]
    pub lr: f64,
    /// Device: auto (CUDA when available), cpu, cuda.
    #[arg(long, default_value = "auto", value_parser = crate::args::device)]
    pub device: ginex::internals::train::tch::Device,
    /// Checkpoint directory (written at every epoch end; read by --resume
    /// and by predict).
    #[arg(long)]
    pub checkpoint: Option<PathBuf>,
}

/// Training knobs (regularisation, initialisation, schedule, evaluation,
/// selection), all recorded in the checkpoint metadata and the report.
#[derive(Debug, Args)]
pub struct KnobArgs {
    /// Weight decay (L2 added to the gradient as torch.optim.Adam does;
    /// decoupled with --optimizer adamw).
    #[arg(long, default_value_t = 0.0)]
    pub weight_decay: f64,
    /// Optimizer: adam (weight decay as L2) or adamw (decoupled).
    #[arg(long, default_value = "adam", value_parser = crate::args::optimizer)]
    pub optimizer: OptimizerKind,
    /// Dropout on the input features.
    #[arg(long, default_value_t = 0.0)]
    pub input_dropout: f64,
    /// Weight initialisation: glorot or kaiming (default: glorot for gcn
    /// and gat, as in their papers; kaiming for sage and mlp).
    #[arg(long, value_parser = crate::args::init)]
    pub init: Option<InitKind>,
    /// GAT: attention heads of the hidden layers (concatenated).
    #[arg(long, default_value_t = 8)]
    pub heads: i64,
    /// GAT: attention heads of the last layer (averaged).
    #[arg(long, default_value_t = 1)]
    pub out_heads: i64,
    /// GAT: dropout on the attention coefficients (default: --dropout).
    #[arg(long)]
    pub attn_dropout: Option<f64>,
    /// Learning-rate schedule: constant, step (x --lr-gamma every
    /// --lr-step-every epochs) or cosine (to 0 over --epochs).
    #[arg(long, default_value = "constant")]
    pub lr_schedule: String,
    /// Epochs per step of --lr-schedule step.
    #[arg(long, default_value_t = 30)]
    pub lr_step_every: u64,
    /// Factor per step of --lr-schedule step.
    #[arg(long, default_value_t = 0.1)]
    pub lr_gamma: f64,
    /// Fanouts of evaluation passes, as --fanouts takes them (default:
    /// --fanouts; -1 = full neighbourhoods, e.g. --eval-fanouts -1,-1).
    #[arg(long, allow_hyphen_values = true, value_parser = crate::args::eval_fanouts)]
    pub eval_fanouts: Option<Fanouts>,
    /// Stop after N evaluations without a better validation accuracy (the
    /// best epoch's checkpoint is kept and used by predict either way).
    #[arg(long)]
    pub early_stop: Option<u64>,
    /// The node type to classify on a typed store (default: the only
    /// labelled type; needed when several types have labels).
    #[arg(long, value_name = "TYPE")]
    pub target_type: Option<String>,
    /// Replace another run's checkpoints in --checkpoint (without it such a
    /// directory is refused unless --resume).
    #[arg(long)]
    pub overwrite: bool,
}

/// What `ginex train --task link` learns with (`--task` and `--neg` are
/// the data path's: with `link` the encoder's last layer gives node
/// embeddings of --hidden width, a decoder scores pairs of them, trained
/// with binary cross-entropy on the training edges against --neg
/// negatives each, validated on the store's held-out edges: see
/// `ginex-import --edge-split`).
#[derive(Debug, Args)]
pub struct TaskArgs {
    /// Link prediction: dot (inner product, GAE) or mlp (Hadamard product
    /// through a 2-layer MLP) [default: dot].
    #[arg(long, value_parser = ["dot", "mlp"])]
    pub decoder: Option<String>,
    /// Link prediction: corrupt (the positive's source with a uniform
    /// destination, as PyG's and DGL's link samplers) or random (a uniform
    /// source and destination, GAE's training negatives) [default: corrupt].
    #[arg(long, value_parser = ["corrupt", "random"])]
    pub neg_sampling: Option<String>,
}

impl TaskArgs {
    /// The task, the negatives per positive and how they are drawn.
    fn parse(&self, data: &DataArgs) -> Result<(Task, usize, NegSampling)> {
        let task = Task::parse(&data.task, self.decoder.as_deref())?;
        let sampling = NegSampling::parse(self.neg_sampling.as_deref().unwrap_or("corrupt"))?;
        match (task, data.neg, &self.neg_sampling) {
            (Task::Node, k, _) if k != 1 => Err(Error::invalid_argument(format!(
                "--neg {k} is for --task link (node classification has no negatives)"
            ))),
            (Task::Node, _, Some(s)) => Err(Error::invalid_argument(format!(
                "--neg-sampling {s} is for --task link (node classification has no negatives)"
            ))),
            (_, k, _) => Ok((task, k, sampling)),
        }
    }
}

/// Train a GNN on a store through the out-of-core data path.
///
/// Example: ginex train STORE --model sage --fanouts 10,10,10 --epochs 5 --policy ginex --checkpoint ckpt/
#[derive(Debug, Args)]
pub struct TrainArgs {
    /// The data path.
    #[command(flatten)]
    pub data: DataArgs,
    /// Model and checkpoints.
    #[command(flatten)]
    pub model: ModelArgs,
    /// Training knobs.
    #[command(flatten)]
    pub knobs: KnobArgs,
    /// The task.
    #[command(flatten)]
    pub task: TaskArgs,
    /// Epochs.
    #[arg(long, default_value_t = 10)]
    pub epochs: u64,
    /// Evaluate on the validation and test splits every N epochs (0 = never).
    #[arg(long, default_value_t = 1)]
    pub eval_every: u64,
    /// Continue from the latest checkpoint in --checkpoint.
    #[arg(long)]
    pub resume: bool,
    /// Write per-epoch results as JSON here (written beside the path and
    /// renamed into place when training ends).
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Write the training curve as an SVG here: loss, and train / valid /
    /// test accuracy, per epoch of this run. Written beside the path and
    /// renamed into place when training ends.
    #[arg(long)]
    pub plot: Option<PathBuf>,
}

/// What `train` (`splits`: true) or `predict` holds per node of `store`
/// beside the data path and the model, for `--memory`: the labels (4 bytes
/// a node, looked up by every batch) and, for `train`, the splits it
/// evaluates on (8 bytes an id). At 50 M nodes, 280 MiB that the constant
/// above did not count.
fn per_node_tables_bytes(store: &Store, splits: bool) -> u64 {
    use ginex::internals::format::header::FileKind;
    let labels = store
        .manifest()
        .file(FileKind::Labels)
        .map_or(0, |_| 4 * store.num_nodes());
    let splits = match store.manifest().file(FileKind::Splits) {
        Some(f) if splits => f.len,
        _ => 0,
    };
    labels + splits
}

/// The model's memory for the plan: [`measure`]d on the first batch of
/// `seeds` (a training step when `train`, else a forward pass), shown on
/// stderr.
fn measure_model(
    store: &Store,
    config: &TrainConfig,
    data: &EpochConfig,
    seeds: &[u64],
    how: (bool, ginex::internals::train::tch::Device),
) -> Result<ModelFootprint> {
    let footprint = measure(store, config, data, seeds, how)?;
    eprintln!("{}", footprint.describe());
    Ok(footprint)
}

fn options(
    store: &Store,
    (data, model, knobs): (&DataArgs, &ModelArgs, &KnobArgs),
    (task, neg, neg_sampling): (Task, usize, NegSampling),
    epochs: u64,
    eval_every: u64,
    resume: bool,
) -> Result<TrainOptions> {
    if model.num_bases > 0 && model.model.kind() != ModelKind::Rgcn {
        return Err(Error::invalid_argument(format!(
            "--num-bases {}: basis decomposition shares R-GCN's relation weights; --model {} has none to share (use --model rgcn)",
            model.num_bases,
            model.model.kind().name()
        )));
    }
    let data_builder = data.builder(store)?;
    let mut data_cfg = data_builder.unplanned(store);
    let model_cfg = TrainConfig {
        model: model.model.kind(),
        model_options: model.model.options(),
        hidden: model.hidden,
        dropout: model.dropout,
        lr: model.lr,
        layers: data_cfg.fanouts.num_hops(),
        seed: data.sampling.seed,
        weight_decay: knobs.weight_decay,
        optimizer: knobs.optimizer,
        input_dropout: knobs.input_dropout,
        init: knobs.init,
        heads: knobs.heads,
        out_heads: knobs.out_heads,
        attn_dropout: knobs.attn_dropout.unwrap_or(model.dropout),
        relation_dst: Vec::new(),
        embed: model.embed.iter().map(EmbedTable::named).collect(),
        num_bases: model.num_bases,
        task,
    };
    if data.memory.is_some() {
        let train = store.splits()?.map(|s| s.train).unwrap_or_default();
        let model_bytes =
            measure_model(store, &model_cfg, &data_cfg, &train, (true, model.device))?;
        let tables = per_node_tables_bytes(store, true);
        let row_bytes = store.layout().row_bytes() as u64;
        let plan = data_builder.plan(store, &mut data_cfg, &|ws| {
            model_bytes.bytes_for(ws) + tables + consumer_copy_bytes(ws, row_bytes)
        })?;
        if let Some(p) = plan {
            eprintln!("{}", p.describe());
        }
    }
    // The trainer sets the link epoch (its positives, negatives and
    // exclusion) on the passes that train; evaluation passes are node
    // batches.
    let link = ginex::internals::sample::link::LinkTask {
        neg,
        ..data_cfg.link.take().unwrap_or_default()
    };
    Ok(TrainOptions {
        model: model_cfg,
        data: data_cfg,
        epochs,
        eval_every,
        checkpoint: model.checkpoint.clone(),
        resume,
        overwrite: knobs.overwrite,
        lr_schedule: LrSchedule::parse(&knobs.lr_schedule, knobs.lr_step_every, knobs.lr_gamma)?,
        eval_fanouts: knobs.eval_fanouts.clone(),
        early_stop: knobs.early_stop,
        device: model.device,
        target_type: knobs.target_type.clone(),
        link,
        neg_sampling,
        target_relation: data.target_relation.clone(),
    })
}

/// Runs `ginex train`: one line per epoch on `out`, the JSON report to --report.
pub fn run_train(args: &TrainArgs, out: &mut dyn Write) -> Result<()> {
    let store = Store::open(&args.data.sampling.store)?;
    let opts = options(
        &store,
        (&args.data, &args.model, &args.knobs),
        args.task.parse(&args.data)?,
        args.epochs,
        args.eval_every,
        args.resume,
    )?;
    let what = match opts.model.task {
        Task::Node => format!("{} classes", store.num_classes()),
        Task::Link(d) => format!(
            "link prediction, {} decoder, {} {} negative(s) per edge",
            d.name(),
            opts.link.neg,
            opts.neg_sampling.name()
        ),
    };
    writeln!(
        out,
        "training {} on {} ({} nodes, dim {}, {what}) with policy {}, device {:?}, machine: {}",
        opts.model.model.name(),
        store.dir().display(),
        store.num_nodes(),
        store.feature_dim(),
        opts.data.cache.policy().name(),
        opts.device,
        machine_description()
    )
    .map_err(|e| Error::io("write", "<stdout>", e))?;
    let results = train(&store, &opts, out)?;
    if let Some(path) = &args.plot {
        let title = format!(
            "{} on {} ({} policy)",
            opts.model.model.name(),
            store.dir().display(),
            opts.data.cache.policy().name()
        );
        crate::write_report(path, training_curve(&title, &results))?;
        writeln!(out, "training curve: {}", path.display())
            .map_err(|e| Error::io("write", "<stdout>", e))?;
    }
    if let Some(path) = &args.report {
        let m = &opts.model;
        let best = results.iter().filter(|r| r.valid_acc.is_some()).fold(
            None::<&ginex::internals::train::run::EpochResult>,
            |b, r| match b {
                Some(b) if b.valid_acc >= r.valid_acc => Some(b),
                _ => Some(r),
            },
        );
        let v = TrainReport {
            model: m.model.name(),
            task: m.task.name(),
            decoder: m.task.decoder().map(|d| d.name()),
            neg: m.task.decoder().map(|_| opts.link.neg),
            neg_sampling: m.task.decoder().map(|_| opts.neg_sampling.name()),
            hidden: m.hidden,
            dropout: m.dropout,
            lr: m.lr,
            weight_decay: m.weight_decay,
            optimizer: m.optimizer.name(),
            input_dropout: m.input_dropout,
            init: m.init_kind().name(),
            heads: m.heads,
            out_heads: m.out_heads,
            attn_dropout: m.attn_dropout,
            lr_schedule: opts.lr_schedule.name(),
            eval_every: opts.eval_every,
            eval_fanouts: opts.eval_fanouts.as_ref().unwrap_or(&opts.data.fanouts),
            early_stop: opts.early_stop,
            policy: opts.data.cache.policy().name(),
            batch_size: opts.data.batch_size,
            fanouts: &opts.data.fanouts,
            seed: opts.data.seed,
            device: format!("{:?}", opts.device),
            machine: machine_description(),
            best_epoch: best.map(|r| r.epoch),
            best_valid_acc: best.and_then(|r| r.valid_acc),
            test_acc_at_best_valid: best.and_then(|r| r.test_acc),
            epochs: results.iter().map(|r| r.to_json()).collect(),
        };
        // Through a `Value`: its keys print sorted, as they always have.
        let v = serde_json::to_value(v).unwrap_or_default();
        crate::write_report(path, serde_json::to_vec_pretty(&v).unwrap_or_default())?;
    }
    Ok(())
}

/// The SVG of a run's epochs: loss above, accuracies below.
pub fn training_curve(
    title: &str,
    results: &[ginex::internals::train::run::EpochResult],
) -> String {
    let series =
        |name: &str, f: &dyn Fn(&ginex::internals::train::run::EpochResult) -> Option<f64>| {
            Series {
                name: name.to_string(),
                points: results
                    .iter()
                    .filter_map(|r| f(r).map(|v| (r.epoch as f64, v)))
                    .collect(),
            }
        };
    epoch_chart(
        title,
        &[
            Panel {
                y_label: "training loss".into(),
                y_max: None,
                series: vec![series("loss", &|r| Some(r.loss))],
            },
            Panel {
                y_label: "accuracy".into(),
                y_max: Some(1.0),
                series: vec![
                    series("train", &|r| Some(r.train_acc)),
                    series("valid", &|r| r.valid_acc),
                    series("test", &|r| r.test_acc),
                ],
            },
        ],
    )
}

/// Runs `ginex predict`.
pub fn run_predict(args: &PredictArgs, out: &mut dyn Write) -> Result<()> {
    let store = Store::open(&args.store)?;
    let (stem, meta) = predict_checkpoint(&args.checkpoint)?;
    let mut config = config_from_meta(&meta)?;
    if let Some(t) = args.task.as_deref().filter(|&t| t != config.task.name()) {
        return Err(Error::invalid_argument(format!(
            "--task {t} but the checkpoint {} of {} was trained for --task {}",
            stem,
            args.checkpoint.display(),
            config.task.name()
        )));
    }
    if config.task != Task::Node {
        return crate::predict_link::run(args, &store, (&stem, &meta), config, out);
    }
    if let Some(r) = &args.target_relation {
        return Err(Error::invalid_argument(format!(
            "--target-relation {r} is for --task link; the checkpoint {stem} of {} classifies nodes",
            args.checkpoint.display()
        )));
    }
    if args.embeddings.is_some() || args.score.is_some() || args.test_neg.is_some() {
        return Err(Error::invalid_argument(
            "--embeddings, --score and --test-neg are for link-prediction checkpoints (train --task link)",
        ));
    }
    let out_path = args
        .out
        .as_ref()
        .ok_or_else(|| Error::invalid_argument("predict needs --out FILE.npy for the logits"))?;
    let fanouts = predict_fanouts(args, &meta)?;
    // Every override that contradicts the checkpoint, reported at once.
    let mut mismatches = Vec::new();
    if let Some(m) = args.model {
        if m != config.model {
            mismatches.push(format!(
                "--model {} but the checkpoint holds {}",
                m.name(),
                config.model.name()
            ));
        }
    }
    if let Some(h) = args.hidden.filter(|&h| h != config.hidden) {
        mismatches.push(format!(
            "--hidden {h} but the checkpoint has {}",
            config.hidden
        ));
    }
    if let Some(h) = args.heads.filter(|&h| h != config.heads) {
        mismatches.push(format!(
            "--heads {h} but the checkpoint has {}",
            config.heads
        ));
    }
    if fanouts.num_hops() != config.layers {
        mismatches.push(format!(
            "--fanouts gives {} hops but the checkpoint's model has {} layers",
            fanouts.num_hops(),
            config.layers
        ));
    }
    if !mismatches.is_empty() {
        return Err(Error::invalid_argument(format!(
            "{} does not match the checkpoint {}: {} (leave these flags out to use the checkpoint's)",
            args.checkpoint.display(),
            stem,
            mismatches.join("; ")
        )));
    }
    config.layers = fanouts.num_hops();
    let data = EpochConfigBuilder::new()
        .policy(args.policy)
        // Layer-wise inference plans its own memory (no sampled batches).
        .memory(args.memory.filter(|_| !args.layerwise))
        .feature_cache_bytes(args.feature_cache_bytes)
        .batch_size(args.batch_size)
        .fanouts(fanouts.clone())
        .seed(config.seed)
        .workers(args.workers)
        .run_dir(args.run_dir.clone());
    // --nodes holds original ids; without it every node, in ascending
    // original id (the rows of the output).
    let ids = ginex::NodeIds::of(&store)?;
    let nodes: Vec<u64> = match &args.nodes {
        None => ids.user_order(),
        Some(path) => crate::read_node_ids(&ids, path)?,
    };
    let mut data_cfg = data.unplanned(&store);
    let tables = per_node_tables_bytes(&store, false);
    let row_bytes = store.layout().row_bytes() as u64;
    if args.layerwise {
        // Layer-wise inference plans its own buffers within --memory.
        data.plan(&store, &mut data_cfg, &|ws| {
            FALLBACK_BYTES + tables + consumer_copy_bytes(ws, row_bytes)
        })?;
    } else if data.memory_budget().is_some() {
        let model_bytes = measure_model(&store, &config, &data_cfg, &nodes, (false, args.device))?;
        if let Some(p) = data.plan(&store, &mut data_cfg, &|ws| {
            model_bytes.bytes_for(ws) + tables + consumer_copy_bytes(ws, row_bytes)
        })? {
            eprintln!("{}", p.describe());
        }
    }
    let mut opts = TrainOptions::new(config, data_cfg, 0);
    opts.checkpoint = Some(args.checkpoint.clone());
    opts.device = args.device;
    writeln!(
        out,
        "predicting with {} of {} ({} {}, hidden {}, fanouts {})",
        stem,
        args.checkpoint.display(),
        opts.model.model.name(),
        if meta["best_epoch"].is_null() {
            "latest epoch"
        } else {
            "best epoch by validation accuracy"
        },
        opts.model.hidden,
        crate::args::show_fanouts(&opts.data.fanouts)
    )
    .map_err(|e| Error::io("write", "<stdout>", e))?;
    let logits = if args.layerwise {
        predict_layerwise_to(args, &store, &opts, &nodes, out)?
    } else {
        predict(&store, &opts, &nodes)?
    };
    write_logits(&store, out_path, &nodes, &logits, out)
}

/// `ginex predict`'s fanouts: `--fanouts`, else the checkpoint's
/// evaluation fanouts, else its training fanouts.
fn predict_fanouts(args: &PredictArgs, meta: &serde_json::Value) -> Result<Fanouts> {
    Ok(match &args.fanouts {
        Some(f) => Fanouts::parse(f)?,
        None => serde_json::from_value::<Fanouts>(meta["eval_fanouts"].clone())
            .or_else(|_| serde_json::from_value::<Fanouts>(meta["fanouts"].clone()))
            .map_err(|_| {
                Error::invalid_argument("checkpoint metadata has no fanouts; pass --fanouts")
            })?,
    })
}

/// `ginex predict --layerwise`: the logits of `nodes` layer by layer, each
/// layer's line on `out`.
fn predict_layerwise_to(
    args: &PredictArgs,
    store: &Store,
    opts: &TrainOptions,
    nodes: &[u64],
    out: &mut dyn Write,
) -> Result<Vec<f32>> {
    let lw = LayerwiseOptions {
        memory: args.memory.unwrap_or(2 << 30),
        spill_dir: args
            .run_dir
            .clone()
            .unwrap_or_else(|| default_spill_dir(store)),
        quiet: false,
    };
    let started = std::time::Instant::now();
    let method = args.layerwise_method.into();
    let (logits, stats) = predict_layerwise(store, opts, nodes, &lw, method)?;
    let streamed = stats.iter().any(|s| s.passes > 0);
    for (i, s) in stats.iter().enumerate() {
        writeln!(
            out,
            "layer {}: {} nodes, {} edges in {} {}, {:.1} s{}",
            i + 1,
            s.nodes,
            s.edges,
            if streamed { s.passes } else { s.chunks },
            if streamed { "passes" } else { "chunks" },
            s.seconds,
            if s.spilled_bytes > 0 {
                format!(
                    ", {:.1} MiB spilled",
                    s.spilled_bytes as f64 / f64::from(1 << 20)
                )
            } else {
                String::new()
            } + &if streamed {
                format!(
                    ", {:.1} s computing, {:.1} MiB read",
                    s.compute_seconds,
                    s.read_bytes as f64 / f64::from(1 << 20)
                )
            } else {
                String::new()
            }
        )
        .map_err(|e| Error::io("write", "<stdout>", e))?;
    }
    writeln!(
        out,
        "layer-wise inference: {:.1} s",
        started.elapsed().as_secs_f64()
    )
    .map_err(|e| Error::io("write", "<stdout>", e))?;
    Ok(logits)
}

/// Writes the logits of `nodes` to `out_path` (`.npy`, rows in `nodes`'
/// order) and the accuracy on the labelled and the test-split nodes to
/// `out`.
fn write_logits(
    store: &Store,
    out_path: &std::path::Path,
    nodes: &[u64],
    logits: &[f32],
    out: &mut dyn Write,
) -> Result<()> {
    let classes = u64::from(store.num_classes());
    crate::create_parent_dirs(out_path)?;
    // A temporary renamed onto the output when complete: a failure (a full
    // disk) leaves no partial file.
    let mut w = NpyWriter::create_output(out_path, "<f4", &[classes])?;
    let mut bytes = Vec::with_capacity(logits.len() * 4);
    for x in logits {
        bytes.extend_from_slice(&x.to_le_bytes());
    }
    w.write(&bytes, logits.len() as u64)?;
    w.finish()?;
    writeln!(
        out,
        "wrote {} ({} nodes x {classes} logits)",
        out_path.display(),
        nodes.len()
    )
    .map_err(|e| Error::io("write", "<stdout>", e))?;
    let labels = store.labels()?.unwrap_or_default();
    let test: std::collections::HashSet<u64> = store
        .splits()?
        .map(|s| s.test.into_iter().collect())
        .unwrap_or_default();
    let acc =
        ginex::internals::train::eval::accuracy(logits, classes as usize, nodes, &labels, None);
    let test_acc = ginex::internals::train::eval::accuracy(
        logits,
        classes as usize,
        nodes,
        &labels,
        Some(&test),
    );
    let line = match (acc, test_acc) {
        (None, _) => "no labelled nodes among them: accuracy not computed".to_string(),
        (Some((c, n)), t) => format!(
            "accuracy on the {n} labelled nodes: {:.4} ({c} correct){}",
            c as f64 / n as f64,
            t.map_or(String::new(), |(c, n)| format!(
                "; on the {n} test-split nodes: {:.4}",
                c as f64 / n as f64
            ))
        ),
    };
    writeln!(out, "{line}").map_err(|e| Error::io("write", "<stdout>", e))
}

/// The `--report` document of `ginex train`: the model, the data path's
/// settings, the best epoch and every epoch's result.
#[derive(Debug, Serialize)]
struct TrainReport<'a> {
    model: &'static str,
    task: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    decoder: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    neg: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    neg_sampling: Option<&'static str>,
    hidden: i64,
    dropout: f64,
    lr: f64,
    weight_decay: f64,
    optimizer: &'static str,
    input_dropout: f64,
    init: &'static str,
    heads: i64,
    out_heads: i64,
    attn_dropout: f64,
    lr_schedule: &'static str,
    eval_every: u64,
    eval_fanouts: &'a ginex::internals::sample::fanouts::Fanouts,
    early_stop: Option<u64>,
    policy: &'static str,
    batch_size: usize,
    fanouts: &'a ginex::internals::sample::fanouts::Fanouts,
    seed: u64,
    device: String,
    machine: String,
    best_epoch: Option<u64>,
    best_valid_acc: Option<f64>,
    test_acc_at_best_valid: Option<f64>,
    epochs: Vec<serde_json::Value>,
}
