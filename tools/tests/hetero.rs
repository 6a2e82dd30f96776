//! Typed (heterogeneous) stores: `ginex-import dgl` of a small chunked
//! graph shaped like the format's MAG240M example equals a hand-built
//! expectation, and bad typed inputs are refused naming the file and the
//! field, leaving no store behind.

#[path = "../../tests/common/mod.rs"]
mod common;
mod tools_common;

use std::path::{Path, PathBuf};

use clap::Parser;
use ginex::internals::format::pages::Dtype;
use ginex::internals::format::schema::{NodeType, Relation, Schema};

use common::{assert_same_files, f32_bytes, i64_bytes, npy_bytes, p};
use tools_common::{paper_feats, run_export, run_import, run_printed_reimport};

/// The reference document's MAG240M layout at small scale: 4 authors, 5
/// papers (features of dimension 3, labels, year, masks), 2 institutions;
/// `writes` and `cites` as space-delimited csv chunks, `affiliated_with`
/// as numpy chunks; every type in two chunks.
const MAG_META: &str = r#"{
  "graph_name": "mag-small",
  "node_type": ["author", "paper", "institution"],
  "num_nodes_per_chunk": [[2, 2], [3, 2], [1, 1]],
  "edge_type": ["author:writes:paper", "author:affiliated_with:institution", "paper:cites:paper"],
  "num_edges_per_chunk": [[3, 3], [2, 1], [2, 2]],
  "edges": {
    "author:writes:paper": {"format": {"name": "csv", "delimiter": " "},
                            "data": ["edges/writes-part1.csv", "edges/writes-part2.csv"]},
    "author:affiliated_with:institution": {"format": {"name": "numpy"},
                            "data": ["edges/affiliated_with-part1.npy", "edges/affiliated_with-part2.npy"]},
    "paper:cites:paper": {"format": {"name": "csv", "delimiter": " "},
                            "data": ["edges/cites-part1.csv", "edges/cites-part2.csv"]}
  },
  "node_data": {
    "paper": {
      "feat": {"format": {"name": "numpy"}, "data": ["node_data/paper-feat-part1.npy", "node_data/paper-feat-part2.npy"]},
      "label": {"format": {"name": "numpy"}, "data": ["node_data/paper-label-part1.npy", "node_data/paper-label-part2.npy"]},
      "year": {"format": {"name": "numpy"}, "data": ["node_data/paper-year-part1.npy", "node_data/paper-year-part2.npy"]},
      "train_mask": {"format": {"name": "numpy"}, "data": ["node_data/paper-train-part1.npy", "node_data/paper-train-part2.npy"]}
    }
  },
  "edge_data": {}
}"#;

fn write(path: PathBuf, bytes: impl AsRef<[u8]>) {
    std::fs::write(path, bytes).unwrap();
}

fn mag_dir(root: &Path) -> PathBuf {
    let d = root.join("mag");
    std::fs::create_dir_all(d.join("edges")).unwrap();
    std::fs::create_dir_all(d.join("node_data")).unwrap();
    // author -> paper (type-local ids).
    write(d.join("edges/writes-part1.csv"), "0 0\n0 1\n1 1\n");
    write(d.join("edges/writes-part2.csv"), "2 4\n3 4\n3 0\n");
    // author -> institution.
    let aff = |v: &[i64]| npy_bytes("<i8", &format!("({}, 2)", v.len() / 2), &i64_bytes(v));
    write(
        d.join("edges/affiliated_with-part1.npy"),
        aff(&[0, 0, 1, 1]),
    );
    write(d.join("edges/affiliated_with-part2.npy"), aff(&[3, 1]));
    // paper -> paper.
    write(d.join("edges/cites-part1.csv"), "1 0\n2 0\n");
    write(d.join("edges/cites-part2.csv"), "4 3\n0 4\n");
    let feats = |r: std::ops::Range<usize>| {
        let shape = format!("({}, 3)", r.len());
        npy_bytes("<f4", &shape, &f32_bytes(&paper_feats(r)))
    };
    write(d.join("node_data/paper-feat-part1.npy"), feats(0..3));
    write(d.join("node_data/paper-feat-part2.npy"), feats(3..5));
    let ints = |v: &[i64]| npy_bytes("<i8", &format!("({},)", v.len()), &i64_bytes(v));
    write(d.join("node_data/paper-label-part1.npy"), ints(&[1, 0, 2]));
    write(d.join("node_data/paper-label-part2.npy"), ints(&[1, 0]));
    write(
        d.join("node_data/paper-year-part1.npy"),
        ints(&[2019, 2020, 2021]),
    );
    write(
        d.join("node_data/paper-year-part2.npy"),
        ints(&[2019, 2018]),
    );
    let mask = |v: &[u8]| npy_bytes("|b1", &format!("({},)", v.len()), v);
    write(d.join("node_data/paper-train-part1.npy"), mask(&[1, 0, 1]));
    write(d.join("node_data/paper-train-part2.npy"), mask(&[0, 1]));
    write(d.join("metadata.json"), MAG_META);
    d
}

