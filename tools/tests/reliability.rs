//! Reliability round 2 (issue 14): every reader of user input stops at a
//! documented bound, no finite feature silently becomes inf, counts read
//! from files use checked arithmetic, inputs that change or lie are
//! refused, `--policy mmap` says it checks nothing, and the messages that
//! misled now say what is wrong. Each test names its catalog row in
//! `format/import-errors.md`. (The up-front size check is in
//! `tools/tests/space_check.rs`: it sets the process-wide simulated disk.)

#[path = "../../tests/common/mod.rs"]
mod common;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Parser;
use ginex::internals::import::pipeline::{edges_from, EdgeInput};
use ginex_cli::commands::{run as ginex_run, GinexCli};
use ginex_cli::import::{run as import_run, ImportCli};

use common::{gz, npy_bytes as npy, p};

fn run_import(args: &[&str]) -> ginex::Result<String> {
    let cli = ImportCli::try_parse_from(std::iter::once(&"ginex-import").chain(args)).unwrap();
    let mut out = Vec::new();
    import_run(&cli, &mut out)?;
    Ok(String::from_utf8(out).unwrap())
}

fn run_ginex(args: &[&str]) -> ginex::Result<String> {
    let cli = GinexCli::try_parse_from(std::iter::once(&"ginex").chain(args)).unwrap();
    let mut out = Vec::new();
    ginex_run(cli, &mut out)?;
    Ok(String::from_utf8(out).unwrap())
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

/// A small OGB csv-layout directory (6 nodes, 7 edges, split `time`).
fn ogb_dir(root: &Path) -> PathBuf {
    let d = root.join("ogbn_arxiv");
    std::fs::create_dir_all(d.join("raw")).unwrap();
    std::fs::create_dir_all(d.join("split/time")).unwrap();
    gz(
        &d.join("raw/edge.csv.gz"),
        b"0,1\n1,2\n2,0\n3,4\n4,5\n5,3\n0,5\n",
    );
    gz(&d.join("raw/num-node-list.csv.gz"), b"6\n");
    gz(&d.join("raw/num-edge-list.csv.gz"), b"7\n");
    gz(&d.join("split/time/train.csv.gz"), b"0\n1\n2\n");
    gz(&d.join("split/time/valid.csv.gz"), b"3\n");
    gz(&d.join("split/time/test.csv.gz"), b"4\n5\n");
    d
}

/// Finding 1: a line with no newline (3 MiB of digits, `/dev/zero`, a
/// gzip of zeros), a long id-file line, an oversized or endless DGL
/// metadata document and a long OGB count line are refused at the bound
/// with the file and the byte offset.
#[test]
fn long_lines_and_documents_are_refused_at_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("store");
    let digits = dir.path().join("digits.txt");
    std::fs::write(&digits, vec![b'0'; 3 << 20]).unwrap();
    refused(
        &["files", "--quiet", "--edges", p(&digits), "--out", p(&out)],
        &out,
        &["digits.txt:1: byte 0: the line is longer than the 1 MiB limit"],
    );
    if Path::new("/dev/zero").exists() {
        refused(
            &["files", "--quiet", "--edges", "/dev/zero", "--out", p(&out)],
            &out,
            &["/dev/zero:1: byte 0: the line is longer than the 1 MiB limit"],
        );
        refused(
            &["dgl", "/dev/zero", "--quiet", "--out", p(&out)],
            &out,
            &["/dev/zero: byte 4194304: the document exceeds the 4 MiB limit"],
        );
    }
    let zgz = dir.path().join("zeros.txt.gz");
    gz(&zgz, &vec![b'0'; 8 << 20]);
    refused(
        &["files", "--quiet", "--edges", p(&zgz), "--out", p(&out)],
        &out,
        &["zeros.txt.gz:1: byte 0 of the decompressed text: the line is longer"],
    );
    // An id file: the second line is 2 MiB long.
    let edges = dir.path().join("e.txt");
    std::fs::write(&edges, "0 1\n1 2\n2 0\n").unwrap();
    let ids = dir.path().join("train.txt");
    let mut text = b"0\n".to_vec();
    text.extend(vec![b'7'; 2 << 20]);
    std::fs::write(&ids, &text).unwrap();
    refused(
        &[
            "files",
            "--quiet",
            "--edges",
            p(&edges),
            "--train-ids",
            p(&ids),
            "--out",
            p(&out),
        ],
        &out,
        &["train.txt:2: byte 2: the line is longer than the 1 MiB limit"],
    );
    // DGL metadata: 5 MiB of whitespace around a valid-looking start.
    let meta = dir.path().join("metadata.json");
    let mut doc = b"{\"node_type\": [\"a\"]".to_vec();
    doc.extend(vec![b' '; 5 << 20]);
    doc.push(b'}');
    std::fs::write(&meta, &doc).unwrap();
    refused(
        &["dgl", p(&meta), "--quiet", "--out", p(&out)],
        &out,
        &["metadata.json: byte 4194304: the document exceeds the 4 MiB limit"],
    );
    // OGB count file.
    let d = ogb_dir(dir.path());
    gz(&d.join("raw/num-node-list.csv.gz"), &vec![b'6'; 2 << 20]);
    refused(
        &["ogb", p(&d), "--quiet", "--out", p(&out)],
        &out,
        &["num-node-list.csv.gz:1: byte 0 of the decompressed text: the line is longer"],
    );
}

