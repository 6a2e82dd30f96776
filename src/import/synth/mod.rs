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
//! CSC build goes through [`EdgeBucketer`](crate::store::edges::EdgeBucketer) within the memory budget.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::format::pages::{Dtype, FeatureLayout};
use crate::rng::{purpose_key, stream_seed, stream_seed_keyed};
use crate::store::edges::CscStats;
use crate::store::{StoreBuilder, StoreSpec};

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
    /// A typed graph shaped like MAG (see [`hetero`]): papers with
    /// features, labels and splits; featureless authors and fields.
    pub hetero: bool,
    /// With `hetero`: authors' own features, of this dimension and dtype
    /// (their planted class's centroid plus noise, as papers'); `None`
    /// leaves them featureless.
    pub author_features: Option<(u32, Dtype)>,
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
            hetero: false,
            author_features: None,
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
        if let Some((dim, dtype)) = self.author_features {
            if !self.hetero {
                return bad("--author-dim gives authors features: it needs --hetero".into());
            }
            FeatureLayout::new(dim, dtype)?;
        }
        Ok(())
    }

    /// The layout rows are read in: the papers' (and, when authors have
    /// features of another layout, the row format of both: schema.md).
    fn row_format(&self) -> Result<FeatureLayout> {
        let papers = FeatureLayout::new(self.dim, self.dtype)?;
        Ok(match self.author_features {
            Some((dim, dtype)) => FeatureLayout {
                dim: dim.max(self.dim),
                dtype: if dtype == self.dtype {
                    dtype
                } else {
                    Dtype::F32
                },
            },
            None => papers,
        })
    }

    /// The parameters that draw the authors' features (None: featureless).
    fn author_params(&self) -> Option<SynthParams> {
        let (dim, dtype) = self.author_features?;
        Some(SynthParams {
            dim,
            dtype,
            author_features: None,
            ..self.clone()
        })
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
    /// `purpose_key(seed, PURPOSE_CLASS)`: a class costs one mix.
    class_key: u64,
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
            class_key: purpose_key(p.seed, PURPOSE_CLASS),
            classes: p.classes,
            nodes: p.nodes,
            members,
        }
    }

    /// [`class_of`] this graph's node `v`.
    fn class(&self, v: u64) -> u32 {
        class_keyed(self.class_key, self.classes, v)
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
                .map(|k| {
                    // (u + k) mod nodes, without a division: u < nodes.
                    let v = u + k;
                    if v >= self.nodes {
                        v - self.nodes
                    } else {
                        v
                    }
                })
                .find(|&v| self.class(v) == c)
                .unwrap_or(u),
        }
    }
}

/// The planted class of node `v`.
pub fn class_of(seed: u64, classes: u32, v: u64) -> u32 {
    class_keyed(purpose_key(seed, PURPOSE_CLASS), classes, v)
}

/// [`class_of`] from the class purpose's key.
fn class_keyed(class_key: u64, classes: u32, v: u64) -> u32 {
    (stream_seed_keyed(class_key, v) % u64::from(classes)) as u32
}

mod features;
pub mod hetero;
mod raw;
mod topology;

pub use features::splits;
use features::{centroids, feature_block};
use features::{for_each_feature_block, labels};
pub use raw::generate_raw;
use topology::build_topology;
#[cfg(test)]
use topology::{edge_chunk, rmat_pair, rmat_quadrant};

// ------------------------------------------------------------------- outputs

/// Generates a store at `out` (which must not exist).
pub fn generate_store(p: &SynthParams, out: &Path, progress: &dyn Progress) -> Result<SynthReport> {
    p.validate()?;
    let layout = p.row_format()?;
    check_space(p, out, None)?;
    let mut builder = StoreBuilder::create(out, StoreSpec::new(p.nodes, layout))?;
    let mut phases = Vec::new();
    let started = Instant::now();
    let planted = Planted::new(p);
    phases.push(("plant classes", started.elapsed()));

    let schema = p.hetero.then(|| {
        let papers = FeatureLayout::new(p.dim, p.dtype).unwrap_or(layout);
        let authors = p
            .author_params()
            .map(|a| FeatureLayout::new(a.dim, a.dtype).unwrap_or(layout));
        hetero::hetero_schema(p.nodes, papers, authors)
    });
    let mut topo = builder.topology_writer()?;
    let scratch = builder.staging_path().join("scratch");
    let stats = match &schema {
        None => build_topology(p, &planted, &scratch, &mut topo, progress, &mut phases)?,
        Some(schema) => {
            let mut counting = crate::store::relation_counts::CountingSink {
                inner: &mut topo,
                counts: crate::store::relation_counts::RelationCounts::new(schema),
                next: 0,
            };
            let stats =
                build_topology(p, &planted, &scratch, &mut counting, progress, &mut phases)?;
            let counts = counting.counts.counts().to_vec();
            builder.set_schema(schema.clone());
            builder.set_relation_edges(&counts)?;
            stats
        }
    };
    builder.add_topology(topo)?;

    // Typed: features, labels and splits on papers (the first ids) only.
    let papers = schema
        .as_ref()
        .and_then(|s| s.node_types.first())
        .map_or(p.nodes, |t| t.count);
    let started = Instant::now();
    let mut features = builder.feature_writer()?;
    let row_bytes = FeatureLayout::new(p.dim, p.dtype)?.row_bytes();
    let mut written = 0u64;
    for_each_feature_block(p, &planted, progress, |bytes, count, measured| {
        let keep = count.min(papers.saturating_sub(written));
        if keep == count {
            features.record_q8_error(measured); // else it measured rows not kept
        }
        written += count;
        features.push_rows(bytes.get(..keep as usize * row_bytes).unwrap_or_default())
    })?;
    if let (Some(a), Some(schema)) = (p.author_params(), &schema) {
        let authors = &schema.node_types[1];
        let centroids = centroids(&a);
        let mut buf = Vec::new();
        for first in authors.ids().step_by(features::FEATURE_BLOCK as usize) {
            let count = features::FEATURE_BLOCK.min(authors.offset + authors.count - first);
            let measured = feature_block(&a, &planted, &centroids, first, count, &mut buf);
            features.record_q8_error(measured);
            features.push_rows(&buf)?;
        }
    }
    builder.add_features(features)?;
    phases.push(("features", started.elapsed()));

    let started = Instant::now();
    let mut labels = labels(p, &planted);
    labels
        .iter_mut()
        .skip(papers as usize)
        .for_each(|l| *l = crate::format::tables::MISSING_LABEL);
    builder.write_labels(&labels, p.classes)?;
    let mut splits = splits(p);
    for list in [&mut splits.train, &mut splits.valid, &mut splits.test] {
        list.retain(|&v| v < papers);
    }
    builder.write_splits(&splits)?;
    let path = builder.finish()?;
    phases.push(("labels + splits + commit", started.elapsed()));
    Ok(report(p, stats, phases, path))
}

