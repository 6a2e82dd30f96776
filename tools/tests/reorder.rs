//! `--reorder` (locality-aware layout): a reordered store holds the same
//! graph as the unreordered one — edges, features, labels and splits
//! compared in original ids — and the ids a user passes in or gets back
//! are the original ones.

#[path = "../../tests/common/mod.rs"]
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
    if reorder != "none" && reorder != "auto" {
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
    assert!(err.contains("none, degree, bfs or auto"), "{err}");
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

/// A ring lattice whose node at ring position `i` has the in-neighbours at
/// positions `i ± 1..=3`, with node ids `perm[i]` (a seeded random
/// permutation, or the identity): the generator order is local, random
/// ids are not. Written as raw files (edges CSV, 256-dim f32 features of
/// 1 KiB rows, 4 a page, labels) in `dir`; returns `perm`.
fn lattice_raw(dir: &Path, n: u64, random: bool) -> Vec<u64> {
    use common::{f32_bytes, i64_bytes, npy_bytes};
    let mut perm: Vec<u64> = (0..n).collect();
    if random {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for i in (1..n as usize).rev() {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            perm.swap(i, ((x >> 33) % (i as u64 + 1)) as usize);
        }
    }
    std::fs::create_dir_all(dir).unwrap();
    let mut edges = String::from("src,dst\n");
    for i in 0..n {
        for d in 1..=3 {
            for j in [(i + d) % n, (i + n - d) % n] {
                edges.push_str(&format!("{},{}\n", perm[j as usize], perm[i as usize]));
            }
        }
    }
    std::fs::write(dir.join("edges.csv"), edges).unwrap();
    let dim = 256;
    let feats: Vec<f32> = (0..n)
        .flat_map(|v| (0..dim).map(move |k| v as f32 + k as f32 / 1000.0))
        .collect();
    std::fs::write(
        dir.join("features.npy"),
        npy_bytes("<f4", &format!("({n}, {dim})"), &f32_bytes(&feats)),
    )
    .unwrap();
    let labels: Vec<i64> = (0..n as i64).map(|v| v % 5).collect();
    std::fs::write(
        dir.join("labels.npy"),
        npy_bytes("<i8", &format!("({n},)"), &i64_bytes(&labels)),
    )
    .unwrap();
    perm
}

/// Imports `raw` (from [`lattice_raw`]) with `extra` flags; the report.
fn import_lattice(raw: &Path, out: &Path, extra: &[&str]) -> String {
    let (e, f, l) = (
        raw.join("edges.csv"),
        raw.join("features.npy"),
        raw.join("labels.npy"),
    );
    let mut args = vec![
        "files",
        "--edges",
        p(&e),
        "--features",
        p(&f),
        "--labels",
        p(&l),
        "--split",
        "0.5,0.25,0.25",
        "--edge-split",
        "0.8,0.1,0.1",
        "--layout-batch-size",
        "16",
        "--layout-fanouts",
        "3,3",
        "--quiet",
        "--out",
        p(out),
    ];
    args.extend_from_slice(extra);
    import(&args).unwrap()
}

/// The edge splits' valid and test positives and negatives as sorted
/// pairs of original ids.
fn edge_splits_in_original_ids(path: &Path) -> Vec<Vec<(u64, u64)>> {
    let s = Store::open(path).unwrap();
    let orig = s
        .original_ids()
        .unwrap()
        .unwrap_or_else(|| (0..s.num_nodes()).collect());
    let es = s.edge_splits().unwrap().unwrap();
    let mut out = Vec::new();
    for split in [&es.valid, &es.test] {
        let mut pos: Vec<(u64, u64)> = split
            .src
            .iter()
            .zip(&split.dst)
            .map(|(&a, &b)| (orig[a as usize], orig[b as usize]))
            .collect();
        pos.sort_unstable();
        out.push(pos);
    }
    out
}

/// `--reorder auto` (the default) renumbers a random-id layout (by BFS,
/// which puts ring neighbours on shared pages again) and keeps a local
/// one, prints its decision with the sample's pages both ways, and the
/// renumbered store holds the same graph, features, labels, splits and
/// edge splits in original ids; `ginex-dump` flags the random layout and
/// not the renumbered one, and `ginex-import reorder` fixes a store
/// imported with `--reorder none`.
#[test]
fn auto_reorders_random_ids_and_keeps_a_local_order() {
    let dir = tempfile::tempdir().unwrap();
    let n = 6000; // 1500 feature pages: above auto's 1024-page floor
    let raw = dir.path().join("raw-random");
    let perm = lattice_raw(&raw, n, true);
    assert!(perm.iter().enumerate().any(|(i, &v)| i as u64 != v));

    let plain = dir.path().join("none");
    let report = import_lattice(&raw, &plain, &["--reorder", "none"]);
    assert!(!report.contains("reorder auto"), "{report}");
    let want = in_original_ids(&plain);
    let want_splits = edge_splits_in_original_ids(&plain);

    let auto = dir.path().join("auto");
    let report = import_lattice(&raw, &auto, &[]);
    let line = report
        .lines()
        .find(|l| l.contains("reorder auto:"))
        .unwrap_or_else(|| panic!("no decision in {report}"));
    assert!(line.contains("reorder auto: bfs"), "{line}");
    assert!(
        line.contains("pages of the sampled batches together: none "),
        "{line}"
    );
    assert_eq!(in_original_ids(&auto), want);
    assert_eq!(edge_splits_in_original_ids(&auto), want_splits);
    let s = Store::open(&auto).unwrap();
    s.verify().unwrap();
    assert!(is_permutation(&s.original_ids().unwrap().unwrap()));

    // The same lattice in its own (local) order: auto keeps it, renaming
    // the built store into place with no original ids and nothing left
    // beside it.
    let local_raw = dir.path().join("raw-local");
    lattice_raw(&local_raw, n, false);
    let local = dir.path().join("local");
    let report = import_lattice(&local_raw, &local, &[]);
    assert!(
        report.contains("reorder auto: none; pages of the sampled batches together"),
        "{report}"
    );
    assert!(report.contains("reorder auto (kept)"), "{report}");
    let s = Store::open(&local).unwrap();
    s.verify().unwrap();
    assert!(s.original_ids().unwrap().is_none());
    assert!(common::leftovers(dir.path()).is_empty());
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.contains("unordered")), "{names:?}");

    // ginex-dump: a hint with the command on the random layout only.
    let dump = |path: &Path| {
        let cli = <ginex_cli::dump::DumpArgs as Parser>::try_parse_from([
            "ginex-dump",
            p(path),
            "--layout-batch-size",
            "16",
            "--layout-fanouts",
            "3,3",
        ])
        .unwrap();
        let mut out = Vec::new();
        ginex_cli::dump::run(&cli, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    };
    let d = dump(&plain);
    assert!(d.contains("  layout   "), "{d}");
    assert!(
        d.contains("hint: ") && d.contains("ginex-import reorder"),
        "{d}"
    );
    assert!(!dump(&auto).contains("hint: "));
    assert!(!dump(&local).contains("hint: "));

    // ginex epoch: the scattered-layout hint after its report, from its
    // own first batches, on the random layout only.
    let epoch = |path: &Path| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_ginex"))
            .args(["epoch", p(path), "--batch-size", "16", "--fanouts", "3,3"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stderr).unwrap()
    };
    let e = epoch(&plain);
    assert!(
        e.contains("layout: a batch's rows lie on") && e.contains("ginex-import reorder"),
        "{e}"
    );
    assert!(!epoch(&auto).contains("layout: a batch's rows"));

    // ginex-import reorder: the fix the hint names, and a no-op on a
    // local store.
    let fixed = dir.path().join("fixed");
    let small = ["--layout-batch-size", "16", "--layout-fanouts", "3,3"];
    let r = import(&[&["reorder", p(&plain), "--out", p(&fixed)], &small[..]].concat()).unwrap();
    assert!(r.contains("reorder auto: bfs"), "{r}");
    assert_eq!(in_original_ids(&fixed), want);
    assert_eq!(edge_splits_in_original_ids(&fixed), want_splits);
    let kept = dir.path().join("kept");
    let r = import(&[&["reorder", p(&local), "--out", p(&kept)], &small[..]].concat()).unwrap();
    assert!(r.contains("nothing written"), "{r}");
    assert!(!kept.exists());
}

/// A typed store keeps its order under the default `auto`; an explicit
/// renumbering order is refused as before.
#[test]
fn typed_gen_keeps_its_order_under_auto() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("hetero");
    gen(&[
        "--nodes",
        "3000",
        "--dim",
        "8",
        "--hetero",
        "--out",
        p(&out),
    ]);
    let s = Store::open(&out).unwrap();
    assert!(s.schema().is_some());
    assert!(s.original_ids().unwrap().is_none());
    let cli = GinexCli::try_parse_from([
        "ginex",
        "gen",
        "--quiet",
        "--nodes",
        "3000",
        "--hetero",
        "--reorder",
        "bfs",
        "--out",
        p(&dir.path().join("refused")),
    ])
    .unwrap();
    let err = ginex_run(cli, &mut Vec::new()).unwrap_err().to_string();
    assert!(err.contains("--hetero with --reorder"), "{err}");
}
