//! Layer-wise (exact) inference, DGL's and PyG's recipe for full-graph
//! inference on graphs too large for one neighbourhood expansion: layer 0
//! runs over every node with its whole in-neighbourhood, reading the
//! store's features; its outputs (one row per node) are the input of
//! layer 1, again over every node; and so on. The last layer runs only for
//! the nodes asked for. Each node's output is computed once per layer
//! instead of once per seed whose sampled tree reaches it, so the cost is
//! `layers × (edges + nodes)` rows however many nodes are asked for.
//!
//! Two ways to run a layer ([`LayerwiseMethod`]): SAGE, GCN and MLP
//! layers on untyped stores **stream** ([`crate::train::layerwise_stream`]:
//! sequential passes over the layer's input into destination
//! accumulators, the process within the budget); every other model
//! **gathers** its sources' rows per chunk of targets (this module).
//!
//! The gather path's memory: targets are taken in chunks whose working set
//! (source rows, edges, messages) fits a quarter of the budget; a layer's
//! output rows stay in memory when they fit another quarter, else they
//! are streamed to a spill file (written in node order, read back with
//! one positioned read per run of nearby rows) that is deleted when the
//! pass ends.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::time::Instant;

use crate::error::{Error, Result};
use crate::progress::{human_rate, Bar};
use crate::store::gather::{GatherOptions, Gatherer};
use crate::store::Store;
use crate::train::layerwise_spill::{read_spilled, SpillFile};
pub use crate::train::layerwise_spill::{LayerStats, LayerwiseOptions};
use crate::train::layerwise_stream;
use crate::train::model::Hop;
use crate::train::trainer::Trainer;

/// The rows a layer reads: the store's features (layer 0), or the previous
/// layer's outputs in memory or in a spill file.
enum Rows {
    Store(Box<Gatherer>),
    Memory(Vec<f32>),
    File(SpillFile),
}

impl Rows {
    /// Fills `out` with the rows (`width` values each) of `ids`, in order.
    fn read(&mut self, store: &Store, ids: &[u64], width: usize, out: &mut Vec<f32>) -> Result<()> {
        out.clear();
        out.resize(ids.len() * width, 0.0);
        match self {
            Rows::Store(g) => g.gather_f32(store, ids, out),
            Rows::Memory(values) => {
                for (row, &v) in out.chunks_exact_mut(width).zip(ids) {
                    let at = v as usize * width;
                    let src = values.get(at..at + width).ok_or_else(|| {
                        Error::OutOfRange(format!("layer-wise row {v} is past the table"))
                    })?;
                    row.copy_from_slice(src);
                }
                Ok(())
            }
            Rows::File(spill) => read_spilled(spill, ids, width, out),
        }
    }
}

/// Where a layer's outputs go: memory, or a spill file written in order.
enum Sink {
    Memory(Vec<f32>),
    File(BufWriter<File>, SpillFile),
}

/// How [`layerwise_logits_with`] computes a layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LayerwiseMethod {
    /// Streaming where the model allows it ([`layerwise_stream::supported`]),
    /// else gathering.
    #[default]
    Auto,
    /// Each chunk of targets gathers its sources' rows (the original path;
    /// every model; `--memory` bounds its buffers, not the process).
    Gather,
    /// Sequential passes over each layer's input into destination
    /// accumulators ([`crate::train::layerwise_stream`]; SAGE, GCN, MLP
    /// on untyped stores); the process stays within `--memory`.
    Stream,
}

/// The final-layer outputs (logits) of `nodes`, in `nodes` order, by
/// `method`; see [`layerwise_logits`].
pub fn layerwise_logits_with(
    store: &Store,
    trainer: &Trainer,
    nodes: &[u64],
    opts: &LayerwiseOptions,
    method: LayerwiseMethod,
) -> Result<(Vec<f32>, Vec<LayerStats>)> {
    let stream = match method {
        LayerwiseMethod::Auto => layerwise_stream::supported(store, trainer),
        LayerwiseMethod::Gather => false,
        LayerwiseMethod::Stream => true,
    };
    if !stream {
        return gathered_logits(store, trainer, nodes, opts);
    }
    let plan = layerwise_stream::plan(store, trainer, nodes, opts)?;
    if !opts.quiet {
        eprintln!("{}", plan.describe());
    }
    layerwise_stream::streamed_logits(store, trainer, nodes, opts, &plan)
}