/// Imports the 3×2 features `npy_bytes` over a 3-node graph in `dir` as
/// `dtype`: refused with `want` (and the file, and `--allow-nonfinite`)
/// without the flag; with it, imported, and the stored rows are returned.
/// Leaves `dir/store` removed.
fn import_overflowing_features(
    dir: &Path,
    npy_bytes: Vec<u8>,
    dtype: &str,
    want: &str,
) -> Vec<f32> {
    let out = dir.join("store");
    let edges = dir.join("e.txt");
    std::fs::write(&edges, "0 1\n1 2\n2 0\n").unwrap();
    let feats = dir.join("f.npy");
    std::fs::write(&feats, npy_bytes).unwrap();
    let args = [
        "files",
        "--quiet",
        "--edges",
        p(&edges),
        "--features",
        p(&feats),
        "--dtype",
        dtype,
        "--out",
        p(&out),
    ];
    refused(&args, &out, &["f.npy:", want, "--allow-nonfinite"]);
    let mut with_flag = args.to_vec();
    with_flag.push("--allow-nonfinite");
    run_import(&with_flag).unwrap();
    let s = ginex::Store::open(&out).unwrap();
    let mut row = vec![0f32; 6];
    s.read_feature_rows_f32(&[0, 1, 2], &mut row).unwrap();
    std::fs::remove_dir_all(&out).unwrap();
    row
}

/// Finding 2: finite values that overflow f16 / bf16 are refused naming
/// row and column unless `--allow-nonfinite`.
#[test]
fn half_precision_overflow_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (dtype, values, want) in [
        (
            "f16",
            [1.0f32, 2.0, 3.0, 70000.0, 5.0, 6.0],
            "feature row 1 column 1 is 70000, which overflows f16 to +inf (largest finite 65504)",
        ),
        (
            "f16",
            [1.0, 2.0, -1e30, 4.0, 5.0, 6.0],
            "feature row 1 column 0 is -1000000000000000000000000000000, which overflows f16 to -inf",
        ),
        (
            "bf16",
            [1.0, 2.0, 3.0, 4.0, f32::MAX, 6.0],
            "feature row 2 column 0 is 340282350000000000000000000000000000000, which overflows bf16 to +inf",
        ),
    ] {
        let bytes: Vec<u8> = values.iter().flat_map(|x| x.to_le_bytes()).collect();
        let row = import_overflowing_features(dir.path(), npy("<f4", "(3, 2)", &bytes), dtype, want);
        assert_eq!(row.iter().filter(|x| x.is_infinite()).count(), 1, "{row:?}");
    }
}

