//! `ginex-import files`: a store from an edge list (text or `.npy`), a
//! feature matrix (`.npy`), optional labels and splits. Streams everything;
//! the CSC build goes through the out-of-core bucketer; the store is written
//! atomically and verified at the end.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::format::pages::{Dtype, FeatureLayout};
use crate::format::tables::Splits;
use crate::import::npy::{NpyFile, NpyType};
use crate::import::text::TextEdges;
use crate::rng::stream_seed;
use crate::store::edges::{CscOptions, CscStats, EdgeBucketer};
use crate::store::{Store, StoreBuilder, StoreSpec};

/// What to import.
#[derive(Debug, Clone)]
pub struct FilesImport {
    /// Edge list: `.npy` of shape (E, 2) or (2, E), or text (`.gz` allowed).
    pub edges: PathBuf,
    /// Feature matrix `.npy` of shape (N, dim); N is the node count.
    pub features: PathBuf,
    /// Store dtype of the features.
    pub dtype: Dtype,
    /// Labels `.npy` of shape (N,) or (N, 1): integers (-1 = missing) or
    /// floats (NaN = missing).
    pub labels: Option<PathBuf>,
    /// Number of classes (default: largest label + 1).
    pub num_classes: Option<u32>,
    /// Split id files (`.npy` or one id per line).
    pub split_files: [Option<PathBuf>; 3],
    /// Seeded random split fractions instead of files.
    pub split: Option<[f64; 3]>,
    /// Seed of the random split.
    pub seed: u64,
    /// Add the reverse of every edge.
    pub undirected: bool,
    /// CSC options (dedup, self-loops).
    pub csc: CscOptions,
    /// Node count to require (must equal the feature rows).
    pub num_nodes: Option<u64>,
    /// Accept NaN/Inf features.
    pub allow_nonfinite: bool,
    /// Memory budget in bytes.
    pub memory: u64,
    /// The store to create.
    pub out: PathBuf,
}

/// What an import did.
#[derive(Debug, Clone, Default)]
pub struct ImportReport {
    /// Nodes.
    pub nodes: u64,
    /// Edges read from the input.
    pub edges_read: u64,
    /// CSC statistics.
    pub csc: CscStats,
    /// Wall time per phase.
    pub phases: Vec<(&'static str, Duration)>,
}

fn bad(path: &Path, index: Option<u64>, reason: String) -> Error {
    Error::InvalidInput {
        source_file: path.to_path_buf(),
        line: index,
        reason,
    }
}

/// Checks an id against the node count; `at` is the 1-based line or
/// element number for the message.
fn node_id(raw: i128, n: u64, path: &Path, at: u64, what: &str) -> Result<u64> {
    if raw < 0 || raw >= i128::from(n) {
        return Err(bad(
            path,
            Some(at),
            format!("{what} {raw} is not a node id in 0..{n} (the feature matrix has {n} rows)"),
        ));
    }
    Ok(raw as u64)
}

/// Feeds every edge to `push`.
fn read_edges(path: &Path, n: u64, push: &mut dyn FnMut(u64, u64) -> Result<()>) -> Result<u64> {
    let is_npy = path.extension().is_some_and(|e| e == "npy");
    let mut count = 0u64;
    if is_npy {
        let f = NpyFile::open(path)?;
        let h = &f.header;
        if !matches!(h.dtype, NpyType::Int(_) | NpyType::Uint(_)) {
            return Err(bad(
                path,
                None,
                format!("edge ids must be integers, the array holds {:?}", h.dtype),
            ));
        }
        let (e, pairs_in_rows) = match h.shape.as_slice() {
            [e, 2] if !h.fortran_order => (*e, true),
            [2, e] if !h.fortran_order => (*e, false),
            [e, 2] => (*e, false), // Fortran (E, 2) is laid out like C (2, E)
            [2, e] => (*e, true),
            s => {
                return Err(bad(
                    path,
                    None,
                    format!("edge array has shape {s:?}; expected (E, 2) or (2, E)"),
                ))
            }
        };
        for i in 0..e {
            let (si, di) = if pairs_in_rows {
                (2 * i, 2 * i + 1)
            } else {
                (i, e + i)
            };
            let s = f.int_at(si as usize).unwrap_or(-1);
            let d = f.int_at(di as usize).unwrap_or(-1);
            push(
                node_id(s, n, path, i + 1, "edge source")?,
                node_id(d, n, path, i + 1, "edge target")?,
            )?;
            count += 1;
        }
    } else {
        let mut t = TextEdges::open(path)?;
        while let Some((s, d)) = t.next_edge()? {
            count += 1;
            let line = t.line();
            push(
                node_id(s, n, path, line, "edge source")?,
                node_id(d, n, path, line, "edge target")?,
            )?;
        }
    }
    Ok(count)
}

/// Reads a list of node ids (`.npy` or text, one per line).
fn read_ids(path: &Path, n: u64) -> Result<Vec<u64>> {
    let mut ids = Vec::new();
    if path.extension().is_some_and(|e| e == "npy") {
        let f = NpyFile::open(path)?;
        if f.header.shape.len() > 2 || f.header.shape.get(1).is_some_and(|&c| c != 1) {
            return Err(bad(
                path,
                None,
                format!(
                    "id array has shape {:?}; expected (K,) or (K, 1)",
                    f.header.shape
                ),
            ));
        }
        for i in 0..f.header.len().unwrap_or(0) {
            let v = f
                .int_at(i as usize)
                .ok_or_else(|| bad(path, Some(i + 1), "ids must be integers".into()))?;
            ids.push(node_id(v, n, path, i + 1, "id")?);
        }
    } else {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io("read", path, e))?;
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let v: i128 = line.parse().map_err(|_| {
                bad(
                    path,
                    Some(i as u64 + 1),
                    format!("{line:?} is not an integer id"),
                )
            })?;
            ids.push(node_id(v, n, path, i as u64 + 1, "id")?);
        }
    }
    let before = ids.len();
    ids.sort_unstable();
    ids.dedup();
    if ids.len() != before {
        return Err(bad(
            path,
            None,
            format!("{} ids appear more than once", before - ids.len()),
        ));
    }
    Ok(ids)
}

