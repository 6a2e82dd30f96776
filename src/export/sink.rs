//! The write side of the exporters: an output directory staged beside the
//! target and renamed into place at the end ([`ExportDir`]), plain files
//! and `.npy` arrays written through the storage seam
//! ([`crate::io::space::Metered`], so tests can fill the disk) and fsynced
//! by an explicit `finish`.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::io::durable::{fsync_dir, StagingDir};
use crate::io::space::Metered;

/// Buffer of every output file.
const WRITE_BUFFER: usize = 1 << 20;

/// Writes `buf` out through `write` and clears it once it holds
/// [`WRITE_BUFFER`] bytes or more (output assembled a block at a time);
/// true when it did.
pub fn flush_full(buf: &mut Vec<u8>, write: impl FnOnce(&[u8]) -> Result<()>) -> Result<bool> {
    if buf.len() < WRITE_BUFFER {
        return Ok(false);
    }
    write(buf)?;
    buf.clear();
    Ok(true)
}

/// An export being written: a staging directory that becomes `--out` on
/// [`ExportDir::commit`] and is removed if dropped before.
pub struct ExportDir {
    staging: StagingDir,
    subdirs: Vec<PathBuf>,
    bytes: u64,
    files: u64,
}

impl ExportDir {
    /// Stages an export for `target`, which must not exist.
    pub fn create(target: &Path) -> Result<Self> {
        Ok(ExportDir {
            staging: StagingDir::create(target)?,
            subdirs: Vec::new(),
            bytes: 0,
            files: 0,
        })
    }

    /// Creates the subdirectory `rel` (and its parents) in the staging dir.
    pub fn mkdir(&mut self, rel: &str) -> Result<()> {
        let p = self.staging.path().join(rel);
        std::fs::create_dir_all(&p).map_err(|e| Error::io("create directory", &p, e))?;
        self.subdirs.push(p);
        Ok(())
    }

    /// Creates the file `rel` in the staging directory.
    pub fn file(&self, rel: &str) -> Result<OutFile> {
        OutFile::create(&self.staging.path().join(rel))
    }

    /// Creates the `.npy` file `rel` for an array of `descr` and `shape`.
    pub fn npy(&self, rel: &str, descr: &'static str, shape: &[u64]) -> Result<NpyOut> {
        NpyOut::create(&self.staging.path().join(rel), descr, shape)
    }

    /// Records a finished file's size.
    pub fn add(&mut self, bytes: u64) {
        self.bytes += bytes;
        self.files += 1;
    }

    /// Writes the `.npy` file `rel` (`descr`, `shape`) with `fill`, then
    /// finishes and records it.
    pub fn write_npy(
        &mut self,
        rel: &str,
        descr: &'static str,
        shape: &[u64],
        fill: impl FnOnce(&mut NpyOut) -> Result<()>,
    ) -> Result<()> {
        let mut npy = self.npy(rel, descr, shape)?;
        fill(&mut npy)?;
        let bytes = npy.finish()?;
        self.add(bytes);
        Ok(())
    }

    /// Writes the file `rel` holding `parts` one after another, then
    /// finishes and records it.
    pub fn write_file(&mut self, rel: &str, parts: &[&[u8]]) -> Result<()> {
        let mut f = self.file(rel)?;
        for part in parts {
            f.write(part)?;
        }
        let bytes = f.finish()?;
        self.add(bytes);
        Ok(())
    }

    /// Records the files and bytes written in `report`, then commits
    /// ([`ExportDir::commit`]).
    pub fn commit_into(self, report: &mut crate::export::ExportReport) -> Result<PathBuf> {
        report.files = self.files();
        report.bytes_written = self.bytes();
        self.commit()
    }

    /// Bytes written so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Files written so far.
    pub fn files(&self) -> u64 {
        self.files
    }

    /// fsyncs every directory and renames the export into place.
    pub fn commit(self) -> Result<PathBuf> {
        for d in self.subdirs.iter().rev() {
            fsync_dir(d)?;
        }
        self.staging.commit()
    }
}

/// A plain output file.
pub struct OutFile {
    out: BufWriter<Metered<File>>,
    path: PathBuf,
    written: u64,
}

