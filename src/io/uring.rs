//! io_uring page reader: a whole batch of reads in flight at a configurable
//! queue depth.
//!
//! Ownership of the destination memory: each submitted read's `user_data`
//! is the index of an in-flight slot that records what the read is for; its
//! destination is a range of the caller's [`AlignedBuf`], which
//! `read_batch` borrows mutably for its whole duration. `read_batch` never
//! returns while a read is in flight: on success and on error it reaps every
//! completion first, and if it unwinds (a panic) the `Drain` guard waits
//! for the outstanding completions before the borrow ends (and aborts the
//! process if the kernel will not let it wait, the only sound option left).
//! Between calls nothing is in flight, so dropping the reader (and its ring
//! and files) is always safe.
//!
//! A full submission queue is submitted and the push retried; a negative
//! result is `-errno` and becomes an error naming the file and offset; a
//! short read is resubmitted for the rest; an unaligned short direct read
//! (or a zero-byte one) is the end of the file.

use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::Arc;

use io_uring::{opcode, types, IoUring, Probe};

use crate::error::{Error, Result};
use crate::io::aligned::AlignedBuf;
use crate::io::fault::FaultPlan;
use crate::io::page_reader::{
    open_for_reads_with, validate_ops, Check, OpenFile, PageReader, ReadOp,
};

/// Reads batches through io_uring.
pub struct UringReader {
    ring: IoUring,
    files: Vec<OpenFile>,
    depth: usize,
    direct: bool,
    faults: Arc<FaultPlan>,
    slots: Vec<Option<InFlight>>,
    free: Vec<usize>,
    completions: Vec<(u64, i32)>,
}

#[derive(Debug, Clone, Copy)]
struct InFlight {
    op: usize,
    offset: u64,
    dst: usize,
    len: usize,
}

fn transient(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EINTR) | Some(libc::EAGAIN) | Some(libc::EBUSY)
    )
}

/// Waits until `count` submitted reads have completed, even while
/// unwinding: the guard of the rule "no buffer is released with a read in
/// flight". Every entry on the ring is a single-shot read, so each produces
/// exactly one completion, and the ring is used by one `read_batch` at a
/// time, so every completion on it belongs to this batch.
struct Drain<'r> {
    ring: &'r mut IoUring,
    count: usize,
}