/// q8 has no code for NaN or inf: refused naming row and column, with
/// `--allow-nonfinite` too, and nothing is left behind.
#[test]
fn q8_refuses_nonfinite_features_even_with_allow_nonfinite() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("store");
    let edges = dir.path().join("e.txt");
    std::fs::write(&edges, "0 1\n1 2\n2 0\n").unwrap();
    let feats = dir.path().join("f.npy");
    for (values, want) in [
        (
            [1.0f32, 2.0, 3.0, f32::NAN, 5.0, 6.0],
            "feature row 1 column 1 is NaN",
        ),
        (
            [1.0, 2.0, 3.0, 4.0, f32::NEG_INFINITY, 6.0],
            "feature row 2 column 0 is -inf",
        ),
    ] {
        let bytes: Vec<u8> = values.iter().flat_map(|x| x.to_le_bytes()).collect();
        std::fs::write(&feats, npy("<f4", "(3, 2)", &bytes)).unwrap();
        for flag in [None, Some("--allow-nonfinite")] {
            let mut args = vec![
                "files",
                "--quiet",
                "--edges",
                p(&edges),
                "--features",
                p(&feats),
                "--dtype",
                "q8",
                "--out",
                p(&out),
            ];
            args.extend(flag);
            refused(&args, &out, &["f.npy:", want, "q8 cannot store NaN/Inf"]);
        }
    }
}

/// Finding 2 for f64 input (catalog: "f64 feature beyond f32's range"): a
/// finite f64 that overflows f32 is refused as the f16/bf16 case is (row,
/// column, value, largest finite, `--allow-nonfinite`), not stored as inf
/// or reported as "is inf".
#[test]
fn f64_features_beyond_f32_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (dtype, values, want) in [
        (
            "f32",
            [1.0f64, 2.0, 3.0, 1e300, 5.0, 6.0],
            "feature row 1 column 1 is 1e300, which overflows f32 to +inf (largest finite 3.4028235e38)",
        ),
        (
            "f16",
            [1.0, 2.0, 3.0, 4.0, -1e39, 6.0],
            "feature row 2 column 0 is -1e39, which overflows f32 to -inf",
        ),
    ] {
        let bytes: Vec<u8> = values.iter().flat_map(|x| x.to_le_bytes()).collect();
        let row = import_overflowing_features(dir.path(), npy("<f8", "(3, 2)", &bytes), dtype, want);
        assert_eq!(row.iter().filter(|x| x.is_infinite()).count(), 1, "{row:?}");
        assert_eq!(row[0], 1.0);
    }
}

const DGL_META: &str = r#"{
  "graph_name": "g",
  "node_type": ["n"],
  "num_nodes_per_chunk": [[3]],
  "edge_type": ["n:e:n"],
  "num_edges_per_chunk": [[3, 0]],
  "edges": {"n:e:n": {"format": {"name": "csv", "delimiter": " "}, "data": ["e.csv", "f.csv"]}}
}"#;

/// Finding 3: DGL counts that wrap around `u64` are refused, not summed
/// modulo 2^64.
#[test]
fn dgl_counts_that_overflow_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("store");
    std::fs::write(dir.path().join("e.csv"), "0 1\n1 2\n2 0\n").unwrap();
    std::fs::write(dir.path().join("f.csv"), "").unwrap();
    let meta = dir.path().join("metadata.json");
    std::fs::write(&meta, DGL_META).unwrap();
    run_import(&["dgl", p(&meta), "--quiet", "--out", p(&out)]).unwrap();
    std::fs::remove_dir_all(&out).unwrap();
    for (from, to, key) in [
        (
            "[[3]]",
            "[[18446744073709551615, 7]]",
            "num_nodes_per_chunk",
        ),
        (
            "[[3, 0]]",
            "[[18446744073709551615, 7]]",
            "num_edges_per_chunk",
        ),
    ] {
        assert!(DGL_META.contains(from), "{from}");
        std::fs::write(&meta, DGL_META.replacen(from, to, 1)).unwrap();
        refused(
            &["dgl", p(&meta), "--quiet", "--out", p(&out)],
            &out,
            &[&format!(
                "metadata.json: {key}: the counts overflow 2^64 - 1"
            )],
        );
    }
}

