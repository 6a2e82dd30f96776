//! `ginex-import dgl METADATA.json`: DGL's chunked graph format (DGL user
//! guide §7.1, "Chunked Graph Format"). `graph_name`, `node_type`,
//! `num_nodes_per_chunk`, `edge_type` (`src:rel:dst`),
//! `num_edges_per_chunk`, `edges` (per edge type: `format` `csv` with a
//! `delimiter`, or `numpy` arrays of shape (E, 2)) and `node_data` (per node
//! type and key: `numpy` chunks, concatenated in order).
//!
//! Homogeneous graphs (one node type; any number of edge types, merged)
//! are imported fully; graphs with several node types are refused with a
//! message (ginex stores homogeneous graphs; `dgl.to_homogeneous` converts).
//! Paths are relative to the metadata file unless absolute; empty chunk
//! files are allowed. Every edge chunk's count is checked against
//! `num_edges_per_chunk`, and the node-data chunks against the node count.
//! `parquet` chunks are refused with a message (no parquet reader in this
//! build); `edge_data` is ignored. A `node_data` key of original ids
//! (`orig_id`, as `ginex-export dgl` writes it) is kept as the store's
//! original ids, and `num_classes` overrides the largest label + 1, so an
//! export re-imports to the identical store.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::{Error, Result};
use crate::format::tables::Splits;
use crate::import::npy::NpyFile;
use crate::import::pipeline::{
    bad, feature_shape, features_from_npy, labels_from_npy, Build, CommonOptions, EdgeInput,
    FeatureSink, ImportReport,
};

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

    fn str_list<'v>(&self, v: &'v Value, key: &str) -> Result<Vec<&'v str>> {
        v.as_array()
            .ok_or_else(|| self.err(key, "expected a list of names"))?
            .iter()
            .map(|x| {
                x.as_str()
                    .ok_or_else(|| self.err(key, "names must be strings"))
            })
            .collect()
    }

    fn u64_list(&self, v: &Value, key: &str) -> Result<Vec<u64>> {
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
fn read_metadata(path: &Path) -> Result<String> {
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

/// Imports a DGL chunked graph; see the module docs.
pub fn import_dgl(opts: &DglImport) -> Result<ImportReport> {
    let path = opts.metadata.as_path();
    let text = read_metadata(path)?;
    let root: Value = serde_json::from_str(&text)
        .map_err(|e| bad(path, Some(e.line() as u64), format!("not valid JSON: {e}")))?;
    let meta = Meta {
        path,
        dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
    };
    let get = |k: &str| root.get(k).ok_or_else(|| meta.err(k, "missing key"));

    let node_types = meta.str_list(get("node_type")?, "node_type")?;
    let [ntype] = node_types.as_slice() else {
        return crate::import::dgl_typed::import_typed(opts, &root, &meta);
    };
    let per_chunk = get("num_nodes_per_chunk")?
        .as_array()
        .and_then(|a| a.first())
        .ok_or_else(|| meta.err("num_nodes_per_chunk", "expected one list per node type"))?;
    let n = checked_sum(
        &meta,
        "num_nodes_per_chunk",
        meta.u64_list(per_chunk, "num_nodes_per_chunk")?,
    )?;

    let (inputs, expected_counts) = edge_chunks(&meta, &root, ntype)?;
    let arrays_of = |key: &str| node_arrays(&meta, &root, ntype, key, n);
    let feats = arrays_of(&opts.feat_key)?;
    let dim = match feats.as_ref().and_then(|a| a.first()) {
        Some(f) => feature_shape(f)?.1,
        None => 1,
    };
    let expected = checked_sum(
        &meta,
        "num_edges_per_chunk",
        expected_counts.iter().map(|(_, c)| *c),
    )?;
    let mut build = Build::create(&opts.common, n, dim, path, expected, None)?;
    // The edges, each chunk's count checked against the metadata.
    let topology = |b: &mut Build| -> Result<()> {
        let got = b.topology(&inputs, None, expected)?;
        check_chunk_counts(path, &inputs, &expected_counts, &got)
    };
    let chunks: Option<Vec<&NpyFile>> = feats.as_ref().map(|a| a.iter().collect());
    topology_and_features(&mut build, chunks.as_deref(), topology)?;
    node_tables(opts, path, n, &arrays_of, &meta, &mut build)?;
    if root
        .get("edge_data")
        .and_then(Value::as_object)
        .is_some_and(|o| !o.is_empty())
    {
        tracing::warn!(
            "{}: edge_data is ignored (ginex stores node features only)",
            path.display()
        );
    }
    build.finish()
}

/// Builds the topology with `topology` while the features stream in from
/// the numpy chunks `feats` (in order); without chunks, the topology and
/// then all-zero features.
pub(super) fn topology_and_features(
    build: &mut Build,
    feats: Option<&[&NpyFile]>,
    topology: impl FnOnce(&mut Build) -> Result<()>,
) -> Result<()> {
    match feats {
        Some(arrays) => {
            let source = arrays.first().map(|f| f.path.clone()).unwrap_or_default();
            let feed = |sink: &mut FeatureSink| {
                for f in arrays {
                    features_from_npy(f, None, sink)?;
                }
                Ok(())
            };
            build.overlapped(&source, feed, topology)
        }
        None => {
            topology(build)?;
            build.zero_features()
        }
    }
}

/// Each edge chunk's edge type and edge count, as the metadata gives them.
type ChunkCounts = Vec<(String, u64)>;

/// The edge chunks of an untyped graph's edge types (each
/// `<ntype>:<relation>:<ntype>`), with each chunk's edge type and count.
fn edge_chunks(meta: &Meta, root: &Value, ntype: &str) -> Result<(Vec<EdgeInput>, ChunkCounts)> {
    let get = |k: &str| root.get(k).ok_or_else(|| meta.err(k, "missing key"));
    let edge_types = meta.str_list(get("edge_type")?, "edge_type")?;
    let edge_counts = get("num_edges_per_chunk")?
        .as_array()
        .ok_or_else(|| meta.err("num_edges_per_chunk", "expected one list per edge type"))?;
    if edge_counts.len() != edge_types.len() {
        return Err(meta.err(
            "num_edges_per_chunk",
            format!(
                "{} lists for {} edge types",
                edge_counts.len(),
                edge_types.len()
            ),
        ));
    }
    let edges = get("edges")?;
    let mut inputs = Vec::new();
    let mut expected_counts = Vec::new();
    for (et, counts) in edge_types.iter().zip(edge_counts) {
        let parts: Vec<&str> = et.split(':').collect();
        if parts.len() != 3 || parts.first() != Some(&ntype) || parts.get(2) != Some(&ntype) {
            return Err(meta.err(
                "edge_type",
                format!("{et:?} is not `{ntype}:<relation>:{ntype}`"),
            ));
        }
        let key = format!("edges[{et:?}]");
        let spec = edges
            .get(*et)
            .ok_or_else(|| meta.err("edges", format!("no entry for edge type {et:?}")))?;
        let (format, delimiter, files) = meta.chunks(spec, &key)?;
        let counts = meta.u64_list(counts, "num_edges_per_chunk")?;
        if counts.len() != files.len() {
            return Err(meta.err(
                &key,
                format!(
                    "{} chunk files but num_edges_per_chunk lists {} chunks",
                    files.len(),
                    counts.len()
                ),
            ));
        }
        for (f, c) in files.into_iter().zip(counts) {
            inputs.push(edge_input(&format, delimiter, f)?);
            expected_counts.push((et.to_string(), c));
        }
    }
    Ok((inputs, expected_counts))
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

/// The numpy chunks of `node_data[ntype][key]`, opened and checked to
/// hold `n` rows in all; None when the graph has no such data.
fn node_arrays(
    meta: &Meta,
    root: &Value,
    ntype: &str,
    key: &str,
    n: u64,
) -> Result<Option<Vec<NpyFile>>> {
    let node_data = root.get("node_data").and_then(|v| v.get(ntype));
    let Some(spec) = node_data.and_then(|d| d.get(key)) else {
        return Ok(None);
    };
    let k = format!("node_data[{ntype:?}][{key:?}]");
    numpy_chunks(meta, spec, &k, n).map(Some)
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

/// Writes the labels, the splits (from the masks) and the original ids
/// of an untyped graph's `n` nodes, those it has (`arrays_of` reads a
/// `node_data` key's chunks).
fn node_tables(
    opts: &DglImport,
    path: &Path,
    n: u64,
    arrays_of: &dyn Fn(&str) -> Result<Option<Vec<NpyFile>>>,
    meta: &Meta,
    build: &mut Build,
) -> Result<()> {
    if let Some(arrays) = arrays_of(&opts.label_key)? {
        let mut labels = Vec::with_capacity(n as usize);
        for f in &arrays {
            labels_from_npy(f, &mut labels)?;
        }
        let source = arrays
            .first()
            .map(|f| f.path.clone())
            .unwrap_or_else(|| path.to_path_buf());
        build.labels(&labels, opts.num_classes, &source)?;
    }
    let mut lists: [Vec<u64>; 3] = Default::default();
    let mut any = false;
    for (ids, key) in lists.iter_mut().zip(&opts.mask_keys) {
        if let Some(arrays) = arrays_of(key)? {
            any = true;
            mask_ids(meta, key, &arrays, 0, ids)?;
        }
    }
    if any {
        write_mask_splits(meta, &opts.mask_keys, lists, build)?;
    }
    if let Some(arrays) = opts
        .orig_id_key
        .as_deref()
        .map(arrays_of)
        .transpose()?
        .flatten()
    {
        let mut ids = Vec::with_capacity(n as usize);
        original_ids(&arrays, &mut ids)?;
        build.original_ids(&ids)?;
    }
    Ok(())
}
