//! Reliability round 4 (issue 45): one label rule on every path, no
//! guessed edge-array layouts, feature pages that say what they hold, no
//! empty stores by accident, no silent clamping, a dropped weight column
//! said aloud, checkpoint directories verified by `ginex-dump`, and
//! messages that name the real cause. Each test is named after the
//! behaviour; the catalog rows are in `format/import-errors.md`.

#[path = "../../tests/common/mod.rs"]
mod common;
mod tools_common;

use std::io::Write as _;
use std::path::{Path, PathBuf};

use clap::Parser;
use ginex::internals::format::header::FileKind;
use ginex::internals::format::manifest::{store_file_name, Manifest};
use ginex::internals::format::pages::{Dtype, FeatureLayout};
use ginex::internals::store::read_checked_file;

use common::{gz, npy_bytes as npy, p};
use tools_common::run_import;

fn ginex(args: &[&str]) -> ginex::Result<String> {
    use ginex_cli::commands::{run, GinexCli};
    let cli = GinexCli::try_parse_from(std::iter::once(&"ginex").chain(args))
        .map_err(|e| ginex::Error::invalid_argument(e.to_string()))?;
    let mut out = Vec::new();
    run(cli, &mut out)?;
    Ok(String::from_utf8(out).unwrap())
}

fn export(args: &[&str]) -> ginex::Result<String> {
    use ginex_cli::export::{run, ExportCli};
    let cli = ExportCli::try_parse_from(std::iter::once(&"ginex-export").chain(args))
        .map_err(|e| ginex::Error::invalid_argument(e.to_string()))?;
    let mut out = Vec::new();
    run(&cli, &mut out)?;
    Ok(String::from_utf8(out).unwrap())
}

fn dump(args: &[&str]) -> ginex::Result<String> {
    use ginex_cli::dump::{run, DumpArgs};
    let a = DumpArgs::try_parse_from(std::iter::once(&"ginex-dump").chain(args))
        .map_err(|e| ginex::Error::invalid_argument(e.to_string()))?;
    let mut out = Vec::new();
    run(&a, &mut out)?;
    Ok(String::from_utf8(out).unwrap())
}

/// `ginex gen`: 300 nodes, dim 32 f32, `classes` classes, a split.
fn gen_store(dir: &Path, name: &str, classes: &str) -> PathBuf {
    let out = dir.join(name);
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
        classes,
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

/// Rewrites the store's manifest through `edit`, with a valid checksum (as
/// a manifest of another store, or an edited one, would be).
fn rewrite_manifest(store: &Path, edit: impl FnOnce(&mut Manifest)) {
    let path = store.join(store_file_name(FileKind::Manifest));
    let mut m = read_checked_file(&path, FileKind::Manifest)
        .unwrap()
        .decode(|b| Manifest::decode(b, &path))
        .unwrap();
    edit(&mut m);
    std::fs::remove_file(&path).unwrap();
    ginex::internals::io::writer::write_file(&path, FileKind::Manifest, &m.encode()).unwrap();
}

/// `import` fails with every string of `want` in its message and leaves
/// nothing at `out`.
fn refused(args: &[&str], out: &Path, want: &[&str]) -> String {
    let err = run_import(args)
        .expect_err(&format!("{args:?} succeeded"))
        .to_string();
    for w in want {
        assert!(err.contains(w), "expected {w:?} in: {err}");
    }
    assert!(!out.exists(), "a store was left at the target: {err}");
    err
}

/// Item 2: a manifest of 2 classes over labels 0..15 is refused by every
/// path — verify, both exporters (which passed it on before), and the
/// store's label reader that train and the loaders use — with the one
/// message of `tables::check_label`.
#[test]
fn export_runs_the_label_check_verify_and_train_run() {
    let dir = tempfile::tempdir().unwrap();
    let store = gen_store(dir.path(), "s", "16");
    export(&["graphbolt", p(&store), "--out", p(&dir.path().join("ok"))]).unwrap();
    rewrite_manifest(&store, |m| m.num_classes = 2);
    let want = "expected -1 (missing) or 0..2";
    let err = dump(&["--verify", p(&store)]).unwrap_err().to_string();
    assert!(err.contains("label of node") && err.contains(want), "{err}");
    let s = ginex::internals::store::Store::open(&store).unwrap();
    let err = s.labels().unwrap_err().to_string();
    assert!(
        err.contains(want),
        "train and the loaders read labels so: {err}"
    );
    for sub in ["graphbolt", "dgl"] {
        let out = dir.path().join(format!("out-{sub}"));
        let err = export(&[sub, p(&store), "--out", p(&out)])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("labels") && err.contains("label of node") && err.contains(want),
            "{sub}: {err}"
        );
        assert!(!out.exists(), "{sub}: an export was left behind");
    }
}

