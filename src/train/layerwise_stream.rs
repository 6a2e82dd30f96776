//! Layer-wise inference by streaming: each layer reads its input rows in
//! sequential passes, in source order, and sums messages into bounded
//! destination accumulators, instead of gathering random rows per chunk
//! of targets ([`crate::train::layerwise`]'s gather path).
//!
//! It applies to layers whose neighbourhood term is a sum over in-edges
//! of per-source rows ([`SumLayer`]: SAGE, GCN, MLP). Since a linear map
//! commutes with the sum, each source row is projected once
//! (`m_u = x_u Wn^T` for SAGE, `x_u W^T / sqrt(d_u)` for GCN) together
//! with the part of the output that depends on the node itself
//! (`s_v = x_v Wr^T + b`, GCN's `x_v W^T / d_v + b`), and a layer's output
//! is `s_v + c_v · sum_{u -> v} m_u` (`c_v = 1 / max(deg_v, 1)` for SAGE,
//! `1 / sqrt(d_v)` for GCN), then ReLU.
//!
//! One layer:
//! 1. The projection: layer 0 reads `features.pages` once, in order, in
//!    chunks of rows, and writes the message rows `m` and the self rows
//!    `s` of every node to two spill files. A later layer's `m` and `s`
//!    are written by the previous layer as it finalises its outputs (the
//!    outputs themselves never reach the disk).
//! 2. The passes: the destinations are cut into partitions whose
//!    accumulators (4 bytes a value) and edge keys (8 bytes an edge) fit
//!    the plan's partition bytes ([`StreamPlan`]). A partition's
//!    in-neighbour lists are read in order and sorted by source; then the
//!    message file is read once, sequentially, in blocks, each block's
//!    rows added to the accumulators of their edges' destinations (a block
//!    no edge of the partition starts in is skipped).
//! 3. The finalisation: each partition's self rows are read in order,
//!    the outputs computed, and projected for the next layer (or kept:
//!    the last layer's outputs are the result).
//!
//! I/O per layer: the input once, plus one sequential read of the message
//! file per partition. This scheme is chosen over streaming the sources
//! once and spilling partial sums by destination partition because that
//! spill is an edge's worth of message per edge (30 M edges × 512 bytes
//! = 15 GB on the 3 M-node benchmark store, written and read back), while
//! the passes re-read `passes × nodes × message` (3 × 1.5 GB there, from
//! the page cache when it holds the file).
//!
//! Summation order: a destination's messages are added in source order
//! (the gather path adds them in list order, and takes the mean before
//! the matmul instead of after), so outputs agree with the gather path's
//! to float rounding (about `deg × 2^-24` relative), not bit for bit.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::iter::{
    IndexedParallelIterator, IntoParallelRefIterator, IntoParallelRefMutIterator, ParallelIterator,
};
use rayon::slice::ParallelSliceMut;
use tch::{Device, Tensor};

use crate::error::{Error, Result};
use crate::progress::Bar;
use crate::store::gather::{GatherOptions, Gatherer};
use crate::store::Store;
use crate::train::layerwise_plan::{StreamPlan, StreamShape};
use crate::train::layerwise_spill::{read_spilled, LayerStats, LayerwiseOptions, SpillFile};
use crate::train::model::SumLayer;
use crate::train::trainer::Trainer;

/// Whether streaming applies: every layer a sum over in-edges (no GAT,
/// no relational model, no learned input rows), an untyped store whose
/// feature rows are its node ids, and node ids that fit an edge key.
pub fn supported(store: &Store, trainer: &Trainer) -> bool {
    store.schema().is_none()
        && store.feature_rows() == store.num_nodes()
        && store.num_nodes() < 1 << 32
        && (0..trainer.num_layers()).all(|i| trainer.sum_layer(i).is_some())
}

