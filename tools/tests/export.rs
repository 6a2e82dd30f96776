//! `ginex-export dgl` / `graphbolt`: an export re-imported with
//! `ginex-import dgl` / `ginex-import files` gives back the original store
//! byte for byte (every file), on the golden fixtures and on stores with
//! f16 / bf16 features, missing labels, remapped ids, duplicate edges and
//! self-loops, and empty chunks; the metadata of a small export equals a
//! hand-written one field by field; bad inputs leave nothing behind.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};

use clap::Parser;
use ginex::internals::export::dgl::{export_dgl, DglExport};
use ginex::internals::export::graphbolt::{export_graphbolt, GraphBoltExport};
use ginex::internals::export::{EdgeFormat, ExportReport};
use ginex::internals::format::pages::{Dtype, FeatureLayout};
use ginex::internals::format::tables::Splits;
use ginex::internals::import::dgl::{import_dgl, DglImport};
use ginex::internals::import::files::{import_files, FilesImport};
use ginex::internals::import::pipeline::CommonOptions;
use ginex::internals::store::{ListSink, StoreBuilder, StoreSpec};
use ginex::Store;
use ginex_cli::commands::{run as ginex_run, GinexCli};
use ginex_cli::export::{run as export_run, ExportCli};
use ginex_cli::import::{run as import_run, ImportCli};

use common::{assert_same_files, files_of};

fn fixture(name: &str) -> PathBuf {
    // Run as a test of the CLI crate (tools/): the fixtures are one level up.
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("tests")
        .join("fixtures")
        .join(name)
}

/// The CSC segment size a store was built with: the golden fixtures use
/// 16-byte segments, everything else the default (segmentation is a build
/// parameter, not data, so a byte-exact rebuild must use the same one).
fn segment_bytes_of(store: &Store) -> u64 {
    if store.dir().starts_with(fixture("")) {
        16
    } else {
        ginex::internals::format::csc::DEFAULT_SEGMENT_BYTES
    }
}

fn common(store: &Store, out: PathBuf) -> CommonOptions {
    let mut c = CommonOptions::new(out);
    c.dtype = store.dtype();
    c.segment_bytes = segment_bytes_of(store);
    c.memory = 1 << 20;
    c
}

/// Exports `store` to DGL and re-imports it; asserts byte identity.
fn dgl_round_trip(
    store_dir: &Path,
    work: &Path,
    chunks: u64,
    format: EdgeFormat,
    keep_f16: bool,
) -> ExportReport {
    let tag = format!(
        "{}-dgl-{chunks}-{}-{keep_f16}",
        store_dir.file_name().unwrap().to_string_lossy(),
        format.name()
    );
    let out = work.join(&tag);
    let mut opts = DglExport::new(store_dir, &out);
    opts.chunks = chunks;
    opts.edge_format = format;
    opts.options.keep_f16 = keep_f16;
    opts.options.memory = 2 << 20; // small blocks: many of them
    let report = export_dgl(&opts).unwrap();
    let store = Store::open(store_dir).unwrap();
    let rebuilt = work.join(format!("{tag}-rebuilt"));
    import_dgl(&DglImport {
        metadata: out.join("metadata.json"),
        feat_key: "feat".into(),
        label_key: "label".into(),
        mask_keys: ["train_mask".into(), "val_mask".into(), "test_mask".into()],
        orig_id_key: Some("orig_id".into()),
        num_classes: Some(store.num_classes()).filter(|_| store.labels().unwrap().is_some()),
        common: common(&store, rebuilt.clone()),
    })
    .unwrap_or_else(|e| panic!("{tag}: re-import failed: {e}"));
    assert_same_files(store_dir, &rebuilt, &tag);
    report
}

