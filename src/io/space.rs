//! The write side of the storage seam: a process-wide disk-space budget.
//!
//! Every file the store builder, the out-of-core CSC build and the
//! importers write goes through [`Metered`], which charges each `write`
//! against the budget. By default the budget is unlimited and `Metered`
//! only counts bytes. A test sets a budget with [`simulate_disk_space`] to
//! play a full disk: the write that crosses the budget writes the part that
//! fits and the next one fails with `ENOSPC`, as `write(2)` does on a full
//! filesystem, so the real error paths (staging cleanup, error messages)
//! run.
//!
//! [`free_space`] answers "how many bytes can still be written under this
//! directory" for the size checks made before a store is written: the
//! filesystem's free space (`statvfs`), or less when a simulated budget is
//! smaller, so a test that simulates a small disk sees the up-front
//! refusal as a user would.
//!
//! The budget is global to the process, so a test that sets it must be the
//! only test in its binary (see `tools/tests/disk_full.rs`).

use std::io::{Seek, SeekFrom, Write};
use std::sync::atomic::{AtomicU64, Ordering};

/// A disk-space budget: bytes written, and the most that may be.
#[derive(Debug)]
pub struct Budget {
    /// `u64::MAX` = unlimited.
    limit: AtomicU64,
    used: AtomicU64,
}

impl Budget {
    /// An unlimited budget.
    pub const fn unlimited() -> Self {
        Budget {
            limit: AtomicU64::new(u64::MAX),
            used: AtomicU64::new(0),
        }
    }

    /// Sets the space left (`None`: unlimited) and resets the count.
    pub fn set(&self, bytes: Option<u64>) {
        self.used.store(0, Ordering::SeqCst);
        self.limit
            .store(bytes.unwrap_or(u64::MAX), Ordering::SeqCst);
    }

    /// Bytes written since the last [`Budget::set`].
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::SeqCst)
    }

    /// Reserves up to `want` bytes; returns how many were granted.
    fn reserve(&self, want: u64) -> u64 {
        let limit = self.limit.load(Ordering::Relaxed);
        if limit == u64::MAX {
            self.used.fetch_add(want, Ordering::Relaxed);
            return want;
        }
        let mut granted = 0;
        // The closure always returns Some, so the update cannot fail.
        let _ = self
            .used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                granted = limit.saturating_sub(used).min(want);
                Some(used + granted)
            });
        granted
    }

    fn refund(&self, bytes: u64) {
        self.used.fetch_sub(bytes, Ordering::SeqCst);
    }
}

/// The budget every [`Metered::new`] writer charges.
static DISK: Budget = Budget::unlimited();

/// Sets the simulated free space of the whole process (`None`: unlimited)
/// and resets the count of bytes written.
pub fn simulate_disk_space(bytes: Option<u64>) {
    DISK.set(bytes);
}

/// Bytes written through [`Metered`] writers since the last
/// [`simulate_disk_space`] (or since the process started).
pub fn bytes_written() -> u64 {
    DISK.used()
}

/// Bytes that can still be written under `dir`: the filesystem's space
/// available to unprivileged users (`statvfs`: `f_bavail × f_frsize`),
/// capped by the simulated budget when one is set.
#[allow(clippy::useless_conversion)] // the statvfs field types vary by platform
pub fn free_space(dir: &std::path::Path) -> crate::error::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).map_err(|_| {
        crate::error::Error::invalid_argument(format!("{} contains a NUL byte", dir.display()))
    })?;
    // SAFETY: `c` is a valid NUL-terminated path and `st` a writable
    // statvfs the call fills in; nothing is retained after it returns.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    if rc != 0 {
        return Err(crate::error::Error::io(
            "statvfs",
            dir,
            std::io::Error::last_os_error(),
        ));
    }
    let fs_free = u64::from(st.f_bavail).saturating_mul(u64::from(st.f_frsize));
    let limit = DISK.limit.load(Ordering::SeqCst);
    let budget_left = limit.saturating_sub(DISK.used());
    Ok(fs_free.min(budget_left))
}

/// A writer whose writes are charged against a disk-space budget.
#[derive(Debug)]
pub struct Metered<W> {
    inner: W,
    budget: &'static Budget,
}

impl<W> Metered<W> {
    /// Wraps `inner`, charging the process-wide budget.
    pub fn new(inner: W) -> Self {
        Metered {
            inner,
            budget: &DISK,
        }
    }

    /// Wraps `inner`, charging `budget`.
    pub fn with_budget(inner: W, budget: &'static Budget) -> Self {
        Metered { inner, budget }
    }

    /// The wrapped writer.
    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    /// Unwraps the writer (later writes to it are not charged).
    pub fn into_inner(self) -> W {
        self.inner
    }
}

impl<W: Write> Write for Metered<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let granted = self.budget.reserve(buf.len() as u64);
        if granted == 0 {
            return Err(std::io::Error::from_raw_os_error(libc::ENOSPC));
        }
        let part = buf.get(..granted as usize).unwrap_or(buf);
        match self.inner.write(part) {
            Ok(n) => {
                self.budget.refund(granted - n as u64);
                Ok(n)
            }
            Err(e) => {
                self.budget.refund(granted);
                Err(e)
            }
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl<W: Seek> Seek for Metered<W> {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        self.inner.seek(pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A budget of 10 bytes lets 10 through (the crossing write partly),
    /// then ENOSPC; unlimited again after `set(None)`.
    #[test]
    fn budget_cuts_writes_with_enospc() {
        static LOCAL: Budget = Budget::unlimited();
        LOCAL.set(Some(10));
        let mut out = Metered::with_budget(Vec::new(), &LOCAL);
        assert_eq!(out.write(&[1; 6]).unwrap(), 6);
        assert_eq!(
            out.write(&[2; 6]).unwrap(),
            4,
            "partial write up to the budget"
        );
        let e = out.write(&[3; 1]).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOSPC));
        assert!(out.write_all(&[3; 1]).is_err());
        assert_eq!(out.get_ref().len(), 10);
        assert_eq!(LOCAL.used(), 10);
        LOCAL.set(None);
        out.write_all(&[4; 100]).unwrap();
        assert_eq!(out.get_ref().len(), 110);
        assert_eq!(LOCAL.used(), 100);
    }

    /// The real filesystem reports some space; a missing directory is an
    /// error naming it.
    #[test]
    fn free_space_of_a_real_directory() {
        let dir = std::env::temp_dir();
        assert!(free_space(&dir).unwrap() > 0);
        let gone = dir.join("ginex-no-such-dir-for-statvfs");
        let e = free_space(&gone).unwrap_err().to_string();
        assert!(
            e.contains("statvfs") && e.contains("ginex-no-such-dir"),
            "{e}"
        );
    }
}
