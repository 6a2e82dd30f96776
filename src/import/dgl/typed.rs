//! `ginex-import dgl` of a chunked graph with several node types (the
//! format's own MAG240M example): a typed store (format/schema.md).
//!
//! Node types become contiguous global id ranges in `node_type` order and
//! each canonical edge type `src:rel:dst` a relation; the ids in edge
//! chunks are the types' own, as the chunked format defines them. Features
//! (`node_data.<type>.<feat key>`) may sit on any types, each with its
//! own dimension (and dtype: `--dtype f16,author=f32`); the other types
//! are featureless. Labels
//! (`node_data.<type>.<label key>`) and masks may sit on any types; nodes
//! of the others have no label. `--undirected` symmetrises relations
//! within one type and adds the reverse `dst:rev_<rel>:src` of the others.
//! One relation per ordered type pair (the store derives an edge's
//! relation from its endpoints' types): two edge types joining the same
//! pair are refused, naming both.

use serde_json::Value;

use super::shared::{
    check_chunk_counts, checked_sum, edge_input, mask_ids, numpy_chunks, original_ids,
    write_mask_splits, DglImport, Meta,
};
use crate::error::Result;
use crate::format::schema::Schema;
use crate::format::tables::MISSING_LABEL;
use crate::import::dgl_schema::{parse_schema, TypedSchema};
use crate::import::npy::NpyFile;
use crate::import::pipeline::typed::{
    build_typed, edge_ends, node_types, relations, Declared, TypeDecl, TypedEdges, TypedFeatures,
};
use crate::import::pipeline::{
    feature_shape, features_from_npy, labels_from_npy, Build, FeatureSink, ImportReport,
};
use crate::import::reorder::REORDER_REFUSED;

/// The numpy chunks of `node_data.<type>.<key>`, checked to hold one row
/// per node of the type; None when the type has no such key.
fn node_arrays(
    meta: &Meta,
    root: &Value,
    ty: &str,
    count: u64,
    key: &str,
) -> Result<Option<Vec<NpyFile>>> {
    let Some(spec) = root
        .get("node_data")
        .and_then(|d| d.get(ty))
        .and_then(|d| d.get(key))
    else {
        return Ok(None);
    };
    let field = format!("node_data.{ty}.{key}");
    numpy_chunks(meta, spec, &field, count).map(Some)
}

