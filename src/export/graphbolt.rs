//! `ginex-export graphbolt`: GraphBolt's on-disk dataset
//! (`dgl.graphbolt.OnDiskDataset`), for single-machine training with DGL.
//!
//! ```text
//! OUT/metadata.yaml
//! OUT/edges/edges.npy            (2, E) int64: sources, then destinations (or edges.csv: `src,dst` lines)
//! OUT/data/feat.npy              (N, dim) float32 (float16 with keep_f16)
//! OUT/data/label.npy             (N,) int64, -1 = no label               [store has labels]
//! OUT/data/orig_id.npy           (N,) int64 original ids                  [store has them]
//! OUT/set/<split>_seed_nodes.npy (K,) int64 node ids of the split         [store has splits]
//! OUT/set/<split>_labels.npy     (K,) int64 their labels                  [and labels]
//! OUT/set/link_<split>_*.npy     link_prediction item sets                [store has edge splits]
//! OUT/edge_splits/*.npy          the edge splits as ginex-import reads them [store has edge splits]
//! ```
//!
//! Node features are `in_memory: false` (GraphBolt memory-maps them, or
//! serves them with `DiskBasedFeature`); the task is
//! `node_classification` with `num_classes` and the train / validation /
//! test item sets (`seed_nodes`, `labels`). Edges are in the store's CSC
//! order (grouped by destination). A typed store is written as a
//! heterogeneous dataset (`typed.rs`).

use std::path::PathBuf;
use std::time::Instant;

use crate::error::Result;
use crate::export::sink::{flush_full, push_decimal, ExportDir};
use crate::export::source::{IdCursor, Source, Table};
use crate::export::{
    bar, export_name, start, write_features, write_labels, write_orig_ids, EdgeCheck, EdgeFormat,
    ExportOptions, ExportReport,
};
use crate::format::header::FileKind;
use crate::store::Store;

mod typed;

/// The item sets, in the order of the store's split lists.
pub const SETS: [(&str, &str); 3] = [
    ("train", "train_set"),
    ("valid", "validation_set"),
    ("test", "test_set"),
];

/// What to export.
#[derive(Debug, Clone)]
pub struct GraphBoltExport {
    /// The store.
    pub store: PathBuf,
    /// The directory to create.
    pub out: PathBuf,
    /// Edge file format.
    pub edge_format: EdgeFormat,
    /// `dataset_name` (default: the store directory's name).
    pub dataset_name: Option<String>,
    /// Shared options.
    pub options: ExportOptions,
}

impl GraphBoltExport {
    /// An export of `store` to `out` with numpy edges.
    pub fn new(store: impl Into<PathBuf>, out: impl Into<PathBuf>) -> Self {
        GraphBoltExport {
            store: store.into(),
            out: out.into(),
            edge_format: EdgeFormat::Numpy,
            dataset_name: None,
            options: ExportOptions::default(),
        }
    }
}

/// Labels of sorted ids, read through a window that only moves forward.
struct LabelWindow<'a> {
    table: &'a Table,
    n: u64,
    start: u64,
    values: Vec<i32>,
    raw: Vec<u8>,
}

impl LabelWindow<'_> {
    fn get(&mut self, id: u64) -> Result<i32> {
        let end = self.start + self.values.len() as u64;
        if id < self.start || id >= end {
            let k = self.table.per_block(4).min(1 << 16).min(self.n - id);
            self.values.clear();
            self.table
                .values(id..id + k, &mut self.raw, &mut self.values)?;
            self.start = id;
        }
        Ok(self
            .values
            .get((id - self.start) as usize)
            .copied()
            .unwrap_or(-1))
    }
}

/// Where one item set (of one node type, in a typed store) goes.
struct SetSpec {
    /// Files `<prefix>_seed_nodes.npy` and `<prefix>_labels.npy`.
    prefix: String,
    /// The ids it takes from the cursor (those below `ids.end`), written
    /// less `ids.start` (type-local ids).
    ids: std::ops::Range<u64>,
    /// How many there are.
    count: u64,
    /// The YAML of the entry up to its `data:` list.
    head: String,
}

