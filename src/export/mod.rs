//! Writers of other systems' formats, for users who move on from one
//! machine: DGL's chunked graph format, the input of DistDGL's distributed
//! partition pipeline ([`dgl`]), and GraphBolt's on-disk dataset
//! ([`graphbolt`]). Exporters read a store and never change it.
//!
//! Both stream: feature rows, neighbor lists and the per-node tables are
//! read in blocks sized from the `--memory` budget ([`source::Source`]),
//! so resident memory is the store's `indptr` plus a few blocks. The output
//! is written into a staging directory beside `--out` and renamed into
//! place at the end ([`sink::ExportDir`]): a failure leaves nothing at
//! `--out`, and an existing `--out` is refused. Every file goes through the
//! storage seam (`io::space`).
//!
//! Both exports re-import to a byte-identical store (`ginex-import dgl`,
//! `ginex-import files`; the command is in [`ExportReport::reimport`]).
//! Typed stores go out in both formats' heterogeneous layouts, with
//! type-local ids ([`hetero`] splits the in-neighbor lists by relation;
//! `dgl/typed.rs`, `graphbolt/typed.rs` write them); their `dgl` export
//! re-imports byte-identically. The mapping of ginex's tables to the two
//! formats is in `format/export.md`.

pub mod dgl;
pub mod graphbolt;
pub mod hetero;
pub mod link;
pub mod sink;
pub mod source;

use std::path::PathBuf;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::format::pages::{Dtype, FeatureLayout};
use crate::format::sections::narrow;
use crate::import::pipeline::progress;
use crate::progress::Bar;
use crate::store::Store;
use sink::NpyOut;
use source::{IdCursor, Source, Table, TableValue};

/// Options every exporter takes.
#[derive(Debug, Clone)]
pub struct ExportOptions {
    /// Memory budget in bytes (the store's indptr plus the stream buffers).
    pub memory: u64,
    /// Write f16 features as `<f2` instead of widening them to `<f4`.
    pub keep_f16: bool,
    /// No progress bars.
    pub quiet: bool,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            memory: 2 << 30,
            keep_f16: false,
            quiet: true,
        }
    }
}

/// How edge lists are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EdgeFormat {
    /// Text, one `src<delimiter>dst` pair per line.
    Csv,
    /// `.npy` of `int64`.
    Numpy,
}

impl EdgeFormat {
    /// Parses `csv` or `numpy`.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "csv" => Ok(EdgeFormat::Csv),
            "numpy" | "npy" => Ok(EdgeFormat::Numpy),
            other => Err(Error::invalid_argument(format!(
                "edge format {other:?}: expected csv or numpy"
            ))),
        }
    }

    /// The format's name in the metadata.
    pub fn name(self) -> &'static str {
        match self {
            EdgeFormat::Csv => "csv",
            EdgeFormat::Numpy => "numpy",
        }
    }
}

