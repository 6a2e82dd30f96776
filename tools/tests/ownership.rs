//! Reliability round 3 (issue 33): no command ever removes or changes a
//! file it did not create. Every command that writes (gen, gen --raw,
//! import, export dgl / graphbolt, inspect, epoch with --run-dir and
//! --report, cache build) runs into a directory pre-filled with unrelated
//! files, look-alikes of ginex's own temporaries, and a previous run's
//! outputs, and fails at random points: bad flags, its output already
//! there, a full disk after a random number of bytes (the `io::space`
//! seam), SIGKILL after a random delay. After every trial each file that
//! existed before is byte-identical. Train checkpoints need libtorch: their
//! temporaries are matched by `io::durable::atomic_temporary_owner` (unit
//! tested in `io::durable`), the rest is covered by the train-feature tests.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Instant;

use clap::Parser;
use ginex::internals::io::space::{bytes_written, simulate_disk_space};
use ginex_cli::commands::{run as ginex_run, GinexCli};
use ginex_cli::export::{run as export_run, ExportCli};
use ginex_cli::import::{run as import_run, ImportCli};

/// The simulated disk is process-wide: one trial at a time.
static DISK: Mutex<()> = Mutex::new(());

#[derive(Clone, Copy, Debug)]
enum Bin {
    Ginex,
    Import,
    Export,
}

impl Bin {
    fn exe(self) -> &'static str {
        match self {
            Bin::Ginex => env!("CARGO_BIN_EXE_ginex"),
            Bin::Import => env!("CARGO_BIN_EXE_ginex-import"),
            Bin::Export => env!("CARGO_BIN_EXE_ginex-export"),
        }
    }

    /// Parses and runs `args` in this process; the error as text.
    fn run(self, args: &[String]) -> Result<(), String> {
        let argv = std::iter::once("ginex".to_string()).chain(args.iter().cloned());
        let mut out = Vec::new();
        match self {
            Bin::Ginex => {
                let cli = GinexCli::try_parse_from(argv).map_err(|e| e.to_string())?;
                ginex_run(cli, &mut out)
            }
            Bin::Import => {
                let cli = ImportCli::try_parse_from(argv).map_err(|e| e.to_string())?;
                import_run(&cli, &mut out)
            }
            Bin::Export => {
                let cli = ExportCli::try_parse_from(argv).map_err(|e| e.to_string())?;
                export_run(&cli, &mut out)
            }
        }
        .map_err(|e| e.to_string())
    }
}

/// A writing command: its arguments for output `target` (a fresh name per
/// trial, or the previous run's output).
struct Cmd {
    name: &'static str,
    bin: Bin,
    args: fn(&Path, &str) -> Vec<String>,
    /// The output of the previous run (which a rerun into it must refuse
    /// or leave alone).
    previous: &'static str,
    /// Arguments that parse but are wrong: the command must fail.
    wrong: fn(&Path, &str) -> Vec<String>,
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|a| a.to_string()).collect()
}

fn at(w: &Path, name: &str) -> String {
    w.join(name).to_str().unwrap().to_string()
}

fn gen_args(w: &Path, t: &str) -> Vec<String> {
    let mut a = s(&["gen", "--quiet", "--nodes", "3000", "--avg-degree", "8"]);
    a.extend(s(&["--dim", "8", "--classes", "4", "--seed", "3", "--out"]));
    a.push(at(w, t));
    a
}

fn raw_args(w: &Path, t: &str) -> Vec<String> {
    let mut a = s(&["gen", "--quiet", "--nodes", "3000", "--avg-degree", "8"]);
    a.extend(s(&["--dim", "8", "--classes", "4", "--seed", "3", "--raw"]));
    a.push(at(w, t));
    a
}

fn import_args(w: &Path, t: &str) -> Vec<String> {
    let mut a = s(&["files", "--quiet", "--memory", "256KiB", "--edges"]);
    a.push(at(w, "raw/edges.npy"));
    a.extend(["--features".into(), at(w, "raw/features.npy")]);
    a.extend(["--labels".into(), at(w, "raw/labels.npy")]);
    a.extend(["--out".into(), at(w, t)]);
    a
}

fn dgl_args(w: &Path, t: &str) -> Vec<String> {
    vec!["dgl".into(), at(w, "store"), "--out".into(), at(w, t)]
}

fn graphbolt_args(w: &Path, t: &str) -> Vec<String> {
    vec!["graphbolt".into(), at(w, "store"), "--out".into(), at(w, t)]
}

