//! `ginex-import dgl` of a chunked graph with one node type: its edge types
//! merge into one homogeneous store.

use std::path::Path;

use serde_json::Value;

use super::shared::{
    check_chunk_counts, checked_sum, edge_input, mask_ids, numpy_chunks, original_ids,
    write_mask_splits, DglImport, Meta,
};
use crate::error::Result;
use crate::import::npy::NpyFile;
use crate::import::pipeline::{
    feature_shape, features_from_npy, labels_from_npy, Build, EdgeInput, FeatureSink, ImportReport,
};

/// Imports a chunked graph with one node type, `ntype`.
pub(super) fn import_homogeneous(
    opts: &DglImport,
    root: &Value,
    meta: &Meta,
    ntype: &str,
) -> Result<ImportReport> {
    let path = meta.path;
    let get = |k: &str| root.get(k).ok_or_else(|| meta.err(k, "missing key"));
    let per_chunk = get("num_nodes_per_chunk")?
        .as_array()
        .and_then(|a| a.first())
        .ok_or_else(|| meta.err("num_nodes_per_chunk", "expected one list per node type"))?;
    let n = checked_sum(
        meta,
        "num_nodes_per_chunk",
        meta.u64_list(per_chunk, "num_nodes_per_chunk")?,
    )?;

    let (inputs, expected_counts) = edge_chunks(meta, root, ntype)?;
    let arrays_of = |key: &str| node_arrays(meta, root, ntype, key, n);
    let feats = arrays_of(&opts.feat_key)?;
    let dim = match feats.as_ref().and_then(|a| a.first()) {
        Some(f) => feature_shape(f)?.1,
        None => 1,
    };
    let expected = checked_sum(
        meta,
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
    node_tables(opts, path, n, &arrays_of, meta, &mut build)?;
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
