//! Edge lists as text: CSV, TSV or whitespace-separated, optionally gzip
//! (multi-member) compressed, with `#`/`%` comment lines (SNAP, Matrix
//! Market style), blank lines, CRLF line ends, a UTF-8 BOM and one optional
//! header line. Every error names the file and the 1-based line.
//!
//! Every line is read with a bound: a line longer than [`MAX_LINE`] bytes
//! (after decompression) is an error naming the file, the line and the
//! byte offset where it starts, raised as soon as the bound is crossed, so
//! a file without newlines (`/dev/zero`, a gzip bomb of digits) never
//! makes the reader buffer more than [`MAX_LINE`] bytes.
#![deny(clippy::unwrap_used, clippy::indexing_slicing)]

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The longest line any text reader accepts (1 MiB, newline included).
pub const MAX_LINE: usize = 1 << 20;

/// What [`read_line_bounded`] found.
enum LineRead {
    /// End of input.
    Eof,
    /// A line of this many bytes (newline included) is in the buffer.
    Line(usize),
    /// The line is longer than the bound; reading stopped at the bound.
    TooLong,
}

/// Reads one line (through `\n`) into `buf` (cleared first), stopping
/// as soon as it would exceed `max` bytes.
fn read_line_bounded(
    r: &mut dyn BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<LineRead> {
    buf.clear();
    loop {
        let avail = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if avail.is_empty() {
            return Ok(if buf.is_empty() {
                LineRead::Eof
            } else {
                LineRead::Line(buf.len())
            });
        }
        let (used, done) = match avail.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (avail.len(), false),
        };
        if buf.len() + used > max {
            return Ok(LineRead::TooLong);
        }
        buf.extend_from_slice(avail.get(..used).unwrap_or_default());
        r.consume(used);
        if done {
            return Ok(LineRead::Line(buf.len()));
        }
    }
}

/// The error for a line longer than [`MAX_LINE`] starting at byte `offset`.
fn too_long(path: &Path, line: u64, offset: u64) -> Error {
    let compressed = path.extension().is_some_and(|e| e == "gz");
    Error::InvalidInput {
        source_file: path.to_path_buf(),
        line: Some(line),
        reason: format!(
            "byte {offset}{}: the line is longer than the {} MiB limit (MAX_LINE); is this a text file with one record per line?",
            if compressed { " of the decompressed text" } else { "" },
            MAX_LINE >> 20
        ),
    }
}

/// Field separator of a text edge list, detected on its first data line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Delimiter {
    Comma,
    Tab,
    Whitespace,
    Other(char),
}

/// Streams `(src, dst)` pairs from a text edge list.
pub struct TextEdges {
    lines: Lines,
    delimiter: Option<Delimiter>,
    /// The delimiter was given ([`TextEdges::with_delimiter`]), not detected.
    fixed: bool,
    seen_data: bool,
    /// The line number of the one header line skipped, if any.
    header: Option<u64>,
    /// Lines of three fields (`src dst weight`) whose third was dropped,
    /// and the first of them.
    weights: (u64, u64),
}

impl TextEdges {
    /// Opens `path` (`.gz` is decompressed).
    pub fn open(path: &Path) -> Result<Self> {
        Ok(Self::from_reader(open_reader(path)?, path))
    }

    /// Reads edges from `reader`; `path` names it in errors.
    pub fn from_reader(reader: Box<dyn BufRead>, path: &Path) -> Self {
        TextEdges {
            lines: Lines::from_reader(reader, path),
            delimiter: None,
            fixed: false,
            seen_data: false,
            header: None,
            weights: (0, 0),
        }
    }

    /// The 1-based number of the line last read.
    pub fn line(&self) -> u64 {
        self.lines.line_no
    }

    /// How many lines had a third field (an edge weight, dropped: the store
    /// holds no weights), and the first such line; `None` when none had.
    pub fn dropped_weights(&self) -> Option<(u64, u64)> {
        (self.weights.0 > 0).then_some(self.weights)
    }