/// Imports a chunked graph with several node types; see the module docs.
pub(super) fn import_typed(opts: &DglImport, root: &Value, meta: &Meta) -> Result<ImportReport> {
    let path = meta.path;
    if opts.common.reorder.renumbers() {
        return Err(meta.err("node_type", REORDER_REFUSED));
    }
    let ts = parse_schema(path, root)?;
    let names: Vec<String> = ts.node_types.iter().map(|t| t.name.clone()).collect();
    let declared: Vec<Declared> = ts
        .edge_types
        .iter()
        .map(|e| Declared {
            src: e.src,
            rel: e.rel.clone(),
            dst: e.dst,
        })
        .collect();
    let relations = relations(&names, &declared, opts.common.undirected, &|i, reason| {
        meta.err(&format!("edge_type[{i}]"), reason)
    })?;

    // Features: any types, each in its own dimension and dtype.
    let mut feats: Vec<Option<Vec<NpyFile>>> = Vec::new();
    let mut decls = Vec::new();
    for t in &ts.node_types {
        let arrays = node_arrays(meta, root, &t.name, t.count, &opts.feat_key)?;
        let dim = match arrays.as_ref().and_then(|a| a.first()) {
            Some(first) => Some(feature_shape(first)?.1),
            None => None,
        };
        decls.push(TypeDecl {
            name: t.name.clone(),
            count: t.count,
            dim,
            dtype: opts.common.dtype_of(&t.name),
        });
        feats.push(arrays);
    }
    let node_types = node_types(&decls, &|i, reason| {
        let name = names.get(i).map_or("?", String::as_str);
        meta.err(&format!("node_data.{name}.{}", opts.feat_key), reason)
    })?;
    let schema = Schema {
        node_types,
        relations,
    };

    // Edge inputs, each with the types it joins.
    let edges = root
        .get("edges")
        .ok_or_else(|| meta.err("edges", "missing key"))?;
    let mut inputs = Vec::new();
    let mut ends = Vec::new();
    let mut expected_counts = Vec::new();
    for e in &ts.edge_types {
        let canonical = ts.canonical(e);
        let key = format!("edges.{canonical}");
        let spec = edges
            .get(&canonical)
            .ok_or_else(|| meta.err("edges", format!("no entry for edge type {canonical:?}")))?;
        let (format, delimiter, files) = meta.chunks(spec, &key)?;
        for (f, c) in files.into_iter().zip(&e.chunk_sizes) {
            inputs.push(edge_input(&format, delimiter, f)?);
            ends.push(edge_ends(&schema, e.src, e.dst));
            expected_counts.push((canonical.clone(), *c));
        }
    }
    let expected = checked_sum(
        meta,
        "num_edges_per_chunk",
        expected_counts.iter().map(|(_, c)| *c),
    )?;
    let featured: Vec<&NpyFile> = feats.iter().flatten().flatten().collect();
    let features = featured.first().map(|first| TypedFeatures {
        source: first.path.clone(),
        feed: Box::new(|sink: &mut FeatureSink| {
            for f in &featured {
                features_from_npy(f, None, sink)?;
            }
            Ok(())
        }),
    });
    let check = |got: &[u64]| check_chunk_counts(path, &inputs, &expected_counts, got);
    let edges = TypedEdges {
        inputs: &inputs,
        ends: &ends,
        expected,
        check: &check,
    };
    let mut build = build_typed(&opts.common, schema, path, edges, features)?;
    tables(opts, root, meta, &ts, &mut build)?;
    build.finish()
}

/// Labels, masks and original ids, per type, placed at each type's ids.
fn tables(
    opts: &DglImport,
    root: &Value,
    meta: &Meta,
    ts: &TypedSchema,
    build: &mut Build,
) -> Result<()> {
    let n = ts.num_nodes();
    let mut labels: Option<Vec<i32>> = None;
    let mut lists: [Vec<u64>; 3] = Default::default();
    let mut any_mask = false;
    let mut orig_ids = Vec::new();
    let mut label_source = meta.path.to_path_buf();
    for t in &ts.node_types {
        if let Some(arrays) = node_arrays(meta, root, &t.name, t.count, &opts.label_key)? {
            let all = labels.get_or_insert_with(|| vec![MISSING_LABEL; n as usize]);
            let mut these = Vec::with_capacity(t.count as usize);
            for f in &arrays {
                labels_from_npy(f, &mut these)?;
            }
            let start = t.offset as usize;
            if let Some(slot) = all.get_mut(start..start + these.len()) {
                slot.copy_from_slice(&these);
            }
            if let Some(f) = arrays.first() {
                label_source = f.path.clone();
            }
        }
        for (ids, key) in lists.iter_mut().zip(&opts.mask_keys) {
            if let Some(arrays) = node_arrays(meta, root, &t.name, t.count, key)? {
                any_mask = true;
                mask_ids(meta, key, &arrays, t.offset, ids)?;
            }
        }
        let orig_arrays = match &opts.orig_id_key {
            Some(key) => node_arrays(meta, root, &t.name, t.count, key)?,
            None => None,
        };
        orig_ids.push(orig_arrays);
    }
    if let Some(labels) = labels {
        build.labels(&labels, opts.num_classes, &label_source)?;
    }
    if any_mask {
        write_mask_splits(meta, &opts.mask_keys, lists, build)?;
    }
    // Original ids are per type; a type without them keeps its own ids.
    if orig_ids.iter().any(Option::is_some) {
        let mut all = Vec::with_capacity(n as usize);
        for (t, arrays) in ts.node_types.iter().zip(&orig_ids) {
            match arrays {
                Some(arrays) => original_ids(arrays, &mut all)?,
                None => all.extend(0..t.count),
            }
        }
        build.original_ids(&all)?;
    }
    Ok(())
}
