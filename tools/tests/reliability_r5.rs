//! Reliability round 5 (issue 65): counts a user multiplies per item are
//! refused up front when they cannot fit the memory, one rule for parallel
//! edges, checkpoint directories that belong to one run at a time,
//! temporaries a killed process left behind are found, and flags that were
//! accepted and ignored are refused. Each test is named after the behaviour.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};

use clap::Parser;

use common::p;

fn ginex(args: &[&str]) -> ginex::Result<String> {
    use ginex_cli::commands::{run, GinexCli};
    let cli = GinexCli::try_parse_from(std::iter::once(&"ginex").chain(args))
        .map_err(|e| ginex::Error::invalid_argument(e.to_string()))?;
    let mut out = Vec::new();
    run(cli, &mut out)?;
    Ok(String::from_utf8(out).unwrap())
}

/// `ginex gen`: 300 nodes, dim 32 f32, 4 classes, a node split.
fn gen_store(dir: &Path) -> PathBuf {
    let out = dir.join("store");
    ginex(&[
        "gen",
        "--quiet",
        "--nodes",
        "300",
        "--avg-degree",
        "4",
        "--dim",
        "32",
        "--classes",
        "4",
        "--split",
        "0.5,0.2,0.2",
        "--seed",
        "3",
        "--out",
        p(&out),
    ])
    .unwrap();
    out
}

/// `ginex epoch STORE --task link` with `extra` flags.
fn link_epoch(store: &Path, extra: &[&str]) -> ginex::Result<String> {
    let mut args = vec!["epoch", p(store), "--task", "link", "--fanouts", "3,2"];
    args.extend_from_slice(extra);
    ginex(&args)
}

/// `--neg 100000000` used to abort the process allocating 400 GB; it is
/// refused before any work, naming the option, the machine's memory and
/// the largest count that fits, and a budget given with `--memory` is the
/// one a moderate count is held to.
#[test]
fn a_neg_that_cannot_fit_memory_is_refused_up_front() {
    let tmp = tempfile::tempdir().unwrap();
    let store = gen_store(tmp.path());
    let err = link_epoch(&store, &["--neg", "100000000", "--batch-size", "1000"])
        .unwrap_err()
        .to_string();
    for want in ["--neg 100000000", "this machine's memory", "at most --neg"] {
        assert!(err.contains(want), "expected {want:?} in: {err}");
    }
    // A batch's positives × 100,000 negatives × (128 B row + 16 B) > 128 MiB.
    let err = link_epoch(&store, &["--neg", "100000", "--memory", "128MiB"])
        .unwrap_err()
        .to_string();
    assert!(err.contains("more than --memory (128.0 MiB)"), "{err}");
    // What fits runs.
    link_epoch(&store, &["--neg", "3", "--memory", "128MiB"]).unwrap();
}

/// The Rust loader refuses the same count the same way (Python's `neg=`
/// goes through it).
#[test]
fn the_loader_refuses_a_neg_that_cannot_fit() {
    let tmp = tempfile::tempdir().unwrap();
    let store = ginex::Store::open(gen_store(tmp.path())).unwrap();
    let err = match ginex::Loader::builder(&store)
        .link(100_000_000)
        .batch_size(100)
        .fanouts([5])
        .build()
    {
        Ok(_) => panic!("a loader with 10^8 negatives a positive was built"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("--neg 100000000"), "{err}");
}

/// A 200-node store imported from an edge list that holds both directions
/// of every edge, with `--undirected` and without `--dedup`: every in-list
/// holds each neighbour twice (the parallel edges of #65's report).
fn store_with_parallel_edges(dir: &Path) -> PathBuf {
    use std::io::Write as _;
    let n = 200u64;
    let mut edges = String::new();
    let mut x = 12345u64;
    for _ in 0..600 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let (u, v) = ((x >> 33) % n, (x >> 13) % n);
        if u != v {
            edges.push_str(&format!("{u} {v}\n{v} {u}\n"));
        }
    }
    std::fs::write(dir.join("edges.txt"), edges).unwrap();
    let feats: Vec<f32> = (0..n * 8)
        .map(|i| ((i * 37 % 101) as f32) / 50.0 - 1.0)
        .collect();
    let labels: Vec<i64> = (0..n as i64).map(|i| i % 3).collect();
    let mut f = std::fs::File::create(dir.join("x.npy")).unwrap();
    f.write_all(&common::npy_bytes(
        "<f4",
        "(200, 8)",
        &common::f32_bytes(&feats),
    ))
    .unwrap();
    let mut f = std::fs::File::create(dir.join("y.npy")).unwrap();
    f.write_all(&common::npy_bytes(
        "<i8",
        "(200,)",
        &common::i64_bytes(&labels),
    ))
    .unwrap();
    let out = dir.join("multi");
    let cli = ginex_cli::import::ImportCli::try_parse_from([
        "ginex-import",
        "files",
        "--edges",
        p(&dir.join("edges.txt")),
        "--features",
        p(&dir.join("x.npy")),
        "--labels",
        p(&dir.join("y.npy")),
        "--split",
        "0.5,0.2,0.3",
        "--undirected",
        "--out",
        p(&out),
    ])
    .unwrap();
    ginex_cli::import::run(&cli, &mut std::io::sink()).unwrap();
    out
}

/// Parallel edges count once per copy everywhere (format/csc.md,
/// "Parallel edges"): a sampled hop draws positions, so with every
/// neighbour drawn (-1) a node's in-list `[3, 3, 16, 16]` gives four
/// edges, as the degrees and layer-wise inference count them. The sampler
/// used to collapse the copies, so the two disagreed by up to 1.1 in the
/// logits.
#[test]
fn a_full_fanout_hop_draws_every_copy_of_a_parallel_edge() {
    let tmp = tempfile::tempdir().unwrap();
    let store = ginex::Store::open(store_with_parallel_edges(tmp.path())).unwrap();
    let indptr = store.indptr();
    let degree = |v: u64| indptr[v as usize + 1] - indptr[v as usize];
    let loader = ginex::Loader::builder(&store)
        .fanouts([-1])
        .batch_size(40)
        .policy(ginex::internals::cache::Policy::None)
        .run_dir(tmp.path().join("runs"))
        .build()
        .unwrap();
    let (mut seeds, mut with_copies) = (0, 0);
    for batch in loader {
        let batch = batch.unwrap();
        let hop = &batch.hops[0];
        for (t, &v) in batch.seeds().iter().enumerate() {
            let drawn = hop.dst.iter().filter(|&&d| d as usize == t).count() as u64;
            assert_eq!(
                drawn,
                degree(v),
                "node {v}: one sampled edge per in-list entry"
            );
            let mut sources: Vec<u64> = hop
                .src
                .iter()
                .zip(&hop.dst)
                .filter(|(_, &d)| d as usize == t)
                .map(|(&s, _)| batch.ids[s as usize])
                .collect();
            let all = sources.len();
            sources.dedup();
            with_copies += usize::from(sources.len() < all);
            seeds += 1;
        }
    }
    assert!(
        seeds > 50 && with_copies > 20,
        "{with_copies} of {seeds} seeds drew parallel edges"
    );
}
