//! Training through the data path (cargo feature `train`): it learns, a
//! resumed run ends where an uninterrupted one does, mismatched checkpoints
//! are refused, predict writes every node's logits. (Relational models:
//! `train_relational.rs`; link prediction: `train_link.rs`.)
#![cfg(feature = "train")]

#[path = "../../tests/common/mod.rs"]
mod common;
mod train_common;

use train_common::{dense_graph, full_data, max_abs_diff, options, params};

use ginex::internals::cache::Policy;
use ginex::internals::import::synth::{generate_store, NoProgress, SynthParams};
use ginex::internals::train::eval::{logits, predict};
use ginex::internals::train::layerwise::{
    layerwise_logits, layerwise_logits_with, LayerwiseMethod, LayerwiseOptions,
};
use ginex::internals::train::layerwise_plan::StreamPlan;
use ginex::internals::train::layerwise_stream::{self, streamed_logits};
use ginex::internals::train::model::ModelKind;
use ginex::internals::train::options::{LrSchedule, TrainOptions};
use ginex::internals::train::run::train;
use ginex::internals::train::tch::{Device, Kind, Tensor};
use ginex::internals::train::trainer::{OptimizerKind, TrainConfig, Trainer};
use ginex::Store;

/// libtorch's random generator is process-global: tests that train run one
/// at a time so dropout draws do not interleave.
static TORCH: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn setup(dir: &std::path::Path) -> Store {
    let p = SynthParams {
        nodes: 6000,
        avg_degree: 12.0,
        dim: 16,
        classes: 4,
        seed: 5,
        split: [0.4, 0.1, 0.1],
        feature_noise: 2.0,
        ..SynthParams::default()
    };
    common::open_synth_store(dir, "s", &p)
}

/// The synthetic store's own features are weak (noise 2.0 around unit
/// centroids) and its neighbors informative (homophily 0.8): after 6 epochs
/// GraphSAGE must beat the MLP by at least 20 points of test accuracy.
/// Seeds are fixed and CPU training is deterministic, so this cannot flake;
/// measured when written: sage 0.6370, mlp 0.3921 (test accuracy, 4 classes).
#[test]
fn sage_learns_and_beats_mlp_by_20_points() {
    let _torch = TORCH.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let store = setup(dir.path());
    let sage = train(
        &store,
        &options(dir.path(), ModelKind::Sage, Policy::Ginex, 6, "a"),
        &mut std::io::sink(),
    )
    .unwrap();
    let mlp = train(
        &store,
        &options(dir.path(), ModelKind::Mlp, Policy::Degree, 6, "b"),
        &mut std::io::sink(),
    )
    .unwrap();
    let (s, m) = (sage.last().unwrap(), mlp.last().unwrap());
    eprintln!(
        "test accuracy after 6 epochs: sage {:.4}, mlp {:.4}",
        s.test_acc.unwrap(),
        m.test_acc.unwrap()
    );
    assert!(
        sage[0].loss > s.loss,
        "loss did not fall: {} -> {}",
        sage[0].loss,
        s.loss
    );
    assert!(
        s.test_acc.unwrap() >= m.test_acc.unwrap() + 0.20,
        "sage {:?} vs mlp {:?}",
        s.test_acc,
        m.test_acc
    );
}

/// Caching never changes training: the per-batch losses of the same run
/// under `none`, `ginex` and `degree` are bit-identical.
#[test]
fn cache_policy_never_changes_training() {
    let _torch = TORCH.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let store = setup(dir.path());
    let losses: Vec<Vec<u64>> = [Policy::None, Policy::Ginex, Policy::Degree]
        .into_iter()
        .map(|p| {
            let r = train(
                &store,
                &options(dir.path(), ModelKind::Sage, p, 1, p.name()),
                &mut std::io::sink(),
            )
            .unwrap();
            r[0].batch_losses.iter().map(|l| l.to_bits()).collect()
        })
        .collect();
    assert!(losses[0].len() > 5);
    assert_eq!(losses[0], losses[1], "ginex changed the losses");
    assert_eq!(losses[0], losses[2], "degree changed the losses");
}

