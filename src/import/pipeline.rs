//! The part every importer shares: a [`Build`] wraps the store builder and
//! takes edges (checked, optionally remapped and mirrored, spilled to the
//! out-of-core bucketer), feature rows (checked for NaN/Inf, converted to
//! the store dtype, streamed), labels, splits and original ids, then
//! commits and verifies. The format readers ([`edges_from`],
//! [`features_from_npy`], [`labels_from_npy`], [`read_ids`]) stream their
//! inputs in blocks, so resident memory stays near one block plus the
//! bucketer's sort buffer.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::format::csc::DEFAULT_SEGMENT_BYTES;
use crate::format::pages::{Dtype, FeatureLayout};
use crate::format::tables::Splits;
use crate::import::npy::{NpyFile, NpyType};
use crate::import::remap::IdMap;
use crate::import::text::{IdLines, TextEdges};
use crate::progress::Bar;
use crate::rng::stream_seed;
use crate::store::edges::{CscOptions, CscStats, EdgeBucketer};
use crate::store::{FeatureWriter, Store, StoreBuilder, StoreSpec};

/// Options every importer takes.
#[derive(Debug, Clone)]
pub struct CommonOptions {
    /// Store dtype of the features.
    pub dtype: Dtype,
    /// Add the reverse of every edge.
    pub undirected: bool,
    /// CSC options (dedup, self-loops).
    pub csc: CscOptions,
    /// Accept NaN/Inf features.
    pub allow_nonfinite: bool,
    /// Memory budget in bytes.
    pub memory: u64,
    /// No progress bars.
    pub quiet: bool,
    /// The store to create.
    pub out: PathBuf,
    /// Target bytes per CSC segment of the store (a build parameter, not
    /// data: only a byte-exact rebuild of a store made with another value
    /// needs to change it).
    pub segment_bytes: u64,
}

impl CommonOptions {
    /// Defaults for `out`: f32, directed, keep duplicates and self-loops, 2 GiB.
    pub fn new(out: impl Into<PathBuf>) -> Self {
        CommonOptions {
            dtype: Dtype::F32,
            undirected: false,
            csc: CscOptions::default(),
            allow_nonfinite: false,
            memory: 2 << 30,
            quiet: true,
            out: out.into(),
            segment_bytes: DEFAULT_SEGMENT_BYTES,
        }
    }
}

/// What an import did.
#[derive(Debug, Clone, Default)]
pub struct ImportReport {
    /// The store written.
    pub path: PathBuf,
    /// Nodes.
    pub nodes: u64,
    /// Edges read from the input.
    pub edges_read: u64,
    /// CSC statistics.
    pub csc: CscStats,
    /// Wall time per phase.
    pub phases: Vec<(&'static str, Duration)>,
}

/// An error about `path` at 1-based position `at` (line or element).
pub fn bad(path: &Path, at: Option<u64>, reason: impl Into<String>) -> Error {
    Error::InvalidInput {
        source_file: path.to_path_buf(),
        line: at,
        reason: reason.into(),
    }
}

/// The progress of one import phase (see [`crate::progress`]); `total` 0
/// gives a counter without a bar.
pub fn progress(total: u64, what: &str, quiet: bool) -> Bar {
    Bar::new(total, what, quiet)
}

/// Where edges come from.
pub enum EdgeInput {
    /// An integer array of shape (E, 2) or (2, E).
    Array(NpyFile),
    /// A text edge list; `delimiter` `None` detects it on the first line.
    Text {
        /// The file (`.gz` decompressed).
        path: PathBuf,
        /// A fixed single-byte delimiter (DGL's `csv` `delimiter`).
        delimiter: Option<u8>,
    },
}

impl EdgeInput {
    /// `.npy` → array, anything else → text with a detected delimiter.
    pub fn from_path(path: &Path) -> Result<Self> {
        if path.extension().is_some_and(|e| e == "npy") {
            Ok(EdgeInput::Array(NpyFile::open(path)?))
        } else {
            Ok(EdgeInput::Text {
                path: path.to_path_buf(),
                delimiter: None,
            })
        }
    }

