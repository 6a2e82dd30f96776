//! A small `.npy` writer (format version 1.0) for raw exports. The header
//! has a fixed size so the shape can be patched after streaming the data.

use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::io::durable::{atomic_temporary_name, fsync_dir, write_atomic, CreatedFile};
use crate::io::space::Metered;

/// Total bytes of the header we write (magic through padding), a multiple of 64.
const HEADER_TOTAL: usize = 128;

/// Streams the elements of a C-order array into a `.npy` file.
pub struct NpyWriter {
    out: BufWriter<Metered<File>>,
    path: PathBuf,
    descr: &'static str,
    row_shape: Vec<u64>,
    elems: u64,
    /// For [`create_output`](Self::create_output): the temporary file
    /// written (removed unless finished) and the name it is renamed to.
    output: Option<(CreatedFile, PathBuf)>,
}

impl NpyWriter {
    /// A user-named output file (`ginex predict --out`): written to a
    /// temporary beside `path` and renamed onto it by
    /// [`finish`](Self::finish), so `path` is a complete array or absent
    /// (an existing file is replaced only by a complete one); a failure
    /// or a writer dropped unfinished removes the temporary.
    pub fn create_output(path: &Path, descr: &'static str, row_shape: &[u64]) -> Result<Self> {
        let tmp = output_temporary(path)?;
        let mut w = Self::create(&tmp, descr, row_shape)?;
        w.output = Some((CreatedFile::created(&tmp), path.to_path_buf()));
        Ok(w)
    }

    /// Creates `path` for an array whose dtype is `descr` (e.g. `<f4`) and
    /// whose shape is `(rows, *row_shape)`, with `rows` given by the
    /// number of elements written when finished.
    pub fn create(path: &Path, descr: &'static str, row_shape: &[u64]) -> Result<Self> {
        let file = File::options()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| Error::io("create", path, e))?;
        // The placeholder's write happens under `created`, so a failed
        // one removes the file it created.
        let created = CreatedFile::created(path);
        let mut out = BufWriter::with_capacity(1 << 20, Metered::new(file));
        out.write_all(&[0u8; HEADER_TOTAL])
            .map_err(|e| Error::io("write", path, e))?;
        created.keep();
        Ok(NpyWriter {
            out,
            path: path.to_path_buf(),
            descr,
            row_shape: row_shape.to_vec(),
            elems: 0,
            output: None,
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
            .map_err(|e| Error::io("write", &self.path, e.into_error()))?
            // The header overwrites the placeholder: no new space.
            .into_inner();
        file.seek(SeekFrom::Start(0))
            .map_err(|e| Error::io("seek", &self.path, e))?;
        file.write_all(&header)
            .map_err(|e| Error::io("write", &self.path, e))?;
        file.sync_all()
            .map_err(|e| Error::io("fsync", &self.path, e))?;
        drop(file);
        if let Some((created, target)) = self.output {
            std::fs::rename(&self.path, &target).map_err(|e| Error::io("rename", &target, e))?;
            created.keep();
            if let Some(dir) = target.parent().filter(|d| !d.as_os_str().is_empty()) {
                fsync_dir(dir)?;
            }
        }
        Ok(())
    }
}

/// A temporary file name beside the output `path` (same directory, so the
/// rename is atomic): `.NAME.tmp-PID-NANOS-N`.
fn output_temporary(path: &Path) -> Result<PathBuf> {
    let name = path
        .file_name()
        .ok_or_else(|| Error::invalid_argument(format!("{} has no file name", path.display())))?;
    let tmp = atomic_temporary_name(&name.to_string_lossy());
    Ok(path.with_file_name(tmp))
}

/// Writes the user-named output file `path` (a report, a plot, an SVG)
/// whole or not at all: `write` fills a temporary beside it (writes are
/// charged to the storage seam's disk budget, so a full disk is
/// simulated), which is fsynced and renamed onto `path`; on any failure
/// the temporary is removed and `path` is left as it was.
pub fn write_output(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let name = path
        .file_name()
        .ok_or_else(|| Error::invalid_argument(format!("{} has no file name", path.display())))?
        .to_string_lossy()
        .into_owned();
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    write_atomic(dir, &name, |tmp| {
        let file = File::options()
            .write(true)
            .create_new(true)
            .open(tmp)
            .map_err(|e| Error::io("create", tmp, e))?;
        let mut out = BufWriter::new(Metered::new(file));
        write(&mut out)
            .and_then(|()| out.flush())
            .map_err(|e| Error::io("write", tmp, e))
    })
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
