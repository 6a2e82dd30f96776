//! `ginex-export graphbolt` of a typed store (format/schema.md):
//! GraphBolt's heterogeneous `metadata.yaml`.
//!
//! ```text
//! OUT/metadata.yaml
//! OUT/edges/<src>-<rel>-<dst>.npy       (2, E_r) int64 type-local ids: sources, then destinations (or .csv)
//! OUT/data/<type>-feat.npy              featured types only
//! OUT/data/<type>-label.npy             types with a label >= 0
//! OUT/data/<type>-orig_id.npy           every type, when the store has original ids
//! OUT/set/<type>-<split>_seed_nodes.npy type-local ids of the split's nodes of the type
//! OUT/set/<type>-<split>_labels.npy     their labels
//! ```
//!
//! `graph.nodes` lists each type with `type` and `num`, `graph.edges` each
//! relation with `type: "src:rel:dst"`, `feature_data` entries carry
//! `domain: node` and `type`, and each item set has one entry per node
//! type with split members. GraphBolt numbers a type's nodes from 0 in
//! every file (it adds its own type offsets when it builds the sampling
//! graph). Numpy edges are streamed in two passes over each destination
//! type's lists (sources, then destinations, as the (2, E) layout needs),
//! csv edges in one.

use std::time::Instant;

use super::{feature_yaml, write_set, yaml_string, GraphBoltExport, SetSpec, SETS};
use crate::error::Result;
use crate::export::hetero::{relation_paths, type_paths, RelationSplitter, TypeTables};
use crate::export::sink::{flush_full, push_decimal, ExportDir, NpyOut, OutFile};
use crate::export::source::Source;
use crate::export::{
    bar, export_name, write_features, write_labels, write_orig_ids, EdgeCheck, EdgeFormat,
    ExportReport,
};
use crate::format::header::FileKind;
use crate::format::schema::Schema;
use crate::store::Store;

/// What `ExportReport::reimport` says for a typed GraphBolt export.
pub const NO_REIMPORT: &str = "no ginex importer reads a typed GraphBolt dataset; ginex-export dgl of this store round-trips through ginex-import dgl";

/// One relation's edge file being written, with its output buffer.
enum EdgeOut {
    Numpy(NpyOut, Vec<u8>),
    Csv(OutFile, Vec<u8>),
}

impl EdgeOut {
    fn flush(&mut self) -> Result<()> {
        match self {
            EdgeOut::Numpy(f, buf) => flush_full(buf, |b| f.write(b)).map(|_| ()),
            EdgeOut::Csv(f, buf) => flush_full(buf, |b| f.write(b)).map(|_| ()),
        }
    }

    fn finish(self, dir: &mut ExportDir) -> Result<()> {
        let bytes = match self {
            EdgeOut::Numpy(mut f, buf) => {
                f.write(&buf)?;
                f.finish()?
            }
            EdgeOut::Csv(mut f, buf) => {
                f.write(&buf)?;
                f.finish()?
            }
        };
        dir.add(bytes);
        Ok(())
    }
}