/// The shape the plan sizes buffers for.
pub fn shape(store: &Store, trainer: &Trainer, nodes: &[u64]) -> Result<StreamShape> {
    let layers = trainer.num_layers();
    let mut in_width = u64::from(store.feature_dim());
    let (mut max_in, mut max_out, mut max_message) = (in_width, 0, 0);
    for i in 0..layers {
        let (sum, _) = layer(trainer, i)?;
        let out = width(trainer, i)? as u64;
        max_in = max_in.max(in_width);
        max_out = max_out.max(out);
        max_message = max_message.max(message_width(&sum, out));
        in_width = out;
    }
    let indptr = store.indptr();
    let max_degree = indptr.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
    Ok(StreamShape {
        row_bytes: store.layout().row_bytes() as u64,
        max_in,
        max_out,
        max_message,
        max_degree,
        // The result, and its copy in `nodes` order unless they are
        // sorted and distinct.
        output_values: nodes.len() as u64
            * in_width
            * if nodes.windows(2).all(|w| w[0] < w[1]) {
                1
            } else {
                2
            },
        targets: nodes.len() as u64,
    })
}

fn layer(trainer: &Trainer, i: usize) -> Result<(SumLayer, bool)> {
    trainer.sum_layer(i).ok_or_else(|| {
        Error::invalid_argument(format!(
            "layer {} is not a sum over in-edges (GAT, R-GCN, R-SAGE, learned input rows): use the gather path",
            i + 1
        ))
    })
}

fn width(trainer: &Trainer, i: usize) -> Result<usize> {
    trainer
        .layer_width(i)
        .map(|w| w as usize)
        .ok_or_else(|| Error::internal("layer-wise: no such layer"))
}

/// Values of a layer's message rows (0: it does not aggregate, MLP).
fn message_width(sum: &SumLayer, out: u64) -> u64 {
    match sum {
        SumLayer::Mean { neigh: None, .. } => 0,
        _ => out,
    }
}

/// Plans a streaming pass within `opts.memory`, charging what the process
/// holds now (measured; [`crate::train::memory::FALLBACK_BYTES`] where it
/// cannot be) as fixed.
pub fn plan(
    store: &Store,
    trainer: &Trainer,
    nodes: &[u64],
    opts: &LayerwiseOptions,
) -> Result<StreamPlan> {
    crate::io::heap::release_free_memory();
    let fixed =
        crate::train::memory::resident(false).unwrap_or(crate::train::memory::FALLBACK_BYTES);
    StreamPlan::new(opts.memory, fixed, &shape(store, trainer, nodes)?)
}

/// A layer's message and self rows, written in node order.
struct Projected {
    messages: Option<SpillFile>,
    selves: SpillFile,
}

/// Spill files being written.
struct ProjectedWriter {
    messages: Option<(BufWriter<File>, SpillFile)>,
    selves: (BufWriter<File>, SpillFile),
    bytes: u64,
}

impl ProjectedWriter {
    fn create(dir: &Path, layer: usize, messages: bool) -> Result<Self> {
        let open = |what: &str| -> Result<(BufWriter<File>, SpillFile)> {
            let spill = SpillFile::create(dir, &format!("{layer}-{what}"))?;
            let file = spill
                .file
                .try_clone()
                .map_err(|e| Error::io("open", &spill.path, e))?;
            Ok((BufWriter::with_capacity(1 << 20, file), spill))
        };
        Ok(ProjectedWriter {
            messages: if messages {
                Some(open("messages")?)
            } else {
                None
            },
            selves: open("self")?,
            bytes: 0,
        })
    }

    fn write(&mut self, messages: &[f32], selves: &[f32]) -> Result<()> {
        if let Some((w, spill)) = &mut self.messages {
            self.bytes += write_f32(w, &spill.path, messages)?;
        }
        let (w, spill) = &mut self.selves;
        self.bytes += write_f32(w, &spill.path, selves)?;
        Ok(())
    }

    fn finish(self) -> Result<(Projected, u64)> {
        let done = |(w, spill): (BufWriter<File>, SpillFile)| -> Result<SpillFile> {
            w.into_inner()
                .map_err(|e| Error::io("write", &spill.path, e.into_error()))?;
            Ok(spill)
        };
        let messages = self.messages.map(done).transpose()?;
        Ok((
            Projected {
                messages,
                selves: done(self.selves)?,
            },
            self.bytes,
        ))
    }
}

fn write_f32(w: &mut BufWriter<File>, path: &Path, values: &[f32]) -> Result<u64> {
    let bytes = crate::io::floats::f32_bytes(values);
    w.write_all(&bytes)
        .map_err(|e| Error::io("write", path, e))?;
    Ok(bytes.len() as u64)
}

