//! Durable, atomic creation of a directory of files.
//!
//! A [`StagingDir`] is a temporary sibling of the target path. Files are
//! written and fsynced inside it; [`StagingDir::commit`] fsyncs the staging
//! directory, renames it onto the target (refusing to replace anything) and
//! fsyncs the parent. A crash or kill at any point leaves either no
//! directory at the target or the complete one. A failed fsync is never
//! retried: the error is returned and the staging directory removed, because
//! after a failed fsync the kernel may have dropped the dirty pages.

use std::ffi::CString;
use std::fs::{self, File};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Marker in staging names: `.<name>.ginex-tmp-<pid>-<nanos>`.
const STAGING_MARKER: &str = ".ginex-tmp-";
/// The longest file name (bytes) Linux filesystems accept (`NAME_MAX`).
const MAX_FILE_NAME: usize = 255;

/// A temporary directory that becomes the target on [`commit`](Self::commit)
/// and is removed if dropped before.
#[derive(Debug)]
pub struct StagingDir {
    path: PathBuf,
    target: PathBuf,
    committed: bool,
}

impl StagingDir {
    /// Creates a staging directory beside `target`. Fails if `target`
    /// exists. Warns about stale staging directories for the same target
    /// whose creating process is gone (left behind by a kill); removes
    /// nothing it did not create.
    pub fn create(target: &Path) -> Result<StagingDir> {
        if target.symlink_metadata().is_ok() {
            return Err(Error::AlreadyExists {
                path: target.to_path_buf(),
            });
        }
        let name = target
            .file_name()
            .ok_or_else(|| {
                Error::invalid_argument(format!("{} has no file name", target.display()))
            })?
            .to_string_lossy()
            .into_owned();
        let parent = parent_of(target);
        if !parent.is_dir() {
            let what = match fs::metadata(&parent) {
                Ok(_) => "is not a directory",
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => "does not exist",
                Err(_) => "cannot be accessed",
            };
            return Err(Error::invalid_argument(format!(
                "parent directory {} {what}",
                parent.display()
            )));
        }
        check_name_fits(target, &name)?;
        report_stale_staging(&parent, &name);
        let path = parent.join(unique_staging_name(&name));
        fs::create_dir(&path).map_err(|e| Error::io("create directory", &path, e))?;
        Ok(StagingDir {
            path,
            target: target.to_path_buf(),
            committed: false,
        })
    }

    /// Where files are written until commit.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The final path.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Makes the staged directory the target, durably.
    pub fn commit(mut self) -> Result<PathBuf> {
        fsync_dir(&self.path)?;
        rename_no_replace(&self.path, &self.target)?;
        self.committed = true;
        fsync_dir(&parent_of(&self.target))?;
        Ok(self.target.clone())
    }
}