fn expected_schema(undirected: bool) -> Schema {
    let t = |name: &str, offset, count, dim| NodeType {
        name: name.into(),
        offset,
        count,
        dim,
        dtype: (dim > 0).then_some(Dtype::F32),
    };
    let r = |src, name: &str, dst, num_edges| Relation {
        src,
        name: name.into(),
        dst,
        num_edges,
    };
    let mut relations = vec![
        r(0, "writes", 1, 6),
        r(0, "affiliated_with", 2, 3),
        r(1, "cites", 1, if undirected { 8 } else { 4 }),
    ];
    if undirected {
        relations.push(r(1, "rev_writes", 0, 6));
        relations.push(r(2, "rev_affiliated_with", 0, 3));
    }
    Schema {
        node_types: vec![
            t("author", 0, 4, 0),
            t("paper", 4, 5, 3),
            t("institution", 9, 2, 0),
        ],
        relations,
    }
}

#[test]
fn mag_shaped_chunked_graph_imports_to_the_hand_built_store() {
    let dir = tempfile::tempdir().unwrap();
    let d = mag_dir(dir.path());
    let out = dir.path().join("store");
    run_import(&[
        "dgl",
        p(&d.join("metadata.json")),
        "--quiet",
        "--out",
        p(&out),
    ])
    .unwrap();
    let s = ginex::Store::open(&out).unwrap();
    assert_eq!((s.num_nodes(), s.num_edges()), (11, 13));
    assert_eq!(s.schema().unwrap(), &expected_schema(false));
    // Global ids: authors 0..4, papers 4..9, institutions 9..11.
    let lists: Vec<Vec<u64>> = (0..11).map(|v| s.in_neighbors(v).unwrap()).collect();
    let want: Vec<Vec<u64>> = vec![
        vec![],
        vec![],
        vec![],
        vec![],
        vec![0, 3, 5, 6], // paper 0: written by authors 0, 3; cited by papers 1, 2
        vec![0, 1],       // paper 1
        vec![],           // paper 2
        vec![8],          // paper 3: cited by paper 4
        vec![2, 3, 4],    // paper 4: written by 2, 3; cited by paper 0
        vec![0],          // institution 0
        vec![1, 3],       // institution 1
    ];
    assert_eq!(lists, want);
    // Features on papers only.
    assert_eq!(s.feature_rows(), 5);
    let mut x = vec![0f32; 5 * 3];
    s.read_feature_rows_f32(&[4, 5, 6, 7, 8], &mut x).unwrap();
    assert_eq!(x, paper_feats(0..5));
    let err = s.read_feature_rows_f32(&[2], &mut [0.0; 3]).unwrap_err();
    assert!(
        err.to_string()
            .contains("node 2 is of type author, which has no features"),
        "{err}"
    );
    // Labels on papers, none elsewhere; the mask offset to paper ids.
    let labels = s.labels().unwrap().unwrap();
    assert_eq!(labels, vec![-1, -1, -1, -1, 1, 0, 2, 1, 0, -1, -1]);
    assert_eq!(s.num_classes(), 3);
    assert_eq!(s.splits().unwrap().unwrap().train, vec![4, 6, 8]);
    s.verify().unwrap();
    // Sampling and gathering by id refuse the featureless types clearly.
    let Err(err) = ginex::internals::store::gather::Gatherer::new(&s, &Default::default()) else {
        panic!("a gatherer over a store with featureless types");
    };
    assert!(err.to_string().contains("have none"), "{err}");
}

#[test]
fn undirected_adds_reverse_relations_and_symmetrises_cites() {
    let dir = tempfile::tempdir().unwrap();
    let d = mag_dir(dir.path());
    let out = dir.path().join("store");
    run_import(&[
        "dgl",
        p(&d.join("metadata.json")),
        "--quiet",
        "--undirected",
        "--out",
        p(&out),
    ])
    .unwrap();
    let s = ginex::Store::open(&out).unwrap();
    assert_eq!(s.schema().unwrap(), &expected_schema(true));
    // Author 3 is now reached from papers 4 and 8 and institution 10.
    assert_eq!(s.in_neighbors(3).unwrap(), vec![4, 8, 10]);
    assert_eq!(s.in_neighbors(8).unwrap(), vec![2, 3, 4, 7]);
    s.verify().unwrap();
}