#[test]
fn resumed_training_matches_uninterrupted_and_bad_checkpoints_are_refused() {
    let _torch = TORCH.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let store = setup(dir.path());
    let straight = train(
        &store,
        &options(dir.path(), ModelKind::Gcn, Policy::Ginex, 3, "straight"),
        &mut std::io::sink(),
    )
    .unwrap();
    train(
        &store,
        &options(dir.path(), ModelKind::Gcn, Policy::Ginex, 1, "split"),
        &mut std::io::sink(),
    )
    .unwrap();
    let mut resume = options(dir.path(), ModelKind::Gcn, Policy::Ginex, 3, "split");
    resume.resume = true;
    let rest = train(&store, &resume, &mut std::io::sink()).unwrap();
    assert_eq!(rest.len(), 2);
    assert_eq!(
        rest[1].loss.to_bits(),
        straight[2].loss.to_bits(),
        "final loss differs after resume"
    );
    assert_eq!(rest[1].valid_acc, straight[2].valid_acc);
    let a = std::fs::read(dir.path().join("straight/epoch-00002.ot")).unwrap();
    let b = std::fs::read(dir.path().join("split/epoch-00002.ot")).unwrap();
    assert_eq!(a, b, "final parameters differ after resume");

    let mut other = options(dir.path(), ModelKind::Gcn, Policy::Ginex, 3, "split");
    other.resume = true;
    other.model.hidden = 16;
    let err = train(&store, &other, &mut std::io::sink())
        .unwrap_err()
        .to_string();
    assert!(err.contains("hidden"), "{err}");
    let ot = dir.path().join("split/epoch-00002.ot");
    std::fs::write(&ot, b"not a checkpoint").unwrap();
    assert!(train(&store, &resume, &mut std::io::sink()).is_err());
}

#[test]
fn predict_returns_logits_for_every_node() {
    let _torch = TORCH.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let store = setup(dir.path());
    let opts = options(dir.path(), ModelKind::Sage, Policy::None, 1, "p");
    train(&store, &opts, &mut std::io::sink()).unwrap();
    let nodes: Vec<u64> = (0..store.num_nodes()).step_by(7).collect();
    let logits = predict(&store, &opts, &nodes).unwrap();
    assert_eq!(logits.len(), nodes.len() * 4);
    assert!(logits.iter().all(|x| x.is_finite()));
}

/// A small directed graph (synthetic: no self-loops, no duplicate edges).
fn small_store(dir: &std::path::Path) -> Store {
    let p = SynthParams {
        nodes: 150,
        avg_degree: 4.0,
        dim: 6,
        classes: 3,
        seed: 9,
        split: [0.4, 0.2, 0.2],
        ..SynthParams::default()
    };
    generate_store(&p, &dir.join("small"), &NoProgress).unwrap();
    Store::open(dir.join("small")).unwrap()
}

/// Layer-wise inference (every layer over the whole graph, full
/// neighbourhoods) equals per-node inference with full fanouts, for every
/// architecture, for nodes in any order; also when the budget is so small
/// that every chunk is one target and every hidden layer is spilled.
#[test]
fn layerwise_inference_equals_full_fanout_per_node_inference() {
    let _torch = TORCH.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let store = small_store(dir.path());
    let mut nodes: Vec<u64> = (0..store.num_nodes()).rev().step_by(3).collect();
    nodes.push(6);
    for model in [
        ModelKind::Sage,
        ModelKind::Gcn,
        ModelKind::Gat,
        ModelKind::Mlp,
    ] {
        let config = TrainConfig {
            model,
            hidden: 5,
            layers: 3,
            heads: 2,
            seed: 4,
            ..TrainConfig::default()
        };
        let trainer = Trainer::new(config, 6, 3, Device::Cpu);
        let mut data = full_data(dir.path());
        data.fanouts = vec![-1, -1, -1].into();
        let want = logits(&store, &trainer, &data, &nodes).unwrap();
        for (memory, spilled) in [(1u64 << 30, false), (4096, true)] {
            let opts = LayerwiseOptions {
                memory,
                spill_dir: dir.path().join("spill"),
                quiet: true,
            };
            let (got, stats) =
                layerwise_logits_with(&store, &trainer, &nodes, &opts, LayerwiseMethod::Gather)
                    .unwrap();
            assert_eq!(got.len(), want.len());
            let diff = got
                .iter()
                .zip(&want)
                .map(|(a, b)| (a - b).abs())
                .fold(0f32, f32::max);
            assert!(
                diff < 1e-4,
                "{model:?} at {memory} B: layer-wise differs by {diff}"
            );
            assert_eq!(stats.len(), 3);
            assert_eq!(stats[0].nodes, store.num_nodes());
            assert_eq!(stats[0].edges, store.num_edges());
            assert_eq!(stats[2].nodes, nodes.len() as u64);
            assert_eq!(
                stats[0].spilled_bytes > 0,
                spilled,
                "{model:?} at {memory} B"
            );
            if spilled {
                assert!(stats[0].chunks >= store.num_nodes() / 2);
            }
        }
        // The spill files are gone.
        let left = std::fs::read_dir(dir.path().join("spill"))
            .map(|d| d.count())
            .unwrap_or(0);
        assert_eq!(left, 0);
    }
}

