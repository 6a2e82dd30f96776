//! Link prediction through training (cargo feature `train`): link
//! batches leave their own edges out and are planned, a typed store trains
//! on one relation, relation splits made at import train and predict, and
//! predict scores pairs and writes embeddings.
#![cfg(feature = "train")]

#[path = "../../tests/common/mod.rs"]
mod common;

use ginex::internals::cache::Policy;
use ginex::internals::import::synth::{generate_store, NoProgress, SynthParams};
use ginex::Store;

/// libtorch's random generator is process-global: tests that train run one
/// at a time so dropout draws do not interleave.
static TORCH: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Reads a little-endian `<f4` .npy written by `NpyWriter`: its shape and
/// values.
fn read_f32_npy(path: &std::path::Path) -> (Vec<u64>, Vec<f32>) {
    let npy = ginex::internals::import::npy::NpyFile::open(path).unwrap();
    let (mut raw, mut values) = (Vec::new(), Vec::new());
    npy.read_f32(0, npy.len() as usize, &mut raw, &mut values)
        .unwrap();
    (npy.header.shape.clone(), values)
}

/// Link training runs the data path's link batches (#40): with every
/// neighbour drawn (fanouts -1), each training batch samples every
/// in-edge of its targets except its own positives and their reverses
/// (DGL's `exclude="self"` on an undirected graph), which are in those
/// in-lists (so a batch built without exclusion samples them and fails
/// here); its pairs are the batch's positives then its negatives; and the
/// ginex policy's misses are the inspector's Belady optimum, so the plan
/// covers the batches training runs.
#[test]
fn link_training_batches_leave_their_own_edges_out_and_are_planned() {
    use ginex::internals::sample::link::{LinkExclude, LinkTask, NegMode};
    use ginex::internals::sample::source::{InMemoryTopology, NeighborSource};
    use ginex::internals::train::link::{link_pass, training_edges, NegSampling};
    use std::collections::{BTreeSet, HashSet};
    let (dir, store) = common::small_epoch_store();
    let topo = InMemoryTopology::load(&store).unwrap();
    let positives = std::sync::Arc::new(training_edges(&store, None, true).unwrap());
    let all: HashSet<(u64, u64)> = positives
        .src
        .iter()
        .copied()
        .zip(positives.dst.iter().copied())
        .collect();
    let mut cfg = common::epoch_config(Policy::Ginex, &dir.path().join("runs"));
    cfg.fanouts = vec![-1, -1].into();
    cfg.batch_size = 20;
    cfg.max_batches = Some(6);
    let task = LinkTask {
        neg: 2,
        mode: NegMode::Binary,
        undirected: true,
        exclude: LinkExclude::Own,
        ..LinkTask::default()
    };
    let mut batches = 0;
    let link = (&positives, task, NegSampling::Corrupt);
    let report = link_pass(&store, &cfg, link, &mut |tb, pairs| {
        let labels = tb.link.as_ref().expect("link labels");
        assert_eq!((labels.num_pos(), pairs.len()), (20, 60));
        let mut own = HashSet::new();
        for i in 0..pairs.len() {
            let (s, d) = (tb.ids[pairs.src[i] as usize], tb.ids[pairs.dst[i] as usize]);
            if i < 20 {
                assert_eq!(pairs.label[i], 1.0);
                assert!(all.contains(&(s, d)), "({s}, {d}) is not a training edge");
                own.insert((s, d));
                own.insert((d, s));
            } else {
                assert_eq!(pairs.label[i], 0.0);
                let positive = (i - 20) / 2;
                assert_eq!(
                    pairs.src[i], pairs.src[positive],
                    "corruption keeps the source"
                );
            }
        }
        for (h, hop) in tb.hops.iter().enumerate() {
            let got: BTreeSet<(u64, u64)> = hop
                .src
                .iter()
                .zip(&hop.dst)
                .map(|(&s, &d)| (tb.ids[s as usize], tb.ids[d as usize]))
                .collect();
            let targets = &tb.ids[..hop.num_dst];
            let (mut want, mut dropped) = (BTreeSet::new(), 0);
            topo.with_lists(targets, &mut |i, list| {
                for &u in list {
                    if own.contains(&(u, targets[i])) {
                        dropped += 1;
                    } else {
                        want.insert((u, targets[i]));
                    }
                }
            })
            .unwrap();
            assert!(
                dropped >= 20,
                "batch {batches} hop {h}: own edges not in the lists"
            );
            assert!(
                got.iter().all(|e| !own.contains(e)),
                "batch {batches} hop {h}: own edge sampled"
            );
            assert_eq!(got, want, "batch {batches} hop {h}: sampled in-edges");
        }
        batches += 1;
        Ok(())
    })
    .unwrap();
    assert_eq!(batches, 6);
    let per_batch: Vec<u64> = report.batches.iter().map(|b| b.misses).collect();
    assert_eq!(per_batch, report.optimal_misses, "ginex vs the inspector");
    assert!(per_batch.iter().sum::<u64>() > 0);

    // `--exclude none` (GAE's full batch): the same batches sample every
    // in-edge, their own edges included, and stay planned.
    let keep = LinkTask {
        exclude: LinkExclude::Nothing,
        ..task
    };
    let mut own_seen = 0;
    let link = (&positives, keep, NegSampling::Corrupt);
    let report = link_pass(&store, &cfg, link, &mut |tb, pairs| {
        let own: HashSet<(u64, u64)> = (0..20)
            .flat_map(|i| {
                let (s, d) = (tb.ids[pairs.src[i] as usize], tb.ids[pairs.dst[i] as usize]);
                [(s, d), (d, s)]
            })
            .collect();
        for hop in &tb.hops {
            let got: BTreeSet<(u64, u64)> = hop
                .src
                .iter()
                .zip(&hop.dst)
                .map(|(&s, &d)| (tb.ids[s as usize], tb.ids[d as usize]))
                .collect();
            let targets = &tb.ids[..hop.num_dst];
            let mut want = BTreeSet::new();
            topo.with_lists(targets, &mut |i, list| {
                want.extend(list.iter().map(|&u| (u, targets[i])));
            })
            .unwrap();
            own_seen += got.iter().filter(|e| own.contains(e)).count();
            assert_eq!(got, want, "exclude none: every in-edge");
        }
        Ok(())
    })
    .unwrap();
    assert!(own_seen >= 20, "own edges sampled: {own_seen}");
    let per_batch: Vec<u64> = report.batches.iter().map(|b| b.misses).collect();
    assert_eq!(per_batch, report.optimal_misses, "ginex vs the inspector");
}

