//! Synthetic power-law graphs with planted classes (`ginex gen`).
//!
//! * **Topology** — R-MAT (a, b, c, d = 0.57, 0.19, 0.19, 0.05, as in the
//!   Graph500 Kronecker generator the paper's expanded datasets follow):
//!   `round(nodes * avg_degree)` edges are drawn, ids outside `0..nodes`
//!   redrawn. With probability `homophily` an edge's source is moved to the
//!   nearest node at or after it (wrapping) whose class equals the
//!   destination's, which keeps the source's place in the degree skew.
//!   Self-loops and duplicate edges are then dropped, so the store holds
//!   somewhat fewer edges than drawn.
//! * **Classes** — `class(v) = hash(seed, v) mod classes`, uniform.
//! * **Features** — `centroid[class(v)] + feature_noise * g`, where the
//!   centroids have unit norm (random signs / sqrt(dim)) and `g` is
//!   approximately standard normal per element. With the default noise a
//!   node's own features identify its class poorly, while the mean over its
//!   (mostly same-class) neighbours identifies it well: a GNN has something
//!   to learn that an MLP does not.
//! * **Splits** — each node lands in train / valid / test / none by a hash
//!   of (seed, node) against the `split` fractions.
//!
//! Everything is a pure function of the seed and the node or chunk index,
//! so the output is identical for any thread count. Generation streams: the
//! CSC build goes through [`EdgeBucketer`] within the memory budget.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::format::pages::{Dtype, FeatureLayout};
use crate::format::tables::Splits;
use crate::import::npy_write::{write_i64_array, NpyWriter};
use crate::io::durable::StagingDir;
use crate::rng::{stream_seed, Wyrand};
use crate::store::edges::{CscOptions, CscStats, EdgeBucketer};
use crate::store::{ListSink, StoreBuilder, StoreSpec};

/// Parameters of a synthetic dataset.
#[derive(Debug, Clone)]
pub struct SynthParams {
    /// Number of nodes.
    pub nodes: u64,
    /// Edges drawn per node (before self-loops and duplicates are dropped).
    pub avg_degree: f64,
    /// Feature dimension.
    pub dim: u32,
    /// Number of planted classes.
    pub classes: u32,
    /// Probability that an edge joins two nodes of the same class by
    /// construction (others join same-class nodes only by chance).
    pub homophily: f64,
    /// Standard deviation of the per-element feature noise (centroids have
    /// unit norm).
    pub feature_noise: f32,
    /// Store dtype of the features.
    pub dtype: Dtype,
    /// Seed of every random choice.
    pub seed: u64,
    /// Train, valid, test fractions (sum at most 1).
    pub split: [f64; 3],
    /// Memory budget in bytes for the whole generation.
    pub memory: u64,
}

impl Default for SynthParams {
    fn default() -> Self {
        SynthParams {
            nodes: 100_000,
            avg_degree: 10.0,
            dim: 64,
            classes: 16,
            homophily: 0.8,
            feature_noise: 1.0,
            dtype: Dtype::F32,
            seed: 0,
            split: [0.1, 0.05, 0.05],
            memory: 2 << 30,
        }
    }
}

impl SynthParams {
    /// Checks ranges; the message names the flag.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::invalid_argument(m));
        if self.nodes == 0 {
            return bad("--nodes must be at least 1".into());
        }
        if !(self.avg_degree >= 0.0 && self.avg_degree.is_finite()) {
            return bad(format!(
                "--avg-degree {} must be a finite number >= 0",
                self.avg_degree
            ));
        }
        if self.classes == 0
            || u64::from(self.classes) > self.nodes
            || self.classes > i32::MAX as u32
        {
            return bad(format!(
                "--classes {} must be between 1 and the node count",
                self.classes
            ));
        }
        if !(0.0..=1.0).contains(&self.homophily) {
            return bad(format!("--homophily {} must be in [0, 1]", self.homophily));
        }
        if !(self.feature_noise >= 0.0 && self.feature_noise.is_finite()) {
            return bad(format!(
                "--feature-noise {} must be a finite number >= 0",
                self.feature_noise
            ));
        }
        if self.split.iter().any(|f| !(0.0..=1.0).contains(f))
            || self.split.iter().sum::<f64>() > 1.0 + 1e-9
        {
            return bad(format!(
                "--split {:?} must be three fractions in [0, 1] summing to at most 1",
                self.split
            ));
        }
        FeatureLayout::new(self.dim, self.dtype)?;
        Ok(())
    }

    fn target_edges(&self) -> u64 {
        (self.nodes as f64 * self.avg_degree).round() as u64
    }
}

