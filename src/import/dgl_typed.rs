//! `ginex-import dgl` of a chunked graph with several node types (the
//! format's own MAG240M example): a typed store (format/schema.md).
//!
//! Node types become contiguous global id ranges in `node_type` order and
//! each canonical edge type `src:rel:dst` a relation; the ids in edge
//! chunks are the types' own, as the chunked format defines them. Features
//! (`node_data.<type>.<feat key>`) may sit on any types, with one
//! dimension; the other types are featureless. Labels
//! (`node_data.<type>.<label key>`) and masks may sit on any types; nodes
//! of the others have no label. `--undirected` symmetrises relations
//! within one type and adds the reverse `dst:rev_<rel>:src` of the others.
//! One relation per ordered type pair (the store derives an edge's
//! relation from its endpoints' types): two edge types joining the same
//! pair are refused, naming both.

use serde_json::Value;

use crate::error::Result;
use crate::format::schema::{NodeType, Relation, Schema};
use crate::format::tables::MISSING_LABEL;
use crate::import::dgl::{
    check_chunk_counts, checked_sum, edge_input, mask_ids, numpy_chunks, original_ids,
    topology_and_features, write_mask_splits, DglImport, Meta,
};
use crate::import::dgl_schema::{parse_schema, TypedSchema};
use crate::import::npy::NpyFile;
use crate::import::pipeline::{feature_shape, labels_from_npy, Build, EdgeEnds, ImportReport};
use crate::import::reorder::Reorder;

/// The relations of the store: the declared edge types, and with
/// `undirected` the reverse of each that joins two different types. A
/// second relation for an ordered type pair is refused.
fn relations(meta: &Meta, ts: &TypedSchema, undirected: bool) -> Result<Vec<Relation>> {
    let mut out: Vec<Relation> = Vec::new();
    let mut push = |r: Relation, field: String, what: &str| -> Result<()> {
        if let Some(other) = out.iter().find(|o| o.src == r.src && o.dst == r.dst) {
            let name = |t: u32| {
                ts.node_types
                    .get(t as usize)
                    .map_or("?", |t| t.name.as_str())
            };
            return Err(meta.err(
                &field,
                format!(
                    "{what} {}:{}:{} joins {} to {} like the relation {:?} does; a ginex store holds one relation per ordered pair of node types (format/schema.md): merge them, or give one its own node type",
                    name(r.src),
                    r.name,
                    name(r.dst),
                    name(r.src),
                    name(r.dst),
                    other.name
                ),
            ));
        }
        out.push(r);
        Ok(())
    };
    for (i, e) in ts.edge_types.iter().enumerate() {
        let r = Relation {
            src: e.src as u32,
            name: e.rel.clone(),
            dst: e.dst as u32,
            num_edges: 0,
        };
        push(r, format!("edge_type[{i}]"), "edge type")?;
    }
    if undirected {
        for (i, e) in ts.edge_types.iter().enumerate() {
            if e.src != e.dst {
                let r = Relation {
                    src: e.dst as u32,
                    name: format!("rev_{}", e.rel),
                    dst: e.src as u32,
                    num_edges: 0,
                };
                push(
                    r,
                    format!("edge_type[{i}]"),
                    "--undirected adds the reverse relation",
                )?;
            }
        }
    }
    Ok(out)
}

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
    if opts.common.reorder != Reorder::None {
        return Err(meta.err(
            "node_type",
            "--reorder renumbers nodes across the whole graph, which would break the node types' id ranges; import typed graphs without it",
        ));
    }
    let ts = parse_schema(path, root)?;
    let relations = relations(meta, &ts, opts.common.undirected)?;

    // Features: any types, one dimension.
    let mut feats: Vec<Option<Vec<NpyFile>>> = Vec::new();
    let mut dim: Option<(u64, String)> = None;
    for t in &ts.node_types {
        let arrays = node_arrays(meta, root, &t.name, t.count, &opts.feat_key)?;
        if let Some(first) = arrays.as_ref().and_then(|a| a.first()) {
            let d = feature_shape(first)?.1;
            let field = format!("node_data.{}.{}", t.name, opts.feat_key);
            match &dim {
                Some((have, other)) if *have != d => {
                    return Err(meta.err(
                        &field,
                        format!(
                            "features of dimension {d}, but {other} has dimension {have}; a typed store holds one feature dimension (project them to one)"
                        ),
                    ))
                }
                Some(_) => {}
                None => dim = Some((d, field)),
            }
        }
        feats.push(arrays);
    }
    let node_types: Vec<NodeType> = ts
        .node_types
        .iter()
        .zip(&feats)
        .map(|(t, f)| NodeType {
            name: t.name.clone(),
            offset: t.offset,
            count: t.count,
            dim: match (f, &dim) {
                (Some(_), Some((d, _))) => *d as u32,
                _ => 0,
            },
        })
        .collect();
    let n = ts.num_nodes();

    // Edge inputs, each with the types it joins.
    let edges = root
        .get("edges")
        .ok_or_else(|| meta.err("edges", "missing key"))?;
    let mut inputs = Vec::new();
    let mut ends = Vec::new();
    let mut expected_counts = Vec::new();
    let type_of = |i: usize| {
        let t = ts.node_types.get(i);
        t.map_or((String::new(), 0, 0), |t| {
            (t.name.clone(), t.offset, t.count)
        })
    };
    for e in &ts.edge_types {
        let canonical = ts.canonical(e);
        let key = format!("edges.{canonical}");
        let spec = edges
            .get(&canonical)
            .ok_or_else(|| meta.err("edges", format!("no entry for edge type {canonical:?}")))?;
        let (format, delimiter, files) = meta.chunks(spec, &key)?;
        for (f, c) in files.into_iter().zip(&e.chunk_sizes) {
            inputs.push(edge_input(&format, delimiter, f)?);
            ends.push(EdgeEnds {
                src: type_of(e.src),
                dst: type_of(e.dst),
            });
            expected_counts.push((canonical.clone(), *c));
        }
    }
    let expected = checked_sum(
        meta,
        "num_edges_per_chunk",
        expected_counts.iter().map(|(_, c)| *c),
    )?;
    let dim_value = dim.as_ref().map_or(1, |(d, _)| *d);
    let mut build = Build::create(&opts.common, n, dim_value, path, expected, None)?;
    build.set_schema(Schema {
        node_types,
        relations,
    });
    let topology = |b: &mut Build| -> Result<()> {
        let got = b.typed_topology(&inputs, &ends, expected)?;
        check_chunk_counts(path, &inputs, &expected_counts, &got)
    };
    let featured: Vec<&NpyFile> = feats.iter().flatten().flatten().collect();
    let chunks = (!featured.is_empty()).then_some(featured.as_slice());
    topology_and_features(&mut build, chunks, topology)?;
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
