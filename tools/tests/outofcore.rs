//! The out-of-core runtime through the `ginex` binary: a neighbor cache
//! built once is reused, `--memory` keeps the process within its budget and
//! refuses an impossible one, and a killed pipelined run leaves nothing
//! that breaks the next run.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn ginex(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ginex"))
        .args(args)
        .output()
        .unwrap()
}

fn ok(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    stderr
}

/// A store whose features (400k × 64 f32 = 102 MB) exceed the budgets used.
fn store(dir: &Path) -> String {
    let s = dir.join("s");
    ok(&ginex(&[
        "gen",
        "--quiet",
        "--nodes",
        "400000",
        "--avg-degree",
        "8",
        "--dim",
        "64",
        "--classes",
        "8",
        "--split",
        "0.02,0.01,0.01",
        "--seed",
        "2",
        "--out",
        s.to_str().unwrap(),
    ]));
    s.to_str().unwrap().to_string()
}

fn report(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

// One scenario read top to bottom (the 150-line limit is on the tools' code).
#[allow(clippy::too_many_lines)]
#[test]
fn memory_budget_caches_built_once_and_killed_runs() {
    let dir = tempfile::tempdir().unwrap();
    let st = store(dir.path());
    let epoch = |extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = [
            "epoch",
            st.as_str(),
            "--batch-size",
            "500",
            "--fanouts",
            "10,5",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let run = |extra: &[&str]| {
        let a = epoch(extra);
        ginex(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };

    // --memory: the plan is printed and followed, and the process stays
    // within the budget.
    let r1 = dir.path().join("r1.json");
    let stderr = ok(&run(&[
        "--memory",
        "160MiB",
        "--report",
        r1.to_str().unwrap(),
    ]));
    assert!(stderr.contains("memory plan for 160 MiB"), "{stderr}");
    let v = report(&r1);
    let plan = &v["memory_plan"];
    assert!(
        plan["feature_cache_rows"].as_u64().unwrap() > 1000,
        "{plan}"
    );
    assert!(plan["neighbor_cache_bytes"].as_u64().unwrap() > 0, "{plan}");
    let rss = v["peak_rss_bytes"].as_u64().unwrap();
    assert!(rss <= 160 << 20, "peak RSS {} MiB over 160 MiB", rss >> 20);
    assert_eq!(v["neighbor_cache_reused"], false);

    // The neighbor cache was built once, beside the store: the next run
    // under the same budget reuses it.
    let r2 = dir.path().join("r2.json");
    ok(&run(&[
        "--memory",
        "160MiB",
        "--report",
        r2.to_str().unwrap(),
    ]));
    let v2 = report(&r2);
    assert_eq!(v2["neighbor_cache_reused"], true);
    assert_eq!(v2["seconds"]["neighbor_cache_build"], 0.0);
    assert_eq!(
        v2["per_batch"], v["per_batch"],
        "same batches, same counters"
    );
    assert!(Path::new(&format!("{st}.ncache")).is_dir());

    // Merged reads change the reads, never the batches: pages needed a few
    // apart are read as one by default, each on its own with `off`.
    let r_off = dir.path().join("r-off.json");
    ok(&run(&[
        "--memory",
        "160MiB",
        "--read-merge-gap",
        "off",
        "--report",
        r_off.to_str().unwrap(),
    ]));
    let off = report(&r_off);
    assert_eq!(
        off["per_batch"], v["per_batch"],
        "same batches, same counters"
    );
    let reads = |v: &Value| {
        (
            v["feature_reads"].as_u64().unwrap(),
            v["pages_read"].as_u64().unwrap(),
        )
    };
    let ((merged, pages), (unmerged, pages_off)) = (reads(&v2), reads(&off));
    assert_eq!((unmerged, pages_off), (pages, pages), "{off}");
    assert!(
        merged > 0 && merged < pages / 2,
        "{merged} reads for {pages} pages"
    );
    assert!(v2["bytes_read"].as_u64() > off["bytes_read"].as_u64());

    // `ginex cache build` writes where runs look for it.
    ok(&ginex(&["cache", "build", &st, "--budget", "1MiB"]));
    let r3 = dir.path().join("r3.json");
    ok(&run(&[
        "--neighbor-cache-bytes",
        "1MiB",
        "--report",
        r3.to_str().unwrap(),
    ]));
    assert_eq!(report(&r3)["neighbor_cache_reused"], true);

    // An impossible budget is refused with the minimum it needs.
    let out = run(&["--memory", "40MiB"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("below the") && err.contains("at the least"),
        "{err}"
    );
    assert!(err.contains("--memory") && err.contains("MiB"), "{err}");

    // A pipelined run killed mid-epoch leaves its runtime files behind; the
    // next run beside it succeeds, reports them and removes none of them
    // (it did not create them), only its own directory.
    let runs = dir.path().join("runs");
    let args = epoch(&[
        "--pipeline",
        "full",
        "--superbatch",
        "2",
        "--feature-cache-bytes",
        "8MiB",
        "--run-dir",
        runs.to_str().unwrap(),
    ]);
    // The kills follow the run's progress, not the clock: each lands once
    // the runtime files of superbatch `at` (of 8) of that process exist.
    let furthest_superbatch = |pid: Option<u32>| -> Option<u64> {
        let mut furthest = None;
        for run in std::fs::read_dir(&runs).ok()?.flatten() {
            let name = run.file_name().to_string_lossy().into_owned();
            if pid.is_some_and(|pid| !name.starts_with(&format!("run-{pid}-"))) {
                continue;
            }
            for file in std::fs::read_dir(run.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                let name = file.file_name().to_string_lossy().into_owned();
                let index = name
                    .strip_prefix("sb-")
                    .and_then(|n| n.split('.').next())
                    .and_then(|n| n.parse::<u64>().ok());
                furthest = furthest.max(index);
            }
        }
        furthest
    };
    let mut killed = 0;
    for at in [0u64, 2, 4] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ginex"))
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let pid = Some(child.id());
        let started = Instant::now();
        while furthest_superbatch(pid) < Some(at) && started.elapsed() < Duration::from_secs(60) {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap();
            killed += 1;
        }
        child.wait().unwrap();
    }
    assert_eq!(killed, 3, "a run finished before it was killed mid-epoch");
    assert!(
        furthest_superbatch(None).is_some(),
        "the killed runs left no runtime files to clean up"
    );
    let snapshot = || -> Vec<(std::path::PathBuf, Vec<u8>)> {
        let mut files = Vec::new();
        for run in std::fs::read_dir(&runs).unwrap().flatten() {
            files.push((run.path(), Vec::new()));
            for f in std::fs::read_dir(run.path()).unwrap().flatten() {
                files.push((f.path(), std::fs::read(f.path()).unwrap()));
            }
        }
        files.sort();
        files
    };
    let before = snapshot();
    let r4 = dir.path().join("r4.json");
    let mut again = args.clone();
    again.extend(["--report".to_string(), r4.to_str().unwrap().to_string()]);
    let err = ok(&ginex(
        &again.iter().map(String::as_str).collect::<Vec<_>>(),
    ));
    assert!(err.contains("was left by a run that was killed"), "{err}");
    assert!(
        snapshot() == before,
        "the killed runs' files changed, or the new run left its own behind"
    );
}