/// How raw edges are written by [`generate_raw`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RawEdgeFormat {
    /// `edges.npy`, shape `(E, 2)`, rows `[src, dst]`.
    Npy,
    /// `edges.csv` with a `src,dst` header line.
    Csv,
}

/// What a generation did, for the report.
#[derive(Debug, Clone, Default)]
pub struct SynthReport {
    /// Nodes.
    pub nodes: u64,
    /// Edges drawn.
    pub edges_drawn: u64,
    /// Edges kept (what the store or raw files hold).
    pub edges: u64,
    /// Self-loops dropped.
    pub self_loops_removed: u64,
    /// Duplicate edges dropped.
    pub duplicates_removed: u64,
    /// Bytes of the output (all files).
    pub bytes_written: u64,
    /// Wall time per phase.
    pub phases: Vec<(&'static str, Duration)>,
    /// Where the output is.
    pub path: PathBuf,
}

pub use crate::progress::{NoProgress, Progress};

// ---------------------------------------------------------------- randomness

const PURPOSE_CLASS: u64 = 1;
const PURPOSE_EDGES: u64 = 2;
const PURPOSE_FEATURES: u64 = 3;
const PURPOSE_CENTROIDS: u64 = 4;
const PURPOSE_SPLIT: u64 = 5;

fn uniform_of(seed: u64, purpose: u64, v: u64) -> f64 {
    (stream_seed(seed, purpose, v) >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

// ------------------------------------------------------------------ classes

/// Class assignment, with per-class sorted member lists when there are
/// too many classes for a forward scan to be cheap.
struct Planted {
    seed: u64,
    classes: u32,
    nodes: u64,
    members: Option<Vec<Vec<u64>>>,
}

/// Up to this many classes, the nearest same-class node is found by
/// scanning forward (expected `classes` hash evaluations, no memory);
/// beyond it, by binary search in member lists (8 bytes per node).
const SCAN_CLASSES: u32 = 64;

impl Planted {
    fn new(p: &SynthParams) -> Self {
        let members = (p.classes > SCAN_CLASSES).then(|| {
            let mut members = vec![Vec::new(); p.classes as usize];
            for v in 0..p.nodes {
                members[class_of(p.seed, p.classes, v) as usize].push(v);
            }
            members
        });
        Planted {
            seed: p.seed,
            classes: p.classes,
            nodes: p.nodes,
            members,
        }
    }

    fn class(&self, v: u64) -> u32 {
        class_of(self.seed, self.classes, v)
    }

    /// The nearest node at or after `u` (wrapping) of class `c`; `u` itself
    /// if the class is empty. Both strategies give the same answer.
    fn nearest_in_class(&self, u: u64, c: u32) -> u64 {
        match &self.members {
            Some(members) => {
                let list = &members[c as usize];
                let i = list.partition_point(|&x| x < u);
                list.get(i).or(list.first()).copied().unwrap_or(u)
            }
            None => (0..self.nodes)
                .map(|k| (u + k) % self.nodes)
                .find(|&v| self.class(v) == c)
                .unwrap_or(u),
        }
    }
}

/// The planted class of node `v`.
pub fn class_of(seed: u64, classes: u32, v: u64) -> u32 {
    (stream_seed(seed, PURPOSE_CLASS, v) % u64::from(classes)) as u32
}

// -------------------------------------------------------------------- edges

const EDGE_CHUNK: u64 = 1 << 18;
// R-MAT quadrant thresholds in 1/65536: a = 0.57, a+b = 0.76, a+b+c = 0.95.
const RMAT_A: u64 = 37_356;
const RMAT_AB: u64 = 49_807;
const RMAT_ABC: u64 = 62_259;

fn rmat_pair(rng: &mut Wyrand, scale: u32, n: u64) -> (u64, u64) {
    loop {
        let (mut src, mut dst) = (0u64, 0u64);
        let mut r = 0u64;
        for level in 0..scale {
            if level % 4 == 0 {
                r = rng.next_u64();
            }
            let x = r & 0xffff;
            r >>= 16;
            let (s, d) = if x < RMAT_A {
                (0, 0)
            } else if x < RMAT_AB {
                (0, 1)
            } else if x < RMAT_ABC {
                (1, 0)
            } else {
                (1, 1)
            };
            src = src << 1 | s;
            dst = dst << 1 | d;
        }
        if src < n && dst < n {
            return (src, dst);
        }
    }
}

fn edge_chunk(p: &SynthParams, planted: &Planted, chunk: u64, total: u64) -> Vec<(u64, u64)> {
    let count = (total - chunk * EDGE_CHUNK).min(EDGE_CHUNK);
    let scale = 64 - (p.nodes - 1).leading_zeros();
    let mut rng = Wyrand(stream_seed(p.seed, PURPOSE_EDGES, chunk));
    (0..count)
        .map(|_| {
            let (mut src, dst) = rmat_pair(&mut rng, scale, p.nodes);
            if rng.unit() < p.homophily {
                src = planted.nearest_in_class(src, planted.class(dst));
            }
            (src, dst)
        })
        .collect()
}

/// Draws every edge and builds the CSC lists into `sink`.
fn build_topology(
    p: &SynthParams,
    planted: &Planted,
    scratch: &Path,
    sink: &mut dyn ListSink,
    progress: &dyn Progress,
    phases: &mut Vec<(&'static str, Duration)>,
) -> Result<CscStats> {
    let total = p.target_edges();
    let fixed =
        p.nodes * if p.classes > SCAN_CLASSES { 12 } else { 4 } + (p.memory / 4).min(256 << 20);
    let sort_budget = p.memory.saturating_sub(fixed).max(16 << 20);
    let mut bucketer = EdgeBucketer::new(scratch, p.nodes, total, sort_budget)?;
    let started = Instant::now();
    progress.begin("edges", total);
    let chunks = total.div_ceil(EDGE_CHUNK);
    let window = (rayon::current_num_threads() as u64 * 2).max(2);
    let draw = |from: u64| -> Vec<Vec<(u64, u64)>> {
        let to = (from + window).min(chunks);
        (from..to)
            .into_par_iter()
            .map(|c| edge_chunk(p, planted, c, total))
            .collect()
    };
    // Spill window k while the other threads draw window k + 1.
    let mut ready = draw(0);
    let mut next = window;
    while !ready.is_empty() {
        let spill = |batch: Vec<Vec<(u64, u64)>>, bucketer: &mut EdgeBucketer| -> Result<()> {
            for edges in batch {
                for &(s, d) in &edges {
                    bucketer.push(s, d)?;
                }
                progress.advance(edges.len() as u64);
            }
            Ok(())
        };
        let (spilled, drawn) = rayon::join(
            || spill(std::mem::take(&mut ready), &mut bucketer),
            || {
                if next < chunks {
                    draw(next)
                } else {
                    Vec::new()
                }
            },
        );
        spilled?;
        ready = drawn;
        next += window;
    }
    progress.end();
    phases.push(("draw edges", started.elapsed()));

    let started = Instant::now();
    progress.begin("csc", p.nodes);
    let mut counted = CountingSink {
        inner: sink,
        progress,
        pending: 0,
    };
    let stats = bucketer.finish(
        CscOptions {
            dedup: true,
            remove_self_loops: true,
        },
        &mut counted,
    )?;
    progress.advance(counted.pending);
    progress.end();
    phases.push(("sort + write csc", started.elapsed()));
    Ok(stats)
}

struct CountingSink<'a> {
    inner: &'a mut dyn ListSink,
    progress: &'a dyn Progress,
    pending: u64,
}

impl ListSink for CountingSink<'_> {
    fn push_list(&mut self, list: &[u64]) -> Result<()> {
        self.pending += 1;
        if self.pending == 1 << 16 {
            self.progress.advance(self.pending);
            self.pending = 0;
        }
        self.inner.push_list(list)
    }
}

// ----------------------------------------------------------------- features

fn centroids(p: &SynthParams) -> Vec<f32> {
    let scale = 1.0 / (p.dim as f32).sqrt();
    let mut rng = Wyrand(stream_seed(p.seed, PURPOSE_CENTROIDS, 0));
    (0..u64::from(p.classes) * u64::from(p.dim))
        .map(|_| {
            if rng.next_u64() >> 63 == 0 {
                scale
            } else {
                -scale
            }
        })
        .collect()
}

const FEATURE_BLOCK: u64 = 1 << 14;

/// Writes the encoded feature rows of nodes `first..first + count` to `out`.
fn feature_block(
    p: &SynthParams,
    planted: &Planted,
    centroids: &[f32],
    first: u64,
    count: u64,
    out: &mut Vec<u8>,
) {
    let dim = p.dim as usize;
    let row_bytes = dim * p.dtype.size();
    out.clear();
    out.resize(count as usize * row_bytes, 0);
    out.par_chunks_mut(row_bytes).enumerate().for_each_init(
        || vec![0f32; dim],
        |values, (i, dst)| {
            let v = first + i as u64;
            let c = planted.class(v) as usize;
            let mut rng = Wyrand(stream_seed(p.seed, PURPOSE_FEATURES, v));
            for (x, m) in values.iter_mut().zip(&centroids[c * dim..(c + 1) * dim]) {
                *x = m + p.feature_noise * rng.gaussian();
            }
            p.dtype.encode_f32(values, dst);
        },
    );
}

/// Runs `write` over every block of encoded feature rows, in node order.
fn for_each_feature_block(
    p: &SynthParams,
    planted: &Planted,
    progress: &dyn Progress,
    mut write: impl FnMut(&[u8], u64) -> Result<()>,
) -> Result<()> {
    let centroids = centroids(p);
    let mut buf = Vec::new();
    progress.begin("features", p.nodes);
    let mut first = 0;
    while first < p.nodes {
        let count = FEATURE_BLOCK.min(p.nodes - first);
        feature_block(p, planted, &centroids, first, count, &mut buf);
        write(&buf, count)?;
        progress.advance(count);
        first += count;
    }
    progress.end();
    Ok(())
}

// ------------------------------------------------------------ labels, splits

fn labels(p: &SynthParams, planted: &Planted) -> Vec<i32> {
    (0..p.nodes).map(|v| planted.class(v) as i32).collect()
}

/// The split each node falls in, from a hash of (seed, node).
pub fn splits(p: &SynthParams) -> Splits {
    Splits::by_fraction(p.nodes, p.split, |v| uniform_of(p.seed, PURPOSE_SPLIT, v))
}

// ------------------------------------------------------------------- outputs

/// Generates a store at `out` (which must not exist).
pub fn generate_store(p: &SynthParams, out: &Path, progress: &dyn Progress) -> Result<SynthReport> {
    p.validate()?;
    let layout = FeatureLayout::new(p.dim, p.dtype)?;
    let mut builder = StoreBuilder::create(out, StoreSpec::new(p.nodes, layout))?;
    let mut phases = Vec::new();
    let started = Instant::now();
    let planted = Planted::new(p);
    phases.push(("plant classes", started.elapsed()));

    let mut topo = builder.topology_writer()?;
    let scratch = builder.staging_path().join("scratch");
    let stats = build_topology(p, &planted, &scratch, &mut topo, progress, &mut phases)?;
    builder.add_topology(topo)?;

    let started = Instant::now();
    let mut features = builder.feature_writer()?;
    for_each_feature_block(p, &planted, progress, |bytes, _| features.push_rows(bytes))?;
    builder.add_features(features)?;
    phases.push(("features", started.elapsed()));

    let started = Instant::now();
    builder.write_labels(&labels(p, &planted), p.classes)?;
    builder.write_splits(&splits(p))?;
    let path = builder.finish()?;
    phases.push(("labels + splits + commit", started.elapsed()));
    Ok(report(p, stats, phases, path))
}

fn report(
    p: &SynthParams,
    stats: CscStats,
    phases: Vec<(&'static str, Duration)>,
    path: PathBuf,
) -> SynthReport {
    SynthReport {
        nodes: p.nodes,
        edges_drawn: stats.edges_in,
        edges: stats.edges_out,
        self_loops_removed: stats.self_loops_removed,
        duplicates_removed: stats.duplicates_removed,
        bytes_written: dir_size(&path),
        phases,
        path,
    }
}

fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|it| {
            it.flatten()
                .filter_map(|e| e.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// Writes edges `[src, dst]` in CSC order as `.npy` or CSV.
struct RawEdgeSink {
    npy: Option<NpyWriter>,
    csv: Option<std::io::BufWriter<std::fs::File>>,
    csv_path: PathBuf,
    wide: bool,
    node: u64,
    buf: Vec<u8>,
}

impl ListSink for RawEdgeSink {
    fn push_list(&mut self, list: &[u64]) -> Result<()> {
        use std::io::Write;
        let dst = self.node;
        self.node += 1;
        self.buf.clear();
        if let Some(npy) = &mut self.npy {
            for &src in list {
                if self.wide {
                    self.buf.extend_from_slice(&(src as i64).to_le_bytes());
                    self.buf.extend_from_slice(&(dst as i64).to_le_bytes());
                } else {
                    self.buf.extend_from_slice(&(src as i32).to_le_bytes());
                    self.buf.extend_from_slice(&(dst as i32).to_le_bytes());
                }
            }
            npy.write(&self.buf, 2 * list.len() as u64)?;
        } else if let Some(csv) = &mut self.csv {
            for &src in list {
                writeln!(self.buf, "{src},{dst}")
                    .map_err(|e| Error::io("write", &self.csv_path, e))?;
            }
            csv.write_all(&self.buf)
                .map_err(|e| Error::io("write", &self.csv_path, e))?;
        }
        Ok(())
    }
}

/// Writes the dataset as raw files into the directory `dir` (which must not
/// exist; created atomically like a store): `features.npy`, `labels.npy`,
/// `edges.npy` or `edges.csv`, `train_ids.npy`, `valid_ids.npy`,
/// `test_ids.npy` and `meta.json`. bf16 features are written as `<f4`
/// holding the bf16-rounded values, so importing them as bf16 is exact.
pub fn generate_raw(
    p: &SynthParams,
    dir: &Path,
    edges: RawEdgeFormat,
    progress: &dyn Progress,
) -> Result<SynthReport> {
    p.validate()?;
    let staging = StagingDir::create(dir)?;
    let root = staging.path().to_path_buf();
    let mut phases = Vec::new();
    let started = Instant::now();
    let planted = Planted::new(p);
    phases.push(("plant classes", started.elapsed()));

    let wide = p.nodes > i32::MAX as u64;
    let mut sink = RawEdgeSink {
        npy: None,
        csv: None,
        csv_path: root.join("edges.csv"),
        wide,
        node: 0,
        buf: Vec::new(),
    };
    match edges {
        RawEdgeFormat::Npy => {
            sink.npy = Some(NpyWriter::create(
                &root.join("edges.npy"),
                if wide { "<i8" } else { "<i4" },
                &[2],
            )?)
        }
        RawEdgeFormat::Csv => {
            use std::io::Write;
            let f = std::fs::File::options()
                .write(true)
                .create_new(true)
                .open(&sink.csv_path)
                .map_err(|e| Error::io("create", &sink.csv_path, e))?;
            let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
            w.write_all(b"src,dst\n")
                .map_err(|e| Error::io("write", &sink.csv_path, e))?;
            sink.csv = Some(w);
        }
    }
    let stats = build_topology(
        p,
        &planted,
        &root.join("scratch"),
        &mut sink,
        progress,
        &mut phases,
    )?;
    if let Some(npy) = sink.npy.take() {
        npy.finish()?;
    }
    if let Some(csv) = sink.csv.take() {
        let f = csv
            .into_inner()
            .map_err(|e| Error::io("write", &sink.csv_path, e.into_error()))?;
        f.sync_all()
            .map_err(|e| Error::io("fsync", &sink.csv_path, e))?;
    }

    let started = Instant::now();
    let (descr, export) = match p.dtype {
        Dtype::F16 => ("<f2", Dtype::F16),
        Dtype::F32 | Dtype::Bf16 => ("<f4", Dtype::F32),
    };
    let mut features = NpyWriter::create(&root.join("features.npy"), descr, &[u64::from(p.dim)])?;
    let mut values = Vec::new();
    let mut exported = Vec::new();
    for_each_feature_block(p, &planted, progress, |bytes, count| {
        if export == p.dtype {
            return features.write(bytes, count * u64::from(p.dim));
        }
        // bf16 store dtype: export the bf16-rounded values as f32.
        values.resize(count as usize * p.dim as usize, 0f32);
        p.dtype.decode_to_f32(bytes, &mut values);
        exported.resize(values.len() * 4, 0u8);
        Dtype::F32.encode_f32(&values, &mut exported);
        features.write(&exported, values.len() as u64)
    })?;
    features.finish()?;
    phases.push(("features", started.elapsed()));

    let started = Instant::now();
    let labels: Vec<i64> = labels(p, &planted).into_iter().map(i64::from).collect();
    write_i64_array(&root.join("labels.npy"), &labels)?;
    let s = splits(p);
    for (name, list) in [
        ("train_ids.npy", &s.train),
        ("valid_ids.npy", &s.valid),
        ("test_ids.npy", &s.test),
    ] {
        let ids: Vec<i64> = list.iter().map(|&v| v as i64).collect();
        write_i64_array(&root.join(name), &ids)?;
    }
    let meta = serde_json::json!({
        "num_nodes": p.nodes,
        "num_edges": stats.edges_out,
        "num_classes": p.classes,
        "dim": p.dim,
        "dtype": p.dtype.name(),
        "seed": p.seed,
        "avg_degree": p.avg_degree,
        "homophily": p.homophily,
        "feature_noise": p.feature_noise,
        "split": p.split,
        "edges": match edges { RawEdgeFormat::Npy => "edges.npy", RawEdgeFormat::Csv => "edges.csv" },
    });
    let meta_path = root.join("meta.json");
    std::fs::write(
        &meta_path,
        serde_json::to_vec_pretty(&meta).unwrap_or_default(),
    )
    .map_err(|e| Error::io("write", &meta_path, e))?;
    std::fs::File::open(&meta_path)
        .and_then(|f| f.sync_all())
        .map_err(|e| Error::io("fsync", &meta_path, e))?;
    let path = staging.commit()?;
    phases.push(("labels + splits + commit", started.elapsed()));
    Ok(report(p, stats, phases, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> SynthParams {
        SynthParams {
            nodes: 2000,
            avg_degree: 8.0,
            dim: 16,
            classes: 4,
            seed: 7,
            ..SynthParams::default()
        }
    }

    #[test]
    fn rmat_is_skewed_and_in_range() {
        let mut rng = Wyrand(1);
        let n = 1000;
        let mut deg = vec![0u32; n as usize];
        for _ in 0..100_000 {
            let (s, d) = rmat_pair(&mut rng, 10, n);
            assert!(s < n && d < n);
            deg[d as usize] += 1;
        }
        deg.sort_unstable();
        let top: u32 = deg[deg.len() - 10..].iter().sum();
        // Power law: the top 1% of nodes get far more than 1% of edges.
        assert!(top > 10_000, "top 10 nodes got only {top} of 100000 edges");
    }

    #[test]
    fn scan_and_member_lists_agree() {
        let p = SynthParams {
            classes: SCAN_CLASSES,
            ..small()
        };
        let scan = Planted::new(&p);
        let mut lists = Planted::new(&p);
        let mut members = vec![Vec::new(); p.classes as usize];
        for v in 0..p.nodes {
            members[scan.class(v) as usize].push(v);
        }
        lists.members = Some(members);
        for u in (0..p.nodes).step_by(7) {
            for c in 0..p.classes {
                assert_eq!(
                    scan.nearest_in_class(u, c),
                    lists.nearest_in_class(u, c),
                    "u {u} class {c}"
                );
            }
        }
    }

    #[test]
    fn homophily_plants_same_class_edges() {
        for (h, lo, hi) in [(0.9, 0.85, 1.0), (0.0, 0.0, 0.4)] {
            let p = SynthParams {
                homophily: h,
                ..small()
            };
            let planted = Planted::new(&p);
            let edges = edge_chunk(&p, &planted, 0, 20_000);
            let same = edges
                .iter()
                .filter(|&&(s, d)| planted.class(s) == planted.class(d))
                .count() as f64
                / edges.len() as f64;
            assert!(
                (lo..=hi).contains(&same),
                "homophily {h}: same-class fraction {same}"
            );
        }
    }

    #[test]
    fn neighbour_mean_beats_own_features() {
        // Nearest-centroid accuracy from a node's own features versus from
        // the mean of its in-neighbours' features: the planted signal must
        // need the graph.
        let p = SynthParams {
            nodes: 3000,
            avg_degree: 15.0,
            dim: 32,
            classes: 8,
            homophily: 0.9,
            seed: 3,
            ..SynthParams::default()
        };
        let planted = Planted::new(&p);
        let cents = centroids(&p);
        let mut feats = Vec::new();
        feature_block(&p, &planted, &cents, 0, p.nodes, &mut feats);
        let mut values = vec![0f32; feats.len() / 4];
        Dtype::F32.decode_to_f32(&feats, &mut values);
        let dim = p.dim as usize;
        let mut lists = vec![Vec::new(); p.nodes as usize];
        for (s, d) in edge_chunk(&p, &planted, 0, p.target_edges()) {
            lists[d as usize].push(s);
        }
        let predict = |x: &[f32]| {
            (0..p.classes as usize)
                .max_by(|&a, &b| {
                    let dot = |c: usize| {
                        x.iter()
                            .zip(&cents[c * dim..(c + 1) * dim])
                            .map(|(u, v)| u * v)
                            .sum::<f32>()
                    };
                    dot(a).total_cmp(&dot(b))
                })
                .unwrap_or(0) as u32
        };
        let (mut own, mut neigh, mut counted) = (0, 0, 0);
        for v in 0..p.nodes as usize {
            if lists[v].len() < 3 {
                continue;
            }
            counted += 1;
            let c = planted.class(v as u64);
            own += (predict(&values[v * dim..(v + 1) * dim]) == c) as u32;
            let mut mean = vec![0f32; dim];
            for &u in &lists[v] {
                for (m, x) in mean
                    .iter_mut()
                    .zip(&values[u as usize * dim..(u as usize + 1) * dim])
                {
                    *m += x;
                }
            }
            neigh += (predict(&mean) == c) as u32;
        }
        assert!(counted > 500);
        assert!(
            neigh > own + counted / 5,
            "own {own}, neighbours {neigh} of {counted}"
        );
    }

    #[test]
    fn store_is_deterministic_across_thread_counts() {
        let dir = tempfile::tempdir().unwrap();
        let run = |threads: usize, name: &str| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let out = dir.path().join(name);
            pool.install(|| generate_store(&small(), &out, &NoProgress))
                .unwrap();
            out
        };
        let a = run(1, "a");
        let b = run(3, "b");
        for f in [
            "MANIFEST",
            "features.pages",
            "features.crc",
            "indptr",
            "indices",
            "indices.seg",
            "labels",
            "splits",
        ] {
            assert_eq!(
                std::fs::read(a.join(f)).unwrap(),
                std::fs::read(b.join(f)).unwrap(),
                "{f} differs"
            );
        }
        let store = crate::Store::open(&a).unwrap();
        store.verify().unwrap();
        assert!(store.num_edges() > 8000 && store.num_edges() <= 16_000);
    }

    #[test]
    fn invalid_parameters_name_the_flag() {
        for (p, flag) in [
            (
                SynthParams {
                    nodes: 0,
                    ..small()
                },
                "--nodes",
            ),
            (
                SynthParams {
                    homophily: 1.5,
                    ..small()
                },
                "--homophily",
            ),
            (
                SynthParams {
                    split: [0.9, 0.2, 0.0],
                    ..small()
                },
                "--split",
            ),
            (
                SynthParams {
                    classes: 0,
                    ..small()
                },
                "--classes",
            ),
        ] {
            let err = p.validate().unwrap_err().to_string();
            assert!(err.contains(flag), "{err}");
        }
    }
}
