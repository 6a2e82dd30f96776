//! Batched positional reads behind one trait, with two implementations:
//! `io::uring` (io_uring, deep queue) and `io::pread` (pread on a few
//! threads); `io::backend` picks one. Both run the same conformance tests
//! and consult the same [`FaultPlan`].

use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::io::aligned::{AlignedBuf, IO_ALIGN};
use crate::io::fault::FaultPlan;

/// Alignment assumed for file offsets and lengths of `O_DIRECT` reads when
/// the kernel does not report `STATX_DIOALIGN` (before Linux 6.1): the page
/// size, which every block device accepts.
pub const DIRECT_ALIGN: u64 = 4096;

/// One read: `len` bytes of file `file` at `offset` into `out[dst..dst+len]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOp {
    /// File id returned by [`PageReader::add_file`].
    pub file: usize,
    /// File offset.
    pub offset: u64,
    /// Bytes to read.
    pub len: usize,
    /// Byte offset in the output buffer.
    pub dst: usize,
    /// The range may extend past the end of the file; the bytes past it are
    /// zeroed instead of being an error.
    pub allow_eof: bool,
}

/// A file registered with a reader.
#[derive(Debug)]
pub struct OpenFile {
    /// The open file.
    pub file: File,
    /// Its path, for errors.
    pub path: PathBuf,
    /// Whether it was opened with `O_DIRECT`.
    pub direct: bool,
    /// Alignment that offsets, lengths and buffer addresses of reads must
    /// have: the file's direct-I/O offset alignment when `direct`, else 1.
    pub align: u64,
    /// Its length when opened.
    pub len: u64,
}

/// The direct-I/O alignment `statx(STATX_DIOALIGN)` reports for `file`:
/// `Some((memory, offset))`, `(0, 0)` meaning "no direct I/O on this file";
/// `None` when the kernel or filesystem does not say.
pub fn dio_alignment(file: &File) -> Option<(u32, u32)> {
    use std::os::fd::AsRawFd;
    // SAFETY: statx is plain data; an all-zero value is a valid bit pattern.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: the fd is open for the duration of the call (file is
    // borrowed), the path is a NUL-terminated empty string as AT_EMPTY_PATH
    // requires, and stx is a valid, exclusively borrowed statx to fill.
    let rc = unsafe {
        libc::statx(
            file.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_DIOALIGN,
            &mut stx,
        )
    };
    if rc != 0 || stx.stx_mask & libc::STATX_DIOALIGN == 0 {
        return None;
    }
    Some((stx.stx_dio_mem_align, stx.stx_dio_offset_align))
}

/// Opens `path` for reading with `O_DIRECT` when `direct` and the
/// filesystem allows it, else buffered (with a one-line warning).
pub fn open_for_reads(path: &Path, direct: bool) -> Result<OpenFile> {
    open_for_reads_with(path, direct, &FaultPlan::default())
}

