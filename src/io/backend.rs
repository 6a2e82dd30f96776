//! Which page reader to build: io_uring, pread, or io_uring with a fall
//! back to pread. Kept apart from the trait (`page_reader`) so the two
//! implementations depend on the trait and this file on all three.

use std::sync::Arc;

use crate::error::Result;
use crate::io::fault::FaultPlan;
use crate::io::page_reader::PageReader;
use crate::io::pread::PreadReader;
use crate::io::uring::UringReader;

/// Which reader to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// io_uring if the kernel allows it, else pread.
    Auto,
    /// io_uring only (error if unavailable).
    Uring,
    /// pread on a thread pool.
    Pread,
}

/// Builds a reader: `queue_depth` in-flight reads (io_uring) or threads
/// (pread, at most 64), files opened with `O_DIRECT` when `direct`.
pub fn make_reader(
    backend: Backend,
    queue_depth: usize,
    direct: bool,
    faults: Arc<FaultPlan>,
) -> Result<Box<dyn PageReader>> {
    let pread = || {
        Box::new(PreadReader::new(
            queue_depth.clamp(1, 64),
            direct,
            faults.clone(),
        )) as Box<dyn PageReader>
    };
    match backend {
        Backend::Pread => Ok(pread()),
        Backend::Uring => Ok(Box::new(UringReader::new(
            queue_depth,
            direct,
            faults.clone(),
        )?)),
        Backend::Auto => match UringReader::new(queue_depth, direct, faults.clone()) {
            Ok(r) => Ok(Box::new(r)),
            Err(e) => {
                tracing::warn!("io_uring unavailable ({e}); using pread");
                Ok(pread())
            }
        },
    }
}