    /// The file for messages.
    pub fn path(&self) -> &Path {
        match self {
            EdgeInput::Array(f) => &f.path,
            EdgeInput::Text { path, .. } => path,
        }
    }
}

/// Calls `f(src, dst, position)` for every edge of `input` (position: the
/// 1-based line of a text file or row of an array); returns the count.
pub fn edges_from(
    input: &EdgeInput,
    f: &mut dyn FnMut(i128, i128, u64) -> Result<()>,
) -> Result<u64> {
    match input {
        EdgeInput::Array(a) => {
            let h = &a.header;
            let path = &a.path;
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
            const BLOCK: u64 = 1 << 20;
            let (mut raw, mut a0, mut a1) = (Vec::new(), Vec::new(), Vec::new());
            for first in (0..e).step_by(BLOCK as usize) {
                let k = BLOCK.min(e - first);
                if pairs_in_rows {
                    a.read_ints(2 * first, 2 * k as usize, &mut raw, &mut a0)?;
                    for (i, pair) in a0.chunks_exact(2).enumerate() {
                        if let [s, d] = pair {
                            f(*s, *d, first + i as u64 + 1)?;
                        }
                    }
                } else {
                    a.read_ints(first, k as usize, &mut raw, &mut a0)?;
                    a.read_ints(e + first, k as usize, &mut raw, &mut a1)?;
                    for (i, (s, d)) in a0.iter().zip(&a1).enumerate() {
                        f(*s, *d, first + i as u64 + 1)?;
                    }
                }
            }
            Ok(e)
        }
        EdgeInput::Text { path, delimiter } => {
            let before = FileStamp::of(path);
            let mut t = TextEdges::open(path)?;
            if let Some(d) = delimiter {
                t = t.with_delimiter(*d);
            }
            let mut count = 0u64;
            while let Some((s, d)) = t.next_edge()? {
                count += 1;
                f(s, d, t.line())?;
            }
            if let (Some(a), b) = (before, FileStamp::of(path)) {
                if Some(a) != b {
                    return Err(bad(
                        path,
                        None,
                        format!(
                            "the file changed while it was read ({} bytes before, {} after, or a new modification time): was it truncated or rewritten during the import? {count} edges were read",
                            a.len,
                            b.map_or_else(|| "gone".to_string(), |b| b.len.to_string())
                        ),
                    ));
                }
            }
            Ok(count)
        }
    }
}

/// Length and modification time of a regular file, to notice a file
/// that changes while it is read (pipes and devices have none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileStamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
}

impl FileStamp {
    fn of(path: &Path) -> Option<FileStamp> {
        let m = std::fs::metadata(path)
            .ok()
            .filter(std::fs::Metadata::is_file)?;
        Some(FileStamp {
            len: m.len(),
            modified: m.modified().ok(),
        })
    }
}

/// Refuses an input whose passes disagree: `first` edges counted by a
/// first pass (sizing, id collection) and `second` by the build.
pub fn check_passes(path: &Path, first: u64, second: u64) -> Result<()> {
    if first == second {
        return Ok(());
    }
    Err(bad(
        path,
        None,
        format!(
            "the first pass read {first} edges but the second read {second}: the file changed during the import (truncated, rewritten, or a stream that cannot be read twice)"
        ),
    ))
}

/// Checks `raw` as an id of a graph of `n` nodes (or maps it through `map`).
pub fn node_id(
    raw: i128,
    n: u64,
    map: Option<&IdMap>,
    path: &Path,
    at: u64,
    what: &str,
) -> Result<u64> {
    if let Some(m) = map {
        return u64::try_from(raw)
            .ok()
            .and_then(|v| m.get(v))
            .ok_or_else(|| {
                bad(
                    path,
                    Some(at),
                    format!(
                        "{what} {raw} does not occur in the edge list (ids were remapped from it)"
                    ),
                )
            });
    }
    if raw < 0 || raw >= i128::from(n) {
        return Err(bad(
            path,
            Some(at),
            format!("{what} {raw} is not a node id in 0..{n}"),
        ));
    }
    Ok(raw as u64)
}

/// Feeds checked, remapped edges to the bucketer.
pub struct EdgeSink<'a> {
    bucketer: &'a mut EdgeBucketer,
    n: u64,
    map: Option<&'a IdMap>,
    undirected: bool,
    bar: &'a Bar,
    read: u64,
    /// Set when the feature thread failed: stop early.
    cancel: &'a AtomicBool,
}

