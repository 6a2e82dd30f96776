//! A small `.npy` writer (format version 1.0) for raw exports. The header
//! has a fixed size so the shape can be patched after streaming the data.

use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Total bytes of the header we write (magic through padding), a multiple of 64.
const HEADER_TOTAL: usize = 128;

/// Streams the elements of a C-order array into a `.npy` file.
pub struct NpyWriter {
    out: BufWriter<File>,
    path: PathBuf,
    descr: &'static str,
    row_shape: Vec<u64>,
    elems: u64,
}

impl NpyWriter {
    /// Creates `path` for an array whose dtype is `descr` (e.g. `<f4`) and
    /// whose shape is `(rows, *row_shape)`, with `rows` given by the
    /// number of elements written when finished.
    pub fn create(path: &Path, descr: &'static str, row_shape: &[u64]) -> Result<Self> {
        let file = File::options()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| Error::io("create", path, e))?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        out.write_all(&[0u8; HEADER_TOTAL])
            .map_err(|e| Error::io("write", path, e))?;
        Ok(NpyWriter {
            out,
            path: path.to_path_buf(),
            descr,
            row_shape: row_shape.to_vec(),
            elems: 0,
        })
    }

    /// Appends raw little-endian element bytes.
    pub fn write(&mut self, bytes: &[u8], elements: u64) -> Result<()> {
        self.elems += elements;
        self.out
            .write_all(bytes)
            .map_err(|e| Error::io("write", &self.path, e))
    }

    /// Writes the header with the final shape and fsyncs.
    pub fn finish(self) -> Result<()> {
        let per_row: u64 = self.row_shape.iter().product::<u64>().max(1);
        let rows = self.elems / per_row;
        let mut shape = format!("({rows},");
        for d in &self.row_shape {
            shape.push_str(&format!(" {d},"));
        }
        if !self.row_shape.is_empty() {
            shape.pop();
        }
        shape.push(')');
        let dict = format!(
            "{{'descr': '{}', 'fortran_order': False, 'shape': {shape}, }}",
            self.descr
        );
        let mut header = Vec::with_capacity(HEADER_TOTAL);
        header.extend_from_slice(b"\x93NUMPY\x01\x00");
        header.extend_from_slice(&((HEADER_TOTAL - 10) as u16).to_le_bytes());
        header.extend_from_slice(dict.as_bytes());
        if header.len() >= HEADER_TOTAL {
            return Err(Error::invalid_argument(format!(
                "npy header for shape {shape} is too long"
            )));
        }
        header.resize(HEADER_TOTAL - 1, b' ');
        header.push(b'\n');
        let mut file = self
            .out
            .into_inner()
            .map_err(|e| Error::io("write", &self.path, e.into_error()))?;
        file.seek(SeekFrom::Start(0))
            .map_err(|e| Error::io("seek", &self.path, e))?;
        file.write_all(&header)
            .map_err(|e| Error::io("write", &self.path, e))?;
        file.sync_all()
            .map_err(|e| Error::io("fsync", &self.path, e))
    }
}

/// Writes a whole 1-D `<i8` array.
pub fn write_i64_array(path: &Path, values: &[i64]) -> Result<()> {
    let mut w = NpyWriter::create(path, "<i8", &[])?;
    let mut bytes = Vec::with_capacity(values.len() * 8);
    for v in values {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    w.write(&bytes, values.len() as u64)?;
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_numpy_v1_with_patched_shape() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.npy");
        let mut w = NpyWriter::create(&p, "<i4", &[2]).unwrap();
        w.write(&[1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0], 4)
            .unwrap();
        w.finish().unwrap();
        let b = std::fs::read(&p).unwrap();
        assert_eq!(&b[..8], b"\x93NUMPY\x01\x00");
        assert_eq!(u16::from_le_bytes([b[8], b[9]]) as usize + 10, HEADER_TOTAL);
        let header = std::str::from_utf8(&b[10..HEADER_TOTAL]).unwrap();
        assert!(header.contains("'shape': (2, 2)"), "{header}");
        assert!(header.ends_with('\n'));
        assert_eq!(b.len(), HEADER_TOTAL + 16);
    }
}
