//! `ginex-import files`: a `ginex gen --raw` dataset imports to exactly the
//! store `ginex gen` writes, and bad inputs are clear errors that leave no
//! store behind.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};

use clap::Parser;
use ginex_cli::commands::{run as ginex_run, GinexCli};
use ginex_cli::import::{run as import_run, ImportCli};

use common::{f32_bytes, gz, i64_bytes, npy_bytes, p};

fn gen(args: &[&str]) {
    let cli = GinexCli::try_parse_from(["ginex", "gen", "--quiet"].iter().chain(args)).unwrap();
    ginex_run(cli, &mut Vec::new()).unwrap();
}

fn import(args: &[&str]) -> ginex::Result<String> {
    let cli = ImportCli::try_parse_from(["ginex-import", "files"].iter().chain(args)).unwrap();
    let mut out = Vec::new();
    import_run(&cli, &mut out)?;
    Ok(String::from_utf8(out).unwrap())
}

const GEN: [&str; 8] = [
    "--nodes",
    "3000",
    "--avg-degree",
    "9",
    "--dim",
    "12",
    "--seed",
    "4",
];

fn raw_and_store(dir: &Path, edges: &str) -> (PathBuf, PathBuf) {
    let raw = dir.join(format!("raw-{edges}"));
    let mut args: Vec<&str> = GEN.to_vec();
    args.extend(["--raw-edges", edges, "--raw", raw.to_str().unwrap()]);
    gen(&args);
    let store = dir.join("gen-store");
    if !store.exists() {
        let mut args: Vec<&str> = GEN.to_vec();
        args.extend(["--out", store.to_str().unwrap()]);
        gen(&args);
    }
    (raw, store)
}

#[test]
fn gen_raw_imports_to_the_identical_store() {
    let dir = tempfile::tempdir().unwrap();
    for edges in ["npy", "csv"] {
        let (raw, store) = raw_and_store(dir.path(), edges);
        let out = dir.path().join(format!("imported-{edges}"));
        let report = import(&[
            "--edges",
            p(&raw.join(format!("edges.{edges}"))),
            "--features",
            p(&raw.join("features.npy")),
            "--labels",
            p(&raw.join("labels.npy")),
            "--num-classes",
            "16",
            "--train-ids",
            p(&raw.join("train_ids.npy")),
            "--valid-ids",
            p(&raw.join("valid_ids.npy")),
            "--test-ids",
            p(&raw.join("test_ids.npy")),
            "--out",
            p(&out),
        ])
        .unwrap();
        assert!(report.contains("verified"), "{report}");
        for f in [
            "MANIFEST",
            "features.pages",
            "features.crc",
            "indptr",
            "indices",
            "indices.seg",
            "labels",
            "splits",
        ] {
            assert_eq!(
                std::fs::read(store.join(f)).unwrap(),
                std::fs::read(out.join(f)).unwrap(),
                "{edges}: {f} differs from ginex gen's"
            );
        }
    }
}

