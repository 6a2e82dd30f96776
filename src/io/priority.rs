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