#[test]
fn bad_typed_inputs_are_refused_naming_the_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let d = mag_dir(dir.path());
    let meta = d.join("metadata.json");
    let out = dir.path().join("store");
    let cases: [(&str, &str, &str); 5] = [
        (
            "\"author:writes:paper\", \"author:affiliated",
            "\"author:writes:venue\", \"author:affiliated",
            "names node type \"venue\", which node_type does not declare",
        ),
        (
            "[[3, 3], [2, 1], [2, 2]]",
            "[[3, 3], [2, 1], [2]]",
            "num_edges_per_chunk",
        ),
        (
            "\"node_data\": {\n    \"paper\"",
            "\"node_data\": {\n    \"venue\": {},\n    \"paper\"",
            "node_data.venue",
        ),
        (
            "[[3, 3], [2, 1], [2, 2]]",
            "[[3, 4], [2, 1], [2, 2]]",
            "chunk holds 3 edges but num_edges_per_chunk",
        ),
        (
            "\"num_nodes_per_chunk\": [[2, 2], [3, 2]",
            "\"num_nodes_per_chunk\": [[2, 1], [3, 2]",
            "writes-part2.csv:2: edge source 3 is not an id of node type author (0..3)",
        ),
    ];
    for (from, to, want) in cases {
        assert!(MAG_META.contains(from), "{from}");
        std::fs::write(&meta, MAG_META.replacen(from, to, 1)).unwrap();
        let err = run_import(&["dgl", p(&meta), "--quiet", "--out", p(&out)])
            .expect_err(want)
            .to_string();
        assert!(err.contains(want), "expected {want:?} in: {err}");
        assert!(
            err.contains("metadata.json") || err.contains(".csv"),
            "{err}"
        );
        assert!(!out.exists(), "store left behind after: {err}");
    }
    // Two relations between the same ordered pair of types.
    std::fs::write(
        &meta,
        MAG_META.replace("paper:cites:paper", "author:reviews:paper"),
    )
    .unwrap();
    let err = run_import(&["dgl", p(&meta), "--quiet", "--out", p(&out)])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("edge_type[2]") && err.contains("like the relation \"writes\" does"),
        "{err}"
    );
    assert!(!out.exists());
}

// ---- ginex-export of typed stores (issue #31, step 6) ----

/// Imports the MAG-shaped fixture (with `extra` import flags) into `name`.
fn mag_store(root: &Path, name: &str, meta: &Path, extra: &[&str]) -> PathBuf {
    let out = root.join(name);
    let mut args = vec!["dgl", p(meta), "--quiet", "--out", p(&out)];
    args.extend_from_slice(extra);
    run_import(&args).unwrap();
    out
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn typed_store_exports_to_the_chunked_format_and_reimports_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let d = mag_dir(dir.path());
    let store = mag_store(dir.path(), "store", &d.join("metadata.json"), &[]);
    let out = dir.path().join("chunked");
    let report = run_export(&[
        "dgl",
        p(&store),
        "--out",
        p(&out),
        "--chunks",
        "2",
        "--graph-name",
        "mag-small",
        "--quiet",
    ]);
    assert!(
        report.contains("ginex-import dgl ") && report.contains("--num-classes 3"),
        "{report}"
    );
    let got = read_json(&out.join("metadata.json"));
    let chunks = |key: &str, ty: &str| {
        serde_json::json!({"format": {"name": "numpy"},
            "data": [format!("node_data/{ty}/{key}-0.npy"), format!("node_data/{ty}/{key}-1.npy")]})
    };
    let csv = |rel: &str| {
        serde_json::json!({"format": {"name": "csv", "delimiter": " "},
            "data": [format!("edge_index/{rel}-0.csv"), format!("edge_index/{rel}-1.csv")]})
    };
    let expected = serde_json::json!({
        "graph_name": "mag-small",
        "node_type": ["author", "paper", "institution"],
        "num_nodes_per_chunk": [[2, 2], [3, 2], [1, 1]],
        "edge_type": ["author:writes:paper", "author:affiliated_with:institution", "paper:cites:paper"],
        "num_edges_per_chunk": [[3, 3], [2, 1], [2, 2]],
        "edges": {
            "author:writes:paper": csv("author-writes-paper"),
            "author:affiliated_with:institution": csv("author-affiliated_with-institution"),
            "paper:cites:paper": csv("paper-cites-paper"),
        },
        "node_data": {
            "paper": {
                "feat": chunks("feat", "paper"),
                "label": chunks("label", "paper"),
                "train_mask": chunks("train_mask", "paper"),
                "val_mask": chunks("val_mask", "paper"),
                "test_mask": chunks("test_mask", "paper"),
            }
        },
        "edge_data": {},
    });
    for (key, want) in expected.as_object().unwrap() {
        assert_eq!(&got[key], want, "metadata.json field {key}");
    }
    assert_eq!(got.as_object().unwrap().len(), 8, "{got}");
    // Type-local ids, in the store's CSC order (by destination paper).
    let read = |rel: &str| String::from_utf8(std::fs::read(out.join(rel)).unwrap()).unwrap();
    assert_eq!(
        read("edge_index/author-writes-paper-0.csv"),
        "0 0\n3 0\n0 1\n"
    );
    assert_eq!(
        read("edge_index/author-writes-paper-1.csv"),
        "1 1\n2 4\n3 4\n"
    );
    assert_eq!(read("edge_index/paper-cites-paper-0.csv"), "1 0\n2 0\n");
    assert_eq!(read("edge_index/paper-cites-paper-1.csv"), "4 3\n0 4\n");
    assert_eq!(
        read("edge_index/author-affiliated_with-institution-1.csv"),
        "3 1\n"
    );
    let tail = |rel: &str, n: usize| {
        let b = std::fs::read(out.join(rel)).unwrap();
        b[b.len() - n..].to_vec()
    };
    assert_eq!(tail("node_data/paper/label-1.npy", 16), i64_bytes(&[1, 0]));
    assert_eq!(tail("node_data/paper/train_mask-0.npy", 3), [1, 0, 1]);
    assert_eq!(
        tail("node_data/paper/feat-1.npy", 24),
        f32_bytes(&paper_feats(3..5))
    );
    // The printed command rebuilds the same store.
    let rebuilt = dir.path().join("rebuilt");
    run_printed_reimport(&report, &rebuilt);
    assert_same_files(&store, &rebuilt, "typed dgl round trip");
}

