//! Finding 5 of issue 14: a store that cannot fit is refused before
//! anything is written, with both numbers, and sparse ids are named with
//! the `--remap` hint. The free space is simulated through the storage
//! seam (`ginex::internals::io::space::simulate_disk_space`), which is global to the
//! process: this must stay the only test in its binary.

#[path = "../../tests/common/mod.rs"]
mod common;

use clap::Parser;
use ginex::internals::io::space::{bytes_written, simulate_disk_space};
use ginex_cli::commands::{run as ginex_run, GinexCli};
use ginex_cli::import::{run as import_run, ImportCli};

fn run_ginex(args: &[&str]) -> ginex::Result<String> {
    let cli = GinexCli::try_parse_from(std::iter::once(&"ginex").chain(args)).unwrap();
    let mut out = Vec::new();
    ginex_run(cli, &mut out)?;
    Ok(String::from_utf8(out).unwrap())
}
use common::{gz, p};

fn run_import(args: &[&str]) -> ginex::Result<String> {
    let cli = ImportCli::try_parse_from(std::iter::once(&"ginex-import").chain(args)).unwrap();
    let mut out = Vec::new();
    import_run(&cli, &mut out)?;
    Ok(String::from_utf8(out).unwrap())
}

// One scenario read top to bottom (the 150-line limit is on the tools' code).
#[allow(clippy::too_many_lines)]
#[test]
fn stores_that_cannot_fit_are_refused_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("store");
    let edges = dir.path().join("e.txt");
    std::fs::write(&edges, "0 1\n5000000000 1\n1 0\n").unwrap();
    // 64 MiB "free": plenty for the 3 distinct ids, far too little for
    // 5,000,000,001 nodes.
    let free = 64u64 << 20;
    let refuse = |args: &[&str], want: &[&str]| {
        simulate_disk_space(Some(free));
        let err = run_import(args).expect_err("imported").to_string();
        let written = bytes_written();
        simulate_disk_space(None);
        for w in want {
            assert!(err.contains(w), "expected {w:?} in: {err}");
        }
        assert_eq!(written, 0, "{written} bytes written before the refusal");
        assert!(!out.exists());
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_string_lossy().contains("ginex-tmp"))
            .collect();
        assert!(left.is_empty(), "staging left: {left:?}");
    };
    refuse(
        &["files", "--quiet", "--edges", p(&edges), "--out", p(&out)],
        &[
            "store: the store needs at least",
            "for 5000000001 nodes × 4 bytes of f32 features, 3 edges, but",
            &format!("has {free} bytes (64.0 MiB) free; nothing was written"),
            "the ids are sparse: 3 edges hold at most 6 distinct ids but the largest id is 5000000000",
            "pass --remap",
        ],
    );
    refuse(
        &[
            "files",
            "--quiet",
            "--edges",
            p(&edges),
            "--num-nodes",
            "1000000000000",
            "--out",
            p(&out),
        ],
        &[
            "for 1000000000000 nodes × 4 bytes",
            "free; nothing was written",
        ],
    );
    let ogb = dir.path().join("ogbn_x");
    std::fs::create_dir_all(ogb.join("raw")).unwrap();
    gz(&ogb.join("raw/edge.csv.gz"), b"0,1\n");
    gz(&ogb.join("raw/num-node-list.csv.gz"), b"100000000000\n");
    refuse(
        &["ogb", p(&ogb), "--quiet", "--out", p(&out)],
        &[
            "for 100000000000 nodes × 4 bytes",
            "free; nothing was written",
        ],
    );

    // The edges' sort spill counts (issue 32): 100,000 edges make a store
    // of about 0.4 MB but are spilled as 0.8 MB of (dst, src) pairs before
    // the first list is written, so 0.6 MB free is refused up front rather
    // than failing half-way with ENOSPC (without --num-nodes the edges are
    // scanned, and so counted, before the store is created).
    let many = dir.path().join("many.txt");
    std::fs::write(&many, "0 1\n".repeat(100_000)).unwrap();
    simulate_disk_space(Some(600_000));
    let err = run_import(&["files", "--quiet", "--edges", p(&many), "--out", p(&out)])
        .expect_err("imported")
        .to_string();
    let written = bytes_written();
    simulate_disk_space(None);
    assert!(
        err.contains("100000 edges, but") && err.contains("nothing was written"),
        "{err}"
    );
    assert_eq!(written, 0, "{written} bytes written before the refusal");
    assert!(!out.exists());
    // With room for the spill it imports.
    simulate_disk_space(Some(2_000_000));
    let r = run_import(&["files", "--quiet", "--edges", p(&many), "--out", p(&out)]);
    simulate_disk_space(None);
    r.unwrap();
    std::fs::remove_dir_all(&out).unwrap();

    // The same edges with --remap fit the same simulated disk.
    simulate_disk_space(Some(free));
    let r = run_import(&[
        "files",
        "--quiet",
        "--edges",
        p(&edges),
        "--remap",
        "--out",
        p(&out),
    ]);
    simulate_disk_space(None);
    r.unwrap();
    assert_eq!(ginex::Store::open(&out).unwrap().num_nodes(), 3);

    // `ginex gen` (catalog: "ginex gen output larger than the free space"):
    // 1,000,000 nodes × 64 f32 features (~256 MB) do not fit 64 MiB, as a
    // store or as raw files; 2,000 nodes do.
    let gen_out = dir.path().join("g");
    for (flag, what) in [
        ("--out", "the store needs about"),
        ("--raw", "the raw output needs about"),
    ] {
        simulate_disk_space(Some(free));
        let err = run_ginex(&[
            "gen",
            "--quiet",
            "--nodes",
            "1000000",
            "--dim",
            "64",
            flag,
            p(&gen_out),
        ])
        .expect_err("generated")
        .to_string();
        let written = bytes_written();
        simulate_disk_space(None);
        for w in [
            what,
            "for 1000000 nodes × 64 features of f32 and 10000000 edges drawn",
            &format!("has {free} bytes (64.0 MiB) free; nothing was written"),
            "lower --nodes",
        ] {
            assert!(err.contains(w), "expected {w:?} in: {err}");
        }
        assert_eq!(written, 0, "{written} bytes written before the refusal");
        assert!(!gen_out.exists());
        // The path the user gave, not the unordered store built beside it
        // (--reorder auto, the default) (#65).
        assert!(err.contains(&format!("{}: the ", p(&gen_out))), "{err}");
    }
    for flag in ["--out", "--raw"] {
        let small = dir.path().join(format!("small{flag}"));
        simulate_disk_space(Some(free));
        let r = run_ginex(&[
            "gen",
            "--quiet",
            "--nodes",
            "2000",
            "--dim",
            "8",
            flag,
            p(&small),
        ]);
        simulate_disk_space(None);
        r.unwrap();
        assert!(small.exists());
    }
}