#[test]
fn bad_inputs_are_clear_errors_and_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (raw, _) = raw_and_store(dir.path(), "npy");
    let feats = raw.join("features.npy");
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let out = dir.path().join("target");
    let base = |edges: &Path| {
        vec![
            "--edges".to_string(),
            p(edges).to_string(),
            "--features".into(),
            p(&feats).to_string(),
            "--out".into(),
            p(&out).to_string(),
        ]
    };
    let check = |args: Vec<String>, file: &str, want: &str| {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let err = import(&refs).expect_err(want).to_string();
        assert!(
            err.contains(file) && err.contains(want),
            "expected {file:?} and {want:?} in: {err}"
        );
        assert!(!out.exists(), "a store was left at the target after: {err}");
    };
    check(
        base(&write("range.csv", "0,1\n5,3000\n")),
        "range.csv:2",
        "not a node id",
    );
    check(base(&write("neg.csv", "0,1\n-4,2\n")), "neg.csv:2", "-4");
    check(
        base(&write("word.csv", "0,1\n1,two\n")),
        "word.csv:2",
        "integers",
    );
    check(
        base(&write("mixed.csv", "0,1\n1\t2\n")),
        "mixed.csv:2",
        "mixes delimiters",
    );

    // Truncated feature matrix.
    let bytes = std::fs::read(&feats).unwrap();
    let short = dir.path().join("short.npy");
    std::fs::write(&short, &bytes[..bytes.len() - 10]).unwrap();
    let mut args = base(&raw.join("edges.npy"));
    args[3] = p(&short).to_string();
    check(args, "short.npy", "truncated");

    // NaN features refused unless allowed.
    let mut nan = bytes.clone();
    let at = nan.len() - 4;
    nan[at..].copy_from_slice(&f32::NAN.to_le_bytes());
    let nan_path = dir.path().join("nan.npy");
    std::fs::write(&nan_path, &nan).unwrap();
    let mut args = base(&raw.join("edges.npy"));
    args[3] = p(&nan_path).to_string();
    check(args.clone(), "nan.npy", "--allow-nonfinite");
    args.push("--allow-nonfinite".into());
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    import(&refs).unwrap();
    std::fs::remove_dir_all(&out).unwrap();

    // Splits: out of range, overlapping, duplicated.
    let mut args = base(&raw.join("edges.npy"));
    args.extend([
        "--train-ids".into(),
        p(&write("train.txt", "1\n3000\n")).to_string(),
    ]);
    check(args, "train.txt:2", "not a node id");
    let mut args = base(&raw.join("edges.npy"));
    args.extend([
        "--train-ids".into(),
        p(&write("a.txt", "1\n2\n")).to_string(),
        "--test-ids".into(),
        p(&write("b.txt", "2\n")).to_string(),
    ]);
    check(args, "", "node 2 is in more than one");
    let mut args = base(&raw.join("edges.npy"));
    args.extend([
        "--train-ids".into(),
        p(&write("dup.txt", "5\n5\n")).to_string(),
    ]);
    check(args, "dup.txt", "more than once");

    // Labels of the wrong length; --num-nodes disagreeing with the features.
    let mut args = base(&raw.join("edges.npy"));
    args.extend(["--labels".into(), p(&raw.join("train_ids.npy")).to_string()]);
    check(args, "train_ids.npy", "expected (3000,)");
    let mut args = base(&raw.join("edges.npy"));
    args.extend(["--num-nodes".into(), "10".into()]);
    check(args, "features.npy", "--num-nodes 10");

    // An existing target is never replaced.
    std::fs::create_dir(&out).unwrap();
    let refs_owned = base(&raw.join("edges.npy"));
    let refs: Vec<&str> = refs_owned.iter().map(String::as_str).collect();
    assert!(import(&refs)
        .unwrap_err()
        .to_string()
        .contains("already exists"));
}

#[test]
fn undirected_dedup_and_random_split() {
    let dir = tempfile::tempdir().unwrap();
    let (raw, _) = raw_and_store(dir.path(), "npy");
    let edges = dir.path().join("e.txt");
    std::fs::write(&edges, "# tiny\n0 1\n0 1\n2 2\n1 2\n").unwrap();
    let out = dir.path().join("s");
    import(&[
        "--edges",
        p(&edges),
        "--features",
        p(&raw.join("features.npy")),
        "--undirected",
        "--dedup",
        "--remove-self-loops",
        "--split",
        "0.5,0.2,0.1",
        "--seed",
        "3",
        "--out",
        p(&out),
    ])
    .unwrap();
    let s = ginex::Store::open(&out).unwrap();
    assert_eq!(s.in_neighbors(0).unwrap(), vec![1]);
    assert_eq!(s.in_neighbors(1).unwrap(), vec![0, 2]);
    assert_eq!(s.in_neighbors(2).unwrap(), vec![1]);
    assert_eq!(s.num_edges(), 4);
    let sp = s.splits().unwrap().unwrap();
    let frac = sp.train.len() as f64 / 3000.0;
    assert!((0.45..0.55).contains(&frac), "train fraction {frac}");
}

// ---------------------------------------------------------------------------
// Fixture writers (no numpy needed).

use common::npz_writer::{Method, NpzWriter};
use ginex::internals::import::npy_write::NpyWriter;
use std::io::Write as _;

fn run_import(args: &[&str]) -> ginex::Result<String> {
    let cli = ImportCli::try_parse_from(std::iter::once(&"ginex-import").chain(args)).unwrap();
    let mut out = Vec::new();
    import_run(&cli, &mut out)?;
    Ok(String::from_utf8(out).unwrap())
}

/// A 6-node graph: features row i = [i, -i], labels i % 3, edges below.
const SMALL_EDGES: [(u64, u64); 7] = [(0, 1), (1, 2), (2, 0), (3, 4), (4, 5), (5, 3), (0, 5)];

fn small_feats() -> Vec<f32> {
    (0..6).flat_map(|i| [i as f32, -(i as f32)]).collect()
}

fn check_small(store: &Path, undirected: bool) {
    let s = ginex::Store::open(store).unwrap();
    s.verify().unwrap();
    assert_eq!(s.num_nodes(), 6);
    for v in 0..6u64 {
        let mut want: Vec<u64> = SMALL_EDGES
            .iter()
            .filter(|e| e.1 == v)
            .map(|e| e.0)
            .chain(
                SMALL_EDGES
                    .iter()
                    .filter(|e| undirected && e.0 == v)
                    .map(|e| e.1),
            )
            .collect();
        want.sort_unstable();
        assert_eq!(s.in_neighbors(v).unwrap(), want, "in-neighbors of {v}");
    }
    let mut f = vec![0f32; 12];
    s.read_feature_rows_f32(&[0, 1, 2, 3, 4, 5], &mut f)
        .unwrap();
    assert_eq!(f, small_feats());
}