#[test]
fn undirected_and_f16_typed_stores_with_original_ids_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let d = mag_dir(dir.path());
    // Original ids on authors (the other types keep their own ids).
    let ids = |v: &[i64]| npy_bytes("<i8", &format!("({},)", v.len()), &i64_bytes(v));
    write(d.join("node_data/author-id-part1.npy"), ids(&[70, 71]));
    write(d.join("node_data/author-id-part2.npy"), ids(&[72, 99]));
    let meta = d.join("with-ids.json");
    let text = MAG_META.replacen(
        "\"node_data\": {\n    \"paper\"",
        "\"node_data\": {\n    \"author\": {\"orig_id\": {\"format\": {\"name\": \"numpy\"}, \"data\": [\"node_data/author-id-part1.npy\", \"node_data/author-id-part2.npy\"]}},\n    \"paper\"",
        1,
    );
    assert_ne!(text, MAG_META);
    std::fs::write(&meta, text).unwrap();
    // A variant whose `cites` repeats an edge and has a self-loop.
    write(d.join("edges/cites-dups.csv"), "1 0\n1 0\n2 2\n");
    let dups = d.join("with-dups.json");
    let text = std::fs::read_to_string(&meta)
        .unwrap()
        .replacen("[[3, 3], [2, 1], [2, 2]]", "[[3, 3], [2, 1], [3, 2]]", 1)
        .replacen("edges/cites-part1.csv", "edges/cites-dups.csv", 1);
    std::fs::write(&dups, text).unwrap();
    let cases: [(&str, &[&str], &[&str]); 4] = [
        (
            "undirected",
            &["--undirected"],
            &["--chunks", "3", "--edge-format", "numpy"],
        ),
        ("dups", &[], &["--chunks", "2"]),
        ("f16", &["--dtype", "f16"], &["--chunks", "1"]),
        (
            "f16-kept",
            &["--dtype", "f16", "--undirected"],
            &["--chunks", "4", "--keep-f16"],
        ),
    ];
    for (name, import_flags, export_flags) in cases {
        let input = if name == "dups" { &dups } else { &meta };
        let store = mag_store(dir.path(), name, input, import_flags);
        assert!(ginex::Store::open(&store)
            .unwrap()
            .original_ids()
            .unwrap()
            .is_some());
        let out = dir.path().join(format!("{name}-chunked"));
        let mut args = vec!["dgl", p(&store), "--out", p(&out), "--quiet"];
        args.extend_from_slice(export_flags);
        let report = run_export(&args);
        let got = read_json(&out.join("metadata.json"));
        if name == "dups" {
            assert!(
                report.contains("1 duplicate edges and 1 self-loops"),
                "{report}"
            );
            let cites = std::fs::read_to_string(out.join("edge_index/paper-cites-paper-0.csv"));
            assert_eq!(cites.unwrap(), "1 0\n1 0\n2 2\n");
        }
        if import_flags.contains(&"--undirected") {
            assert_eq!(
                got["edge_type"],
                serde_json::json!([
                    "author:writes:paper",
                    "author:affiliated_with:institution",
                    "paper:cites:paper",
                    "paper:rev_writes:author",
                    "institution:rev_affiliated_with:author"
                ]),
                "{name}"
            );
        }
        // orig_id on every type; the author ids as imported.
        for ty in ["author", "paper", "institution"] {
            assert!(got["node_data"][ty]["orig_id"].is_object(), "{name}: {ty}");
        }
        assert!(got["node_data"]["author"].get("feat").is_none(), "{name}");
        let rebuilt = dir.path().join(format!("{name}-rebuilt"));
        run_printed_reimport(&report, &rebuilt);
        assert_same_files(&store, &rebuilt, name);
    }
}

