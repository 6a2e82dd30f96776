//! The storage seam: a fault plan both page readers consult, so tests can
//! inject read errors and short reads into the real I/O paths.

use std::sync::atomic::{AtomicU64, Ordering};

/// Faults to inject. The default injects nothing.
#[derive(Debug, Default)]
pub struct FaultPlan {
    /// Fail reads that cover this file offset (of any file) with `EIO`.
    pub eio_at_offset: Option<u64>,
    /// Make every n-th read return `short_by` bytes less than asked
    /// (the reader must resubmit the rest).
    pub short_every: Option<u64>,
    /// Bytes to cut from an injected short read (a multiple of 512, so
    /// direct-I/O resubmissions stay aligned).
    pub short_by: u64,
    reads: AtomicU64,
}

impl FaultPlan {
    /// A plan that fails reads covering `offset` with EIO.
    pub fn eio_at(offset: u64) -> Self {
        FaultPlan {
            eio_at_offset: Some(offset),
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

    /// Whether a read of `len` bytes at `offset` must fail with EIO.
    pub fn fails(&self, offset: u64, len: u64) -> bool {
        self.eio_at_offset
            .is_some_and(|at| (offset..offset + len).contains(&at))
    }

    /// How many of the `got` bytes a read returned should count (the rest
    /// is "not read", as in a short read). Only whole-sector results are
    /// shortened, so the resubmission stays aligned for direct I/O (a
    /// result that is not a multiple of 512 bytes is an end of file).
    pub fn shorten(&self, got: u64) -> u64 {
        let n = self.reads.fetch_add(1, Ordering::Relaxed) + 1;
        match self.short_every {
            Some(every) if n % every == 0 && got > self.short_by && got % 512 == 0 => {
                got - self.short_by
            }
            _ => got,
        }
    }
}