/// `t` is `R` (the previous run's directory) or `R:<index>`.
fn inspect_args(w: &Path, t: &str) -> Vec<String> {
    let (dir, index) = t.split_once(':').unwrap_or((t, "0"));
    let mut a = vec!["inspect".into(), at(w, "store")];
    a.extend(s(&[
        "--batch-size",
        "40",
        "--fanouts",
        "5,5",
        "--superbatch",
        "1",
    ]));
    a.extend(s(&[
        "--feature-cache-rows",
        "300",
        "--workers",
        "2",
        "--index",
    ]));
    a.extend([index.into(), "--out".into(), at(w, dir)]);
    a
}

/// `t` names the report; the run directory is always `runs`.
fn epoch_args(w: &Path, t: &str) -> Vec<String> {
    let mut a = vec!["epoch".into(), at(w, "store")];
    a.extend(s(&[
        "--batch-size",
        "40",
        "--fanouts",
        "5,5",
        "--policy",
        "ginex",
    ]));
    a.extend(s(&["--superbatch", "3", "--feature-cache-bytes", "16KiB"]));
    a.extend(s(&["--workers", "2", "--run-dir"]));
    a.push(at(w, "runs"));
    a.extend(["--report".into(), at(w, t)]);
    a
}

fn cache_args(w: &Path, t: &str) -> Vec<String> {
    let mut a = s(&["cache", "build"]);
    a.push(at(w, "store"));
    a.extend(s(&["--budget", "40KiB", "--out"]));
    a.push(at(w, t));
    a
}

fn commands() -> Vec<Cmd> {
    vec![
        Cmd {
            name: "gen",
            bin: Bin::Ginex,
            args: gen_args,
            previous: "g",
            wrong: |w, t| {
                let mut a = gen_args(w, t);
                a.extend(s(&["--split", "0.9,0.9,0.9"]));
                a
            },
        },
        Cmd {
            name: "gen --raw",
            bin: Bin::Ginex,
            args: raw_args,
            previous: "rawprev",
            wrong: |w, t| {
                let mut a = raw_args(w, t);
                a.extend(s(&["--dtype", "f8"]));
                a
            },
        },
        Cmd {
            name: "import files",
            bin: Bin::Import,
            args: import_args,
            previous: "imp",
            wrong: |w, t| {
                let mut a = import_args(w, t);
                // Labels as features: found wrong once the edges are in.
                a.extend(["--features".into(), at(w, "raw/labels.npy")]);
                a
            },
        },
        Cmd {
            name: "export dgl",
            bin: Bin::Export,
            args: dgl_args,
            previous: "dgl",
            wrong: |w, t| vec!["dgl".into(), at(w, "notes.txt"), "--out".into(), at(w, t)],
        },
        Cmd {
            name: "export graphbolt",
            bin: Bin::Export,
            args: graphbolt_args,
            previous: "gb",
            wrong: |w, t| vec!["graphbolt".into(), at(w, "raw"), "--out".into(), at(w, t)],
        },
        Cmd {
            name: "inspect",
            bin: Bin::Ginex,
            args: inspect_args,
            previous: "R",
            wrong: |w, _| inspect_args(w, "R:999"),
        },
        Cmd {
            name: "epoch --run-dir --report",
            bin: Bin::Ginex,
            args: epoch_args,
            previous: "report.json",
            wrong: |w, t| {
                let mut a = epoch_args(w, t);
                a[3] = "0".into(); // --batch-size 0
                assert_eq!(a[2], "--batch-size");
                a
            },
        },
        Cmd {
            name: "cache build",
            bin: Bin::Ginex,
            args: cache_args,
            previous: "n.ncache",
            wrong: |w, t| {
                let mut a = cache_args(w, t);
                a.extend(s(&["--codec", "gzip"]));
                a
            },
        },
    ]
}

/// Every file (with its bytes) and directory (with `None`) under `dir`.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let path = e.path();
            if e.file_type().unwrap().is_dir() {
                out.insert(path.clone(), None);
                stack.push(path);
            } else {
                out.insert(path.clone(), Some(std::fs::read(&path).unwrap()));
            }
        }
    }
    out
}

/// Every entry of `before` is still there, byte-identical.
fn assert_kept(before: &BTreeMap<PathBuf, Option<Vec<u8>>>, w: &Path, what: &str) {
    let now = snapshot(w);
    for (path, bytes) in before {
        match now.get(path) {
            None => panic!("{what}: {} was removed", path.display()),
            Some(b) if b != bytes => panic!("{what}: {} was changed", path.display()),
            Some(_) => {}
        }
    }
}