    /// Fixes the delimiter instead of detecting it (DGL's `csv` format
    /// names one): `,`, a tab, a space (any run of whitespace) or another
    /// single character.
    pub fn with_delimiter(mut self, d: u8) -> Self {
        self.delimiter = Some(match d {
            b',' => Delimiter::Comma,
            b'\t' => Delimiter::Tab,
            b' ' => Delimiter::Whitespace,
            other => Delimiter::Other(char::from(other)),
        });
        self.fixed = true;
        self
    }

    fn bad(&self, reason: String) -> Error {
        self.lines.bad(reason)
    }

    /// The next edge, or `None` at the end of the file. A line that does
    /// not parse in a gzip file is first blamed on the stream: when the
    /// rest of it does not decompress (a damaged middle decodes to garbage
    /// until its checksum), the error says the gzip stream is corrupt.
    pub fn next_edge(&mut self) -> Result<Option<(i128, i128)>> {
        match self.parse_next_edge() {
            Err(e @ Error::InvalidInput { .. }) => Err(self.lines.blame_gzip(e)),
            r => r,
        }
    }

    fn parse_next_edge(&mut self) -> Result<Option<(i128, i128)>> {
        loop {
            if !self.lines.advance()? {
                return Ok(None);
            }
            let bytes = self.lines.raw().trim_ascii();
            // The common line, `id<d>id` in plain digits, without allocating.
            if let Some(d) = self.delimiter.and_then(Delimiter::byte) {
                if let Some(pair) = plain_pair(bytes, d) {
                    self.seen_data = true;
                    return Ok(Some(pair));
                }
            }
            let Ok(text) = std::str::from_utf8(bytes) else {
                return Err(self.bad("the line is not valid UTF-8 text".into()));
            };
            let text = text.trim();
            if text.is_empty() || text.starts_with('#') || text.starts_with('%') {
                continue;
            }
            let delimiter = match self.delimiter {
                Some(d) => d,
                None => {
                    let d = if text.contains(',') {
                        Delimiter::Comma
                    } else if text.contains('\t') {
                        Delimiter::Tab
                    } else {
                        Delimiter::Whitespace
                    };
                    self.delimiter = Some(d);
                    d
                }
            };
            let mixed = match delimiter {
                Delimiter::Comma => text.contains('\t'),
                Delimiter::Tab | Delimiter::Whitespace => text.contains(','),
                Delimiter::Other(c) => !text.contains(c) && text.contains([',', '\t', ' ']),
            };
            if mixed {
                return Err(self.bad(format!(
                    "{} mixes delimiters; the file's first data line uses `{}`",
                    preview(text),
                    sep(delimiter)
                )));
            }
            let fields: Vec<&str> = match delimiter {
                Delimiter::Comma => text.split(',').map(str::trim).collect(),
                Delimiter::Tab => text.split('\t').map(str::trim).collect(),
                Delimiter::Whitespace => text.split_whitespace().collect(),
                Delimiter::Other(c) => text.split(c).map(str::trim).collect(),
            };
            let parsed: Vec<Option<i128>> = fields.iter().map(|f| f.parse::<i128>().ok()).collect();
            match parsed.as_slice() {
                [Some(s), Some(d)] => {
                    self.seen_data = true;
                    return Ok(Some((*s, *d)));
                }
                [Some(s), Some(d), _] => {
                    // `src dst weight`: the weight is dropped (the store
                    // holds no weights); the import says so.
                    self.seen_data = true;
                    if self.weights.0 == 0 {
                        self.weights.1 = self.lines.line_no;
                    }
                    self.weights.0 += 1;
                    return Ok(Some((*s, *d)));
                }
                _ if !self.seen_data
                    && self.header.is_none()
                    && parsed.iter().all(Option::is_none) =>
                {
                    // The one header line; the delimiter is detected
                    // again on the first data line.
                    self.header = Some(self.lines.line_no);
                    if !self.fixed {
                        self.delimiter = None;
                    }
                    continue;
                }
                _ if !self.seen_data && parsed.iter().all(Option::is_none) => {
                    return Err(self.bad(format!(
                        "{}: the first data line has no integer fields (split at `{}`, the delimiter detected on this line); line {} was already taken as the one header line allowed",
                        preview(text),
                        sep(delimiter),
                        self.header.unwrap_or_default()
                    )))
                }
                [_] => {
                    return Err(self.bad(format!(
                        "{} has one field; expected `src{}dst`",
                        preview(text),
                        sep(delimiter)
                    )))
                }
                _ if parsed.len() > 3 => {
                    return Err(self.bad(format!(
                        "{} has {} fields; expected `src{}dst`",
                        preview(text),
                        parsed.len(),
                        sep(delimiter)
                    )))
                }
                _ => {
                    return Err(self.bad(format!(
                        "{}: node ids must be integers",
                        preview(text)
                    )))
                }
            }
        }
    }
}