#[test]
fn typed_store_exports_a_heterogeneous_graphbolt_dataset() {
    let dir = tempfile::tempdir().unwrap();
    let d = mag_dir(dir.path());
    let store = mag_store(dir.path(), "store", &d.join("metadata.json"), &[]);
    let out = dir.path().join("gb");
    let report = run_export(&[
        "graphbolt",
        p(&store),
        "--out",
        p(&out),
        "--dataset-name",
        "mag-small",
        "--quiet",
    ]);
    assert!(report.contains("ginex-export dgl"), "{report}");
    let yaml = std::fs::read_to_string(out.join("metadata.yaml")).unwrap();
    let set = |name: &str| {
        format!(
            r#"      - type: "paper"
        data:
          - name: seed_nodes
            format: numpy
            in_memory: true
            path: set/paper-{name}_seed_nodes.npy
          - name: labels
            format: numpy
            in_memory: true
            path: set/paper-{name}_labels.npy
"#
        )
    };
    let expected = format!(
        r#"dataset_name: "mag-small"
graph:
  nodes:
    - type: "author"
      num: 4
    - type: "paper"
      num: 5
    - type: "institution"
      num: 2
  edges:
    - type: "author:writes:paper"
      format: numpy
      path: edges/author-writes-paper.npy
    - type: "author:affiliated_with:institution"
      format: numpy
      path: edges/author-affiliated_with-institution.npy
    - type: "paper:cites:paper"
      format: numpy
      path: edges/paper-cites-paper.npy
feature_data:
  - domain: node
    type: "paper"
    name: feat
    format: numpy
    in_memory: false
    path: data/paper-feat.npy
  - domain: node
    type: "paper"
    name: label
    format: numpy
    in_memory: false
    path: data/paper-label.npy
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
    let tail = |rel: &str, n: usize| {
        let b = std::fs::read(out.join(rel)).unwrap();
        b[b.len() - n..].to_vec()
    };
    // (2, E): type-local sources, then destinations.
    assert_eq!(
        tail("edges/author-writes-paper.npy", 96),
        i64_bytes(&[0, 3, 0, 1, 2, 3, 0, 0, 1, 1, 4, 4])
    );
    assert_eq!(
        tail("edges/paper-cites-paper.npy", 64),
        i64_bytes(&[1, 2, 4, 0, 0, 0, 3, 4])
    );
    // Papers 0, 2, 4 (global 4, 6, 8) train, with their labels.
    assert_eq!(
        tail("set/paper-train_seed_nodes.npy", 24),
        i64_bytes(&[0, 2, 4])
    );
    assert_eq!(
        tail("set/paper-train_labels.npy", 24),
        i64_bytes(&[1, 2, 0])
    );
    let empty = std::fs::read(out.join("set/paper-test_seed_nodes.npy")).unwrap();
    assert!(String::from_utf8_lossy(&empty).contains("'shape': (0,)"));
    assert_eq!(
        tail("data/paper-feat.npy", 60),
        f32_bytes(&paper_feats(0..5))
    );

    // csv edges: `src,dst` lines of type-local ids.
    let out = dir.path().join("gb-csv");
    run_export(&[
        "graphbolt",
        p(&store),
        "--out",
        p(&out),
        "--edge-format",
        "csv",
        "--quiet",
    ]);
    assert_eq!(
        std::fs::read_to_string(out.join("edges/author-affiliated_with-institution.csv")).unwrap(),
        "0,0\n1,1\n3,1\n"
    );
}

#[test]
fn typed_export_reads_lists_across_many_small_segments() {
    use ginex::internals::export::dgl::{export_dgl, DglExport};
    use ginex::internals::export::graphbolt::{export_graphbolt, GraphBoltExport};
    use ginex::internals::import::dgl::{import_dgl, DglImport};
    use ginex::internals::import::pipeline::CommonOptions;
    // 16-byte segments: a few lists each; the first of the directed
    // store holds authors 0..4 and paper 4, so a type's range starts
    // inside a segment.
    let import = |meta: PathBuf, out: &Path, undirected: bool| {
        let mut common = CommonOptions::new(out.to_path_buf());
        common.segment_bytes = 16;
        common.undirected = undirected;
        import_dgl(&DglImport {
            metadata: meta,
            feat_key: "feat".into(),
            label_key: "label".into(),
            mask_keys: ["train_mask".into(), "val_mask".into(), "test_mask".into()],
            orig_id_key: Some("orig_id".into()),
            num_classes: Some(3),
            common,
        })
        .unwrap();
    };
    let dir = tempfile::tempdir().unwrap();
    let d = mag_dir(dir.path());
    for undirected in [false, true] {
        let store = dir.path().join(format!("store-{undirected}"));
        import(d.join("metadata.json"), &store, undirected);
        let segs = ginex::Store::open(&store).unwrap().segments().to_vec();
        assert!(segs.len() > 2, "{segs:?}");
        let out = dir.path().join(format!("chunked-{undirected}"));
        let mut opts = DglExport::new(&store, &out);
        opts.chunks = 2;
        export_dgl(&opts).unwrap();
        let rebuilt = dir.path().join(format!("rebuilt-{undirected}"));
        import(out.join("metadata.json"), &rebuilt, false);
        assert_same_files(&store, &rebuilt, &format!("undirected {undirected}"));
        // GraphBolt's two passes over each type's lists agree with the csv.
        let gb = dir.path().join(format!("gb-{undirected}"));
        export_graphbolt(&GraphBoltExport::new(&store, &gb)).unwrap();
        let edges = std::fs::read(gb.join("edges/paper-cites-paper.npy")).unwrap();
        let n = if undirected { 8 } else { 4 };
        let ids: Vec<i64> = edges[edges.len() - 16 * n..]
            .chunks(8)
            .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let csv = std::fs::read_to_string(out.join("edge_index/paper-cites-paper-0.csv")).unwrap()
            + &std::fs::read_to_string(out.join("edge_index/paper-cites-paper-1.csv")).unwrap();
        let pairs: Vec<String> = (0..n)
            .map(|i| format!("{} {}\n", ids[i], ids[n + i]))
            .collect();
        assert_eq!(pairs.concat(), csv, "undirected {undirected}");
    }
}

fn ginex(args: &[&str]) -> ginex::Result<String> {
    use ginex_cli::commands::{run, GinexCli};
    let cli = GinexCli::try_parse_from(std::iter::once(&"ginex").chain(args))
        .map_err(|e| ginex::Error::invalid_argument(e.to_string()))?;
    let mut out = Vec::new();
    run(cli, &mut out)?;
    Ok(String::from_utf8(out).unwrap())
}

/// The runtime files a kept run left in `runs` (one run directory).
fn kept_samples(runs: &Path) -> Vec<PathBuf> {
    let run = std::fs::read_dir(runs)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut files: Vec<PathBuf> = std::fs::read_dir(run)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "samples"))
        .collect();
    files.sort();
    files
}