/// Exports `store` to GraphBolt and re-imports it with `files`; asserts
/// byte identity.
fn graphbolt_round_trip(store_dir: &Path, work: &Path, format: EdgeFormat) -> ExportReport {
    let tag = format!(
        "{}-gb-{}",
        store_dir.file_name().unwrap().to_string_lossy(),
        format.name()
    );
    let out = work.join(&tag);
    let mut opts = GraphBoltExport::new(store_dir, &out);
    opts.edge_format = format;
    opts.options.memory = 2 << 20;
    let report = export_graphbolt(&opts).unwrap();
    let store = Store::open(store_dir).unwrap();
    let rebuilt = work.join(format!("{tag}-rebuilt"));
    let edges = match format {
        EdgeFormat::Numpy => "edges/edges.npy",
        EdgeFormat::Csv => "edges/edges.csv",
    };
    let mut imp = FilesImport::new(out.join(edges), &rebuilt);
    imp.features = Some(out.join("data/feat.npy"));
    if store.labels().unwrap().is_some() {
        imp.labels = Some(out.join("data/label.npy"));
        imp.num_classes = Some(store.num_classes());
    }
    if store.splits().unwrap().is_some() {
        imp.split_files =
            ["train", "valid", "test"].map(|s| Some(out.join(format!("set/{s}_seed_nodes.npy"))));
    }
    if store.original_ids().unwrap().is_some() {
        imp.orig_ids = Some(out.join("data/orig_id.npy"));
    }
    imp.common = common(&store, rebuilt.clone());
    import_files(&imp).unwrap_or_else(|e| panic!("{tag}: re-import failed: {e}"));
    assert_same_files(store_dir, &rebuilt, &tag);
    report
}

fn gen(args: &[&str]) {
    let cli = GinexCli::try_parse_from(["ginex", "gen", "--quiet"].iter().chain(args)).unwrap();
    ginex_run(cli, &mut Vec::new()).unwrap();
}

fn import_cli(args: &[&str]) -> String {
    let cli = ImportCli::try_parse_from(["ginex-import"].iter().chain(args)).unwrap();
    let mut out = Vec::new();
    import_run(&cli, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn export_cli(args: &[&str]) -> ginex::Result<String> {
    let cli = ExportCli::try_parse_from(["ginex-export"].iter().chain(args)).unwrap();
    let mut out = Vec::new();
    export_run(&cli, &mut out)?;
    Ok(String::from_utf8(out).unwrap())
}

fn npy(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    let mut header = dict.into_bytes();
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(b' ');
    }
    header.push(b'\n');
    let mut b = b"\x93NUMPY\x01\x00".to_vec();
    b.extend_from_slice(&(header.len() as u16).to_le_bytes());
    b.extend_from_slice(&header);
    b.extend_from_slice(data);
    b
}

#[test]
fn golden_fixtures_round_trip_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["v1-small", "v1-wide-rows"] {
        let store = fixture(name);
        for chunks in [1, 3] {
            dgl_round_trip(&store, dir.path(), chunks, EdgeFormat::Csv, false);
        }
        dgl_round_trip(&store, dir.path(), 2, EdgeFormat::Numpy, true);
        graphbolt_round_trip(&store, dir.path(), EdgeFormat::Numpy);
        graphbolt_round_trip(&store, dir.path(), EdgeFormat::Csv);
    }
    // v1-small is f16 with missing labels and original ids: check the
    // export holds them as documented.
    let out = dir.path().join("v1-small-dgl-1-csv-false");
    let label = std::fs::read(out.join("node_data/_N/label-0.npy")).unwrap();
    let values: Vec<i64> = label[label.len() - 40 * 8..]
        .chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(values[3], -1, "a missing label is -1");
    assert_eq!(values[5], 1);
    let feat = std::fs::read(out.join("node_data/_N/feat-0.npy")).unwrap();
    assert!(String::from_utf8_lossy(&feat[..128]).contains("'descr': '<f4'"));
    let kept = std::fs::read(
        dir.path()
            .join("v1-small-dgl-2-numpy-true/node_data/_N/feat-0.npy"),
    )
    .unwrap();
    assert!(String::from_utf8_lossy(&kept[..128]).contains("'descr': '<f2'"));
}

