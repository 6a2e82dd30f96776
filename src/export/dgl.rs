//! `ginex-export dgl`: DGL's chunked graph format (DGL user guide §7.1),
//! the input of DistDGL's distributed partition pipeline.
//!
//! ```text
//! OUT/metadata.json
//! OUT/edge_index/edges-<i>.csv        one `src dst` pair a line (or .npy (E_i, 2) int64)
//! OUT/node_data/_N/feat-<i>.npy        (N_i, dim) float32 (or float16 with keep_f16)
//! OUT/node_data/_N/label-<i>.npy       (N_i,) int64, -1 = no label        [store has labels]
//! OUT/node_data/_N/{train,val,test}_mask-<i>.npy  (N_i,) bool            [store has splits]
//! OUT/node_data/_N/orig_id-<i>.npy     (N_i,) int64 original ids          [store has them]
//! OUT/edge_splits/*.npy                link-prediction splits, beside the format  [store has them]
//! ```
//!
//! One node type `_N` and one edge type `_N:_E:_N` (DGL's names for a
//! homogeneous graph); `P` chunks of near-equal size for nodes and for
//! edges (chunks may be empty when `P` exceeds the counts). Edges are
//! written in the store's CSC order (grouped by destination). A typed
//! store is written with its own node and edge types (`typed.rs`).

use std::path::PathBuf;
use std::time::Instant;

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::export::sink::{push_decimal, ExportDir, NpyOut, OutFile};
use crate::export::source::{IdCursor, Source, Table};
use crate::export::{
    bar, dtype_flag, export_name, split_even, start, write_features, write_labels, write_mask,
    write_orig_ids, EdgeCheck, EdgeFormat, ExportOptions, ExportReport,
};
use crate::format::header::FileKind;
use crate::format::pages::FeatureLayout;
use crate::store::Store;

mod typed;

/// DGL's node type name for a homogeneous graph.
pub const NODE_TYPE: &str = "_N";
/// DGL's edge type name for a homogeneous graph.
pub const EDGE_TYPE: &str = "_N:_E:_N";
/// `node_data` key of the original ids.
pub const ORIG_ID_KEY: &str = "orig_id";
/// `node_data` keys of the split masks (DGL's names).
pub const MASK_KEYS: [&str; 3] = ["train_mask", "val_mask", "test_mask"];

/// What to export.
#[derive(Debug, Clone)]
pub struct DglExport {
    /// The store.
    pub store: PathBuf,
    /// The directory to create.
    pub out: PathBuf,
    /// Chunks (P) for nodes and for edges.
    pub chunks: u64,
    /// Edge chunk format.
    pub edge_format: EdgeFormat,
    /// `graph_name` (default: the store directory's name).
    pub graph_name: Option<String>,
    /// Shared options.
    pub options: ExportOptions,
}

impl DglExport {
    /// An export of `store` to `out` in one chunk, csv edges.
    pub fn new(store: impl Into<PathBuf>, out: impl Into<PathBuf>) -> Self {
        DglExport {
            store: store.into(),
            out: out.into(),
            chunks: 1,
            edge_format: EdgeFormat::Csv,
            graph_name: None,
            options: ExportOptions::default(),
        }
    }
}

/// Edge chunk files `<prefix>-<i>.<ext>`, switched when one holds its
/// count.
struct EdgeChunks {
    prefix: String,
    format: EdgeFormat,
    counts: Vec<u64>,
    next: usize,
    left: u64,
    csv: Option<OutFile>,
    npy: Option<NpyOut>,
    line: Vec<u8>,
    paths: Vec<String>,
}

impl EdgeChunks {
    fn new(prefix: String, format: EdgeFormat, counts: Vec<u64>) -> Self {
        EdgeChunks {
            prefix,
            format,
            counts,
            next: 0,
            left: 0,
            csv: None,
            npy: None,
            line: Vec::new(),
            paths: Vec::new(),
        }
    }

    fn open_next(&mut self, dir: &mut ExportDir) -> Result<()> {
        self.close(dir)?;
        let Some(&count) = self.counts.get(self.next) else {
            return Err(Error::invalid_argument(format!(
                "{}: more edges than the store's manifest or schema counts",
                self.prefix
            )));
        };
        let ext = match self.format {
            EdgeFormat::Csv => "csv",
            EdgeFormat::Numpy => "npy",
        };
        let rel = format!("{}-{}.{ext}", self.prefix, self.next);
        match self.format {
            EdgeFormat::Csv => self.csv = Some(dir.file(&rel)?),
            EdgeFormat::Numpy => self.npy = Some(dir.npy(&rel, "<i8", &[count, 2])?),
        }
        self.paths.push(rel);
        self.left = count;
        self.next += 1;
        Ok(())
    }

    fn close(&mut self, dir: &mut ExportDir) -> Result<()> {
        if let Some(f) = self.csv.take() {
            let b = f.finish()?;
            dir.add(b);
        }
        if let Some(f) = self.npy.take() {
            let b = f.finish()?;
            dir.add(b);
        }
        Ok(())
    }