/// Item 3: a (2, 2) edge array is both layouts: refused, saying how to
/// disambiguate; (3, 2) and (2, 3) are read as before.
#[test]
fn a_square_edge_array_is_refused_as_ambiguous() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("store");
    let e = dir.path().join("e.npy");
    let ids = |v: &[i64]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
    std::fs::write(&e, npy("<i8", "(2, 2)", &ids(&[0, 1, 1, 2]))).unwrap();
    refused(
        &["files", "--quiet", "--edges", p(&e), "--out", p(&out)],
        &out,
        &["e.npy", "shape (2, 2)", "ambiguous", "text list"],
    );
    for shape in ["(3, 2)", "(2, 3)"] {
        std::fs::write(&e, npy("<i8", shape, &ids(&[0, 1, 1, 2, 2, 0]))).unwrap();
        run_import(&["files", "--quiet", "--edges", p(&e), "--out", p(&out)]).unwrap();
        std::fs::remove_dir_all(&out).unwrap();
    }
}

/// Item 4: `features.pages` records the row format (v1.7); a manifest
/// that says dim 64 f16 over pages of dim 32 f32 (the same 128 bytes a
/// row) is refused by `--verify`, `epoch` and export; a v1.0 store
/// (no record) still opens.
#[test]
fn feature_pages_that_disagree_with_the_manifest_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = gen_store(dir.path(), "s", "4");
    let pages = std::fs::read(store.join("features.pages")).unwrap();
    assert_eq!(&pages[12..16], &[1, 0, 7, 0], "written as 1.7");
    assert_eq!(
        &pages[64..76],
        &FeatureLayout::new(32, Dtype::F32).unwrap().encode_record()
    );
    assert_eq!(pages[64..68], 32u32.to_le_bytes(), "dim at offset 64");
    assert_eq!(pages[68], 1, "dtype code at offset 68");
    dump(&["--verify", p(&store)]).unwrap();

    rewrite_manifest(&store, |m| {
        m.layout = FeatureLayout::new(64, Dtype::F16).unwrap();
    });
    let want = "the feature pages hold rows of 32 x f32 (their header's layout record) but the manifest says 64 x f16";
    let err = dump(&["--verify", p(&store)]).unwrap_err().to_string();
    assert!(
        err.contains("features.pages") && err.contains(want),
        "{err}"
    );
    let runs = dir.path().join("runs");
    let err = ginex(&[
        "epoch",
        p(&store),
        "--policy",
        "none",
        "--run-dir",
        p(&runs),
    ])
    .unwrap_err()
    .to_string();
    assert!(err.contains(want), "{err}");
    let out = dir.path().join("exported");
    let err = export(&["graphbolt", p(&store), "--out", p(&out)])
        .unwrap_err()
        .to_string();
    assert!(err.contains(want), "{err}");
    assert!(!out.exists());

    // The manifest put right: the store verifies again.
    rewrite_manifest(&store, |m| {
        m.layout = FeatureLayout::new(32, Dtype::F32).unwrap();
    });
    dump(&["--verify", p(&store)]).unwrap();

    // A v1.0 store records nothing there (zero padding) and opens.
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/v1-small");
    let old = std::fs::read(fixture.join("features.pages")).unwrap();
    assert_eq!(&old[12..16], &[1, 0, 0, 0]);
    assert!(old[64..76].iter().all(|&b| b == 0));
    dump(&["--verify", p(&fixture)]).unwrap();
}

