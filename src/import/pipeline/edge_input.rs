//! Edge inputs (arrays, text lists) read and checked: [`EdgeInput`],
//! [`edges_from`], node ids (untyped and of one node type). The CSC build
//! ([`super::edges`]) and the edge splits ([`super::edge_splits`]) both
//! read through these.

use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::import::npy::{NpyFile, NpyType};
use crate::import::remap::IdMap;
use crate::import::text::TextEdges;

use super::bad;

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