impl Drop for StagingDir {
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

/// A file this process just created (with `create_new`, so it did not
/// exist before): removed on drop unless [`keep`](Self::keep) is called.
/// Cleanup paths hold one of these instead of removing a path by name, so
/// a failed command never removes a file it did not create.
#[derive(Debug)]
pub struct CreatedFile {
    path: PathBuf,
    keep: bool,
}

impl CreatedFile {
    /// Takes ownership of `path`, which the caller has just created.
    pub fn created(path: &Path) -> CreatedFile {
        CreatedFile {
            path: path.to_path_buf(),
            keep: false,
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Leaves the file in place; returns its path.
    pub fn keep(mut self) -> PathBuf {
        self.keep = true;
        self.path.clone()
    }
}

impl Drop for CreatedFile {
    fn drop(&mut self) {
        if !self.keep {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Refuses `path` if anything exists there (a file a command would write
/// but must not replace), before anything is written.
pub fn refuse_existing(path: &Path) -> Result<()> {
    if path.symlink_metadata().is_ok() {
        return Err(Error::AlreadyExists {
            path: path.to_path_buf(),
        });
    }
    Ok(())
}

/// The longest store or cache name whose staging directory
/// (`.NAME.ginex-tmp-PID-NANOS`) still fits the file-name limit.
pub const MAX_TARGET_NAME: usize = MAX_FILE_NAME - STAGING_OVERHEAD;
const STAGING_OVERHEAD: usize = 1 + STAGING_MARKER.len() + 10 + 1 + 20;

/// Refuses a target whose name is too long for its staging directory, in
/// terms of the target's own name (checked before any work by commands
/// that build elsewhere first).
pub fn check_target_name(target: &Path) -> Result<()> {
    match target.file_name() {
        Some(name) => check_name_fits(target, &name.to_string_lossy()),
        None => Ok(()),
    }
}

fn check_name_fits(target: &Path, name: &str) -> Result<()> {
    if name.len() > MAX_TARGET_NAME {
        return Err(Error::invalid_argument(format!(
            "the name {:?} of {} is {} bytes long; store and cache names can be at most {MAX_TARGET_NAME} bytes (the file-name limit is {MAX_FILE_NAME}, and the staging directory built beside the target adds {STAGING_OVERHEAD})",
            name.get(..40).map_or_else(|| name.to_string(), |s| format!("{s}…")),
            target.display(),
            name.len()
        )));
    }
    Ok(())
}

fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The `.<name>.ginex-tmp-<pid>[-*]` staging directories and files under
/// `parent` whose pid is not alive (what a killed build or write left
/// behind), in name order.
pub fn stale_staging(parent: &Path, name: &str) -> Vec<PathBuf> {
    let prefix = format!(".{name}{STAGING_MARKER}");
    let Ok(entries) = fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut stale: Vec<PathBuf> = entries
        .flatten()
        .filter(|entry| {
            entry
                .file_name()
                .to_str()
                .and_then(|s| s.strip_prefix(&prefix))
                .and_then(|rest| rest.split('-').next())
                .and_then(|p| p.parse::<u32>().ok())
                .is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists())
        })
        .map(|entry| entry.path())
        .collect();
    stale.sort();
    stale
}

/// Warns about the stale staging entries for `name` under `parent`;
/// removes nothing (this process did not create them).
pub fn report_stale_staging(parent: &Path, name: &str) {
    for path in stale_staging(parent, name) {
        tracing::warn!(
            "{} was left by a ginex process that was killed while writing {}; ginex does not remove files it did not create in this run: remove it with `rm -r {}` if you do not need it",
            path.display(),
            parent.join(name).display(),
            path.display()
        );
    }
}

/// A name for a temporary file or directory beside `name` that no other
/// process chooses: `.<name>.ginex-tmp-<pid>-<nanos>`. Callers create it
/// exclusively (`create_dir`, `create_new`), so a clash is an error,
/// never a reuse of someone else's file.
pub fn unique_staging_name(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(".{name}{STAGING_MARKER}{}-{nanos}", std::process::id())
}

/// fsyncs a directory so that entries created or renamed in it are durable.
pub fn fsync_dir(dir: &Path) -> Result<()> {
    let f = File::open(dir).map_err(|e| Error::io("open directory", dir, e))?;
    f.sync_all()
        .map_err(|e| Error::io("fsync directory", dir, e))
}

/// Replaces `dir/name` atomically: `write` fills a temporary file beside it,
/// which is fsynced and renamed over the target, then the directory is
/// fsynced. A crash leaves the old or the new version, never neither.
pub fn write_atomic(dir: &Path, name: &str, write: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    // A name no earlier process used, so nothing is removed to make room;
    // `write` must create it (it does not exist), and it is removed (as
    // this call's own) if anything fails before the rename.
    let tmp = dir.join(atomic_temporary_name(name));
    let created = CreatedFile::created(&tmp);
    write(&tmp)?;
    File::open(&tmp)
        .and_then(|f| f.sync_all())
        .map_err(|e| Error::io("fsync", &tmp, e))?;
    let target = dir.join(name);
    fs::rename(&tmp, &target).map_err(|e| Error::io("rename", &target, e))?;
    created.keep();
    fsync_dir(dir)
}

/// The temporary file [`write_atomic`] writes `name` through:
/// `.<name>.tmp-<pid>-<nanos>-<n>`, a name no other call chooses. The
/// unique part has no dot, so the name's stem (all before its last dot) is
/// `.<name>` whatever the call: libtorch names a saved archive's root
/// folder after that stem, and checkpoints of equal runs stay
/// byte-identical.
pub fn atomic_temporary_name(name: &str) -> String {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!(".{name}.tmp-{}-{nanos}-{n}", std::process::id())
}

/// The pid of the process whose [`write_atomic`] of one of `names` left
/// the temporary file `file_name`; None when `file_name` is not exactly
/// such a temporary (so a cleanup never matches a file ginex did not name).
pub fn atomic_temporary_owner(file_name: &str, names: impl Fn(&str) -> bool) -> Option<u32> {
    let rest = file_name.strip_prefix('.')?;
    let (name, unique) = rest.rsplit_once(".tmp-")?;
    let mut parts = unique.split('-');
    let (pid, nanos, n) = (parts.next()?, parts.next()?, parts.next()?);
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let pid = pid.parse::<u32>().ok()?;
    (parts.next().is_none() && digits(nanos) && digits(n) && names(name)).then_some(pid)
}

/// Renames `from` to `to`, failing if `to` exists (`RENAME_NOREPLACE`).
/// On filesystems without `renameat2` support it checks and renames, which
/// is racy only against a concurrent creator of the same path.
pub fn rename_no_replace(from: &Path, to: &Path) -> Result<()> {
    let c = |p: &Path| {
        CString::new(p.as_os_str().as_bytes())
            .map_err(|_| Error::invalid_argument(format!("{} contains a NUL byte", p.display())))
    };
    let (cf, ct) = (c(from)?, c(to)?);
    // SAFETY: both pointers come from live CStrings (NUL-terminated, valid
    // for the duration of the call); AT_FDCWD makes the paths relative to
    // the working directory as `rename` would; renameat2 does not retain them.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            cf.as_ptr(),
            libc::AT_FDCWD,
            ct.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EEXIST) | Some(libc::ENOTEMPTY) => Err(Error::AlreadyExists {
            path: to.to_path_buf(),
        }),
        Some(libc::EINVAL) | Some(libc::ENOSYS) => {
            if to.symlink_metadata().is_ok() {
                return Err(Error::AlreadyExists {
                    path: to.to_path_buf(),
                });
            }
            fs::rename(from, to).map_err(|e| Error::io("rename", to, e))
        }
        _ => Err(Error::io("rename", to, err)),
    }
}

/// Writes back the dirty pages of every filesystem (`sync(2)`).
pub fn sync_all() {
    // SAFETY: sync(2) takes no arguments, touches no memory of ours and
    // cannot fail.
    unsafe { libc::sync() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_moves_and_drop_cleans_up() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("store");
        let staging = StagingDir::create(&target).unwrap();
        fs::write(staging.path().join("a"), b"x").unwrap();
        let staged = staging.path().to_path_buf();
        staging.commit().unwrap();
        assert_eq!(fs::read(target.join("a")).unwrap(), b"x");
        assert!(!staged.exists());

        let other = dir.path().join("other");
        let staging = StagingDir::create(&other).unwrap();
        let staged = staging.path().to_path_buf();
        drop(staging);
        assert!(!staged.exists() && !other.exists());
    }

    #[test]
    fn never_replaces_an_existing_target() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("store");
        assert!(matches!(
            StagingDir::create(dir.path()),
            Err(Error::AlreadyExists { .. })
        ));
        let staging = StagingDir::create(&target).unwrap();
        fs::create_dir(&target).unwrap(); // someone else created it meanwhile
        assert!(matches!(staging.commit(), Err(Error::AlreadyExists { .. })));
        assert_eq!(fs::read_dir(&target).unwrap().count(), 0);
    }

    #[test]
    fn stale_staging_of_dead_process_is_reported_not_removed() {
        let dir = tempfile::tempdir().unwrap();
        let stale = dir
            .path()
            .join(format!(".store{STAGING_MARKER}{}-1", u32::MAX - 1));
        fs::create_dir(&stale).unwrap();
        fs::write(stale.join("MANIFEST"), b"half").unwrap();
        let staging = StagingDir::create(&dir.path().join("store")).unwrap();
        assert_eq!(stale_staging(dir.path(), "store"), vec![stale.clone()]);
        drop(staging);
        assert_eq!(fs::read(stale.join("MANIFEST")).unwrap(), b"half");
    }

    #[test]
    fn a_failed_atomic_write_removes_only_its_own_temporary() {
        let dir = tempfile::tempdir().unwrap();
        // What an earlier process (same pid after reuse, say) left.
        let old = dir
            .path()
            .join(format!(".LATEST.tmp-{}-1-0", std::process::id()));
        fs::write(&old, b"theirs").unwrap();
        fs::write(dir.path().join("LATEST"), b"v1").unwrap();
        let failed = write_atomic(dir.path(), "LATEST", |p| {
            fs::write(p, b"half").unwrap();
            Err(Error::invalid_argument("injected".to_string()))
        });
        assert!(failed.is_err());
        assert_eq!(fs::read(&old).unwrap(), b"theirs");
        assert_eq!(fs::read(dir.path().join("LATEST")).unwrap(), b"v1");
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            2,
            "temporary removed"
        );
        write_atomic(dir.path(), "LATEST", |p| {
            fs::write(p, b"v2").map_err(|e| Error::io("write", p, e))
        })
        .unwrap();
        assert_eq!(fs::read(dir.path().join("LATEST")).unwrap(), b"v2");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
        let name = atomic_temporary_name("LATEST");
        let latest = |n: &str| n == "LATEST";
        assert_eq!(
            atomic_temporary_owner(&name, latest),
            Some(std::process::id())
        );
        assert_eq!(
            atomic_temporary_owner(".LATEST.tmp-77-1-0", latest),
            Some(77)
        );
        for foreign in [
            ".LATEST.tmp-77",
            "LATEST.tmp-77-1-0",
            ".LATEST.tmp-77-x-0",
            ".notes.tmp-77-1-0",
            ".LATEST.tmp-x-1-0",
            ".LATEST.tmp-77-1-0-9",
        ] {
            assert_eq!(atomic_temporary_owner(foreign, latest), None, "{foreign}");
        }
    }
}