fn ogb_csv_dir(root: &Path, name: &str) -> PathBuf {
    let d = root.join(name);
    std::fs::create_dir_all(d.join("raw")).unwrap();
    std::fs::create_dir_all(d.join("split/time")).unwrap();
    let edges: String = SMALL_EDGES
        .iter()
        .map(|(s, t)| format!("{s},{t}\n"))
        .collect();
    gz(&d.join("raw/edge.csv.gz"), &edges);
    gz(&d.join("raw/num-node-list.csv.gz"), "6\n");
    gz(&d.join("raw/num-edge-list.csv.gz"), "7\n");
    let feats: String = (0..6).map(|i| format!("{i}.0,-{i}.0\n")).collect();
    gz(&d.join("raw/node-feat.csv.gz"), &feats);
    gz(&d.join("raw/node-label.csv.gz"), "0\n1\n2\n0\n1\n2\n");
    gz(&d.join("split/time/train.csv.gz"), "0\n1\n2\n");
    gz(&d.join("split/time/valid.csv.gz"), "3\n");
    gz(&d.join("split/time/test.csv.gz"), "4\n5\n");
    d
}

#[test]
fn ogb_csv_layout_arxiv_and_products() {
    let dir = tempfile::tempdir().unwrap();
    let arxiv = ogb_csv_dir(dir.path(), "ogbn_arxiv");
    let out = dir.path().join("arxiv-store");
    run_import(&["ogb", p(&arxiv), "--quiet", "--out", p(&out)]).unwrap();
    check_small(&out, false);
    let s = ginex::Store::open(&out).unwrap();
    assert_eq!(s.labels().unwrap().unwrap(), vec![0, 1, 2, 0, 1, 2]);
    let sp = s.splits().unwrap().unwrap();
    assert_eq!(
        (sp.train, sp.valid, sp.test),
        (vec![0, 1, 2], vec![3], vec![4, 5])
    );

    // products stores each undirected edge once: reverse edges are added.
    let products = ogb_csv_dir(dir.path(), "ogbn_products");
    let out = dir.path().join("products-store");
    run_import(&["ogb", p(&products), "--quiet", "--out", p(&out)]).unwrap();
    check_small(&out, true);
}

#[test]
fn ogb_binary_layout_papers100m_style() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("ogbn_papers100M");
    std::fs::create_dir_all(d.join("raw")).unwrap();
    std::fs::create_dir_all(d.join("split/time")).unwrap();
    // edge_index is (2, E): sources then targets.
    let mut ei: Vec<i64> = SMALL_EDGES.iter().map(|e| e.0 as i64).collect();
    ei.extend(SMALL_EDGES.iter().map(|e| e.1 as i64));
    let mut w = NpzWriter::create(&d.join("raw/data.npz"), true).unwrap();
    w.add(
        "edge_index.npy",
        &npy_bytes("<i8", "(2, 7)", &i64_bytes(&ei)),
        Method::Deflate,
    )
    .unwrap();
    w.add(
        "node_feat.npy",
        &npy_bytes("<f4", "(6, 2)", &f32_bytes(&small_feats())),
        Method::Stored,
    )
    .unwrap();
    w.add(
        "num_nodes_list.npy",
        &npy_bytes("<i8", "(1,)", &i64_bytes(&[6])),
        Method::Stored,
    )
    .unwrap();
    w.add(
        "num_edges_list.npy",
        &npy_bytes("<i8", "(1,)", &i64_bytes(&[7])),
        Method::Stored,
    )
    .unwrap();
    w.finish().unwrap();
    let labels: Vec<f64> = vec![0.0, f64::NAN, 2.0, 1.0, f64::NAN, 0.0];
    let lb: Vec<u8> = labels.iter().flat_map(|x| x.to_le_bytes()).collect();
    let mut w = NpzWriter::create(&d.join("raw/node-label.npz"), false).unwrap();
    w.add(
        "node_label.npy",
        &npy_bytes("<f8", "(6, 1)", &lb),
        Method::Deflate,
    )
    .unwrap();
    w.finish().unwrap();
    gz(&d.join("split/time/train.csv.gz"), "0\n2\n");
    gz(&d.join("split/time/valid.csv.gz"), "3\n");
    gz(&d.join("split/time/test.csv.gz"), "5\n");
    let out = dir.path().join("store");
    run_import(&["ogb", p(&d), "--quiet", "--out", p(&out)]).unwrap();
    check_small(&out, false);
    let s = ginex::Store::open(&out).unwrap();
    assert_eq!(s.labels().unwrap().unwrap(), vec![0, -1, 2, 1, -1, 0]);
    assert_eq!(s.num_classes(), 3);
    // No scratch (inflated members) left inside the store.
    let names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names
            .iter()
            .all(|n| !n.starts_with("import-") && n != "scratch"),
        "{names:?}"
    );
}

