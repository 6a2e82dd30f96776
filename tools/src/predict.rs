//! `ginex predict`'s arguments (cargo feature `train`): node logits
//! ([`crate::train::run_predict`]) and link prediction
//! ([`crate::predict_link`]) both take them.

use std::path::PathBuf;

use clap::Args;

use ginex::internals::cache::Policy;
use ginex::internals::train::layerwise::LayerwiseMethod;
use ginex::internals::train::model::ModelKind;

/// Write the final-layer outputs (logits) of every node, or of the nodes
/// listed one per line in --nodes, as an .npy of shape (nodes, classes),
/// and print the accuracy on the nodes that have labels. The model (kind,
/// hidden width, layers, heads) and the evaluation fanouts come from the
/// checkpoint; the best epoch by validation accuracy is used.
///
/// Example: ginex predict STORE --checkpoint ckpt/ --out logits.npy
#[derive(Debug, Args)]
pub struct PredictArgs {
    /// The store.
    pub store: PathBuf,
    /// Checkpoint directory written by `ginex train --checkpoint`.
    #[arg(long)]
    pub checkpoint: PathBuf,
    /// Output .npy (must not exist): the logits of a node classifier; with
    /// --task link and --score, the pairs' scores.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// node or link (default: the checkpoint's task; a different value is
    /// an error). Link: node embeddings from layer-wise inference (exact,
    /// within --memory), the scores of given pairs, and the test edges'
    /// AUC, AP, MRR and Hits@K beside an in-degree popularity baseline.
    #[arg(long, value_parser = ["node", "link"])]
    pub task: Option<String>,
    /// Link: write the embedding of every node (or of --nodes) here, an
    /// .npy of shape (nodes, width) in the order of the nodes.
    #[arg(long)]
    pub embeddings: Option<PathBuf>,
    /// Link: score the node pairs of this .npy (integers of shape (P, 2),
    /// original ids) into --out, an .npy of P logits.
    #[arg(long)]
    pub score: Option<PathBuf>,
    /// Link: rank each test edge against K uniform destination
    /// corruptions (the positive's source with a random node, drawn the
    /// same every run) instead of the split's stored negatives, for MRR
    /// and Hits@K on a split imported with one negative per edge.
    #[arg(long, value_name = "K")]
    pub test_neg: Option<usize>,
    /// --task link on a typed store: the relation SRC:REL:DST whose
    /// held-out edges are evaluated (default: the one the store's edge
    /// splits are of); drawn negatives (--test-neg) come from its
    /// destination type.
    #[arg(long, value_name = "SRC:REL:DST")]
    pub target_relation: Option<String>,
    /// File with one node id per line, in the ids of the imported input
    /// (a --remap or --reorder store's original ids); the output rows
    /// follow it. Default: every node, in ascending original id.
    #[arg(long)]
    pub nodes: Option<PathBuf>,
    /// Fanouts, as `ginex train --fanouts` takes them (default: the
    /// checkpoint's evaluation fanouts; -1 = all).
    #[arg(long, allow_hyphen_values = true)]
    pub fanouts: Option<String>,
    /// Architecture (default: the checkpoint's; a different value is an error).
    #[arg(long, value_parser = crate::args::model)]
    pub model: Option<ModelKind>,
    /// Hidden width (default: the checkpoint's; a different value is an error).
    #[arg(long)]
    pub hidden: Option<i64>,
    /// GAT heads (default: the checkpoint's; a different value is an error).
    #[arg(long)]
    pub heads: Option<i64>,
    /// Feature-cache policy of the data path.
    #[arg(long, default_value = "none", value_parser = crate::args::policy())]
    pub policy: Policy,
    /// Feature-cache size [default: 256MiB, or planned with --memory].
    #[arg(long, value_parser = crate::args::bytes)]
    pub feature_cache_bytes: Option<u64>,
    /// One memory budget for the whole process (see `ginex epoch --help`):
    /// sizes the caches and the superbatch to fit, or refuses.
    #[arg(long, value_parser = crate::args::bytes)]
    pub memory: Option<u64>,
    /// Nodes per batch.
    #[arg(long, default_value_t = 1000)]
    pub batch_size: usize,
    /// Sampling workers (default: cores). The inspector samples rounds of
    /// workers × 4 batches (at least 16) in lockstep, each hop's lists read
    /// once.
    #[arg(long, value_parser = crate::args::at_least_one)]
    pub workers: Option<usize>,
    /// Directory for runtime files (default: STORE.runs beside the store).
    #[arg(long)]
    pub run_dir: Option<PathBuf>,
    /// Device: auto (CUDA when available), cpu, cuda.
    #[arg(long, default_value = "auto", value_parser = crate::args::device)]
    pub device: ginex::internals::train::tch::Device,
    /// Exact inference, one layer at a time over the whole graph with full
    /// neighbourhoods (DGL's and PyG's recipe): each layer's rows of every
    /// node are computed once. SAGE, GCN and MLP stream each layer's input
    /// in sequential passes into destination accumulators within --memory
    /// [default 2GiB], spilling to the run directory; other models gather
    /// rows per chunk of targets. No sampling: --fanouts and the cache
    /// flags do not apply.
    #[arg(long, conflicts_with = "fanouts")]
    pub layerwise: bool,
    /// How --layerwise computes a layer: auto (stream where the model
    /// allows), stream, or gather (the per-chunk gather path, for
    /// comparison).
    #[arg(long, value_enum, default_value = "auto", requires = "layerwise")]
    pub layerwise_method: LayerwiseMethodArg,
}

/// `--layerwise-method`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LayerwiseMethodArg {
    Auto,
    Stream,
    Gather,
}

impl From<LayerwiseMethodArg> for LayerwiseMethod {
    fn from(m: LayerwiseMethodArg) -> Self {
        match m {
            LayerwiseMethodArg::Auto => LayerwiseMethod::Auto,
            LayerwiseMethodArg::Stream => LayerwiseMethod::Stream,
            LayerwiseMethodArg::Gather => LayerwiseMethod::Gather,
        }
    }
}