/// Item 6: inputs with no edges are refused "no edges", after the first
/// pass at most (a stream is not read twice), with or without the node
/// count given, and nothing is left at the target.
#[test]
fn edge_inputs_with_no_edges_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("store");
    let d = dir.path();
    std::fs::write(d.join("empty.csv"), b"").unwrap();
    std::fs::write(d.join("header.csv"), b"src,dst\n").unwrap();
    std::fs::write(d.join("comments.txt"), b"# a comment\n% another\n\n").unwrap();
    gz(&d.join("blank.txt.gz"), &"\n".repeat(100_000));
    std::fs::write(d.join("none.npy"), npy("<i8", "(0, 2)", &[])).unwrap();
    let inputs: Vec<PathBuf> = ["empty.csv", "header.csv", "comments.txt", "blank.txt.gz"]
        .iter()
        .map(|n| d.join(n))
        .chain([PathBuf::from("/dev/null"), d.join("none.npy")])
        .collect();
    for e in &inputs {
        for extra in [&[][..], &["--num-nodes", "5"], &["--remap"]] {
            let mut args = vec!["files", "--quiet", "--edges", p(e), "--out", p(&out)];
            args.extend_from_slice(extra);
            let err = refused(&args, &out, &["no edges"]);
            assert!(err.contains(&e.display().to_string()), "{err}");
        }
    }
    let err = refused(
        &[
            "files",
            "--quiet",
            "--edges",
            p(&d.join("none.npy")),
            "--out",
            p(&out),
        ],
        &out,
        &["the array has shape (0, 2)"],
    );
    assert!(err.contains("a store needs at least one edge"), "{err}");

    // A stream of blank lines: refused after one pass (a second open of
    // the FIFO would wait for a writer that never comes).
    let fifo = d.join("blank.fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut f = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
            let _ = f.write_all("\n".repeat(10_000).as_bytes());
        })
    };
    let (tx, rx) = std::sync::mpsc::channel();
    {
        let (fifo, out) = (fifo.clone(), out.clone());
        std::thread::spawn(move || {
            let r = run_import(&["files", "--quiet", "--edges", p(&fifo), "--out", p(&out)]);
            let _ = tx.send(r.map_err(|e| e.to_string()));
        });
    }
    let r = rx
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("the import read the stream twice (it waited for a second writer)");
    let err = r.expect_err("a stream of blank lines imported");
    assert!(err.contains("no edges"), "{err}");
    writer.join().unwrap();
}

/// Item 7: `--workers 0` and `--changeset-every 0` are refused, not
/// clamped to 1.
#[test]
fn zero_workers_and_changeset_every_are_refused() {
    for args in [
        &["epoch", "S", "--workers", "0"][..],
        &["epoch", "S", "--changeset-every", "0"],
        &["inspect", "S", "--workers", "0"],
        &["inspect", "S", "--changeset-every", "0"],
    ] {
        let err = ginex(args).unwrap_err().to_string();
        assert!(
            err.contains(args[2]) && err.contains("must be at least 1"),
            "{args:?}: {err}"
        );
    }
}