/// `--fanouts` per relation through the CLI: `ginex sample` draws them,
/// `ginex epoch` stamps them into v1.4 runtime files (one list for all
/// keeps v1.3), and unknown relations, untyped stores and malformed
/// lists are refused naming the flag.
#[test]
fn per_relation_fanouts_on_the_command_line() {
    use ginex::internals::format::header::FileKind;
    use ginex::internals::format::version::{V1_3, V1_4};
    use ginex::internals::inspect::runfile::RunReader;
    let dir = tempfile::tempdir().unwrap();
    common::typed_store(dir.path(), 3000);
    let store = dir.path().join("typed-af");
    let s = p(&store);
    let fanouts = "cites=2:1,writes=1:0,*=1:1";
    let out = ginex(&["sample", s, "--fanouts", fanouts, "--batch-size", "20"]).unwrap();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["fanouts"], fanouts);
    assert_eq!(v["hops"].as_array().unwrap().len(), 2);

    for (f, version, shown) in [
        (
            fanouts,
            V1_4,
            "cites=2:1,writes=1:0,topic_of=1:1,written_by=1:1,has_topic=1:1",
        ),
        ("3,2", V1_3, "3,2"),
    ] {
        let runs = dir.path().join(format!("runs-{version}"));
        let args = [
            "epoch",
            s,
            "--fanouts",
            f,
            "--batch-size",
            "40",
            "--superbatch",
            "5",
            "--feature-cache-bytes",
            "20000",
            "--keep-runs",
            "--run-dir",
            p(&runs),
        ];
        ginex(&args).unwrap();
        let files = kept_samples(&runs);
        assert!(files.len() >= 2, "{files:?}");
        for file in files {
            let r = RunReader::open(&file, FileKind::RunSamples).unwrap();
            assert_eq!(r.header().version, version, "{}", file.display());
            assert_eq!(r.stamp().describe_fanouts(), shown);
        }
    }

    let err = ginex(&["epoch", s, "--fanouts", "cites=2,citez=1"])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("--fanouts \"cites=2,citez=1\"")
            && err.contains("no relation `citez`")
            && err.contains("paper:cites:paper, author:writes:paper"),
        "{err}"
    );
    let untyped = dir.path().join("plain");
    let gen = [
        "gen",
        "--quiet",
        "--nodes",
        "500",
        "--dim",
        "4",
        "--out",
        p(&untyped),
    ];
    ginex(&gen).unwrap();
    let err = ginex(&["epoch", p(&untyped), "--fanouts", "cites=2"])
        .unwrap_err()
        .to_string();
    assert!(err.contains("need a typed store"), "{err}");
    for (f, want) in [
        (
            "cites=2:1,writes=1",
            "writes gives 1 hops but cites gives 2",
        ),
        ("cites=2,7", "`7` names no relation"),
        ("cites=2:x", "expected counts separated by `:`"),
    ] {
        for cmd in [&["epoch"][..], &["sample"], &["bench", "changeset"]] {
            let args: Vec<&str> = cmd.iter().copied().chain([s, "--fanouts", f]).collect();
            let err = ginex(&args).unwrap_err().to_string();
            assert!(
                err.contains("--fanouts") && err.contains(want),
                "{cmd:?} {f}: {err}"
            );
        }
    }
}