impl EdgeSink<'_> {
    /// Pushes every edge of `input`; returns how many it held.
    pub fn push_input(&mut self, input: &EdgeInput) -> Result<u64> {
        let path = input.path().to_path_buf();
        edges_from(input, &mut |s, d, at| {
            let s = node_id(s, self.n, self.map, &path, at, "edge source")?;
            let d = node_id(d, self.n, self.map, &path, at, "edge target")?;
            self.bucketer.push(s, d)?;
            if self.undirected && s != d {
                self.bucketer.push(d, s)?;
            }
            self.read += 1;
            if self.read % (1 << 16) == 0 {
                self.bar.set_position(self.read);
                if self.cancel.load(Ordering::Relaxed) {
                    return Err(Error::invalid_argument(
                        "edge import stopped: the feature import failed",
                    ));
                }
            }
            Ok(())
        })
    }
}

/// Streams feature rows (as `f32`) into the store's feature file.
pub struct FeatureSink {
    writer: FeatureWriter,
    dim: u64,
    dtype: Dtype,
    allow_nonfinite: bool,
    rows: u64,
    n: u64,
    bytes: Vec<u8>,
    bar: Bar,
    /// Set when the edge import failed: stop early.
    cancel: Arc<AtomicBool>,
}

impl FeatureSink {
    /// Rows pushed so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// The feature dimension.
    pub fn dim(&self) -> u64 {
        self.dim
    }

    /// Appends whole rows; `path`/`first_row` (0-based row of `values[0]`
    /// in that file) name the source in errors.
    pub fn push_f32(&mut self, values: &[f32], path: &Path, first_row: u64) -> Result<()> {
        if self.cancel.load(Ordering::Relaxed) {
            return Err(Error::invalid_argument(
                "feature import stopped: the edge import failed",
            ));
        }
        let rows = values.len() as u64 / self.dim.max(1);
        if self.rows + rows > self.n {
            return Err(bad(
                path,
                Some(first_row + (self.n - self.rows) + 1),
                format!("more feature rows than the {} nodes", self.n),
            ));
        }
        if !self.allow_nonfinite {
            if let Some((k, x)) = values.iter().enumerate().find(|(_, x)| !x.is_finite()) {
                let k = k as u64;
                let row = first_row + k / self.dim;
                return Err(bad(
                    path,
                    Some(row + 1),
                    format!(
                        "feature row {row} column {} is {x}; pass --allow-nonfinite to keep NaN/Inf",
                        k % self.dim
                    ),
                ));
            }
        }
        self.bytes.resize(values.len() * self.dtype.size(), 0);
        self.dtype.encode_f32(values, &mut self.bytes);
        if !self.allow_nonfinite {
            if let Some(k) = overflowed(self.dtype, &self.bytes) {
                let x = values.get(k).copied().unwrap_or_default();
                let k = k as u64;
                let row = first_row + k / self.dim;
                return Err(bad(
                    path,
                    Some(row + 1),
                    format!(
                        "feature row {row} column {} is {x}, which overflows {} to {}inf (largest finite {}); scale the features, store them as f32, or pass --allow-nonfinite to keep inf",
                        k % self.dim,
                        self.dtype.name(),
                        if x < 0.0 { "-" } else { "+" },
                        largest_finite(self.dtype)
                    ),
                ));
            }
        }
        self.writer.push_rows(&self.bytes)?;
        self.rows += rows;
        self.bar.set_position(self.rows);
        Ok(())
    }
}

impl FeatureSink {
    /// Appends whole rows given as `f64` (an f64 `.npy`, text): a finite
    /// value beyond f32's range is refused as the f16/bf16 overflow is
    /// (row, column, value, largest finite, `--allow-nonfinite`), instead of
    /// becoming inf; then as [`push_f32`](Self::push_f32).
    pub fn push_f64(&mut self, values: &[f64], path: &Path, first_row: u64) -> Result<()> {
        if !self.allow_nonfinite {
            if let Some((k, x)) = values
                .iter()
                .enumerate()
                .find(|(_, x)| x.is_finite() && !(**x as f32).is_finite())
            {
                let k = k as u64;
                let row = first_row + k / self.dim.max(1);
                return Err(bad(
                    path,
                    Some(row + 1),
                    format!(
                        "feature row {row} column {} is {x:e}, which overflows f32 to {}inf (largest finite {:e}); scale the features, or pass --allow-nonfinite to keep inf",
                        k % self.dim.max(1),
                        if *x < 0.0 { "-" } else { "+" },
                        f32::MAX
                    ),
                ));
            }
        }
        let narrowed: Vec<f32> = values.iter().map(|&x| x as f32).collect();
        self.push_f32(&narrowed, path, first_row)
    }
}

