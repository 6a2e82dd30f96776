//! Typed (heterogeneous) stores: `ginex-import dgl` of a small chunked
//! graph shaped like the format's MAG240M example equals a hand-built
//! expectation, and bad typed inputs are refused naming the file and the
//! field, leaving no store behind.

mod common;

use std::path::{Path, PathBuf};

use clap::Parser;
use ginex::format::schema::{NodeType, Relation, Schema};
use ginex_cli::import::{run as import_run, ImportCli};

use common::p;

fn run_import(args: &[&str]) -> ginex::Result<String> {
    let cli = ImportCli::try_parse_from(std::iter::once(&"ginex-import").chain(args)).unwrap();
    let mut out = Vec::new();
    import_run(&cli, &mut out)?;
    Ok(String::from_utf8(out).unwrap())
}

fn npy_bytes(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    let mut h = format!("{dict:<117}\n").into_bytes();
    let mut b = b"\x93NUMPY\x01\x00".to_vec();
    b.extend((h.len() as u16).to_le_bytes());
    b.append(&mut h);
    b.extend_from_slice(data);
    b
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn i64_bytes(v: &[i64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

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

/// Paper `i` has features `[i, 10 i, -i]`.
fn paper_feats(range: std::ops::Range<usize>) -> Vec<f32> {
    range
        .flat_map(|i| [i as f32, 10.0 * i as f32, -(i as f32)])
        .collect()
}

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
    let Err(err) = ginex::store::gather::Gatherer::new(&s, &Default::default()) else {
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
