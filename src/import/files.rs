//! `ginex-import files`: a store from an edge list (text or `.npy`), an
//! optional feature matrix (`.npy`), optional labels and splits, with
//! optional id remapping for non-contiguous ids. Streams everything; the
//! CSC build goes through the out-of-core bucketer; the store is written
//! atomically and verified at the end (see [`crate::import::pipeline`]).

use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::format::tables::Splits;
use crate::import::npy::NpyFile;
use crate::import::pipeline::{
    bad, check_passes, edges_from, feature_shape, features_from_npy, for_each_id, labels_from_npy,
    progress, random_split, read_ids, Build, CommonOptions, EdgeInput, ImportReport,
    SQUARE_EDGE_ARRAY,
};

use crate::import::remap::{IdCollector, IdMap};

/// What to import.
#[derive(Debug, Clone)]
pub struct FilesImport {
    /// Edge list: `.npy` of shape (E, 2) or (2, E), or text (`.gz` allowed).
    pub edges: PathBuf,
    /// Feature matrix `.npy` of shape (rows, dim). Without remapping the
    /// rows are the nodes; with remapping row `r` belongs to original id `r`.
    /// Absent: all-zero features of `feature_dim`.
    pub features: Option<PathBuf>,
    /// Width of the all-zero features when there is no feature file.
    pub feature_dim: u64,
    /// Labels `.npy` of shape (rows,) or (rows, 1): integers (-1 = missing)
    /// or floats (NaN = missing); indexed like the features.
    pub labels: Option<PathBuf>,
    /// Number of classes (default: largest label + 1).
    pub num_classes: Option<u32>,
    /// Split id files (`.npy` or one id per line), train/valid/test.
    pub split_files: [Option<PathBuf>; 3],
    /// Seeded random split fractions instead of files.
    pub split: Option<[f64; 3]>,
    /// Seed of the random split.
    pub seed: u64,
    /// Node count: must equal the feature rows when there are features;
    /// without, nodes beyond the largest id are isolated. Default: the
    /// feature rows, else the largest id + 1.
    pub num_nodes: Option<u64>,
    /// Renumber the distinct ids of the edge list to `0..N` (sorted order)
    /// and keep the original ids in the store.
    pub remap: bool,
    /// Original ids of the nodes (`.npy` or one per line, one per node in
    /// node order), kept in the store as `--remap` keeps them; for inputs
    /// already renumbered (a ginex export of a remapped store).
    pub orig_ids: Option<PathBuf>,
    /// Options shared by every importer.
    pub common: CommonOptions,
}

impl FilesImport {
    /// An import of `edges` into `out` with everything else default.
    pub fn new(edges: impl Into<PathBuf>, out: impl Into<PathBuf>) -> Self {
        FilesImport {
            edges: edges.into(),
            features: None,
            feature_dim: 1,
            labels: None,
            num_classes: None,
            split_files: [None, None, None],
            split: None,
            seed: 0,
            num_nodes: None,
            remap: false,
            orig_ids: None,
            common: CommonOptions::new(out),
        }
    }
}

/// A first pass over the edges (before the store can be sized): every id,
/// checked to be a non-negative integer that fits `u64`, goes to `f`.
/// Returns the number of edges read.
fn scan_ids(input: &EdgeInput, what: &str, quiet: bool, mut f: impl FnMut(u64)) -> Result<u64> {
    let path = input.path().to_path_buf();
    let bar = progress(0, what, quiet);
    let mut seen = 0u64;
    let count = edges_from(input, &mut |s, d, at| {
        for v in [s, d] {
            let id = u64::try_from(v).map_err(|_| {
                bad(
                    &path,
                    Some(at),
                    format!("node id {v} is not a non-negative integer below 2^64"),
                )
            })?;
            f(id);
        }
        seen += 1;
        if seen % (1 << 16) == 0 {
            bar.set_position(seen);
        }
        Ok(())
    })?;
    bar.finish_and_clear();
    Ok(count)
}