/// Writes one item set; returns its YAML entry.
fn write_set(
    dir: &mut ExportDir,
    spec: &SetSpec,
    ids: &mut IdCursor,
    labels: Option<&Table>,
    n: u64,
) -> Result<String> {
    let k = spec.count;
    let seeds_rel = format!("{}_seed_nodes.npy", spec.prefix);
    let labels_rel = format!("{}_labels.npy", spec.prefix);
    let mut seeds = dir.npy(&seeds_rel, "<i8", &[k])?;
    let mut lab = labels
        .map(|_| dir.npy(&labels_rel, "<i8", &[k]))
        .transpose()?;
    let mut window = labels.map(|t| LabelWindow {
        table: t,
        n,
        start: 0,
        values: Vec::new(),
        raw: Vec::new(),
    });
    let (mut sb, mut lb) = (Vec::new(), Vec::new());
    while let Some(id) = ids.peek()? {
        if id >= spec.ids.end {
            break;
        }
        ids.next_id()?;
        let local = id.saturating_sub(spec.ids.start);
        sb.extend_from_slice(&(local as i64).to_le_bytes());
        if let Some(w) = window.as_mut() {
            lb.extend_from_slice(&i64::from(w.get(id)?).to_le_bytes());
        }
        if sb.len() >= 1 << 20 {
            seeds.write(&sb)?;
            sb.clear();
            if let Some(l) = lab.as_mut() {
                l.write(&lb)?;
            }
            lb.clear();
        }
    }
    seeds.write(&sb)?;
    let b = seeds.finish()?;
    dir.add(b);
    let mut yaml = format!(
        "{}          - name: seed_nodes\n            format: numpy\n            in_memory: true\n            path: {seeds_rel}\n",
        spec.head
    );
    if let Some(mut l) = lab {
        l.write(&lb)?;
        let b = l.finish()?;
        dir.add(b);
        yaml.push_str(&format!(
            "          - name: labels\n            format: numpy\n            in_memory: true\n            path: {labels_rel}\n"
        ));
    }
    Ok(yaml)
}

fn feature_yaml(name: &str, path: &str) -> String {
    format!(
        "  - domain: node\n    name: {name}\n    format: numpy\n    in_memory: false\n    path: {path}\n"
    )
}

