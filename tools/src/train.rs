//! `ginex train` and `ginex predict` (cargo feature `train`).

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use crate::epoch::DataArgs;
use crate::machine::machine_description;
use ginex::error::{Error, Result};
use ginex::import::npy_write::NpyWriter;
use ginex::store::Store;
use ginex::train::model::ModelKind;
use ginex::train::run::{predict, train, TrainOptions};
use ginex::train::trainer::TrainConfig;

/// Model flags shared by `train` and `predict`.
#[derive(Debug, Args)]
pub struct ModelArgs {
    /// Architecture: sage (GraphSAGE, mean), gcn, mlp (ignores the graph).
    #[arg(long, default_value = "sage")]
    pub model: String,
    /// Hidden width.
    #[arg(long, default_value_t = 256)]
    pub hidden: i64,
    /// Dropout between layers.
    #[arg(long, default_value_t = 0.5)]
    pub dropout: f64,
    /// Adam learning rate.
    #[arg(long, default_value_t = 0.003)]
    pub lr: f64,
    /// Device: auto (CUDA when available), cpu, cuda.
    #[arg(long, default_value = "auto")]
    pub device: String,
    /// Checkpoint directory (written at every epoch end; read by --resume
    /// and by predict).
    #[arg(long)]
    pub checkpoint: Option<PathBuf>,
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
    /// Epochs.
    #[arg(long, default_value_t = 10)]
    pub epochs: u64,
    /// Evaluate on the validation and test splits every N epochs (0 = never).
    #[arg(long, default_value_t = 1)]
    pub eval_every: u64,
    /// Continue from the latest checkpoint in --checkpoint.
    #[arg(long)]
    pub resume: bool,
    /// Write per-epoch results as JSON here.
    #[arg(long)]
    pub report: Option<PathBuf>,
}

/// Write the final-layer outputs (logits) of every node, or of the nodes
/// listed one per line in --nodes, as an .npy of shape (nodes, classes).
#[derive(Debug, Args)]
pub struct PredictArgs {
    /// The data path.
    #[command(flatten)]
    pub data: DataArgs,
    /// Model and checkpoint.
    #[command(flatten)]
    pub model: ModelArgs,
    /// File with one node id per line (default: all nodes).
    #[arg(long)]
    pub nodes: Option<PathBuf>,
    /// Output .npy (must not exist).
    #[arg(long)]
    pub out: PathBuf,
}

fn device(s: &str) -> Result<ginex::train::tch::Device> {
    match s {
        "auto" => Ok(ginex::train::tch::Device::cuda_if_available()),
        "cpu" => Ok(ginex::train::tch::Device::Cpu),
        "cuda" if ginex::train::tch::Cuda::is_available() => Ok(ginex::train::tch::Device::Cuda(0)),
        "cuda" => Err(Error::invalid_argument(
            "--device cuda but no CUDA device is available",
        )),
        _ => Err(Error::invalid_argument(format!(
            "--device {s:?}: use auto, cpu or cuda"
        ))),
    }
}

/// What `--memory` keeps for libtorch and the model beside the data path
/// (activations of very large batches are not planned: choose fanouts that
/// fit).
const TRAIN_EXTRA_BYTES: u64 = 512 << 20;

fn options(
    store: &Store,
    data: &DataArgs,
    model: &ModelArgs,
    epochs: u64,
    eval_every: u64,
    resume: bool,
) -> Result<TrainOptions> {
    let (data_cfg, plan) = data.config(store, TRAIN_EXTRA_BYTES)?;
    if let Some(p) = plan {
        eprintln!("{}", p.describe());
    }
    Ok(TrainOptions {
        model: TrainConfig {
            model: ModelKind::parse(&model.model)?,
            hidden: model.hidden,
            dropout: model.dropout,
            lr: model.lr,
            layers: data_cfg.fanouts.len(),
            seed: data.seed,
        },
        data: data_cfg,
        epochs,
        eval_every,
        checkpoint: model.checkpoint.clone(),
        resume,
        device: device(&model.device)?,
    })
}

/// Runs `ginex train`: one line per epoch on `out`, the JSON report to --report.
pub fn run_train(args: &TrainArgs, out: &mut dyn Write) -> Result<()> {
    let store = Store::open(&args.data.store)?;
    let opts = options(
        &store,
        &args.data,
        &args.model,
        args.epochs,
        args.eval_every,
        args.resume,
    )?;
    writeln!(
        out,
        "training {} on {} ({} nodes, dim {}, {} classes) with policy {}, device {:?}, machine: {}",
        opts.model.model.name(),
        store.dir().display(),
        store.num_nodes(),
        store.feature_dim(),
        store.num_classes(),
        opts.data.policy.name(),
        opts.device,
        machine_description()
    )
    .map_err(|e| Error::io("write", "<stdout>", e))?;
    let results = train(&store, &opts, out)?;
    if let Some(path) = &args.report {
        let v = json!({
            "model": opts.model.model.name(), "hidden": opts.model.hidden, "dropout": opts.model.dropout, "lr": opts.model.lr,
            "policy": opts.data.policy.name(), "batch_size": opts.data.batch_size, "fanouts": opts.data.fanouts, "seed": opts.data.seed,
            "device": format!("{:?}", opts.device), "machine": machine_description(),
            "epochs": results.iter().map(|r| r.to_json()).collect::<Vec<_>>(),
        });
        std::fs::write(path, serde_json::to_vec_pretty(&v).unwrap_or_default())
            .map_err(|e| Error::io("write", path, e))?;
    }
    Ok(())
}

/// Runs `ginex predict`.
pub fn run_predict(args: &PredictArgs, out: &mut dyn Write) -> Result<()> {
    let store = Store::open(&args.data.store)?;
    let opts = options(&store, &args.data, &args.model, 0, 0, false)?;
    let nodes: Vec<u64> = match &args.nodes {
        None => (0..store.num_nodes()).collect(),
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| Error::io("read", path, e))?;
            let mut nodes = Vec::new();
            for (i, line) in text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
            {
                let v: u64 = line.trim().parse().map_err(|_| Error::InvalidInput {
                    source_file: path.clone(),
                    line: Some(i as u64 + 1),
                    reason: format!("{line:?} is not a node id"),
                })?;
                if v >= store.num_nodes() {
                    return Err(Error::InvalidInput {
                        source_file: path.clone(),
                        line: Some(i as u64 + 1),
                        reason: format!(
                            "node {v} is not below the node count {}",
                            store.num_nodes()
                        ),
                    });
                }
                nodes.push(v);
            }
            nodes
        }
    };
    let logits = predict(&store, &opts, &nodes)?;
    let classes = u64::from(store.num_classes());
    let mut w = NpyWriter::create(&args.out, "<f4", &[classes])?;
    let mut bytes = Vec::with_capacity(logits.len() * 4);
    for x in &logits {
        bytes.extend_from_slice(&x.to_le_bytes());
    }
    w.write(&bytes, logits.len() as u64)?;
    w.finish()?;
    writeln!(
        out,
        "wrote {} ({} nodes x {classes} logits)",
        args.out.display(),
        nodes.len()
    )
    .map_err(|e| Error::io("write", "<stdout>", e))
}