// ---- edge splits of one relation (#40) ----

/// `ginex-import dgl --valid-edges/--test-edges --target-relation` on the
/// MAG-shaped fixture: the split files hold the relation's type-local
/// ids; only its held-out edges leave the CSC (and, undirected, their
/// reverse `rev_writes` edges), every other relation stays whole; the
/// artifact records the relation (a v1.9 file), `ginex-dump` shows and
/// verifies it, and a typed export writes it back in type-local ids with
/// the flags that re-import the same splits. Bad input is refused naming
/// the file, the row and the reason, and no store is left behind.
// One scenario read top to bottom (the 150-line limit is on the tools' code).
#[allow(clippy::too_many_lines)]
#[test]
fn an_edge_split_of_one_relation_holds_out_only_its_edges() {
    use ginex::internals::format::edge_splits::EdgeSplits;
    use ginex::internals::format::header::FileHeader;
    let dir = tempfile::tempdir().unwrap();
    let d = mag_dir(dir.path());
    let meta = d.join("metadata.json");
    // writes (type-local): a0-p0 a0-p1 a1-p1 a2-p4 a3-p4 a3-p0; papers start at 4.
    write(d.join("valid.txt"), "1 1\n");
    write(d.join("test.txt"), "3 0\n");
    let negs = |v: &[i64]| npy_bytes("<i8", &format!("({}, 1)", v.len()), &i64_bytes(v));
    write(d.join("valid-neg.npy"), negs(&[2]));
    write(d.join("test-neg.npy"), negs(&[3]));
    let files = |valid: &str| -> Vec<String> {
        [
            "--valid-edges",
            p(&d.join(valid)),
            "--test-edges",
            p(&d.join("test.txt")),
            "--valid-negatives",
            p(&d.join("valid-neg.npy")),
            "--test-negatives",
            p(&d.join("test-neg.npy")),
        ]
        .map(String::from)
        .to_vec()
    };
    let import = |name: &str, extra: &[String]| {
        let out = dir.path().join(name);
        let mut args = vec!["dgl", p(&meta), "--quiet", "--out", p(&out)];
        args.extend(extra.iter().map(String::as_str));
        (run_import(&args), out)
    };
    let mut args = files("valid.txt");
    args.extend(["--target-relation".into(), "author:writes:paper".into()]);
    for undirected in [false, true] {
        let mut args = args.clone();
        if undirected {
            args.push("--undirected".into());
        }
        let name = if undirected { "rel-u" } else { "rel" };
        let (r, out) = import(name, &args);
        r.unwrap();
        let store = ginex::Store::open(&out).unwrap();
        let s = store.edge_splits().unwrap().unwrap();
        assert_eq!(s.relation, Some(0));
        assert_eq!(
            (s.valid.src.clone(), s.valid.dst.clone()),
            (vec![1], vec![5])
        );
        assert_eq!((s.test.src.clone(), s.test.dst.clone()), (vec![3], vec![4]));
        assert_eq!(s.valid.negatives.as_ref().unwrap().dst, [6]);
        assert_eq!(s.test.negatives.as_ref().unwrap().dst, [7]);
        let schema = store.schema().unwrap();
        let counts: Vec<(String, u64)> = schema
            .relations
            .iter()
            .map(|r| (schema.canonical(r), r.num_edges))
            .collect();
        let want: &[(&str, u64)] = if undirected {
            &[
                ("author:writes:paper", 4),
                ("author:affiliated_with:institution", 3),
                ("paper:cites:paper", 8),
                ("paper:rev_writes:author", 4),
                ("institution:rev_affiliated_with:author", 3),
            ]
        } else {
            &[
                ("author:writes:paper", 4),
                ("author:affiliated_with:institution", 3),
                ("paper:cites:paper", 4),
            ]
        };
        let want: Vec<(String, u64)> = want.iter().map(|(n, c)| (n.to_string(), *c)).collect();
        assert_eq!(counts, want);
        // The held-out edges (and their reverses) are not in the CSC.
        use ginex::internals::sample::source::{InMemoryTopology, NeighborSource};
        let topo = InMemoryTopology::load(&store).unwrap();
        let mut lists = std::collections::HashMap::new();
        topo.with_lists(&[4, 5, 1, 3], &mut |i, l| {
            lists.insert([4u64, 5, 1, 3][i], l.to_vec());
        })
        .unwrap();
        assert!(
            !lists[&5].contains(&1) && !lists[&4].contains(&3),
            "{lists:?}"
        );
        assert!(lists[&4].contains(&0), "{lists:?}"); // a0-p0 stays
        if undirected {
            assert!(
                !lists[&1].contains(&5) && !lists[&3].contains(&4),
                "{lists:?}"
            );
            assert!(lists[&3].contains(&8), "{lists:?}"); // p4 -> a3 stays
        }
        // A v1.9 file; shown and verified by ginex-dump.
        let bytes = std::fs::read(out.join("edge_splits")).unwrap();
        let h = FileHeader::decode(&bytes[..64], &out).unwrap();
        assert_eq!((h.version.major, h.version.minor), (1, 9));
        let summary = tools_common::run_dump(&[p(&out)]);
        assert!(summary.contains("of author:writes:paper;"), "{summary}");
        tools_common::run_dump(&["--verify", p(&out)]);
        let json = tools_common::run_dump(&["--json", p(&out.join("edge_splits"))]);
        assert!(json.contains("\"relation\":0"), "{json}");
        // A typed export writes the splits back in type-local ids; its
        // re-import gives the same splits.
        let exp = dir.path().join(format!("{name}-exp"));
        let report = run_export(&["dgl", p(&out), "--out", p(&exp), "--quiet"]);
        assert!(
            report.contains("--target-relation author:writes:paper"),
            "{report}"
        );
        let again = dir.path().join(format!("{name}-again"));
        run_printed_reimport(&report, &again);
        let back: EdgeSplits = ginex::Store::open(&again)
            .unwrap()
            .edge_splits()
            .unwrap()
            .unwrap();
        assert_eq!(back, s);
    }

    // Bad input: nothing is written.
    let refused = |name: &str, extra: Vec<String>, want: &[&str]| {
        let (r, out) = import(name, &extra);
        let err = r.unwrap_err().to_string();
        for w in want {
            assert!(err.contains(w), "{name}: {err}");
        }
        assert!(!out.exists(), "{name}");
    };
    let mut unknown = files("valid.txt");
    unknown.extend(["--target-relation".into(), "author:reads:paper".into()]);
    refused(
        "unknown",
        unknown,
        &[
            "author:reads:paper",
            "no such relation",
            "author:writes:paper",
        ],
    );
    refused(
        "unnamed",
        files("valid.txt"),
        &["give --target-relation", "paper:cites:paper"],
    );
    write(d.join("valid-range.txt"), "1 7\n");
    let mut range = files("valid-range.txt");
    range.extend(["--target-relation".into(), "author:writes:paper".into()]);
    refused(
        "range",
        range,
        &["valid-range.txt:1:", "7 is not an id of node type paper"],
    );
    write(d.join("valid-absent.txt"), "2 2\n");
    let mut absent = files("valid-absent.txt");
    absent.extend(["--target-relation".into(), "author:writes:paper".into()]);
    refused(
        "absent",
        absent,
        &["valid-absent.txt:1:", "2 -> 6 is not an edge of the graph"],
    );
    // A homogeneous graph has no relations; the flag needs a split.
    let edges = dir.path().join("edges.txt");
    write(edges.clone(), "0 1\n1 2\n2 3\n3 0\n0 2\n1 3\n");
    let homo = dir.path().join("homo");
    let err = run_import(&[
        "files",
        "--edges",
        p(&edges),
        "--edge-split",
        "0.5,0.25,0.25",
        "--target-relation",
        "author:writes:paper",
        "--quiet",
        "--out",
        p(&homo),
    ])
    .unwrap_err()
    .to_string();
    assert!(err.contains("homogeneous"), "{err}");
    assert!(!homo.exists());
    let (r, out) = import(
        "bare",
        &["--target-relation".into(), "author:writes:paper".into()],
    );
    let err = r.unwrap_err().to_string();
    assert!(
        err.contains("names the relation an edge split is of"),
        "{err}"
    );
    assert!(!out.exists());
}
