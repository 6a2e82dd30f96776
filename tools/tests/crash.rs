//! Kill the store builder at random points: the target path must hold
//! nothing or a store that verifies, and the next build succeeds beside
//! what the killed one left behind, reporting it and removing none of it.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ginex::Store;

fn gen_command(out: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ginex"));
    cmd.args([
        "gen",
        "--nodes",
        "60000",
        "--avg-degree",
        "12",
        "--dim",
        "32",
        "--seed",
        "5",
        "--quiet",
        "--out",
    ])
    .arg(out)
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    cmd
}

/// A tiny deterministic generator for the kill delays (no flakiness from
/// the test's own randomness; the process timing supplies the rest).
fn delays(n: usize, max: Duration) -> Vec<Duration> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            max.mul_f64((x % 10_000) as f64 / 10_000.0)
        })
        .collect()
}

#[test]
fn killed_builds_leave_nothing_or_a_complete_store() {
    let dir = tempfile::tempdir().unwrap();

    // Calibrate: how long does one full build take here?
    let reference = dir.path().join("reference");
    let started = Instant::now();
    assert!(gen_command(&reference).status().unwrap().success());
    let full = started.elapsed();
    Store::open(&reference).unwrap().verify().unwrap();

    let (mut complete, mut absent) = (0, 0);
    for (i, delay) in delays(24, full.mul_f64(1.2)).into_iter().enumerate() {
        let target = dir.path().join(format!("store-{i}"));
        let mut child = gen_command(&target).spawn().unwrap();
        std::thread::sleep(delay);
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        if target.exists() {
            let store = Store::open(&target).unwrap_or_else(|e| {
                panic!("trial {i}: killed after {delay:?}, target is not a store: {e}")
            });
            store.verify().unwrap_or_else(|e| {
                panic!("trial {i}: killed after {delay:?}, store does not verify: {e}")
            });
            complete += 1;
        } else {
            absent += 1;
        }
    }
    // Both outcomes should occur with delays spread over 0..1.2x the build.
    assert!(
        absent > 0,
        "no trial was killed mid-build (full build {full:?})"
    );

    // The next build beside them succeeds and leaves the staging
    // directories the killed processes left alone (it did not create
    // them; it warns about them instead).
    let last = dir.path().join("store-0");
    if last.exists() {
        std::fs::remove_dir_all(&last).unwrap();
    }
    let staged = |dir: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".store-0.ginex-tmp-"))
            .collect();
        v.sort();
        v
    };
    let before = staged(dir.path());
    let out = gen_command(&last).stderr(Stdio::piped()).output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        staged(dir.path()),
        before,
        "a killed run's staging is not ours to remove"
    );
    if !before.is_empty() {
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("was left by a ginex process that was killed"),
            "{err}"
        );
    }
    eprintln!("kill trials: {complete} complete stores, {absent} absent; full build {full:?}");
}
