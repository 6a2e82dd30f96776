//! Writing one checksummed file: header placeholder, streamed payload whose
//! CRC is computed as bytes go out, then an explicit [`finish`] that writes
//! the real header and fsyncs. The writer owns the file it created:
//! dropping it without `finish`, or a failed `finish`, removes that file
//! (and only that file: `create` refuses a path that exists).
//!
//! [`finish`]: ChecksummedWriter::finish

use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::Path;

use crate::error::{Error, Result};
use crate::format::header::{FileHeader, FileKind};
use crate::format::version::Version;
use crate::io::durable::CreatedFile;
use crate::io::space::Metered;

/// Buffer size of the payload writer.
const WRITE_BUFFER: usize = 1 << 20;

/// A file being written: header placeholder, then the payload.
pub struct ChecksummedWriter {
    out: BufWriter<Metered<File>>,
    /// Dropped after `out`, so the file is closed before it is removed.
    created: CreatedFile,
    kind: FileKind,
    version: Version,
    hasher: crc32fast::Hasher,
    payload_len: u64,
    /// Bytes [`finish`](Self::finish) writes right after the common header,
    /// inside the header (the `features.pages` layout record).
    header_extra: Vec<u8>,
}

impl ChecksummedWriter {
    /// Creates `path` (which must not exist) for a file of `kind`, written
    /// as the version that kind is written with.
    pub fn create(path: &Path, kind: FileKind) -> Result<Self> {
        Self::create_as(path, kind, kind.written_version())
    }

    /// [`create`](Self::create) for a file whose content needs `version`
    /// (a runtime file with per-relation fanouts is 1.4).
    pub fn create_as(path: &Path, kind: FileKind, version: Version) -> Result<Self> {
        let file = File::options()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| Error::io("create", path, e))?;
        let created = CreatedFile::created(path);
        let mut out = BufWriter::with_capacity(WRITE_BUFFER, Metered::new(file));
        out.write_all(&vec![0u8; kind.header_len() as usize])
            .map_err(|e| Error::io("write", path, e))?;
        Ok(ChecksummedWriter {
            out,
            created,
            kind,
            version,
            hasher: crc32fast::Hasher::new(),
            payload_len: 0,
            header_extra: Vec::new(),
        })
    }

    /// Bytes to write after the common header, inside this kind's header
    /// (at most its header length less the common header's 64 bytes).
    pub fn set_header_extra(&mut self, bytes: &[u8]) -> Result<()> {
        let room = self.kind.header_len() as usize - crate::format::header::HEADER_SIZE;
        if bytes.len() > room {
            return Err(Error::internal(format!(
                "{} header bytes after the common header; a {} header has room for {room}",
                bytes.len(),
                self.kind.name()
            )));
        }
        self.header_extra = bytes.to_vec();
        Ok(())
    }

    /// Appends payload bytes.
    pub fn write_payload(&mut self, bytes: &[u8]) -> Result<()> {
        self.hasher.update(bytes);
        self.payload_len += bytes.len() as u64;
        self.out
            .write_all(bytes)
            .map_err(|e| Error::io("write", self.created.path(), e))
    }

    /// Payload bytes written so far.
    pub fn payload_len(&self) -> u64 {
        self.payload_len
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        self.created.path()
    }

    /// Writes the header, fsyncs the file and returns the header.
    pub fn finish(self) -> Result<FileHeader> {
        let ChecksummedWriter {
            out,
            created,
            kind,
            version,
            hasher,
            payload_len,
            header_extra,
        } = self;
        let path = created.path().to_path_buf();
        let header = FileHeader {
            version,
            ..FileHeader::new(kind, payload_len, hasher.finalize())
        };
        let mut file = out
            .into_inner()
            .map_err(|e| Error::io("write", &path, e.into_error()))?
            // The header overwrites the placeholder, so it takes no new space.
            .into_inner();
        file.seek(SeekFrom::Start(0))
            .map_err(|e| Error::io("seek", &path, e))?;
        file.write_all(&header.encode())
            .and_then(|()| file.write_all(&header_extra))
            .map_err(|e| Error::io("write", &path, e))?;
        file.sync_all().map_err(|e| Error::io("fsync", &path, e))?;
        drop(file);
        created.keep();
        Ok(header)
    }
}

/// Writes a whole small file in one call.
pub fn write_file(path: &Path, kind: FileKind, payload: &[u8]) -> Result<FileHeader> {
    write_file_as(path, kind, kind.written_version(), payload)
}

/// [`write_file`] for a file whose content needs `version` (a schema of
/// per-type layouts is 1.5).
pub fn write_file_as(
    path: &Path,
    kind: FileKind,
    version: Version,
    payload: &[u8],
) -> Result<FileHeader> {
    let mut w = ChecksummedWriter::create_as(path, kind, version)?;
    w.write_payload(payload)?;
    w.finish()
}