    fn push(&mut self, dir: &mut ExportDir, dst: u64, srcs: &[u64]) -> Result<()> {
        let mut rest = srcs;
        while !rest.is_empty() {
            while self.left == 0 {
                self.open_next(dir)?;
            }
            let take = (self.left as usize).min(rest.len());
            let (now, later) = rest.split_at(take);
            self.line.clear();
            for &s in now {
                match self.format {
                    EdgeFormat::Csv => {
                        push_decimal(&mut self.line, s);
                        self.line.push(b' ');
                        push_decimal(&mut self.line, dst);
                        self.line.push(b'\n');
                    }
                    EdgeFormat::Numpy => {
                        self.line.extend_from_slice(&(s as i64).to_le_bytes());
                        self.line.extend_from_slice(&(dst as i64).to_le_bytes());
                    }
                }
            }
            if let Some(f) = self.csv.as_mut() {
                f.write(&self.line)?;
            }
            if let Some(f) = self.npy.as_mut() {
                f.write(&self.line)?;
            }
            self.left -= take as u64;
            rest = later;
        }
        Ok(())
    }

    /// Closes the last chunk and writes the empty ones after it.
    fn finish(mut self, dir: &mut ExportDir) -> Result<Vec<String>> {
        let mut missing = self.left;
        while self.next < self.counts.len() {
            self.open_next(dir)?;
            missing += self.left;
        }
        if missing != 0 {
            return Err(Error::invalid_argument(format!(
                "{}: {missing} edges fewer than the store's manifest or schema counts",
                self.prefix
            )));
        }
        self.close(dir)?;
        Ok(self.paths)
    }
}

fn chunk_spec(format: Value, paths: Vec<String>) -> Value {
    json!({ "format": format, "data": paths })
}

/// Exports a store to DGL's chunked graph format; see the module docs.
pub fn export_dgl(opts: &DglExport) -> Result<ExportReport> {
    if opts.chunks == 0 {
        return Err(Error::invalid_argument("--chunks must be at least 1"));
    }
    let store = Store::open(&opts.store)?;
    let src = Source::new(&store, opts.options.memory)?;
    let (n, e) = (store.num_nodes(), store.num_edges());
    let quiet = opts.options.quiet;
    let node_counts = split_even(n, opts.chunks);
    let edge_counts = split_even(e, opts.chunks);
    let (mut dir, mut report) = start(&store, &opts.out, &opts.options)?;
    if let Some(schema) = store.schema() {
        return typed::export(opts, &store, schema, &src, dir, report);
    }
    let descr = report.feature_descr;

    // Edges.
    let started = Instant::now();
    dir.mkdir("edge_index")?;
    let mut check = EdgeCheck::default();
    let edge_paths = {
        let mut chunks = EdgeChunks::new(
            "edge_index/edges".into(),
            opts.edge_format,
            edge_counts.clone(),
        );
        let b = bar(n, "edges", quiet);
        src.in_lists(&mut |dst, srcs| {
            check.add(dst, srcs);
            if dst % 4096 == 0 {
                b.set_position(dst);
            }
            chunks.push(&mut dir, dst, srcs)
        })?;
        b.finish_and_clear();
        chunks.finish(&mut dir)?
    };
    check.report_into(&mut report, started);

    // Node data, chunk by chunk.
    let started = Instant::now();
    let node_dir = format!("node_data/{NODE_TYPE}");
    dir.mkdir(&node_dir)?;
    let labels = src.table(FileKind::Labels)?;
    let orig = src.table(FileKind::OriginalIds)?;
    let splits = src.split_cursors()?;
    let mut keys: Vec<(&str, Vec<String>)> = vec![("feat", Vec::new())];
    if labels.is_some() {
        keys.push(("label", Vec::new()));
    }
    if splits.is_some() {
        keys.extend(MASK_KEYS.iter().map(|k| (*k, Vec::new())));
    }
    if orig.is_some() {
        keys.push((ORIG_ID_KEY, Vec::new()));
    }
    let b = bar(n, "features", quiet);
    let mut tables = NodeTables {
        src: &src,
        labels,
        orig,
        splits,
        descr,
        layout: store.layout(),
    };
    tables.write_chunks(&mut dir, &node_dir, &mut keys, 0, &node_counts, &b)?;
    b.finish_and_clear();
    report.phases.push(("node data", started.elapsed()));

    // Edge splits: DGL's chunked format has no place for them; they go
    // beside it, in the files `ginex-import` reads back.
    let link = match store.edge_splits()? {
        Some(s) => Some(crate::export::link::write_reimport_files(
            &mut dir, &s, None,
        )?),
        None => None,
    };

    // Metadata, last.
    let meta = json!({
        "graph_name": export_name(&store, opts.graph_name.as_deref()),
        "node_type": [NODE_TYPE],
        "num_nodes_per_chunk": [node_counts],
        "edge_type": [EDGE_TYPE],
        "num_edges_per_chunk": [edge_counts],
        "edges": { EDGE_TYPE: chunk_spec(edge_format_json(opts.edge_format), edge_paths) },
        "node_data": { NODE_TYPE: node_data_json(keys) },
        "edge_data": {},
    });
    finish_export(dir, report, &meta, &store, link.as_ref())
}