/// Finding 4: a text edge file that changes while it is read, a stream
/// whose second pass is shorter than its first, an OGB edge count that
/// disagrees with the edge file, empty split directories, and a second
/// header line.
#[test]
fn inputs_that_change_or_lie_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("store");

    // Truncated while read (one pass): the file's length changes.
    let edges = dir.path().join("big.txt");
    let text: String = (0..5000).map(|i| format!("{i} {}\n", i + 1)).collect();
    std::fs::write(&edges, &text).unwrap();
    let input = EdgeInput::from_path(&edges).unwrap();
    let mut cut = false;
    let err = edges_from(&input, &mut |_, _, _| {
        if !cut {
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(&edges)
                .unwrap();
            f.set_len(100).unwrap();
            cut = true;
        }
        Ok(())
    })
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("big.txt: the file changed while it was read")
            && err.contains(&format!("{} bytes before, 100 after", text.len())),
        "{err}"
    );

    // Two passes over a stream (a FIFO): 10 edges, then 5. The writer
    // serves the second pass only once the first is over: the importer
    // creates its staging directory between the passes.
    let fifo = dir.path().join("edges.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo failed");
    let writer = {
        let fifo = fifo.clone();
        let parent = dir.path().to_path_buf();
        std::thread::spawn(move || {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            let wait = || std::thread::sleep(std::time::Duration::from_millis(5));
            for (pass, lines) in [10, 5].into_iter().enumerate() {
                if pass == 1 {
                    while !std::fs::read_dir(&parent).unwrap().any(|e| {
                        e.unwrap()
                            .file_name()
                            .to_string_lossy()
                            .contains("ginex-tmp")
                    }) {
                        if std::time::Instant::now() > deadline {
                            return;
                        }
                        wait();
                    }
                }
                // Non-blocking open: ENXIO until the importer opens it.
                let mut f = loop {
                    use std::os::unix::fs::OpenOptionsExt;
                    match std::fs::OpenOptions::new()
                        .write(true)
                        .custom_flags(libc::O_NONBLOCK)
                        .open(&fifo)
                    {
                        Ok(f) => break f,
                        Err(_) if std::time::Instant::now() < deadline => wait(),
                        Err(_) => return,
                    }
                };
                let text: String = (0..lines).map(|i| format!("{i} {}\n", i + 1)).collect();
                let _ = f.write_all(text.as_bytes());
            }
        })
    };
    refused(
        &["files", "--quiet", "--edges", p(&fifo), "--out", p(&out)],
        &out,
        &["edges.fifo: the first pass read 10 edges but the second read 5"],
    );
    writer.join().unwrap();

    // OGB: num-edge-list says 9 but the file holds 7.
    let d = ogb_dir(dir.path());
    run_import(&["ogb", p(&d), "--quiet", "--out", p(&out)]).unwrap();
    std::fs::remove_dir_all(&out).unwrap();
    gz(&d.join("raw/num-edge-list.csv.gz"), b"9\n");
    refused(
        &["ogb", p(&d), "--quiet", "--out", p(&out)],
        &out,
        &["edge.csv.gz: 7 edges, but", "num-edge-list.csv.gz says 9"],
    );
    gz(&d.join("raw/num-edge-list.csv.gz"), b"7\n");
    // An empty split/<name>/ and a split/ without directories.
    for f in ["train", "valid", "test"] {
        std::fs::remove_file(d.join(format!("split/time/{f}.csv.gz"))).unwrap();
    }
    refused(
        &["ogb", p(&d), "--quiet", "--out", p(&out)],
        &out,
        &["split/time: the split directory is empty"],
    );
    std::fs::remove_dir(d.join("split/time")).unwrap();
    refused(
        &["ogb", p(&d), "--quiet", "--out", p(&out)],
        &out,
        &["split: split/ holds no split directory"],
    );

    // At most one header line; the second non-integer line is an error
    // naming the delimiter; a header with another delimiter is fine.
    let e = dir.path().join("h.csv");
    std::fs::write(&e, "src dst\n0,1\n1,2\n").unwrap();
    run_import(&["files", "--quiet", "--edges", p(&e), "--out", p(&out)]).unwrap();
    std::fs::remove_dir_all(&out).unwrap();
    std::fs::write(&e, "src,dst\nsource,target\n0,1\n").unwrap();
    refused(
        &["files", "--quiet", "--edges", p(&e), "--out", p(&out)],
        &out,
        &["h.csv:2: \"source,target\": the first data line has no integer fields (split at `,`"],
    );
}

