//! The storage seam: a fault plan both page readers consult, so tests can
//! inject read errors, short reads and filesystems that refuse `O_DIRECT`
//! into the real I/O paths.
//!
//! Where each fault enters:
//! * `eio_at_offset` — the io_uring reader replaces the *completion* result
//!   of the read covering that offset with `-EIO` (so the `-errno` path and
//!   the drain of the other in-flight reads run); the pread reader fails the
//!   `pread` call covering it.
//! * `short_every` / `short_by` — a completed read reports fewer bytes than
//!   the kernel returned, and the reader must resubmit the rest.
//! * `refuse_direct` — opening with `O_DIRECT` fails with `EINVAL`, as on
//!   filesystems without direct I/O, and the reader must fall back to
//!   buffered reads.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The plan every `GatherOptions::default()` of this process starts with
/// (None: no faults). A test seam, like `io::space::simulate_disk_space`:
/// it reaches the readers that commands build inside (the executor's,
/// the staged init's, the read-ahead's), which take no options from outside.
static PROCESS_PLAN: Mutex<Option<Arc<FaultPlan>>> = Mutex::new(None);

/// Injects `plan` into every reader built from default options from now
/// on (`None`: stop). Process-wide: a test binary that uses it runs its
/// fault cases one at a time.
pub fn inject_process_faults(plan: Option<Arc<FaultPlan>>) {
    *PROCESS_PLAN.lock().unwrap_or_else(|e| e.into_inner()) = plan;
}

/// The process-wide plan ([`inject_process_faults`]), or an empty one.
pub fn process_faults() -> Arc<FaultPlan> {
    PROCESS_PLAN
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
        .unwrap_or_default()
}

/// Faults to inject. The default injects nothing.
#[derive(Debug, Default)]
pub struct FaultPlan {
    /// Fail reads that cover this file offset (of any file) with `EIO`.
    pub eio_at_offset: Option<u64>,
    /// Make every n-th read return `short_by` bytes less than asked
    /// (the reader must resubmit the rest).
    pub short_every: Option<u64>,
    /// Bytes to cut from an injected short read; rounded up to the file's
    /// direct-I/O alignment so resubmissions stay aligned.
    pub short_by: u64,
    /// Opening a file with `O_DIRECT` fails with `EINVAL`.
    pub refuse_direct: bool,
    /// Fail the n-th read (1-based, counted over every file and reader
    /// using this plan) with `EIO`: a failure at any chosen point of a run.
    pub eio_on_read: Option<u64>,
    checks: AtomicU64,
    reads: AtomicU64,
    short_reads: AtomicU64,
}

impl FaultPlan {
    /// A plan that fails reads covering `offset` with EIO.
    pub fn eio_at(offset: u64) -> Self {
        FaultPlan {
            eio_at_offset: Some(offset),
            ..FaultPlan::default()
        }
    }

    /// A plan that fails the `n`-th read (1-based) with EIO.
    pub fn eio_on_read(n: u64) -> Self {
        FaultPlan {
            eio_on_read: Some(n),
            ..FaultPlan::default()
        }
    }

    /// A plan that shortens every `n`-th read by `by` bytes.
    pub fn short_reads(every: u64, by: u64) -> Self {
        FaultPlan {
            short_every: Some(every.max(1)),
            short_by: by,
            ..FaultPlan::default()
        }
    }

    /// A plan under which `O_DIRECT` opens fail with `EINVAL`.
    pub fn refusing_direct() -> Self {
        FaultPlan {
            refuse_direct: true,
            ..FaultPlan::default()
        }
    }

    /// Whether a read of `len` bytes at `offset` must fail with EIO (each
    /// read asks once; the asks are what [`eio_on_read`](Self::eio_on_read)
    /// counts).
    pub fn fails(&self, offset: u64, len: u64) -> bool {
        let n = self.checks.fetch_add(1, Ordering::Relaxed) + 1;
        self.eio_on_read == Some(n)
            || self
                .eio_at_offset
                .is_some_and(|at| (offset..offset.saturating_add(len)).contains(&at))
    }

    /// Reads checked against this plan so far (what `eio_on_read` counts).
    pub fn reads_checked(&self) -> u64 {
        self.checks.load(Ordering::Relaxed)
    }

    /// How many of the `got` bytes a read returned should count (the rest
    /// is "not read", as in a short read). The cut is a multiple of `align`
    /// (the file's direct-I/O alignment, 1 for buffered files) and only
    /// results that are themselves multiples of `align` are shortened, so a
    /// resubmission stays aligned and an unaligned result still means end
    /// of file.
    pub fn shorten(&self, got: u64, align: u64) -> u64 {
        let n = self.reads.fetch_add(1, Ordering::Relaxed) + 1;
        let align = align.max(1);
        let cut = self.short_by.div_ceil(align) * align;
        match self.short_every {
            Some(every) if n % every == 0 && cut > 0 && got > cut && got % align == 0 => {
                self.short_reads.fetch_add(1, Ordering::Relaxed);
                got - cut
            }
            _ => got,
        }
    }

    /// [`shorten`](Self::shorten) applied to the bytes a read just
    /// returned: the bytes it declares unread are overwritten with a
    /// poison pattern, so a reader that fails to resubmit them delivers
    /// wrong data (and the tests notice).
    pub fn shorten_returned(&self, returned: &mut [u8], align: u64) -> usize {
        let counted = self.shorten(returned.len() as u64, align) as usize;
        if let Some(tail) = returned.get_mut(counted..) {
            tail.fill(0xA5);
        }
        counted
    }

    /// Reads completed through this plan so far.
    pub fn reads_seen(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    /// Short reads injected so far (tests check the fault really fired).
    pub fn short_reads_injected(&self) -> u64 {
        self.short_reads.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shorten_keeps_alignment_and_counts() {
        let p = FaultPlan::short_reads(2, 100);
        assert_eq!(p.shorten(8192, 4096), 8192); // 1st read untouched
        assert_eq!(p.shorten(8192, 4096), 4096); // cut rounded up to 4096
        assert_eq!(p.shorten(4096, 4096), 4096); // 3rd untouched
        assert_eq!(p.shorten(4096, 4096), 4096); // nothing would remain
        assert_eq!(p.shorten(1000, 1), 1000);
        assert_eq!(p.shorten(1000, 1), 900);
        assert_eq!(p.shorten(5000, 512), 5000);
        assert_eq!(p.shorten(5000, 512), 5000); // unaligned = end of file
        assert_eq!(p.short_reads_injected(), 2);
        assert_eq!(p.reads_seen(), 8);
        assert!(FaultPlan::eio_at(10).fails(8, 4));
        assert!(!FaultPlan::eio_at(12).fails(8, 4));
        assert!(!FaultPlan::default().fails(0, u64::MAX));
        let p = FaultPlan::eio_on_read(3);
        assert_eq!(
            [p.fails(0, 1), p.fails(0, 1), p.fails(0, 1), p.fails(0, 1)],
            [false, false, true, false]
        );
        assert_eq!(p.reads_checked(), 4);
    }
}
