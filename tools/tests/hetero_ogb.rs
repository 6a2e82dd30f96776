//! `ginex-import ogb` of a heterogeneous dataset (ogbn-mag) at small
//! scale: the import equals a hand-built typed store, inverse edges add
//! reverse relations, each type keeps its own feature dimension, and bad
//! inputs are refused naming the file.

#[path = "../../tests/common/mod.rs"]
mod common;
mod tools_common;

use std::path::{Path, PathBuf};

use ginex::internals::format::pages::Dtype;
use ginex::internals::format::schema::{NodeType, Relation, Schema};

use common::{assert_same_files, p};
use tools_common::{paper_feats, run_export, run_import, run_printed_reimport};

/// ogbn-mag's raw layout at small scale, as OGB unpacks it: 4 authors, 3
/// fields of study, 2 institutions, 5 papers. Papers (dimension 3, row i
/// = `[i, 10 i, -i]`) and authors (`[100 + a, 0, 1]`) have features,
/// papers labels and the `time` split. `num-node-dict` and the triplets
/// are deliberately not in name order.
fn ogb_mag_dir(root: &Path) -> PathBuf {
    use common::gz;
    let d = root.join("ogbn_mag");
    let raw = d.join("raw");
    let mkdir = |p: PathBuf| {
        std::fs::create_dir_all(&p).unwrap();
        p
    };
    gz(
        &mkdir(raw.clone()).join("num-node-dict.csv.gz"),
        "paper,author,institution,field_of_study\n5,4,2,3\n",
    );
    gz(
        &raw.join("triplet-type-list.csv.gz"),
        "paper,cites,paper\nauthor,writes,paper\nauthor,affiliated_with,institution\npaper,has_topic,field_of_study\n",
    );
    let rels: [(&str, &str, usize); 4] = [
        ("paper___cites___paper", "1,0\n2,0\n4,3\n0,4\n", 4),
        (
            "author___writes___paper",
            "0,0\n0,1\n1,1\n2,4\n3,4\n3,0\n",
            6,
        ),
        (
            "author___affiliated_with___institution",
            "0,0\n1,1\n3,1\n",
            3,
        ),
        ("paper___has_topic___field_of_study", "0,0\n1,2\n4,2\n", 3),
    ];
    for (dir, edges, count) in rels {
        let r = mkdir(raw.join("relations").join(dir));
        gz(&r.join("edge.csv.gz"), edges);
        gz(&r.join("num-edge-list.csv.gz"), &format!("{count}\n"));
        gz(&r.join("edge_reltype.csv.gz"), &"0\n".repeat(count));
    }
    let paper_rows: String = (0..5)
        .map(|i| format!("{}.0,{}.0,-{}.0\n", i, 10 * i, i))
        .collect();
    gz(
        &mkdir(raw.join("node-feat/paper")).join("node-feat.csv.gz"),
        &paper_rows,
    );
    gz(
        &raw.join("node-feat/paper/node_year.csv.gz"),
        "2019\n2020\n2021\n2019\n2018\n",
    );
    let author_rows: String = (0..4).map(|a| format!("{},0,1\n", 100 + a)).collect();
    gz(
        &mkdir(raw.join("node-feat/author")).join("node-feat.csv.gz"),
        &author_rows,
    );
    gz(
        &raw.join("nodetype-has-label.csv.gz"),
        "author,field_of_study,institution,paper\nFalse,False,False,True\n",
    );
    gz(
        &mkdir(raw.join("node-label/paper")).join("node-label.csv.gz"),
        "1\n0\n2\n1\n0\n",
    );
    let split = mkdir(d.join("split/time/paper"));
    gz(
        &d.join("split/time/nodetype-has-split.csv.gz"),
        "paper\nTrue\n",
    );
    gz(&split.join("train.csv.gz"), "0\n2\n");
    gz(&split.join("valid.csv.gz"), "4\n");
    gz(&split.join("test.csv.gz"), "1\n3\n");
    d
}