/// Link prediction on one relation of a typed store (`--target-relation`,
/// #40): the relation's positives are exactly its edges (source type to
/// destination type, as many as the schema counts) with negatives drawn
/// from its destination type; an R-GCN link model trains on them through
/// the data path (the loss falls); an unknown relation, a homogeneous
/// store and the flag without `--task link` are refused with the reason.
#[test]
fn link_training_on_one_relation_of_a_typed_store() {
    use ginex::internals::sample::link::{target_relation, LinkPositives};
    let _torch = TORCH.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let store = common::typed_store(dir.path(), 800);
    let schema = store.schema().unwrap();
    let r = target_relation(&store, "author:writes:paper").unwrap();
    let ids = |t: &str| schema.node_types[schema.type_index(t).unwrap()].ids();
    let (authors, papers) = (ids("author"), ids("paper"));
    let pos = LinkPositives::of_relation(&store, r, false).unwrap();
    assert_eq!(pos.len() as u64, schema.relations[r].num_edges);
    assert!(!pos.is_empty());
    assert!(pos.src.iter().all(|u| authors.contains(u)));
    assert!(pos.dst.iter().all(|v| papers.contains(v)));
    assert_eq!(pos.neg_range, Some(papers.clone()));

    let ginex = |args: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ginex"))
            .args(args.split_whitespace())
            .current_dir(dir.path())
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let recipe = "--task link --decoder dot --neg 1 --model rgcn --hidden 16 --fanouts 5,5 \
                  --batch-size 100 --epochs 3 --lr 0.01 --dropout 0 --device cpu --workers 1 \
                  --policy ginex --run-dir runs";
    let (ok, stdout, stderr) = ginex(&format!(
        "train typed-af --target-relation author:writes:paper {recipe}"
    ));
    assert!(ok, "{stderr}");
    let epochs: Vec<&str> = stdout.lines().filter(|l| l.starts_with("epoch ")).collect();
    assert_eq!(epochs.len(), 3, "{stdout}");
    let loss = |l: &str| -> f64 {
        let after = l.split("loss ").nth(1).unwrap();
        after.split(',').next().unwrap().parse().unwrap()
    };
    assert!(loss(epochs[2]) < loss(epochs[0]), "{stdout}");

    let (ok, _, stderr) = ginex(&format!(
        "train typed-af --target-relation author:reads:paper {recipe}"
    ));
    assert!(
        !ok && stderr.contains("has no such relation") && stderr.contains("author:writes:paper"),
        "{stderr}"
    );
    let (ok, _, stderr) =
        ginex("epoch typed-af --target-relation author:writes:paper --run-dir runs");
    assert!(!ok && stderr.contains("is for --task link"), "{stderr}");
    let p = SynthParams {
        nodes: 300,
        seed: 2,
        ..SynthParams::default()
    };
    generate_store(&p, &dir.path().join("plain"), &NoProgress).unwrap();
    let (ok, _, stderr) = ginex(&format!(
        "train plain --target-relation author:writes:paper {}",
        recipe.replace("rgcn", "gcn")
    ));
    assert!(!ok && stderr.contains("is homogeneous"), "{stderr}");
}