/// The index of the first element of `encoded` (little-endian elements
/// of `dtype`) that is ±inf: finite input that overflowed the conversion
/// (the input was checked to be finite). `None` for f32 (no conversion).
fn overflowed(dtype: Dtype, encoded: &[u8]) -> Option<usize> {
    let inf_bits: u16 = match dtype {
        Dtype::F32 => return None,
        Dtype::F16 => 0x7c00,
        Dtype::Bf16 => 0x7f80,
    };
    encoded
        .chunks_exact(2)
        .position(|c| matches!(c, [lo, hi] if u16::from_le_bytes([*lo, *hi]) & 0x7fff == inf_bits))
}

/// The largest finite value of `dtype`, for messages.
fn largest_finite(dtype: Dtype) -> String {
    match dtype {
        Dtype::F32 => f32::MAX.to_string(),
        Dtype::F16 => half::f16::MAX.to_string(),
        Dtype::Bf16 => format!("{:e}", half::bf16::MAX.to_f32()),
    }
}

/// Raises `flag`; true if it was not raised before.
fn raise(flag: &AtomicBool) -> bool {
    flag.compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok()
}

/// Rows read per block (about 8 MiB of input).
fn block_rows(dim: u64, esize: usize) -> u64 {
    ((8u64 << 20) / (dim * esize as u64).max(1)).max(1)
}

/// Checks a feature array: 2-D, C order, float. Returns (rows, dim).
pub fn feature_shape(f: &NpyFile) -> Result<(u64, u64)> {
    let h = &f.header;
    let (rows, dim) = match h.shape.as_slice() {
        [n, d] => (*n, *d),
        [n] => (*n, 1),
        s => {
            return Err(bad(
                &f.path,
                None,
                format!("features have shape {s:?}; expected (nodes, dim)"),
            ))
        }
    };
    if h.fortran_order && dim > 1 && rows > 1 {
        return Err(bad(&f.path, None, "features are in Fortran (column-major) order; save them C-ordered (numpy.ascontiguousarray)"));
    }
    if !matches!(h.dtype, NpyType::Float(_)) {
        return Err(bad(
            &f.path,
            None,
            format!(
                "features must be float16/32/64, not {:?} (convert with .astype('float32'))",
                h.dtype
            ),
        ));
    }
    Ok((rows, dim))
}

/// Pushes `count` elements from element `first` (whole rows from row
/// `first_row`) of `f`: f64 arrays through [`FeatureSink::push_f64`] (so a
/// value beyond f32's range is named), others as f32.
fn push_rows(
    f: &NpyFile,
    first: u64,
    count: u64,
    first_row: u64,
    sink: &mut FeatureSink,
    raw: &mut Vec<u8>,
) -> Result<()> {
    if f.header.dtype == crate::import::npy::NpyType::Float(8) {
        let mut values = Vec::new();
        f.read_f64(first, count as usize, raw, &mut values)?;
        sink.push_f64(&values, &f.path, first_row)
    } else {
        let mut values = Vec::new();
        f.read_f32(first, count as usize, raw, &mut values)?;
        sink.push_f32(&values, &f.path, first_row)
    }
}

/// Streams rows of a feature array into `sink`: all rows, or only `rows`
/// (sorted, for remapped ids: store node i gets row `rows[i]`).
pub fn features_from_npy(f: &NpyFile, rows: Option<&[u64]>, sink: &mut FeatureSink) -> Result<()> {
    let (n, dim) = feature_shape(f)?;
    if dim != sink.dim {
        return Err(bad(
            &f.path,
            None,
            format!(
                "features have dimension {dim} but earlier chunks have {}",
                sink.dim
            ),
        ));
    }
    let per = block_rows(dim, f.header.dtype.size());
    let mut raw = Vec::new();
    match rows {
        None => {
            for first in (0..n).step_by(per as usize) {
                let k = per.min(n - first);
                push_rows(f, first * dim, k * dim, first, sink, &mut raw)?;
            }
        }
        Some(ids) => {
            let mut i = 0usize;
            while let Some(&start) = ids.get(i) {
                // A run of consecutive rows, at most one block.
                let mut len = 1u64;
                while ids.get(i + len as usize) == Some(&(start + len)) && len < per {
                    len += 1;
                }
                if start + len > n {
                    return Err(bad(
                        &f.path,
                        None,
                        format!(
                            "node with original id {} has no feature row (the matrix has {n} rows)",
                            start.max(n)
                        ),
                    ));
                }
                push_rows(f, start * dim, len * dim, start, sink, &mut raw)?;
                i += len as usize;
            }
        }
    }
    Ok(())
}