/// Quotes a YAML scalar (a name from a directory name).
fn yaml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Exports a store to a GraphBolt on-disk dataset; see the module docs.
pub fn export_graphbolt(opts: &GraphBoltExport) -> Result<ExportReport> {
    let store = Store::open(&opts.store)?;
    let src = Source::new(&store, opts.options.memory)?;
    let (n, e) = (store.num_nodes(), store.num_edges());
    let quiet = opts.options.quiet;
    let (mut dir, mut report) = start(&store, &opts.out, &opts.options)?;
    if let Some(schema) = store.schema() {
        return typed::export(opts, &store, schema, &src, dir, report);
    }
    let descr = report.feature_descr;

    // Edges.
    let started = Instant::now();
    dir.mkdir("edges")?;
    let mut check = EdgeCheck::default();
    let b = bar(n, "edges", quiet);
    let edges_rel = match opts.edge_format {
        EdgeFormat::Numpy => {
            let rel = "edges/edges.npy";
            let mut npy = dir.npy(rel, "<i8", &[2, e])?;
            let mut buf = Vec::new();
            src.in_lists(&mut |dst, srcs| {
                check.add(dst, srcs);
                buf.extend(srcs.iter().flat_map(|&s| (s as i64).to_le_bytes()));
                if flush_full(&mut buf, |full| npy.write(full))? {
                    b.set_position(dst);
                }
                Ok(())
            })?;
            // Destinations follow from indptr alone.
            for (v, w) in store.indptr().windows(2).enumerate() {
                if let [lo, hi] = w {
                    for _ in *lo..*hi {
                        buf.extend_from_slice(&(v as i64).to_le_bytes());
                    }
                }
                flush_full(&mut buf, |full| npy.write(full))?;
            }
            npy.write(&buf)?;
            let bytes = npy.finish()?;
            dir.add(bytes);
            rel
        }
        EdgeFormat::Csv => {
            let rel = "edges/edges.csv";
            let mut f = dir.file(rel)?;
            let mut buf = Vec::new();
            src.in_lists(&mut |dst, srcs| {
                check.add(dst, srcs);
                for &s in srcs {
                    push_decimal(&mut buf, s);
                    buf.push(b',');
                    push_decimal(&mut buf, dst);
                    buf.push(b'\n');
                }
                if flush_full(&mut buf, |full| f.write(full))? {
                    b.set_position(dst);
                }
                Ok(())
            })?;
            f.write(&buf)?;
            let bytes = f.finish()?;
            dir.add(bytes);
            rel
        }
    };
    b.finish_and_clear();
    check.report_into(&mut report, started);

    // Node data.
    let started = Instant::now();
    dir.mkdir("data")?;
    let dim = u64::from(store.feature_dim());
    let mut features = String::from("feature_data:\n");
    let b = bar(n, "features", quiet);
    dir.write_npy("data/feat.npy", descr, &[n, dim], |npy| {
        write_features(&src, npy, (0, n), store.layout(), descr, &b)
    })?;
    b.finish_and_clear();
    features.push_str(&feature_yaml("feat", "data/feat.npy"));
    let labels = src.table(FileKind::Labels)?;
    if let Some(t) = &labels {
        dir.write_npy("data/label.npy", "<i8", &[n], |npy| {
            write_labels(t, store.num_classes(), npy, 0, n)
        })?;
        features.push_str(&feature_yaml("label", "data/label.npy"));
    }
    if let Some(t) = src.table(FileKind::OriginalIds)? {
        dir.write_npy("data/orig_id.npy", "<i8", &[n], |npy| {
            write_orig_ids(&t, npy, 0, n)
        })?;
        features.push_str(&feature_yaml("orig_id", "data/orig_id.npy"));
    }

    // The tasks.
    let mut tasks = String::new();
    if let Some(cursors) = src.split_cursors()? {
        dir.mkdir("set")?;
        tasks.push_str("  - name: node_classification\n");
        if labels.is_some() {
            tasks.push_str(&format!("    num_classes: {}\n", store.num_classes()));
        }
        for (mut ids, (name, key)) in cursors.into_iter().zip(SETS) {
            let spec = SetSpec {
                prefix: format!("set/{name}"),
                ids: 0..n,
                count: ids.len(),
                head: "      - data:\n".into(),
            };
            let entry = write_set(&mut dir, &spec, &mut ids, labels.as_ref(), n)?;
            tasks.push_str(&format!("    {key}:\n{entry}"));
        }
    }
    let edge_splits = store.edge_splits()?;
    let link = match &edge_splits {
        Some(s) => {
            dir.mkdir("set")?;
            tasks.push_str(&crate::export::link::write_graphbolt_task(
                &mut dir, &src, s,
            )?);
            Some(crate::export::link::write_reimport_files(
                &mut dir, s, None,
            )?)
        }
        None => None,
    };
    if !tasks.is_empty() {
        tasks.insert_str(0, "tasks:\n");
    }
    report.phases.push(("node data", started.elapsed()));

    let yaml = format!(
        "dataset_name: {}\ngraph:\n  nodes:\n    - num: {n}\n  edges:\n    - format: {}\n      path: {edges_rel}\n{features}{tasks}",
        yaml_string(&export_name(&store, opts.dataset_name.as_deref())),
        opts.edge_format.name()
    );
    dir.write_file("metadata.yaml", &[yaml.as_bytes()])?;
    let path = dir.commit_into(&mut report)?;
    report.reimport = reimport_command(
        &store,
        &path,
        opts.edge_format,
        labels.is_some(),
        link.as_ref(),
    );
    report.path = path;
    Ok(report)
}

/// The `ginex-import files` command that rebuilds the store.
fn reimport_command(
    store: &Store,
    out: &std::path::Path,
    format: EdgeFormat,
    labels: bool,
    link: Option<&crate::export::link::LinkFiles>,
) -> String {
    let p = |rel: &str| out.join(rel).display().to_string();
    let edges = match format {
        EdgeFormat::Numpy => p("edges/edges.npy"),
        EdgeFormat::Csv => p("edges/edges.csv"),
    };
    let mut cmd = format!(
        "ginex-import files --edges {edges} --features {}",
        p("data/feat.npy")
    );
    if store.dtype().name() != "f32" {
        cmd.push_str(&format!(" --dtype {}", store.dtype().name()));
    }
    if labels {
        cmd.push_str(&format!(
            " --labels {} --num-classes {}",
            p("data/label.npy"),
            store.num_classes()
        ));
    }
    if store.manifest().file(FileKind::Splits).is_some() {
        for (name, flag) in
            ["train", "valid", "test"]
                .iter()
                .zip(["--train-ids", "--valid-ids", "--test-ids"])
        {
            cmd.push_str(&format!(
                " {flag} {}",
                p(&format!("set/{name}_seed_nodes.npy"))
            ));
        }
    }
    if store.manifest().file(FileKind::OriginalIds).is_some() {
        cmd.push_str(&format!(" --orig-ids {}", p("data/orig_id.npy")));
    }
    if let Some(link) = link {
        cmd.push_str(&link.reimport_flags(out));
    }
    cmd.push_str(" --out STORE");
    cmd
}