/// Finding 9: messages that misled.
#[test]
fn misleading_messages_say_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let edges = dir.path().join("e.txt");
    std::fs::write(&edges, "0 1\n1 2\n2 0\n").unwrap();
    let out = dir.path().join("store");

    // A label of 2^31 - 1 without --num-classes.
    let labels = dir.path().join("l.npy");
    let l: Vec<u8> = [0i32, i32::MAX, 1]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    std::fs::write(&labels, npy("<i4", "(3,)", &l)).unwrap();
    let err = refused(
        &[
            "files",
            "--quiet",
            "--edges",
            p(&edges),
            "--labels",
            p(&labels),
            "--out",
            p(&out),
        ],
        &out,
        &["l.npy:2: label 2147483647 of node 1 would make 2147483648 classes"],
    );
    assert!(!err.contains("--num-classes 1"), "{err}");

    // A 250-byte target name.
    let long = dir.path().join("x".repeat(250));
    let err = refused(
        &["files", "--quiet", "--edges", p(&edges), "--out", p(&long)],
        &long,
        &["is 250 bytes long; store and cache names can be at most 212 bytes"],
    );
    assert!(!err.contains("ginex-tmp"), "{err}");

    // A parent path that is a file.
    let file = dir.path().join("plain-file");
    std::fs::write(&file, "x").unwrap();
    let under = file.join("store");
    refused(
        &["files", "--quiet", "--edges", p(&edges), "--out", p(&under)],
        &under,
        &["plain-file is not a directory"],
    );

    // A missing input file: the OS error once, not again as a cause.
    let output = Command::new(env!("CARGO_BIN_EXE_ginex-import"))
        .args(["files", "--quiet", "--edges"])
        .arg(dir.path().join("gone.txt"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert_eq!(
        stderr.matches("No such file or directory").count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("gone.txt"), "{stderr}");

    // A runtime file shorter than its header.
    let short = dir.path().join("sb-0.samples");
    std::fs::write(&short, b"GXRC").unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_ginex-dump"))
        .arg("--verify")
        .arg(&short)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("shorter than the 64-byte common header")
            && !stderr.contains("fill whole buffer"),
        "{stderr}"
    );
}