/// The typed store `ogb_mag_dir` must import to: types in name order
/// (authors 0..4, fields 4..7, institutions 7..9, papers 9..14), relations
/// in `(src, rel, dst)` order, reverse relations after them.
fn ogb_mag_schema(undirected: bool) -> Schema {
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
        r(0, "affiliated_with", 2, 3),
        r(0, "writes", 3, 6),
        r(3, "cites", 3, if undirected { 8 } else { 4 }),
        r(3, "has_topic", 1, 3),
    ];
    if undirected {
        relations.push(r(2, "rev_affiliated_with", 0, 3));
        relations.push(r(3, "rev_writes", 0, 6));
        relations.push(r(1, "rev_has_topic", 3, 3));
    }
    Schema {
        node_types: vec![
            t("author", 0, 4, 3),
            t("field_of_study", 4, 3, 0),
            t("institution", 7, 2, 0),
            t("paper", 9, 5, 3),
        ],
        relations,
    }
}

/// In-neighbours of every global id of the directed import, by hand.
fn ogb_mag_in_lists() -> Vec<Vec<u64>> {
    vec![
        vec![], // authors 0..4
        vec![],
        vec![],
        vec![],
        vec![9],            // field 0: paper 0 has_topic
        vec![],             // field 1
        vec![10, 13],       // field 2: papers 1, 4
        vec![0],            // institution 0: author 0
        vec![1, 3],         // institution 1: authors 1, 3
        vec![0, 3, 10, 11], // paper 0: written by authors 0, 3; cited by papers 1, 2
        vec![0, 1],         // paper 1: written by authors 0, 1
        vec![],             // paper 2
        vec![13],           // paper 3: cited by paper 4
        vec![2, 3, 9],      // paper 4: written by authors 2, 3; cited by paper 0
    ]
}

fn import_ogb_mag(d: &Path, out: &Path, extra: &[&str]) -> ginex::Result<String> {
    let mut args = vec!["ogb", p(d), "--quiet", "--out", p(out)];
    args.extend_from_slice(extra);
    run_import(&args)
}

#[test]
fn ogb_mag_imports_to_the_hand_built_typed_store() {
    let dir = tempfile::tempdir().unwrap();
    let d = ogb_mag_dir(dir.path());
    let out = dir.path().join("store");
    import_ogb_mag(&d, &out, &[]).unwrap();
    let s = ginex::Store::open(&out).unwrap();
    s.verify().unwrap();
    assert_eq!((s.num_nodes(), s.num_edges()), (14, 16));
    assert_eq!(s.schema().unwrap(), &ogb_mag_schema(false));
    let lists: Vec<Vec<u64>> = (0..14).map(|v| s.in_neighbors(v).unwrap()).collect();
    assert_eq!(lists, ogb_mag_in_lists());
    // Feature rows: authors (rows 0..4), then papers (rows 4..9).
    assert_eq!(s.feature_rows(), 9);
    let ids: Vec<u64> = (0..4).chain(9..14).collect();
    let mut x = vec![0f32; 9 * 3];
    s.read_feature_rows_f32(&ids, &mut x).unwrap();
    let authors: Vec<f32> = (0..4).flat_map(|a| [100.0 + a as f32, 0.0, 1.0]).collect();
    assert_eq!(x, [authors, paper_feats(0..5)].concat());
    let err = s.read_feature_rows_f32(&[5], &mut [0.0; 3]).unwrap_err();
    assert!(
        err.to_string().contains("node 5 is of type field_of_study"),
        "{err}"
    );
    // Labels on papers only; the split's paper ids made global.
    assert_eq!(
        s.labels().unwrap().unwrap(),
        [vec![-1; 9], vec![1, 0, 2, 1, 0]].concat()
    );
    assert_eq!(s.num_classes(), 3);
    let sp = s.splits().unwrap().unwrap();
    assert_eq!(
        (sp.train, sp.valid, sp.test),
        (vec![9, 11], vec![13], vec![10, 12])
    );
    // Each node's original id is its id within its type.
    assert_eq!(
        s.original_ids().unwrap().unwrap(),
        vec![0, 1, 2, 3, 0, 1, 2, 0, 1, 0, 1, 2, 3, 4]
    );
    // The store goes out to DGL's chunked format and back unchanged.
    let chunked = dir.path().join("chunked");
    let report = run_export(&["dgl", p(&out), "--out", p(&chunked), "--quiet"]);
    let rebuilt = dir.path().join("rebuilt");
    run_printed_reimport(&report, &rebuilt);
    assert_same_files(&out, &rebuilt, "ogbn-mag -> dgl -> store");
}

