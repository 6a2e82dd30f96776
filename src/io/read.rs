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