fn dgl_dir(root: &Path) -> PathBuf {
    let d = root.join("chunked");
    std::fs::create_dir_all(d.join("edges")).unwrap();
    std::fs::create_dir_all(d.join("node_data")).unwrap();
    // cites: csv chunks with a space delimiter, the second one empty;
    // follows: one numpy chunk (E, 2).
    std::fs::write(d.join("edges/cites-0.csv"), "0 1\n1 2\n2 0\n3 4\n").unwrap();
    std::fs::write(d.join("edges/cites-1.csv"), "").unwrap();
    let f: Vec<i64> = vec![4, 5, 5, 3, 0, 5];
    std::fs::write(
        d.join("edges/follows-0.npy"),
        npy_bytes("<i8", "(3, 2)", &i64_bytes(&f)),
    )
    .unwrap();
    let feats = small_feats();
    std::fs::write(
        d.join("node_data/feat-0.npy"),
        npy_bytes("<f4", "(4, 2)", &f32_bytes(&feats[..8])),
    )
    .unwrap();
    std::fs::write(
        d.join("node_data/feat-1.npy"),
        npy_bytes("<f4", "(2, 2)", &f32_bytes(&feats[8..])),
    )
    .unwrap();
    std::fs::write(
        d.join("node_data/label-0.npy"),
        npy_bytes("<i8", "(6,)", &i64_bytes(&[0, 1, 2, 0, 1, 2])),
    )
    .unwrap();
    std::fs::write(
        d.join("node_data/train-0.npy"),
        npy_bytes("|b1", "(6,)", &[1, 1, 0, 0, 0, 0]),
    )
    .unwrap();
    std::fs::write(
        d.join("node_data/val-0.npy"),
        npy_bytes("|b1", "(6,)", &[0, 0, 1, 0, 0, 0]),
    )
    .unwrap();
    std::fs::write(
        d.join("node_data/test-0.npy"),
        npy_bytes("|b1", "(6,)", &[0, 0, 0, 0, 1, 1]),
    )
    .unwrap();
    d
}

const DGL_META: &str = r#"{
  "graph_name": "small",
  "node_type": ["paper"],
  "num_nodes_per_chunk": [[4, 2]],
  "edge_type": ["paper:cites:paper", "paper:follows:paper"],
  "num_edges_per_chunk": [[4, 0], [3]],
  "edges": {
    "paper:cites:paper": {"format": {"name": "csv", "delimiter": " "},
                          "data": ["edges/cites-0.csv", "edges/cites-1.csv"]},
    "paper:follows:paper": {"format": {"name": "numpy"}, "data": ["edges/follows-0.npy"]}
  },
  "node_data": {
    "paper": {
      "feat": {"format": {"name": "numpy"}, "data": ["node_data/feat-0.npy", "node_data/feat-1.npy"]},
      "label": {"format": {"name": "numpy"}, "data": ["node_data/label-0.npy"]},
      "train_mask": {"format": {"name": "numpy"}, "data": ["node_data/train-0.npy"]},
      "val_mask": {"format": {"name": "numpy"}, "data": ["node_data/val-0.npy"]},
      "test_mask": {"format": {"name": "numpy"}, "data": ["node_data/test-0.npy"]}
    }
  },
  "edge_data": {}
}"#;

#[test]
fn dgl_chunked_homogeneous_graph() {
    let dir = tempfile::tempdir().unwrap();
    let d = dgl_dir(dir.path());
    std::fs::write(d.join("metadata.json"), DGL_META).unwrap();
    let out = dir.path().join("store");
    run_import(&[
        "dgl",
        p(&d.join("metadata.json")),
        "--quiet",
        "--out",
        p(&out),
    ])
    .unwrap();
    check_small(&out, false);
    let s = ginex::Store::open(&out).unwrap();
    assert_eq!(s.labels().unwrap().unwrap(), vec![0, 1, 2, 0, 1, 2]);
    let sp = s.splits().unwrap().unwrap();
    assert_eq!(
        (sp.train, sp.valid, sp.test),
        (vec![0, 1], vec![2], vec![4, 5])
    );
}