impl Delimiter {
    /// The single byte that separates the fields of a well-formed line
    /// (`None` for a multi-byte character).
    fn byte(self) -> Option<u8> {
        match self {
            Delimiter::Comma => Some(b','),
            Delimiter::Tab => Some(b'\t'),
            Delimiter::Whitespace => Some(b' '),
            Delimiter::Other(c) => u8::try_from(c).ok().filter(u8::is_ascii),
        }
    }
}

/// `a<d>b` with `a` and `b` plain decimal integers (an optional `-`, digits
/// only): the common line, parsed without allocating. `None` leaves the
/// line to the general parser (padding around fields, a weight column, a
/// header, a bad line and its error message).
fn plain_pair(line: &[u8], delimiter: u8) -> Option<(i128, i128)> {
    let cut = line.iter().position(|&b| b == delimiter)?;
    Some((
        plain_int(line.get(..cut)?)?,
        plain_int(line.get(cut + 1..)?)?,
    ))
}

/// A plain decimal integer of at most 38 digits (always fits an `i128`).
fn plain_int(s: &[u8]) -> Option<i128> {
    let (negative, digits) = match s {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, s),
    };
    if digits.is_empty() || digits.len() > 38 {
        return None;
    }
    let mut v: i128 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + i128::from(c - b'0');
    }
    Some(if negative { -v } else { v })
}

/// `text` quoted, cut to 80 characters for messages.
fn preview(text: &str) -> String {
    match text.char_indices().nth(80) {
        Some((cut, _)) => format!(
            "{:?}… ({} bytes)",
            text.get(..cut).unwrap_or_default(),
            text.len()
        ),
        None => format!("{text:?}"),
    }
}

fn sep(d: Delimiter) -> String {
    match d {
        Delimiter::Comma => ",".into(),
        Delimiter::Tab => "\\t".into(),
        Delimiter::Whitespace => " ".into(),
        Delimiter::Other(c) => c.to_string(),
    }
}

/// A read error at 1-based `line` of `path`: bad UTF-8 (`read_line`) and a
/// truncated gzip stream are input errors; anything else is I/O.
fn read_error(path: &Path, line: u64, e: std::io::Error) -> Error {
    if let Some(g) = e.get_ref().and_then(|g| g.downcast_ref::<GzipCorrupt>()) {
        return Error::InvalidInput {
            source_file: path.to_path_buf(),
            line: Some(line),
            reason: g.to_string(),
        };
    }
    let reason = match e.kind() {
        std::io::ErrorKind::InvalidData => "the file is not valid UTF-8 text",
        std::io::ErrorKind::UnexpectedEof => "the compressed stream is truncated",
        _ => return Error::io("read", path, e),
    };
    Error::InvalidInput {
        source_file: path.to_path_buf(),
        line: Some(line),
        reason: reason.into(),
    }
}

/// Whether `path` is read through gzip (`.gz`).
fn is_gzip(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "gz")
}

/// Opens `path` for line reading, decompressing `.gz` (multi-member). A
/// `.npy.gz` / `.npz.gz` is refused: a binary array inside gzip is not
/// text, and the array readers read uncompressed files only.
fn open_reader(path: &Path) -> Result<Box<dyn BufRead>> {
    let name = path.file_name().map(|n| n.to_string_lossy().to_lowercase());
    if let Some(inner) = name.as_deref().and_then(|n| {
        [".npy.gz", ".npz.gz"]
            .into_iter()
            .find(|suffix| n.ends_with(suffix))
    }) {
        return Err(Error::InvalidInput {
            source_file: path.to_path_buf(),
            line: None,
            reason: format!(
                "a {} array inside gzip is not supported: decompress it first (gunzip -k {}) and pass the {} file",
                inner.trim_end_matches(".gz"),
                path.display(),
                inner.trim_end_matches(".gz")
            ),
        });
    }
    let file = File::open(path).map_err(|e| Error::io("open", path, e))?;
    let raw: Box<dyn Read> = if is_gzip(path) {
        Box::new(GzipReader::new(file))
    } else {
        Box::new(file)
    };
    Ok(Box::new(BufReader::with_capacity(1 << 20, raw)))
}