/// With full fanouts, GCN over sampled blocks equals full-batch
/// `D^-1/2 (A+I) D^-1/2 X W` (D: the graph's in-degrees + 1) to float
/// tolerance, for every node and across batch boundaries.
/// Streaming layer-wise inference (sequential passes into destination
/// accumulators) gives the gather path's logits and per-node inference's,
/// in one pass or in many (a plan whose partitions hold a few
/// destinations), for SAGE, GCN and MLP, 2 and 3 layers. Tolerance: a
/// destination's messages are summed in source order after the matmul
/// instead of in list order before it, so the two differ by float
/// rounding, about `(deg + dim) × 2^-24` of the magnitudes summed (< 1e-5
/// here); 1e-4 catches any wrong edge, degree or weight (those move
/// logits by > 1e-2). A budget below the plan's minimum is refused; the
/// spill files are gone afterwards.
#[test]
fn streamed_layerwise_equals_the_gather_path_in_one_pass_or_many() {
    let _torch = TORCH.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let store = small_store(dir.path());
    let mut nodes: Vec<u64> = (0..store.num_nodes()).rev().step_by(3).collect();
    nodes.extend([6, 0]);
    let opts = LayerwiseOptions {
        memory: 1 << 30,
        spill_dir: dir.path().join("spill"),
        quiet: true,
    };
    for (model, layers) in [
        (ModelKind::Sage, 2),
        (ModelKind::Sage, 3),
        (ModelKind::Gcn, 2),
        (ModelKind::Gcn, 3),
        (ModelKind::Mlp, 2),
    ] {
        let config = TrainConfig {
            model,
            hidden: 5,
            layers,
            seed: 4,
            ..TrainConfig::default()
        };
        let trainer = Trainer::new(config, 6, 3, Device::Cpu);
        assert!(layerwise_stream::supported(&store, &trainer));
        let mut data = full_data(dir.path());
        data.fanouts = vec![-1; layers].into();
        let per_node = logits(&store, &trainer, &data, &nodes).unwrap();
        let (gathered, _) =
            layerwise_logits_with(&store, &trainer, &nodes, &opts, LayerwiseMethod::Gather)
                .unwrap();
        let shape = layerwise_stream::shape(&store, &trainer, &nodes).unwrap();
        let one = StreamPlan::new(1 << 30, 0, &shape).unwrap();
        // Room for the output, a row of each buffer and ~3 destinations.
        let minimum = shape.output_values * 4
            + shape.targets * 16
            + shape.row_bytes
            + 4 * (2 * shape.max_in + 6 * shape.max_out)
            + 8 * shape.max_message.max(1);
        let many = StreamPlan::new(minimum + 20 * 4 * 5 + 8 * 20, 0, &shape).unwrap();
        for (plan, what) in [(one, "one pass"), (many, "many passes")] {
            let (got, stats) = streamed_logits(&store, &trainer, &nodes, &opts, &plan).unwrap();
            let what = format!("{model:?} x{layers}, {what}");
            assert_eq!(got.len(), nodes.len() * 3, "{what}");
            for (reference, name) in [(&gathered, "gather"), (&per_node, "per-node")] {
                let diff = got
                    .iter()
                    .zip(reference.iter())
                    .map(|(a, b)| (a - b).abs())
                    .fold(0f32, f32::max);
                assert!(diff < 1e-4, "{what}: differs from {name} by {diff}");
            }
            assert!(got.iter().any(|x| x.abs() > 1e-2), "{what}: all near zero");
            assert_eq!(stats.len(), layers);
            assert_eq!(stats[0].nodes, store.num_nodes());
            let distinct = nodes.iter().collect::<std::collections::HashSet<_>>().len();
            assert_eq!(stats[layers - 1].nodes, distinct as u64);
            let aggregates = model != ModelKind::Mlp;
            assert_eq!(
                stats[0].edges,
                if aggregates { store.num_edges() } else { 0 }
            );
            if aggregates && what.ends_with("many passes") {
                assert!(stats[0].passes >= 10, "{what}: {} passes", stats[0].passes);
            } else {
                assert_eq!(stats[0].passes, 1, "{what}");
            }
            assert!(stats[0].spilled_bytes > 0);
        }
        // Through the public entry: streamed, within the measured budget;
        // a node asked for twice gets its row twice.
        let mut twice = nodes.clone();
        twice.push(nodes[0]);
        let (auto, stats) = layerwise_logits(&store, &trainer, &twice, &opts).unwrap();
        assert!(stats.iter().all(|s| s.passes > 0 && s.chunks == 0));
        assert_eq!(auto.len(), gathered.len() + 3);
        assert_eq!(auto[..3], auto[auto.len() - 3..]);
        // A budget below the process's own resident memory is refused.
        let tiny = LayerwiseOptions {
            memory: 4096,
            ..opts.clone()
        };
        let err = layerwise_logits_with(&store, &trainer, &nodes, &tiny, LayerwiseMethod::Stream)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("needs at least") && err.contains("--memory gives 1 MiB"),
            "{err}"
        );
    }
    let left = std::fs::read_dir(dir.path().join("spill"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(left, 0, "spill files left behind");
    // GAT is not a sum over in-edges: not streamed, and refused when asked.
    let gat = Trainer::new(
        TrainConfig {
            model: ModelKind::Gat,
            hidden: 4,
            heads: 2,
            ..TrainConfig::default()
        },
        6,
        3,
        Device::Cpu,
    );
    assert!(!layerwise_stream::supported(&store, &gat));
    let err = layerwise_logits_with(&store, &gat, &nodes, &opts, LayerwiseMethod::Stream)
        .unwrap_err()
        .to_string();
    assert!(err.contains("not a sum over in-edges"), "{err}");
}

#[test]
fn gcn_with_full_fanouts_equals_dense_full_batch_gcn() {
    let _torch = TORCH.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let store = small_store(dir.path());
    let config = TrainConfig {
        model: ModelKind::Gcn,
        hidden: 5,
        layers: 2,
        seed: 4,
        ..TrainConfig::default()
    };
    let trainer = Trainer::new(config, 6, 3, Device::Cpu);
    let nodes: Vec<u64> = (0..store.num_nodes()).collect();
    let got = logits(&store, &trainer, &full_data(dir.path()), &nodes).unwrap();

    let (x, a) = dense_graph(&store);
    let n = store.num_nodes() as i64;
    let a_hat = a + Tensor::eye(n, (Kind::Float, Device::Cpu));
    let d = a_hat.sum_dim_intlist(1, false, Kind::Float).rsqrt();
    let norm = d.unsqueeze(1) * a_hat * d.unsqueeze(0);
    let p = params(&trainer);
    let layer = |h: &Tensor, i: usize| {
        norm.matmul(&h.matmul(&p[&format!("layer{i}.root.weight")].tr()))
            + &p[&format!("layer{i}.root.bias")]
    };
    let want = layer(&layer(&x, 0).relu(), 1);
    let diff = max_abs_diff(&got, &want);
    assert!(diff < 1e-5, "GCN differs from dense GCN by {diff}");
    // Block degrees would differ: the test sees the normalisation.
    assert!(want.abs().max().double_value(&[]) > 1e-3);
}

/// Dense GAT layer: softmax over `A + I` of LeakyReLU(0.2) attention, heads
/// concatenated (hidden) or averaged (last).
fn dense_gat_layer(
    h: &Tensor,
    mask: &Tensor,
    p: &std::collections::HashMap<String, Tensor>,
    i: usize,
    last: bool,
) -> Tensor {
    let att_src = &p[&format!("layer{i}.att_src")];
    let (heads, out) = (att_src.size()[0], att_src.size()[1]);
    let n = h.size()[0];
    let wh = h
        .matmul(&p[&format!("layer{i}.weight")].tr())
        .view([n, heads, out]);
    let s_src = (&wh * att_src.unsqueeze(0)).sum_dim_intlist(-1, false, Kind::Float); // n × heads
    let s_dst = (&wh * p[&format!("layer{i}.att_dst")].unsqueeze(0)).sum_dim_intlist(
        -1,
        false,
        Kind::Float,
    );
    // e[h][i][j] = s_dst[i] + s_src[j]
    let e = s_dst.tr().unsqueeze(2) + s_src.tr().unsqueeze(1);
    let e = e.maximum(&(&e * 0.2));
    let e = e.masked_fill(&mask.eq(0.0).unsqueeze(0), f64::NEG_INFINITY);
    let alpha = e.softmax(-1, Kind::Float); // heads × n × n
    let outs = alpha.matmul(&wh.permute([1, 0, 2])); // heads × n × out
    let combined = if last {
        outs.mean_dim(0, false, Kind::Float)
    } else {
        outs.permute([1, 0, 2]).reshape([n, heads * out])
    };
    combined + &p[&format!("layer{i}.bias")]
}

/// With full fanouts, GAT over sampled blocks equals a dense GAT (masked
/// softmax over the whole graph) to float tolerance.
#[test]
fn gat_with_full_fanouts_equals_dense_gat() {
    let _torch = TORCH.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let store = small_store(dir.path());
    let config = TrainConfig {
        model: ModelKind::Gat,
        hidden: 4,
        layers: 2,
        heads: 3,
        out_heads: 2,
        seed: 6,
        ..TrainConfig::default()
    };
    let trainer = Trainer::new(config, 6, 3, Device::Cpu);
    let nodes: Vec<u64> = (0..store.num_nodes()).rev().collect();
    let got = logits(&store, &trainer, &full_data(dir.path()), &nodes).unwrap();

    let (x, a) = dense_graph(&store);
    let n = store.num_nodes() as i64;
    let mask = a + Tensor::eye(n, (Kind::Float, Device::Cpu));
    let p = params(&trainer);
    let hidden = dense_gat_layer(&x, &mask, &p, 0, false).elu();
    let want = dense_gat_layer(&hidden, &mask, &p, 1, true);
    let order = Tensor::from_slice(&nodes.iter().map(|&v| v as i64).collect::<Vec<_>>());
    let want = want.index_select(0, &order);
    let diff = max_abs_diff(&got, &want);
    assert!(diff < 1e-5, "GAT differs from dense GAT by {diff}");
}

/// Every knob reaches the optimizer or the model: weight decay (L2 and
/// decoupled), input dropout, init and the lr schedule each change the
/// parameters after one epoch; the defaults reproduce themselves.
#[test]
fn knobs_change_training_and_are_recorded() {
    let _torch = TORCH.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let store = small_store(dir.path());
    let run = |name: &str, f: &dyn Fn(&mut TrainOptions)| {
        let mut o = options(dir.path(), ModelKind::Gcn, Policy::None, 2, name);
        o.data.fanouts = vec![3, 3].into();
        o.data.batch_size = 30;
        f(&mut o);
        train(&store, &o, &mut std::io::sink()).unwrap();
        std::fs::read(dir.path().join(name).join("epoch-00001.ot")).unwrap()
    };
    let base = run("base", &|_| {});
    assert_eq!(base, run("base2", &|_| {}), "same options, different run");
    type Knob<'a> = (&'a str, &'a dyn Fn(&mut TrainOptions));
    let variants: [Knob; 6] = [
        ("wd", &|o| o.model.weight_decay = 0.05),
        ("adamw", &|o| {
            o.model.weight_decay = 0.05;
            o.model.optimizer = OptimizerKind::AdamW;
        }),
        ("indrop", &|o| o.model.input_dropout = 0.5),
        ("kaiming", &|o| {
            o.model.init = Some(ginex::internals::train::model::InitKind::Kaiming)
        }),
        ("cosine", &|o| o.lr_schedule = LrSchedule::Cosine),
        ("step", &|o| {
            o.lr_schedule = LrSchedule::Step {
                every: 1,
                gamma: 0.1,
            }
        }),
    ];
    let mut seen = vec![base];
    for (name, f) in variants {
        let got = run(name, f);
        assert!(!seen.contains(&got), "{name} did not change training");
        seen.push(got);
    }
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("adamw/epoch-00001.json")).unwrap())
            .unwrap();
    assert_eq!(meta["optimizer"], "adamw");
    assert_eq!(meta["weight_decay"], 0.05);
    assert_eq!(meta["init"], "glorot");
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("step/epoch-00001.json")).unwrap())
            .unwrap();
    assert_eq!(meta["lr_schedule"]["kind"], "step");
}