/// Projects `rows` (`ids.len()` rows of `in_width`) through `sum`: the
/// message rows (empty for MLP) and the self rows, as the module's
/// documentation defines them.
fn project(
    sum: &SumLayer,
    rows: &[f32],
    in_width: usize,
    ids: std::ops::Range<u64>,
    indptr: &[u64],
) -> Result<(Vec<f32>, Vec<f32>)> {
    let count = (ids.end - ids.start) as i64;
    tch::no_grad(|| {
        let weight = match sum {
            SumLayer::Mean { root, .. } => root,
            SumLayer::Gcn { weight, .. } => weight,
        };
        let device = weight.device();
        let x = Tensor::from_slice(rows)
            .view([count, in_width as i64])
            .to_device(device);
        let host = |t: Tensor| -> Result<Vec<f32>> {
            Vec::<f32>::try_from(t.to_device(Device::Cpu).contiguous().view([-1]))
                .map_err(|e| Error::internal(format!("projected rows to host: {e}")))
        };
        let with_bias = |t: Tensor, bias: &Option<Tensor>| match bias {
            Some(b) => t + b,
            None => t,
        };
        match sum {
            SumLayer::Mean { root, bias, neigh } => {
                let selves = with_bias(x.matmul(&root.tr()), bias);
                let messages = match neigh {
                    Some(w) => host(x.matmul(&w.tr()))?,
                    None => Vec::new(),
                };
                Ok((messages, host(selves)?))
            }
            SumLayer::Gcn { weight, bias } => {
                let d: Vec<f32> = ids.map(|v| degree(indptr, v) as f32 + 1.0).collect();
                let d = Tensor::from_slice(&d).to_device(device).unsqueeze(1);
                let projected = x.matmul(&weight.tr());
                let messages = &projected * d.rsqrt();
                let selves = with_bias(projected / d, bias);
                Ok((host(messages)?, host(selves)?))
            }
        }
    })
}

fn degree(indptr: &[u64], v: u64) -> u64 {
    indptr[v as usize + 1] - indptr[v as usize]
}

/// The final-layer outputs of `nodes` (in `nodes` order) by streaming,
/// with each layer's statistics; see the module documentation. `plan`
/// sizes the buffers ([`plan`]).
pub fn streamed_logits(
    store: &Store,
    trainer: &Trainer,
    nodes: &[u64],
    opts: &LayerwiseOptions,
    plan: &StreamPlan,
) -> Result<(Vec<f32>, Vec<LayerStats>)> {
    let n = store.num_nodes();
    if let Some(&v) = nodes.iter().find(|&&v| v >= n) {
        return Err(Error::OutOfRange(format!(
            "node {v} is not below the node count {n}"
        )));
    }
    if !supported(store, trainer) {
        return Err(Error::invalid_argument(
            "streaming layer-wise inference needs SAGE, GCN or MLP layers on an untyped store",
        ));
    }
    std::fs::create_dir_all(&opts.spill_dir)
        .map_err(|e| Error::io("create", &opts.spill_dir, e))?;
    let layers = trainer.num_layers();
    let mut targets: Vec<u64> = nodes.to_vec();
    targets.sort_unstable();
    targets.dedup();
    let started = Instant::now();
    let (mut input, written, compute) = project_features(store, trainer, opts, plan)?;
    // Layer 1's time includes the read of the features; a later layer's
    // projection is in the time of the layer before it.
    let mut stats = vec![LayerStats {
        spilled_bytes: written,
        seconds: started.elapsed().as_secs_f64(),
        compute_seconds: compute,
        read_bytes: store.num_nodes() * store.layout().row_bytes() as u64,
        ..LayerStats::default()
    }];
    let mut result = Vec::new();
    for i in 0..layers {
        let last = i + 1 == layers;
        let dsts = Dsts::new(if last { Some(&targets[..]) } else { None }, n);
        let mut layer = Layer::new(store, trainer, i, opts, plan)?;
        let out = layer.run(&input, &dsts)?;
        stats[i].seconds += layer.seconds;
        stats[i].nodes = dsts.len() as u64;
        stats[i].edges = layer.edges;
        stats[i].passes = layer.passes;
        stats[i].compute_seconds += layer.compute_seconds;
        stats[i].read_bytes += layer.read_bytes;
        match out {
            Output::Next(projected, bytes) => {
                stats.push(LayerStats {
                    spilled_bytes: bytes,
                    ..LayerStats::default()
                });
                input = projected;
            }
            Output::Last(values) => result = values,
        }
        crate::io::heap::release_free_memory();
    }
    // The result in `nodes` order (repeats copied); no copy when `nodes`
    // are sorted and distinct (every node, as `predict` asks).
    if targets.len() == nodes.len() && targets == nodes {
        return Ok((result, stats));
    }
    let w = width(trainer, layers - 1)?;
    let mut logits = Vec::with_capacity(nodes.len() * w);
    for v in nodes {
        let at = targets
            .binary_search(v)
            .map_err(|_| Error::internal("a target went missing"))?;
        logits.extend_from_slice(&result[at * w..(at + 1) * w]);
    }
    Ok((logits, stats))
}