/// The `format` of edge chunks in the metadata.
fn edge_format_json(format: EdgeFormat) -> Value {
    match format {
        EdgeFormat::Csv => json!({ "name": "csv", "delimiter": " " }),
        EdgeFormat::Numpy => json!({ "name": "numpy" }),
    }
}

/// The `node_data` object of one node type: each key's numpy chunks.
fn node_data_json(keys: Vec<(&str, Vec<String>)>) -> Value {
    let mut node_data = serde_json::Map::new();
    for (key, paths) in keys {
        node_data.insert(
            key.to_string(),
            chunk_spec(json!({ "name": "numpy" }), paths),
        );
    }
    Value::Object(node_data)
}

/// Writes `metadata.json` (last), commits the export and completes the
/// report with the re-import command.
fn finish_export(
    mut dir: ExportDir,
    mut report: ExportReport,
    meta: &Value,
    store: &Store,
    link: Option<&crate::export::link::LinkFiles>,
) -> Result<ExportReport> {
    let text = serde_json::to_string_pretty(meta)
        .map_err(|e| Error::invalid_argument(format!("metadata.json: {e}")))?;
    dir.write_file("metadata.json", &[text.as_bytes(), b"\n"])?;
    let path = dir.commit_into(&mut report)?;
    report.reimport = reimport_command(store, &path, report.feature_descr, link);
    report.path = path;
    Ok(report)
}

/// The per-node tables an export writes as `node_data`, with their
/// streaming readers (the split cursors only move forward: node ranges
/// must come in id order).
struct NodeTables<'a> {
    src: &'a Source<'a>,
    labels: Option<Table>,
    orig: Option<Table>,
    splits: Option<[IdCursor; 3]>,
    descr: &'static str,
    /// The stored layout of the features written next.
    layout: FeatureLayout,
}

impl NodeTables<'_> {
    /// Writes the chunks `<node_dir>/<key>-<i>.npy` of nodes `first..`
    /// (`counts[i]` nodes in chunk `i`) for every key of `keys` (`feat`,
    /// `label`, a mask, `orig_id`), appending each file to its key's list.
    fn write_chunks(
        &mut self,
        dir: &mut ExportDir,
        node_dir: &str,
        keys: &mut [(&str, Vec<String>)],
        mut first: u64,
        counts: &[u64],
        b: &crate::progress::Bar,
    ) -> Result<()> {
        let (src, descr) = (self.src, self.descr);
        for (i, &count) in counts.iter().enumerate() {
            for (key, paths) in keys.iter_mut() {
                let rel = format!("{node_dir}/{key}-{i}.npy");
                let (dtype, shape): (&'static str, Vec<u64>) = match *key {
                    "feat" => (descr, vec![count, u64::from(self.layout.dim)]),
                    k if MASK_KEYS.contains(&k) => ("|b1", vec![count]),
                    _ => ("<i8", vec![count]),
                };
                dir.write_npy(&rel, dtype, &shape, |npy| match *key {
                    "feat" => write_features(src, npy, (first, count), self.layout, descr, b),
                    "label" => match &self.labels {
                        Some(t) => write_labels(t, src.store().num_classes(), npy, first, count),
                        None => Ok(()),
                    },
                    ORIG_ID_KEY => match &self.orig {
                        Some(t) => write_orig_ids(t, npy, first, count),
                        None => Ok(()),
                    },
                    k => {
                        let which = MASK_KEYS.iter().position(|m| *m == k).unwrap_or(0);
                        match self.splits.as_mut().and_then(|s| s.get_mut(which)) {
                            Some(c) => write_mask(c, npy, first, count, src.block_bytes()),
                            None => Ok(()),
                        }
                    }
                })?;
                paths.push(rel);
            }
            first += count;
        }
        Ok(())
    }
}

/// The `ginex-import dgl` command that rebuilds the store from the export.
fn reimport_command(
    store: &Store,
    out: &std::path::Path,
    descr: &str,
    link: Option<&crate::export::link::LinkFiles>,
) -> String {
    let mut cmd = format!("ginex-import dgl {}", out.join("metadata.json").display());
    let dtype = dtype_flag(store);
    if dtype != "f32" || descr != "<f4" {
        cmd.push_str(&format!(" --dtype {dtype}"));
    }
    if store.manifest().file(FileKind::Labels).is_some() {
        cmd.push_str(&format!(" --num-classes {}", store.num_classes()));
    }
    if let Some(link) = link {
        cmd.push_str(&link.reimport_flags(out));
    }
    cmd.push_str(" --out STORE");
    cmd
}
