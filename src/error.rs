//! The library's one error type.
//!
//! Every variant carries the context a user needs to act: the file, the
//! position inside it and the reason. The binaries print it and exit non-zero
//! (`ginex_cli::finish`); the library never panics on bad input.

use std::path::{Path, PathBuf};

/// Result alias used throughout the library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in ginex.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system I/O call failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// What we were doing (`open`, `read`, `fsync`, …).
        op: &'static str,
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// A positional read failed (an I/O error from the device or kernel).
    #[error("{path}: read of {len} bytes at offset {offset} failed: {source}")]
    ReadFailed {
        /// The file read.
        path: PathBuf,
        /// Byte offset of the read.
        offset: u64,
        /// Bytes asked for.
        len: u64,
        /// The error (`-errno` from io_uring or pread).
        #[source]
        source: std::io::Error,
    },

    /// A file's bytes do not describe a valid structure.
    #[error("{path}: corrupt at byte offset {offset}: {what}")]
    Corrupt {
        /// The damaged file.
        path: PathBuf,
        /// Byte offset of the damage (or of the structure that is damaged).
        offset: u64,
        /// What is wrong.
        what: String,
    },

    /// A checksum over a region did not match.
    #[error(
        "{path}: checksum mismatch in {region} at byte offset {offset}: stored {expected:#010x}, computed {got:#010x} (the file is damaged; rebuild or restore it)"
    )]
    ChecksumMismatch {
        /// The damaged file.
        path: PathBuf,
        /// Which region (`header`, `payload`, `page 12`, `segment 3`, …).
        region: String,
        /// Byte offset where the region starts.
        offset: u64,
        /// Checksum stored in the file.
        expected: u32,
        /// Checksum computed from the bytes read.
        got: u32,
    },

    /// A file was written by a format version this build cannot read.
    #[error(
        "{path}: format version {found} is not supported by this build (supported: {supported}); use a ginex release that reads it, or re-import the data"
    )]
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// `major.minor` found in the file.
        found: String,
        /// The range this build reads, e.g. `1.0..=1.0`.
        supported: String,
    },

    /// User-supplied input (a dataset file, a flag value) is invalid.
    #[error("{source_file}{}: {reason}", line.map(|l| format!(":{l}")).unwrap_or_default())]
    InvalidInput {
        /// The input file.
        source_file: PathBuf,
        /// 1-based line (text inputs) or element index, when known.
        line: Option<u64>,
        /// What is wrong and, where possible, what to do.
        reason: String,
    },

    /// A command-line value or API argument is invalid: the caller's
    /// input, never damaged data ([`Error::Corrupt`]) or a bug
    /// ([`Error::Internal`]).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// Memory could not be allocated: the machine, or the process's memory
    /// limit, cannot give the bytes asked for (lower `--memory` or the
    /// cache sizes).
    #[error("{0}")]
    OutOfMemory(String),

    /// A broken internal invariant or a worker thread that panicked: a bug
    /// in ginex, not a fault of the input or the arguments.
    #[error("internal error: {0} (a bug in ginex; please report it)")]
    Internal(String),

    /// A caller asked for something that does not exist or is out of range.
    #[error("{0}")]
    OutOfRange(String),

    /// The consumer of a running epoch stopped it (a dropped
    /// [`Loader`](crate::Loader)); the epoch's runtime files are removed.
    #[error("cancelled: {0}")]
    Cancelled(String),

    /// The target of a create operation already exists.
    #[error("{path} already exists; choose another path or remove it first")]
    AlreadyExists {
        /// The path that exists.
        path: PathBuf,
    },
}

impl Error {
    /// Checks that an output buffer of `len` `unit`s (bytes, values) holds
    /// exactly `rows` rows of `per_row` each, the contract of every
    /// feature-row reader.
    #[doc(hidden)]
    pub fn check_output_len(len: usize, rows: usize, per_row: usize, unit: &str) -> Result<()> {
        if len != rows * per_row {
            return Err(Error::OutOfRange(format!(
                "output holds {len} {unit}, {rows} rows need {}",
                rows * per_row
            )));
        }
        Ok(())
    }

    /// Threads that could not be started (`what`: "4 sampling workers"):
    /// the machine's or the process's thread or memory limit, not the
    /// caller's argument.
    pub fn threads(what: &str, source: impl std::fmt::Display) -> Self {
        Error::OutOfMemory(format!(
            "cannot start {what}: {source} (the machine's or this process's limit on threads or memory)"
        ))
    }

    /// Wraps an `io::Error` with the operation and path it came from.
    pub fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            op,
            path: path.into(),
            source,
        }
    }

    /// A structural corruption at `offset` in `path`.
    pub fn corrupt(path: impl Into<PathBuf>, offset: u64, what: impl Into<String>) -> Self {
        Error::Corrupt {
            path: path.into(),
            offset,
            what: what.into(),
        }
    }

    /// An invalid command-line argument.
    pub fn invalid_argument(reason: impl Into<String>) -> Self {
        Error::InvalidArgument(reason.into())
    }

    /// A broken internal invariant (or a panicked worker thread).
    pub fn internal(what: impl Into<String>) -> Self {
        Error::Internal(what.into())
    }

    /// Ok when a region's stored checksum `expected` equals the one
    /// computed, `got`; else [`Error::ChecksumMismatch`] naming the file,
    /// the region and where it starts (the region's name is formatted
    /// only then: pass `format_args!`). Every CRC comparison of the
    /// library goes through here.
    pub(crate) fn check_crc(
        path: &Path,
        region: impl std::fmt::Display,
        offset: u64,
        expected: u32,
        got: u32,
    ) -> Result<()> {
        if got == expected {
            return Ok(());
        }
        Err(Error::ChecksumMismatch {
            path: path.to_path_buf(),
            region: region.to_string(),
            offset,
            expected,
            got,
        })
    }

    /// Parses a command-line name into one of `all` (the value whose
    /// `name` it is); an unknown name is an invalid argument that lists
    /// every choice: `unknown WHAT "s"; use a, b or c`.
    pub(crate) fn parse_name<T: Copy>(
        s: &str,
        what: &str,
        all: &[T],
        name: impl Fn(T) -> &'static str,
    ) -> Result<T> {
        if let Some(v) = all.iter().copied().find(|&v| name(v) == s) {
            return Ok(v);
        }
        let names: Vec<&str> = all.iter().map(|&v| name(v)).collect();
        let list = match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => names.concat(),
        };
        Err(Error::invalid_argument(format!(
            "unknown {what} {s:?}; use {list}"
        )))
    }

    /// The payload decoders in `crate::format` report offsets within the
    /// payload; this turns such an error into one at a file offset, given
    /// where the payload starts. Other errors pass unchanged.
    #[doc(hidden)]
    pub fn in_payload_at(self, payload_start: u64) -> Self {
        match self {
            Error::Corrupt { path, offset, what } => Error::Corrupt {
                path,
                offset: offset.saturating_add(payload_start),
                what,
            },
            other => other,
        }
    }
}