#[test]
fn dgl_bad_metadata_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let d = dgl_dir(dir.path());
    let out = dir.path().join("store");
    let cases: [(&str, &str, &str); 7] = [
        // (replace, with, expected message part)
        (
            "edges/follows-0.npy",
            "edges/gone.npy",
            "gone.npy: missing: listed in",
        ),
        (
            "[[4, 0], [3]]",
            "[[4, 0], [5]]",
            "chunk holds 3 edges but num_edges_per_chunk",
        ),
        ("[[4, 2]]", "[[4, 3]]", "num_nodes_per_chunk sums to 7"),
        (
            "[\"paper\"]",
            "[\"paper\", \"author\"]",
            // A second node type makes it a typed graph, whose chunk
            // lists must then cover both types.
            "num_nodes_per_chunk: 1 lists for 2 types",
        ),
        (
            "{\"name\": \"numpy\"}, \"data\": [\"edges/follows",
            "{\"name\": \"parquet\"}, \"data\": [\"edges/follows",
            "parquet chunks are not supported",
        ),
        (
            "[[4, 0], [3]]",
            "[[4], [3]]",
            "2 chunk files but num_edges_per_chunk lists 1",
        ),
        ("\"graph_name\"", "graph_name", "not valid JSON"),
    ];
    for (from, to, want) in cases {
        assert!(DGL_META.contains(from), "{from}");
        let meta = d.join("metadata.json");
        std::fs::write(&meta, DGL_META.replacen(from, to, 1)).unwrap();
        let err = run_import(&["dgl", p(&meta), "--quiet", "--out", p(&out)])
            .expect_err(want)
            .to_string();
        assert!(err.contains(want), "expected {want:?} in: {err}");
        assert!(!out.exists(), "store left behind after: {err}");
    }
}

#[test]
fn remap_keeps_original_ids() {
    let dir = tempfile::tempdir().unwrap();
    let e = dir.path().join("snap.txt");
    std::fs::write(&e, "# Directed graph: snap\n# FromNodeId\tToNodeId\n1000\t7\n7\t5000000000\n5000000000\t1000\n7\t7\n").unwrap();
    let out = dir.path().join("store");
    run_import(&[
        "files",
        "--edges",
        p(&e),
        "--remap",
        "--quiet",
        "--out",
        p(&out),
    ])
    .unwrap();
    let s = ginex::Store::open(&out).unwrap();
    s.verify().unwrap();
    assert_eq!(s.num_nodes(), 3);
    assert_eq!(
        s.original_ids().unwrap().unwrap(),
        vec![7, 1000, 5_000_000_000]
    );
    // new ids: 7 -> 0, 1000 -> 1, 5e9 -> 2
    assert_eq!(s.in_neighbors(0).unwrap(), vec![0, 1]);
    assert_eq!(s.in_neighbors(1).unwrap(), vec![2]);
    assert_eq!(s.in_neighbors(2).unwrap(), vec![0]);
    // Without --remap the same file is refused: ids beyond u32 in a store
    // sized by the largest id would need 5e9 nodes of features — given
    // --num-nodes the id is simply out of range.
    let out2 = dir.path().join("store2");
    let refused = |args: &[&str], wants: &[&str]| {
        let mut all = vec!["files", "--edges", p(&e), "--quiet", "--out", p(&out2)];
        all.extend(args);
        let err = run_import(&all).unwrap_err().to_string();
        for w in wants {
            assert!(err.contains(w), "expected {w:?} in: {err}");
        }
        assert!(!out2.exists());
    };
    refused(
        &["--num-nodes", "4000"],
        &["snap.txt:4", "5000000000 is not a node id in 0..4000"],
    );
    // Split ids are original ids under --remap; unknown ones are refused.
    let t = dir.path().join("train.txt");
    std::fs::write(&t, "1000\n42\n").unwrap();
    refused(
        &["--remap", "--train-ids", p(&t)],
        &["train.txt:2", "42 does not occur in the edge list"],
    );

    // The first pass (remap, or sizing the store without features) refuses
    // negative ids with the line.
    let neg = dir.path().join("neg.txt");
    std::fs::write(&neg, "1 2\n3 -4\n").unwrap();
    for extra in [&["--remap"][..], &[][..]] {
        let mut args = vec!["files", "--edges", p(&neg), "--quiet", "--out", p(&out2)];
        args.extend(extra);
        let err = run_import(&args).unwrap_err().to_string();
        assert!(
            err.contains("neg.txt:2") && err.contains("-4 is not a non-negative integer"),
            "{err}"
        );
        assert!(!out2.exists());
    }

    // Features, labels and split ids are indexed by original id: the store
    // row of new id i is the input row of original id i.
    let e = dir.path().join("sparse.csv");
    std::fs::write(&e, "9,2\n5,9\n2,5\n").unwrap();
    let f = dir.path().join("f10.npy");
    let values: Vec<f32> = (0..20).map(|x| x as f32).collect();
    std::fs::write(&f, npy_bytes("<f4", "(10, 2)", &f32_bytes(&values))).unwrap();
    let l = dir.path().join("l10.npy");
    let labels: Vec<i64> = (0..10).map(|x| x % 4).collect();
    std::fs::write(&l, npy_bytes("<i8", "(10,)", &i64_bytes(&labels))).unwrap();
    std::fs::write(&t, "9\n").unwrap();
    let out3 = dir.path().join("store3");
    run_import(&[
        "files",
        "--edges",
        p(&e),
        "--remap",
        "--features",
        p(&f),
        "--labels",
        p(&l),
        "--train-ids",
        p(&t),
        "--quiet",
        "--out",
        p(&out3),
    ])
    .unwrap();
    let s = ginex::Store::open(&out3).unwrap();
    s.verify().unwrap();
    assert_eq!(s.original_ids().unwrap().unwrap(), vec![2, 5, 9]);
    let mut rows = vec![0f32; 6];
    s.read_feature_rows_f32(&[0, 1, 2], &mut rows).unwrap();
    assert_eq!(rows, vec![4.0, 5.0, 10.0, 11.0, 18.0, 19.0]);
    assert_eq!(s.labels().unwrap().unwrap(), vec![2, 1, 1]);
    assert_eq!(s.splits().unwrap().unwrap().train, vec![2]);
    // 2 -> 0, 5 -> 1, 9 -> 2: edges 9->2, 5->9, 2->5.
    assert_eq!(s.in_neighbors(0).unwrap(), vec![2]);
    assert_eq!(s.in_neighbors(2).unwrap(), vec![1]);
}