/// The refusal of an edge input that holds no edges (`detail`: what it
/// holds instead). A store needs at least one edge; the check comes after
/// the first pass over a text file, so a stream is read once at most.
fn no_edges(path: &std::path::Path, detail: &str) -> Error {
    bad(
        path,
        None,
        format!("no edges: {detail}; a store needs at least one edge (src dst)"),
    )
}

/// What a text edge list that yielded no edges holds.
const NO_EDGE_LINES: &str =
    "the file holds no edge lines (it is empty, or only a header line, comments or blank lines)";

/// Imports a store; see [`FilesImport`].
pub fn import_files(opts: &FilesImport) -> Result<ImportReport> {
    let input = EdgeInput::from_path(&opts.edges)?;
    check_edge_array(&opts.edges, &input)?;
    let feats = opts.features.as_deref().map(NpyFile::open).transpose()?;
    let shape = feats.as_ref().map(feature_shape).transpose()?;
    if opts.remap && opts.orig_ids.is_some() {
        return Err(Error::invalid_argument(
            "--orig-ids cannot be combined with --remap (remapping records the original ids itself)",
        ));
    }
    if opts.remap && opts.num_nodes.is_some() {
        return Err(Error::invalid_argument(
            "--num-nodes cannot be combined with --remap (the node count is the number of distinct ids)",
        ));
    }

    // The node count, and the id map when remapping.
    let mut map: Option<IdMap> = None;
    // Edges counted by a first pass, and a note for a refusal on size.
    let mut first_pass: Option<u64> = None;
    let mut note: Option<String> = None;
    let n = if opts.remap {
        let mut c = IdCollector::new(opts.common.memory);
        let edges = scan_ids(&input, "collect ids", opts.common.quiet, |id| c.push(id))?;
        if edges == 0 {
            return Err(no_edges(&opts.edges, NO_EDGE_LINES));
        }
        first_pass = Some(edges);
        let m = c.finish(opts.common.memory)?;
        let n = m.len();
        map = Some(m);
        n
    } else if let (Some((rows, _)), Some(f)) = (shape, &feats) {
        if let Some(want) = opts.num_nodes.filter(|&w| w != rows) {
            return Err(bad(
                &f.path,
                None,
                format!("--num-nodes {want} but the feature matrix has {rows} rows"),
            ));
        }
        rows
    } else if let Some(n) = opts.num_nodes {
        n
    } else {
        let mut max: Option<u64> = None;
        let edges = scan_ids(&input, "find max id", opts.common.quiet, |id| {
            max = max.max(Some(id));
        })?;
        if edges == 0 {
            return Err(no_edges(&opts.edges, NO_EDGE_LINES));
        }
        first_pass = Some(edges);
        let n = match max {
            None => 0,
            Some(m) => m
                .checked_add(1)
                .ok_or_else(|| bad(&opts.edges, None, "node ids exceed 2^64 - 1"))?,
        };
        // E edges have at most 2E distinct ids: far fewer than the node
        // count means most nodes would be isolated padding.
        if n / 4 > edges.saturating_mul(2) {
            let msg = format!(
                "the ids are sparse: {edges} edges hold at most {} distinct ids but the largest id is {}, so most of the {n} nodes would be isolated; pass --remap to renumber the ids 0..N",
                edges.saturating_mul(2),
                n - 1
            );
            note = Some(msg); // a warning if the store fits, else part of the refusal
        }
        n
    };
    let dim = shape.map_or(opts.feature_dim, |(_, d)| d);
    let dim_source = opts
        .features
        .clone()
        .unwrap_or_else(|| PathBuf::from("--feature-dim"));
    let expected = match &input {
        EdgeInput::Array(a) => a.len() / 2,
        EdgeInput::Text { .. } => first_pass.unwrap_or(0),
    };
    let mut build = Build::create(&opts.common, n, dim, &dim_source, expected, note.as_deref())?;

    let rows = map.as_ref().map(IdMap::original_ids);
    let topology = |b: &mut Build| -> Result<()> {
        let counts = b.topology(std::slice::from_ref(&input), map.as_ref(), expected)?;
        if first_pass.is_none() && counts.first() == Some(&0) {
            return Err(no_edges(&opts.edges, NO_EDGE_LINES));
        }
        if let (Some(first), Some(&second)) = (first_pass, counts.first()) {
            check_passes(&opts.edges, first, second)?;
        }
        Ok(())
    };
    match &feats {
        Some(f) => {
            build.overlapped(&f.path, |sink| features_from_npy(f, rows, sink), topology)?;
        }
        None => {
            topology(&mut build)?;
            build.zero_features()?;
        }
    }

    if let Some(path) = &opts.labels {
        let labels = labels_by_row(path, rows)?;
        build.labels(&labels, opts.num_classes, path)?;
    }

    let splits = if opts.split_files.iter().any(Option::is_some) {
        let mut lists: [Vec<u64>; 3] = Default::default();
        for (list, file) in lists.iter_mut().zip(&opts.split_files) {
            if let Some(p) = file {
                *list = read_ids(p, n, map.as_ref())?;
            }
        }
        Some(Splits::from_lists(lists))
    } else {
        opts.split.map(|f| random_split(n, f, opts.seed))
    };
    if let Some(s) = &splits {
        if let Some(id) = s.first_overlap() {
            return Err(Error::invalid_argument(format!(
                "node {id} is in more than one of --train-ids / --valid-ids / --test-ids"
            )));
        }
        build.splits(s)?;
    }
    if let Some(m) = &map {
        build.original_ids(m.original_ids())?;
    }
    if let Some(path) = &opts.orig_ids {
        let ids = read_orig_ids(path, n)?;
        build.original_ids(&ids)?;
    }
    build.finish()
}