/// Layer 0's message and self rows from one ordered read of the features.
fn project_features(
    store: &Store,
    trainer: &Trainer,
    opts: &LayerwiseOptions,
    plan: &StreamPlan,
) -> Result<(Projected, u64, f64)> {
    let n = store.num_nodes();
    let (sum, _) = layer(trainer, 0)?;
    let out = width(trainer, 0)? as u64;
    let dim = store.feature_dim() as usize;
    let mut writer = ProjectedWriter::create(&opts.spill_dir, 0, message_width(&sum, out) > 0)?;
    let bar = Bar::new(
        n,
        &format!("layer 1/{}: reading features", trainer.num_layers()),
        opts.quiet,
    );
    let (mut pages, mut raw, mut values) = (Vec::new(), Vec::new(), Vec::new());
    let mut compute = 0.0;
    let mut first = 0;
    while first < n {
        let end = (first + plan.chunk_rows).min(n);
        raw.clear();
        store.read_feature_range(first..end, &mut pages, &mut raw)?;
        values.resize((end - first) as usize * dim, 0.0);
        store.dtype().decode_to_f32(dim, &raw, &mut values);
        let started = Instant::now();
        let (messages, selves) = project(&sum, &values, dim, first..end, store.indptr())?;
        compute += started.elapsed().as_secs_f64();
        writer.write(&messages, &selves)?;
        bar.inc(end - first);
        first = end;
    }
    bar.finish_and_clear();
    let (projected, bytes) = writer.finish()?;
    Ok((projected, bytes, compute))
}

/// A layer's destinations: every node (in order) or the sorted distinct
/// nodes asked for.
struct Dsts<'a> {
    targets: Option<&'a [u64]>,
    n: u64,
}

impl<'a> Dsts<'a> {
    fn new(targets: Option<&'a [u64]>, n: u64) -> Self {
        Dsts { targets, n }
    }

    fn len(&self) -> usize {
        self.targets.map_or(self.n as usize, <[u64]>::len)
    }

    fn get(&self, i: usize) -> u64 {
        self.targets.map_or(i as u64, |t| t[i])
    }

    fn range(&self, r: std::ops::Range<usize>) -> Vec<u64> {
        r.map(|i| self.get(i)).collect()
    }
}

/// What a layer hands on.
enum Output {
    /// The next layer's projected rows and the bytes written.
    Next(Projected, u64),
    /// The last layer's outputs of the sorted distinct targets.
    Last(Vec<f32>),
}

/// One layer's streaming state.
struct Layer<'a> {
    store: &'a Store,
    trainer: &'a Trainer,
    index: usize,
    opts: &'a LayerwiseOptions,
    plan: &'a StreamPlan,
    sum: SumLayer,
    relu: bool,
    out: usize,
    message: usize,
    passes: u64,
    edges: u64,
    seconds: f64,
    /// Seconds in matmuls and sums (the rest is reading and writing).
    compute_seconds: f64,
    /// Bytes of spill files read.
    read_bytes: u64,
}

impl<'a> Layer<'a> {
    fn new(
        store: &'a Store,
        trainer: &'a Trainer,
        index: usize,
        opts: &'a LayerwiseOptions,
        plan: &'a StreamPlan,
    ) -> Result<Self> {
        let (sum, relu) = layer(trainer, index)?;
        let out = width(trainer, index)?;
        let message = message_width(&sum, out as u64) as usize;
        Ok(Layer {
            store,
            trainer,
            index,
            opts,
            plan,
            sum,
            relu,
            out,
            message,
            passes: 0,
            edges: 0,
            seconds: 0.0,
            compute_seconds: 0.0,
            read_bytes: 0,
        })
    }