/// What an export did.
#[derive(Debug, Clone, Default)]
pub struct ExportReport {
    /// The directory written.
    pub path: PathBuf,
    /// Nodes.
    pub nodes: u64,
    /// Edges written.
    pub edges: u64,
    /// Edges that repeat the previous edge of the same (src, dst).
    pub duplicate_edges: u64,
    /// Edges from a node to itself.
    pub self_loops: u64,
    /// Files written.
    pub files: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Bytes of the store's files (what the export reads).
    pub store_bytes: u64,
    /// The numpy dtype of the exported features.
    pub feature_descr: &'static str,
    /// The `ginex-import` command that rebuilds the same store.
    pub reimport: String,
    /// Wall time per phase.
    pub phases: Vec<(&'static str, Duration)>,
}

impl ExportReport {
    /// The note on duplicates and self-loops (DistDGL's partitioners
    /// need none).
    pub fn edge_note(&self) -> String {
        if self.duplicate_edges == 0 && self.self_loops == 0 {
            "no duplicate edges, no self-loops".into()
        } else {
            format!(
                "WARNING: {} duplicate edges and {} self-loops; DistDGL's partitioners (ParMETIS, dispatch_data.py) expect none: re-import with --dedup --remove-self-loops before exporting",
                self.duplicate_edges, self.self_loops
            )
        }
    }
}

/// Bytes of every file of the store (its manifest's list plus the manifest).
pub fn store_bytes(store: &crate::store::Store) -> u64 {
    let m = store.manifest();
    let manifest_path = store.dir().join(crate::format::manifest::store_file_name(
        crate::format::header::FileKind::Manifest,
    ));
    let manifest = std::fs::metadata(manifest_path)
        .map(|m| m.len())
        .unwrap_or(0);
    m.files.iter().map(|f| f.len).sum::<u64>() + manifest
}

/// What both exports start from: the output directory, created, and a
/// report holding the store's sizes and the features' export dtype.
pub fn start(
    store: &crate::store::Store,
    out: &std::path::Path,
    options: &ExportOptions,
) -> Result<(sink::ExportDir, ExportReport)> {
    let dir = sink::ExportDir::create(out)?;
    let report = ExportReport {
        nodes: store.num_nodes(),
        edges: store.num_edges(),
        store_bytes: store_bytes(store),
        feature_descr: feature_descr(store.dtype(), options.keep_f16),
        ..ExportReport::default()
    };
    Ok((dir, report))
}

/// `total` split into `parts` near-equal counts (the first ones larger).
pub fn split_even(total: u64, parts: u64) -> Vec<u64> {
    let parts = parts.max(1);
    (0..parts)
        .map(|i| total / parts + u64::from(i < total % parts))
        .collect()
}

/// The numpy dtype features are exported in: the store dtype, with f16
/// widened to `<f4` unless `keep_f16`, and bf16 (which numpy lacks)
/// always widened.
pub fn feature_descr(dtype: Dtype, keep_f16: bool) -> &'static str {
    match dtype {
        Dtype::F16 if keep_f16 => "<f2",
        _ => "<f4",
    }
}

/// Counts duplicate edges and self-loops in sorted in-neighbor lists.
#[derive(Debug, Default, Clone, Copy)]
pub struct EdgeCheck {
    /// Repeats of an edge.
    pub duplicates: u64,
    /// `v -> v` edges.
    pub self_loops: u64,
}

impl EdgeCheck {
    /// Adds the list of `dst` (sorted).
    pub fn add(&mut self, dst: u64, srcs: &[u64]) {
        for (i, &s) in srcs.iter().enumerate() {
            if s == dst {
                self.self_loops += 1;
            }
            if i > 0 && srcs.get(i - 1) == Some(&s) {
                self.duplicates += 1;
            }
        }
    }

    /// Puts the counts in `report`, with the edges phase's time since
    /// `started`.
    pub fn report_into(self, report: &mut ExportReport, started: std::time::Instant) {
        report.duplicate_edges = self.duplicates;
        report.self_loops = self.self_loops;
        report.phases.push(("edges", started.elapsed()));
    }
}

/// The `--dtype` a re-import needs to store the features as `store` does:
/// the store dtype, and in a typed store of several layouts each type
/// whose dtype is not the row format's (`f32,paper=f16`).
pub fn dtype_flag(store: &Store) -> String {
    let mut flag = store.dtype().name().to_string();
    for t in store.schema().map_or(&[][..], |s| &s.node_types[..]) {
        if let Some(d) = t.dtype.filter(|d| *d != store.dtype()) {
            flag.push_str(&format!(",{}={}", t.name, d.name()));
        }
    }
    flag
}