impl Drain<'_> {
    /// Submits what is queued and waits for at least one completion,
    /// retrying interrupted waits.
    fn wait(&mut self) -> std::io::Result<()> {
        loop {
            match self.ring.submit_and_wait(1) {
                Ok(_) => return Ok(()),
                Err(e) if transient(&e) => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

impl Drop for Drain<'_> {
    fn drop(&mut self) {
        while self.count > 0 {
            if let Err(e) = self.wait() {
                // Reads still target memory we are about to give back;
                // returning would let the kernel write into freed memory.
                tracing::error!(
                    "io_uring: cannot wait for {} reads in flight ({e}); aborting",
                    self.count
                );
                std::process::abort();
            }
            let reaped = self.ring.completion().count();
            self.count = self.count.saturating_sub(reaped);
        }
    }
}

impl UringReader {
    /// A reader with `depth` reads in flight (clamped to 1..=4096); fails if
    /// the kernel refuses io_uring (old kernel, seccomp, `io_uring_disabled`)
    /// or lacks `IORING_OP_READ` (before 5.6), so callers can fall back to
    /// pread.
    pub fn new(depth: usize, direct: bool, faults: Arc<FaultPlan>) -> Result<Self> {
        let depth = depth.clamp(1, 4096);
        Self::with_sq_entries(depth, depth, direct, faults)
    }

    /// Like [`new`](Self::new) with a submission queue of `sq_entries`
    /// (rounded up to a power of two) that may be smaller than `depth`: the
    /// queue then fills before the slots do and the reader must submit and
    /// retry (tests use this). The completion queue always holds `depth`.
    pub fn with_sq_entries(
        depth: usize,
        sq_entries: usize,
        direct: bool,
        faults: Arc<FaultPlan>,
    ) -> Result<Self> {
        let depth = depth.clamp(1, 4096);
        let sq = sq_entries.clamp(1, 4096).next_power_of_two() as u32;
        let cq = (depth.next_power_of_two() as u32).max(2 * sq);
        let ring = IoUring::builder()
            .setup_cqsize(cq)
            .build(sq)
            .map_err(|e| Error::io("io_uring_setup", "<kernel>", e))?;
        let mut probe = Probe::new();
        ring.submitter()
            .register_probe(&mut probe)
            .map_err(|e| Error::io("io_uring_register(PROBE)", "<kernel>", e))?;
        if !probe.is_supported(opcode::Read::CODE) {
            return Err(Error::io(
                "io_uring_register(PROBE)",
                "<kernel>",
                std::io::Error::new(
                    std::io::ErrorKind::Unsupported,
                    "the kernel's io_uring lacks IORING_OP_READ (Linux >= 5.6 needed)",
                ),
            ));
        }
        Ok(UringReader {
            ring,
            files: Vec::new(),
            depth,
            direct,
            faults,
            slots: vec![None; depth],
            free: Vec::with_capacity(depth),
            completions: Vec::with_capacity(cq as usize),
        })
    }

    /// Reads in flight at most.
    pub fn depth(&self) -> usize {
        self.depth
    }
}

/// Whether this process may use io_uring for reads (setup allowed and
/// `IORING_OP_READ` supported).
pub fn uring_available() -> bool {
    UringReader::new(1, false, Arc::new(FaultPlan::default())).is_ok()
}

impl PageReader for UringReader {
    fn name(&self) -> &'static str {
        "io_uring"
    }

    fn add_file(&mut self, path: &Path) -> Result<usize> {
        self.files
            .push(open_for_reads_with(path, self.direct, &self.faults)?);
        Ok(self.files.len() - 1)
    }

    fn files(&self) -> &[OpenFile] {
        &self.files
    }

    fn read_batch_checked(
        &mut self,
        ops: &[ReadOp],
        out: &mut AlignedBuf,
        check: &Check<'_>,
    ) -> Result<()> {
        validate_ops(ops, &self.files, out.len())?;
        let UringReader {
            ring,
            files,
            faults,
            slots,
            free,
            completions,
            depth,
            ..
        } = self;
        let base = out.ptr_at(0);
        slots.iter_mut().for_each(|s| *s = None);
        free.clear();
        free.extend((0..*depth).rev());
        let mut batch = Batch {
            ops,
            files,
            faults,
            check,
            base,
            slots,
            free,
            retry: Vec::new(),
            next: 0,
            first_error: None,
        };
        let mut drain = Drain { ring, count: 0 };
        loop {
            batch.submit(&mut drain);
            if drain.count == 0 {
                break;
            }
            if let Err(e) = drain.wait() {
                batch
                    .first_error
                    .get_or_insert(Error::io("io_uring_enter", "<kernel>", e));
                // Dropping `drain` waits for the rest (or aborts).
                break;
            }
            completions.clear();
            completions.extend(drain.ring.completion().map(|c| (c.user_data(), c.result())));
            for &(key, res) in completions.iter() {
                batch.complete(key, res, &mut drain);
            }
        }
        drop(drain);
        match batch.first_error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// One `read_batch_checked` call under way: its ops, the slots of the
/// reads in flight, what is left to submit, and the first error.
struct Batch<'a, 'c> {
    ops: &'a [ReadOp],
    files: &'a [OpenFile],
    faults: &'a FaultPlan,
    check: &'a Check<'c>,
    /// The start of the output buffer, which `validate_ops` checked every
    /// op's destination against.
    base: *mut u8,
    slots: &'a mut [Option<InFlight>],
    free: &'a mut Vec<usize>,
    /// Unread tails of short reads, to resubmit.
    retry: Vec<InFlight>,
    /// The first op not submitted yet.
    next: usize,
    first_error: Option<Error>,
}

impl Batch<'_, '_> {
    /// Submits while there is work, a free slot, and no error yet.
    fn submit(&mut self, drain: &mut Drain<'_>) {
        while self.first_error.is_none() && (!self.retry.is_empty() || self.next < self.ops.len()) {
            let Some(slot) = self.free.pop() else { break };
            let p = match self.retry.pop() {
                Some(p) => p,
                None => {
                    let op = &self.ops[self.next];
                    self.next += 1;
                    InFlight {
                        op: self.next - 1,
                        offset: op.offset,
                        dst: op.dst,
                        len: op.len,
                    }
                }
            };
            let f = &self.files[self.ops[p.op].file];
            // SAFETY: validate_ops checked op.dst + op.len <= out.len(),
            // and p (an op or the unread tail of one) lies inside that
            // range, so the pointer stays inside `out`'s allocation.
            let dst = unsafe { self.base.add(p.dst) };
            let entry = opcode::Read::new(types::Fd(f.file.as_raw_fd()), dst, p.len as u32)
                .offset(p.offset)
                .build()
                .user_data(slot as u64);
            loop {
                // The entry writes p.len bytes at dst, a range of `out`
                // that no other in-flight read targets (validate_ops:
                // destinations are disjoint; a resubmission replaces its
                // completed read). `out` stays mutably borrowed until
                // `read_batch_checked` returns, and it does not return (nor
                // unwind past `drain`) before this read's completion is
                // reaped. The fd stays open: `files` outlives the call.
                // SAFETY: by the above, buffer and fd outlive the read.
                let pushed = unsafe { drain.ring.submission().push(&entry) };
                if pushed.is_ok() {
                    break;
                }
                // Submission queue full: hand it to the kernel, retry.
                match drain.ring.submit() {
                    Ok(_) => {}
                    Err(e) if transient(&e) => {}
                    Err(e) => {
                        self.first_error = Some(Error::io("io_uring_enter", &f.path, e));
                        break;
                    }
                }
            }
            if self.first_error.is_some() {
                self.free.push(slot);
                break;
            }
            self.slots[slot] = Some(p);
            drain.count += 1;
        }
    }

    /// Handles the completion `res` of the read in slot `key`: checks a
    /// complete op, zero-fills an allowed end of file, queues the unread
    /// tail of a short read, or keeps the first error.
    fn complete(&mut self, key: u64, res: i32, drain: &mut Drain<'_>) {
        let slot = key as usize;
        let Some(p) = self.slots.get_mut(slot).and_then(Option::take) else {
            return;
        };
        self.free.push(slot);
        drain.count -= 1;
        let (base, files) = (self.base, self.files);
        let op = &self.ops[p.op];
        let f = &files[op.file];
        let res = if res >= 0 && self.faults.fails(p.offset, p.len as u64) {
            -libc::EIO
        } else {
            res
        };
        if res < 0 {
            self.first_error.get_or_insert(Error::ReadFailed {
                path: f.path.clone(),
                offset: p.offset,
                len: p.len as u64,
                source: std::io::Error::from_raw_os_error(-res),
            });
            return;
        }
        let real = (res as usize).min(p.len);
        // The read of [dst, dst + len) has completed (its completion
        // is being handled) and no other read targets that range.
        // SAFETY: so nothing else accesses these bytes while this slice lives.
        let returned = unsafe { std::slice::from_raw_parts_mut(base.add(p.dst), real) };
        let got = self.faults.shorten_returned(returned, f.align);
        if got >= p.len {
            self.check_op(p.op);
            return;
        }
        // Zero bytes, or a direct read ending off-alignment, is the
        // end of the file (an injected short read is always aligned).
        let at_eof = got == real && (real == 0 || (f.direct && real as u64 % f.align != 0));
        if at_eof {
            if op.allow_eof {
                // SAFETY: [dst + got, dst + len) lies inside this
                // op's range of `out`, whose read has completed and
                // which no other read targets.
                unsafe { std::ptr::write_bytes(base.add(p.dst + got), 0, p.len - got) };
                self.check_op(p.op);
            } else {
                self.first_error.get_or_insert(crate::io::read::ends_early(
                    &f.path,
                    p.offset + got as u64,
                    (p.len - got) as u64,
                ));
            }
            return;
        }
        self.retry.push(InFlight {
            op: p.op,
            offset: p.offset + got as u64,
            dst: p.dst + got,
            len: p.len - got,
        });
    }

    /// Checks op `index`, whose bytes are all read, unless an error came
    /// first. The whole op is complete once its last piece is: pieces of
    /// one op are read one after another, never two at a time.
    fn check_op(&mut self, index: usize) {
        if self.first_error.is_some() {
            return;
        }
        let op = &self.ops[index];
        // SAFETY: that range lies inside `out` (validate_ops), every
        // read into it has completed, and no other read targets it.
        let bytes = unsafe { std::slice::from_raw_parts(self.base.add(op.dst), op.len) as &[u8] };
        if let Err(e) = (self.check)(index, bytes) {
            self.first_error = Some(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file_of(pages: usize) -> (tempfile::TempDir, std::path::PathBuf, Vec<u8>) {
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let path = dir.path().join("f");
        let bytes: Vec<u8> = (0..pages * 4096 + 100)
            .map(|i| (i * 7 + i / 4096) as u8)
            .collect();
        std::fs::File::create(&path)
            .unwrap()
            .write_all(&bytes)
            .unwrap();
        (dir, path, bytes)
    }

    fn page_ops(file: usize, pages: &[u64]) -> Vec<ReadOp> {
        pages
            .iter()
            .enumerate()
            .map(|(k, &p)| ReadOp {
                file,
                offset: p * 4096,
                len: 4096,
                dst: k * 4096,
                allow_eof: false,
            })
            .collect()
    }

    /// More reads than submission-queue entries: the queue fills, is
    /// submitted and the push retried; every page still arrives.
    #[test]
    fn full_submission_queue_is_submitted_and_retried() {
        let (_d, path, bytes) = file_of(300);
        for direct in [true, false] {
            let mut r = UringReader::with_sq_entries(64, 2, direct, Arc::new(FaultPlan::default()))
                .unwrap();
            assert_eq!(r.ring.params().sq_entries(), 2);
            let f = r.add_file(&path).unwrap();
            let pages: Vec<u64> = (0..300).rev().step_by(3).collect();
            let ops = page_ops(f, &pages);
            let mut out = AlignedBuf::zeroed(ops.len() * 4096).unwrap();
            r.read_batch(&ops, &mut out).unwrap();
            for (k, &p) in pages.iter().enumerate() {
                let want = &bytes[p as usize * 4096..(p as usize + 1) * 4096];
                assert_eq!(&out.as_slice()[k * 4096..(k + 1) * 4096], want, "page {p}");
            }
        }
    }

    /// The tail page of a file that ends mid-page: zero-filled when allowed,
    /// an error naming the file and the offset where the data ends if not.
    #[test]
    fn end_of_file() {
        let (_d, path, bytes) = file_of(3);
        for direct in [true, false] {
            let mut r = UringReader::new(4, direct, Arc::new(FaultPlan::default())).unwrap();
            let f = r.add_file(&path).unwrap();
            let mut ops = page_ops(f, &[3, 0]);
            ops[0].allow_eof = true;
            let mut out = AlignedBuf::zeroed(2 * 4096).unwrap();
            out.as_mut_slice().fill(0xAA);
            r.read_batch(&ops, &mut out).unwrap();
            assert_eq!(&out.as_slice()[..100], &bytes[3 * 4096..]);
            assert!(out.as_slice()[100..4096].iter().all(|&b| b == 0));
            assert_eq!(&out.as_slice()[4096..], &bytes[..4096]);
            ops[0].allow_eof = false;
            let err = r.read_batch(&ops, &mut out).unwrap_err().to_string();
            assert!(
                err.contains(&path.display().to_string()) && err.contains("offset 12388"),
                "{err}"
            );
        }
    }

    #[test]
    fn misaligned_and_overlapping_reads_are_refused() {
        let (_d, path, _) = file_of(4);
        let mut r = UringReader::new(4, true, Arc::new(FaultPlan::default())).unwrap();
        let f = r.add_file(&path).unwrap();
        let mut out = AlignedBuf::zeroed(3 * 4096).unwrap();
        let mut ops = page_ops(f, &[0, 1]);
        ops[1].dst = 2048;
        assert!(r.read_batch(&ops, &mut out).is_err());
        if r.files()[f].direct {
            let mut ops = page_ops(f, &[0]);
            ops[0].offset = 100;
            assert!(r.read_batch(&ops, &mut out).is_err());
        }
        let ops = page_ops(f, &[0, 1, 2, 3]);
        assert!(
            r.read_batch(&ops, &mut out).is_err(),
            "out of buffer bounds"
        );
    }
}