/// The final-layer outputs (logits) of `nodes`, in `nodes` order
/// (`nodes.len() × classes` values), computed layer by layer over the
/// whole graph with full neighbourhoods; with the per-layer statistics.
/// Streams where the model allows it ([`LayerwiseMethod::Auto`]).
pub fn layerwise_logits(
    store: &Store,
    trainer: &Trainer,
    nodes: &[u64],
    opts: &LayerwiseOptions,
) -> Result<(Vec<f32>, Vec<LayerStats>)> {
    layerwise_logits_with(store, trainer, nodes, opts, LayerwiseMethod::Auto)
}

/// The gather path: chunks of targets, each gathering its sources' rows.
fn gathered_logits(
    store: &Store,
    trainer: &Trainer,
    nodes: &[u64],
    opts: &LayerwiseOptions,
) -> Result<(Vec<f32>, Vec<LayerStats>)> {
    let n = store.num_nodes();
    if let Some(&v) = nodes.iter().find(|&&v| v >= n) {
        return Err(Error::OutOfRange(format!(
            "node {v} is not below the node count {n}"
        )));
    }
    let layers = trainer.num_layers();
    let indptr = store.indptr();
    let quarter = (opts.memory / 4).max(1);
    let mut gatherer = Gatherer::new(store, &GatherOptions::default())?;
    let mut in_width = store.feature_dim() as usize;
    // The features as layer 1's input: read once, in order, when they fit
    // a quarter of the budget as f32 (each chunk's sources are spread over
    // the whole table, so gathering them chunk by chunk would read most
    // pages once per chunk); else gathered per chunk.
    let mut input = if n * in_width as u64 * 4 <= quarter {
        Rows::Memory(all_features(store)?)
    } else {
        Rows::Store(Box::new(Gatherer::new(store, &GatherOptions::default())?))
    };
    let mut stats = Vec::with_capacity(layers);
    let mut logits = Vec::new();
    for layer in 0..layers {
        let started = Instant::now();
        let last = layer + 1 == layers;
        let out_width = trainer
            .layer_width(layer)
            .ok_or_else(|| Error::internal("layer-wise: no such layer"))?
            as usize;
        let targets: &[u64] = if last { nodes } else { &[] };
        let count = if last { nodes.len() as u64 } else { n };
        let table_bytes = n * out_width as u64 * 4;
        let mut sink = if last || table_bytes <= quarter {
            Sink::Memory(Vec::with_capacity(count as usize * out_width))
        } else {
            std::fs::create_dir_all(&opts.spill_dir)
                .map_err(|e| Error::io("create", &opts.spill_dir, e))?;
            // Read back by the next layer: opened for both.
            let spill = SpillFile::create(&opts.spill_dir, &format!("gather-{layer}"))?;
            let file = spill
                .file
                .try_clone()
                .map_err(|e| Error::io("open", &spill.path, e))?;
            Sink::File(BufWriter::with_capacity(8 << 20, file), spill)
        };
        // Bytes a chunk holds per edge (the local indices in Rust and on
        // the device, the gathered message rows) and per source row.
        let per_edge = 64 + 8 * in_width.max(out_width) as u64;
        let per_row = 24 + 8 * in_width.max(out_width) as u64;
        let bar = Bar::new(count, &format!("layer {}/{layers}", layer + 1), opts.quiet);
        let mut layer_stats = LayerStats {
            nodes: count,
            ..LayerStats::default()
        };
        let (mut rows, mut degrees) = (Vec::new(), Vec::new());
        let mut next = 0u64;
        while next < count {
            // The chunk: targets from `next` while the working set fits.
            let (mut end, mut edges) = (next, 0u64);
            while end < count {
                let v = if last { targets[end as usize] } else { end };
                let d = indptr[v as usize + 1] - indptr[v as usize];
                let more = (edges + d) * per_edge + (end - next + 1 + edges + d) * per_row;
                if end > next && more > quarter {
                    break;
                }
                edges += d;
                end += 1;
            }
            let chunk: Vec<u64> = if last {
                targets[next as usize..end as usize].to_vec()
            } else {
                (next..end).collect()
            };
            let lists = gatherer.read_lists(store, &chunk)?;
            let (mut hop, sources) = local_hop(&chunk, &lists);
            hop.annotate(&sources, store.schema())?;
            input.read(store, &sources, in_width, &mut rows)?;
            degrees.clear();
            degrees.extend(
                sources
                    .iter()
                    .map(|&v| (indptr[v as usize + 1] - indptr[v as usize]) as f32 + 1.0),
            );
            let out =
                trainer.layer_outputs(layer, (&sources, &rows), in_width, &hop, Some(&degrees))?;
            match &mut sink {
                Sink::Memory(values) => values.extend_from_slice(&out),
                Sink::File(w, spill) => {
                    let mut bytes = Vec::with_capacity(out.len() * 4);
                    for x in &out {
                        bytes.extend_from_slice(&x.to_le_bytes());
                    }
                    w.write_all(&bytes)
                        .map_err(|e| Error::io("write", &spill.path, e))?;
                    layer_stats.spilled_bytes += bytes.len() as u64;
                }
            }
            layer_stats.edges += edges;
            layer_stats.chunks += 1;
            bar.inc(end - next);
            bar.set_message(&human_rate(
                (end as f64) / started.elapsed().as_secs_f64().max(1e-9),
                "nodes",
            ));
            next = end;
        }
        bar.finish_and_clear();
        layer_stats.seconds = started.elapsed().as_secs_f64();
        stats.push(layer_stats);
        in_width = out_width;
        match sink {
            Sink::Memory(values) if last => logits = values,
            Sink::Memory(values) => input = Rows::Memory(values),
            Sink::File(w, spill) => {
                w.into_inner()
                    .map_err(|e| Error::io("write", &spill.path, e.into_error()))?;
                input = Rows::File(spill);
            }
        }
    }
    Ok((logits, stats))
}