/// Deterministic trial parameters (the process timing supplies the rest).
struct Rng(u64);

impl Rng {
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % 10_000) as f64 / 10_000.0
    }
}

/// The working directory: a store and raw files (inputs), unrelated files,
/// look-alikes of ginex's temporaries and run directories, and each
/// command's previous output.
fn prefilled() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let w = tmp.path().join("w");
    std::fs::create_dir(&w).unwrap();
    for (name, bytes) in [
        ("notes.txt", &b"not ginex's"[..]),
        (".hidden", b"x"),
        ("sb-000000.samples", b"a user's file with a ginex name"),
        // A killed process's temporaries (pid 4194303 is above Linux's
        // pid_max default and never alive) and a checkpoint-like one.
        (".g2.ginex-tmp-4194303-1/MANIFEST", b"half"),
        (".n2.ncache.ginex-tmp-4194303-1-0", b"half"),
        (".LATEST.tmp-4194303-1-0", b"half"),
        ("runs/run-4194303-1/sb-000000.samples", b"a killed run's"),
        ("runs/unrelated", b"mine"),
        ("R/notes.txt", b"mine"),
        ("R/sb-000009.changes", b"a user's file with a ginex name"),
    ] {
        let p = w.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
    for (cmd, args) in [
        (Bin::Ginex, gen_args(&w, "store")),
        (Bin::Ginex, raw_args(&w, "raw")),
    ] {
        cmd.run(&args).unwrap();
    }
    for c in commands() {
        (c.bin).run(&(c.args)(&w, c.previous)).unwrap_or_else(|e| {
            panic!("{}: the previous run failed: {e}", c.name);
        });
    }
    // An epoch run whose files were kept.
    let mut kept = epoch_args(&w, "kept.json");
    kept.push("--keep-runs".into());
    Bin::Ginex.run(&kept).unwrap();
    (tmp, w)
}

/// Bad flags, wrong values, a rerun into the previous output and a full
/// disk at random points, in this process.
#[test]
fn failing_commands_leave_every_existing_file_byte_identical() {
    let _disk = DISK.lock().unwrap_or_else(|e| e.into_inner());
    let (_tmp, w) = prefilled();
    let before = snapshot(&w);
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut outcomes: BTreeMap<&str, [u32; 3]> = BTreeMap::new();
    for c in commands() {
        let what = |trial: &str| format!("{} ({trial})", c.name);
        // A flag that does not exist.
        let mut bad = (c.args)(&w, "bad");
        bad.push("--no-such-flag".into());
        assert!((c.bin).run(&bad).is_err(), "{}", what("bad flag"));
        assert_kept(&before, &w, &what("bad flag"));
        // Values that parse but are wrong.
        let err = (c.bin)
            .run(&(c.wrong)(&w, "wrong"))
            .expect_err(&what("wrong value"));
        assert!(!err.is_empty());
        assert_kept(&before, &w, &what(&format!("wrong value: {err}")));
        // Into the previous run's output: refused, or (epoch) written
        // beside its own files.
        let again = (c.bin).run(&(c.args)(&w, c.previous));
        if c.name.starts_with("epoch") {
            again.unwrap();
            let now = snapshot(&w);
            assert_ne!(now[&w.join("report.json")], before[&w.join("report.json")]);
            std::fs::write(
                w.join("report.json"),
                before[&w.join("report.json")].as_ref().unwrap(),
            )
            .unwrap();
        } else {
            let err = again.expect_err(&what("rerun"));
            assert!(err.contains("already"), "{}: {err}", what("rerun"));
        }
        assert_kept(&before, &w, &what("rerun"));

        // A full run's bytes, then full disks at random fractions of it.
        let target = |i: usize| {
            if c.name == "inspect" {
                format!("R:{}", i + 1)
            } else if c.name.starts_with("epoch") {
                // Fails before the report: the previous one stays.
                c.previous.to_string()
            } else {
                format!("{}-t{i}", c.previous)
            }
        };
        let start = bytes_written();
        (c.bin).run(&(c.args)(&w, &target(0))).unwrap();
        let full = bytes_written() - start;
        assert!(full > 0, "{} wrote nothing", c.name);
        if c.name.starts_with("epoch") {
            std::fs::write(
                w.join("report.json"),
                before[&w.join("report.json")].as_ref().unwrap(),
            )
            .unwrap();
        }
        for i in 1..6 {
            let budget = (full as f64 * rng.unit()) as u64;
            simulate_disk_space(Some(budget));
            let r = (c.bin).run(&(c.args)(&w, &target(i)));
            simulate_disk_space(None);
            if r.is_ok() && c.name.starts_with("epoch") {
                // Enough space after all: a complete report replaced it.
                std::fs::write(
                    w.join("report.json"),
                    before[&w.join("report.json")].as_ref().unwrap(),
                )
                .unwrap();
            }
            let slot = outcomes.entry(c.name).or_default();
            match &r {
                Ok(()) => slot[0] += 1,
                Err(e) if e.contains("No space left") => slot[1] += 1,
                Err(_) => slot[2] += 1,
            }
            let trial = format!("{budget} of {full} bytes free: {r:?}");
            assert_kept(&before, &w, &what(&trial));
            if r.is_err() && !c.name.starts_with("epoch") && c.name != "inspect" {
                assert!(
                    !w.join(target(i)).exists(),
                    "{}: a partial output was left",
                    what(&trial)
                );
            }
        }
    }
    eprintln!("disk-full trials [succeeded, out of space, refused up front]: {outcomes:?}");
    let spent: u32 = outcomes.values().map(|o| o[1]).sum();
    assert!(spent >= 10, "few trials ran out of space: {outcomes:?}");
    // No temporary of this process is left anywhere.
    let own = format!("tmp-{}-", std::process::id());
    let left: Vec<_> = snapshot(&w)
        .into_keys()
        .filter(|p| p.to_string_lossy().contains(&own))
        .collect();
    assert!(left.is_empty(), "temporaries left: {left:?}");
}