/// Early stopping keeps the best-validation epoch's checkpoint, removes the
/// others, and `predict` uses it; `--resume` of the stopped run says it is
/// complete and trains nothing.
#[test]
fn early_stop_keeps_best_checkpoint_which_predict_uses() {
    let _torch = TORCH.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let store = small_store(dir.path());
    let mut o = options(dir.path(), ModelKind::Gcn, Policy::None, 40, "es");
    o.data.fanouts = vec![3, 3].into();
    o.data.batch_size = 30;
    o.model.lr = 0.05;
    o.early_stop = Some(2);
    o.eval_fanouts = Some(vec![-1, -1].into());
    let results = train(&store, &o, &mut std::io::sink()).unwrap();
    assert!(results.len() < 40, "never stopped early");
    let best = results.iter().fold(
        &results[0],
        |b, r| if r.valid_acc > b.valid_acc { r } else { b },
    );
    let last = results.last().unwrap();
    assert_eq!(last.epoch, best.epoch + 2, "stopped at the wrong epoch");
    let ckpt = dir.path().join("es");
    let mut files: Vec<String> = std::fs::read_dir(&ckpt)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let stem = |e: u64| format!("epoch-{e:05}");
    let mut want = vec![
        format!("{}.json", stem(best.epoch)),
        format!("{}.ot", stem(best.epoch)),
        format!("{}.json", stem(last.epoch)),
        format!("{}.ot", stem(last.epoch)),
        "LATEST".to_string(),
        // The run's advisory lock file (src/io/dir_lock.rs), left in place.
        "LOCK".to_string(),
    ];
    want.sort();
    assert_eq!(files, want);

    let nodes: Vec<u64> = (0..store.num_nodes()).collect();
    let mut p = o.clone();
    p.data.fanouts = vec![-1, -1].into();
    let got = predict(&store, &p, &nodes).unwrap();
    let mut at_best = Trainer::new(o.model.clone(), 6, 3, Device::Cpu);
    at_best
        .load(&ckpt.join(format!("{}.ot", stem(best.epoch))))
        .unwrap();
    let want = logits(&store, &at_best, &p.data, &nodes).unwrap();
    assert_eq!(got, want, "predict did not use the best epoch");

    let mut again = o.clone();
    again.resume = true;
    let mut log = Vec::new();
    assert!(train(&store, &again, &mut log).unwrap().is_empty());
    let log = String::from_utf8(log).unwrap();
    assert!(log.contains("is complete"), "{log}");
}

