//! Positional reads with errors that name the file and offset.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::error::{Error, Result};

/// Reads exactly `buf.len()` bytes at `offset`; a short file is reported as
/// corruption (truncation) at that offset.
pub fn read_exact_at(file: &File, path: &Path, offset: u64, buf: &mut [u8]) -> Result<()> {
    file.read_exact_at(buf, offset).map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            Error::corrupt(
                path,
                offset,
                format!(
                    "file ends before the {} bytes expected here (truncated?)",
                    buf.len()
                ),
            )
        } else {
            Error::io("read", path, e)
        }
    })
}

/// The error for a read of `len` bytes at `offset` that the end of `path`
/// cut short (both readers report it the same way).
pub fn ends_early(path: &Path, offset: u64, len: u64) -> Error {
    Error::ReadFailed {
        path: path.to_path_buf(),
        offset,
        len,
        source: std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "file ends before the range read",
        ),
    }
}

/// Bytes read per call by [`stream_crc`].
pub const STREAM_CHUNK: usize = 8 << 20;

/// Streams `len` bytes of `file` from `start` in [`STREAM_CHUNK`] pieces:
/// calls `visit(position from start, chunk)` for each and returns the CRC-32
/// of the whole range (the crc of [`crate::format::crc32`]). A file shorter
/// than the range is reported as truncation at the offset where it ends.
pub fn stream_crc(
    file: &File,
    path: &Path,
    start: u64,
    len: u64,
    mut visit: impl FnMut(u64, &[u8]) -> Result<()>,
) -> Result<u32> {
    let mut hasher = crc32fast::Hasher::new();
    let mut buf = vec![0u8; (len.min(STREAM_CHUNK as u64)) as usize];
    let mut pos = 0u64;
    while pos < len {
        let n = (len - pos).min(STREAM_CHUNK as u64) as usize;
        let chunk = &mut buf[..n];
        read_exact_at(file, path, start + pos, chunk)?;
        hasher.update(chunk);
        visit(pos, chunk)?;
        pos += n as u64;
    }
    Ok(hasher.finalize())
}

/// Opens a file for reading.
pub fn open(path: &Path) -> Result<File> {
    File::open(path).map_err(|e| Error::io("open", path, e))
}

/// Asks the kernel to drop `path`'s pages from the page cache
/// (`posix_fadvise(DONTNEED)`, no root needed), so a following buffered
/// read measures the device.
pub fn drop_from_page_cache(path: &Path) -> Result<()> {
    use std::os::fd::AsRawFd;
    let f = open(path)?;
    // SAFETY: the fd is valid for the duration of the call (f is alive);
    // posix_fadvise only reads its arguments.
    let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if rc != 0 {
        return Err(Error::io(
            "posix_fadvise",
            path,
            std::io::Error::from_raw_os_error(rc),
        ));
    }
    Ok(())
}

/// Maps `file` read-only.
pub fn map_readonly(file: &File, path: &Path) -> Result<memmap2::Mmap> {
    // SAFETY: the map is read-only and ginex never modifies a finished store
    // file; another process truncating it could fault a later read (SIGBUS),
    // which is the documented hazard of the mmap baseline this serves.
    unsafe { memmap2::Mmap::map(file) }.map_err(|e| Error::io("mmap", path, e))
}
