//! Feature rows: [`features_from_npy`] streams `.npy` rows into a
//! [`FeatureSink`] that checks them (NaN/Inf, overflow of the store dtype)
//! and writes pages; [`Build::features`] and [`Build::overlapped`] (beside
//! the edges on a second thread).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::format::pages::Dtype;
use crate::format::q8::Q8Error;
use crate::import::npy::{NpyFile, NpyType};
use crate::progress::Bar;
use crate::store::FeatureWriter;

use super::{bad, progress, Build};

/// Streams feature rows (as `f32`) into the store's feature file, in the
/// dimension and dtype of the rows due next (the store's, or in a typed
/// store of several layouts, the type's).
pub struct FeatureSink {
    writer: FeatureWriter,
    allow_nonfinite: bool,
    rows: u64,
    n: u64,
    bytes: Vec<u8>,
    bar: Bar,
    /// Set when the edge import failed: stop early.
    cancel: Arc<AtomicBool>,
}

impl FeatureSink {
    /// A sink of `n` rows into `writer`, with its own progress bar.
    pub fn new(writer: FeatureWriter, n: u64, allow_nonfinite: bool, quiet: bool) -> Self {
        FeatureSink {
            writer,
            allow_nonfinite,
            rows: 0,
            n,
            bytes: Vec::new(),
            bar: progress(n, "features", quiet),
            cancel: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The writer, all rows pushed (the caller checks their count).
    pub fn into_writer(self) -> FeatureWriter {
        self.bar.finish_and_clear();
        self.writer
    }

    /// Rows pushed so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// The feature dimension of the rows due next.
    pub fn dim(&self) -> u64 {
        u64::from(self.writer.next_layout().dim)
    }

    fn dtype(&self) -> Dtype {
        self.writer.next_layout().dtype
    }

    /// Appends whole rows; `path`/`first_row` (0-based row of `values[0]`
    /// in that file) name the source in errors.
    pub fn push_f32(&mut self, values: &[f32], path: &Path, first_row: u64) -> Result<()> {
        if self.cancel.load(Ordering::Relaxed) {
            return Err(Error::invalid_argument(
                "feature import stopped: the edge import failed",
            ));
        }
        let (dim, dtype) = (self.dim(), self.dtype());
        let rows = values.len() as u64 / dim.max(1);
        if self.rows + rows > self.n {
            return Err(bad(
                path,
                Some(first_row + (self.n - self.rows) + 1),
                format!("more feature rows than the {} nodes", self.n),
            ));
        }
        // Element `k` of `values` as "feature row R column C is X" at its
        // 1-based row.
        let bad_value = |k: usize, x: f32, why: String| {
            let row = first_row + k as u64 / dim;
            let column = k as u64 % dim;
            bad(
                path,
                Some(row + 1),
                format!("feature row {row} column {column} is {x}{why}"),
            )
        };
        // q8 has no code for NaN/inf: refused even with --allow-nonfinite.
        if !self.allow_nonfinite || dtype == Dtype::Q8 {
            if let Some((k, x)) = values.iter().enumerate().find(|(_, x)| !x.is_finite()) {
                let why = match dtype {
                    Dtype::Q8 => "; q8 cannot store NaN/Inf: clean the features or store them as f32/f16/bf16 with --allow-nonfinite",
                    _ => "; pass --allow-nonfinite to keep NaN/Inf",
                };
                return Err(bad_value(k, *x, why.to_string()));
            }
        }
        self.bytes
            .resize(rows as usize * dtype.row_bytes(dim as usize), 0);
        dtype.encode_f32(dim as usize, values, &mut self.bytes);
        if !self.allow_nonfinite {
            if let Some(k) = overflowed(dtype, &self.bytes) {
                let x = values.get(k).copied().unwrap_or_default();
                let why = format!(
                    ", which overflows {} to {}inf (largest finite {}); scale the features, store them as f32, or pass --allow-nonfinite to keep inf",
                    dtype.name(),
                    if x < 0.0 { "-" } else { "+" },
                    largest_finite(dtype)
                );
                return Err(bad_value(k, x, why));
            }
        }
        if dtype == Dtype::Q8 {
            let measured = Q8Error::measure(dim as usize, values, &self.bytes);
            self.writer.record_q8_error(measured);
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
                let (k, dim) = (k as u64, self.dim().max(1));
                let row = first_row + k / dim;
                return Err(bad(
                    path,
                    Some(row + 1),
                    format!(
                        "feature row {row} column {} is {x:e}, which overflows f32 to {}inf (largest finite {:e}); scale the features, or pass --allow-nonfinite to keep inf",
                        k % dim,
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
/// (the input was checked to be finite). `None` for f32 (no conversion)
/// and q8 (the row's own scale holds every finite value).
fn overflowed(dtype: Dtype, encoded: &[u8]) -> Option<usize> {
    let inf_bits: u16 = match dtype {
        Dtype::F32 | Dtype::Q8 => return None,
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
        Dtype::F32 | Dtype::Q8 => f32::MAX.to_string(),
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
    if f.header.dtype == NpyType::Float(8) {
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
    // An empty chunk adds no rows (and in a typed store it may be a type
    // of no nodes, whose dimension the next rows need not share).
    if n > 0 && dim != sink.dim() {
        return Err(bad(
            &f.path,
            None,
            format!(
                "features have dimension {dim} but earlier chunks have {}",
                sink.dim()
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

impl Build {
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
            allow_nonfinite: self.opts.allow_nonfinite,
            rows: 0,
            n: self.feature_rows(),
            bytes: Vec::new(),
            bar: progress(self.feature_rows(), "features", self.opts.quiet),
            cancel: Arc::clone(&self.cancel),
        })
    }

    fn add_feature_sink(
        &mut self,
        sink: FeatureSink,
        source: &Path,
        phase: (&'static str, Duration),
    ) -> Result<()> {
        if sink.rows != self.feature_rows() {
            return Err(bad(
                source,
                None,
                format!(
                    "{} feature rows for {} nodes with features",
                    sink.rows,
                    self.feature_rows()
                ),
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
        let n = self.feature_rows();
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
}
