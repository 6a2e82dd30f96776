//! What both kinds of OGB dataset use: the import options, the CSV counts,
//! features and labels, and the split directory.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::import::pipeline::{bad, label_value, CommonOptions, FeatureSink};
use crate::import::text::{FloatRows, IdLines};

/// What to import.
#[derive(Debug, Clone)]
pub struct OgbImport {
    /// The dataset directory.
    pub dir: PathBuf,
    /// `split/<name>` to use (default: the only one).
    pub split_name: Option<String>,
    /// Add reverse edges (`None`: by dataset name, as OGB does).
    pub add_inverse_edges: Option<bool>,
    /// Options shared by every importer.
    pub common: CommonOptions,
}

pub(super) fn missing(path: &Path, what: &str) -> Error {
    bad(
        path,
        None,
        format!("missing: {what} (is this an unpacked OGB node-property dataset directory?)"),
    )
}

/// The one count (`what`: node or edge) in `raw/num-*-list.csv.gz`.
pub(super) fn csv_count(path: &Path, what: &str) -> Result<u64> {
    let mut lines = IdLines::open(path)?;
    let n = lines
        .next_id()?
        .ok_or_else(|| bad(path, None, format!("empty; expected the {what} count")))?;
    if lines.next_id()?.is_some() {
        return Err(bad(
            path,
            Some(lines.line()),
            "more than one graph; node-property datasets hold one",
        ));
    }
    u64::try_from(n).map_err(|_| {
        bad(
            path,
            Some(lines.line()),
            format!("{what} count {n} is not a non-negative integer below 2^64"),
        )
    })
}

/// Picks `split/<name>`.
pub(super) fn split_dir(dir: &Path, name: Option<&str>) -> Result<Option<PathBuf>> {
    let root = dir.join("split");
    if let Some(n) = name {
        let p = root.join(n);
        return if p.is_dir() {
            Ok(Some(p))
        } else {
            Err(missing(&p, "the split directory named by --split-name"))
        };
    }
    let Ok(entries) = std::fs::read_dir(&root) else {
        return Ok(None);
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    match dirs.len() {
        0 => Err(bad(
            &root,
            None,
            "split/ holds no split directory (expected split/<name>/{train,valid,test}.csv.gz); remove split/ to import without splits",
        )),
        1 => Ok(dirs.pop()),
        _ => Err(bad(
            &root,
            None,
            format!(
                "several splits {:?}; choose one with --split-name",
                dirs.iter()
                    .filter_map(|d| d.file_name())
                    .collect::<Vec<_>>()
            ),
        )),
    }
}

/// `DIR/NAME.csv.gz`, `.csv` or `.npy`, whichever exists.
pub(super) fn split_file(dir: &Path, name: &str) -> Option<PathBuf> {
    ["csv.gz", "csv", "npy"]
        .iter()
        .map(|e| dir.join(format!("{name}.{e}")))
        .find(|p| p.is_file())
}

/// Refuses an edge file that holds `got` edges where its count file
/// (`num-edge-list.csv.gz`) says `want`.
pub(super) fn check_edge_count(edges: &Path, count_file: &Path, want: u64, got: u64) -> Result<()> {
    if want == got {
        return Ok(());
    }
    Err(bad(
        edges,
        None,
        format!(
            "{got} edges, but {} says {want}: the dataset is incomplete or its files do not belong together",
            count_file.display()
        ),
    ))
}

/// The number of values in the first row of an OGB `node-feat.csv.gz`
/// (the feature dimension); `None` when the file has no rows.
pub(super) fn csv_feature_width(path: &Path) -> Result<Option<u64>> {
    let mut first = Vec::new();
    let has_row = FloatRows::open(path)?.next_row(&mut first)?;
    Ok(has_row.then(|| first.len().max(1) as u64))
}

/// Streams the rows of an OGB `node-feat.csv.gz` (of the sink's width)
/// into `sink` in blocks of about a million values; returns how many rows
/// it held. A row past the first `max_rows` is refused at its line,
/// `whose` naming the nodes they belong to ("6 nodes").
pub(super) fn feed_csv_features(
    path: &Path,
    sink: &mut FeatureSink,
    max_rows: u64,
    whose: &str,
) -> Result<u64> {
    let dim = sink.dim().max(1);
    let block = ((1u64 << 20) / dim).max(1);
    let mut rows = FloatRows::open(path)?;
    let mut buf: Vec<f64> = Vec::new();
    let (mut start, mut in_block, mut total) = (0u64, 0u64, 0u64);
    loop {
        let more = rows.next_row(&mut buf)?;
        if more {
            total += 1;
            in_block += 1;
            if total > max_rows {
                return Err(bad(
                    path,
                    Some(rows.line()),
                    format!("more feature rows than the {whose}"),
                ));
            }
        }
        if (!more || in_block == block) && in_block > 0 {
            sink.push_f64(&buf, path, start)?;
            start += in_block;
            buf.clear();
            in_block = 0;
        }
        if !more {
            return Ok(total);
        }
    }
}

/// The labels of an OGB `node-label.csv.gz`: one class id per line (empty
/// or `nan` = missing). A row of several labels (a multi-label dataset
/// such as ogbn-proteins) is refused.
pub(super) fn read_csv_labels(path: &Path) -> Result<Vec<i32>> {
    let mut rows = FloatRows::open(path)?;
    let mut labels = Vec::new();
    let mut row = Vec::new();
    loop {
        row.clear();
        if !rows.next_row(&mut row)? {
            return Ok(labels);
        }
        let [x] = row.as_slice() else {
            return Err(bad(path, Some(rows.line()), format!("{} labels in a row; multi-label datasets are not supported (one class id per node)", row.len())));
        };
        let int = (x.fract() == 0.0 && x.is_finite()).then_some(*x as i128);
        labels.push(label_value(*x, int, path, rows.line())?);
    }
}