/// Link prediction on a relation split at import (#40): the MAG-shaped
/// typed store, exported and re-imported with `--edge-split
/// --target-relation author:writes:paper`, trains an R-GCN link model
/// without naming the relation (the splits record it) and evaluates the
/// relation's held-out edges every epoch; `predict --task link` scores
/// them (as many as the split holds, named by the relation); another
/// relation than the splits' is refused with both names.
#[test]
fn link_prediction_on_a_relation_split_at_import() {
    let _torch = TORCH.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let typed = common::typed_store(dir.path(), 800);
    let run = |bin: &str, args: &[&str]| {
        let out = std::process::Command::new(bin)
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, report, err) = run(
        env!("CARGO_BIN_EXE_ginex-export"),
        &["dgl", "typed-af", "--out", "exp", "--quiet"],
    );
    assert!(ok, "{err}");
    let cmd = report
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("rebuild the same store: ginex-import ")
        })
        .unwrap_or_else(|| panic!("{report}"));
    let mut args: Vec<&str> = cmd
        .split_whitespace()
        .map(|a| if a == "STORE" { "rel" } else { a })
        .collect();
    args.extend([
        "--edge-split",
        "0.8,0.1,0.1",
        "--split-seed",
        "3",
        "--target-relation",
        "author:writes:paper",
        "--quiet",
    ]);
    let (ok, _, err) = run(env!("CARGO_BIN_EXE_ginex-import"), &args);
    assert!(ok, "{err}");
    let store = Store::open(dir.path().join("rel")).unwrap();
    let schema = store.schema().unwrap();
    let r = schema
        .relations
        .iter()
        .position(|r| schema.canonical(r) == "author:writes:paper")
        .unwrap();
    let s = store.edge_splits().unwrap().unwrap();
    assert_eq!(s.relation, Some(r as u32));
    let ids = |t: &str| schema.node_types[schema.type_index(t).unwrap()].ids();
    let (authors, papers) = (ids("author"), ids("paper"));
    let held = s.valid.len() + s.test.len();
    assert!(s.valid.len() > 5 && s.test.len() > 5, "{held}");
    for split in [&s.valid, &s.test] {
        let neg = split.negatives.as_ref().unwrap();
        assert!(split
            .src
            .iter()
            .chain(&neg.src)
            .all(|u| authors.contains(u)));
        assert!(split.dst.iter().chain(&neg.dst).all(|v| papers.contains(v)));
    }
    // Only the relation lost edges: its held-out ones.
    let before = typed.schema().unwrap();
    for (a, b) in before.relations.iter().zip(&schema.relations) {
        let lost = if b.name == "writes" { held as u64 } else { 0 };
        assert_eq!(a.num_edges - b.num_edges, lost, "{}", b.name);
    }

    let recipe = "--task link --decoder dot --neg 1 --model rgcn --hidden 16 --fanouts 5,5 \
                  --eval-fanouts=-1,-1 --batch-size 100 --epochs 2 --lr 0.01 --dropout 0 \
                  --device cpu --workers 1 --policy ginex --run-dir runs --checkpoint ck";
    let ginex = |a: &str| {
        let args: Vec<&str> = a.split_whitespace().collect();
        run(env!("CARGO_BIN_EXE_ginex"), &args)
    };
    let (ok, stdout, err) = ginex(&format!("train rel {recipe}"));
    assert!(ok, "{err}");
    let evals: Vec<&str> = stdout.lines().filter(|l| l.starts_with("epoch ")).collect();
    assert_eq!(evals.len(), 2, "{stdout}");
    assert!(evals.iter().all(|l| !l.contains("valid AUC -")), "{stdout}");
    let (ok, stdout, err) =
        ginex("predict rel --checkpoint ck --task link --device cpu --run-dir runs");
    assert!(ok, "{err}");
    let line = stdout
        .lines()
        .find(|l| l.starts_with("test edges of author:writes:paper, model: AUC"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        line.contains(&format!("({} positives x 1 negatives)", s.test.len())),
        "{line}"
    );
    let (ok, _, err) = ginex(
        "predict rel --checkpoint ck --task link --device cpu --run-dir runs --target-relation paper:cites:paper",
    );
    assert!(
        !ok && err.contains("--target-relation paper:cites:paper")
            && err.contains("are of author:writes:paper"),
        "{err}"
    );
}

