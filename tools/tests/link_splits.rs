//! Link-prediction edge splits (format/edge-splits.md) end to end: a
//! random split and explicit files imported, held-out edges absent from
//! the CSC, shown and verified by `ginex-dump`, exported and re-imported
//! byte-identically by both exports; bad input refused naming the file
//! and row with nothing written; a store whose CSC holds a held-out edge
//! fails verification.

#[path = "../../tests/common/mod.rs"]
mod common;
mod tools_common;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use common::{assert_same_files, i64_bytes, leftovers, npy_bytes, p};
use ginex::internals::format::edge_splits::{EdgeSplit, EdgeSplits, Negatives};
use ginex::internals::format::header::FileKind;
use ginex::internals::format::pages::{Dtype, FeatureLayout};
use ginex::internals::store::{ListSink, StoreBuilder, StoreSpec};
use ginex::Store;
use tools_common::{run_dump, run_export, run_import, run_printed_reimport};

const N: u64 = 60;

/// A ring with chords: 120 pairs {i, i+1}, {i, i+7}, no repeats, no loops.
fn pairs() -> Vec<(u64, u64)> {
    (0..N)
        .flat_map(|i| [(i, (i + 1) % N), (i, (i + 7) % N)])
        .collect()
}

fn write_edges(path: &Path, edges: &[(u64, u64)]) {
    let text: String = edges.iter().map(|(a, b)| format!("{a} {b}\n")).collect();
    std::fs::write(path, text).unwrap();
}

fn write_npy_edges(path: &Path, edges: &[(u64, u64)]) {
    let flat: Vec<i64> = edges
        .iter()
        .flat_map(|&(a, b)| [a as i64, b as i64])
        .collect();
    let shape = format!("({}, 2)", edges.len());
    std::fs::write(path, npy_bytes("<i8", &shape, &i64_bytes(&flat))).unwrap();
}

fn write_npy(path: &Path, shape: &str, values: &[i64]) {
    std::fs::write(path, npy_bytes("<i8", shape, &i64_bytes(values))).unwrap();
}

/// Every directed edge of the store's CSC.
fn csc_edges(store: &Store) -> HashSet<(u64, u64)> {
    let mut out = HashSet::new();
    for d in 0..store.num_nodes() {
        for s in store.in_neighbors(d).unwrap() {
            out.insert((s, d));
        }
    }
    out
}

fn random_store(dir: &Path, name: &str, seed: &str) -> PathBuf {
    let edges = dir.join("edges.txt");
    write_edges(&edges, &pairs());
    let out = dir.join(name);
    run_import(&[
        "files",
        "--edges",
        p(&edges),
        "--undirected",
        "--edge-split",
        "0.7,0.15,0.15",
        "--split-seed",
        seed,
        "--quiet",
        "--out",
        p(&out),
    ])
    .unwrap();
    out
}