impl OutFile {
    /// Creates `path`, which must not exist.
    pub fn create(path: &Path) -> Result<Self> {
        let file = File::options()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| Error::io("create", path, e))?;
        Ok(OutFile {
            out: BufWriter::with_capacity(WRITE_BUFFER, Metered::new(file)),
            path: path.to_path_buf(),
            written: 0,
        })
    }

    /// Appends bytes.
    pub fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.written += bytes.len() as u64;
        self.out
            .write_all(bytes)
            .map_err(|e| Error::io("write", &self.path, e))
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flushes and fsyncs; returns the bytes written.
    pub fn finish(self) -> Result<u64> {
        let file = self
            .out
            .into_inner()
            .map_err(|e| Error::io("write", &self.path, e.into_error()))?
            .into_inner();
        file.sync_all()
            .map_err(|e| Error::io("fsync", &self.path, e))?;
        Ok(self.written)
    }
}

/// The header of a version 1.0 `.npy` file for a C-order array, padded so
/// that the data starts at a multiple of 64 bytes.
pub fn npy_header(descr: &str, shape: &[u64]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    let shape = match dims.as_slice() {
        [one] => format!("({one},)"),
        _ => format!("({})", dims.join(", ")),
    };
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    let unpadded = 10 + dict.len() + 1;
    let total = unpadded.div_ceil(64) * 64;
    let mut h = Vec::with_capacity(total);
    h.extend_from_slice(b"\x93NUMPY\x01\x00");
    h.extend_from_slice(&((total - 10) as u16).to_le_bytes());
    h.extend_from_slice(dict.as_bytes());
    h.resize(total - 1, b' ');
    h.push(b'\n');
    h
}

/// A `.npy` array whose shape is known up front; `finish` checks that
/// exactly that many bytes of data were written.
pub struct NpyOut {
    file: OutFile,
    data_bytes: u64,
    header_bytes: u64,
}

impl NpyOut {
    /// Creates `path` for an array of `descr` (e.g. `<f4`) and `shape`.
    pub fn create(path: &Path, descr: &'static str, shape: &[u64]) -> Result<Self> {
        let elem: u64 = descr
            .get(2..)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| Error::invalid_argument(format!("npy descr {descr:?}")))?;
        let mut file = OutFile::create(path)?;
        let header = npy_header(descr, shape);
        file.write(&header)?;
        Ok(NpyOut {
            file,
            data_bytes: shape.iter().product::<u64>() * elem,
            header_bytes: header.len() as u64,
        })
    }

    /// Appends little-endian element bytes.
    pub fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.file.write(bytes)
    }

    /// Checks the size, fsyncs and returns the file's bytes.
    pub fn finish(self) -> Result<u64> {
        let data = self.file.written - self.header_bytes;
        if data != self.data_bytes {
            return Err(Error::internal(format!(
                "{}: wrote {data} data bytes for an array of {} (an exporter bug)",
                self.file.path.display(),
                self.data_bytes
            )));
        }
        self.file.finish()
    }
}

/// Appends the decimal digits of `v`.
pub fn push_decimal(out: &mut Vec<u8>, mut v: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        if let Some(d) = digits.get_mut(i) {
            *d = b'0' + (v % 10) as u8;
        }
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(digits.get(i..).unwrap_or_default());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_header_is_padded_to_64_and_names_the_shape() {
        for shape in [&[5u64][..], &[3, 2], &[0, 7]] {
            let h = npy_header("<f4", shape);
            assert_eq!(h.len() % 64, 0);
            assert_eq!(&h[..8], b"\x93NUMPY\x01\x00");
            assert_eq!(u16::from_le_bytes([h[8], h[9]]) as usize + 10, h.len());
            assert_eq!(*h.last().unwrap(), b'\n');
        }
        let text = |h: Vec<u8>| String::from_utf8_lossy(&h[10..]).into_owned();
        let h = text(npy_header("<i8", &[5]));
        assert!(h.contains("'shape': (5,)"), "{h}");
        let h = text(npy_header("|b1", &[3, 2]));
        assert!(
            h.contains("'descr': '|b1'") && h.contains("'shape': (3, 2)"),
            "{h}"
        );
    }

    #[test]
    fn decimals() {
        let mut b = Vec::new();
        for v in [0u64, 7, 10, 12345, u64::MAX] {
            b.clear();
            push_decimal(&mut b, v);
            assert_eq!(b, v.to_string().as_bytes());
        }
    }
}
