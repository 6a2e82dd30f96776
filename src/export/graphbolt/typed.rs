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
use crate::export::hetero::{split_in_lists, RelationSplitter, TypedNames};
use crate::export::sink::{flush_full, push_decimal, ExportDir, NpyOut, OutFile};
use crate::export::source::{Source, Table};
use crate::export::{
    bar, export_name, feature_descr, write_features, write_labels, write_orig_ids, EdgeCheck,
    EdgeFormat, ExportReport,
};
use crate::format::header::FileKind;
use crate::format::schema::Schema;
use crate::progress::Bar;
use crate::store::Store;

/// What `ExportReport::reimport` says for a typed GraphBolt export.
pub const NO_REIMPORT: &str = "no ginex importer reads a typed GraphBolt dataset; ginex-export dgl of this store round-trips through ginex-import dgl";

/// One relation's edge file being written, with its output buffer.
enum EdgeOut {
    Numpy(NpyOut, Vec<u8>),
    Csv(OutFile, Vec<u8>),
}

impl EdgeOut {
    /// Creates the file `rel` of a relation of `edges` edges.
    fn create(dir: &ExportDir, format: EdgeFormat, rel: &str, edges: u64) -> Result<Self> {
        Ok(match format {
            EdgeFormat::Numpy => EdgeOut::Numpy(dir.npy(rel, "<i8", &[2, edges])?, Vec::new()),
            EdgeFormat::Csv => EdgeOut::Csv(dir.file(rel)?, Vec::new()),
        })
    }

    /// Appends the edges `local -> local_dst`: the sources (numpy row 0),
    /// or whole csv lines.
    fn push_sources(&mut self, local_dst: u64, local: &[u64]) -> Result<()> {
        match self {
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
        self.flush()
    }

    /// Appends the destinations of the edges `local -> local_dst` (numpy
    /// row 1; nothing for csv).
    fn push_destinations(&mut self, local_dst: u64, local: &[u64]) -> Result<()> {
        if let EdgeOut::Numpy(_, buf) = self {
            for _ in local {
                buf.extend_from_slice(&(local_dst as i64).to_le_bytes());
            }
        }
        self.flush()
    }

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
    let names = TypedNames::read(src, schema)?;
    let ext = match opts.edge_format {
        EdgeFormat::Numpy => "npy",
        EdgeFormat::Csv => "csv",
    };
    let edge_paths: Vec<String> = (0..schema.relations.len())
        .map(|r| format!("edges/{}.{ext}", names.relation(r)))
        .collect();

    let started = Instant::now();
    dir.mkdir("edges")?;
    let b = bar(store.num_nodes(), "edges", quiet);
    let check = write_edges(opts.edge_format, schema, src, &mut dir, &edge_paths, &b)?;
    b.finish_and_clear();
    check.report_into(&mut report, started);

    let started = Instant::now();
    dir.mkdir("data")?;
    let labels = src.table(FileKind::Labels)?;
    let nodes = TypedNodes {
        store,
        schema,
        src,
        names: &names,
        labels: labels.as_ref(),
    };
    let b = bar(schema.feature_rows(), "features", quiet);
    let features = nodes.write_data(&mut dir, opts.options.keep_f16, &b)?;
    b.finish_and_clear();
    let tasks = nodes.write_tasks(&mut dir)?;
    report.phases.push(("node data", started.elapsed()));

    let yaml = metadata_yaml(opts, store, schema, &edge_paths, &features, &tasks);
    dir.write_file("metadata.yaml", &[yaml.as_bytes()])?;
    report.path = dir.commit_into(&mut report)?;
    report.reimport = NO_REIMPORT.into();
    Ok(report)
}

/// Writes the edge files (`edge_paths[r]` for relation `r`), one
/// destination type at a time; numpy files in two passes over the type's
/// lists (sources, then destinations).
fn write_edges(
    format: EdgeFormat,
    schema: &Schema,
    src: &Source,
    dir: &mut ExportDir,
    edge_paths: &[String],
    b: &Bar,
) -> Result<EdgeCheck> {
    let mut check = EdgeCheck::default();
    for (d, ty) in schema.node_types.iter().enumerate() {
        let mut splitter = RelationSplitter::new(src, schema, d);
        let mut outs = Vec::new();
        for r in splitter.relations() {
            let rel = edge_paths.get(r).map_or("?", String::as_str);
            let edges = schema.relations.get(r).map_or(0, |r| r.num_edges);
            outs.push(EdgeOut::create(dir, format, rel, edges)?);
        }
        split_in_lists(
            src,
            ty.ids(),
            &mut splitter,
            &mut check,
            b,
            &mut |slot, local_dst, local| match outs.get_mut(slot) {
                Some(out) => out.push_sources(local_dst, local),
                None => Ok(()),
            },
        )?;
        // Destinations (numpy row 1): a second pass over the same lists.
        if format == EdgeFormat::Numpy {
            src.in_lists_range(ty.ids(), &mut |dst, srcs| {
                splitter.split(
                    dst,
                    srcs,
                    &mut |slot, local_dst, local| match outs.get_mut(slot) {
                        Some(out) => out.push_destinations(local_dst, local),
                        None => Ok(()),
                    },
                )
            })?;
        }
        for out in outs {
            out.finish(dir)?;
        }
    }
    Ok(check)
}

/// What the node data of a typed export is written from.
struct TypedNodes<'a> {
    store: &'a Store,
    schema: &'a Schema,
    src: &'a Source<'a>,
    names: &'a TypedNames,
    labels: Option<&'a Table>,
}

