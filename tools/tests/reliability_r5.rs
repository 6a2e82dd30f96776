//! Reliability round 5 (issue 65): counts a user multiplies per item are
//! refused up front when they cannot fit the memory, one rule for parallel
//! edges, checkpoint directories that belong to one run at a time,
//! temporaries a killed process left behind are found, and flags that were
//! accepted and ignored are refused. Each test is named after the behaviour.

#[path = "../../tests/common/mod.rs"]
mod common;
mod tools_common;

use std::path::{Path, PathBuf};

use common::p;
use tools_common::{run_ginex as ginex, run_import};

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
    // A batch's positives × 100,000 negatives × (128 B row + 16 B) > 512 MiB.
    let err = link_epoch(&store, &["--neg", "100000", "--memory", "512MiB"])
        .unwrap_err()
        .to_string();
    assert!(err.contains("more than --memory (512.0 MiB)"), "{err}");
    // What fits runs.
    link_epoch(&store, &["--neg", "3", "--memory", "512MiB"]).unwrap();
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
    run_import(&[
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

/// Every `.npy` the tools write for the user (`predict --out`, the link
/// outputs `--embeddings` and `--score … --out`) goes through
/// `NpyWriter::create_output` (a temporary renamed when complete:
/// tools/tests/outputs_disk_full.rs), never the plain writer, which a full
/// disk leaves half-written: the link outputs used it.
#[test]
fn every_user_named_npy_output_is_written_atomically() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut plain = Vec::new();
    let mut stack = vec![src];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if std::fs::read_to_string(&path)
                .unwrap()
                .contains("NpyWriter::create(")
            {
                plain.push(path);
            }
        }
    }
    assert!(
        plain.is_empty(),
        "plain NpyWriter::create in {plain:?}: use create_output"
    );
}

/// `--held-out-excluded` says given held-out edge files are absent from
/// the edge input; with `--edge-split` (which draws them from it) it was
/// accepted and ignored.
#[test]
fn held_out_excluded_with_a_random_edge_split_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let edges = tmp.path().join("e.txt");
    std::fs::write(&edges, "0 1\n1 2\n2 3\n3 0\n0 2\n1 3\n").unwrap();
    let out = tmp.path().join("store");
    let err = run_import(&[
        "files",
        "--edges",
        p(&edges),
        "--edge-split",
        "0.5,0.25,0.25",
        "--held-out-excluded",
        "--out",
        p(&out),
    ])
    .expect_err("imported")
    .to_string();
    assert!(err.contains("--held-out-excluded"), "{err}");
    assert!(!out.exists());
}

/// `--exclude` is a link-batch option; on a node task it was accepted
/// silently.
#[test]
fn exclude_on_a_node_task_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let store = gen_store(tmp.path());
    let err = ginex(&["epoch", p(&store), "--exclude", "none"])
        .unwrap_err()
        .to_string();
    assert!(err.contains("--exclude none is for --task link"), "{err}");
    ginex(&["epoch", p(&store), "--fanouts", "3", "--max-batches", "1"]).unwrap();
}

#[cfg(feature = "train")]
mod train {
    use super::*;

    /// `ginex train STORE --checkpoint CK` with `extra` flags.
    fn train(store: &Path, ck: &Path, extra: &[&str]) -> ginex::Result<String> {
        let mut args = vec![
            "train",
            p(store),
            "--checkpoint",
            p(ck),
            "--epochs",
            "1",
            "--hidden",
            "8",
            "--fanouts",
            "3,2",
        ];
        args.extend_from_slice(extra);
        ginex(&args)
    }

