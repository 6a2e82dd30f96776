//! `pread` page reader: a batch split across a few scoped threads. The
//! fallback where io_uring is unavailable, and the reference in tests.

use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::io::aligned::AlignedBuf;
use crate::io::fault::FaultPlan;
use crate::io::page_reader::{
    open_for_reads, validate_ops, OpenFile, PageReader, ReadOp, DIRECT_ALIGN,
};

/// Reads batches with `pread` on up to `threads` threads.
pub struct PreadReader {
    files: Vec<OpenFile>,
    threads: usize,
    direct: bool,
    faults: Arc<FaultPlan>,
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
        }
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
        let counted = faults.shorten(n as u64) as usize;
        // A direct read ending off-alignment only happens at the end of the
        // file (unless the fault plan shortened it, then it is just short).
        let at_eof = counted == n && (n == 0 || (f.direct && n as u64 % DIRECT_ALIGN != 0));
        let n = counted;
        done += n;
        if at_eof && done < op.len {
            if op.allow_eof {
                buf[done..].fill(0);
                return Ok(());
            }
            return Err(fail(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "file ends before the range read",
            )));
        }
    }
    Ok(())
}

impl PageReader for PreadReader {
    fn name(&self) -> &'static str {
        "pread"
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
        let threads = self.threads.min(slices.len()).max(1);
        let mut groups: Vec<Vec<(usize, &mut [u8])>> = (0..threads).map(|_| Vec::new()).collect();
        for (k, s) in slices.into_iter().enumerate() {
            groups[k % threads].push(s);
        }
        let files = &self.files;
        let faults = &*self.faults;
        let mut errors: Vec<(usize, Error)> = std::thread::scope(|scope| {
            let handles: Vec<_> = groups
                .into_iter()
                .map(|group| {
                    scope.spawn(move || {
                        let mut errs = Vec::new();
                        for (i, buf) in group {
                            let op = &ops[i];
                            if let Err(e) = pread_one(&files[op.file], op, buf, faults) {
                                errs.push((i, e));
                            }
                        }
                        errs
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_default())
                .collect()
        });
        errors.sort_by_key(|(i, _)| *i);
        match errors.into_iter().next() {
            Some((_, e)) => Err(e),
            None => Ok(()),
        }
    }
}