/// Refuses an edge array that is ambiguous ((2, 2): rows or an
/// edge_index) or empty; a text edge list is checked as it is read.
fn check_edge_array(edges: &std::path::Path, input: &EdgeInput) -> Result<()> {
    if let EdgeInput::Array(a) = input {
        // (E, 2) rows or a (2, E) edge_index: a (2, 2) array is both.
        if a.header.shape == [2, 2] {
            return Err(bad(edges, None, SQUARE_EDGE_ARRAY));
        }
        if a.header.is_empty() {
            return Err(no_edges(
                edges,
                &format!(
                    "the array has shape ({})",
                    a.header
                        .shape
                        .iter()
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// The labels of `path` (`.npy`), one per store row: as they are, or,
/// when remapping, the label of each row's original id (`rows`).
fn labels_by_row(path: &std::path::Path, rows: Option<&[u64]>) -> Result<Vec<i32>> {
    let f = NpyFile::open(path)?;
    let mut all = Vec::new();
    labels_from_npy(&f, &mut all)?;
    Ok(match rows {
        None => all,
        Some(ids) => ids
            .iter()
            .map(|&id| {
                usize::try_from(id)
                    .ok()
                    .and_then(|i| all.get(i))
                    .copied()
                    .ok_or_else(|| {
                        bad(
                            path,
                            None,
                            format!(
                                "no label for original id {id} (the array has {} entries)",
                                all.len()
                            ),
                        )
                    })
            })
            .collect::<Result<Vec<i32>>>()?,
    })
}

/// Reads one original id per node (`.npy` integers or one per line), in
/// node order; repeats are allowed (the store does not interpret them).
fn read_orig_ids(path: &std::path::Path, n: u64) -> Result<Vec<u64>> {
    let mut ids = Vec::new();
    let mut push = |v: i128, at: u64| -> Result<()> {
        ids.push(u64::try_from(v).map_err(|_| {
            bad(
                path,
                Some(at),
                format!("original id {v} is not a non-negative integer below 2^64"),
            )
        })?);
        Ok(())
    };
    for_each_id(path, ("original ids have", "N", "original ids"), &mut push)?;
    if ids.len() as u64 != n {
        return Err(bad(
            path,
            None,
            format!("{} original ids for {n} nodes", ids.len()),
        ));
    }
    Ok(ids)
}
