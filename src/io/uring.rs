//! io_uring page reader: a whole batch of reads in flight at a configurable
//! queue depth.
//!
//! Each submitted read's `user_data` is the index of an in-flight slot that
//! records what the read is for; the destination is a range of the caller's
//! buffer, which `read_batch` borrows mutably for its whole duration and
//! never returns while a read is in flight, on success or on error. A full
//! submission queue is submitted and the push retried; a negative result is
//! `-errno`; a short read is resubmitted for the rest.

use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::Arc;

use io_uring::{opcode, types, IoUring};

use crate::error::{Error, Result};
use crate::io::aligned::AlignedBuf;
use crate::io::fault::FaultPlan;
use crate::io::page_reader::{
    open_for_reads, validate_ops, OpenFile, PageReader, ReadOp, DIRECT_ALIGN,
};

/// Reads batches through io_uring.
pub struct UringReader {
    ring: IoUring,
    files: Vec<OpenFile>,
    depth: usize,
    direct: bool,
    faults: Arc<FaultPlan>,
}

#[derive(Debug, Clone, Copy)]
struct InFlight {
    op: usize,
    offset: u64,
    dst: usize,
    len: usize,
}

impl UringReader {
    /// A reader with `depth` reads in flight; fails if the kernel refuses
    /// io_uring (old kernel, seccomp), so callers can fall back to pread.
    pub fn new(depth: usize, direct: bool, faults: Arc<FaultPlan>) -> Result<Self> {
        let depth = depth.clamp(1, 4096);
        let ring = IoUring::new(depth.next_power_of_two() as u32)
            .map_err(|e| Error::io("io_uring_setup", "<kernel>", e))?;
        Ok(UringReader {
            ring,
            files: Vec::new(),
            depth,
            direct,
            faults,
        })
    }

    /// Waits for at least one completion, retrying interrupted waits.
    fn wait(&mut self) -> std::io::Result<()> {
        loop {
            match self.ring.submit_and_wait(1) {
                Ok(_) => return Ok(()),
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EINTR) | Some(libc::EAGAIN) | Some(libc::EBUSY)
                    ) =>
                {
                    continue
                }
                Err(e) => return Err(e),
            }
        }
    }
}

impl PageReader for UringReader {
    fn name(&self) -> &'static str {
        "io_uring"
    }

    fn add_file(&mut self, path: &Path) -> Result<usize> {
        self.files.push(open_for_reads(path, self.direct)?);
        Ok(self.files.len() - 1)
    }

    fn files(&self) -> &[OpenFile] {
        &self.files
    }

    fn read_batch(&mut self, ops: &[ReadOp], out: &mut AlignedBuf) -> Result<()> {
        validate_ops(ops, &self.files, out.len())?;
        let base = out.ptr_at(0);
        let mut slots: Vec<Option<InFlight>> = vec![None; self.depth];
        let mut free: Vec<usize> = (0..self.depth).rev().collect();
        let mut retry: Vec<InFlight> = Vec::new();
        let mut next = 0usize;
        let mut in_flight = 0usize;
        let mut first_error: Option<Error> = None;
        let mut completions: Vec<(u64, i32)> = Vec::with_capacity(self.depth);
        loop {
            // Submit while there is work, a free slot, and no error yet.
            while first_error.is_none()
                && !free.is_empty()
                && (!retry.is_empty() || next < ops.len())
            {
                let p = match retry.pop() {
                    Some(p) => p,
                    None => {
                        let op = &ops[next];
                        next += 1;
                        InFlight {
                            op: next - 1,
                            offset: op.offset,
                            dst: op.dst,
                            len: op.len,
                        }
                    }
                };
                let f = &self.files[ops[p.op].file];
                if self.faults.fails(p.offset, p.len as u64) {
                    first_error = Some(Error::ReadFailed {
                        path: f.path.clone(),
                        offset: p.offset,
                        len: p.len as u64,
                        source: std::io::Error::from_raw_os_error(libc::EIO),
                    });
                    break;
                }
                let slot = free.pop().unwrap_or_default();
                // SAFETY: validate_ops checked dst + len <= out.len(), and
                // p (an op or the unread tail of one) stays inside that range,
                // so the pointer and length lie inside `out`.
                let dst = unsafe { base.add(p.dst) };
                let entry = opcode::Read::new(types::Fd(f.file.as_raw_fd()), dst, p.len as u32)
                    .offset(p.offset)
                    .build()
                    .user_data(slot as u64);
                loop {
                    // The entry's buffer is a range of `out`, which this
                    // function borrows mutably until it returns, and it does
                    // not return before this read's completion has been
                    // reaped (the loop below runs until in_flight == 0);
                    // ranges of different ops are disjoint (validate_ops);
                    // the fd stays open (self.files outlives the call).
                    // SAFETY: by the above, buffer and fd outlive the read.
                    let pushed = unsafe { self.ring.submission().push(&entry) };
                    if pushed.is_ok() {
                        break;
                    }
                    // Submission queue full: hand it to the kernel and retry.
                    if let Err(e) = self.ring.submit() {
                        if !matches!(
                            e.raw_os_error(),
                            Some(libc::EINTR) | Some(libc::EAGAIN) | Some(libc::EBUSY)
                        ) {
                            first_error.get_or_insert(Error::io("io_uring_enter", &f.path, e));
                            break;
                        }
                    }
                }
                if first_error.is_some() {
                    free.push(slot);
                    break;
                }
                slots[slot] = Some(p);
                in_flight += 1;
            }
            if in_flight == 0 {
                break;
            }
            if let Err(e) = self.wait() {
                // The kernel refuses to wait; reads already submitted still
                // target `out`, so returning would be unsound. Nothing safe
                // remains but to stop the process.
                tracing::error!("io_uring_enter failed with reads in flight: {e}");
                std::process::abort();
            }
            completions.clear();
            completions.extend(self.ring.completion().map(|c| (c.user_data(), c.result())));
            for &(key, res) in &completions {
                let slot = key as usize;
                let Some(p) = slots.get_mut(slot).and_then(Option::take) else {
                    continue;
                };
                free.push(slot);
                in_flight -= 1;
                let op = &ops[p.op];
                let f = &self.files[op.file];
                if res < 0 {
                    first_error.get_or_insert(Error::ReadFailed {
                        path: f.path.clone(),
                        offset: p.offset,
                        len: p.len as u64,
                        source: std::io::Error::from_raw_os_error(-res),
                    });
                    continue;
                }
                let real = res as usize;
                let got = self.faults.shorten(real as u64) as usize;
                // A direct read ending off-alignment only happens at the end
                // of the file (unless the fault plan shortened it).
                let at_eof = got == real
                    && (real == 0 || (f.direct && real as u64 % DIRECT_ALIGN != 0 && real < p.len));
                if got >= p.len {
                    continue;
                }
                if at_eof {
                    if op.allow_eof {
                        // SAFETY: [dst + got, dst + len) is inside this op's
                        // range of `out`, whose read has completed; no other
                        // read targets it.
                        unsafe { std::ptr::write_bytes(base.add(p.dst + got), 0, p.len - got) };
                    } else {
                        first_error.get_or_insert(Error::ReadFailed {
                            path: f.path.clone(),
                            offset: p.offset + got as u64,
                            len: (p.len - got) as u64,
                            source: std::io::Error::new(
                                std::io::ErrorKind::UnexpectedEof,
                                "file ends before the range read",
                            ),
                        });
                    }
                    continue;
                }
                retry.push(InFlight {
                    op: p.op,
                    offset: p.offset + got as u64,
                    dst: p.dst + got,
                    len: p.len - got,
                });
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