/// A damaged gzip stream: the decoder's error and how far into the
/// compressed file it had read.
#[derive(Debug)]
struct GzipCorrupt {
    /// Compressed bytes consumed when the decoder failed.
    compressed_offset: u64,
    /// The decoder's message.
    what: String,
}

impl std::fmt::Display for GzipCorrupt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the gzip stream is corrupt ({}; detected by compressed byte {}): the file is damaged, recompress it from its source",
            self.what, self.compressed_offset
        )
    }
}

impl std::error::Error for GzipCorrupt {}

/// Counts the bytes read through it (the compressed position).
struct Counting<R> {
    inner: R,
    read: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read
            .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
}

/// A multi-member gzip decoder whose corruption errors are [`GzipCorrupt`]
/// (a truncated stream stays `UnexpectedEof`: "truncated").
struct GzipReader {
    decoder: flate2::read::MultiGzDecoder<Counting<File>>,
    read: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl GzipReader {
    fn new(file: File) -> Self {
        let read = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        GzipReader {
            decoder: flate2::read::MultiGzDecoder::new(Counting {
                inner: file,
                read: read.clone(),
            }),
            read,
        }
    }
}

impl Read for GzipReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.decoder.read(buf).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::Interrupted => e,
            // The decoder reports a bad deflate stream or a checksum
            // mismatch as InvalidInput / InvalidData; I/O errors of the
            // file are passed on as they are.
            std::io::ErrorKind::InvalidInput | std::io::ErrorKind::InvalidData => {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    GzipCorrupt {
                        compressed_offset: self.read.load(std::sync::atomic::Ordering::Relaxed),
                        what: e.to_string(),
                    },
                )
            }
            _ => e,
        })
    }
}

/// Most decompressed bytes [`Lines::blame_gzip`] reads past a bad line to
/// find the stream's own error (1 GiB, a few seconds; a damaged deflate
/// stream usually fails within a block, at the latest at its member's
/// CRC): beyond it the line's error stands.
const MAX_BLAME_READ: u64 = 1 << 30;

/// Line-by-line reading with the noise of real files removed: BOM, CRLF,
/// blank lines and `#`/`%` comments skipped; every error names the file
/// and the 1-based line.
pub struct Lines {
    reader: Box<dyn BufRead>,
    path: PathBuf,
    line_no: u64,
    /// Byte offset (of the decompressed text) where the next line starts.
    offset: u64,
    buf: Vec<u8>,
    /// The text is decompressed gzip ([`Lines::blame_gzip`]).
    gzip: bool,
}

impl Lines {
    /// Opens `path` (`.gz` decompressed).
    pub fn open(path: &Path) -> Result<Self> {
        Ok(Self::from_reader(open_reader(path)?, path))
    }

    /// Reads lines from `reader`; `path` names it in errors.
    pub fn from_reader(reader: Box<dyn BufRead>, path: &Path) -> Self {
        Lines {
            reader,
            path: path.to_path_buf(),
            line_no: 0,
            offset: 0,
            buf: Vec::new(),
            gzip: is_gzip(path),
        }
    }