#[test]
fn random_split_holds_out_pairs_with_non_edge_negatives() {
    let dir = tempfile::tempdir().unwrap();
    let path = random_store(dir.path(), "store", "3");
    let store = Store::open(&path).unwrap();
    store.verify().unwrap();
    let s = store.edge_splits().unwrap().expect("edge splits");
    assert!(s.undirected && s.train.is_none());
    assert!(!s.valid.is_empty() && !s.test.is_empty(), "{s:?}");
    let csc = csc_edges(&store);
    let all: HashSet<(u64, u64)> = pairs()
        .into_iter()
        .flat_map(|(a, b)| [(a, b), (b, a)])
        .collect();
    let mut held = 0;
    for split in [&s.valid, &s.test] {
        let neg = split.negatives.as_ref().expect("GAE negatives");
        assert_eq!((neg.k, neg.src.len()), (1, split.len()));
        for (&a, &b) in split.src.iter().zip(&split.dst) {
            assert!(a < b, "a pair lists once, as src < dst");
            assert!(all.contains(&(a, b)), "({a}, {b}) is not an input pair");
            assert!(!csc.contains(&(a, b)) && !csc.contains(&(b, a)));
            held += 1;
        }
        for (&a, &b) in neg.src.iter().zip(&neg.dst) {
            assert!(
                a != b && !all.contains(&(a, b)),
                "negative ({a}, {b}) is an edge"
            );
        }
    }
    // Every pair is either held out (both directions gone) or kept.
    assert_eq!(store.num_edges() + 2 * held, 2 * pairs().len() as u64);
    // Deterministic from the seed; another seed splits differently.
    let again = Store::open(random_store(dir.path(), "again", "3")).unwrap();
    assert_eq!(again.edge_splits().unwrap().unwrap(), s);
    let other = Store::open(random_store(dir.path(), "other", "4")).unwrap();
    assert_ne!(other.edge_splits().unwrap().unwrap().valid, s.valid);
    // ginex-dump shows and verifies them.
    let summary = run_dump(&[p(&path)]);
    assert!(
        summary.contains("edge splits     undirected pairs; train every CSC edge"),
        "{summary}"
    );
    assert!(summary.contains("edge_splits"), "{summary}");
    let json: serde_json::Value = serde_json::from_str(&run_dump(&["--json", p(&path)])).unwrap();
    assert_eq!(json["edge_splits"]["valid"]["edges"], s.valid.len());
    assert_eq!(json["edge_splits"]["test"]["k"], 1);
    let file = path.join("edge_splits");
    let json: serde_json::Value =
        serde_json::from_str(&run_dump(&["--json", "--limit", "2", p(&file)])).unwrap();
    assert_eq!(json["header"]["kind"], "edge-splits");
    assert_eq!(json["header"]["version"], "1.6");
    assert_eq!(json["edge_splits"]["valid"]["src"][0], s.valid.src[0]);
    assert_eq!(json["truncated"], true);
    assert!(run_dump(&["--verify", "--quiet", p(&path)]).starts_with("ok: "));
}

/// A directed graph with explicit train / valid / test files and OGB
/// negatives (P, K) destinations.
fn explicit_store(dir: &Path) -> PathBuf {
    let edges: Vec<(u64, u64)> = (0..N)
        .flat_map(|i| [(i, (i + 1) % N), (i, (i + 5) % N)])
        .collect();
    let e = dir.join("edges.npy");
    write_npy_edges(&e, &edges);
    let (train, valid, test) = (
        dir.join("train.npy"),
        dir.join("valid.npy"),
        dir.join("test.npy"),
    );
    write_npy_edges(&train, &[(0, 1), (2, 3), (4, 9)]);
    // (2, E): (10, 11), (11, 12), (12, 17).
    write_npy(&valid, "(2, 3)", &[10, 11, 12, 11, 12, 17]);
    // A square (2, 2) array is read as (E, 2), one edge a row: (20, 21),
    // (26, 27); read as (2, E) it would be (20, 26), (21, 27), not edges.
    write_npy(&test, "(2, 2)", &[20, 21, 26, 27]);
    let vn = dir.join("valid_neg.npy");
    write_npy(&vn, "(3, 2)", &[30, 31, 32, 33, 34, 35]);
    let out = dir.join("explicit");
    let report = run_import(&[
        "files",
        "--edges",
        p(&e),
        "--train-edges",
        p(&train),
        "--valid-edges",
        p(&valid),
        "--test-edges",
        p(&test),
        "--valid-negatives",
        p(&vn),
        "--quiet",
        "--out",
        p(&out),
    ])
    .unwrap();
    assert!(
        report.contains("5 edges held out for link prediction, 115 left in the stored graph"),
        "{report}"
    );
    out
}

#[test]
fn explicit_files_are_stored_as_given() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(explicit_store(dir.path())).unwrap();
    let s = store.edge_splits().unwrap().unwrap();
    assert!(!s.undirected);
    let train = s.train.as_ref().unwrap();
    assert_eq!(
        (train.src.clone(), train.dst.clone()),
        (vec![0, 2, 4], vec![1, 3, 9])
    );
    assert_eq!(
        (s.valid.src.clone(), s.valid.dst.clone()),
        (vec![10, 11, 12], vec![11, 12, 17])
    );
    let neg = s.valid.negatives.as_ref().unwrap();
    assert_eq!(neg.k, 2);
    assert_eq!(
        neg.src,
        [10, 10, 11, 11, 12, 12],
        "OGB: the positive's source"
    );
    assert_eq!(neg.dst, [30, 31, 32, 33, 34, 35]);
    assert!(s.test.negatives.is_none());
    assert_eq!(store.num_edges(), 2 * N - 5);
    let csc = csc_edges(&store);
    assert_eq!(
        (s.test.src.clone(), s.test.dst.clone()),
        (vec![20, 26], vec![21, 27])
    );
    for e in [(10, 11), (11, 12), (12, 17), (20, 21), (26, 27)] {
        assert!(!csc.contains(&e), "held-out {e:?} is in the CSC");
    }
    assert!(
        csc.contains(&(0, 1)) && csc.contains(&(4, 9)),
        "train edges stay"
    );
    assert!(csc.contains(&(11, 16)), "the other edges stay");
    store.verify().unwrap();
}