#[test]
fn ogb_mag_with_inverse_edges_adds_reverse_relations() {
    let dir = tempfile::tempdir().unwrap();
    let d = ogb_mag_dir(dir.path());
    let out = dir.path().join("store");
    import_ogb_mag(&d, &out, &["--add-inverse-edges", "yes"]).unwrap();
    let s = ginex::Store::open(&out).unwrap();
    s.verify().unwrap();
    assert_eq!(s.num_edges(), 32);
    assert_eq!(s.schema().unwrap(), &ogb_mag_schema(true));
    // Every edge u -> v of the directed store, both ways.
    let directed = ogb_mag_in_lists();
    for v in 0..14u64 {
        let mut want = directed[v as usize].clone();
        for (u, list) in directed.iter().enumerate() {
            if list.contains(&v) {
                want.push(u as u64);
            }
        }
        want.sort_unstable();
        assert_eq!(s.in_neighbors(v).unwrap(), want, "in-neighbours of {v}");
    }
    // `--undirected` is the same thing.
    let same = dir.path().join("undirected");
    import_ogb_mag(&d, &same, &["--undirected"]).unwrap();
    assert_same_files(&out, &same, "--undirected vs --add-inverse-edges yes");
}

/// Authors with features of their own dimension (2, beside the papers'
/// 3): each type keeps its dimension; rows read widened to 3 columns.
#[test]
fn ogb_mag_types_keep_their_own_feature_dimensions() {
    let dir = tempfile::tempdir().unwrap();
    let d = ogb_mag_dir(dir.path());
    common::gz(
        &d.join("raw/node-feat/author/node-feat.csv.gz"),
        "0,0.5\n1,0.5\n2,0.5\n3,0.5\n",
    );
    let out = dir.path().join("store");
    import_ogb_mag(&d, &out, &[]).unwrap();
    let s = ginex::Store::open(&out).unwrap();
    let schema = s.schema().unwrap();
    let dims: Vec<u32> = schema.node_types.iter().map(|t| t.dim).collect();
    assert_eq!(dims, vec![2, 0, 0, 3], "author, field, institution, paper");
    assert_eq!(s.feature_dim(), 3);
    let mut x = vec![9f32; 6];
    s.read_feature_rows_f32(&[1, 3], &mut x).unwrap();
    assert_eq!(x, vec![1.0, 0.5, 0.0, 3.0, 0.5, 0.0]);
    s.verify().unwrap();
}