    /// `e`, a bad line of a gzip file, or the stream's own corruption when
    /// the rest of the stream does not decompress: a damaged middle
    /// decodes to garbage lines until the decoder notices. Reads on (at
    /// most [`MAX_BLAME_READ`] bytes) only on this error path.
    pub fn blame_gzip(&mut self, e: Error) -> Error {
        if !self.gzip || e.to_string().contains("gzip stream is corrupt") {
            return e;
        }
        let mut rest = (&mut *self.reader).take(MAX_BLAME_READ);
        match std::io::copy(&mut rest, &mut std::io::sink()) {
            Err(io) => match io.get_ref().and_then(|g| g.downcast_ref::<GzipCorrupt>()) {
                Some(g) => {
                    let said = match &e {
                        Error::InvalidInput { reason, .. } => reason.clone(),
                        other => other.to_string(),
                    };
                    Error::InvalidInput {
                        source_file: self.path.clone(),
                        line: Some(self.line_no),
                        reason: format!(
                            "{g} (this line, damaged text decoded from it, read as: {said})"
                        ),
                    }
                }
                None => e,
            },
            Ok(_) => e,
        }
    }

    /// The 1-based number of the line last read.
    pub fn line(&self) -> u64 {
        self.line_no
    }

    /// An error at the current line.
    pub fn bad(&self, reason: impl Into<String>) -> Error {
        Error::InvalidInput {
            source_file: self.path.clone(),
            line: Some(self.line_no),
            reason: reason.into(),
        }
    }

    /// Reads the next line, whatever it holds, into the buffer; false at
    /// the end of the file.
    fn advance(&mut self) -> Result<bool> {
        let read = read_line_bounded(&mut *self.reader, &mut self.buf, MAX_LINE)
            .map_err(|e| read_error(&self.path, self.line_no + 1, e))?;
        let n = match read {
            LineRead::Eof => return Ok(false),
            LineRead::TooLong => return Err(too_long(&self.path, self.line_no + 1, self.offset)),
            LineRead::Line(n) => n,
        };
        self.line_no += 1;
        self.offset += n as u64;
        Ok(true)
    }

    /// The line last read, without the byte-order mark of line 1.
    fn raw(&self) -> &[u8] {
        let bytes = self.buf.as_slice();
        if self.line_no == 1 {
            bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes)
        } else {
            bytes
        }
    }

    /// The next non-blank, non-comment line, trimmed.
    pub fn next_line(&mut self) -> Result<Option<&str>> {
        loop {
            if !self.advance()? {
                return Ok(None);
            }
            let Ok(text) = std::str::from_utf8(self.raw()) else {
                return Err(self.bad("the line is not valid UTF-8 text"));
            };
            let text = text.trim();
            if text.is_empty() || text.starts_with('#') || text.starts_with('%') {
                continue;
            }
            // Re-borrow the trimmed range of the buffer.
            let start = text.as_ptr() as usize - self.buf.as_ptr() as usize;
            return Ok(std::str::from_utf8(
                self.buf.get(start..start + text.len()).unwrap_or_default(),
            )
            .ok());
        }
    }
}

/// One integer id per line (split files): one non-numeric header line
/// before the first id is skipped.
pub struct IdLines {
    lines: Lines,
    seen: bool,
}

impl IdLines {
    /// Opens `path` (`.gz` decompressed).
    pub fn open(path: &Path) -> Result<Self> {
        Ok(IdLines {
            lines: Lines::open(path)?,
            seen: false,
        })
    }

    /// The 1-based number of the line last read.
    pub fn line(&self) -> u64 {
        self.lines.line()
    }

    /// The next id.
    pub fn next_id(&mut self) -> Result<Option<i128>> {
        let mut header_skipped = false;
        loop {
            let Some(text) = self.lines.next_line()? else {
                return Ok(None);
            };
            match text.parse::<i128>() {
                Ok(v) => {
                    self.seen = true;
                    return Ok(Some(v));
                }
                Err(_) if !self.seen && !header_skipped && text.parse::<f64>().is_err() => {
                    header_skipped = true;
                }
                Err(_) => {
                    let msg = format!("{} is not an integer id (one id per line)", preview(text));
                    return Err(self.lines.bad(msg));
                }
            }
        }
    }
}

/// Rows of comma-separated numbers (OGB's `node-feat.csv.gz`,
/// `node-label.csv.gz`); empty fields and `nan` read as NaN. Every row must
/// have the width of the first.
pub struct FloatRows {
    lines: Lines,
    width: Option<usize>,
}

impl FloatRows {
    /// Opens `path` (`.gz` decompressed).
    pub fn open(path: &Path) -> Result<Self> {
        Ok(FloatRows {
            lines: Lines::open(path)?,
            width: None,
        })
    }

