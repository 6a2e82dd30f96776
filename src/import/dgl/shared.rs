//! What both kinds of chunked graph use: the import options, the metadata
//! document (read within a bound, its lists and paths checked) and the
//! checks of chunk counts, masks and original ids.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::{Error, Result};
use crate::format::tables::Splits;
use crate::import::npy::NpyFile;
use crate::import::pipeline::{bad, Build, CommonOptions, EdgeInput};

/// What to import.
#[derive(Debug, Clone)]
pub struct DglImport {
    /// The metadata file.
    pub metadata: PathBuf,
    /// `node_data` key of the features.
    pub feat_key: String,
    /// `node_data` key of the labels.
    pub label_key: String,
    /// `node_data` keys of the train/valid/test masks.
    pub mask_keys: [String; 3],
    /// `node_data` key of the original node ids (integers, one per node),
    /// kept in the store like `ginex-import files --remap` keeps them.
    pub orig_id_key: Option<String>,
    /// Number of classes (default: largest label + 1).
    pub num_classes: Option<u32>,
    /// Options shared by every importer.
    pub common: CommonOptions,
}

pub(super) struct Meta<'a> {
    pub(super) path: &'a Path,
    pub(super) dir: PathBuf,
}

impl Meta<'_> {
    pub(super) fn err(&self, key: &str, reason: impl Into<String>) -> Error {
        bad(self.path, None, format!("{key}: {}", reason.into()))
    }

    pub(super) fn str_list<'v>(&self, v: &'v Value, key: &str) -> Result<Vec<&'v str>> {
        v.as_array()
            .ok_or_else(|| self.err(key, "expected a list of names"))?
            .iter()
            .map(|x| {
                x.as_str()
                    .ok_or_else(|| self.err(key, "names must be strings"))
            })
            .collect()
    }

    pub(super) fn u64_list(&self, v: &Value, key: &str) -> Result<Vec<u64>> {
        v.as_array()
            .ok_or_else(|| self.err(key, "expected a list of integers"))?
            .iter()
            .map(|x| {
                x.as_u64()
                    .ok_or_else(|| self.err(key, format!("{x} is not a non-negative integer")))
            })
            .collect()
    }

    /// The chunk files of a ChunkFileSpec: (format name, delimiter, paths),
    /// each checked to exist.
    pub(super) fn chunks(
        &self,
        spec: &Value,
        key: &str,
    ) -> Result<(String, Option<u8>, Vec<PathBuf>)> {
        let format = spec
            .get("format")
            .ok_or_else(|| self.err(key, "no \"format\""))?;
        let name = format
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| self.err(key, "format has no \"name\""))?
            .to_string();
        let delimiter = match format.get("delimiter").and_then(Value::as_str) {
            None => None,
            Some(d) => match d.as_bytes() {
                [b] => Some(*b),
                _ => return Err(self.err(key, format!("delimiter {d:?} must be one character"))),
            },
        };
        match name.as_str() {
            "csv" | "numpy" => {}
            "parquet" => {
                return Err(self.err(key, "parquet chunks are not supported by this build; convert them to numpy (.npy) or csv"))
            }
            other => return Err(self.err(key, format!("unknown format {other:?} (csv, numpy or parquet)"))),
        }
        let data = spec
            .get("data")
            .and_then(Value::as_array)
            .ok_or_else(|| self.err(key, "no \"data\" list of files"))?;
        let mut files = Vec::new();
        for (i, d) in data.iter().enumerate() {
            let rel = d
                .as_str()
                .ok_or_else(|| self.err(key, format!("data[{i}] is not a path")))?;
            let p = if Path::new(rel).is_absolute() {
                PathBuf::from(rel)
            } else {
                self.dir.join(rel)
            };
            if !p.is_file() {
                let what = match std::fs::metadata(&p) {
                    Err(_) => "missing",
                    Ok(m) if m.is_dir() => "is a directory, not a chunk file",
                    Ok(_) => "not a regular file (a device, pipe or socket), not a chunk file",
                };
                return Err(bad(
                    &p,
                    None,
                    format!(
                        "{what}: listed in {} as {key}.data[{i}]",
                        self.path.display()
                    ),
                ));
            }
            files.push(p);
        }
        Ok((name, delimiter, files))
    }
}

/// The largest `metadata.json` read (4 MiB; real ones are a few KiB even
/// for thousands of chunks).
pub const MAX_METADATA: u64 = 4 << 20;

/// Reads the metadata document, refusing one longer than [`MAX_METADATA`]
/// as soon as the bound is crossed (a stream such as `/dev/zero` is never
/// read to its end).
pub(super) fn read_metadata(path: &Path) -> Result<String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| Error::io("open", path, e))?;
    let mut bytes = Vec::new();
    file.take(MAX_METADATA + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io("read", path, e))?;
    if bytes.len() as u64 > MAX_METADATA {
        return Err(bad(
            path,
            None,
            format!(
                "byte {MAX_METADATA}: the document exceeds the {} MiB limit for DGL metadata (MAX_METADATA); is this a chunked-graph metadata.json?",
                MAX_METADATA >> 20
            ),
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        bad(
            path,
            None,
            format!("byte {}: not UTF-8 text", e.utf8_error().valid_up_to()),
        )
    })
}