#[test]
fn generated_f16_and_bf16_stores_round_trip_with_many_chunks() {
    let dir = tempfile::tempdir().unwrap();
    for dtype in ["f16", "bf16"] {
        let store = dir.path().join(format!("gen-{dtype}"));
        gen(&[
            "--nodes",
            "20000",
            "--avg-degree",
            "8",
            "--dim",
            "24",
            "--classes",
            "9",
            "--dtype",
            dtype,
            "--split",
            "0.5,0.2,0.2",
            "--seed",
            "7",
            "--out",
            store.to_str().unwrap(),
        ]);
        let r = dgl_round_trip(&store, dir.path(), 5, EdgeFormat::Csv, false);
        assert_eq!(r.nodes, 20000);
        assert_eq!((r.duplicate_edges, r.self_loops), (0, 0), "gen drops both");
        dgl_round_trip(&store, dir.path(), 4, EdgeFormat::Numpy, true);
        graphbolt_round_trip(&store, dir.path(), EdgeFormat::Numpy);
    }
}

/// A store from a sparse-id edge list imported with --remap (original ids
/// kept), missing labels, duplicate edges and self-loops kept.
#[test]
fn remapped_store_with_missing_labels_duplicates_and_self_loops() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Ids 0, 7, 14, ... 700; a few duplicates and self-loops.
    let mut text = String::new();
    for i in 0..100u64 {
        text.push_str(&format!("{} {}\n", i * 7, ((i * 13 + 5) % 101) * 7));
    }
    text.push_str("14 14\n21 21\n0 7\n0 7\n0 7\n");
    std::fs::write(d.join("edges.txt"), text).unwrap();
    let rows = 701u64;
    let feats: Vec<u8> = (0..rows * 3)
        .flat_map(|k| ((k % 37) as f32 * 0.25 - 3.0).to_le_bytes())
        .collect();
    std::fs::write(d.join("feat.npy"), npy("<f4", "(701, 3)", &feats)).unwrap();
    let labels: Vec<u8> = (0..rows)
        .flat_map(|v| (if v % 5 == 0 { -1i64 } else { (v % 4) as i64 }).to_le_bytes())
        .collect();
    std::fs::write(d.join("labels.npy"), npy("<i8", "(701,)", &labels)).unwrap();
    std::fs::write(d.join("train.txt"), "0\n7\n70\n").unwrap();
    std::fs::write(d.join("test.txt"), "14\n700\n").unwrap();
    let store = d.join("remapped");
    let p = |name: &str| d.join(name).to_str().unwrap().to_string();
    import_cli(&[
        "files",
        "--quiet",
        "--edges",
        &p("edges.txt"),
        "--remap",
        "--features",
        &p("feat.npy"),
        "--labels",
        &p("labels.npy"),
        "--num-classes",
        "6",
        "--train-ids",
        &p("train.txt"),
        "--test-ids",
        &p("test.txt"),
        "--out",
        store.to_str().unwrap(),
    ]);
    let s = Store::open(&store).unwrap();
    assert!(s.original_ids().unwrap().is_some());
    assert!(s.labels().unwrap().unwrap().contains(&-1));
    assert_eq!(
        s.num_classes(),
        6,
        "more classes than the largest label + 1"
    );

    let r = dgl_round_trip(&store, d, 3, EdgeFormat::Csv, false);
    assert_eq!(
        (r.duplicate_edges, r.self_loops),
        (2, 3),
        "56 -> 56 from the pattern, 14 -> 14, 21 -> 21"
    );
    assert!(r.edge_note().contains("WARNING"), "{}", r.edge_note());
    dgl_round_trip(&store, d, 2, EdgeFormat::Numpy, false);
    graphbolt_round_trip(&store, d, EdgeFormat::Numpy);
    graphbolt_round_trip(&store, d, EdgeFormat::Csv);
    // The original ids are exported as given.
    let orig = std::fs::read(d.join("remapped-gb-numpy/data/orig_id.npy")).unwrap();
    let ids: Vec<i64> = orig[orig.len() - 8 * s.num_nodes() as usize..]
        .chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(&ids[..3], &[0, 7, 14]);

    // The command line says the same and prints the re-import command.
    let out = export_cli(&[
        "dgl",
        store.to_str().unwrap(),
        "--out",
        d.join("cli-dgl").to_str().unwrap(),
        "--chunks",
        "2",
        "-q",
    ])
    .unwrap();
    assert!(out.contains("2 duplicate edges and 3 self-loops"), "{out}");
    assert!(
        out.contains("ginex-import dgl") && out.contains("--num-classes 6"),
        "{out}"
    );
}