/// Imports a store; see [`FilesImport`].
pub fn import_files(opts: &FilesImport) -> Result<ImportReport> {
    let mut report = ImportReport::default();
    let feats = NpyFile::open(&opts.features)?;
    let fh = feats.header.clone();
    let [n, dim] = match fh.shape.as_slice() {
        [n, d] => [*n, *d],
        s => {
            return Err(bad(
                &opts.features,
                None,
                format!("features have shape {s:?}; expected (nodes, dim)"),
            ))
        }
    };
    if fh.fortran_order {
        return Err(bad(&opts.features, None, "features are in Fortran (column-major) order; save them C-ordered (numpy.ascontiguousarray)".into()));
    }
    if !matches!(fh.dtype, NpyType::Float(_)) {
        return Err(bad(
            &opts.features,
            None,
            format!("features must be float16/32/64, not {:?}", fh.dtype),
        ));
    }
    if let Some(want) = opts.num_nodes.filter(|&w| w != n) {
        return Err(bad(
            &opts.features,
            None,
            format!("--num-nodes {want} but the feature matrix has {n} rows"),
        ));
    }
    let dim32 = u32::try_from(dim).map_err(|_| {
        bad(
            &opts.features,
            None,
            format!("feature dimension {dim} is too large"),
        )
    })?;
    let layout = FeatureLayout::new(dim32, opts.dtype)?;
    let mut builder = StoreBuilder::create(&opts.out, StoreSpec::new(n, layout))?;

    // Topology.
    let started = Instant::now();
    let scratch = builder.staging_path().join("scratch");
    let mut bucketer = EdgeBucketer::new(&scratch, n, 0, opts.memory / 2)?;
    let undirected = opts.undirected;
    report.edges_read = read_edges(&opts.edges, n, &mut |s, d| {
        bucketer.push(s, d)?;
        if undirected && s != d {
            bucketer.push(d, s)?;
        }
        Ok(())
    })?;
    let mut topo = builder.topology_writer()?;
    report.csc = bucketer.finish(opts.csc, &mut topo)?;
    builder.add_topology(topo)?;
    report.phases.push(("edges + csc", started.elapsed()));

    // Features: read block by block with positional reads (no mapping, so
    // resident memory stays at one block), converted to the store dtype.
    let started = Instant::now();
    let mut fw = builder.feature_writer()?;
    let esize = fh.dtype.size();
    let block_rows = ((8usize << 20) / (dim as usize * esize).max(1)).max(1) as u64;
    let file = crate::io::read::open(&opts.features)?;
    let mut raw = Vec::new();
    let mut values: Vec<f32> = Vec::new();
    let mut bytes = Vec::new();
    for first in (0..n).step_by(block_rows as usize) {
        let rows = block_rows.min(n - first);
        let count = (rows * dim) as usize;
        raw.resize(count * esize, 0);
        let offset = fh.data_offset + first * dim * esize as u64;
        crate::io::read::read_exact_at(&file, &opts.features, offset, &mut raw)?;
        values.clear();
        values.extend(raw.chunks_exact(esize).map(|c| {
            let mut b = [0u8; 8];
            b[..esize].copy_from_slice(c);
            if fh.big_endian {
                b[..esize].reverse();
            }
            match esize {
                2 => half::f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32(),
                4 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
                _ => f64::from_le_bytes(b) as f32,
            }
        }));
        if !opts.allow_nonfinite {
            if let Some(k) = values.iter().position(|x| !x.is_finite()) {
                let i = first * dim + k as u64;
                return Err(bad(
                    &opts.features,
                    Some(i / dim + 1),
                    format!(
                        "row {} column {} is {}; pass --allow-nonfinite to keep NaN/Inf",
                        i / dim,
                        i % dim,
                        values[k]
                    ),
                ));
            }
        }
        bytes.resize(values.len() * opts.dtype.size(), 0);
        opts.dtype.encode_f32(&values, &mut bytes);
        fw.push_rows(&bytes)?;
    }
    builder.add_features(fw)?;
    report.phases.push(("features", started.elapsed()));

    // Labels.
    let started = Instant::now();
    if let Some(path) = &opts.labels {
        let f = NpyFile::open(path)?;
        let shape_ok = matches!(f.header.shape.as_slice(), [m] | [m, 1] if *m == n);
        if !shape_ok {
            return Err(bad(
                path,
                None,
                format!(
                    "labels have shape {:?}; expected ({n},) or ({n}, 1)",
                    f.header.shape
                ),
            ));
        }
        let mut labels = Vec::with_capacity(n as usize);
        for i in 0..n as usize {
            let l = match f.header.dtype {
                NpyType::Float(_) => {
                    let x = f.float_at(i).unwrap_or(f64::NAN);
                    if x.is_nan() {
                        -1
                    } else if x.fract() != 0.0 || !(-1.0..=f64::from(i32::MAX)).contains(&x) {
                        return Err(bad(
                            path,
                            Some(i as u64 + 1),
                            format!(
                                "label of node {i} is {x}; labels must be whole numbers or NaN"
                            ),
                        ));
                    } else {
                        x as i64
                    }
                }
                _ => f.int_at(i).unwrap_or(-1) as i64,
            };
            if l < -1 || l > i64::from(i32::MAX) {
                return Err(bad(
                    path,
                    Some(i as u64 + 1),
                    format!("label of node {i} is {l}; use -1 (or NaN) for a missing label"),
                ));
            }
            labels.push(l as i32);
        }
        let max = labels.iter().copied().max().unwrap_or(-1);
        let classes = opts.num_classes.unwrap_or((max + 1).max(1) as u32);
        if i64::from(max) >= i64::from(classes) {
            return Err(bad(
                path,
                None,
                format!("label {max} is not below --num-classes {classes}"),
            ));
        }
        builder.write_labels(&labels, classes)?;
    }

    // Splits.
    let splits = if opts.split_files.iter().any(Option::is_some) {
        let mut lists: Vec<Vec<u64>> = Vec::new();
        for f in &opts.split_files {
            lists.push(match f {
                Some(p) => read_ids(p, n)?,
                None => Vec::new(),
            });
        }
        let s = Splits {
            test: lists.pop().unwrap_or_default(),
            valid: lists.pop().unwrap_or_default(),
            train: lists.pop().unwrap_or_default(),
        };
        if let Some(id) = s.first_overlap() {
            return Err(Error::invalid_argument(format!(
                "node {id} is in more than one of --train-ids / --valid-ids / --test-ids"
            )));
        }
        Some(s)
    } else {
        opts.split.map(|[a, b, c]| {
            let mut s = Splits::default();
            for v in 0..n {
                let u = (stream_seed(opts.seed, 31, v) >> 11) as f64 / (1u64 << 53) as f64;
                if u < a {
                    s.train.push(v);
                } else if u < a + b {
                    s.valid.push(v);
                } else if u < a + b + c {
                    s.test.push(v);
                }
            }
            s
        })
    };
    if let Some(s) = &splits {
        builder.write_splits(s)?;
    }
    let path = builder.finish()?;
    report
        .phases
        .push(("labels + splits + commit", started.elapsed()));

    let started = Instant::now();
    Store::open(&path)?.verify()?;
    report.phases.push(("verify", started.elapsed()));
    report.nodes = n;
    Ok(report)
}