#[test]
fn both_exports_carry_the_splits_and_reimport_byte_identically() {
    let dir = tempfile::tempdir().unwrap();
    let stores = [
        random_store(dir.path(), "random", "9"),
        explicit_store(dir.path()),
    ];
    for (i, store) in stores.iter().enumerate() {
        for kind in ["dgl", "graphbolt"] {
            let out = dir.path().join(format!("{kind}-{i}"));
            let report = run_export(&[kind, p(store), "--out", p(&out), "--quiet"]);
            assert!(report.contains("--valid-edges"), "{report}");
            assert!(out.join("edge_splits/valid_edges.npy").exists());
            if kind == "graphbolt" {
                let yaml = std::fs::read_to_string(out.join("metadata.yaml")).unwrap();
                assert!(yaml.contains("- name: link_prediction"), "{yaml}");
                assert!(yaml.contains("path: set/link_valid_indexes.npy"), "{yaml}");
            }
            let rebuilt = dir.path().join(format!("rebuilt-{kind}-{i}"));
            run_printed_reimport(&report, &rebuilt);
            assert_same_files(store, &rebuilt, &format!("{kind} export of store {i}"));
        }
    }
}

/// Runs `ginex-import files` on the 60-node directed graph with `extra`
/// flags; returns the error, after checking nothing was written.
fn refused(dir: &Path, extra: &[&str]) -> String {
    let edges: Vec<(u64, u64)> = (0..N).map(|i| (i, (i + 1) % N)).collect();
    let e = dir.join("graph.txt");
    write_edges(&e, &edges);
    let out = dir.join("refused");
    let mut args = vec!["files", "--edges", p(&e), "--quiet", "--out", p(&out)];
    args.extend_from_slice(extra);
    let err = run_import(&args).expect_err("must be refused").to_string();
    assert!(!out.exists(), "a refused import left {}", out.display());
    assert!(leftovers(dir).is_empty(), "{:?}", leftovers(dir));
    err
}

#[test]
fn bad_split_input_is_named_with_its_row_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let f = |name: &str, edges: &[(u64, u64)]| {
        let path = d.join(name);
        write_edges(&path, edges);
        path
    };
    let (v, t) = (f("v.txt", &[(1, 2), (3, 4)]), f("t.txt", &[(5, 6)]));
    let files = |v: &Path, t: &Path| -> Vec<String> {
        vec![
            "--valid-edges".into(),
            p(v).into(),
            "--test-edges".into(),
            p(t).into(),
        ]
    };
    let run = |extra: Vec<String>| {
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        refused(d, &extra)
    };

    let dup = f("dup.txt", &[(1, 2), (3, 4), (1, 2)]);
    let err = run(files(&dup, &t));
    assert!(
        err.contains("dup.txt:3: ") && err.contains("1 - 2 repeats row 1"),
        "{err}"
    );

    let overlap = f("overlap.txt", &[(7, 8), (3, 4)]);
    let err = run(files(&v, &overlap));
    assert!(
        err.contains("overlap.txt:2: ")
            && err.contains("3 - 4 is also in")
            && err.contains("v.txt (row 2)"),
        "{err}"
    );

    let absent = f("absent.txt", &[(5, 6), (6, 9)]);
    let err = run(files(&v, &absent));
    assert!(
        err.contains("absent.txt:2: ") && err.contains("6 -> 9 is not an edge of the graph"),
        "{err}"
    );

    let mut excl = files(&v, &t);
    excl.push("--held-out-excluded".into());
    let err = run(excl);
    assert!(
        err.contains("v.txt:1: ")
            && err.contains("1 -> 2 is an edge of the graph, but --held-out-excluded"),
        "{err}"
    );

    let neg = d.join("neg.npy");
    write_npy(&neg, "(2, 2)", &[0, 1, 2, 60]);
    let mut args = files(&v, &t);
    args.extend(["--valid-negatives".into(), p(&neg).into()]);
    let err = run(args.clone());
    assert!(
        err.contains("neg.npy:2: ") && err.contains("negative 60 is not a node id"),
        "{err}"
    );

    write_npy(&neg, "(3, 1)", &[0, 1, 2]);
    let err = run(args);
    assert!(
        err.contains("neg.npy") && err.contains("shape (3, 1)") && err.contains("holds 2 edges"),
        "{err}"
    );

    let every: Vec<(u64, u64)> = (0..N).map(|i| (i, (i + 1) % N)).collect();
    let (half_a, half_b) = every.split_at(30);
    let (a, b) = (f("a.txt", half_a), f("b.txt", half_b));
    let err = run(files(&a, &b));
    assert!(
        err.contains("graph.txt") && err.contains("leaves no edges"),
        "{err}"
    );

    let err = run(vec!["--edge-split".into(), "0.8,0.1,0.2".into()]);
    assert!(err.contains("do not sum to 1"), "{err}");
}