/// Bytes `ginex gen` writes (about: edges are counted as drawn, before
/// self-loops and duplicates are dropped): a store's feature pages and
/// checksums, `indptr`, `indices`, labels and splits; or with `raw` the
/// `.npy` / `.csv` files. `None` when the count overflows `u64`.
pub fn generated_bytes(p: &SynthParams, raw: Option<RawEdgeFormat>) -> Option<u64> {
    let n = p.nodes;
    let e = p.target_edges();
    let split_ids = (p.split.iter().sum::<f64>().clamp(0.0, 1.0) * n as f64) as u64;
    match raw {
        None => {
            // The row format bounds every type's rows (the widest, in the
            // widest dtype).
            let layout = p.row_format().ok()?;
            crate::import::pipeline::store_bytes(&layout, n, e, false)?
                .checked_add(n.checked_mul(4)?)?
                .checked_add(split_ids.checked_mul(8)?)
        }
        Some(format) => {
            let elem = if p.dtype == Dtype::F16 { 2 } else { 4 };
            let features = n.checked_mul(u64::from(p.dim))?.checked_mul(elem)?;
            let edges = match format {
                RawEdgeFormat::Npy => e.checked_mul(if n > i32::MAX as u64 { 16 } else { 8 })?,
                // Two ids of at most as many digits as the largest, a comma
                // and a newline.
                RawEdgeFormat::Csv => {
                    let digits = n.saturating_sub(1).max(1).ilog10() as u64 + 1;
                    e.checked_mul(2 * digits + 2)?
                }
            };
            features
                .checked_add(edges)?
                .checked_add(n.checked_mul(8)?)?
                .checked_add(split_ids.checked_mul(8)?)
        }
    }
}

/// Refuses, before anything is written, output larger than the free space
/// of the directory `out` goes in ([`crate::io::space::free_space`]),
/// naming both numbers.
pub fn check_space(p: &SynthParams, out: &Path, raw: Option<RawEdgeFormat>) -> Result<()> {
    let parent = match out.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !parent.is_dir() {
        return Ok(()); // the writer names what is wrong with the parent
    }
    let free = crate::io::space::free_space(&parent)?;
    // The drawn edges are spilled to sort them (as an import's are) before
    // the first list is written: at that moment the staging directory
    // holds twice the store's indices, more than the output for most
    // shapes (issue 32).
    let spill = crate::import::pipeline::import_scratch_bytes(p.nodes, p.target_edges(), false);
    let need = generated_bytes(p, raw).and_then(|b| Some(b.max(spill?)));
    if need.is_some_and(|b| b <= free) {
        return Ok(());
    }
    let need = need.map_or_else(
        || "more than 2^64 bytes".to_string(),
        |b| format!("about {b} bytes ({})", crate::size::format_bytes(b)),
    );
    Err(Error::invalid_argument(format!(
        "{}: the {} needs {need} for {} nodes × {} features of {} and {} edges drawn, but {} has {free} bytes ({}) free; nothing was written; lower --nodes, --avg-degree or --dim, or write elsewhere",
        out.display(),
        if raw.is_some() { "raw output" } else { "store" },
        p.nodes,
        p.dim,
        p.dtype.name(),
        p.target_edges(),
        parent.display(),
        crate::size::format_bytes(free)
    )))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Wyrand;

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
    fn rmat_quadrants_split_at_the_thresholds() {
        use topology::{RMAT_A, RMAT_AB, RMAT_ABC};
        let cases = [
            (0, (0, 0)),
            (RMAT_A - 1, (0, 0)),
            (RMAT_A, (0, 1)),
            (RMAT_AB - 1, (0, 1)),
            (RMAT_AB, (1, 0)),
            (RMAT_ABC - 1, (1, 0)),
            (RMAT_ABC, (1, 1)),
            (0xffff, (1, 1)),
        ];
        for (bits, quadrant) in cases {
            assert_eq!(rmat_quadrant(bits), quadrant, "bits {bits}");
        }
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
            assert_eq!(scan.class(v), class_of(p.seed, p.classes, v), "node {v}");
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
        Dtype::F32.decode_to_f32(p.dim as usize, &feats, &mut values);
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