/// A label from a float (`NaN` → -1) or integer value; `at` is 1-based.
pub fn label_value(x: f64, int: Option<i128>, path: &Path, at: u64) -> Result<i32> {
    let v = match int {
        Some(i) => i,
        None if x.is_nan() => return Ok(-1),
        None if x.fract() != 0.0 || !x.is_finite() => {
            return Err(bad(
                path,
                Some(at),
                format!(
                    "label {x} is not a whole number; labels are class ids (NaN or -1 = missing)"
                ),
            ))
        }
        None => x as i128,
    };
    if v < -1 || v > i128::from(i32::MAX) {
        return Err(bad(
            path,
            Some(at),
            format!(
                "label {v} is out of range; labels are class ids 0..2^31 (NaN or -1 = missing)"
            ),
        ));
    }
    Ok(v as i32)
}

/// Appends the labels of an array of shape (K,) or (K, 1).
pub fn labels_from_npy(f: &NpyFile, out: &mut Vec<i32>) -> Result<()> {
    let shape_ok = matches!(f.header.shape.as_slice(), [_] | [_, 1]);
    if !shape_ok {
        return Err(bad(
            &f.path,
            None,
            format!(
                "labels have shape {:?}; expected (N,) or (N, 1)",
                f.header.shape
            ),
        ));
    }
    let k = f.len();
    let (mut raw, mut ints, mut floats) = (Vec::new(), Vec::new(), Vec::new());
    let is_float = matches!(f.header.dtype, NpyType::Float(_));
    for first in (0..k).step_by(1 << 20) {
        let c = (1u64 << 20).min(k - first) as usize;
        if is_float {
            f.read_f64(first, c, &mut raw, &mut floats)?;
            for (i, x) in floats.iter().enumerate() {
                out.push(label_value(*x, None, &f.path, first + i as u64 + 1)?);
            }
        } else {
            f.read_ints(first, c, &mut raw, &mut ints)?;
            for (i, v) in ints.iter().enumerate() {
                out.push(label_value(0.0, Some(*v), &f.path, first + i as u64 + 1)?);
            }
        }
    }
    Ok(())
}

/// Calls `visit(value, position)` for every integer of an id file: `.npy`
/// of shape (K,)/(K,1) (position = 1-based element), or text with one id per
/// line, `.gz` allowed (position = line). `words` name the file's contents
/// in errors: ("id array has", "K", "ids").
pub fn for_each_id(
    path: &Path,
    words: (&str, &str, &str),
    visit: &mut dyn FnMut(i128, u64) -> Result<()>,
) -> Result<()> {
    let (has, len, plural) = words;
    if path.extension().is_some_and(|e| e == "npy") {
        let f = NpyFile::open(path)?;
        if f.header.shape.len() > 2 || f.header.shape.get(1).is_some_and(|&c| c != 1) {
            return Err(bad(
                path,
                None,
                format!(
                    "{has} shape {:?}; expected ({len},) or ({len}, 1)",
                    f.header.shape
                ),
            ));
        }
        let (mut raw, mut vals) = (Vec::new(), Vec::new());
        let k = f.len();
        for first in (0..k).step_by(1 << 20) {
            let c = (1u64 << 20).min(k - first) as usize;
            if !f.read_ints(first, c, &mut raw, &mut vals)? {
                return Err(bad(
                    path,
                    None,
                    format!("{plural} must be integers, the array holds floats"),
                ));
            }
            for (i, v) in vals.iter().enumerate() {
                visit(*v, first + i as u64 + 1)?;
            }
        }
    } else {
        let mut lines = IdLines::open(path)?;
        while let Some(v) = lines.next_id()? {
            visit(v, lines.line())?;
        }
    }
    Ok(())
}

