//! `pread` page reader: a batch spread over a small persistent thread pool
//! (each thread issues synchronous `pread`s). The fallback where io_uring is
//! unavailable, and the reference in tests.

use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::io::aligned::AlignedBuf;
use crate::io::fault::FaultPlan;
use crate::io::page_reader::{
    open_for_reads_with, validate_ops, Check, OpenFile, PageReader, ReadOp,
};

/// Reads batches with `pread` on up to `threads` threads.
pub struct PreadReader {
    files: Vec<OpenFile>,
    threads: usize,
    direct: bool,
    faults: Arc<FaultPlan>,
    /// Built on the first batch that has more than one read (none at all
    /// with one thread: the caller's thread reads).
    pool: Option<rayon::ThreadPool>,
}

impl PreadReader {
    /// A reader using `threads` threads; files opened with `O_DIRECT` when
    /// `direct` (and allowed).
    pub fn new(threads: usize, direct: bool, faults: Arc<FaultPlan>) -> Self {
        PreadReader {
            files: Vec::new(),
            threads: threads.max(1),
            direct,
            faults,
            pool: None,
        }
    }

    /// Threads used.
    pub fn threads(&self) -> usize {
        self.threads
    }
}

/// Reads one op into `buf` (exactly `op.len` bytes), resubmitting after
/// short reads.
pub(crate) fn pread_one(
    f: &OpenFile,
    op: &ReadOp,
    buf: &mut [u8],
    faults: &FaultPlan,
) -> Result<()> {
    let mut done = 0usize;
    while done < op.len {
        let offset = op.offset + done as u64;
        let left = (op.len - done) as u64;
        let fail = |source: std::io::Error| Error::ReadFailed {
            path: f.path.clone(),
            offset,
            len: left,
            source,
        };
        if faults.fails(offset, left) {
            return Err(fail(std::io::Error::from_raw_os_error(libc::EIO)));
        }
        let n = match f.file.read_at(&mut buf[done..], offset) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(fail(e)),
        };
        let counted = faults.shorten_returned(&mut buf[done..done + n], f.align);
        // Zero bytes, or a direct read ending off-alignment, is the end of
        // the file (an injected short read is always aligned).
        let at_eof = counted == n && (n == 0 || (f.direct && n as u64 % f.align != 0));
        done += counted;
        if at_eof && done < op.len {
            if op.allow_eof {
                buf[done..].fill(0);
                return Ok(());
            }
            return Err(crate::io::read::ends_early(
                &f.path,
                op.offset + done as u64,
                (op.len - done) as u64,
            ));
        }
    }
    Ok(())
}

impl PageReader for PreadReader {
    fn name(&self) -> &'static str {
        "pread"
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
        // Disjoint output slices, one per op, in destination order.
        let mut order: Vec<usize> = (0..ops.len()).collect();
        order.sort_unstable_by_key(|&i| ops[i].dst);
        let mut slices: Vec<(usize, &mut [u8])> = Vec::with_capacity(ops.len());
        let mut rest: &mut [u8] = out.as_mut_slice();
        let mut base = 0usize;
        for &i in &order {
            let op = &ops[i];
            let tail = std::mem::take(&mut rest).split_at_mut(op.dst - base).1;
            let (mine, tail) = tail.split_at_mut(op.len);
            slices.push((i, mine));
            rest = tail;
            base = op.dst + op.len;
        }
        let files = &self.files;
        let faults = &*self.faults;
        // After the first failure the remaining reads are skipped (the batch
        // fails anyway); reads already running finish before this returns.
        let failed = AtomicBool::new(false);
        let read = |(i, buf): (usize, &mut [u8])| -> Option<(usize, Error)> {
            if failed.load(Ordering::Relaxed) {
                return None;
            }
            let op = &ops[i];
            let r = pread_one(&files[op.file], op, buf, faults)
                .and_then(|()| check(i, buf))
                .err();
            if r.is_some() {
                failed.store(true, Ordering::Relaxed);
            }
            r.map(|e| (i, e))
        };
        let mut errors: Vec<(usize, Error)> = if self.threads == 1 || slices.len() <= 1 {
            slices.into_iter().filter_map(read).collect()
        } else {
            if self.pool.is_none() {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(self.threads)
                    .thread_name(|i| format!("ginex-pread-{i}"))
                    .build()
                    .map_err(|e| Error::io("spawn", "<pread threads>", std::io::Error::other(e)))?;
                self.pool = Some(pool);
            }
            let pool = self.pool.as_ref().expect("built above");
            pool.install(|| slices.into_par_iter().filter_map(read).collect())
        };
        errors.sort_by_key(|(i, _)| *i);
        match errors.into_iter().next() {
            Some((_, e)) => Err(e),
            None => Ok(()),
        }
    }
}