/// A fresh run refuses a directory holding another run's checkpoints;
/// `overwrite` replaces them; `resume` of a finished run says so.
#[test]
fn checkpoint_directories_are_never_mixed() {
    let _torch = TORCH.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let store = small_store(dir.path());
    let mut o = options(dir.path(), ModelKind::Sage, Policy::None, 3, "c");
    o.data.fanouts = vec![3, 3].into();
    o.eval_every = 0;
    train(&store, &o, &mut std::io::sink()).unwrap();
    let mut other = options(dir.path(), ModelKind::Gcn, Policy::None, 2, "c");
    other.data.fanouts = vec![3, 3].into();
    let err = train(&store, &other, &mut std::io::sink())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("already holds checkpoints")
            && err.contains("--resume")
            && err.contains("--overwrite"),
        "{err}"
    );
    assert!(
        dir.path().join("c/epoch-00002.ot").exists(),
        "the refused run touched the old one"
    );
    other.overwrite = true;
    train(&store, &other, &mut std::io::sink()).unwrap();
    assert!(
        !dir.path().join("c/epoch-00002.ot").exists(),
        "old epochs left beside the new run"
    );
    let latest = std::fs::read_to_string(dir.path().join("c/LATEST")).unwrap();
    assert_eq!(latest, "epoch-00001");
    other.overwrite = false;
    other.resume = true;
    let mut log = Vec::new();
    assert!(train(&store, &other, &mut log).unwrap().is_empty());
    let log = String::from_utf8(log).unwrap();
    assert!(
        log.contains("is complete") && log.contains("nothing to do"),
        "{log}"
    );
    // More epochs continue the finished run.
    other.epochs = 3;
    assert_eq!(
        train(&store, &other, &mut std::io::sink()).unwrap().len(),
        1
    );
}