/// Finding 9 (`ginex-dump FILE`) and finding 7 (`--policy mmap`): a
/// neighbor-cache or runtime file is shown, not called "not a ginex
/// store"; an mmap epoch warns that it checks no CRC and says so in its
/// report; `--help` says it too.
#[test]
fn dump_shows_single_files_and_mmap_says_it_checks_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    run_ginex(&[
        "gen",
        "--quiet",
        "--nodes",
        "2000",
        "--avg-degree",
        "8",
        "--dim",
        "8",
        "--classes",
        "4",
        "--seed",
        "3",
        "--out",
        p(&store),
    ])
    .unwrap();
    let cache = dir.path().join("n.ncache");
    run_ginex(&[
        "cache",
        "build",
        p(&store),
        "--budget",
        "16KiB",
        "--out",
        p(&cache),
    ])
    .unwrap();
    let dump = |f: &Path| {
        let output = Command::new(env!("CARGO_BIN_EXE_ginex-dump"))
            .arg(f)
            .output()
            .unwrap();
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).into_owned()
                + &String::from_utf8_lossy(&output.stderr),
        )
    };
    let (ok, text) = dump(&cache);
    assert!(ok && text.contains("neighbor cache"), "{text}");
    assert!(!text.contains("not a ginex store"), "{text}");

    let runs = dir.path().join("runs");
    let report = dir.path().join("mmap.json");
    run_ginex(&[
        "epoch",
        p(&store),
        "--policy",
        "ginex",
        "--batch-size",
        "100",
        "--max-batches",
        "3",
        "--run-dir",
        p(&runs),
        "--keep-runs",
    ])
    .unwrap();
    let mut run_files = Vec::new();
    let mut stack = vec![runs.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("sb-")
            {
                run_files.push(path);
            }
        }
    }
    assert!(!run_files.is_empty(), "--keep-runs kept no runtime file");
    let (ok, text) = dump(&run_files[0]);
    assert!(ok && text.contains("records"), "{text}");
    assert!(!text.contains("not a ginex store"), "{text}");

    let output = Command::new(env!("CARGO_BIN_EXE_ginex"))
        .args([
            "epoch",
            p(&store),
            "--policy",
            "mmap",
            "--batch-size",
            "100",
        ])
        .args([
            "--max-batches",
            "3",
            "--run-dir",
            p(&runs),
            "--report",
            p(&report),
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(
        stderr.matches("without checking their CRCs").count(),
        1,
        "one warning per run: {stderr}"
    );
    assert!(stderr.contains("checksums: NOT checked"), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(v["crc_checked"], false, "{v}");

    let help = Command::new(env!("CARGO_BIN_EXE_ginex"))
        .args(["epoch", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("mmap (the PyG+ baseline)") && help.contains("checks nothing"),
        "{help}"
    );
}

/// Finding 6 (second half): runtime files record their store and run (v1.2
/// run record), and `ginex-dump --verify FILE` shows them and refuses a file
/// copied from another store's or another seed's run (catalog: "runtime file
/// of another store or run"). The executor's own refusal is
/// `inspect::superbatch::tests::files_of_another_store_run_or_superbatch_are_refused_on_read`.
#[test]
fn runtime_files_of_another_store_or_seed_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let gen = |name: &str, seed: &str| {
        let store = dir.path().join(name);
        run_ginex(&[
            "gen",
            "--quiet",
            "--nodes",
            "1500",
            "--avg-degree",
            "6",
            "--dim",
            "4",
            "--classes",
            "3",
            "--seed",
            seed,
            "--out",
            p(&store),
        ])
        .unwrap();
        store
    };
    let a = gen("a", "3");
    let b = gen("b", "4");
    // Kept runs: store a seed 1 (default run dir a.runs), store a seed 2,
    // store b seed 1 (b.runs).
    let epoch = |store: &Path, seed: &str, run_dir: Option<&Path>| -> PathBuf {
        let mut args = vec![
            "epoch",
            p(store),
            "--policy",
            "ginex",
            "--batch-size",
            "50",
            "--superbatch",
            "2",
            "--max-batches",
            "4",
            "--seed",
            seed,
            "--keep-runs",
        ];
        if let Some(r) = run_dir {
            args.extend(["--run-dir", p(r)]);
        }
        run_ginex(&args).unwrap();
        let parent = run_dir.map_or_else(|| store.with_extension("runs"), Path::to_path_buf);
        let runs: Vec<PathBuf> = std::fs::read_dir(&parent)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(runs.len(), 1, "{runs:?}");
        runs[0].clone()
    };
    let a1 = epoch(&a, "1", None);
    let a2 = epoch(&a, "2", Some(&dir.path().join("other-runs")));
    let b1 = epoch(&b, "1", None);
    let verify = |f: &Path, extra: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_ginex-dump"))
            .arg("--verify")
            .arg(f)
            .args(extra)
            .output()
            .unwrap();
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).into_owned()
                + &String::from_utf8_lossy(&output.stderr),
        )
    };
    let target = a1.join("sb-000000.samples");
    let original = std::fs::read(&target).unwrap();
    let (ok, text) = verify(&target, &[]);
    assert!(ok, "{text}");
    assert!(
        text.contains("seed 1, epoch 0")
            && text.contains("superbatch 0")
            && text.contains("batch size 50")
            && text.contains("fanouts 10,10,10")
            && text.contains(&format!("matches store {}", p(&a)))
            && text.contains("agrees with 3 other runtime file(s)"),
        "{text}"
    );

    // Another store's file in a's run directory.
    std::fs::copy(b1.join("sb-000000.samples"), &target).unwrap();
    let (ok, text) = verify(&target, &[]);
    assert!(!ok, "a file of store b passed as store a's: {text}");
    assert!(
        text.contains("sb-000000.samples")
            && text.contains("runtime file of another store")
            && text.contains(p(&a)),
        "{text}"
    );
    // The same file on its own, with --store naming the store it must match.
    let alone = dir.path().join("alone");
    std::fs::create_dir(&alone).unwrap();
    std::fs::copy(
        b1.join("sb-000001.changes"),
        alone.join("sb-000001.changes"),
    )
    .unwrap();
    let (ok, text) = verify(&alone.join("sb-000001.changes"), &[]);
    assert!(ok && text.contains("store not checked"), "{text}");
    let (ok, text) = verify(&alone.join("sb-000001.changes"), &["--store", p(&a)]);
    assert!(!ok && text.contains("another store"), "{text}");
    let (ok, text) = verify(&alone.join("sb-000001.changes"), &["--store", p(&b)]);
    assert!(ok, "{text}");

    // Another seed's file (same store) in a's seed-1 run.
    std::fs::copy(a2.join("sb-000000.samples"), &target).unwrap();
    let (ok, text) = verify(&target, &[]);
    assert!(!ok, "a seed-2 file passed in a seed-1 run: {text}");
    assert!(
        text.contains("runtime file of another run")
            && text.contains("seed: the other file 1, this file 2"),
        "{text}"
    );
    // Renamed to another superbatch.
    std::fs::write(&target, &original).unwrap();
    std::fs::copy(&target, alone.join("sb-000005.samples")).unwrap();
    let (ok, text) = verify(&alone.join("sb-000005.samples"), &[]);
    assert!(!ok && text.contains("named for superbatch 5"), "{text}");
    let (ok, text) = verify(&target, &[]);
    assert!(ok, "{text}");
}

