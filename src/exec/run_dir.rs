//! Each run's own runtime-file directory, so that runs sharing a
//! `--run-dir` never touch each other's files.
//!
//! A run writes under `RUN_DIR/run-<pid>-<nanos>/` (created with
//! `create_dir`, so never one that existed) and removes that directory when
//! it ends (also on error or unwind), unless its files are kept. A run only
//! ever deletes its own directory and `RUN_DIR` itself when it created it
//! and it is empty: the directories of runs whose process is gone (killed)
//! are reported by the next run that starts beside them, never removed,
//! because that run did not create them.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

const PREFIX: &str = "run-";

/// A run's runtime-file directory; removed on drop unless [`keep`](Self::keep) is called.
pub struct RunDir {
    path: PathBuf,
    parent: PathBuf,
    created_parent: bool,
    keep: bool,
}

impl RunDir {
    /// Creates this run's directory under `parent` (created if missing),
    /// after warning about the directories dead runs left there.
    pub fn create(parent: &Path) -> Result<RunDir> {
        let created_parent = !parent.exists();
        std::fs::create_dir_all(parent).map_err(|e| Error::io("create directory", parent, e))?;
        report_dead_runs(parent);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let path = parent.join(format!("{PREFIX}{}-{nanos}", std::process::id()));
        std::fs::create_dir(&path).map_err(|e| Error::io("create directory", &path, e))?;
        Ok(RunDir {
            path,
            parent: parent.to_path_buf(),
            created_parent,
            keep: false,
        })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Leaves the directory and its files in place; returns its path.
    pub fn keep(mut self) -> PathBuf {
        self.keep = true;
        self.path.clone()
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        if let Err(e) = std::fs::remove_dir_all(&self.path) {
            tracing::warn!("could not remove {}: {e}", self.path.display());
        }
        if self.created_parent {
            let _ = std::fs::remove_dir(&self.parent); // only when empty
        }
    }
}

/// The `run-<pid>-*` directories under `parent` whose process is gone
/// (what a killed run left), in name order.
pub fn dead_runs(parent: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut dead: Vec<PathBuf> = entries
        .flatten()
        .filter(|entry| {
            entry
                .file_name()
                .to_str()
                .and_then(|n| n.strip_prefix(PREFIX))
                .and_then(|rest| rest.split('-').next())
                .and_then(|p| p.parse::<u32>().ok())
                .is_some_and(|pid| {
                    pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists()
                })
        })
        .map(|entry| entry.path())
        .collect();
    dead.sort();
    dead
}

/// Warns about the directories dead runs left under `parent`; removes
/// nothing (this run did not create them).
fn report_dead_runs(parent: &Path) {
    for path in dead_runs(parent) {
        tracing::warn!(
            "{} was left by a run that was killed; ginex does not remove files it did not create in this run: remove it with `rm -r {}` if you do not need it",
            path.display(),
            path.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_get_their_own_directories_and_clean_up_only_after_themselves() {
        let tmp = tempfile::tempdir().unwrap();
        let parent = tmp.path().join("runs");
        // A dead run's leftovers (pid 0 never names a live user process's
        // directory in /proc) and a live one's (ours, as another run).
        std::fs::create_dir_all(parent.join("run-0-1")).unwrap();
        std::fs::write(parent.join("run-0-1/sb-000000.samples"), b"partial").unwrap();
        let live = parent.join(format!("run-{}-1", std::process::id()));
        std::fs::create_dir_all(&live).unwrap();
        let a = RunDir::create(&parent).unwrap();
        let b = RunDir::create(&parent).unwrap();
        assert_ne!(a.path(), b.path());
        assert_eq!(dead_runs(&parent), vec![parent.join("run-0-1")]);
        assert_eq!(
            std::fs::read(parent.join("run-0-1/sb-000000.samples")).unwrap(),
            b"partial",
            "a dead run's files are reported, never removed"
        );
        assert!(live.exists(), "a live run's directory is never touched");
        std::fs::write(a.path().join("f"), b"x").unwrap();
        let a_path = a.path().to_path_buf();
        drop(a);
        assert!(!a_path.exists());
        let kept = b.keep();
        assert!(kept.exists());
    }

    #[test]
    fn a_parent_it_created_goes_when_empty() {
        let tmp = tempfile::tempdir().unwrap();
        let parent = tmp.path().join("fresh");
        drop(RunDir::create(&parent).unwrap());
        assert!(!parent.exists());
        std::fs::create_dir(&parent).unwrap();
        drop(RunDir::create(&parent).unwrap());
        assert!(parent.exists(), "an existing run dir stays");
    }
}