#[test]
fn a_held_out_edge_in_the_csc_or_a_damaged_file_fails_verification() {
    let dir = tempfile::tempdir().unwrap();
    let build = |name: &str, valid: (u64, u64)| {
        let path = dir.path().join(name);
        let mut b = StoreBuilder::create(
            &path,
            StoreSpec::new(4, FeatureLayout::new(1, Dtype::F32).unwrap()),
        )
        .unwrap();
        let mut rows = b.feature_writer().unwrap();
        rows.push_rows(&[0u8; 16]).unwrap();
        b.add_features(rows).unwrap();
        let mut topo = b.topology_writer().unwrap();
        for list in [&[3u64][..], &[0], &[1], &[2]] {
            topo.push_list(list).unwrap();
        }
        b.add_topology(topo).unwrap();
        b.write_edge_splits(&EdgeSplits {
            undirected: false,
            relation: None,
            train: None,
            valid: EdgeSplit {
                src: vec![valid.0],
                dst: vec![valid.1],
                negatives: Some(Negatives {
                    k: 1,
                    src: vec![valid.0],
                    dst: vec![0],
                }),
            },
            test: EdgeSplit::default(),
        })
        .unwrap();
        b.finish().unwrap();
        path
    };
    let good = build("good", (0, 2));
    Store::open(&good).unwrap().verify().unwrap();
    let bad = build("bad", (0, 1)); // 0 -> 1 is in the CSC
    let err = Store::open(&bad).unwrap().verify().unwrap_err().to_string();
    assert!(
        err.contains("edge_splits")
            && err.contains("valid edge 0 is held out, but the CSC holds the edge 0 -> 1"),
        "{err}"
    );
    // Every flipped byte of the file is caught by open or verify.
    let file = good.join(ginex::internals::format::manifest::store_file_name(
        FileKind::EdgeSplits,
    ));
    let original = std::fs::read(&file).unwrap();
    for pos in 0..original.len() {
        let mut damaged = original.clone();
        damaged[pos] ^= 0x21;
        std::fs::write(&file, &damaged).unwrap();
        let r = Store::open(&good).and_then(|s| s.verify());
        assert!(
            r.is_err(),
            "flipping byte {pos} of edge_splits went unnoticed"
        );
    }
}

