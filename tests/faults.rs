//! Reliability round 3 (issue 33): the executor's readers — the batches',
//! the staged init's and the read-ahead's — under read errors and short
//! reads injected through the process-wide `io::fault` seam, and a store
//! on a read-only mount used by `run_epoch` and the `Loader` (what the
//! Python loader wraps). The seam is process-wide: one case at a time.

mod common;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ginex::internals::exec::epoch::{run_epoch, EpochConfig};
use ginex::internals::exec::pipeline::Pipeline;
use ginex::internals::io::fault::{inject_process_faults, FaultPlan};
use ginex::{Loader, Policy, Store};

static SEAM: Mutex<()> = Mutex::new(());

/// Runs an epoch; the (batch, CRC of its rows) of each delivered batch and
/// the result.
fn delivered(store: &Store, cfg: &EpochConfig) -> (Vec<(u64, u32)>, ginex::Result<()>) {
    let mut seen = Vec::new();
    let r = run_epoch(store, cfg, &mut |b| {
        assert_eq!(b.rows.len(), b.ids.len() * store.layout().row_bytes());
        seen.push((b.batch, ginex::internals::format::crc32(b.rows)));
        Ok(())
    });
    (seen, r.map(|_| ()))
}

/// Files and directories left under `dir` (none when it is missing).
fn left_in(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

/// EIO at feature pages the batches, the staged init or the read-ahead
/// read, under each pipeline: the run fails with an error naming the
/// file, the offset, the page and a node on it; every batch delivered
/// before is complete and identical to a fault-free run's; the run
/// directory is gone. Short reads change no batch.
#[test]
fn read_errors_name_node_and_page_and_deliver_no_partial_batch() {
    let _seam = SEAM.lock().unwrap_or_else(|e| e.into_inner());
    let (dir, store) = common::small_epoch_store();
    let runs = dir.path().join("runs");
    let (mut failed, mut late) = (0, 0);
    for pipeline in [Pipeline::Serial, Pipeline::Overlap, Pipeline::Full] {
        let mut cfg = common::epoch_config(Policy::Ginex, &runs);
        common::ginex_options(&mut cfg).pipeline = pipeline;
        // A fault-free run, counting its reads.
        let probe = Arc::new(FaultPlan::default());
        inject_process_faults(Some(probe.clone()));
        let (reference, r) = delivered(&store, &cfg);
        inject_process_faults(None);
        r.unwrap();
        let reads = probe.reads_checked();
        assert!(reads > 20, "{pipeline:?}: only {reads} reads");
        // EIO at reads spread over the run (sampling's list reads, the
        // batches' gathers, each superbatch's init and read-ahead). Under
        // `full` the read count varies a little with timing: a run that
        // did not reach read `n` must succeed.
        for n in (1..=reads).step_by((reads / 12).max(1) as usize) {
            let plan = Arc::new(FaultPlan::eio_on_read(n));
            inject_process_faults(Some(plan.clone()));
            let (got, r) = delivered(&store, &cfg);
            inject_process_faults(None);
            if plan.reads_checked() < n {
                r.unwrap();
                assert_eq!(got, reference);
                continue;
            }
            assert_eq!(
                got[..],
                reference[..got.len()],
                "{pipeline:?}, EIO at read {n}: a delivered batch differs"
            );
            assert!(left_in(&runs).is_empty(), "{:?}", left_in(&runs));
            let e = r.expect_err(&format!(
                "{pipeline:?}: EIO at read {n} of {reads} went unseen"
            ));
            failed += 1;
            assert!(got.len() < reference.len());
            if !got.is_empty() {
                late += 1;
            }
            let msg = e.to_string();
            eprintln!(
                "{pipeline:?}, EIO at read {n} of {reads}, after {} batches: {msg}",
                got.len()
            );
            assert!(
                msg.contains("Input/output error") && msg.contains(" at offset "),
                "{pipeline:?}, EIO at read {n}: {msg}"
            );
            if msg.contains("features.pages") {
                assert!(
                    msg.contains("feature pages") && msg.contains("node "),
                    "{pipeline:?}, EIO at read {n}: {msg}"
                );
            } else {
                assert!(
                    msg.contains("indices"),
                    "{pipeline:?}, EIO at read {n}: {msg}"
                );
            }
        }
        let plan = Arc::new(FaultPlan::short_reads(2, 1000));
        inject_process_faults(Some(plan.clone()));
        let (got, r) = delivered(&store, &cfg);
        inject_process_faults(None);
        r.unwrap();
        assert_eq!(got, reference, "{pipeline:?}: short reads changed a batch");
        assert!(plan.short_reads_injected() > 0, "no short read injected");
    }
    assert!(failed >= 25, "only {failed} runs failed");
    assert!(
        late >= 10,
        "only {late} failures came after the first batch"
    );
}

/// Unmounts on drop.
struct Mount(PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// A read-only bind mount of `from` at `to`, or why not.
fn read_only_mount(from: &Path, to: &Path) -> Result<Mount, String> {
    std::fs::create_dir_all(to).map_err(|e| e.to_string())?;
    let run = |args: &[&std::ffi::OsStr]| {
        std::process::Command::new("mount")
            .args(args)
            .output()
            .map_err(|e| e.to_string())
            .and_then(|o| {
                if o.status.success() {
                    Ok(())
                } else {
                    Err(String::from_utf8_lossy(&o.stderr).into_owned())
                }
            })
    };
    run(&["--bind".as_ref(), from.as_os_str(), to.as_os_str()])?;
    let mount = Mount(to.to_path_buf());
    run(&["-o".as_ref(), "remount,ro,bind".as_ref(), to.as_os_str()])?;
    if std::fs::write(to.join("probe"), b"x").is_ok() {
        return Err("the remounted directory is still writable".into());
    }
    Ok(mount)
}

/// A store on a read-only mount: opened, verified and read by epochs of
/// every pipeline and by the Loader with a run directory elsewhere; with
/// the default run directory (beside the store) the error says what it
/// could not create and where. Skipped, saying why, where bind mounts
/// cannot be made (not root).
#[test]
fn a_store_on_a_read_only_mount_needs_no_writes() {
    let _seam = SEAM.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let (_tmp, store) = common::small_epoch_store();
    for e in std::fs::read_dir(store.dir()).unwrap().flatten() {
        std::fs::create_dir_all(data.join("s")).unwrap();
        std::fs::copy(e.path(), data.join("s").join(e.file_name())).unwrap();
    }
    let ro = dir.path().join("ro");
    let _mount = match read_only_mount(&data, &ro) {
        Ok(m) => m,
        Err(why) => {
            eprintln!("skipped: cannot make a read-only bind mount here: {why}");
            return;
        }
    };
    let store = Store::open(ro.join("s")).unwrap();
    store.verify().unwrap();
    let runs = dir.path().join("runs");
    for pipeline in [Pipeline::Serial, Pipeline::Full] {
        let mut cfg = common::epoch_config(Policy::Ginex, &runs);
        common::ginex_options(&mut cfg).pipeline = pipeline;
        cfg.neighbor_cache_bytes = 0;
        let (got, r) = delivered(&store, &cfg);
        r.unwrap();
        assert!(!got.is_empty());
        // The default run directory is beside the store: refused, saying
        // what and where.
        cfg.run_dir = ro.join("s.runs");
        let err = delivered(&store, &cfg).1.unwrap_err().to_string();
        eprintln!("{pipeline:?}, run directory on the read-only mount: {err}");
        assert!(
            err.contains("s.runs") && err.contains("Read-only file system"),
            "{err}"
        );
    }
    // A neighbor cache at its default place (beside the store) cannot be
    // built there either: the error names it.
    let mut cfg = common::epoch_config(Policy::Ginex, &runs);
    cfg.neighbor_cache_bytes = 40_000;
    let err = delivered(&store, &cfg).1.unwrap_err().to_string();
    eprintln!("neighbor cache beside the read-only store: {err}");
    assert!(
        err.contains("s.ncache") && err.contains("Read-only file system"),
        "{err}"
    );
    let loader = |run_dir: &Path| {
        Loader::builder(&store)
            .policy(Policy::Ginex)
            .feature_cache_bytes(300 * 24 * 4)
            .batch_size(40)
            .fanouts([6, 4])
            .superbatch(5)
            .workers(2)
            .run_dir(run_dir)
            .build()
    };
    let batches = loader(&runs)
        .unwrap()
        .map(|b| b.map(|_| ()))
        .collect::<ginex::Result<Vec<()>>>()
        .unwrap();
    assert!(!batches.is_empty());
    let err = match loader(&ro.join("s.runs")) {
        Err(e) => e.to_string(),
        Ok(l) => l
            .map(|b| b.map(|_| ()))
            .collect::<ginex::Result<Vec<()>>>()
            .unwrap_err()
            .to_string(),
    };
    assert!(
        err.contains("s.runs") && err.contains("Read-only file system"),
        "{err}"
    );
    assert!(left_in(&runs).is_empty());
    let mut names: Vec<_> = left_in(&data);
    names.sort();
    assert_eq!(
        names,
        vec![data.join("s")],
        "nothing was written beside the store"
    );
}