/// More chunks than nodes and edges: the extra chunks are empty files,
/// listed with 0 in the metadata, and the round trip still holds.
#[test]
fn more_chunks_than_nodes_gives_empty_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("tiny");
    write_tiny(&store);
    let r = dgl_round_trip(&store, dir.path(), 9, EdgeFormat::Csv, false);
    assert_eq!((r.nodes, r.edges), (4, 5));
    let meta: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("tiny-dgl-9-csv-false/metadata.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        meta["num_nodes_per_chunk"],
        serde_json::json!([[1, 1, 1, 1, 0, 0, 0, 0, 0]])
    );
    assert_eq!(
        meta["num_edges_per_chunk"],
        serde_json::json!([[1, 1, 1, 1, 1, 0, 0, 0, 0]])
    );
    dgl_round_trip(&store, dir.path(), 9, EdgeFormat::Numpy, false);
}

/// 4 nodes, f32 dim 2, 5 edges, labels (one missing), splits, original ids.
fn write_tiny(path: &Path) {
    let layout = FeatureLayout::new(2, Dtype::F32).unwrap();
    let mut b = StoreBuilder::create(path, StoreSpec::new(4, layout)).unwrap();
    let mut fw = b.feature_writer().unwrap();
    for v in 0..4u32 {
        let row: Vec<u8> = [v as f32, -(v as f32) / 2.0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        fw.push_rows(&row).unwrap();
    }
    b.add_features(fw).unwrap();
    let mut tw = b.topology_writer().unwrap();
    for list in [vec![1u64, 2], vec![], vec![0], vec![0, 2]] {
        tw.push_list(&list).unwrap();
    }
    b.add_topology(tw).unwrap();
    b.write_labels(&[1, -1, 0, 2], 3).unwrap();
    b.write_splits(&Splits {
        train: vec![0, 3],
        valid: vec![2],
        test: vec![],
    })
    .unwrap();
    b.write_original_ids(&[10, 20, 30, 40]).unwrap();
    b.finish().unwrap();
}

#[test]
fn small_export_metadata_matches_the_hand_written_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("tiny");
    write_tiny(&store);
    let out = dir.path().join("chunked");
    let mut opts = DglExport::new(&store, &out);
    opts.chunks = 2;
    opts.graph_name = Some("tiny-graph".into());
    export_dgl(&opts).unwrap();
    let got: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("metadata.json")).unwrap()).unwrap();
    let expected: serde_json::Value = serde_json::from_str(
        r#"{
  "graph_name": "tiny-graph",
  "node_type": ["_N"],
  "num_nodes_per_chunk": [[2, 2]],
  "edge_type": ["_N:_E:_N"],
  "num_edges_per_chunk": [[3, 2]],
  "edges": {
    "_N:_E:_N": {
      "format": {"name": "csv", "delimiter": " "},
      "data": ["edge_index/edges-0.csv", "edge_index/edges-1.csv"]
    }
  },
  "node_data": {
    "_N": {
      "feat": {"format": {"name": "numpy"}, "data": ["node_data/_N/feat-0.npy", "node_data/_N/feat-1.npy"]},
      "label": {"format": {"name": "numpy"}, "data": ["node_data/_N/label-0.npy", "node_data/_N/label-1.npy"]},
      "train_mask": {"format": {"name": "numpy"}, "data": ["node_data/_N/train_mask-0.npy", "node_data/_N/train_mask-1.npy"]},
      "val_mask": {"format": {"name": "numpy"}, "data": ["node_data/_N/val_mask-0.npy", "node_data/_N/val_mask-1.npy"]},
      "test_mask": {"format": {"name": "numpy"}, "data": ["node_data/_N/test_mask-0.npy", "node_data/_N/test_mask-1.npy"]},
      "orig_id": {"format": {"name": "numpy"}, "data": ["node_data/_N/orig_id-0.npy", "node_data/_N/orig_id-1.npy"]}
    }
  },
  "edge_data": {}
}"#,
    )
    .unwrap();
    let (g, e) = (got.as_object().unwrap(), expected.as_object().unwrap());
    assert_eq!(
        g.keys().collect::<Vec<_>>(),
        e.keys().collect::<Vec<_>>(),
        "top-level keys"
    );
    for (key, want) in e {
        assert_eq!(&g[key], want, "metadata.json field {key}");
    }
    // The chunk files hold what the metadata says, in CSC order.
    let read = |rel: &str| std::fs::read(out.join(rel)).unwrap();
    assert_eq!(read("edge_index/edges-0.csv"), b"1 0\n2 0\n0 2\n");
    assert_eq!(read("edge_index/edges-1.csv"), b"0 3\n2 3\n");
    let tail = |rel: &str, n: usize| {
        let b = read(rel);
        b[b.len() - n..].to_vec()
    };
    let i64s = |v: &[i64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    assert_eq!(tail("node_data/_N/label-0.npy", 16), i64s(&[1, -1]));
    assert_eq!(tail("node_data/_N/orig_id-1.npy", 16), i64s(&[30, 40]));
    assert_eq!(tail("node_data/_N/train_mask-1.npy", 2), [0, 1]);
    assert_eq!(tail("node_data/_N/val_mask-1.npy", 2), [1, 0]);
    assert_eq!(tail("node_data/_N/test_mask-0.npy", 2), [0, 0]);
    let f32s: Vec<u8> = [2f32, -1.0, 3.0, -1.5]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    assert_eq!(tail("node_data/_N/feat-1.npy", 16), f32s);
    let h = String::from_utf8_lossy(&read("node_data/_N/feat-1.npy")[..128]).into_owned();
    assert!(
        h.contains("'descr': '<f4'") && h.contains("'shape': (2, 2)"),
        "{h}"
    );

    // GraphBolt: the whole metadata.yaml, as written by hand.
    let gb = dir.path().join("gb");
    let mut opts = GraphBoltExport::new(&store, &gb);
    opts.dataset_name = Some("tiny".into());
    export_graphbolt(&opts).unwrap();
    let yaml = std::fs::read_to_string(gb.join("metadata.yaml")).unwrap();
    let set = |name: &str| {
        format!(
            "      - data:
          - name: seed_nodes
            format: numpy
            in_memory: true
            path: set/{name}_seed_nodes.npy
          - name: labels
            format: numpy
            in_memory: true
            path: set/{name}_labels.npy
"
        )
    };
    let expected = format!(
        r#"dataset_name: "tiny"
graph:
  nodes:
    - num: 4
  edges:
    - format: numpy
      path: edges/edges.npy
feature_data:
  - domain: node
    name: feat
    format: numpy
    in_memory: false
    path: data/feat.npy
  - domain: node
    name: label
    format: numpy
    in_memory: false
    path: data/label.npy
  - domain: node
    name: orig_id
    format: numpy
    in_memory: false
    path: data/orig_id.npy
tasks:
  - name: node_classification
    num_classes: 3
    train_set:
{}    validation_set:
{}    test_set:
{}"#,
        set("train"),
        set("valid"),
        set("test")
    );
    assert_eq!(yaml, expected);
    let edges = std::fs::read(gb.join("edges/edges.npy")).unwrap();
    assert_eq!(
        edges[edges.len() - 80..],
        i64s(&[1, 2, 0, 0, 2, 0, 0, 2, 3, 3])[..],
        "(2, E): sources, then destinations"
    );
    let labels = std::fs::read(gb.join("set/train_labels.npy")).unwrap();
    assert_eq!(labels[labels.len() - 16..], i64s(&[1, 2])[..]);
}