/// The sum of counts read from `key`, refusing one that overflows `u64`.
pub(super) fn checked_sum(
    meta: &Meta,
    key: &str,
    counts: impl IntoIterator<Item = u64>,
) -> Result<u64> {
    counts.into_iter().try_fold(0u64, |a, c| {
        a.checked_add(c).ok_or_else(|| {
            meta.err(
                key,
                format!(
                    "the counts overflow 2^64 - 1 (adding {c} to {a}); the metadata is corrupt"
                ),
            )
        })
    })
}

pub(super) fn is_empty_file(p: &Path) -> bool {
    std::fs::metadata(p).map(|m| m.len() == 0).unwrap_or(false)
}

/// Opens numpy chunks, skipping empty files.
pub(super) fn open_arrays(files: &[PathBuf]) -> Result<Vec<NpyFile>> {
    files
        .iter()
        .filter(|p| !is_empty_file(p))
        .map(|p| NpyFile::open(p))
        .collect()
}

fn rows_of(f: &NpyFile) -> u64 {
    f.header.shape.first().copied().unwrap_or(1)
}

pub(super) fn check_rows(meta: &Meta, key: &str, arrays: &[NpyFile], n: u64) -> Result<()> {
    let total = checked_sum(meta, key, arrays.iter().map(rows_of))?;
    if total != n {
        return Err(meta.err(
            key,
            format!("chunks hold {total} rows in all but num_nodes_per_chunk sums to {n} nodes"),
        ));
    }
    Ok(())
}

/// Checks each edge chunk's count (`got`, in `inputs` order) against the
/// `num_edges_per_chunk` of its edge type (`expected`: type name, count).
pub(super) fn check_chunk_counts(
    metadata: &Path,
    inputs: &[EdgeInput],
    expected: &[(String, u64)],
    got: &[u64],
) -> Result<()> {
    for ((input, (et, want)), have) in inputs.iter().zip(expected).zip(got) {
        if want != have {
            return Err(bad(
                input.path(),
                None,
                format!(
                    "chunk holds {have} edges but num_edges_per_chunk in {} says {want} for {et:?}",
                    metadata.display()
                ),
            ));
        }
    }
    Ok(())
}

/// Writes the train / valid / test lists read from the masks `keys`,
/// refusing a node set in more than one.
pub(super) fn write_mask_splits(
    meta: &Meta,
    keys: &[String; 3],
    lists: [Vec<u64>; 3],
    build: &mut Build,
) -> Result<()> {
    let s = Splits::from_lists(lists);
    if let Some(id) = s.first_overlap() {
        return Err(meta.err(
            "node_data",
            format!("node {id} is set in more than one of the masks {keys:?}"),
        ));
    }
    build.splits(&s)
}

/// Appends to `ids` the positions (plus `base`) of the non-zero entries
/// of the mask chunks `arrays` of `key`.
pub(super) fn mask_ids(
    meta: &Meta,
    key: &str,
    arrays: &[NpyFile],
    base: u64,
    ids: &mut Vec<u64>,
) -> Result<()> {
    let mut base = base;
    let (mut raw, mut vals) = (Vec::new(), Vec::new());
    for f in arrays {
        let k = f.len();
        for first in (0..k).step_by(1 << 20) {
            let c = (1u64 << 20).min(k - first) as usize;
            f.read_f64(first, c, &mut raw, &mut vals)?;
            ids.extend(
                vals.iter()
                    .enumerate()
                    .filter(|(_, v)| **v != 0.0)
                    .map(|(i, _)| base + first + i as u64),
            );
        }
        base = checked_sum(meta, key, [base, rows_of(f)])?;
    }
    Ok(())
}

/// Appends the original ids held by the integer chunks `arrays` to `ids`.
pub(super) fn original_ids(arrays: &[NpyFile], ids: &mut Vec<u64>) -> Result<()> {
    let (mut raw, mut vals) = (Vec::new(), Vec::new());
    for f in arrays {
        let k = f.len();
        for first in (0..k).step_by(1 << 20) {
            let c = (1u64 << 20).min(k - first) as usize;
            if !f.read_ints(first, c, &mut raw, &mut vals)? {
                return Err(bad(
                    &f.path,
                    None,
                    "original ids must be integers, the array holds floats",
                ));
            }
            for (i, v) in vals.iter().enumerate() {
                ids.push(u64::try_from(*v).map_err(|_| {
                    bad(
                        &f.path,
                        Some(first + i as u64 + 1),
                        format!("original id {v} is negative"),
                    )
                })?);
            }
        }
    }
    Ok(())
}

/// The input of edge chunk `f` of a chunk list of `format` (`numpy`, or
/// text with `delimiter`, a space by default): an empty numpy file is read
/// as empty text.
pub(super) fn edge_input(format: &str, delimiter: Option<u8>, f: PathBuf) -> Result<EdgeInput> {
    Ok(if format == "numpy" && !is_empty_file(&f) {
        EdgeInput::Array(NpyFile::open(&f)?)
    } else {
        EdgeInput::Text {
            path: f,
            delimiter: delimiter.or(Some(b' ')),
        }
    })
}

/// The numpy chunks `spec` of the metadata's `field`, opened and checked
/// to hold `rows` rows in all.
pub(super) fn numpy_chunks(
    meta: &Meta,
    spec: &Value,
    field: &str,
    rows: u64,
) -> Result<Vec<NpyFile>> {
    let (format, _, files) = meta.chunks(spec, field)?;
    if format != "numpy" {
        return Err(meta.err(field, "node data must be numpy chunks"));
    }
    let arrays = open_arrays(&files)?;
    check_rows(meta, field, &arrays, rows)?;
    Ok(arrays)
}