/// Reads a list of node ids (`.npy` of shape (K,)/(K,1), or text with one
/// id per line, `.gz` allowed), checks them against `n` (or maps them),
/// sorts them and refuses repeats.
pub fn read_ids(path: &Path, n: u64, map: Option<&IdMap>) -> Result<Vec<u64>> {
    let mut ids = Vec::new();
    for_each_id(path, ("id array has", "K", "ids"), &mut |v, at| {
        ids.push(node_id(v, n, map, path, at, "id")?);
        Ok(())
    })?;
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

/// A seeded random split of `0..n` with the given fractions.
pub fn random_split(n: u64, fractions: [f64; 3], seed: u64) -> Splits {
    Splits::by_fraction(n, fractions, |v| {
        (stream_seed(seed, 31, v) >> 11) as f64 / (1u64 << 53) as f64
    })
}

/// Bytes a store of `n` nodes with `layout` features and `edges` input
/// edges (doubled when undirected) needs at least: the feature pages and
/// their checksums, `indptr` and `indices`. `None` when the count
/// overflows `u64` (certainly too large).
pub fn store_bytes(layout: &FeatureLayout, n: u64, edges: u64, undirected: bool) -> Option<u64> {
    let pages = layout.num_pages(n).ok()?;
    let features = pages.checked_mul(crate::format::PAGE_SIZE as u64 + 4)?;
    let indptr = n.checked_add(1)?.checked_mul(8)?;
    let width = if n <= u64::from(u32::MAX) { 4 } else { 8 };
    let edges = if undirected {
        edges.checked_mul(2)?
    } else {
        edges
    };
    let indices = edges.checked_mul(width)?;
    features.checked_add(indptr)?.checked_add(indices)
}

/// Refuses, before anything is written, a store larger than the free
/// space of the directory it goes to (see [`crate::io::space::free_space`]).
fn check_space(
    opts: &CommonOptions,
    layout: &FeatureLayout,
    n: u64,
    edges: u64,
    note: Option<&str>,
) -> Result<()> {
    let parent = match opts.out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !parent.is_dir() {
        return Ok(()); // the builder names what is wrong with the parent
    }
    let free = crate::io::space::free_space(&parent)?;
    let need = store_bytes(layout, n, edges, opts.undirected);
    if need.is_some_and(|b| b <= free) {
        if let Some(note) = note {
            tracing::warn!("{}: {note}", opts.out.display());
        }
        return Ok(());
    }
    let need = need.map_or_else(
        || "more than 2^64 bytes".to_string(),
        |b| format!("at least {b} bytes ({})", human_bytes(b)),
    );
    let mut reason = format!(
        "the store needs {need} for {n} nodes × {} bytes of {} features{}, but {} has {free} bytes ({}) free; nothing was written",
        layout.row_bytes(),
        opts.dtype.name(),
        if edges > 0 {
            format!(", {edges} edges")
        } else {
            String::new()
        },
        parent.display(),
        human_bytes(free)
    );
    if let Some(note) = note {
        reason.push_str("; ");
        reason.push_str(note);
    }
    Err(bad(&opts.out, None, reason))
}

/// `bytes` in binary units, for messages.
fn human_bytes(bytes: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", units.get(u).copied().unwrap_or("B"))
}

/// A store under construction; see the module docs.
pub struct Build {
    builder: StoreBuilder,
    opts: CommonOptions,
    n: u64,
    dim: u64,
    report: ImportReport,
    /// Shared by the edge and feature halves of [`Build::overlapped`].
    cancel: Arc<AtomicBool>,
}

impl Build {
    /// Starts a store of `n` nodes with `dim`-wide features at `opts.out`,
    /// after checking that the store fits: `edges` (the edges read, when
    /// known before the build, else 0) sizes the topology, and `note` is
    /// added to the refusal (e.g. that the ids look sparse).
    pub fn create(
        opts: &CommonOptions,
        n: u64,
        dim: u64,
        dim_source: &Path,
        edges: u64,
        note: Option<&str>,
    ) -> Result<Self> {
        let dim32 = u32::try_from(dim).map_err(|_| {
            bad(
                dim_source,
                None,
                format!("feature dimension {dim} is too large"),
            )
        })?;
        let layout = FeatureLayout::new(dim32, opts.dtype)
            .map_err(|e| bad(dim_source, None, e.to_string()))?;
        check_space(opts, &layout, n, edges, note)?;
        let spec = StoreSpec {
            segment_bytes: opts.segment_bytes,
            ..StoreSpec::new(n, layout)
        };
        let builder = StoreBuilder::create(&opts.out, spec)?;
        Ok(Build {
            builder,
            opts: opts.clone(),
            n,
            dim,
            report: ImportReport {
                nodes: n,
                ..ImportReport::default()
            },
            cancel: Arc::default(),
        })
    }

    /// Node count.
    pub fn nodes(&self) -> u64 {
        self.n
    }

    /// A scratch directory inside the staging directory (removed before
    /// the commit; gone with the staging directory on failure).
    pub fn scratch(&self, name: &str) -> PathBuf {
        self.builder.staging_path().join(format!("import-{name}"))
    }

    /// The directories [`Build::scratch`] handed out that exist.
    fn scratch_dirs(&self) -> Result<Vec<PathBuf>> {
        let staging = self.builder.staging_path();
        let entries =
            std::fs::read_dir(staging).map_err(|e| Error::io("read directory", staging, e))?;
        let mut dirs = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| Error::io("read directory", staging, e))?;
            if entry.file_name().to_string_lossy().starts_with("import-") {
                dirs.push(entry.path());
            }
        }
        Ok(dirs)
    }

    /// Builds the topology from `inputs` (ids checked against the node
    /// count, or mapped through `map`). `expected` sizes the buckets.
    pub fn topology(
        &mut self,
        inputs: &[EdgeInput],
        map: Option<&IdMap>,
        expected: u64,
    ) -> Result<Vec<u64>> {
        let started = Instant::now();
        let scratch = self.builder.staging_path().join("scratch");
        let expected = if self.opts.undirected {
            expected.saturating_mul(2)
        } else {
            expected
        };
        let mut bucketer = EdgeBucketer::new(&scratch, self.n, expected, self.opts.memory / 2)?;
        let bar = progress(expected, "edges", self.opts.quiet);
        let mut sink = EdgeSink {
            bucketer: &mut bucketer,
            n: self.n,
            map,
            undirected: self.opts.undirected,
            bar: &bar,
            read: 0,
            cancel: &self.cancel,
        };
        let mut counts = Vec::with_capacity(inputs.len());
        for input in inputs {
            counts.push(sink.push_input(input)?);
        }
        self.report.edges_read = sink.read;
        bar.finish_and_clear();
        self.report
            .phases
            .push(("read + spill edges", started.elapsed()));
        let started = Instant::now();
        let mut topo = self.builder.topology_writer()?;
        self.report.csc = bucketer.finish(self.opts.csc, &mut topo)?;
        self.builder.add_topology(topo)?;
        tracing::info!(
            edges_read = self.report.edges_read,
            edges_kept = self.report.csc.edges_out,
            "topology written"
        );
        self.report
            .phases
            .push(("sort + write csc", started.elapsed()));
        Ok(counts)
    }

    /// Streams the features: `feed` pushes exactly `n` rows into the sink.
    pub fn features(
        &mut self,
        source: &Path,
        feed: impl FnOnce(&mut FeatureSink) -> Result<()>,
    ) -> Result<()> {
        let started = Instant::now();
        let mut sink = self.feature_sink()?;
        feed(&mut sink)?;
        self.add_feature_sink(sink, source, ("features", started.elapsed()))
    }

    /// Runs `feed` (the features) on a second thread while `edges` (the
    /// topology) runs on this one, and returns what `edges` returns.
    /// Parsing and spilling edges is CPU-bound and copying features is
    /// I/O-bound, so on two cores the two phases overlap almost fully. If
    /// either half fails the other stops at its next block, and the first
    /// real error is returned.
    pub fn overlapped<T>(
        &mut self,
        source: &Path,
        feed: impl FnOnce(&mut FeatureSink) -> Result<()> + Send,
        edges: impl FnOnce(&mut Self) -> Result<T>,
    ) -> Result<T> {
        let mut sink = self.feature_sink()?;
        let cancel = Arc::clone(&self.cancel);
        let outcome = std::thread::scope(|s| {
            let worker = s.spawn(move || {
                let started = Instant::now();
                let r = feed(&mut sink);
                // Whoever fails first raises the flag; the other side's
                // "stopped" error is then only a consequence.
                let first = r.is_err() && raise(&sink.cancel);
                (r.map(|()| (sink, started.elapsed())), first)
            });
            let edges_result = edges(self);
            let edges_first = edges_result.is_err() && raise(&cancel);
            let (fed, features_first) = worker
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (edges_result, edges_first, fed, features_first)
        });
        let (edges_result, edges_first, fed, features_first) = outcome;
        let (t, (sink, took)) = match (edges_result, fed) {
            (Ok(t), Ok(f)) => (t, f),
            (Err(e), Ok(_)) | (Ok(_), Err(e)) => return Err(e),
            (Err(edge_err), Err(feature_err)) => {
                debug_assert!(edges_first != features_first);
                return Err(if features_first {
                    feature_err
                } else {
                    edge_err
                });
            }
        };
        self.add_feature_sink(sink, source, ("features (alongside edges)", took))?;
        Ok(t)
    }

    fn feature_sink(&self) -> Result<FeatureSink> {
        Ok(FeatureSink {
            writer: self.builder.feature_writer()?,
            dim: self.dim,
            dtype: self.opts.dtype,
            allow_nonfinite: self.opts.allow_nonfinite,
            rows: 0,
            n: self.n,
            bytes: Vec::new(),
            bar: progress(self.n, "features", self.opts.quiet),
            cancel: Arc::clone(&self.cancel),
        })
    }

    fn add_feature_sink(
        &mut self,
        sink: FeatureSink,
        source: &Path,
        phase: (&'static str, Duration),
    ) -> Result<()> {
        if sink.rows != self.n {
            return Err(bad(
                source,
                None,
                format!("{} feature rows for {} nodes", sink.rows, self.n),
            ));
        }
        sink.bar.finish_and_clear();
        self.builder.add_features(sink.writer)?;
        tracing::info!(
            rows = sink.rows,
            seconds = phase.1.as_secs_f64(),
            "features written"
        );
        self.report.phases.push(phase);
        Ok(())
    }

    /// All-zero features (inputs without any).
    pub fn zero_features(&mut self) -> Result<()> {
        let dim = self.dim;
        let n = self.n;
        self.features(Path::new("<none>"), |sink| {
            let per = block_rows(dim, 4);
            let zeros = vec![0f32; (per * dim) as usize];
            for first in (0..n).step_by(per as usize) {
                let k = per.min(n - first);
                sink.push_f32(
                    zeros.get(..(k * dim) as usize).unwrap_or_default(),
                    Path::new("<none>"),
                    first,
                )?;
            }
            Ok(())
        })
    }

    /// Writes labels (one per node); `num_classes` defaults to max + 1.
    pub fn labels(
        &mut self,
        labels: &[i32],
        num_classes: Option<u32>,
        source: &Path,
    ) -> Result<()> {
        if labels.len() as u64 != self.n {
            return Err(bad(
                source,
                None,
                format!(
                    "{} labels for {} nodes; expected ({},) or ({}, 1)",
                    labels.len(),
                    self.n,
                    self.n,
                    self.n
                ),
            ));
        }
        let classes = match num_classes {
            Some(c) => c,
            None => {
                // The largest label + 1, which must itself fit the store's
                // class count (at most 2^31 - 1 classes).
                let (pos, max) = labels
                    .iter()
                    .enumerate()
                    .max_by_key(|(i, l)| (**l, std::cmp::Reverse(*i)))
                    .map_or((0, -1), |(i, l)| (i, *l));
                let classes = (i64::from(max) + 1).max(1);
                if classes > i64::from(i32::MAX) {
                    return Err(bad(
                        source,
                        Some(pos as u64 + 1),
                        format!(
                            "label {max} of node {pos} would make {classes} classes (the largest label + 1); at most {} classes are supported, so class ids must be below {}",
                            i32::MAX,
                            i32::MAX
                        ),
                    ));
                }
                classes as u32
            }
        };
        if let Some(pos) = labels
            .iter()
            .position(|&l| i64::from(l) >= i64::from(classes))
        {
            let l = labels.get(pos).copied().unwrap_or_default();
            return Err(bad(
                source,
                Some(pos as u64 + 1),
                format!("label {l} of node {pos} is not below --num-classes {classes}"),
            ));
        }
        self.builder.write_labels(labels, classes)?;
        Ok(())
    }

    /// Writes the splits (the builder checks order, range and overlap;
    /// importers check overlap first to name their sources).
    pub fn splits(&mut self, s: &Splits) -> Result<()> {
        self.builder.write_splits(s)
    }

    /// Writes the original id of every node.
    pub fn original_ids(&mut self, ids: &[u64]) -> Result<()> {
        self.builder.write_original_ids(ids)
    }

    /// Commits and verifies the store.
    pub fn finish(mut self) -> Result<ImportReport> {
        let started = Instant::now();
        for p in self.scratch_dirs()? {
            std::fs::remove_dir_all(&p).map_err(|e| Error::io("remove directory", &p, e))?;
        }
        let path = self.builder.finish()?;
        tracing::info!(store = %path.display(), "committed; verifying");
        self.report.phases.push(("commit", started.elapsed()));
        let started = Instant::now();
        Store::open(&path)?.verify()?;
        self.report.phases.push(("verify", started.elapsed()));
        self.report.path = path;
        Ok(self.report)
    }
}