/// Every feature row as `f32`, in node order, read in 8 MiB runs of pages
/// (each page checked against its CRC).
fn all_features(store: &Store) -> Result<Vec<f32>> {
    let n = store.num_nodes();
    let layout = store.layout();
    let dim = store.feature_dim() as usize;
    let step = ((8u64 << 20) / layout.row_bytes().max(1) as u64).max(1);
    let mut values = Vec::with_capacity(n as usize * dim);
    let (mut pages, mut raw) = (Vec::new(), Vec::new());
    let mut first = 0;
    while first < n {
        let end = (first + step).min(n);
        raw.clear();
        store.read_feature_range(first..end, &mut pages, &mut raw)?;
        let at = values.len();
        values.resize(at + (end - first) as usize * dim, 0.0);
        store.dtype().decode_to_f32(dim, &raw, &mut values[at..]);
        first = end;
    }
    Ok(values)
}

/// The hop of one chunk: targets are the first sources (in chunk order),
/// then each other in-neighbour once, in first-seen order; one edge per
/// list entry (multi-edges count). Returns the hop and the global id of
/// every source.
fn local_hop(chunk: &[u64], lists: &[Vec<u64>]) -> (Hop, Vec<u64>) {
    let mut local: HashMap<u64, i64> = HashMap::with_capacity(chunk.len() * 2);
    let mut sources: Vec<u64> = chunk.to_vec();
    for (i, &v) in chunk.iter().enumerate() {
        local.entry(v).or_insert(i as i64);
    }
    let edges: usize = lists.iter().map(Vec::len).sum();
    let (mut src, mut dst) = (Vec::with_capacity(edges), Vec::with_capacity(edges));
    for (j, list) in lists.iter().enumerate() {
        for &u in list {
            let id = *local.entry(u).or_insert_with(|| {
                sources.push(u);
                sources.len() as i64 - 1
            });
            src.push(id);
            dst.push(j as i64);
        }
    }
    (Hop::new(chunk.len(), sources.len(), src, dst), sources)
}