    /// The 1-based number of the line last read.
    pub fn line(&self) -> u64 {
        self.lines.line()
    }

    /// Appends the next row to `out`; false at the end of the file.
    pub fn next_row(&mut self, out: &mut Vec<f64>) -> Result<bool> {
        let Some(text) = self.lines.next_line()? else {
            return Ok(false);
        };
        let before = out.len();
        let mut bad_field = None;
        for field in text.split(',') {
            let f = field.trim();
            let v = if f.is_empty() || f.eq_ignore_ascii_case("nan") {
                f64::NAN
            } else {
                match f.parse::<f64>() {
                    Ok(v) => v,
                    Err(_) => {
                        bad_field = Some(f.to_string());
                        break;
                    }
                }
            };
            out.push(v);
        }
        if let Some(f) = bad_field {
            return Err(self.lines.bad(format!("{} is not a number", preview(&f))));
        }
        let width = out.len() - before;
        match self.width {
            None => self.width = Some(width),
            Some(w) if w != width => {
                return Err(self
                    .lines
                    .bad(format!("row has {width} values but the first row has {w}")))
            }
            Some(_) => {}
        }
        Ok(true)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::io::Write;

    proptest! {
        /// The allocation-free fast path agrees with the general parser
        /// whenever it accepts a line, and never accepts more than two fields.
        #[test]
        fn plain_pair_agrees_with_the_general_parse(
            line in "[0-9+, \t#x-]{0,24}",
            d in prop_oneof![Just(b','), Just(b'\t'), Just(b' ')],
        ) {
            if let Some((a, b)) = plain_pair(line.as_bytes(), d) {
                let fields: Vec<&str> = line.split(char::from(d)).collect();
                prop_assert_eq!(fields.len(), 2);
                prop_assert_eq!(fields[0].parse::<i128>(), Ok(a));
                prop_assert_eq!(fields[1].parse::<i128>(), Ok(b));
            }
        }
    }

    #[test]
    fn plain_int_bounds() {
        assert_eq!(plain_int(b"0"), Some(0));
        assert_eq!(plain_int(b"-17"), Some(-17));
        assert_eq!(
            plain_int(&[b'9'; 38]),
            Some("9".repeat(38).parse::<i128>().unwrap())
        );
        assert_eq!(
            plain_int(&[b'9'; 39]),
            None,
            "39 digits go to the general parser"
        );
        assert_eq!(plain_int(b""), None);
        assert_eq!(plain_int(b"-"), None);
        assert_eq!(plain_int(b"+1"), None);
        assert_eq!(plain_int(b"1 "), None);
    }

    fn all(path: &Path) -> Result<Vec<(i128, i128)>> {
        let mut t = TextEdges::open(path)?;
        let mut out = Vec::new();
        while let Some(e) = t.next_edge()? {
            out.push(e);
        }
        Ok(out)
    }

    /// The edges read from `contents` written to `dir/name`.
    fn edges_of(dir: &Path, name: &str, contents: impl AsRef<[u8]>) -> Result<Vec<(i128, i128)>> {
        let p = dir.join(name);
        std::fs::write(&p, contents).unwrap();
        all(&p)
    }

    #[test]
    fn formats_and_noise() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let csv = "\u{feff}src,dst\r\n# comment\r\n\r\n0,1\r\n2, 3\r\n";
        assert_eq!(edges_of(d, "e.csv", csv).unwrap(), vec![(0, 1), (2, 3)]);
        let txt = "% mm\n0\t1\n5\t6\t0.5\n";
        assert_eq!(edges_of(d, "e.txt", txt).unwrap(), vec![(0, 1), (5, 6)]);
        let mut bytes = Vec::new();
        for part in ["1 2\n", "3 4\n"] {
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            enc.write_all(part.as_bytes()).unwrap();
            bytes.extend(enc.finish().unwrap()); // two gzip members
        }
        assert_eq!(edges_of(d, "e.gz", &bytes).unwrap(), vec![(1, 2), (3, 4)]);
        let truncated = &bytes[..bytes.len() / 2 + 3];
        assert!(
            edges_of(d, "e.gz", truncated).is_err(),
            "truncated gzip accepted"
        );
    }