    /// A checkpoint directory belongs to one run at a time: while a run
    /// holds it (here this test, through the same lock), a second `train`
    /// is refused naming the holder and writes nothing; once the holder is
    /// gone it trains. Two runs used to interleave and leave a `LATEST`
    /// naming deleted files.
    #[test]
    fn a_second_training_run_into_a_held_checkpoint_directory_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let store = gen_store(tmp.path());
        let ck = tmp.path().join("ck");
        let held = ginex::internals::io::dir_lock::DirLock::acquire(&ck, "a test").unwrap();
        let err = train(&store, &ck, &[]).unwrap_err().to_string();
        assert!(err.contains("is in use by another training run"), "{err}");
        assert!(
            err.contains(&format!("process {}", std::process::id())),
            "{err}"
        );
        assert!(!ck.join("LATEST").exists());
        drop(held);
        train(&store, &ck, &[]).unwrap();
        assert!(ck.join("LATEST").exists());
    }

    /// `train --task link --neg 100000000` aborted allocating 400 GB; it
    /// is refused as `epoch` refuses it. `predict --test-neg` is held to
    /// the memory too.
    #[test]
    fn huge_negative_counts_are_refused_in_train_and_predict() {
        let tmp = tempfile::tempdir().unwrap();
        let store = gen_store(tmp.path());
        let ck = tmp.path().join("ck");
        let err = train(&store, &ck, &["--task", "link", "--neg", "100000000"])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--neg 100000000") && err.contains("at most --neg"),
            "{err}"
        );
        // A link store with a held-out split, trained one epoch, then
        // 10^9 negatives per test edge.
        let edges = tmp.path().join("e.txt");
        let text: String = (0..300u64)
            .map(|i| format!("{i} {}\n", (i * 7 + 1) % 300))
            .collect();
        std::fs::write(&edges, text).unwrap();
        let link_store = tmp.path().join("links");
        run_import(&[
            "files",
            "--quiet",
            "--edges",
            p(&edges),
            "--feature-dim",
            "8",
            "--edge-split",
            "0.8,0.1,0.1",
            "--out",
            p(&link_store),
        ])
        .unwrap();
        let link_ck = tmp.path().join("link-ck");
        train(&link_store, &link_ck, &["--task", "link"]).unwrap();
        let err = ginex(&[
            "predict",
            p(&link_store),
            "--checkpoint",
            p(&link_ck),
            "--test-neg",
            "1000000000",
            "--memory",
            "1GiB",
        ])
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("--test-neg 1000000000") && err.contains("more than --memory"),
            "{err}"
        );
    }

    /// `predict --nodes` takes a text file of ids; an `.npy` used to be
    /// refused with "stream did not contain valid UTF-8".
    #[test]
    fn predict_nodes_given_an_npy_says_a_text_file_is_expected() {
        let tmp = tempfile::tempdir().unwrap();
        let store = gen_store(tmp.path());
        let ck = tmp.path().join("ck");
        train(&store, &ck, &[]).unwrap();
        let npy = tmp.path().join("n.npy");
        std::fs::write(
            &npy,
            common::npy_bytes("<i8", "(2,)", &common::i64_bytes(&[1, 2])),
        )
        .unwrap();
        let err = ginex(&[
            "predict",
            p(&store),
            "--checkpoint",
            p(&ck),
            "--nodes",
            p(&npy),
            "--out",
            p(&tmp.path().join("logits.npy")),
        ])
        .unwrap_err()
        .to_string();
        assert!(err.contains("expected a text file of node ids"), "{err}");
        assert!(err.contains("numpy.savetxt"), "{err}");
    }

    /// The values of a little-endian `<f4` .npy.
    fn read_f32_npy(path: &Path) -> Vec<f32> {
        let npy = ginex::internals::import::npy::NpyFile::open(path).unwrap();
        let (mut raw, mut values) = (Vec::new(), Vec::new());
        npy.read_f32(0, npy.len() as usize, &mut raw, &mut values)
            .unwrap();
        values
    }

    /// On a store whose in-lists hold every neighbour twice, `predict
    /// --layerwise` and `predict --fanouts=-1,-1` agree to float tolerance
    /// (they differed by up to 1.1 when sampling collapsed the copies and
    /// layer-wise inference counted them), for SAGE and GCN.
    #[test]
    fn layerwise_and_full_fanout_predictions_agree_on_parallel_edges() {
        let tmp = tempfile::tempdir().unwrap();
        let store = store_with_parallel_edges(tmp.path());
        for model in ["sage", "gcn"] {
            let ck = tmp.path().join(format!("ck-{model}"));
            train(&store, &ck, &["--model", model]).unwrap();
            let predict = |extra: &[&str], out: &Path| {
                let mut args = vec![
                    "predict",
                    p(&store),
                    "--checkpoint",
                    p(&ck),
                    "--out",
                    p(out),
                ];
                args.extend_from_slice(extra);
                ginex(&args).unwrap();
                read_f32_npy(out)
            };
            let layerwise = predict(&["--layerwise"], &tmp.path().join(format!("{model}-l.npy")));
            let sampled = predict(
                &["--fanouts=-1,-1", "--policy", "none"],
                &tmp.path().join(format!("{model}-s.npy")),
            );
            assert_eq!(layerwise.len(), sampled.len());
            let diff = layerwise
                .iter()
                .zip(&sampled)
                .map(|(a, b)| (a - b).abs())
                .fold(0f32, f32::max);
            assert!(
                diff < 1e-4,
                "{model}: layer-wise and full fanouts differ by {diff}"
            );
        }
    }
}
