//! Edge inputs (arrays, text lists) read, checked and remapped into the
//! bucketer: [`edges_from`], [`EdgeSink`] and [`Build::topology`].

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::error::{Error, Result};
use crate::import::npy::{NpyFile, NpyType};
use crate::import::remap::IdMap;
use crate::import::text::TextEdges;
use crate::progress::Bar;
use crate::store::edges::EdgeBucketer;
use crate::store::relation_counts::{CountingSink, RelationCounts};

use super::edge_splits::{SplitBuild, SplitRelation, SplitSink};
use super::{bad, progress, Build};

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

/// Why `ginex-import files` refuses a (2, 2) edge array, whose layout the
/// shape cannot tell (docs/ginex-import.md, "Edge arrays").
pub const SQUARE_EDGE_ARRAY: &str = "edge array has shape (2, 2), which is both two (src, dst) rows (E, 2) and a (2, E) edge_index of two edges: the layout is ambiguous, so it is refused. Write the two edges as a text list instead (one `src dst` line per edge, e.g. numpy.savetxt('edges.txt', rows, fmt='%d'))";

/// Calls `f(src, dst, position)` for every edge of `input` (position: the
/// 1-based line of a text file or row of an array); returns the count.
pub fn edges_from(
    input: &EdgeInput,
    f: &mut dyn FnMut(i128, i128, u64) -> Result<()>,
) -> Result<u64> {
    edges_noting(input, f, &mut Vec::new())
}

/// [`edges_from`], adding to `notes` what the import's output should say
/// about the input (a dropped weight column).
pub fn edges_noting(
    input: &EdgeInput,
    f: &mut dyn FnMut(i128, i128, u64) -> Result<()>,
    notes: &mut Vec<String>,
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
                // A (2, 2) array is read as (E, 2): a format that names
                // its layout (DGL's numpy edge chunks are (E, 2)) says so;
                // `files --edges`, whose input could be either, refuses it
                // first (SQUARE_EDGE_ARRAY).
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
            if let Some((lines, first)) = t.dropped_weights() {
                notes.push(format!(
                    "{}: column 3 read as an edge weight and dropped on {lines} line(s) (the first: line {first}): the store holds no weights",
                    path.display()
                ));
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

/// The node types an input's edges join in a typed import: the ids in
/// the input are the types' own (`0..count`), stored at `offset + id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EdgeEnds {
    /// Source type: name (for messages), first global id, node count.
    pub src: (String, u64, u64),
    /// Destination type: name, first global id, node count.
    pub dst: (String, u64, u64),
}

/// A type-local id `raw` of type `(name, offset, count)`, checked and made
/// global.
pub(crate) fn typed_id(
    raw: i128,
    ty: &(String, u64, u64),
    path: &Path,
    at: u64,
    what: &str,
) -> Result<u64> {
    let (name, offset, count) = ty;
    if raw < 0 || raw >= i128::from(*count) {
        return Err(bad(
            path,
            Some(at),
            format!("{what} {raw} is not an id of node type {name} (0..{count})"),
        ));
    }
    Ok(offset + raw as u64)
}

/// Feeds checked, remapped edges to the bucketer.
pub struct EdgeSink<'a> {
    bucketer: &'a mut EdgeBucketer,
    n: u64,
    /// The types the next input joins (typed imports).
    ends: Option<EdgeEnds>,
    map: Option<&'a IdMap>,
    undirected: bool,
    bar: &'a Bar,
    read: u64,
    /// Set when the feature thread failed: stop early.
    cancel: &'a AtomicBool,
    /// What the import's output says about the inputs.
    notes: Vec<String>,
}

impl EdgeSink<'_> {
    /// Pushes every edge of `input`; returns how many it held.
    pub fn push_input(&mut self, input: &EdgeInput) -> Result<u64> {
        let path = input.path().to_path_buf();
        let ends = self.ends.clone();
        let mut notes = std::mem::take(&mut self.notes);
        let read = edges_noting(
            input,
            &mut |s, d, at| {
                let (s, d) = match &ends {
                    None => (
                        node_id(s, self.n, self.map, &path, at, "edge source")?,
                        node_id(d, self.n, self.map, &path, at, "edge target")?,
                    ),
                    Some(e) => (
                        typed_id(s, &e.src, &path, at, "edge source")?,
                        typed_id(d, &e.dst, &path, at, "edge target")?,
                    ),
                };
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
            },
            &mut notes,
        );
        self.notes = notes;
        read
    }
}