/// A link epoch's negative source and edge order (#61): refused on a
/// node task and with a share or a range count out of bounds, each
/// message naming the option.
#[test]
fn link_negatives_and_edge_orders_out_of_place_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = gen_store(dir.path(), "s", "4");
    let s = p(&store);
    for (args, want) in [
        (
            &["epoch", s, "--negatives", "batch"][..],
            "--negatives batch is for --task link",
        ),
        (
            &["epoch", s, "--edge-order", "blocked"],
            "--edge-order blocked:16 is for --task link",
        ),
        (
            &["epoch", s, "--task", "link", "--negatives", "mixed:1.5"],
            "[0, 1]",
        ),
        (
            &["epoch", s, "--task", "link", "--negatives", "mixed:-0.5"],
            "[0, 1]",
        ),
        (
            &["epoch", s, "--task", "link", "--negatives", "nearby"],
            "uniform, batch or mixed:F",
        ),
        (
            &["epoch", s, "--task", "link", "--edge-order", "blocked:0"],
            "from 1 to 1024",
        ),
        (
            &["epoch", s, "--task", "link", "--edge-order", "beta"],
            "random, blocked or blocked:P",
        ),
    ] {
        let err = ginex(args).expect_err(&format!("{args:?} ran")).to_string();
        let flag = if args.contains(&"--negatives") {
            "--negatives"
        } else {
            "--edge-order"
        };
        assert!(err.contains(flag) && err.contains(want), "{args:?}: {err}");
    }
    // In place, they run, and the report names them.
    let report = dir.path().join("report.json");
    ginex(&[
        "epoch",
        s,
        "--task",
        "link",
        "--negatives",
        "mixed:0.5",
        "--edge-order",
        "blocked:4",
        "--max-batches",
        "2",
        "--batch-size",
        "16",
        "--report",
        p(&report),
    ])
    .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(
        doc["parameters"]["task"],
        "link (neg 1, binary, negatives mixed:0.5, edge order blocked:4)"
    );
}

/// Item 8: a third column is read as an edge weight and dropped, and the
/// import says so; a fourth is refused.
#[test]
fn a_third_csv_column_is_reported_as_a_dropped_weight() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("store");
    let e = dir.path().join("w.csv");
    std::fs::write(&e, "0,1\n1,2,0.5\n2,0,0.25\n").unwrap();
    let said = run_import(&["files", "--quiet", "--edges", p(&e), "--out", p(&out)]).unwrap();
    assert!(
        said.contains("w.csv: column 3 read as an edge weight and dropped on 2 line(s) (the first: line 2): the store holds no weights"),
        "{said}"
    );
    std::fs::remove_dir_all(&out).unwrap();
    let plain = dir.path().join("p.csv");
    std::fs::write(&plain, "0,1\n1,2\n").unwrap();
    let said = run_import(&["files", "--quiet", "--edges", p(&plain), "--out", p(&out)]).unwrap();
    assert!(!said.contains("weight"), "{said}");
    std::fs::remove_dir_all(&out).unwrap();
    std::fs::write(&e, "0,1\n1,2,0.5,7\n").unwrap();
    refused(
        &["files", "--quiet", "--edges", p(&e), "--out", p(&out)],
        &out,
        &["w.csv:2", "has 4 fields"],
    );
}