/// Streams the feature rows `first..first + count`, stored as `stored`
/// (the store's layout, or in a typed store their type's), into `npy` as
/// `descr`: each row in its own dimension, its values exactly as stored.
pub fn write_features(
    src: &Source,
    npy: &mut NpyOut,
    rows: (u64, u64),
    stored: FeatureLayout,
    descr: &str,
    bar: &Bar,
) -> Result<()> {
    let (first, count) = rows;
    let row_format = src.store().layout();
    let dtype = stored.dtype;
    let same = descr == "<f4" && dtype == Dtype::F32 || descr == "<f2" && dtype == Dtype::F16;
    let per = src.rows_per_block();
    let (mut pages, mut raw, mut values, mut wide, mut narrowed) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut row = first;
    while row < first + count {
        let k = per.min(first + count - row);
        raw.clear();
        src.store()
            .read_feature_range(row..row + k, &mut pages, &mut raw)?;
        if stored != row_format {
            narrowed.resize(k as usize * stored.row_bytes(), 0);
            for (from, to) in raw
                .chunks_exact(row_format.row_bytes())
                .zip(narrowed.chunks_exact_mut(stored.row_bytes()))
            {
                narrow(row_format, from, stored, to);
            }
            std::mem::swap(&mut raw, &mut narrowed);
        }
        if same {
            npy.write(&raw)?;
        } else {
            let dim = stored.dim as usize;
            values.resize(raw.len() / dtype.row_bytes(dim) * dim, 0f32);
            dtype.decode_to_f32(dim, &raw, &mut values);
            wide.clear();
            wide.extend(values.iter().flat_map(|v| v.to_le_bytes()));
            npy.write(&wide)?;
        }
        row += k;
        bar.inc(k);
    }
    Ok(())
}

/// Streams labels `first..first + count` into `npy` as `<i8` (-1 = missing).
pub fn write_labels(
    labels: &Table,
    num_classes: u32,
    npy: &mut NpyOut,
    first: u64,
    count: u64,
) -> Result<()> {
    // The label rule verify, train and the loaders apply: an export never
    // passes on a label they refuse.
    write_as_i64(labels, npy, first, count, |node, l: i32| {
        crate::format::tables::check_label(node, l, num_classes)
            .map_err(|why| Error::corrupt(labels.path(), labels.payload_offset(node, 4), why))?;
        Ok(i64::from(l))
    })
}

/// Streams original ids `first..first + count` into `npy` as `<i8`.
pub fn write_orig_ids(ids: &Table, npy: &mut NpyOut, first: u64, count: u64) -> Result<()> {
    write_as_i64(ids, npy, first, count, |node, v: u64| {
        i64::try_from(v).map_err(|_| {
            Error::invalid_argument(format!(
                "{}: original id {v} of node {node} does not fit the int64 that DGL and GraphBolt use",
                ids.path().display(),
            ))
        })
    })
}

/// Streams the values `first..first + count` of `table` into `npy` as
/// `<i8`, each widened by `widen(node, value)`, a block at a time.
fn write_as_i64<T: TableValue + Copy>(
    table: &Table,
    npy: &mut NpyOut,
    first: u64,
    count: u64,
    widen: impl Fn(u64, T) -> Result<i64>,
) -> Result<()> {
    let per = table.per_block(8);
    let (mut raw, mut vals, mut out) = (Vec::new(), Vec::<T>::new(), Vec::new());
    let mut at = first;
    while at < first + count {
        let k = per.min(first + count - at);
        vals.clear();
        table.values(at..at + k, &mut raw, &mut vals)?;
        out.clear();
        for (node, &v) in (at..).zip(&vals) {
            out.extend_from_slice(&widen(node, v)?.to_le_bytes());
        }
        npy.write(&out)?;
        at += k;
    }
    Ok(())
}

/// Streams the membership of nodes `first..first + count` in a split as a
/// `|b1` mask into `npy`.
pub fn write_mask(
    ids: &mut IdCursor,
    npy: &mut NpyOut,
    first: u64,
    count: u64,
    per: u64,
) -> Result<()> {
    let mut mask = Vec::new();
    let mut at = first;
    while at < first + count {
        let k = per.min(first + count - at);
        mask.clear();
        mask.resize(k as usize, 0u8);
        ids.fill_mask(at, &mut mask)?;
        npy.write(&mask)?;
        at += k;
    }
    Ok(())
}

/// A progress bar over `total` units (hidden when `quiet`).
pub fn bar(total: u64, what: &str, quiet: bool) -> Bar {
    progress(total, what, quiet)
}

/// The name of the export (`graph_name`, `dataset_name`): `name` or the
/// store directory's name.
pub fn export_name(store: &crate::store::Store, name: Option<&str>) -> String {
    name.map(str::to_string).unwrap_or_else(|| {
        std::fs::canonicalize(store.dir())
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "graph".into())
    })
}