/// The rows of `format/import-errors.md` not covered above: each a clear
/// error naming the file and position, and no store at the target.
// One scenario read top to bottom (the 150-line limit is on the tools' code).
#[allow(clippy::too_many_lines)]
#[test]
fn catalog_rows_files() {
    let dir = tempfile::tempdir().unwrap();
    let dp = dir.path();
    let feats = dp.join("f.npy");
    std::fs::write(
        &feats,
        npy_bytes("<f4", "(6, 2)", &f32_bytes(&small_feats())),
    )
    .unwrap();
    let edges = dp.join("e.csv");
    std::fs::write(&edges, "0,1\n1,2\n").unwrap();
    let out = dp.join("target");
    let fail = |extra: &[&str], want: &[&str]| {
        let mut args = vec!["files", "--quiet", "--out", p(&out)];
        args.extend_from_slice(extra);
        let err = run_import(&args).expect_err(want[0]).to_string();
        for w in want {
            assert!(err.contains(w), "expected {w:?} in: {err}");
        }
        assert!(!out.exists(), "store left behind after: {err}");
    };
    let write = |name: &str, bytes: &[u8]| {
        let path = dp.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    };
    // Oversized and overflowing .npy headers, object dtype, Fortran order.
    let mut huge = b"\x93NUMPY\x02\x00".to_vec();
    huge.extend(10_000_000u32.to_le_bytes());
    let huge = write("huge.npy", &huge);
    fail(
        &["--edges", p(&huge), "--features", p(&feats)],
        &["huge.npy", "byte 8", "exceeds"],
    );
    let over = write(
        "over.npy",
        &npy_bytes("<i8", "(4294967296, 4294967296, 2)", &[]),
    );
    fail(
        &["--edges", p(&over), "--features", p(&feats)],
        &["over.npy", "overflows"],
    );
    let obj = write("obj.npy", &npy_bytes("|O", "(6, 2)", &[0; 96]));
    fail(
        &["--edges", p(&edges), "--features", p(&obj)],
        &["obj.npy", "object arrays"],
    );
    let fortran = write(
        "fortran.npy",
        &npy_bytes("<f4", "(6, 2)", &f32_bytes(&small_feats())).replace_fortran(),
    );
    fail(
        &["--edges", p(&edges), "--features", p(&fortran)],
        &["fortran.npy", "Fortran"],
    );
    // Truncated gzip edge list.
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    for i in 0..5000 {
        writeln!(enc, "{} {}", i % 6, (i * 7) % 6).unwrap();
    }
    let gzb = enc.finish().unwrap();
    let tgz = write("t.txt.gz", &gzb[..gzb.len() / 2]);
    fail(
        &["--edges", p(&tgz), "--features", p(&feats)],
        &["t.txt.gz:", "truncated"],
    );
    // Float edge ids in .npy; non-integer text ids.
    let fe = write(
        "fe.npy",
        &npy_bytes("<f4", "(1, 2)", &f32_bytes(&[0.0, 1.0])),
    );
    fail(
        &["--edges", p(&fe), "--features", p(&feats)],
        &["fe.npy", "must be integers"],
    );
    let fl = write("fl.csv", b"0,1\n1.5,2\n");
    fail(
        &["--edges", p(&fl), "--features", p(&feats)],
        &["fl.csv:2", "integers"],
    );
    // Labels: out of range of --num-classes, fractional float label, label < -1.
    let lab = write(
        "lab.npy",
        &npy_bytes("<i8", "(6,)", &i64_bytes(&[0, 1, 2, 3, 4, 5])),
    );
    let with_labels = ["--edges", p(&edges), "--features", p(&feats), "--labels"];
    fail(
        &[&with_labels[..], &[p(&lab), "--num-classes", "4"]].concat(),
        &["lab.npy:5", "not below --num-classes 4"],
    );
    let labf = write(
        "labf.npy",
        &npy_bytes("<f4", "(6, 1)", &f32_bytes(&[0.0, 1.5, 0.0, 0.0, 0.0, 0.0])),
    );
    fail(
        &[&with_labels[..], &[p(&labf)]].concat(),
        &["labf.npy:2", "not a whole number"],
    );
    let labn = write(
        "labn.npy",
        &npy_bytes("<i8", "(6,)", &i64_bytes(&[0, -3, 0, 0, 0, 0])),
    );
    fail(
        &[&with_labels[..], &[p(&labn)]].concat(),
        &["labn.npy:2", "-3 is out of range"],
    );
    // Inf feature.
    let mut fv = small_feats();
    fv[7] = f32::INFINITY;
    let inf = write("inf.npy", &npy_bytes("<f4", "(6, 2)", &f32_bytes(&fv)));
    fail(
        &["--edges", p(&edges), "--features", p(&inf)],
        &["inf.npy:4", "row 3 column 1 is inf"],
    );
    // Text noise accepted: header row, BOM, blank lines, CRLF, comments.
    let noisy = write(
        "noisy.csv",
        "\u{feff}source,target\r\n\r\n# c\r\n0,1\r\n\r\n1,2\r\n".as_bytes(),
    );
    run_import(&[
        "files",
        "--quiet",
        "--edges",
        p(&noisy),
        "--features",
        p(&feats),
        "--out",
        p(&out),
    ])
    .unwrap();
    assert_eq!(ginex::Store::open(&out).unwrap().num_edges(), 2);
    std::fs::remove_dir_all(&out).unwrap();
    // Big-endian features are converted.
    let be: Vec<u8> = small_feats().iter().flat_map(|x| x.to_be_bytes()).collect();
    let bef = write("be.npy", &npy_bytes(">f4", "(6, 2)", &be));
    run_import(&[
        "files",
        "--quiet",
        "--edges",
        p(&edges),
        "--features",
        p(&bef),
        "--dtype",
        "f16",
        "--out",
        p(&out),
    ])
    .unwrap();
    let mut got = vec![0f32; 12];
    ginex::Store::open(&out)
        .unwrap()
        .read_feature_rows_f32(&[0, 1, 2, 3, 4, 5], &mut got)
        .unwrap();
    assert_eq!(got, small_feats());
    std::fs::remove_dir_all(&out).unwrap();
    // Without features the node count comes from --num-nodes (isolated
    // nodes) or the largest id.
    run_import(&[
        "files",
        "--quiet",
        "--edges",
        p(&edges),
        "--num-nodes",
        "10",
        "--out",
        p(&out),
    ])
    .unwrap();
    assert_eq!(ginex::Store::open(&out).unwrap().num_nodes(), 10);
    std::fs::remove_dir_all(&out).unwrap();
    // Written with NpyWriter too (the lead's writer, an independent path).
    let w = dp.join("w.npy");
    let mut nw = NpyWriter::create(&w, "<i4", &[2]).unwrap();
    nw.write(&[0, 0, 0, 0, 9, 0, 0, 0], 2).unwrap();
    nw.finish().unwrap();
    fail(
        &["--edges", p(&w), "--features", p(&feats)],
        &["w.npy:1", "edge target 9 is not a node id in 0..6"],
    );
}