/// Runs `ginex ARGS` as a process; its stderr, or a failure when it is
/// still running after a minute (a hang).
fn ginex_within_a_minute(args: &[&str]) -> (bool, String) {
    use std::time::{Duration, Instant};
    let mut child = Command::new(env!("CARGO_BIN_EXE_ginex"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("ginex {args:?} hung");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Round 3 (issue 33): absurd `--memory` values (0, 1, "abc", 1PiB,
/// negative), fanouts 0 or empty, batch size 0, superbatch 0 and an empty
/// train split are clear errors naming the flag and the reason, never a
/// hang, a panic or a file written; the `Loader` (what Python wraps)
/// refuses the same values and an empty split.
#[test]
fn absurd_sizes_fanouts_and_empty_splits_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s");
    let empty = dir.path().join("e");
    for (out, split) in [(&s, "0.2,0.1,0.1"), (&empty, "0,0.5,0")] {
        run_ginex(&[
            "gen",
            "--quiet",
            "--nodes",
            "2000",
            "--avg-degree",
            "6",
            "--dim",
            "8",
            "--seed",
            "2",
            "--split",
            split,
            "--out",
            p(out),
        ])
        .unwrap();
    }
    let runs = dir.path().join("runs");
    let epoch = |extra: &[&str], store: &Path| {
        let mut a = vec!["epoch", p(store), "--run-dir", p(&runs)];
        a.extend(extra);
        ginex_within_a_minute(&a)
    };
    for (extra, want) in [
        (
            &["--memory", "0"][..],
            &["--memory 0 bytes is below the", "give at least --memory"][..],
        ),
        (&["--memory", "1"], &["--memory 1 bytes is below the"]),
        (&["--memory", "abc"], &["\"abc\" is not a size"]),
        (&["--memory", "1PiB"], &["unknown size unit \"pib\"", "TiB"]),
        (&["--memory=-5"], &["\"-5\" is not a size"]),
        (&["--memory", "-1GiB"], &["\"-1GiB\" is not a size"]),
        (
            &["--fanouts", "0"],
            &["--fanouts \"0\": each fanout must be positive or -1"],
        ),
        (
            &["--fanouts", "5,0"],
            &["each fanout must be positive or -1"],
        ),
        (
            &["--fanouts="],
            &["--fanouts \"\": expected comma-separated integers"],
        ),
        (&["--batch-size", "0"], &["--batch-size must be at least 1"]),
        (&["--superbatch", "0"], &["--superbatch", "0 is not in 1.."]),
    ] {
        let (ok, err) = epoch(extra, &s);
        assert!(!ok, "{extra:?} succeeded");
        for w in want {
            assert!(err.contains(w), "{extra:?}: {err}");
        }
        assert!(!err.contains("panicked"), "{extra:?}: {err}");
    }
    let (ok, err) = epoch(&[], &empty);
    assert!(!ok && err.contains("has no training nodes"), "{err}");
    let (ok, err) = ginex_within_a_minute(&[
        "inspect",
        p(&empty),
        "--feature-cache-rows",
        "10",
        "--out",
        p(&dir.path().join("R")),
    ]);
    assert!(!ok && err.contains("has no training nodes"), "{err}");
    let (ok, err) = ginex_within_a_minute(&[
        "inspect",
        p(&s),
        "--feature-cache-rows",
        "10",
        "--superbatch",
        "0",
        "--out",
        p(&dir.path().join("R")),
    ]);
    assert!(!ok && err.contains("0 is not in 1.."), "{err}");
    assert!(
        !dir.path().join("R").exists(),
        "a refused inspect created its --out"
    );
    assert!(!runs.exists(), "a refused epoch left a run directory");

    // The Loader refuses the same values, and an empty split.
    let store = ginex::Store::open(&s).unwrap();
    let loader = || ginex::Loader::builder(&store).run_dir(&runs).workers(2);
    let refused = |b: ginex::LoaderBuilder<'_>| -> String {
        match b.build() {
            Err(e) => e.to_string(),
            Ok(l) => match l.map(|b| b.map(|_| ())).collect::<ginex::Result<Vec<()>>>() {
                Err(e) => e.to_string(),
                Ok(v) => panic!("{} batches delivered", v.len()),
            },
        }
    };
    let err = refused(loader().fanouts([5, 0]));
    assert!(err.contains("fanout"), "{err}");
    let err = refused(loader().fanouts([]));
    assert!(err.contains("at least one hop"), "{err}");
    let err = refused(loader().batch_size(0));
    assert!(err.contains("batch"), "{err}");
    let empty_store = ginex::Store::open(&empty).unwrap();
    for split in [ginex::Split::Train, ginex::Split::Test] {
        let err = refused(
            ginex::Loader::builder(&empty_store)
                .run_dir(&runs)
                .split(split),
        );
        assert!(
            err.contains("no") && err.contains("node"),
            "{split:?}: {err}"
        );
    }
    assert!(!runs.exists(), "a refused loader left a run directory");
}