    /// The passes over `input` for `dsts`, then the outputs: projected
    /// for the next layer, or returned (the last layer).
    fn run(&mut self, input: &Projected, dsts: &Dsts) -> Result<Output> {
        let started = Instant::now();
        let layers = self.trainer.num_layers();
        let next = (self.index + 1 < layers)
            .then(|| -> Result<_> {
                let (sum, _) = layer(self.trainer, self.index + 1)?;
                let out = width(self.trainer, self.index + 1)? as u64;
                let writer = ProjectedWriter::create(
                    &self.opts.spill_dir,
                    self.index + 1,
                    message_width(&sum, out) > 0,
                )?;
                Ok((sum, writer))
            })
            .transpose()?;
        let indptr = self.store.indptr();
        let ends = match input.messages {
            Some(_) => self.plan.partitions(
                self.message as u64,
                (0..dsts.len()).map(|i| degree(indptr, dsts.get(i))),
            ),
            None => vec![dsts.len()],
        };
        let mut next = next;
        let mut last = Vec::with_capacity(if next.is_none() {
            dsts.len() * self.out
        } else {
            0
        });
        let (mut keys, mut acc) = (Vec::new(), Vec::new());
        let mut start = 0;
        for (p, &end) in ends.iter().enumerate() {
            let ids = dsts.range(start..end);
            acc.clear();
            acc.shrink_to(ids.len() * self.message);
            acc.reserve_exact(ids.len() * self.message);
            acc.resize(ids.len() * self.message, 0f32);
            if let Some(messages) = &input.messages {
                let what = format!(
                    "layer {}/{layers} pass {}/{}",
                    self.index + 1,
                    p + 1,
                    ends.len()
                );
                self.pass(messages, &ids, &mut keys, &mut acc, &what)?;
            }
            self.passes += 1;
            self.finish(input, &ids, &acc, next.as_mut(), &mut last)?;
            start = end;
        }
        self.seconds = started.elapsed().as_secs_f64();
        match next {
            Some((_, writer)) => {
                let (projected, bytes) = writer.finish()?;
                Ok(Output::Next(projected, bytes))
            }
            None => Ok(Output::Last(last)),
        }
    }

    /// One pass: the partition's edge keys, sorted by source, then every
    /// block of message rows an edge starts in, added to `acc`. The
    /// partition's destinations are split into one run per thread, each
    /// with its own keys and its own rows of `acc`, so that a block's sums
    /// run in parallel without sharing an accumulator (and in the same
    /// order whatever the thread count: by source, then by destination).
    fn pass(
        &mut self,
        messages: &SpillFile,
        ids: &[u64],
        keys: &mut Vec<Vec<u64>>,
        acc: &mut [f32],
        what: &str,
    ) -> Result<()> {
        let m = self.message;
        let runs = rayon::current_num_threads().clamp(1, ids.len().max(1));
        let per_run = ids.len().div_ceil(runs).max(1);
        keys.resize_with(runs, Vec::new);
        // Exactly the partition's edges (the plan counts 8 bytes an edge,
        // not a doubling Vec's slack).
        let indptr = self.store.indptr();
        for (run, k) in keys.iter_mut().enumerate() {
            let own = ids.get(run * per_run..((run + 1) * per_run).min(ids.len()));
            let edges: u64 = own.unwrap_or(&[]).iter().map(|&v| degree(indptr, v)).sum();
            k.clear();
            k.shrink_to(edges as usize);
            k.reserve_exact(edges as usize);
        }
        let mut lists = Gatherer::new(self.store, &GatherOptions::default())?;
        lists.visit_lists(self.store, ids, &mut |i, list| {
            let (run, local) = (i / per_run, (i % per_run) as u64);
            keys[run].extend(list.iter().map(|&u| (u << 32) | local));
        })?;
        let started = Instant::now();
        keys.par_iter_mut().for_each(|k| k.sort_unstable());
        self.edges += keys.iter().map(|k| k.len() as u64).sum::<u64>();
        let n = self.store.num_nodes();
        let bar = Bar::new(n, what, self.opts.quiet);
        let mut rows = Vec::new();
        let mut at = vec![0usize; runs];
        let mut compute = started.elapsed().as_secs_f64();
        // The block from the next edge's source, over all runs.
        while let Some(first) = keys
            .iter()
            .zip(&at)
            .filter_map(|(k, &a)| k.get(a).map(|key| key >> 32))
            .min()
        {
            let end = (first + self.plan.block_rows).min(n);
            rows.resize((end - first) as usize * m, 0f32);
            crate::io::floats::read_f32_at(
                &messages.file,
                &messages.path,
                first * (m * 4) as u64,
                &mut rows,
            )?;
            self.read_bytes += rows.len() as u64 * 4;
            let started = Instant::now();
            let rows = &rows;
            acc.par_chunks_mut(per_run * m.max(1))
                .zip(keys.par_iter())
                .zip(at.par_iter_mut())
                .for_each(|((acc, keys), k)| {
                    while let Some(&key) = keys.get(*k).filter(|&&key| key >> 32 < end) {
                        let u = ((key >> 32) - first) as usize;
                        let i = (key & 0xffff_ffff) as usize;
                        for (a, x) in acc[i * m..(i + 1) * m]
                            .iter_mut()
                            .zip(&rows[u * m..(u + 1) * m])
                        {
                            *a += x;
                        }
                        *k += 1;
                    }
                });
            compute += started.elapsed().as_secs_f64();
            bar.set_position(end);
        }
        self.compute_seconds += compute;
        bar.finish_and_clear();
        Ok(())
    }