/// Crash safety: `ginex train` SIGKILLed at 10 moments (5 of them while a
/// checkpoint file is being written, held open by the test hook), each
/// time resumed with `--resume`, ends with exactly the parameters of an
/// uninterrupted run, and leaves no temporary file behind.
#[test]
fn killed_training_resumes_to_the_same_final_parameters() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let _torch = TORCH.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let p = SynthParams {
        nodes: 1500,
        avg_degree: 6.0,
        dim: 8,
        classes: 3,
        seed: 2,
        split: [0.4, 0.1, 0.1],
        ..SynthParams::default()
    };
    let store = dir.path().join("s");
    generate_store(&p, &store, &NoProgress).unwrap();
    let epochs = 8;
    let run = |ckpt: &str, resume: bool| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_ginex"));
        c.arg("train")
            .arg(&store)
            .args(["--model", "gcn", "--hidden", "16", "--fanouts", "4,4"])
            .args(["--batch-size", "150", "--policy", "none", "--device", "cpu"])
            .args(["--workers", "2", "--seed", "3", "--weight-decay", "0.0005"])
            .args(["--input-dropout", "0.2", "--early-stop", "100"])
            .args(["--epochs", &epochs.to_string()])
            .arg("--run-dir")
            .arg(dir.path().join(format!("runs-{ckpt}")))
            .arg("--checkpoint")
            .arg(dir.path().join(ckpt))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if resume {
            c.arg("--resume");
        }
        c
    };
    let out = run("straight", false).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let crash = dir.path().join("crash");
    // A temporary checkpoint file of process `pid` exists.
    let writing_by = |pid: Option<u32>| {
        std::fs::read_dir(&crash)
            .map(|d| {
                d.flatten().any(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    match pid {
                        Some(pid) => name.contains(&format!(".tmp-{pid}-")),
                        None => name.contains(".tmp-"),
                    }
                })
            })
            .unwrap_or(false)
    };
    let latest = || std::fs::read_to_string(crash.join("LATEST")).ok();
    // The kill moments follow the child's progress, not the clock, so the
    // same moments are hit on a fast or a slow machine. A mid-write kill
    // lands within 100 ms of the first temporary file, while one of the
    // three files of that checkpoint is held open for 120 ms in all: no
    // epoch is committed. Every other kill lands within 100 ms after a
    // new `LATEST`, before the next checkpoint can be committed: one epoch
    // each. Ten kills thus commit 5 of the 8 epochs and all ten land.
    let mut killed = 0;
    for k in 0..10u64 {
        let mut child = run("crash", true)
            .env("GINEX_TEST_CHECKPOINT_SLEEP_MS", "40")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id();
        let before = latest();
        let reached: Box<dyn Fn() -> bool> = if k % 2 == 0 {
            Box::new(|| writing_by(Some(pid)))
        } else {
            Box::new(|| latest() != before)
        };
        let started = Instant::now();
        while !reached() && started.elapsed() < Duration::from_secs(30) {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let delay = if k % 2 == 0 { k * 23 } else { k * 37 } % 100;
        std::thread::sleep(Duration::from_millis(delay));
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap();
            killed += 1;
        }
        child.wait().unwrap();
    }
    assert_eq!(killed, 10, "runs finished before they were killed");
    // 5 epochs committed when nothing is late; a loaded machine may let a
    // kill land later, so only require that the last resume has work left.
    let committed = latest().map_or(0, |l| l["epoch-".len()..].parse::<u64>().unwrap() + 1);
    assert!(
        (1..epochs).contains(&committed),
        "the kills committed {committed} of {epochs} epochs"
    );
    let out = run("crash", true).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = format!("epoch-{:05}.ot", epochs - 1);
    let a = std::fs::read(dir.path().join("straight").join(&last)).unwrap();
    let b = std::fs::read(crash.join(&last)).unwrap();
    assert!(
        a == b,
        "final parameters differ after {killed} kills and resumes"
    );
    assert!(
        !writing_by(None),
        "a temporary checkpoint file was left behind"
    );
    let out = run("crash", true).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("is complete"),
        "{stdout}"
    );
}

