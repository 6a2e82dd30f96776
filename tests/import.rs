//! `ginex-import files`: a `ginex gen --raw` dataset imports to exactly the
//! store `ginex gen` writes, and bad inputs are clear errors that leave no
//! store behind.

use std::path::{Path, PathBuf};

use clap::Parser;
use ginex::cli::ginex::{run as ginex_run, GinexCli};
use ginex::cli::import::{run as import_run, ImportCli};

fn gen(args: &[&str]) {
    let cli = GinexCli::try_parse_from(["ginex", "gen", "--quiet"].iter().chain(args)).unwrap();
    ginex_run(cli, &mut Vec::new()).unwrap();
}

fn import(args: &[&str]) -> ginex::Result<String> {
    let cli = ImportCli::try_parse_from(["ginex-import", "files"].iter().chain(args)).unwrap();
    let mut out = Vec::new();
    import_run(&cli, &mut out)?;
    Ok(String::from_utf8(out).unwrap())
}

const GEN: [&str; 8] = [
    "--nodes",
    "3000",
    "--avg-degree",
    "9",
    "--dim",
    "12",
    "--seed",
    "4",
];

fn raw_and_store(dir: &Path, edges: &str) -> (PathBuf, PathBuf) {
    let raw = dir.join(format!("raw-{edges}"));
    let mut args: Vec<&str> = GEN.to_vec();
    args.extend(["--raw-edges", edges, "--raw", raw.to_str().unwrap()]);
    gen(&args);
    let store = dir.join("gen-store");
    if !store.exists() {
        let mut args: Vec<&str> = GEN.to_vec();
        args.extend(["--out", store.to_str().unwrap()]);
        gen(&args);
    }
    (raw, store)
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn gen_raw_imports_to_the_identical_store() {
    let dir = tempfile::tempdir().unwrap();
    for edges in ["npy", "csv"] {
        let (raw, store) = raw_and_store(dir.path(), edges);
        let out = dir.path().join(format!("imported-{edges}"));
        let report = import(&[
            "--edges",
            p(&raw.join(format!("edges.{edges}"))),
            "--features",
            p(&raw.join("features.npy")),
            "--labels",
            p(&raw.join("labels.npy")),
            "--num-classes",
            "16",
            "--train-ids",
            p(&raw.join("train_ids.npy")),
            "--valid-ids",
            p(&raw.join("valid_ids.npy")),
            "--test-ids",
            p(&raw.join("test_ids.npy")),
            "--out",
            p(&out),
        ])
        .unwrap();
        assert!(report.contains("verified"), "{report}");
        for f in [
            "MANIFEST",
            "features.pages",
            "features.crc",
            "indptr",
            "indices",
            "indices.seg",
            "labels",
            "splits",
        ] {
            assert_eq!(
                std::fs::read(store.join(f)).unwrap(),
                std::fs::read(out.join(f)).unwrap(),
                "{edges}: {f} differs from ginex gen's"
            );
        }
    }
}

#[test]
fn bad_inputs_are_clear_errors_and_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (raw, _) = raw_and_store(dir.path(), "npy");
    let feats = raw.join("features.npy");
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let out = dir.path().join("target");
    let base = |edges: &Path| {
        vec![
            "--edges".to_string(),
            p(edges).to_string(),
            "--features".into(),
            p(&feats).to_string(),
            "--out".into(),
            p(&out).to_string(),
        ]
    };
    let check = |args: Vec<String>, file: &str, want: &str| {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let err = import(&refs).expect_err(want).to_string();
        assert!(
            err.contains(file) && err.contains(want),
            "expected {file:?} and {want:?} in: {err}"
        );
        assert!(!out.exists(), "a store was left at the target after: {err}");
    };
    check(
        base(&write("range.csv", "0,1\n5,3000\n")),
        "range.csv:2",
        "not a node id",
    );
    check(base(&write("neg.csv", "0,1\n-4,2\n")), "neg.csv:2", "-4");
    check(
        base(&write("word.csv", "0,1\n1,two\n")),
        "word.csv:2",
        "integers",
    );
    check(
        base(&write("mixed.csv", "0,1\n1\t2\n")),
        "mixed.csv:2",
        "mixes delimiters",
    );

    // Truncated feature matrix.
    let bytes = std::fs::read(&feats).unwrap();
    let short = dir.path().join("short.npy");
    std::fs::write(&short, &bytes[..bytes.len() - 10]).unwrap();
    let mut args = base(&raw.join("edges.npy"));
    args[3] = p(&short).to_string();
    check(args, "short.npy", "truncated");

    // NaN features refused unless allowed.
    let mut nan = bytes.clone();
    let at = nan.len() - 4;
    nan[at..].copy_from_slice(&f32::NAN.to_le_bytes());
    let nan_path = dir.path().join("nan.npy");
    std::fs::write(&nan_path, &nan).unwrap();
    let mut args = base(&raw.join("edges.npy"));
    args[3] = p(&nan_path).to_string();
    check(args.clone(), "nan.npy", "--allow-nonfinite");
    args.push("--allow-nonfinite".into());
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    import(&refs).unwrap();
    std::fs::remove_dir_all(&out).unwrap();

    // Splits: out of range, overlapping, duplicated.
    let mut args = base(&raw.join("edges.npy"));
    args.extend([
        "--train-ids".into(),
        p(&write("train.txt", "1\n3000\n")).to_string(),
    ]);
    check(args, "train.txt:2", "not a node id");
    let mut args = base(&raw.join("edges.npy"));
    args.extend([
        "--train-ids".into(),
        p(&write("a.txt", "1\n2\n")).to_string(),
        "--test-ids".into(),
        p(&write("b.txt", "2\n")).to_string(),
    ]);
    check(args, "", "node 2 is in more than one");
    let mut args = base(&raw.join("edges.npy"));
    args.extend([
        "--train-ids".into(),
        p(&write("dup.txt", "5\n5\n")).to_string(),
    ]);
    check(args, "dup.txt", "more than once");

    // Labels of the wrong length; --num-nodes disagreeing with the features.
    let mut args = base(&raw.join("edges.npy"));
    args.extend(["--labels".into(), p(&raw.join("train_ids.npy")).to_string()]);
    check(args, "train_ids.npy", "expected (3000,)");
    let mut args = base(&raw.join("edges.npy"));
    args.extend(["--num-nodes".into(), "10".into()]);
    check(args, "features.npy", "--num-nodes 10");

    // An existing target is never replaced.
    std::fs::create_dir(&out).unwrap();
    let refs_owned = base(&raw.join("edges.npy"));
    let refs: Vec<&str> = refs_owned.iter().map(String::as_str).collect();
    assert!(import(&refs)
        .unwrap_err()
        .to_string()
        .contains("already exists"));
}

#[test]
fn undirected_dedup_and_random_split() {
    let dir = tempfile::tempdir().unwrap();
    let (raw, _) = raw_and_store(dir.path(), "npy");
    let edges = dir.path().join("e.txt");
    std::fs::write(&edges, "# tiny\n0 1\n0 1\n2 2\n1 2\n").unwrap();
    let out = dir.path().join("s");
    import(&[
        "--edges",
        p(&edges),
        "--features",
        p(&raw.join("features.npy")),
        "--undirected",
        "--dedup",
        "--remove-self-loops",
        "--split",
        "0.5,0.2,0.1",
        "--seed",
        "3",
        "--out",
        p(&out),
    ])
    .unwrap();
    let s = ginex::Store::open(&out).unwrap();
    assert_eq!(s.in_neighbors(0).unwrap(), vec![1]);
    assert_eq!(s.in_neighbors(1).unwrap(), vec![0, 2]);
    assert_eq!(s.in_neighbors(2).unwrap(), vec![1]);
    assert_eq!(s.num_edges(), 4);
    let sp = s.splits().unwrap().unwrap();
    let frac = sp.train.len() as f64 / 3000.0;
    assert!((0.45..0.55).contains(&frac), "train fraction {frac}");
}