/// SIGKILL each writing command at random moments, then rerun it into the
/// same output: every existing file is byte-identical after each kill, and
/// the rerun succeeds (or, when the killed run had already committed its
/// output, is refused).
#[test]
fn killed_commands_leave_every_existing_file_byte_identical_and_reruns_succeed() {
    let _disk = DISK.lock().unwrap_or_else(|e| e.into_inner());
    let (_tmp, w) = prefilled();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let spawn = |c: &Cmd, target: &str| {
        Command::new((c.bin).exe())
            .args((c.args)(&w, target))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut killed = 0;
    for c in commands() {
        // Calibrate: one full run as a process.
        let first = if c.name == "inspect" {
            "R:1".to_string()
        } else {
            format!("{}-k", c.previous)
        };
        let started = Instant::now();
        let out = spawn(&c, &first).wait_with_output().unwrap();
        assert!(out.status.success(), "{}: {out:?}", c.name);
        let full = started.elapsed();
        for i in 0..3 {
            let before = snapshot(&w);
            let target = if c.name == "inspect" {
                format!("R:{}", i + 2)
            } else {
                format!("{}-k{i}", c.previous)
            };
            let delay = full.mul_f64(rng.unit());
            let mut child = spawn(&c, &target);
            std::thread::sleep(delay);
            if child.try_wait().unwrap().is_none() {
                child.kill().unwrap();
                killed += 1;
            }
            child.wait().unwrap();
            let what = format!("{} killed after {delay:?} of {full:?}", c.name);
            assert_kept(&before, &w, &what);
            // Rerun into the same output.
            let out = spawn(&c, &target).wait_with_output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                out.status.success() || err.contains("already"),
                "{what}, rerun: {err}"
            );
            assert_kept(&before, &w, &format!("{what}, rerun"));
        }
    }
    assert!(
        killed >= 8,
        "only {killed} kills landed before the run ended"
    );
}

/// The repro: a second `inspect` into the first one's `--out` is
/// refused, says why, and keeps the first run's files byte-identical.
#[test]
fn a_refused_inspect_keeps_the_first_runs_files_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let w = dir.path();
    let ginex = |args: &[String]| {
        Command::new(env!("CARGO_BIN_EXE_ginex"))
            .args(args)
            .output()
            .unwrap()
    };
    let out = ginex(&gen_args(w, "store"));
    assert!(out.status.success(), "{out:?}");
    let inspect = inspect_args(w, "R");
    let first = ginex(&inspect);
    assert!(first.status.success(), "{first:?}");
    let before = snapshot(&w.join("R"));
    assert_eq!(before.len(), 2, "{before:?}");
    let second = ginex(&inspect);
    assert!(!second.status.success());
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(
        err.contains("already holds")
            && err.contains("sb-000000.samples")
            && err.contains("nothing was removed"),
        "{err}"
    );
    assert_eq!(
        snapshot(&w.join("R")),
        before,
        "the first run's files changed"
    );
}
