//! I/O priority of a reader's reads: the class the block layer's scheduler
//! sees (`ioprio`, `man 2 ioprio_set`). mq-deadline and BFQ dispatch a
//! device's queued `best-effort` requests before its queued `idle` ones, so
//! reads marked idle yield to everyone else's while both wait on the
//! device (the neighbour-list reads of the next superbatch's sampling
//! against the executor's feature gathers: `docs/ginex.md`, "List reads
//! that yield"). With the `none` scheduler, or where the queue never
//! fills, the class changes nothing. The reads and their bytes are the
//! same in every class.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// `IOPRIO_CLASS_SHIFT` of `include/uapi/linux/ioprio.h`.
const CLASS_SHIFT: u16 = 13;
/// `IOPRIO_CLASS_IDLE`.
const CLASS_IDLE: u16 = 3;

/// The priority class of a reader's reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IoPriority {
    /// The thread's own priority (the kernel default: best-effort).
    #[default]
    Normal,
    /// `IOPRIO_CLASS_IDLE`: served when no other request waits.
    Idle,
}

impl IoPriority {
    /// The value of an io_uring submission's `ioprio` field (0: the
    /// submitting thread's own).
    pub fn ioprio(self) -> u16 {
        match self {
            IoPriority::Normal => 0,
            IoPriority::Idle => CLASS_IDLE << CLASS_SHIFT,
        }
    }

    /// The name `FromStr` accepts.
    pub fn name(self) -> &'static str {
        match self {
            IoPriority::Normal => "normal",
            IoPriority::Idle => "idle",
        }
    }
}

impl fmt::Display for IoPriority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for IoPriority {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "normal" => Ok(IoPriority::Normal),
            "idle" => Ok(IoPriority::Idle),
            other => Err(Error::invalid_argument(format!(
                "unknown I/O priority '{other}' (expected normal or idle)"
            ))),
        }
    }
}

/// Lowers the calling thread's CPU priority to `nice` (0..=19; Linux
/// keeps a nice value per thread, and the threads it creates afterwards
/// inherit it). Returns whether the kernel took it: raising one's own
/// nice value needs no privilege, so a refusal means a sandbox that
/// forbids `setpriority`, and the thread then runs at the priority it had.
pub fn set_thread_nice(nice: u8) -> bool {
    let nice = i32::from(nice.min(19));
    // SAFETY: gettid has no preconditions and touches no memory.
    let tid = unsafe { libc::gettid() };
    // SAFETY: setpriority reads its three integer arguments only; the
    // who is this thread's own id.
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) };
    if rc != 0 {
        tracing::warn!(
            "setpriority(nice {nice}) refused ({}); the thread keeps its priority",
            std::io::Error::last_os_error()
        );
    }
    rc == 0
}

/// The calling thread's nice value (None where `getpriority` fails).
pub fn thread_nice() -> Option<i32> {
    // SAFETY: as in `set_thread_nice`.
    let tid = unsafe { libc::gettid() };
    // getpriority returns the nice value, which may be -1: errno tells a
    // failure apart. SAFETY: errno is this thread's; the call reads its
    // integer arguments only.
    unsafe {
        *libc::__errno_location() = 0;
        let nice = libc::getpriority(libc::PRIO_PROCESS, tid as libc::id_t);
        (*libc::__errno_location() == 0).then_some(nice)
    }
}

/// Whether a read's `-errno` result is the kernel refusing its `ioprio`
/// (`ioprio_check_cap`: `EINVAL` for a class it does not know, `EPERM`
/// for one the process may not use), so the read is worth retrying
/// without one.
pub(crate) fn refused(errno: i32) -> bool {
    errno == libc::EINVAL || errno == libc::EPERM
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The nice value applies to the calling thread and the threads it
    /// starts afterwards, never to the others.
    #[test]
    fn nice_is_per_thread_and_inherited() {
        let before = thread_nice().unwrap();
        if before > 7 {
            return; // (a test runner already niced past 7: nothing to lower)
        }
        let (own, child) = std::thread::spawn(|| {
            assert!(set_thread_nice(7));
            let own = thread_nice();
            let child = std::thread::spawn(thread_nice).join().unwrap();
            (own, child)
        })
        .join()
        .unwrap();
        assert_eq!((own, child), (Some(7), Some(7)));
        assert_eq!(thread_nice(), Some(before));
    }

    #[test]
    fn names_round_trip_and_values_match_the_kernel_header() {
        for p in [IoPriority::Normal, IoPriority::Idle] {
            assert_eq!(p.name().parse::<IoPriority>().unwrap(), p);
        }
        // IOPRIO_PRIO_VALUE(IOPRIO_CLASS_IDLE, 0) = 3 << 13.
        assert_eq!(IoPriority::Idle.ioprio(), 0x6000);
        assert_eq!(IoPriority::Normal.ioprio(), 0);
        let err = "low".parse::<IoPriority>().unwrap_err().to_string();
        assert!(
            err.contains("'low'") && err.contains("normal or idle"),
            "{err}"
        );
    }
}