impl TypedNodes<'_> {
    /// Writes the features, labels and original ids of each type; returns
    /// the `feature_data` section.
    fn write_data(&self, dir: &mut ExportDir, keep_f16: bool, b: &Bar) -> Result<String> {
        let (src, tables) = (self.src, &self.names.tables);
        let orig = src.table(FileKind::OriginalIds)?;
        let mut features = String::new();
        for (t, ty) in self.schema.node_types.iter().enumerate() {
            let mut entry = |name: &str, path: &str| {
                features.push_str(&feature_yaml(name, path).replacen(
                    "    name:",
                    &format!("    type: {}\n    name:", yaml_string(&ty.name)),
                    1,
                ))
            };
            let file = self.names.node_type(t);
            if let Some(layout) = ty.layout() {
                let rel = format!("data/{file}-feat.npy");
                let descr = feature_descr(layout.dtype, keep_f16);
                let shape = [ty.count, u64::from(layout.dim)];
                dir.write_npy(&rel, descr, &shape, |npy| {
                    write_features(src, npy, (ty.offset, ty.count), layout, descr, b)
                })?;
                entry("feat", &rel);
            }
            if let Some(table) = self
                .labels
                .filter(|_| tables.labelled.get(t) == Some(&true))
            {
                let rel = format!("data/{file}-label.npy");
                dir.write_npy(&rel, "<i8", &[ty.count], |npy| {
                    write_labels(table, self.store.num_classes(), npy, ty.offset, ty.count)
                })?;
                entry("label", &rel);
            }
            if let Some(table) = &orig {
                let rel = format!("data/{file}-orig_id.npy");
                dir.write_npy(&rel, "<i8", &[ty.count], |npy| {
                    write_orig_ids(table, npy, ty.offset, ty.count)
                })?;
                entry("orig_id", &rel);
            }
        }
        Ok(if features.is_empty() {
            "feature_data: []\n".to_string()
        } else {
            format!("feature_data:\n{features}")
        })
    }

    /// Writes the item sets; returns the `tasks` section: per split, one
    /// entry per type with split members (empty without splits).
    fn write_tasks(&self, dir: &mut ExportDir) -> Result<String> {
        let mut tasks = String::new();
        let Some(cursors) = self.src.split_cursors()? else {
            return Ok(tasks);
        };
        let tables = &self.names.tables;
        dir.mkdir("set")?;
        tasks.push_str("tasks:\n  - name: node_classification\n");
        if self.labels.is_some() {
            tasks.push_str(&format!("    num_classes: {}\n", self.store.num_classes()));
        }
        for (s, (mut ids, (name, key))) in cursors.into_iter().zip(SETS).enumerate() {
            tasks.push_str(&format!("    {key}:\n"));
            for (t, ty) in self.schema.node_types.iter().enumerate() {
                if tables.split.get(t) != Some(&true) {
                    continue;
                }
                let spec = SetSpec {
                    prefix: format!("set/{}-{name}", self.names.node_type(t)),
                    ids: ty.ids(),
                    count: tables
                        .split_counts
                        .get(s)
                        .and_then(|c| c.get(t))
                        .copied()
                        .unwrap_or(0),
                    head: format!("      - type: {}\n        data:\n", yaml_string(&ty.name)),
                };
                let n = self.store.num_nodes();
                tasks.push_str(&write_set(dir, &spec, &mut ids, self.labels, n)?);
            }
        }
        Ok(tasks)
    }
}

/// `metadata.yaml`: the graph's types and relations, then `features` and
/// `tasks`.
fn metadata_yaml(
    opts: &GraphBoltExport,
    store: &Store,
    schema: &Schema,
    edge_paths: &[String],
    features: &str,
    tasks: &str,
) -> String {
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
    for (rel, path) in schema.relations.iter().zip(edge_paths) {
        yaml.push_str(&format!(
            "    - type: {}\n      format: {}\n      path: {path}\n",
            yaml_string(&schema.canonical(rel)),
            opts.edge_format.name(),
        ));
    }
    yaml.push_str(features);
    yaml.push_str(tasks);
    yaml
}