trait Fortran {
    fn replace_fortran(self) -> Vec<u8>;
}
impl Fortran for Vec<u8> {
    fn replace_fortran(self) -> Vec<u8> {
        let i = self.windows(5).position(|w| w == b"False").unwrap();
        let mut v = self;
        v.splice(i..i + 5, b"True ".iter().copied());
        v
    }
}

#[test]
fn ogb_catalog_rows() {
    let dir = tempfile::tempdir().unwrap();
    let d = ogb_csv_dir(dir.path(), "ogbn_arxiv");
    let out = dir.path().join("target");
    let fail = |want: &[&str]| {
        let err = run_import(&["ogb", p(&d), "--quiet", "--out", p(&out)])
            .expect_err(want[0])
            .to_string();
        for w in want {
            assert!(err.contains(w), "expected {w:?} in: {err}");
        }
        assert!(!out.exists());
    };
    gz(
        &d.join("raw/node-feat.csv.gz"),
        "0,0\n1,1\n2\n3,3\n4,4\n5,5\n",
    );
    fail(&[
        "node-feat.csv.gz:3",
        "row has 1 values but the first row has 2",
    ]);
    gz(&d.join("raw/node-feat.csv.gz"), "0,0\n1,1\n2,2\n");
    fail(&["3 feature rows for 6 nodes"]);
    gz(
        &d.join("raw/node-feat.csv.gz"),
        "0,0\n1,1\n2,2\n3,3\n4,4\n5,5\n",
    );
    gz(&d.join("split/time/valid.csv.gz"), "3\n0\n");
    fail(&["node 0 is in more than one"]);
    gz(&d.join("split/time/valid.csv.gz"), "3\n");
    gz(&d.join("raw/edge.csv.gz"), "0,1\n1,6\n");
    fail(&["edge.csv.gz:2", "6 is not a node id in 0..6"]);
    gz(&d.join("raw/edge.csv.gz"), "0,1\n1,2\n");
    gz(&d.join("raw/num-edge-list.csv.gz"), "2\n");
    gz(
        &d.join("raw/node-label.csv.gz"),
        "0,1\n1,0\n1,1\n0,0\n1,0\n0,1\n",
    );
    fail(&[
        "node-label.csv.gz:1",
        "2 labels in a row; multi-label datasets are not supported",
    ]);
    gz(&d.join("raw/node-label.csv.gz"), "0\n1\n2\n0\n1\n2\n");
    std::fs::create_dir_all(d.join("raw/relations/paper___cites___paper")).unwrap();
    // raw/relations/ makes it a heterogeneous dataset, which needs its
    // node type counts.
    fail(&[
        "raw/num-node-dict.csv.gz",
        "missing",
        "heterogeneous layout",
    ]);
    std::fs::remove_dir_all(d.join("raw/relations")).unwrap();
    std::fs::remove_file(d.join("raw/edge.csv.gz")).unwrap();
    fail(&["edge.csv.gz", "missing"]);
}