impl Build {
    /// Builds the topology from `inputs` (ids checked against the node
    /// count, or mapped through `map`). `expected` sizes the buckets.
    pub fn topology(
        &mut self,
        inputs: &[EdgeInput],
        map: Option<&IdMap>,
        expected: u64,
    ) -> Result<Vec<u64>> {
        self.build_topology(inputs, map, None, expected)
    }

    /// Builds a typed store's topology: input `i` joins the types
    /// `ends[i]`, its ids are the types' own. The schema set with
    /// [`Build::set_schema`] gets each relation's edge count (edges are
    /// assigned to relations by their endpoints' types).
    pub fn typed_topology(
        &mut self,
        inputs: &[EdgeInput],
        ends: &[EdgeEnds],
        expected: u64,
    ) -> Result<Vec<u64>> {
        self.build_topology(inputs, None, Some(ends), expected)
    }

    fn build_topology(
        &mut self,
        inputs: &[EdgeInput],
        map: Option<&IdMap>,
        ends: Option<&[EdgeEnds]>,
        expected: u64,
    ) -> Result<Vec<u64>> {
        let started = Instant::now();
        let mut split = match &self.opts.edge_splits {
            None => None,
            Some(source) => {
                let relation = SplitRelation::resolve(
                    self.builder.schema(),
                    self.opts.target_relation.as_deref(),
                )?;
                // A relation's split names its own edge file.
                let input = match (&relation, ends) {
                    (Some(r), Some(ends)) => ends.iter().position(|e| *e == r.ends),
                    _ => None,
                };
                Some(SplitBuild::new(
                    source,
                    (self.n, self.opts.undirected || self.opts.undirected_splits),
                    map,
                    relation,
                    inputs
                        .get(input.unwrap_or(0))
                        .map_or(Path::new("<edges>"), EdgeInput::path),
                )?)
            }
        };
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
            ends: None,
            map,
            undirected: self.opts.undirected,
            bar: &bar,
            read: 0,
            cancel: &self.cancel,
            notes: Vec::new(),
        };
        let mut counts = Vec::with_capacity(inputs.len());
        for (i, input) in inputs.iter().enumerate() {
            sink.ends = ends.and_then(|e| e.get(i)).cloned();
            counts.push(sink.push_input(input)?);
        }
        self.report.edges_read = sink.read;
        self.report.notes.append(&mut sink.notes);
        bar.finish_and_clear();
        self.report
            .phases
            .push(("read + spill edges", started.elapsed()));
        let started = Instant::now();
        let mut topo = self.builder.topology_writer()?;
        match self.builder.schema().cloned() {
            None => match split.as_mut() {
                None => self.report.csc = bucketer.finish(self.opts.csc, &mut topo)?,
                Some(split) => {
                    let mut sink = SplitSink {
                        inner: &mut topo,
                        split,
                        node: 0,
                        kept: Vec::new(),
                    };
                    self.report.csc = bucketer.finish(self.opts.csc, &mut sink)?;
                }
            },
            Some(schema) => {
                let mut counting = CountingSink {
                    inner: &mut topo,
                    counts: RelationCounts::new(&schema),
                    next: 0,
                };
                match split.as_mut() {
                    None => self.report.csc = bucketer.finish(self.opts.csc, &mut counting)?,
                    Some(split) => {
                        let mut sink = SplitSink {
                            inner: &mut counting,
                            split,
                            node: 0,
                            kept: Vec::new(),
                        };
                        self.report.csc = bucketer.finish(self.opts.csc, &mut sink)?;
                    }
                }
                let counts = counting.counts.counts().to_vec();
                self.builder.set_relation_edges(&counts)?;
            }
        }
        self.builder.add_topology(topo)?;
        if let Some(split) = split {
            self.report.edges_held_out = split.removed();
            let s = split.finish(&mut self.builder)?;
            tracing::info!(
                valid = s.valid.len(),
                test = s.test.len(),
                held_out = self.report.edges_held_out,
                "edge splits written"
            );
        }
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
}
