//! Batched positional reads behind one trait, with two implementations:
//! [`UringReader`](crate::io::uring::UringReader) (io_uring, deep queue) and
//! [`PreadReader`](crate::io::pread::PreadReader) (pread on a few threads).
//! Both run the same conformance tests and consult the same [`FaultPlan`].

use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::io::aligned::AlignedBuf;
use crate::io::fault::FaultPlan;

/// Alignment that offsets, lengths and destinations of reads on files
/// opened with `O_DIRECT` must have.
pub const DIRECT_ALIGN: u64 = 512;

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
    /// Its length when opened.
    pub len: u64,
}

/// Opens `path` for reading with `O_DIRECT` when `direct` and the
/// filesystem allows it, else buffered (with a one-line warning).
pub fn open_for_reads(path: &Path, direct: bool) -> Result<OpenFile> {
    let plain = || File::open(path).map_err(|e| Error::io("open", path, e));
    let (file, direct) = if direct {
        match File::options()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(path)
        {
            Ok(f) => (f, true),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                tracing::warn!(
                    "{}: the filesystem refuses O_DIRECT; reading through the page cache",
                    path.display()
                );
                (plain()?, false)
            }
            Err(e) => return Err(Error::io("open", path, e)),
        }
    } else {
        (plain()?, false)
    };
    let len = file
        .metadata()
        .map_err(|e| Error::io("stat", path, e))?
        .len();
    Ok(OpenFile {
        file,
        path: path.to_path_buf(),
        direct,
        len,
    })
}

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
    fn read_batch(&mut self, ops: &[ReadOp], out: &mut AlignedBuf) -> Result<()>;
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
            && (op.offset % DIRECT_ALIGN != 0
                || op.len as u64 % DIRECT_ALIGN != 0
                || op.dst as u64 % DIRECT_ALIGN != 0)
        {
            return Err(Error::OutOfRange(format!(
                "{}: direct read at {} of {} bytes is not {DIRECT_ALIGN}-aligned",
                f.path.display(),
                op.offset,
                op.len
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
        Box::new(crate::io::pread::PreadReader::new(
            queue_depth.clamp(1, 64),
            direct,
            faults.clone(),
        )) as Box<dyn PageReader>
    };
    match backend {
        Backend::Pread => Ok(pread()),
        Backend::Uring => Ok(Box::new(crate::io::uring::UringReader::new(
            queue_depth,
            direct,
            faults.clone(),
        )?)),
        Backend::Auto => {
            match crate::io::uring::UringReader::new(queue_depth, direct, faults.clone()) {
                Ok(r) => Ok(Box::new(r)),
                Err(e) => {
                    tracing::warn!("io_uring unavailable ({e}); using pread");
                    Ok(pread())
                }
            }
        }
    }
}