// One scenario per bad input, read top to bottom (STYLE.md's limit is on
// the library's and the tools' code, not on an integration test).
#[allow(clippy::too_many_lines)]
#[test]
fn bad_ogb_mag_inputs_are_refused_naming_the_file() {
    use common::gz;
    type Mutate = fn(&Path);
    let cases: Vec<(Mutate, &[&str])> = vec![
        (
            |d| {
                gz(
                    &d.join("raw/triplet-type-list.csv.gz"),
                    "paper,cites,paper\nauthor,writes,paper\nauthor,affiliated_with,institution\npaper,has_topic,venue\n",
                )
            },
            &["triplet-type-list.csv.gz:4", "names node type \"venue\""],
        ),
        (
            |d| {
                gz(
                    &d.join("raw/relations/paper___cites___paper/edge.csv.gz"),
                    "1,0\n2,0\n5,3\n0,4\n",
                )
            },
            &[
                "paper___cites___paper/edge.csv.gz:3",
                "edge source 5 is not an id of node type paper (0..5)",
            ],
        ),
        (
            |d| gz(&d.join("split/time/paper/train.csv.gz"), "0\n7\n"),
            &[
                "split/time/paper/train.csv.gz:2",
                "id 7 is not an id of node type paper (0..5)",
            ],
        ),
        (
            |d| {
                gz(
                    &d.join("raw/relations/author___writes___paper/num-edge-list.csv.gz"),
                    "5\n",
                )
            },
            &[
                "author___writes___paper/edge.csv.gz",
                "6 edges, but",
                "num-edge-list.csv.gz says 5",
            ],
        ),
        (
            |d| {
                gz(
                    &d.join("raw/node-feat/paper/node-feat.csv.gz"),
                    "0,0,0\n1,10,-1\n2,20,-2\n3,30,-3\n",
                )
            },
            &[
                "node-feat/paper/node-feat.csv.gz",
                "4 feature rows for the 5 nodes of type paper",
            ],
        ),
        (
            |d| {
                gz(
                    &d.join("raw/node-label/paper/node-label.csv.gz"),
                    "1\n0\n2\n",
                )
            },
            &[
                "node-label/paper/node-label.csv.gz",
                "3 labels for the 5 nodes of type paper",
            ],
        ),
        (
            |d| {
                gz(
                    &d.join("raw/node-label/paper/node-label.csv.gz"),
                    "1,0\n0,1\n2,2\n1,1\n0,0\n",
                )
            },
            &["node-label.csv.gz:1", "2 labels in a row; multi-label"],
        ),
        (
            |d| {
                std::fs::remove_file(d.join("raw/relations/author___writes___paper/edge.csv.gz"))
                    .unwrap()
            },
            &[
                "author___writes___paper/edge.csv.gz",
                "missing: the edges of author:writes:paper",
            ],
        ),
        (
            |d| {
                gz(
                    &d.join("raw/nodetype-has-label.csv.gz"),
                    "author,field_of_study,institution,paper\nTrue,False,False,True\n",
                )
            },
            &["node-label/author/node-label.csv.gz", "missing"],
        ),
        (
            |d| {
                gz(
                    &d.join("raw/num-node-dict.csv.gz"),
                    "paper,author,institution\n5,4,2\n",
                )
            },
            &[
                "triplet-type-list.csv.gz:4",
                "names node type \"field_of_study\"",
            ],
        ),
        (
            |d| {
                gz(
                    &d.join("raw/num-node-dict.csv.gz"),
                    "paper,author,institution,field_of_study\n5,4,2\n",
                )
            },
            &["num-node-dict.csv.gz:2", "3 values for the 4 node types"],
        ),
        (
            |d| std::fs::create_dir_all(d.join("raw/node-label/venue")).unwrap(),
            &["node-label/venue", "data for node type \"venue\""],
        ),
        (
            |d| {
                gz(
                    &d.join("raw/triplet-type-list.csv.gz"),
                    "paper,cites,paper\nauthor,writes,paper\nauthor,reviews,paper\n",
                )
            },
            // `reviews` sorts first, so `writes` (line 2) is the second.
            &[
                "triplet-type-list.csv.gz:2",
                "like the relation \"reviews\" does",
            ],
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (i, (mutate, want)) in cases.into_iter().enumerate() {
        let root = dir.path().join(format!("case{i}"));
        let d = ogb_mag_dir(&root);
        mutate(&d);
        let out = root.join("store");
        let err = import_ogb_mag(&d, &out, &[])
            .expect_err(want[0])
            .to_string();
        for w in want {
            assert!(err.contains(w), "case {i}: expected {w:?} in: {err}");
        }
        assert!(!out.exists(), "case {i}: store left behind after: {err}");
    }
    // A typed store keeps its types' id ranges: --reorder is refused.
    let d = ogb_mag_dir(&dir.path().join("reorder"));
    let out = dir.path().join("reorder/store");
    let err = import_ogb_mag(&d, &out, &["--reorder", "degree"]).unwrap_err();
    assert!(err.to_string().contains("--reorder renumbers"), "{err}");
    assert!(!out.exists());
}
