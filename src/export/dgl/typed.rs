//! `ginex-export dgl` of a typed store (format/schema.md): the chunked
//! format's heterogeneous metadata, which `ginex-import dgl` reads back
//! into the same store.
//!
//! ```text
//! OUT/metadata.json
//! OUT/edge_index/<src>-<rel>-<dst>-<i>.csv   type-local `src dst` pairs (or .npy (E_i, 2) int64)
//! OUT/node_data/<type>/feat-<i>.npy          featured types only
//! OUT/node_data/<type>/label-<i>.npy         types with a label >= 0
//! OUT/node_data/<type>/{train,val,test}_mask-<i>.npy  types with split members
//! OUT/node_data/<type>/orig_id-<i>.npy       every type, when the store has original ids
//! OUT/edge_splits/*.npy                      one relation's link-prediction splits, type-local ids [store has them]
//! ```
//!
//! `node_type` lists the schema's types in order (so the re-import gives
//! them the same id ranges) and `edge_type` its relations in order, `rev_*`
//! relations of an `--undirected` import included: the re-import is plain,
//! without `--undirected`. Edges are streamed one destination type at a
//! time: each in-neighbor list is split by source type into the relations
//! into that type, so at most those relations' chunk files are open at
//! once, and `indices` is read once (a segment straddling two types' id
//! ranges, once for each).

use std::time::Instant;

use serde_json::{json, Value};

use super::{
    chunk_spec, edge_format_json, finish_export, node_data_json, DglExport, EdgeChunks, NodeTables,
    MASK_KEYS, ORIG_ID_KEY,
};
use crate::error::Result;
use crate::export::hetero::{split_in_lists, RelationSplitter, TypedNames};
use crate::export::sink::ExportDir;
use crate::export::source::Source;
use crate::export::{bar, export_name, feature_descr, split_even, EdgeCheck, ExportReport};
use crate::format::header::FileKind;
use crate::format::schema::Schema;
use crate::store::Store;

/// Exports a typed store; see the module docs.
pub(super) fn export(
    opts: &DglExport,
    store: &Store,
    schema: &Schema,
    src: &Source,
    mut dir: ExportDir,
    mut report: ExportReport,
) -> Result<ExportReport> {
    let quiet = opts.options.quiet;
    let n = store.num_nodes();
    let names = TypedNames::read(src, schema)?;
    let tables = &names.tables;

    // Edges, one destination type at a time.
    let started = Instant::now();
    dir.mkdir("edge_index")?;
    let mut check = EdgeCheck::default();
    let mut edge_paths: Vec<Vec<String>> = vec![Vec::new(); schema.relations.len()];
    let b = bar(n, "edges", quiet);
    for (d, ty) in schema.node_types.iter().enumerate() {
        let mut splitter = RelationSplitter::new(src, schema, d);
        let mut chunks: Vec<(usize, EdgeChunks)> = splitter
            .relations()
            .map(|r| {
                let prefix = format!("edge_index/{}", names.relation(r));
                let edges = schema.relations.get(r).map_or(0, |r| r.num_edges);
                let counts = split_even(edges, opts.chunks);
                (r, EdgeChunks::new(prefix, opts.edge_format, counts))
            })
            .collect();
        split_in_lists(
            src,
            ty.ids(),
            &mut splitter,
            &mut check,
            &b,
            &mut |slot, local_dst, local_srcs| match chunks.get_mut(slot) {
                Some((_, c)) => c.push(&mut dir, local_dst, local_srcs),
                None => Ok(()),
            },
        )?;
        for (r, c) in chunks {
            let paths = c.finish(&mut dir)?;
            if let Some(slot) = edge_paths.get_mut(r) {
                *slot = paths;
            }
        }
    }
    b.finish_and_clear();
    check.report_into(&mut report, started);

    // Node data, type by type (in id order: the split cursors move forward).
    let started = Instant::now();
    dir.mkdir("node_data")?;
    let mut node_tables = NodeTables {
        src,
        labels: src.table(FileKind::Labels)?,
        orig: src.table(FileKind::OriginalIds)?,
        splits: src.split_cursors()?,
        descr: report.feature_descr,
        layout: store.layout(),
    };
    let mut node_data = serde_json::Map::new();
    let b = bar(schema.feature_rows(), "features", quiet);
    for (t, ty) in schema.node_types.iter().enumerate() {
        let mut keys: Vec<(&str, Vec<String>)> = Vec::new();
        if ty.has_features() {
            keys.push(("feat", Vec::new()));
        }
        if node_tables.labels.is_some() && tables.labelled.get(t) == Some(&true) {
            keys.push(("label", Vec::new()));
        }
        if node_tables.splits.is_some() && tables.split.get(t) == Some(&true) {
            keys.extend(MASK_KEYS.iter().map(|k| (*k, Vec::new())));
        }
        if node_tables.orig.is_some() {
            keys.push((ORIG_ID_KEY, Vec::new()));
        }
        if keys.is_empty() {
            continue;
        }
        if let Some(layout) = ty.layout() {
            node_tables.layout = layout;
            node_tables.descr = feature_descr(layout.dtype, opts.options.keep_f16);
        }
        let node_dir = format!("node_data/{}", names.node_type(t));
        dir.mkdir(&node_dir)?;
        let counts = split_even(ty.count, opts.chunks);
        node_tables.write_chunks(&mut dir, &node_dir, &mut keys, ty.offset, &counts, &b)?;
        node_data.insert(ty.name.clone(), node_data_json(keys));
    }
    b.finish_and_clear();
    report.phases.push(("node data", started.elapsed()));

    // Metadata, last.
    let edge_format = edge_format_json(opts.edge_format);
    let mut edges = serde_json::Map::new();
    for (r, paths) in schema.relations.iter().zip(edge_paths) {
        edges.insert(schema.canonical(r), chunk_spec(edge_format.clone(), paths));
    }
    let meta = json!({
        "graph_name": export_name(store, opts.graph_name.as_deref()),
        "node_type": schema.node_types.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        "num_nodes_per_chunk": schema
            .node_types
            .iter()
            .map(|t| split_even(t.count, opts.chunks))
            .collect::<Vec<_>>(),
        "edge_type": schema.relations.iter().map(|r| schema.canonical(r)).collect::<Vec<_>>(),
        "num_edges_per_chunk": schema
            .relations
            .iter()
            .map(|r| split_even(r.num_edges, opts.chunks))
            .collect::<Vec<_>>(),
        "edges": Value::Object(edges),
        "node_data": Value::Object(node_data),
        "edge_data": {},
    });
    // Edge splits (of one relation): beside the format, in type-local
    // ids, with the flags that read them back.
    let link = match store.edge_splits()? {
        Some(s) => Some(crate::export::link::write_reimport_files(
            &mut dir,
            &s,
            Some(schema),
        )?),
        None => None,
    };
    finish_export(dir, report, &meta, store, link.as_ref())
}
