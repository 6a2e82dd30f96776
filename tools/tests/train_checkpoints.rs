//! Checkpoints that prove themselves (issue 45, item 1; cargo feature
//! `train`): a flipped bit in a checkpoint's weights, or the `.ot` of
//! another run put in its place, is refused by `train --resume`, `predict`
//! and `ginex-dump --verify CK`; a checkpoint saved before the weights CRC
//! (metadata format 2) still resumes. Also `--eval-fanouts 0` and
//! `--workers 0` are reported under their own option (items 7 and 9).
#![cfg(feature = "train")]

#[path = "../../tests/common/mod.rs"]
mod common;

use std::path::Path;

use clap::Parser;
use ginex::internals::import::synth::SynthParams;
use ginex_cli::commands::{run, GinexCli};

use common::p;

fn ginex(args: &[&str]) -> ginex::Result<String> {
    let cli = GinexCli::try_parse_from(std::iter::once(&"ginex").chain(args))
        .map_err(|e| ginex::Error::invalid_argument(e.to_string()))?;
    let mut out = Vec::new();
    run(cli, &mut out)?;
    Ok(String::from_utf8(out).unwrap())
}

fn dump_verify(ck: &Path) -> ginex::Result<String> {
    use ginex_cli::dump::{run, DumpArgs};
    let a = DumpArgs::try_parse_from(["ginex-dump", "--verify", p(ck)]).unwrap();
    let mut out = Vec::new();
    run(&a, &mut out)?;
    Ok(String::from_utf8(out).unwrap())
}

/// `ginex train STORE` for `epochs` epochs into `ck` with `seed`.
fn train(
    store: &Path,
    ck: &Path,
    runs: &Path,
    epochs: &str,
    seed: &str,
    resume: bool,
) -> ginex::Result<String> {
    let mut args = vec![
        "train",
        p(store),
        "--model",
        "sage",
        "--hidden",
        "8",
        "--fanouts",
        "3,3",
        "--batch-size",
        "100",
        "--epochs",
        epochs,
        "--device",
        "cpu",
        "--workers",
        "1",
        "--policy",
        "none",
        "--seed",
        seed,
        "--run-dir",
        p(runs),
        "--checkpoint",
        p(ck),
    ];
    if resume {
        args.push("--resume");
    }
    ginex(&args)
}

fn predict(store: &Path, ck: &Path, out: &Path) -> ginex::Result<String> {
    ginex(&[
        "predict",
        p(store),
        "--checkpoint",
        p(ck),
        "--out",
        p(out),
        "--device",
        "cpu",
        "--workers",
        "1",
    ])
}

#[test]
fn a_damaged_or_swapped_checkpoint_is_refused_on_resume_and_predict() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let params = SynthParams {
        nodes: 600,
        avg_degree: 6.0,
        dim: 8,
        classes: 3,
        seed: 4,
        split: [0.5, 0.2, 0.2],
        ..SynthParams::default()
    };
    let store = common::synth_store(d, "s", &params);
    let (ck, other, runs) = (d.join("ck"), d.join("other"), d.join("runs"));
    train(&store, &ck, &runs, "2", "1", false).unwrap();
    train(&store, &other, &runs, "2", "2", false).unwrap();
    let latest = ck.join("epoch-00001.ot");
    let good = std::fs::read(&latest).unwrap();
    let said = dump_verify(&ck).unwrap();
    assert!(
        said.contains("of one run") && said.contains("match its metadata"),
        "{said}"
    );
    predict(&store, &ck, &d.join("a.npy")).unwrap();

    let refused_everywhere = |what: &str| {
        let want = "the weights do not match their metadata";
        let err = train(&store, &ck, &runs, "4", "1", true)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("epoch-00001.ot") && err.contains(want),
            "{what}: resume: {err}"
        );
        let out = d.join("b.npy");
        let err = predict(&store, &ck, &out).unwrap_err().to_string();
        assert!(err.contains(want), "{what}: predict: {err}");
        assert!(!out.exists(), "{what}: predict wrote {}", out.display());
        let err = dump_verify(&ck).unwrap_err().to_string();
        assert!(err.contains(want), "{what}: dump: {err}");
    };
    // One flipped bit in the middle of the latest weights.
    let mut flipped = good.clone();
    flipped[good.len() / 2] ^= 0x04;
    std::fs::write(&latest, &flipped).unwrap();
    refused_everywhere("a flipped bit");
    // The latest weights of another run (another seed) in their place.
    std::fs::copy(other.join("epoch-00001.ot"), &latest).unwrap();
    refused_everywhere("another run's .ot");
    std::fs::write(&latest, &good).unwrap();

    // A checkpoint saved before the weights CRC (format 2): resumed, its
    // weights unverified (a warning says so).
    let json = ck.join("epoch-00001.json");
    let mut meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(meta["format"], 3);
    assert!(
        meta["weights"]["crc32"].is_u64() && meta["run_identity"].is_u64(),
        "{meta}"
    );
    let obj = meta.as_object_mut().unwrap();
    obj.remove("weights");
    obj.remove("run_identity");
    obj.insert("format".into(), 2.into());
    std::fs::write(&json, serde_json::to_vec_pretty(&meta).unwrap()).unwrap();
    let said = dump_verify(&ck).unwrap();
    assert!(said.contains("not verified"), "{said}");
    train(&store, &ck, &runs, "3", "1", true).unwrap();
    // The epoch it saved carries the CRC again.
    let said = dump_verify(&ck).unwrap();
    assert!(
        said.contains("epoch-00002 (latest") && said.contains("match its metadata"),
        "{said}"
    );
}

#[test]
fn eval_fanouts_and_workers_errors_name_their_own_option() {
    let err = ginex(&["train", "S", "--eval-fanouts", "0"])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("--eval-fanouts \"0\"") && !err.contains("--fanouts \"0\""),
        "{err}"
    );
    let err = ginex(&["train", "S", "--workers", "0"])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("--workers") && err.contains("must be at least 1"),
        "{err}"
    );
}