/// `ginex train --task link` end to end on a homophilous synthetic store
/// without held-out edges (every edge trains): the epochs log pair
/// accuracy and a falling loss, the checkpoint records the task and the
/// decoder, and `predict --task link` writes every node's embedding and
/// scores given pairs with the decoder, edges well above random pairs;
/// mismatched flags and bad pairs are refused with the reason.
#[test]
fn link_training_learns_edges_and_predict_scores_pairs() {
    let _torch = TORCH.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let p = SynthParams {
        nodes: 600,
        avg_degree: 6.0,
        dim: 8,
        classes: 8,
        seed: 4,
        split: [0.4, 0.2, 0.2],
        feature_noise: 0.3,
        ..SynthParams::default()
    };
    generate_store(&p, &dir.path().join("g"), &NoProgress).unwrap();
    let store = Store::open(dir.path().join("g")).unwrap();
    // `ginex ARGS` in the test directory: success, stdout, stderr.
    let ginex = |args: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ginex"))
            .args(args.split_whitespace())
            .current_dir(dir.path())
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, stdout, stderr) = ginex(
        "train g --task link --decoder dot --neg 2 --model gcn --hidden 16 --fanouts 5,5 \
         --batch-size 100 --epochs 4 --lr 0.01 --dropout 0 --device cpu --workers 1 \
         --policy ginex --run-dir runs --checkpoint ckpt",
    );
    assert!(ok, "{stderr}");
    let epochs: Vec<&str> = stdout.lines().filter(|l| l.starts_with("epoch ")).collect();
    assert_eq!(epochs.len(), 4, "{stdout}");
    assert!(
        epochs
            .iter()
            .all(|l| l.contains(", train pair acc ") && l.contains(" pairs/s")),
        "{stdout}"
    );
    let loss = |l: &str| -> f64 {
        let after = l.split("loss ").nth(1).unwrap();
        after.split(',').next().unwrap().parse().unwrap()
    };
    assert!(loss(epochs[3]) < loss(epochs[0]), "{stdout}");
    let latest = std::fs::read_to_string(dir.path().join("ckpt/LATEST")).unwrap();
    let meta: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.path().join(format!("ckpt/{}.json", latest.trim()))).unwrap(),
    )
    .unwrap();
    assert_eq!(meta["task"], "link");
    assert_eq!(meta["decoder"], "dot");
    assert_eq!(meta["classes"], 16, "the embedding width");

    // Pairs: 150 edges of the graph, then 150 random pairs.
    let mut pairs: Vec<i64> = Vec::new();
    for v in 0..store.num_nodes() {
        for u in store.in_neighbors(v).unwrap() {
            if pairs.len() < 300 {
                pairs.extend([u as i64, v as i64]);
            }
        }
    }
    let mut x = 12345u64;
    while pairs.len() < 600 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        pairs.push(((x >> 33) % store.num_nodes()) as i64);
    }
    let npy = common::npy_bytes("<i8", "(300, 2)", &common::i64_bytes(&pairs));
    std::fs::write(dir.path().join("pairs.npy"), npy).unwrap();
    let (ok, stdout, stderr) = ginex(
        "predict g --checkpoint ckpt --task link --embeddings z.npy --score pairs.npy \
         --out scores.npy --device cpu",
    );
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("wrote z.npy (600 nodes x 16 values)"),
        "{stdout}"
    );
    let (shape, z) = read_f32_npy(&dir.path().join("z.npy"));
    assert_eq!(shape, vec![600, 16]);
    assert!(z.iter().all(|x| x.is_finite()));
    let (shape, scores) = read_f32_npy(&dir.path().join("scores.npy"));
    assert_eq!(shape, vec![300]);
    // The scores are the decoder's: the dot product of the embeddings.
    let row = |v: i64| &z[v as usize * 16..(v as usize + 1) * 16];
    let dot: f32 = row(pairs[0])
        .iter()
        .zip(row(pairs[1]))
        .map(|(a, b)| a * b)
        .sum();
    assert!((dot - scores[0]).abs() < 1e-3 * dot.abs().max(1.0));
    let auc = ginex::internals::link_metrics::roc_auc(&scores[..150], &scores[150..])
        .unwrap()
        .unwrap();
    eprintln!("AUC of 150 edges against 150 random pairs: {auc}");
    assert!(
        auc > 0.8,
        "edges should score above random pairs: AUC {auc}"
    );

    // Mismatched flags and bad pairs are refused with the reason.
    let (ok, _, stderr) = ginex("predict g --checkpoint ckpt --task node --out l.npy");
    assert!(
        !ok && stderr.contains("trained for --task link"),
        "{stderr}"
    );
    let (ok, _, stderr) = ginex("predict g --checkpoint ckpt --score pairs.npy");
    assert!(!ok && stderr.contains("give both or neither"), "{stderr}");
    let npy = common::npy_bytes("<i8", "(1, 2)", &common::i64_bytes(&[3, 600]));
    std::fs::write(dir.path().join("bad.npy"), npy).unwrap();
    let (ok, _, stderr) = ginex("predict g --checkpoint ckpt --score bad.npy --out s2.npy");
    assert!(
        !ok && stderr.contains("bad.npy") && stderr.contains("600"),
        "{stderr}"
    );
    let (ok, _, stderr) = ginex("train g --neg 3 --epochs 1 --device cpu");
    assert!(
        !ok && stderr.contains("--neg 3 is for --task link"),
        "{stderr}"
    );
}