fn staging_leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("ginex-tmp"))
        .collect()
}

#[test]
fn bad_inputs_leave_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let store = d.join("tiny");
    write_tiny(&store);
    let s = store.to_str().unwrap();

    // An existing --out is refused and left as it was.
    let existing = d.join("existing");
    std::fs::create_dir(&existing).unwrap();
    std::fs::write(existing.join("mine"), b"keep").unwrap();
    for sub in ["dgl", "graphbolt"] {
        let err = export_cli(&[sub, s, "--out", existing.to_str().unwrap()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("exists"), "{err}");
        assert_eq!(files_of(&existing).len(), 1);
    }

    // An unwritable directory: a parent that is a file, and a read-only
    // filesystem (/proc refuses even root).
    std::fs::write(d.join("a-file"), b"x").unwrap();
    for out in [
        d.join("a-file/out"),
        PathBuf::from("/proc/ginex-export-test"),
    ] {
        for sub in ["dgl", "graphbolt"] {
            let err = export_cli(&[sub, s, "--out", out.to_str().unwrap()]).unwrap_err();
            assert!(!out.exists(), "{sub}: {err}");
        }
    }
    assert!(staging_leftovers(Path::new("/proc")).is_empty());

    // Not a store; a damaged store; too little memory.
    let err = export_cli(&["dgl", d.join("a-file").to_str().unwrap(), "--out", "x"])
        .unwrap_err()
        .to_string();
    assert!(err.contains("not a ginex store"), "{err}");
    let damaged = d.join("damaged");
    std::fs::create_dir(&damaged).unwrap();
    for (name, bytes) in files_of(&store) {
        std::fs::write(damaged.join(name), bytes).unwrap();
    }
    let mut pages = std::fs::read(damaged.join("features.pages")).unwrap();
    pages[4096 + 5] ^= 0x40;
    std::fs::write(damaged.join("features.pages"), pages).unwrap();
    for sub in ["dgl", "graphbolt"] {
        let out = d.join(format!("from-damaged-{sub}"));
        let err = export_cli(&[
            sub,
            damaged.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("features.pages") && err.contains("page 0"),
            "{err}"
        );
        assert!(!out.exists());
    }
    let err = export_cli(&[
        "dgl",
        s,
        "--out",
        d.join("m").to_str().unwrap(),
        "--memory",
        "1KiB",
    ])
    .unwrap_err()
    .to_string();
    assert!(err.contains("--memory"), "{err}");
    let err = export_cli(&[
        "dgl",
        s,
        "--out",
        d.join("c").to_str().unwrap(),
        "--chunks",
        "0",
    ])
    .unwrap_err()
    .to_string();
    assert!(err.contains("--chunks"), "{err}");
    let err = export_cli(&[
        "dgl",
        s,
        "--out",
        d.join("f").to_str().unwrap(),
        "--edge-format",
        "parquet",
    ])
    .unwrap_err()
    .to_string();
    assert!(err.contains("csv or numpy"), "{err}");
    assert!(
        staging_leftovers(d).is_empty(),
        "{:?}",
        staging_leftovers(d)
    );
    for name in ["m", "c", "f", "x"] {
        assert!(!d.join(name).exists());
    }
}

/// The binary end to end, as docs/ginex-export.md shows it.
#[test]
fn ginex_export_binary_runs() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("tiny");
    write_tiny(&store);
    let out = dir.path().join("gb");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_ginex-export"))
        .args(["graphbolt", "-q", "--out"])
        .arg(&out)
        .arg(&store)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("ginex-import files --edges"), "{stdout}");
    assert!(out.join("metadata.yaml").is_file());
}