/// The binaries built with `train` find libtorch by themselves: the build
/// records its library directory as an rpath (tools/build.rs), so they
/// start with no `LD_LIBRARY_PATH` at all.
#[test]
fn binaries_start_without_ld_library_path() {
    for exe in [
        env!("CARGO_BIN_EXE_ginex"),
        env!("CARGO_BIN_EXE_ginex-dump"),
        env!("CARGO_BIN_EXE_ginex-import"),
        env!("CARGO_BIN_EXE_ginex-export"),
    ] {
        let out = std::process::Command::new(exe)
            .arg("--help")
            .env_remove("LD_LIBRARY_PATH")
            .output()
            .unwrap();
        assert!(
            out.status.success() && String::from_utf8_lossy(&out.stdout).contains("Usage"),
            "{exe} --help without LD_LIBRARY_PATH: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_ginex"))
        .args(["train", "--help"])
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert!(
        help.status.success(),
        "{}",
        String::from_utf8_lossy(&help.stderr)
    );
}

/// Training reports every batch of every epoch (running loss, seeds/s),
/// of every evaluation and of predict to the installed progress sink.
#[test]
fn training_progress_reaches_the_sink() {
    let phases = common::Phases::default();
    assert!(ginex::progress::install(Box::new(common::Recorder(
        phases.clone()
    ))));
    let _torch = TORCH.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let store = small_store(dir.path());
    let opts = options(dir.path(), ModelKind::Sage, Policy::Ginex, 2, "p");
    // Every test that trains holds TORCH: the phases from here on are ours.
    let first = phases.lock().unwrap().len();
    train(&store, &opts, &mut std::io::sink()).unwrap();
    let nodes: Vec<u64> = (0..store.num_nodes()).collect();
    predict(&store, &opts, &nodes).unwrap();
    let seen = phases.lock().unwrap()[first..].to_vec();
    let splits = store.splits().unwrap().unwrap();
    let batches = |n: usize| n.div_ceil(opts.data.batch_size) as u64;
    let names: Vec<&str> = seen.iter().map(|p| p.0.as_str()).collect();
    assert_eq!(
        names,
        ["epoch 0", "valid", "test", "epoch 1", "valid", "test", "predict"],
        "{seen:?}"
    );
    for (name, total, pos, message) in &seen {
        let want = match name.as_str() {
            "valid" => batches(splits.valid.len()),
            "test" => batches(splits.test.len()),
            "predict" => batches(nodes.len()),
            _ => batches(splits.train.len()),
        };
        assert_eq!((*total, *pos), (want, want), "{name}");
        let ok = match name.as_str() {
            "valid" | "test" => message.starts_with("acc "),
            "predict" => message.ends_with(" nodes/s"),
            _ => message.starts_with("loss ") && message.ends_with(" seeds/s"),
        };
        assert!(ok, "{name}: {message:?}");
    }
}

