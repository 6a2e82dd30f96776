//! The command-line tools, driven through their library `run` functions
//! (and once as real processes, for exit codes).

#[path = "../../tests/common/mod.rs"]
mod common;

use std::path::Path;
use std::process::Command;

use clap::Parser;
use ginex::Store;
use ginex_cli::commands::{run as ginex_run, GinexCli};
use ginex_cli::dump::{run as dump, DumpArgs};
use serde_json::Value;

fn gen(args: &[&str]) -> String {
    let cli = GinexCli::try_parse_from(["ginex", "gen", "--quiet"].iter().chain(args)).unwrap();
    let mut out = Vec::new();
    ginex_run(cli, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn dump_text(args: &[&str]) -> ginex::Result<String> {
    let parsed = DumpArgs::try_parse_from(["ginex-dump", "--quiet"].iter().chain(args)).unwrap();
    let mut out = Vec::new();
    dump(&parsed, &mut out)?;
    Ok(String::from_utf8(out).unwrap())
}

fn dump_json(path: &Path) -> Value {
    serde_json::from_str(&dump_text(&["--json", path.to_str().unwrap()]).unwrap()).unwrap()
}

#[test]
fn gen_then_dump_every_file_as_json() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("g");
    let report = gen(&[
        "--nodes",
        "3000",
        "--avg-degree",
        "6",
        "--dim",
        "12",
        "--dtype",
        "bf16",
        "--classes",
        "5",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        report.contains("peak RSS") && report.contains("kept"),
        "{report}"
    );
    let store = Store::open(&out).unwrap();

    let summary = dump_text(&[out.to_str().unwrap()]).unwrap();
    assert!(
        summary.contains("nodes           3000") && summary.contains("bf16"),
        "{summary}"
    );
    let ok = dump_text(&["--verify", out.to_str().unwrap()]).unwrap();
    assert!(ok.starts_with("ok:"), "{ok}");

    let m = dump_json(&out.join("MANIFEST"));
    assert_eq!(m["manifest"]["num_nodes"], 3000);
    assert_eq!(m["manifest"]["dtype"], "bf16");
    assert_eq!(m["header"]["kind"], "manifest");

    let indices = dump_json(&out.join("indices"));
    let lists = indices["lists"].as_array().unwrap();
    assert_eq!(lists.len(), 3000);
    for v in [0u64, 17, 2999] {
        let got: Vec<u64> = lists[v as usize]["in_neighbors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect();
        assert_eq!(got, store.in_neighbors(v).unwrap());
    }

    let pages = dump_json(&out.join("features.pages"));
    let row = &pages["rows"][42];
    let mut values = vec![0f32; 12];
    store.read_feature_rows_f32(&[42], &mut values).unwrap();
    let json_values: Vec<f32> = row["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect();
    assert_eq!(json_values, values);
    assert_eq!(row["page_crc_ok"], true);

    let indptr = dump_json(&out.join("indptr"));
    assert_eq!(indptr["indptr"].as_array().unwrap().len(), 3001);
    let segs = dump_json(&out.join("indices.seg"));
    assert_eq!(
        segs["segments"].as_array().unwrap().len(),
        store.segments().len()
    );
    let crcs = dump_json(&out.join("features.crc"));
    assert_eq!(
        crcs["page_crcs"].as_array().unwrap().len(),
        store.page_crcs().len()
    );
    let labels = dump_json(&out.join("labels"));
    assert_eq!(labels["labels"].as_array().unwrap().len(), 3000);
    let splits = dump_json(&out.join("splits"));
    assert_eq!(
        splits["splits"]["train"].as_array().unwrap().len(),
        store.splits().unwrap().unwrap().train.len()
    );

    let limited: Value = serde_json::from_str(
        &dump_text(&[
            "--json",
            "--limit",
            "5",
            out.join("labels").to_str().unwrap(),
        ])
        .unwrap(),
    )
    .unwrap();
    assert_eq!(limited["labels"].as_array().unwrap().len(), 5);
    assert_eq!(limited["truncated"], true);
}

#[test]
fn verify_names_file_and_offset_and_the_binary_exits_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("g");
    gen(&[
        "--nodes",
        "2000",
        "--dim",
        "8",
        "--out",
        out.to_str().unwrap(),
    ]);
    let pages = out.join("features.pages");
    let mut bytes = std::fs::read(&pages).unwrap();
    bytes[4096 * 3 + 100] ^= 0x10; // payload page 2
    std::fs::write(&pages, bytes).unwrap();

    let err = dump_text(&["--verify", out.to_str().unwrap()])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("features.pages") && err.contains("feature page 2") && err.contains("12288"),
        "{err}"
    );

    let output = Command::new(env!("CARGO_BIN_EXE_ginex-dump"))
        .arg("--verify")
        .arg(&out)
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("feature page 2"), "{stderr}");
}

#[test]
fn gen_refuses_existing_target_and_bad_flags() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("g");
    std::fs::create_dir(&out).unwrap();
    let cli = GinexCli::try_parse_from([
        "ginex",
        "gen",
        "--quiet",
        "--nodes",
        "10",
        "--classes",
        "2",
        "--out",
        out.to_str().unwrap(),
    ])
    .unwrap();
    let err = ginex_run(cli, &mut Vec::new()).unwrap_err().to_string();
    assert!(err.contains("already exists"), "{err}");

    let cli =
        GinexCli::try_parse_from(["ginex", "gen", "--split", "0.5,0.6,0", "--out", "x"]).unwrap();
    let err = ginex_run(cli, &mut Vec::new()).unwrap_err().to_string();
    assert!(err.contains("--split"), "{err}");
    let cli = GinexCli::try_parse_from(["ginex", "gen", "--memory", "lots", "--out", "x"]).unwrap();
    assert!(ginex_run(cli, &mut Vec::new()).is_err());
}