/// Item 9: each message names the real cause.
#[test]
fn messages_name_the_real_cause() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = d.join("store");
    let edges = d.join("e.txt");
    std::fs::write(&edges, "0 1\n1 2\n2 0\n").unwrap();

    // A negative split fraction is a value, refused as a fraction.
    refused(
        &[
            "files",
            "--quiet",
            "--edges",
            p(&edges),
            "--split",
            "-0.5,0.9,0.1",
            "--out",
            p(&out),
        ],
        &out,
        &["--split \"-0.5,0.9,0.1\"", "a fraction must be in [0, 1]"],
    );

    // A DGL chunk that is a folder, or a device.
    for (chunk, want) in [
        (d.join("chunkdir"), "is a directory"),
        (PathBuf::from("/dev/null"), "not a regular file"),
    ] {
        std::fs::create_dir_all(d.join("chunkdir")).unwrap();
        let meta = d.join("metadata.json");
        std::fs::write(
            &meta,
            format!(
                r#"{{"graph_name": "g", "node_type": ["n"], "num_nodes_per_chunk": [[3]],
                "edge_type": ["n:e:n"], "num_edges_per_chunk": [[3]],
                "edges": {{"n:e:n": {{"format": {{"name": "csv", "delimiter": " "}}, "data": [{:?}]}}}}}}"#,
                p(&chunk)
            ),
        )
        .unwrap();
        let err = refused(
            &["dgl", p(&meta), "--quiet", "--out", p(&out)],
            &out,
            &[want],
        );
        assert!(err.contains(p(&chunk)) && !err.contains("missing"), "{err}");
    }

    // A corrupt middle of a .csv.gz: the gzip stream is named.
    let text: String = (0..40_000u64)
        .map(|i| format!("{},{}\n", i % 997, (i * 31 + 7) % 997))
        .collect();
    let e = d.join("E.csv.gz");
    gz(&e, &text);
    let mut bytes = std::fs::read(&e).unwrap();
    let mid = bytes.len() / 2;
    for b in &mut bytes[mid..mid + 8] {
        *b ^= 0x5a;
    }
    std::fs::write(&e, &bytes).unwrap();
    let err = refused(
        &["files", "--quiet", "--edges", p(&e), "--out", p(&out)],
        &out,
        &["E.csv.gz:", "the gzip stream is corrupt"],
    );
    assert!(err.contains("compressed byte"), "{err}");

    // npy inside gzip.
    let npy_gz = d.join("E.npy.gz");
    gz(&npy_gz, &npy("<i8", "(1, 2)", &[0; 16]));
    refused(
        &["files", "--quiet", "--edges", p(&npy_gz), "--out", p(&out)],
        &out,
        &[
            "E.npy.gz",
            "a .npy array inside gzip is not supported",
            "gunzip",
        ],
    );

    // 65 fanouts: refused when parsed, naming the maximum.
    let fanouts = vec!["1"; 65].join(",");
    let err = ginex(&["epoch", "S", "--fanouts", &fanouts])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("65 hops; at most 64 are supported (MAX_RUN_FANOUTS)"),
        "{err}"
    );
}

/// Item 1 (without libtorch): `ginex-dump --verify CK` verifies a
/// checkpoint directory as `train --resume` and `predict` do: the latest
/// and best checkpoints' weights CRC, epochs and run identity.
#[test]
fn dump_verifies_a_checkpoint_directory() {
    use ginex::internals::checkpoint_meta::run_identity;
    use ginex::internals::verify::weights_of_file;
    let dir = tempfile::tempdir().unwrap();
    let ck = dir.path().join("ck");
    std::fs::create_dir(&ck).unwrap();
    for (epoch, fill) in [(1u64, 1u8), (2, 2)] {
        let ot = ck.join(format!("epoch-{epoch:05}.ot"));
        std::fs::write(&ot, vec![fill; 5000]).unwrap();
        let mut doc = serde_json::json!({"format": 3, "epoch": epoch, "model": "sage",
            "hidden": 8, "layers": 2, "seed": 1, "store_manifest_crc": 7, "store_nodes": 40,
            "best_epoch": 1});
        doc["weights"] = serde_json::to_value(weights_of_file(&ot).unwrap()).unwrap();
        doc["run_identity"] = run_identity(&doc).into();
        std::fs::write(
            ck.join(format!("epoch-{epoch:05}.json")),
            serde_json::to_vec(&doc).unwrap(),
        )
        .unwrap();
    }
    std::fs::write(ck.join("LATEST"), "epoch-00002").unwrap();
    let said = dump(&["--verify", p(&ck)]).unwrap();
    assert!(
        said.contains("2 checkpoint(s) of one run")
            && said.contains("epoch-00002 (latest)")
            && said.contains("epoch-00001 (best)"),
        "{said}"
    );
    // A flipped bit in the best epoch's weights.
    let ot = ck.join("epoch-00001.ot");
    let mut bytes = std::fs::read(&ot).unwrap();
    bytes[2500] ^= 1;
    std::fs::write(&ot, &bytes).unwrap();
    let err = dump(&["--verify", p(&ck)]).unwrap_err().to_string();
    assert!(
        err.contains("epoch-00001.ot") && err.contains("the weights do not match their metadata"),
        "{err}"
    );
}