/// `ginex train` as a new user runs it: without LD_LIBRARY_PATH, outputs
/// under directories that do not exist yet; the epoch lines label the
/// accuracies, `--plot` writes a well-formed training-curve SVG, and off a
/// terminal nothing but the plain lines reaches stderr.
#[test]
fn train_cli_labels_accuracy_writes_the_curve_and_draws_no_progress_off_a_terminal() {
    let _torch = TORCH.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    small_store(dir.path());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ginex"))
        .arg("train")
        .arg(dir.path().join("small"))
        .args(["--model", "sage", "--hidden", "16", "--fanouts", "4,4"])
        .args(["--batch-size", "100", "--epochs", "3", "--device", "cpu"])
        .args(["--workers", "2", "--policy", "ginex"])
        .arg("--run-dir")
        .arg(dir.path().join("runs"))
        .arg("--report")
        .arg(dir.path().join("out/r.json"))
        .arg("--plot")
        .arg(dir.path().join("out/plots/curve.svg"))
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    let epochs: Vec<&str> = stdout.lines().filter(|l| l.starts_with("epoch ")).collect();
    assert_eq!(epochs.len(), 3, "{stdout}");
    for line in &epochs {
        assert!(
            line.contains(", train acc ")
                && line.contains(", valid acc ")
                && line.contains(", test acc ")
                && line.contains(" seeds/s"),
            "{line}"
        );
    }
    assert!(stdout.contains("training curve: "), "{stdout}");
    assert!(
        !stderr.contains('\r') && !stderr.contains('\x1b') && !stderr.contains("seeds/s"),
        "progress drawn off a terminal: {stderr:?}"
    );
    let svg = std::fs::read_to_string(dir.path().join("out/plots/curve.svg")).unwrap();
    ginex_cli::svg::check_well_formed(&svg).unwrap();
    assert!(svg.starts_with("<svg ") && svg.ends_with("</svg>\n"));
    assert_eq!(
        svg.matches("<polyline").count(),
        4,
        "loss, train, valid, test"
    );
    assert_eq!(svg.matches("<circle").count(), 12, "3 epochs x 4 lines");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("out/r.json")).unwrap()).unwrap();
    assert_eq!(report["epochs"].as_array().unwrap().len(), 3);
}
