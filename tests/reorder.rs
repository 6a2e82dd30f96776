//! `--reorder` (locality-aware layout): a reordered store holds the same
//! graph as the unreordered one — edges, features, labels and splits
//! compared in original ids — and the ids a user passes in or gets back
//! are the original ones.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use clap::Parser;
use ginex::Store;
use ginex_cli::commands::{run as ginex_run, GinexCli};
use ginex_cli::import::{run as import_run, ImportCli};

use common::p;

fn gen(args: &[&str]) -> String {
    let cli = GinexCli::try_parse_from(["ginex", "gen", "--quiet"].iter().chain(args)).unwrap();
    let mut out = Vec::new();
    ginex_run(cli, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn import(args: &[&str]) -> ginex::Result<String> {
    let cli = ImportCli::try_parse_from(std::iter::once(&"ginex-import").chain(args)).unwrap();
    let mut out = Vec::new();
    import_run(&cli, &mut out)?;
    Ok(String::from_utf8(out).unwrap())
}

const GEN: [&str; 10] = [
    "--nodes",
    "2000",
    "--avg-degree",
    "8",
    "--dim",
    "12",
    "--seed",
    "3",
    "--classes",
    "5",
];

/// A store's content keyed by original id (the store id where it keeps
/// none).
#[derive(Debug, PartialEq)]
struct InOriginalIds {
    /// (source, target) of every edge, sorted.
    edges: Vec<(u64, u64)>,
    /// (original id, row bytes), sorted.
    features: Vec<(u64, Vec<u8>)>,
    /// (original id, label), sorted; `None` without labels.
    labels: Option<Vec<(u64, i32)>>,
    /// The three splits as sets of original ids.
    splits: Option<[BTreeSet<u64>; 3]>,
    num_classes: u32,
}

fn in_original_ids(path: &Path) -> InOriginalIds {
    let s = Store::open(path).unwrap();
    s.verify().unwrap();
    let n = s.num_nodes();
    let orig = s
        .original_ids()
        .unwrap()
        .unwrap_or_else(|| (0..n).collect());
    let o = |v: u64| orig[v as usize];
    let mut edges = Vec::new();
    for v in 0..n {
        for u in s.in_neighbors(v).unwrap() {
            edges.push((o(u), o(v)));
        }
    }
    edges.sort_unstable();
    let row = s.layout().row_bytes();
    let ids: Vec<u64> = (0..n).collect();
    let mut bytes = vec![0u8; n as usize * row];
    s.read_feature_rows(&ids, &mut bytes).unwrap();
    let mut features: Vec<(u64, Vec<u8>)> = bytes
        .chunks_exact(row)
        .enumerate()
        .map(|(v, r)| (o(v as u64), r.to_vec()))
        .collect();
    features.sort();
    let labels = s.labels().unwrap().map(|l| {
        let mut l: Vec<(u64, i32)> = l
            .iter()
            .enumerate()
            .map(|(v, &x)| (o(v as u64), x))
            .collect();
        l.sort_unstable();
        l
    });
    let splits = s.splits().unwrap().map(|sp| {
        [&sp.train, &sp.valid, &sp.test].map(|list| list.iter().map(|&v| o(v)).collect())
    });
    InOriginalIds {
        edges,
        features,
        labels,
        splits,
        num_classes: s.num_classes(),
    }
}

fn gen_store(dir: &Path, name: &str, reorder: &str) -> PathBuf {
    let out = dir.join(name);
    let mut args = GEN.to_vec();
    args.extend(["--reorder", reorder, "--out", p(&out)]);
    let report = gen(&args);
    if reorder != "none" {
        assert!(report.contains("reorder + verify"), "{report}");
    }
    out
}

/// Whether `orig` is a permutation of `0..orig.len()`.
fn is_permutation(orig: &[u64]) -> bool {
    let mut seen = vec![false; orig.len()];
    orig.iter().all(|&o| {
        let fresh = seen.get(o as usize).is_some_and(|s| !s);
        if fresh {
            seen[o as usize] = true;
        }
        fresh
    })
}

#[test]
fn gen_reordered_stores_hold_the_same_graph() {
    let dir = tempfile::tempdir().unwrap();
    let plain = gen_store(dir.path(), "none", "none");
    let want = in_original_ids(&plain);
    assert!(Store::open(&plain)
        .unwrap()
        .original_ids()
        .unwrap()
        .is_none());
    assert!(want.labels.is_some() && want.splits.is_some());
    for order in ["degree", "bfs"] {
        let path = gen_store(dir.path(), order, order);
        assert_eq!(in_original_ids(&path), want, "--reorder {order}");
        let s = Store::open(&path).unwrap();
        let orig = s.original_ids().unwrap().unwrap();
        assert!(is_permutation(&orig));
        assert!(
            orig.iter().enumerate().any(|(v, &o)| v as u64 != o),
            "--reorder {order} left the order unchanged"
        );
        let deg: Vec<u64> = (0..s.num_nodes())
            .map(|v| s.in_degree(v).unwrap())
            .collect();
        match order {
            // Non-increasing in-degree.
            "degree" => assert!(deg.windows(2).all(|w| w[0] >= w[1])),
            // The hub comes first and its in-neighbours (gen drops
            // self-loops and duplicates) take the next ids.
            _ => {
                assert_eq!(deg[0], *deg.iter().max().unwrap());
                let want: Vec<u64> = (1..=deg[0]).collect();
                assert_eq!(s.in_neighbors(0).unwrap(), want);
            }
        }
    }
    // No unordered build is left beside the stores.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.contains("unordered")), "{names:?}");
}

#[test]
fn files_import_reorders_in_original_ids() {
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("raw");
    let mut args = GEN.to_vec();
    args.extend(["--raw", p(&raw)]);
    gen(&args);
    let plain = gen_store(dir.path(), "gen", "none");
    let want = in_original_ids(&plain);
    for order in ["none", "degree", "bfs"] {
        let out = dir.path().join(format!("files-{order}"));
        import(&[
            "files",
            "--edges",
            p(&raw.join("edges.npy")),
            "--features",
            p(&raw.join("features.npy")),
            "--labels",
            p(&raw.join("labels.npy")),
            "--num-classes",
            "5",
            "--train-ids",
            p(&raw.join("train_ids.npy")),
            "--valid-ids",
            p(&raw.join("valid_ids.npy")),
            "--test-ids",
            p(&raw.join("test_ids.npy")),
            "--reorder",
            order,
            "--quiet",
            "--out",
            p(&out),
        ])
        .unwrap();
        assert_eq!(in_original_ids(&out), want, "--reorder {order}");
    }
}

#[test]
fn remap_and_reorder_keep_the_input_ids() {
    let dir = tempfile::tempdir().unwrap();
    // Sparse ids: 9 <- 5, 2 <- 9, 5 <- 2, 9 <- 2, 2 <- 7.
    let e = dir.path().join("sparse.csv");
    std::fs::write(&e, "9,2\n5,9\n2,5\n2,9\n7,2\n").unwrap();
    let t = dir.path().join("train.txt");
    std::fs::write(&t, "9\n7\n").unwrap();
    let mut got = Vec::new();
    for order in ["none", "degree", "bfs"] {
        let out = dir.path().join(format!("store-{order}"));
        import(&[
            "files",
            "--edges",
            p(&e),
            "--remap",
            "--train-ids",
            p(&t),
            "--reorder",
            order,
            "--quiet",
            "--out",
            p(&out),
        ])
        .unwrap();
        let s = Store::open(&out).unwrap();
        let mut ids = s.original_ids().unwrap().unwrap();
        ids.sort_unstable();
        assert_eq!(ids, vec![2, 5, 7, 9], "--reorder {order}");
        let g = in_original_ids(&out);
        assert_eq!(g.edges, vec![(2, 5), (2, 9), (5, 9), (7, 2), (9, 2)]);
        assert_eq!(g.splits.as_ref().unwrap()[0], BTreeSet::from([7, 9]));
        got.push(g);
    }
    // The degree order puts 2 and 9 (in-degree 2) first.
    let s = Store::open(dir.path().join("store-degree")).unwrap();
    assert_eq!(s.original_ids().unwrap().unwrap(), vec![2, 9, 5, 7]);
}

#[test]
fn reorder_refuses_bad_names_and_existing_targets() {
    let dir = tempfile::tempdir().unwrap();
    let err = GinexCli::try_parse_from(["ginex", "gen", "--reorder", "rcm", "--out", "x"])
        .unwrap_err()
        .to_string();
    assert!(err.contains("none, degree or bfs"), "{err}");
    let out = dir.path().join("taken");
    std::fs::create_dir(&out).unwrap();
    let e = dir.path().join("e.csv");
    std::fs::write(&e, "0,1\n").unwrap();
    let err = import(&[
        "files",
        "--edges",
        p(&e),
        "--reorder",
        "bfs",
        "--quiet",
        "--out",
        p(&out),
    ])
    .unwrap_err()
    .to_string();
    assert!(err.contains("already exists"), "{err}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    // A failure after the build started leaves neither store behind.
    let t = dir.path().join("train.txt");
    std::fs::write(&t, "0\n7\n").unwrap();
    let err = import(&[
        "files",
        "--edges",
        p(&e),
        "--train-ids",
        p(&t),
        "--reorder",
        "bfs",
        "--quiet",
        "--out",
        p(&dir.path().join("new")),
    ])
    .unwrap_err()
    .to_string();
    assert!(err.contains("train.txt:2"), "{err}");
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["e.csv", "taken", "train.txt"]);
}

#[test]
fn ids_a_user_sees_are_original() {
    let dir = tempfile::tempdir().unwrap();
    let plain = gen_store(dir.path(), "none", "none");
    let want = in_original_ids(&plain);
    let edges: BTreeSet<(u64, u64)> = want.edges.iter().copied().collect();
    let train = &want.splits.as_ref().unwrap()[0];
    let path = gen_store(dir.path(), "bfs", "bfs");

    // `ginex sample`: the batch's ids are original ids, so its seeds are
    // training nodes and its sampled edges are edges of the input graph.
    let mut got = 0;
    for batch in ["0", "1"] {
        let json = {
            let cli = GinexCli::try_parse_from([
                "ginex",
                "sample",
                p(&path),
                "--batch-size",
                "50",
                "--fanouts",
                "4,3",
                "--batch",
                batch,
            ])
            .unwrap();
            let mut out = Vec::new();
            ginex_run(cli, &mut out).unwrap();
            serde_json::from_slice::<serde_json::Value>(&out).unwrap()
        };
        let ids: Vec<u64> = serde_json::from_value(json["ids"].clone()).unwrap();
        let seeds = json["num_seeds"].as_u64().unwrap() as usize;
        assert!(ids[..seeds].iter().all(|v| train.contains(v)));
        for hop in json["hops"].as_array().unwrap() {
            let src: Vec<usize> = serde_json::from_value(hop["src"].clone()).unwrap();
            let dst: Vec<usize> = serde_json::from_value(hop["dst"].clone()).unwrap();
            for (s, d) in src.iter().zip(&dst) {
                assert!(edges.contains(&(ids[*s], ids[*d])));
                got += 1;
            }
        }
    }
    assert!(got > 100, "{got} sampled edges");

    // `ginex predict --nodes FILE` (a `train` build) reads its file with
    // read_node_ids: each original id maps to the store node that holds it,
    // and an id the store lacks is refused with its line.
    let s = Store::open(&path).unwrap();
    let ids = ginex::NodeIds::of(&s).unwrap();
    let orig = s.original_ids().unwrap().unwrap();
    let f = dir.path().join("nodes.txt");
    std::fs::write(&f, "5\n0\n1999\n").unwrap();
    let nodes = ginex_cli::read_node_ids(&ids, &f).unwrap();
    assert_eq!(
        nodes.iter().map(|&v| orig[v as usize]).collect::<Vec<_>>(),
        vec![5, 0, 1999]
    );
    assert_ne!(
        nodes,
        vec![5, 0, 1999],
        "the order is not the identity here"
    );
    // Every node, in ascending original id: the rows of predict's output.
    let all = ids.user_order();
    assert!((0..2000).all(|k| orig[all[k] as usize] == k as u64));
    std::fs::write(&f, "5\n2000\n").unwrap();
    let err = ginex_cli::read_node_ids(&ids, &f).unwrap_err().to_string();
    assert!(
        err.contains("nodes.txt:2") && err.contains("2000 is not an original id"),
        "{err}"
    );
}

#[test]
fn an_export_of_a_reordered_store_carries_its_original_ids() {
    // The DGL export keeps the store's order with `orig_id` beside it; a
    // re-import (reordered again, by another order) composes the ids, so
    // the graph in original ids is still the generator's.
    let dir = tempfile::tempdir().unwrap();
    let want = in_original_ids(&gen_store(dir.path(), "none", "none"));
    let bfs = gen_store(dir.path(), "bfs", "bfs");
    let exported = dir.path().join("dgl");
    let cli = ginex_cli::export::ExportCli::try_parse_from([
        "ginex-export",
        "dgl",
        p(&bfs),
        "--out",
        p(&exported),
        "--quiet",
    ])
    .unwrap();
    ginex_cli::export::run(&cli, &mut Vec::new()).unwrap();
    let back = dir.path().join("back");
    import(&[
        "dgl",
        p(&exported.join("metadata.json")),
        "--num-classes",
        "5",
        "--reorder",
        "degree",
        "--quiet",
        "--out",
        p(&back),
    ])
    .unwrap();
    assert_eq!(in_original_ids(&back), want);
    let orig = Store::open(&back).unwrap().original_ids().unwrap().unwrap();
    let bfs_orig = Store::open(&bfs).unwrap().original_ids().unwrap().unwrap();
    assert_ne!(orig, bfs_orig, "the re-import has its own order");
}