/// Exports a typed store; see the module docs.
pub(super) fn export(
    opts: &GraphBoltExport,
    store: &Store,
    schema: &Schema,
    src: &Source,
    mut dir: ExportDir,
    mut report: ExportReport,
) -> Result<ExportReport> {
    let quiet = opts.options.quiet;
    let n = store.num_nodes();
    let descr = report.feature_descr;
    let type_files = type_paths(schema);
    let rel_files = relation_paths(schema);
    let tables = TypeTables::read(src, schema)?;
    let ext = match opts.edge_format {
        EdgeFormat::Numpy => "npy",
        EdgeFormat::Csv => "csv",
    };
    let edge_path = |r: usize| {
        format!(
            "edges/{}.{ext}",
            rel_files.get(r).map_or("?", String::as_str)
        )
    };
    let type_file = |t: usize| type_files.get(t).map_or("?", String::as_str);

    // Edges, one destination type at a time.
    let started = Instant::now();
    dir.mkdir("edges")?;
    let mut check = EdgeCheck::default();
    let b = bar(n, "edges", quiet);
    for (d, ty) in schema.node_types.iter().enumerate() {
        let mut splitter = RelationSplitter::new(src, schema, d);
        let mut outs = Vec::new();
        for r in splitter.relations() {
            let rel = edge_path(r);
            let edges = schema.relations.get(r).map_or(0, |r| r.num_edges);
            outs.push(match opts.edge_format {
                EdgeFormat::Numpy => EdgeOut::Numpy(dir.npy(&rel, "<i8", &[2, edges])?, Vec::new()),
                EdgeFormat::Csv => EdgeOut::Csv(dir.file(&rel)?, Vec::new()),
            });
        }
        // Sources (numpy row 0), or whole csv lines.
        src.in_lists_range(ty.ids(), &mut |dst, srcs| {
            check.add(dst, srcs);
            if dst % 4096 == 0 {
                b.set_position(dst);
            }
            splitter.split(dst, srcs, &mut |slot, local_dst, local| {
                let Some(out) = outs.get_mut(slot) else {
                    return Ok(());
                };
                match out {
                    EdgeOut::Numpy(_, buf) => {
                        buf.extend(local.iter().flat_map(|&s| (s as i64).to_le_bytes()));
                    }
                    EdgeOut::Csv(_, buf) => {
                        for &s in local {
                            push_decimal(buf, s);
                            buf.push(b',');
                            push_decimal(buf, local_dst);
                            buf.push(b'\n');
                        }
                    }
                }
                out.flush()
            })
        })?;
        // Destinations (numpy row 1): a second pass over the same lists.
        if opts.edge_format == EdgeFormat::Numpy {
            src.in_lists_range(ty.ids(), &mut |dst, srcs| {
                splitter.split(dst, srcs, &mut |slot, local_dst, local| {
                    let Some(out) = outs.get_mut(slot) else {
                        return Ok(());
                    };
                    if let EdgeOut::Numpy(_, buf) = out {
                        for _ in local {
                            buf.extend_from_slice(&(local_dst as i64).to_le_bytes());
                        }
                    }
                    out.flush()
                })
            })?;
        }
        for out in outs {
            out.finish(&mut dir)?;
        }
    }
    b.finish_and_clear();
    report.duplicate_edges = check.duplicates;
    report.self_loops = check.self_loops;
    report.phases.push(("edges", started.elapsed()));

    // Node data, per type.
    let started = Instant::now();
    dir.mkdir("data")?;
    let dim = u64::from(store.feature_dim());
    let labels = src.table(FileKind::Labels)?;
    let orig = src.table(FileKind::OriginalIds)?;
    let mut features = String::new();
    let b = bar(schema.feature_rows(), "features", quiet);
    for (t, ty) in schema.node_types.iter().enumerate() {
        let typed_entry = |name: &str, path: &str| {
            feature_yaml(name, path).replacen(
                "    name:",
                &format!("    type: {}\n    name:", yaml_string(&ty.name)),
                1,
            )
        };
        if ty.has_features() {
            let rel = format!("data/{}-feat.npy", type_file(t));
            let mut npy = dir.npy(&rel, descr, &[ty.count, dim])?;
            write_features(src, &mut npy, ty.offset, ty.count, descr, &b)?;
            let bytes = npy.finish()?;
            dir.add(bytes);
            features.push_str(&typed_entry("feat", &rel));
        }
        if let Some(table) = labels
            .as_ref()
            .filter(|_| tables.labelled.get(t) == Some(&true))
        {
            let rel = format!("data/{}-label.npy", type_file(t));
            let mut npy = dir.npy(&rel, "<i8", &[ty.count])?;
            write_labels(table, &mut npy, ty.offset, ty.count)?;
            let bytes = npy.finish()?;
            dir.add(bytes);
            features.push_str(&typed_entry("label", &rel));
        }
        if let Some(table) = &orig {
            let rel = format!("data/{}-orig_id.npy", type_file(t));
            let mut npy = dir.npy(&rel, "<i8", &[ty.count])?;
            write_orig_ids(table, &mut npy, ty.offset, ty.count)?;
            let bytes = npy.finish()?;
            dir.add(bytes);
            features.push_str(&typed_entry("orig_id", &rel));
        }
    }
    b.finish_and_clear();
    let features = if features.is_empty() {
        "feature_data: []\n".to_string()
    } else {
        format!("feature_data:\n{features}")
    };

    // The task: per split, one entry per type with split members.
    let mut tasks = String::new();
    if let Some(cursors) = src.split_cursors()? {
        dir.mkdir("set")?;
        tasks.push_str("tasks:\n  - name: node_classification\n");
        if labels.is_some() {
            tasks.push_str(&format!("    num_classes: {}\n", store.num_classes()));
        }
        for (s, (mut ids, (name, key))) in cursors.into_iter().zip(SETS).enumerate() {
            tasks.push_str(&format!("    {key}:\n"));
            for (t, ty) in schema.node_types.iter().enumerate() {
                if tables.split.get(t) != Some(&true) {
                    continue;
                }
                let spec = SetSpec {
                    prefix: format!("set/{}-{name}", type_file(t)),
                    ids: ty.ids(),
                    count: tables
                        .split_counts
                        .get(s)
                        .and_then(|c| c.get(t))
                        .copied()
                        .unwrap_or(0),
                    head: format!("      - type: {}\n        data:\n", yaml_string(&ty.name)),
                };
                tasks.push_str(&write_set(&mut dir, &spec, &mut ids, labels.as_ref(), n)?);
            }
        }
    }
    report.phases.push(("node data", started.elapsed()));

    let mut yaml = format!(
        "dataset_name: {}\ngraph:\n  nodes:\n",
        yaml_string(&export_name(store, opts.dataset_name.as_deref()))
    );
    for ty in &schema.node_types {
        yaml.push_str(&format!(
            "    - type: {}\n      num: {}\n",
            yaml_string(&ty.name),
            ty.count
        ));
    }
    yaml.push_str("  edges:\n");
    for (r, rel) in schema.relations.iter().enumerate() {
        yaml.push_str(&format!(
            "    - type: {}\n      format: {}\n      path: {}\n",
            yaml_string(&schema.canonical(rel)),
            opts.edge_format.name(),
            edge_path(r)
        ));
    }
    yaml.push_str(&features);
    yaml.push_str(&tasks);
    let mut f = dir.file("metadata.yaml")?;
    f.write(yaml.as_bytes())?;
    let bytes = f.finish()?;
    dir.add(bytes);
    report.files = dir.files();
    report.bytes_written = dir.bytes();
    report.path = dir.commit()?;
    report.reimport = NO_REIMPORT.into();
    Ok(report)
}