    /// The outputs of a partition's destinations `ids` from their self
    /// rows and accumulators, in chunks: projected into `next`, or
    /// appended to `last`.
    fn finish(
        &mut self,
        input: &Projected,
        ids: &[u64],
        acc: &[f32],
        mut next: Option<&mut (SumLayer, ProjectedWriter)>,
        last: &mut Vec<f32>,
    ) -> Result<()> {
        let indptr = self.store.indptr();
        let (w, m) = (self.out, self.message);
        let mut out = Vec::new();
        for (c, chunk) in ids.chunks(self.plan.chunk_rows as usize).enumerate() {
            out.clear();
            out.resize(chunk.len() * w, 0f32);
            match (chunk.first(), chunk.last()) {
                // A run of node ids (every layer but the last): one read.
                (Some(&a), Some(&b)) if (b - a) as usize + 1 == chunk.len() => {
                    let (file, path) = (&input.selves.file, &input.selves.path);
                    crate::io::floats::read_f32_at(file, path, a * (w * 4) as u64, &mut out)?;
                }
                _ => read_spilled(&input.selves, chunk, w, &mut out)?,
            }
            self.read_bytes += out.len() as u64 * 4;
            let started = Instant::now();
            let base = c * self.plan.chunk_rows as usize;
            for (j, (&v, row)) in chunk.iter().zip(out.chunks_exact_mut(w)).enumerate() {
                if m > 0 {
                    let d = degree(indptr, v);
                    let scale = match self.sum {
                        SumLayer::Mean { .. } => 1.0 / d.max(1) as f32,
                        SumLayer::Gcn { .. } => 1.0 / (d as f32 + 1.0).sqrt(),
                    };
                    let sums = &acc[(base + j) * m..(base + j + 1) * m];
                    for (o, s) in row.iter_mut().zip(sums) {
                        *o += s * scale;
                    }
                }
                if self.relu {
                    row.iter_mut().for_each(|o| *o = o.max(0.0));
                }
            }
            match next.as_mut() {
                Some((sum, writer)) => {
                    let (Some(&a), Some(&b)) = (chunk.first(), chunk.last()) else {
                        continue;
                    };
                    let (messages, selves) = project(sum, &out, w, a..b + 1, indptr)?;
                    self.compute_seconds += started.elapsed().as_secs_f64();
                    writer.write(&messages, &selves)?;
                }
                None => {
                    self.compute_seconds += started.elapsed().as_secs_f64();
                    last.extend_from_slice(&out);
                }
            }
        }
        Ok(())
    }
}

/// A spill directory's default: `STORE.runs` beside the store.
pub fn default_spill_dir(store: &Store) -> PathBuf {
    let mut dir = store.dir().as_os_str().to_owned();
    dir.push(".runs");
    PathBuf::from(dir)
}