/// `--reorder` renumbers the edge splits with the store: in original ids
/// they are the unordered import's, and the reordered store verifies.
#[test]
fn reordered_imports_keep_the_same_splits_in_original_ids() {
    let dir = tempfile::tempdir().unwrap();
    let plain = Store::open(random_store(dir.path(), "plain", "5")).unwrap();
    let edges = dir.path().join("edges.txt");
    let out = dir.path().join("bfs");
    run_import(&[
        "files",
        "--edges",
        p(&edges),
        "--undirected",
        "--edge-split",
        "0.7,0.15,0.15",
        "--split-seed",
        "5",
        "--reorder",
        "bfs",
        "--quiet",
        "--out",
        p(&out),
    ])
    .unwrap();
    let bfs = Store::open(&out).unwrap();
    bfs.verify().unwrap();
    let orig = bfs.original_ids().unwrap().unwrap();
    let key = |a: u64, b: u64| (a.min(b), a.max(b));
    let sorted = |s: &EdgeSplit, map: &dyn Fn(u64) -> u64| {
        let mut v: Vec<(u64, u64)> = s
            .src
            .iter()
            .zip(&s.dst)
            .map(|(&a, &b)| key(map(a), map(b)))
            .collect();
        v.sort_unstable();
        v
    };
    let (a, b) = (
        plain.edge_splits().unwrap().unwrap(),
        bfs.edge_splits().unwrap().unwrap(),
    );
    let back = |v: u64| orig[v as usize];
    assert_eq!(sorted(&a.valid, &|v| v), sorted(&b.valid, &back));
    assert_eq!(sorted(&a.test, &|v| v), sorted(&b.test, &back));
    assert_eq!(plain.num_edges(), bfs.num_edges());
}

/// Link epochs (#40) train on the stored splits: the explicit train edges
/// exactly when the store has them, else every CSC pair once on an
/// undirected split store (whose held-out pairs are in neither); and the
/// store's undirected splits make a batch leave both directions of its
/// positives out of its neighbourhoods.
#[test]
fn link_epochs_train_on_the_stored_splits() {
    use ginex::internals::exec::sampler::link_positives;
    use ginex::internals::sample::link::{LinkEpoch, LinkExclude, LinkTask, NegMode};
    use ginex::internals::sample::sampler::EpochSampler;
    use ginex::internals::sample::source::InMemoryTopology;

    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(explicit_store(dir.path())).unwrap();
    let topo = InMemoryTopology::load(&store).unwrap();
    let (pos, undirected) = link_positives(&store, &topo, false).unwrap();
    let train = store.edge_splits().unwrap().unwrap().train.unwrap();
    assert_eq!((&pos.src, &pos.dst), (&train.src, &train.dst));
    assert!(!undirected);

    let store = Store::open(random_store(dir.path(), "r", "3")).unwrap();
    let topo = InMemoryTopology::load(&store).unwrap();
    let (pos, undirected) = link_positives(&store, &topo, false).unwrap();
    assert!(undirected, "the splits are undirected");
    let s = store.edge_splits().unwrap().unwrap();
    assert!(s.train.is_none());
    let pairs: HashSet<(u64, u64)> = pos
        .src
        .iter()
        .copied()
        .zip(pos.dst.iter().copied())
        .collect();
    let csc = csc_edges(&store);
    assert_eq!(pairs.len(), csc.len() / 2);
    assert!(pairs.iter().all(|&(u, v)| u < v && csc.contains(&(u, v))));
    for (u, v) in s.valid.src.iter().zip(&s.valid.dst) {
        assert!(!pairs.contains(&(*u.min(v), *u.max(v))), "held-out {u}-{v}");
    }
    let link = LinkEpoch {
        positives: pos.clone(),
        task: LinkTask {
            neg: 2,
            mode: NegMode::Binary,
            undirected,
            exclude: LinkExclude::Own,
            ..LinkTask::default()
        },
        neg_range: 0..store.num_nodes(),
    };
    let sampler = EpochSampler::link(&topo, link, 8, vec![-1, -1], 5, 0).unwrap();
    for b in 0..sampler.num_batches() {
        let batch = sampler.sample(b).unwrap();
        let l = batch.link.as_ref().unwrap();
        let own: HashSet<(u64, u64)> = (0..l.num_pos())
            .flat_map(|i| {
                let (u, v) = (batch.ids[l.src[i] as usize], batch.ids[l.dst[i] as usize]);
                [(u, v), (v, u)]
            })
            .collect();
        for h in &batch.hops {
            for (&s, &d) in h.src.iter().zip(&h.dst) {
                let e = (batch.ids[s as usize], batch.ids[d as usize]);
                assert!(!own.contains(&e), "batch {b} sampled its own edge {e:?}");
            }
        }
    }
}