#[test]
fn gen_raw_writes_npy_and_csv() {
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("raw");
    gen(&[
        "--nodes",
        "500",
        "--dim",
        "4",
        "--dtype",
        "f16",
        "--raw",
        raw.to_str().unwrap(),
    ]);
    let store_dir = dir.path().join("store");
    gen(&[
        "--nodes",
        "500",
        "--dim",
        "4",
        "--dtype",
        "f16",
        "--out",
        store_dir.to_str().unwrap(),
    ]);
    let store = Store::open(&store_dir).unwrap();

    let header = |name: &str| {
        let b = std::fs::read(raw.join(name)).unwrap();
        assert_eq!(&b[..6], b"\x93NUMPY");
        let len = u16::from_le_bytes([b[8], b[9]]) as usize;
        (
            String::from_utf8(b[10..10 + len].to_vec()).unwrap(),
            b.len() - 10 - len,
        )
    };
    let (h, data) = header("features.npy");
    assert!(h.contains("'<f2'") && h.contains("(500, 4)"), "{h}");
    assert_eq!(data, 500 * 4 * 2);
    let (h, data) = header("edges.npy");
    assert!(
        h.contains("'<i4'") && h.contains(&format!("({}, 2)", store.num_edges())),
        "{h}"
    );
    assert_eq!(data as u64, store.num_edges() * 8);
    let (h, _) = header("labels.npy");
    assert!(h.contains("'<i8'") && h.contains("(500,)"), "{h}");
    for f in [
        "train_ids.npy",
        "valid_ids.npy",
        "test_ids.npy",
        "meta.json",
    ] {
        assert!(raw.join(f).exists(), "{f} missing");
    }

    let csv_dir = dir.path().join("csv");
    gen(&[
        "--nodes",
        "500",
        "--dim",
        "4",
        "--raw-edges",
        "csv",
        "--raw",
        csv_dir.to_str().unwrap(),
    ]);
    let csv = std::fs::read_to_string(csv_dir.join("edges.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("src,dst"));
    let edges: Vec<(u64, u64)> = lines
        .map(|l| {
            let (s, d) = l.split_once(',').unwrap();
            (s.parse().unwrap(), d.parse().unwrap())
        })
        .collect();
    assert_eq!(edges.len() as u64, store.num_edges());
    let dst = edges[edges.len() / 2].1;
    let from_csv: Vec<u64> = edges.iter().filter(|e| e.1 == dst).map(|e| e.0).collect();
    assert_eq!(from_csv, store.in_neighbors(dst).unwrap());
}

/// `ginex gen` stays within `--memory`, measured as the process's peak RSS
/// (the CSC build must spill to disk to manage it).
#[test]
fn gen_stays_within_its_memory_budget() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("g");
    let output = Command::new(env!("CARGO_BIN_EXE_ginex"))
        .args([
            "gen",
            "--quiet",
            "--nodes",
            "400000",
            "--avg-degree",
            "25",
            "--dim",
            "16",
            "--memory",
            "96MiB",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report = String::from_utf8(output.stdout).unwrap();
    let rss_mib: f64 = report
        .lines()
        .find_map(|l| l.trim().strip_prefix("peak RSS "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no peak RSS line in {report}"));
    // 10M edges would take 80 MB to sort in memory at once, plus buffers.
    assert!(
        rss_mib < 96.0,
        "peak RSS {rss_mib} MiB over the 96 MiB budget\n{report}"
    );
    Store::open(&out).unwrap().verify().unwrap();
}

/// `ginex bench import` runs the copy baseline and the import, reports
/// both with the machine, and leaves no store or copy behind.
#[test]
fn bench_import_reports_against_a_plain_copy_and_cleans_up() {
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("raw");
    gen(&[
        "--nodes",
        "5000",
        "--avg-degree",
        "8",
        "--dim",
        "16",
        "--raw",
        raw.to_str().unwrap(),
    ]);
    let cli = GinexCli::try_parse_from([
        "ginex",
        "bench",
        "import",
        raw.to_str().unwrap(),
        "--memory",
        "64MiB",
    ])
    .unwrap();
    let mut out = Vec::new();
    ginex_run(cli, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    for want in [
        "machine:",
        "round 1: 5000 nodes",
        "plain copy of the inputs",
        "sort + write csc",
        "x the plain copy",
        "peak RSS",
    ] {
        assert!(text.contains(want), "{want:?} missing in:\n{text}");
    }
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("raw")], "{text}");
}

/// Why the out-of-core benchmark cannot run here (not root, no memory
/// cgroup), or `None` when it can.
fn cgroup_unavailable() -> Option<String> {
    let probe = format!("ginex-test-probe-{}", std::process::id());
    match ginex_cli::cgroup::MemoryCgroup::create(&probe, 64 << 20) {
        Ok(_cg) => None,
        Err(e) => Some(e.to_string()),
    }
}

/// The 3000-node store (32-byte rows) the out-of-core bench tests run on,
/// at `dir/g`.
fn bench_store(dir: &Path) -> std::path::PathBuf {
    let store = dir.join("g");
    gen(&[
        "--nodes",
        "3000",
        "--avg-degree",
        "6",
        "--dim",
        "8",
        "--classes",
        "4",
        "--out",
        store.to_str().unwrap(),
    ]);
    store
}

/// `ginex bench outofcore --ratios` runs every policy at one cap per ratio
/// (the features over the ratio), sets their pages against the row-cache
/// bound (no policy reads fewer), and tabulates, plots and writes every cap.
#[test]
fn bench_outofcore_sweeps_ratios_against_the_row_cache_bound() {
    if let Some(why) = cgroup_unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = bench_store(dir.path());
    // 3000 rows of 32 bytes: caps of about 512 and 384 MiB.
    let features = 3000.0 * 32.0;
    let ratios = format!(
        "{},{}",
        features / (512u64 << 20) as f64,
        features / (384u64 << 20) as f64
    );
    let (json, plot) = (dir.path().join("sweep.json"), dir.path().join("sweep.svg"));
    let output = Command::new(env!("CARGO_BIN_EXE_ginex"))
        .args(["bench", "outofcore"])
        .arg(&store)
        .args(["--ratios", &ratios, "--policies", "ginex,none"])
        .arg("--json")
        .arg(&json)
        .arg("--plot")
        .arg(&plot)
        .args(["--", "--batch-size", "100"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{err}");
    for want in [
        "ratio sweep",
        "row-cache bound:",
        "page-cache optimum at the same bytes:",
        "x bound",
        "bound ",
    ] {
        assert!(err.contains(want), "{want:?} missing in:\n{err}");
    }
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let caps = v["caps"].as_array().unwrap();
    assert_eq!(caps.len(), 2, "{v}");
    for cap in caps {
        let result = &cap["result"];
        let floor = result["page_floor"]["floor"].as_u64().unwrap();
        let needed = result["page_floor"]["pages_needed"].as_u64().unwrap();
        assert!(floor > 0 && floor <= needed, "{result}");
        let bound = result["page_floor"]["row_bound"].as_u64().unwrap();
        assert!(bound > 0 && bound <= needed, "{result}");
        let summary = result["summary"].as_array().unwrap();
        // `none` reads every page every batch touches: the bound's trace is
        // the children's own.
        let none = summary.iter().find(|s| s["policy"] == "none").unwrap();
        assert_eq!(none["pages_read"].as_u64(), Some(needed), "{result}");
        for s in summary {
            let pages = s["pages_read"].as_u64().unwrap();
            assert!(
                pages >= bound,
                "{} read {pages} < bound {bound}",
                s["policy"]
            );
        }
    }
    let walls = std::fs::read_to_string(&plot).unwrap();
    let pages = std::fs::read_to_string(dir.path().join("sweep-pages.svg")).unwrap();
    assert!(
        walls.contains(">ginex<") && walls.contains(">none<"),
        "{walls}"
    );
    assert!(pages.contains(">row-cache bound<"), "{pages}");
}

/// `ginex bench outofcore` runs each policy as its own process inside a
/// memory cgroup, reports wall time, counters, the cgroup's peak and OOM
/// kills, writes JSON and SVG, and leaves no cgroup or scratch files — also
/// when a child fails.
#[test]
fn bench_outofcore_runs_each_policy_in_a_memory_cgroup_and_cleans_up() {
    if let Some(why) = cgroup_unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = bench_store(dir.path());
    let json = dir.path().join("ooc.json");
    let plot = dir.path().join("ooc.svg");
    let output = Command::new(env!("CARGO_BIN_EXE_ginex"))
        .args(["bench", "outofcore"])
        .arg(&store)
        .args([
            "--memory",
            "512MiB",
            "--policies",
            "none,lru",
            "--rounds",
            "1",
        ])
        .arg("--json")
        .arg(&json)
        .arg("--plot")
        .arg(&plot)
        .args(["--", "--batch-size", "100"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{err}");
    for want in [
        "machine:",
        "load average",
        "store: 3000 nodes",
        "memory cap 512MiB (536870912 bytes",
        "page cache dropped before each run",
        "--batch-size 100",
        "x none",
        "peak MiB",
        "stage seconds",
    ] {
        assert!(err.contains(want), "{want:?} missing in:\n{err}");
    }
    for policy in ["none", "lru"] {
        assert!(
            err.lines()
                .any(|l| l.trim_start().starts_with(policy) && l.ends_with("1/1 ok")),
            "no {policy} row in:\n{err}"
        );
    }
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{v}");
    for (run, policy) in runs.iter().zip(["none", "lru"]) {
        assert_eq!(run["policy"], policy);
        assert_eq!(run["exit"], "ok");
        assert_eq!(run["oom_kills"], 0);
        let peak = run["cgroup_peak_bytes"].as_u64().unwrap();
        assert!(peak > 0 && peak <= 512 << 20, "{run}");
        assert!(run["misses"].as_u64().unwrap() > 0, "{run}");
        assert!(run["wall_seconds"].as_f64().unwrap() > 0.0, "{run}");
        assert!(run["disk_read_bytes"].is_u64(), "{run}");
        assert!(run["peak_rss_bytes"].as_u64().unwrap() > 0, "{run}");
    }
    assert_eq!(v["summary"][0]["ratio_to_baseline"], 1.0);
    assert_eq!(v["store"]["nodes"], 3000);
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(svg.contains(">none<") && svg.contains(">lru<"), "{svg}");
    // The cgroups are gone.
    let cgroup = v["parameters"]["cgroup"].as_str().unwrap();
    let cg_dir = cgroup.split('(').nth(1).unwrap().trim_end_matches(')');
    assert!(!Path::new(cg_dir).exists(), "{cg_dir} left behind");

    // A child that fails (bad fanouts: a usage error, exit 2) stops the benchmark with the child's
    // own error, and still leaves nothing behind.
    let child = Command::new(env!("CARGO_BIN_EXE_ginex"))
        .args(["bench", "outofcore"])
        .arg(&store)
        .args(["--memory", "256MiB", "--policies", "none"])
        .args(["--", "--fanouts", "x"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let bench_pid = child.id();
    let output = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!output.status.success(), "{err}");
    assert!(
        err.contains("(none, round 1) failed with exit 2") && err.contains("fanout"),
        "{err}"
    );
    let mut left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    // g.ncache/ is the neighbor cache the planned runs built beside the
    // store, kept on purpose for the next run.
    assert_eq!(left, ["g", "g.ncache", "ooc.json", "ooc.svg"], "{err}");
    let parent = Path::new(cg_dir).parent().unwrap();
    let stale: Vec<_> = std::fs::read_dir(parent)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with(&format!("ginex-bench-{bench_pid}-")))
        .collect();
    assert!(stale.is_empty(), "cgroups left behind: {stale:?}");

    // Flags the benchmark sets itself are refused before anything runs.
    let output = Command::new(env!("CARGO_BIN_EXE_ginex"))
        .args(["bench", "outofcore"])
        .arg(&store)
        .args(["--memory", "256MiB", "--", "--policy", "lru"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        !output.status.success() && err.contains("--policy after -- is set by the benchmark"),
        "{err}"
    );
}

/// `ginex epoch` reports every batch to the installed progress sink (with
/// the superbatch under `ginex`), and the binary, whose stderr is not a
/// terminal here, draws no progress at all: its stderr is the report table
/// alone, without a carriage return or an escape sequence.
#[test]
fn epoch_progress_reaches_the_sink_and_is_quiet_off_a_terminal() {
    let phases = common::Phases::default();
    assert!(ginex::progress::install(Box::new(common::Recorder(
        phases.clone()
    ))));
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("g");
    gen(&[
        "--nodes",
        "3000",
        "--avg-degree",
        "6",
        "--dim",
        "8",
        "--split",
        "0.5,0.1,0.1",
        "--out",
        store.to_str().unwrap(),
    ]);
    let args = [
        "--policy",
        "ginex",
        "--batch-size",
        "100",
        "--superbatch",
        "4",
        "--feature-cache-bytes",
        "64KiB",
        "--fanouts",
        "5,5",
    ];
    let runs = dir.path().join("runs");
    let cli = GinexCli::try_parse_from(
        [
            "ginex",
            "epoch",
            store.to_str().unwrap(),
            "--run-dir",
            runs.to_str().unwrap(),
        ]
        .iter()
        .chain(&args),
    )
    .unwrap();
    ginex_run(cli, &mut Vec::new()).unwrap();
    // Other tests of this binary run epochs too (policy none): ours is the
    // one with superbatches.
    let seen = phases.lock().unwrap().clone();
    let epoch: Vec<_> = seen
        .iter()
        .filter(|p| p.0 == "epoch" && p.3.starts_with("superbatch"))
        .collect();
    assert_eq!(epoch.len(), 1, "{seen:?}");
    let (_, total, pos, message) = epoch[0];
    let train = Store::open(&store)
        .unwrap()
        .splits()
        .unwrap()
        .unwrap()
        .train
        .len();
    let batches = train.div_ceil(100) as u64;
    assert!(batches > 12, "{train} training nodes");
    assert_eq!((*total, *pos), (batches, batches));
    let superbatches = batches.div_ceil(4);
    assert!(
        message.starts_with(&format!("superbatch {superbatches}/{superbatches}, "))
            && message.ends_with(" seeds/s"),
        "{message}"
    );

    let output = Command::new(env!("CARGO_BIN_EXE_ginex"))
        .arg("epoch")
        .arg(&store)
        .arg("--run-dir")
        .arg(&runs)
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{err}");
    assert!(err.starts_with("epoch 0 of "), "{err}");
    assert!(
        !err.contains('\r') && !err.contains('\x1b') && !err.contains("seeds/s"),
        "progress drawn off a terminal: {err:?}"
    );
}

/// The README's tour writes to `data/…` in a fresh checkout: missing parent
/// directories of `--out` (and of `--report`) are created, while a parent
/// that is a file is still refused by name.
#[test]
fn missing_parent_directories_of_outputs_are_created() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("data/deeper/g");
    gen(&[
        "--nodes",
        "500",
        "--avg-degree",
        "4",
        "--dim",
        "4",
        "--out",
        store.to_str().unwrap(),
    ]);
    Store::open(&store).unwrap();
    let report = dir.path().join("reports/epoch.json");
    let cli = GinexCli::try_parse_from([
        "ginex",
        "epoch",
        store.to_str().unwrap(),
        "--policy",
        "none",
        "--run-dir",
        dir.path().join("runs").to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ])
    .unwrap();
    ginex_run(cli, &mut Vec::new()).unwrap();
    let v: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(v["policy"], "none");

    std::fs::write(dir.path().join("file"), b"x").unwrap();
    let cli = GinexCli::try_parse_from([
        "ginex",
        "gen",
        "--quiet",
        "--nodes",
        "100",
        "--out",
        dir.path().join("file/g").to_str().unwrap(),
    ])
    .unwrap();
    let err = ginex_run(cli, &mut Vec::new()).unwrap_err().to_string();
    assert!(err.contains("file is not a directory"), "{err}");
}

/// `ginex-dump STORE` and `--json STORE` show a remapped store's original
/// ids, and a row larger than a page is described by the pages it spans
/// (not `0 rows/page`).
#[test]
fn dump_shows_original_ids_and_pages_per_row() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("e.txt"), "10 20\n20 30\n30 10\n40 10\n").unwrap();
    let store = dir.path().join("r");
    let cli = ginex_cli::import::ImportCli::try_parse_from([
        "ginex-import",
        "files",
        "--quiet",
        "--edges",
        dir.path().join("e.txt").to_str().unwrap(),
        "--remap",
        "--out",
        store.to_str().unwrap(),
    ])
    .unwrap();
    ginex_cli::import::run(&cli, &mut Vec::new()).unwrap();
    let v = dump_json(&store);
    assert_eq!(
        v["original_ids"],
        serde_json::json!([10, 20, 30, 40]),
        "{v}"
    );
    let cut: Value = serde_json::from_str(
        &dump_text(&["--json", "--limit", "2", store.to_str().unwrap()]).unwrap(),
    )
    .unwrap();
    assert_eq!(cut["original_ids"], serde_json::json!([10, 20]));
    assert_eq!(cut["truncated"], true);
    let text = dump_text(&[store.to_str().unwrap()]).unwrap();
    assert!(
        text.contains("original ids    4 (10, 20, 30, 40;"),
        "{text}"
    );

    let wide = dir.path().join("wide");
    gen(&[
        "--nodes",
        "50",
        "--avg-degree",
        "3",
        "--dim",
        "2500",
        "--out",
        wide.to_str().unwrap(),
    ]);
    let text = dump_text(&[wide.to_str().unwrap()]).unwrap();
    assert!(
        text.contains("(10000 bytes/row, a row spans 3 pages, starting on a page boundary)"),
        "{text}"
    );
    let v = dump_json(&wide);
    assert_eq!(
        (v["rows_per_page"].as_u64(), v["pages_per_row"].as_u64()),
        (Some(0), Some(3))
    );
    assert!(v.get("original_ids").is_none());
}

/// `--fanouts -1,-1` (full neighbourhoods) is taken as a value, not as an
/// unknown flag, by every command that samples.
#[test]
fn negative_fanouts_are_accepted_as_written() {
    for cmd in ["epoch", "sample", "inspect"] {
        let mut argv = vec!["ginex", cmd, "STORE", "--fanouts", "-1,-1"];
        if cmd == "inspect" {
            argv.extend(["--out", "runs", "--feature-cache-rows", "10"]);
        }
        let parsed = GinexCli::try_parse_from(&argv);
        assert!(parsed.is_ok(), "{cmd}: {}", parsed.unwrap_err());
    }
    let bad = GinexCli::try_parse_from(["ginex", "epoch", "S", "--fanouts", "-2,1"]);
    assert!(bad.is_err(), "-2 is not a fanout");
}

/// `ginex inspect --index I` inspects the superbatch `ginex epoch` runs as
/// superbatch I: under the default short layout superbatch 1 of
/// superbatches of 40 is batches 16..48; under `full`, 40 to the end;
/// an index past the epoch's superbatches is refused, naming their count.
#[test]
fn inspect_cuts_the_epoch_where_epoch_does() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("g");
    // 2000 nodes, about 30 % train: about 60 batches of 10 seeds.
    gen(&[
        "--nodes",
        "2000",
        "--avg-degree",
        "4",
        "--dim",
        "4",
        "--split",
        "0.3,0.1,0.1",
        "--out",
        store.to_str().unwrap(),
    ]);
    let inspect = |layout: &str, index: &str| {
        let out_dir = dir.path().join(format!("runs-{layout}-{index}"));
        let cli = GinexCli::try_parse_from([
            "ginex",
            "inspect",
            store.to_str().unwrap(),
            "--batch-size",
            "10",
            "--fanouts",
            "3,3",
            "--superbatch",
            "40",
            "--feature-cache-rows",
            "50",
            "--first-superbatch",
            layout,
            "--index",
            index,
            "--out",
            out_dir.to_str().unwrap(),
        ])
        .unwrap();
        let mut out = Vec::new();
        ginex_run(cli, &mut out).map(|()| serde_json::from_slice::<Value>(&out).unwrap())
    };
    let short = inspect("short", "1").unwrap();
    assert_eq!(
        (short["first_batch"].as_u64(), short["batches"].as_u64()),
        (Some(16), Some(32))
    );
    let full = inspect("full", "1").unwrap();
    assert_eq!(full["first_batch"].as_u64(), Some(40));
    let rest = full["batches"].as_u64().unwrap();
    assert!((1..=40).contains(&rest), "{full}");
    let err = inspect("full", "2").unwrap_err().to_string();
    assert!(
        err.contains("--index 2") && err.contains("2 superbatches"),
        "{err}"
    );
}