/// [`open_for_reads`] through the storage seam: `faults.refuse_direct`
/// makes the `O_DIRECT` open fail with `EINVAL`.
///
/// Direct I/O is used only when the open succeeds and the alignment the
/// kernel reports fits our buffers (memory alignment at most
/// [`IO_ALIGN`], offset alignment at most [`DIRECT_ALIGN`]); otherwise the
/// file is read through the page cache and one warning says why. Never an
/// error for that reason alone.
pub fn open_for_reads_with(path: &Path, direct: bool, faults: &FaultPlan) -> Result<OpenFile> {
    let plain = || File::open(path).map_err(|e| Error::io("open", path, e));
    let buffered = |why: String| -> Result<(File, bool, u64)> {
        tracing::warn!(
            "{}: {why}; reading through the page cache instead of O_DIRECT",
            path.display()
        );
        Ok((plain()?, false, 1))
    };
    let (file, direct, align) = if direct {
        let opened = if faults.refuse_direct {
            Err(std::io::Error::from_raw_os_error(libc::EINVAL))
        } else {
            File::options()
                .read(true)
                .custom_flags(libc::O_DIRECT)
                .open(path)
        };
        match opened {
            Ok(f) => match dio_alignment(&f) {
                None => (f, true, DIRECT_ALIGN),
                Some((0, 0)) => buffered("the filesystem does not support direct I/O".into())?,
                Some((mem, off))
                    if mem as usize <= IO_ALIGN && off as u64 <= DIRECT_ALIGN && off > 0 =>
                {
                    (f, true, off as u64)
                }
                Some((mem, off)) => buffered(format!(
                    "direct I/O needs {mem}-byte memory and {off}-byte offset alignment, \
                     more than the {IO_ALIGN} this reader provides"
                ))?,
            },
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                buffered("the filesystem refuses O_DIRECT".into())?
            }
            Err(e) => return Err(Error::io("open", path, e)),
        }
    } else {
        (plain()?, false, 1)
    };
    let len = file
        .metadata()
        .map_err(|e| Error::io("stat", path, e))?
        .len();
    Ok(OpenFile {
        file,
        path: path.to_path_buf(),
        direct,
        align,
        len,
    })
}

/// A per-read completion check: `(index of the op, its bytes)`.
pub type Check<'a> = dyn Fn(usize, &[u8]) -> Result<()> + Sync + 'a;

/// Batched reads into an aligned buffer.
pub trait PageReader: Send {
    /// Short name for reports (`io_uring`, `pread`).
    fn name(&self) -> &'static str;
    /// Registers a file; returns its id for [`ReadOp::file`].
    fn add_file(&mut self, path: &Path) -> Result<usize>;
    /// The registered files.
    fn files(&self) -> &[OpenFile];
    /// Performs every read. On error, every read already submitted has
    /// completed before this returns; the first error is returned.
    fn read_batch(&mut self, ops: &[ReadOp], out: &mut AlignedBuf) -> Result<()> {
        self.read_batch_checked(ops, out, &|_, _| Ok(()))
    }

    /// [`read_batch`](Self::read_batch), calling `check(i, bytes)` with the
    /// bytes of `ops[i]` as soon as that read is complete, while other reads
    /// are still in flight (so checksum work overlaps the I/O; the pread
    /// reader calls it on its worker threads). An error from `check` fails
    /// the batch like a read error.
    fn read_batch_checked(
        &mut self,
        ops: &[ReadOp],
        out: &mut AlignedBuf,
        check: &Check<'_>,
    ) -> Result<()>;
}

/// Checks ops against the buffer and the files: in bounds, destinations
/// disjoint, aligned where the file is direct.
pub fn validate_ops(ops: &[ReadOp], files: &[OpenFile], out_len: usize) -> Result<()> {
    let mut ranges: Vec<(usize, usize)> = Vec::with_capacity(ops.len());
    for op in ops {
        let f = files.get(op.file).ok_or_else(|| {
            Error::OutOfRange(format!("read names file {} of {}", op.file, files.len()))
        })?;
        let end = op.dst.checked_add(op.len).filter(|&e| e <= out_len);
        if end.is_none() {
            return Err(Error::OutOfRange(format!(
                "read of {} bytes at buffer offset {} exceeds the {out_len}-byte buffer",
                op.len, op.dst
            )));
        }
        if f.direct
            && (op.offset % f.align != 0
                || op.len as u64 % f.align != 0
                || op.dst as u64 % f.align != 0)
        {
            return Err(Error::OutOfRange(format!(
                "{}: direct read at {} of {} bytes into buffer offset {} is not {}-aligned",
                f.path.display(),
                op.offset,
                op.len,
                op.dst,
                f.align
            )));
        }
        ranges.push((op.dst, op.dst + op.len));
    }
    ranges.sort_unstable();
    if ranges.windows(2).any(|w| w[1].0 < w[0].1) {
        return Err(Error::OutOfRange(
            "reads overlap in the output buffer".into(),
        ));
    }
    Ok(())
}