/// Disk full, simulated with a file-size limit on the child process
/// (RLIMIT_FSIZE, SIGXFSZ ignored so writes fail with EFBIG): the import
/// fails with a write error, exits non-zero and leaves nothing.
#[test]
fn disk_full_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (raw, _) = raw_and_store(dir.path(), "npy");
    let out = dir.path().join("target");
    let status = std::process::Command::new("bash")
        .args(["-c", "ulimit -f 64; trap '' XFSZ; exec \"$@\"", "sh"])
        .arg(env!("CARGO_BIN_EXE_ginex-import"))
        .args(["files", "--quiet", "--edges"])
        .arg(raw.join("edges.npy"))
        .arg("--features")
        .arg(raw.join("features.npy"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&status.stderr);
    assert!(
        !status.status.success(),
        "import succeeded under a 64 KiB file-size limit"
    );
    assert!(
        stderr.contains("error:") && stderr.contains("File too large"),
        "{stderr}"
    );
    assert!(!out.exists(), "store left behind after: {stderr}");
}

/// SIGKILL the importer at random moments: the target holds nothing or a
/// store that verifies.
#[test]
fn killed_imports_leave_nothing_or_a_complete_store() {
    use std::time::Instant;
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("raw");
    gen(&[
        "--nodes",
        "60000",
        "--avg-degree",
        "12",
        "--dim",
        "32",
        "--seed",
        "5",
        "--raw-edges",
        "csv",
        "--raw",
        p(&raw),
    ]);
    let cmd = |out: &Path| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_ginex-import"));
        c.args(["files", "--quiet", "--edges"])
            .arg(raw.join("edges.csv"))
            .arg("--features")
            .arg(raw.join("features.npy"))
            .arg("--labels")
            .arg(raw.join("labels.npy"))
            .arg("--out")
            .arg(out)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        c
    };
    let started = Instant::now();
    assert!(cmd(&dir.path().join("reference"))
        .status()
        .unwrap()
        .success());
    let full = started.elapsed();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let (mut complete, mut absent) = (0, 0);
    for i in 0..12 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let delay = full.mul_f64(1.2 * (x % 1000) as f64 / 1000.0);
        let target = dir.path().join(format!("s{i}"));
        let mut child = cmd(&target).spawn().unwrap();
        std::thread::sleep(delay);
        let _ = child.kill();
        let _ = child.wait();
        if target.exists() {
            let s = ginex::Store::open(&target)
                .unwrap_or_else(|e| panic!("killed after {delay:?}: not a store: {e}"));
            s.verify().unwrap();
            complete += 1;
        } else {
            absent += 1;
        }
    }
    assert!(
        absent > 0,
        "no kill landed mid-import (full import {full:?})"
    );
    eprintln!("import kill trials: {complete} complete, {absent} absent; full {full:?}");
}