    #[test]
    fn bad_lines_name_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        for (text, line, want) in [
            ("0,1\n2,x\n", 2, "integers"),
            ("0,1\n7\n", 2, "one field"),
            ("0 1\n1,2\n", 2, "mixes delimiters"),
            ("0,1\n1,2,3,4\n", 2, "fields"),
            ("0,1\nsrc,dst\n", 2, "integers"),
        ] {
            let err = edges_of(dir.path(), "bad.csv", text)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("bad.csv") && err.contains(&format!(":{line}:")) && err.contains(want),
                "{text:?}: {err}"
            );
        }
    }

    /// A reader that counts the bytes taken from it.
    struct Counting<R> {
        inner: R,
        taken: std::sync::Arc<std::sync::atomic::AtomicU64>,
    }

    impl<R: Read> Read for Counting<R> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.inner.read(buf)?;
            self.taken
                .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
            Ok(n)
        }
    }

    /// 64 MiB without a newline (digits, as a `/dev/zero`-like stream):
    /// both readers refuse the line at the bound, naming the line and the
    /// byte offset, having taken little more than `MAX_LINE` bytes.
    #[test]
    fn long_lines_are_refused_at_the_bound() {
        for which in ["edges", "lines"] {
            let taken = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
            let src = Counting {
                inner: std::io::Cursor::new(b"0 1\n".to_vec())
                    .chain(std::io::repeat(b'7').take(64 << 20)),
                taken: taken.clone(),
            };
            let reader: Box<dyn BufRead> = Box::new(BufReader::with_capacity(64 << 10, src));
            let path = Path::new("long.txt");
            let err = if which == "edges" {
                let mut t = TextEdges::from_reader(reader, path);
                assert_eq!(t.next_edge().unwrap(), Some((0, 1)));
                t.next_edge().unwrap_err()
            } else {
                let mut l = Lines::from_reader(reader, path);
                assert_eq!(l.next_line().unwrap(), Some("0 1"));
                l.next_line().map(|x| x.map(str::to_string)).unwrap_err()
            }
            .to_string();
            assert!(
                err.starts_with("long.txt:2: byte 4: the line is longer than the 1 MiB limit"),
                "{which}: {err}"
            );
            let taken = taken.load(std::sync::atomic::Ordering::Relaxed);
            assert!(
                taken <= (MAX_LINE + (128 << 10)) as u64,
                "{which}: read {taken} bytes for one refused line"
            );
        }
    }

    /// A gzip stream of 8 MiB of the digit 0: refused at the bound, the
    /// offset counted in decompressed bytes; an id file the same.
    #[test]
    fn long_gzip_lines_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("zeros.txt.gz");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(&vec![b'0'; 8 << 20]).unwrap();
        std::fs::write(&p, enc.finish().unwrap()).unwrap();
        let err = all(&p).unwrap_err().to_string();
        assert!(
            err.contains("zeros.txt.gz:1: byte 0 of the decompressed text: the line is longer"),
            "{err}"
        );
        let err = IdLines::open(&p)
            .unwrap()
            .next_id()
            .unwrap_err()
            .to_string();
        assert!(err.contains(":1: byte 0 of the decompressed text"), "{err}");
    }

    /// At most one header line; the delimiter comes from the first data
    /// line, not from the header.
    #[test]
    fn one_header_line_and_delimiter_from_the_data() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let named_header = "source node target node\n0,1\n1,2\n";
        assert_eq!(
            edges_of(d, "h.csv", named_header).unwrap(),
            vec![(0, 1), (1, 2)]
        );
        let two_headers = "src,dst\nfrom,to\n0,1\n";
        let err = edges_of(d, "h.csv", two_headers).unwrap_err().to_string();
        assert!(
            err.contains(
                "h.csv:2: \"from,to\": the first data line has no integer fields (split at `,`"
            ) && err.contains("line 1 was already taken as the one header line"),
            "{err}"
        );
        let digits = "9".repeat(100);
        let err = edges_of(d, "h.csv", format!("{digits}\n{digits}\n"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("h.csv:2:") && err.contains("no integer fields"),
            "{err}"
        );
    }
}
