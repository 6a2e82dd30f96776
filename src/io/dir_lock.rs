//! A directory that belongs to one run at a time: an advisory `flock` on
//! `LOCK` inside it, held while the [`DirLock`] lives. The kernel releases
//! it when the process ends however it ends, so a crashed or killed run
//! never blocks the next one; the file itself stays (removing it would
//! race a run that just opened it) and holds the last owner's process id,
//! for the message a second run gets.

use std::fs::{File, OpenOptions};
use std::io::{Read as _, Seek as _, Write as _};
use std::os::fd::AsRawFd as _;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The lock file's name inside a locked directory.
pub const LOCK_FILE: &str = "LOCK";

/// A held lock on a directory (see the module docs); released on drop.
#[derive(Debug)]
pub struct DirLock {
    /// The open `LOCK` file: closing it releases the lock.
    _file: File,
}

impl DirLock {
    /// Locks `dir` (created if missing) for this process, or refuses
    /// naming the directory, `what` holds it (`a training run`) and the
    /// process that does.
    pub fn acquire(dir: &Path, what: &str) -> Result<DirLock> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io("create directory", dir, e))?;
        let path: PathBuf = dir.join(LOCK_FILE);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| Error::io("open", &path, e))?;
        // SAFETY: flock reads no memory of ours; its only argument is the
        // descriptor of `file`, which is open for the whole call (and
        // after: the lock lives as long as the descriptor does).
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            let err = std::io::Error::last_os_error();
            if err.kind() != std::io::ErrorKind::WouldBlock {
                return Err(Error::io("lock", &path, err));
            }
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = match holder.trim() {
                "" => String::new(),
                pid => format!(" (process {pid})"),
            };
            return Err(Error::invalid_argument(format!(
                "{} is in use by {what}{holder}: one run at a time writes a directory; wait for it to end or choose another directory",
                dir.display()
            )));
        }
        file.set_len(0)
            .map_err(|e| Error::io("truncate", &path, e))?;
        file.rewind().map_err(|e| Error::io("seek", &path, e))?;
        writeln!(file, "{}", std::process::id()).map_err(|e| Error::io("write", &path, e))?;
        Ok(DirLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A second lock of a held directory is refused naming the holder; a
    /// dropped lock (a run that ended) frees the directory.
    #[test]
    fn a_held_directory_refuses_a_second_run_until_the_first_ends() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("ck");
        let first = DirLock::acquire(&dir, "a training run").unwrap();
        let err = DirLock::acquire(&dir, "a training run")
            .unwrap_err()
            .to_string();
        assert!(err.contains("is in use by a training run"), "{err}");
        assert!(
            err.contains(&format!("process {}", std::process::id())),
            "{err}"
        );
        drop(first);
        DirLock::acquire(&dir, "a training run").unwrap();
    }

    /// A run killed while it holds the lock (here `flock(1)` in another
    /// process, killed) does not block the next: the kernel released it.
    #[test]
    fn a_killed_holder_does_not_block_the_next_run() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("ck");
        std::fs::create_dir_all(&dir).unwrap();
        // -o: the lock is flock's own, not inherited by `sleep`.
        let Ok(mut holder) = std::process::Command::new("flock")
            .arg("-o")
            .arg(dir.join(LOCK_FILE))
            .args(["sleep", "60"])
            .spawn()
        else {
            eprintln!("flock(1) not installed: the kernel-release case is untested here");
            return;
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while DirLock::acquire(&dir, "a run").map(drop).is_ok() {
            assert!(
                std::time::Instant::now() < deadline,
                "flock(1) never took the lock"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        holder.kill().unwrap();
        holder.wait().unwrap();
        DirLock::acquire(&dir, "a run").unwrap();
    }
}
