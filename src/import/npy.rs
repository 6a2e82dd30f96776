//! A strict `.npy` reader: format versions 1.0, 2.0 and 3.0, a capped header
//! length, a small literal parser for the header dictionary (exactly the keys
//! `descr`, `fortran_order`, `shape`), overflow-checked shapes, and the data
//! length checked against the file. Data is read in blocks (see [`NpyFile`]).
#![deny(clippy::unwrap_used, clippy::indexing_slicing)]

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::io::read::read_exact_at;

/// Largest header accepted (numpy writes a few hundred bytes).
pub const MAX_HEADER_LEN: usize = 64 * 1024;

/// Element types ginex reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NpyType {
    /// Signed integers of 1, 2, 4 or 8 bytes.
    Int(usize),
    /// Unsigned integers of 1, 2, 4 or 8 bytes.
    Uint(usize),
    /// IEEE floats of 2, 4 or 8 bytes.
    Float(usize),
    /// Booleans (one byte).
    Bool,
}

impl NpyType {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            NpyType::Int(n) | NpyType::Uint(n) | NpyType::Float(n) => n,
            NpyType::Bool => 1,
        }
    }
}

/// A decoded header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpyHeader {
    /// Element type.
    pub dtype: NpyType,
    /// Big-endian elements.
    pub big_endian: bool,
    /// Column-major (Fortran) order.
    pub fortran_order: bool,
    /// Shape.
    pub shape: Vec<u64>,
    /// Offset of the data in the file.
    pub data_offset: u64,
}

impl NpyHeader {
    /// Number of elements (checked product of the shape).
    pub fn len(&self) -> Option<u64> {
        self.shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d))
    }

    /// True when the array holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == Some(0)
    }
}

fn bad(path: &Path, at: u64, reason: impl Into<String>) -> Error {
    Error::InvalidInput {
        source_file: path.to_path_buf(),
        line: None,
        reason: format!("byte {at}: {}", reason.into()),
    }
}

/// Parses the header at the start of `bytes` (the whole file or a prefix
/// at least as long as the header).
pub fn parse_header(bytes: &[u8], path: &Path) -> Result<NpyHeader> {
    if bytes.get(..6) != Some(b"\x93NUMPY".as_slice()) {
        return Err(bad(path, 0, "not a .npy file (bad magic)"));
    }
    let (major, minor) = match bytes.get(6..8) {
        Some(&[a, b]) => (a, b),
        _ => return Err(bad(path, 6, "truncated before the version")),
    };
    let (len_size, utf8) = match (major, minor) {
        (1, 0) => (2usize, false),
        (2, 0) => (4, false),
        (3, 0) => (4, true),
        _ => {
            return Err(bad(
                path,
                6,
                format!(".npy format version {major}.{minor} is not supported (1.0, 2.0, 3.0 are)"),
            ))
        }
    };
    let len_bytes = bytes
        .get(8..8 + len_size)
        .ok_or_else(|| bad(path, 8, "truncated in the header length"))?;
    let header_len = len_bytes
        .iter()
        .rev()
        .fold(0usize, |a, &b| (a << 8) | usize::from(b));
    if header_len > MAX_HEADER_LEN {
        return Err(bad(
            path,
            8,
            format!("header length {header_len} exceeds the {MAX_HEADER_LEN}-byte limit"),
        ));
    }
    let start = 8 + len_size;
    let raw = bytes.get(start..start + header_len).ok_or_else(|| {
        bad(
            path,
            start as u64,
            format!("file ends inside the {header_len}-byte header"),
        )
    })?;
    let text = if utf8 {
        std::str::from_utf8(raw).ok()
    } else {
        raw.is_ascii()
            .then(|| std::str::from_utf8(raw).ok())
            .flatten()
    };
    let text = text.ok_or_else(|| bad(path, start as u64, "header is not valid ASCII/UTF-8"))?;
    let dict =
        parse_dict(text).map_err(|e| bad(path, start as u64, format!("header dictionary: {e}")))?;
    let descr = dict
        .descr
        .ok_or_else(|| bad(path, start as u64, "header has no 'descr'"))?;
    let fortran_order = dict
        .fortran_order
        .ok_or_else(|| bad(path, start as u64, "header has no 'fortran_order'"))?;
    let shape = dict
        .shape
        .ok_or_else(|| bad(path, start as u64, "header has no 'shape'"))?;
    let (dtype, big_endian) = parse_descr(&descr).map_err(|e| bad(path, start as u64, e))?;
    let h = NpyHeader {
        dtype,
        big_endian,
        fortran_order,
        shape,
        data_offset: (start + header_len) as u64,
    };
    if h.len()
        .and_then(|n| n.checked_mul(dtype.size() as u64))
        .is_none()
    {
        return Err(bad(
            path,
            start as u64,
            format!("shape {:?} overflows", h.shape),
        ));
    }
    Ok(h)
}

fn parse_descr(d: &str) -> std::result::Result<(NpyType, bool), String> {
    let mut chars = d.chars();
    let order = chars.next().ok_or("empty descr")?;
    let big = match order {
        '<' | '|' | '=' => false,
        '>' => true,
        _ => return Err(format!("dtype {d:?} has no byte-order mark")),
    };
    let kind = chars.next().ok_or("descr without a type")?;
    if kind == 'O' {
        return Err("object arrays (dtype 'O') cannot be read: save a numeric array".into());
    }
    let size: usize = chars
        .as_str()
        .parse()
        .map_err(|_| format!("dtype {d:?} is not supported"))?;
    let t = match (kind, size) {
        ('i', 1 | 2 | 4 | 8) => NpyType::Int(size),
        ('u', 1 | 2 | 4 | 8) => NpyType::Uint(size),
        ('f', 2 | 4 | 8) => NpyType::Float(size),
        ('b', 1) => NpyType::Bool,
        _ => {
            return Err(format!(
                "dtype {d:?} is not supported (use int, uint, float or bool)"
            ))
        }
    };
    Ok((t, big && size > 1))
}

#[derive(Default)]
struct Dict {
    descr: Option<String>,
    fortran_order: Option<bool>,
    shape: Option<Vec<u64>>,
}

/// Parses `{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }`.
fn parse_dict(text: &str) -> std::result::Result<Dict, String> {
    let mut p = Parser {
        s: text.trim_end().as_bytes(),
        i: 0,
    };
    let mut d = Dict::default();
    p.expect(b'{')?;
    loop {
        p.ws();
        if p.eat(b'}') {
            break;
        }
        let key = p.string()?;
        p.ws();
        p.expect(b':')?;
        p.ws();
        match key.as_str() {
            "descr" if d.descr.is_none() => d.descr = Some(p.string()?),
            "fortran_order" if d.fortran_order.is_none() => d.fortran_order = Some(p.boolean()?),
            "shape" if d.shape.is_none() => d.shape = Some(p.tuple()?),
            other => return Err(format!("unexpected or repeated key {other:?}")),
        }
        p.ws();
        if !p.eat(b',') {
            p.ws();
            p.expect(b'}')?;
            break;
        }
    }
    p.ws();
    if p.i != p.s.len() {
        return Err("text after the dictionary".into());
    }
    Ok(d)
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }
    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn expect(&mut self, c: u8) -> std::result::Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!("expected {:?} at offset {}", c as char, self.i))
        }
    }
    fn string(&mut self) -> std::result::Result<String, String> {
        let q = self
            .peek()
            .filter(|&c| c == b'\'' || c == b'"')
            .ok_or_else(|| format!("expected a string at offset {}", self.i))?;
        self.i += 1;
        let start = self.i;
        while let Some(c) = self.peek() {
            if c == q {
                let s = self
                    .s
                    .get(start..self.i)
                    .and_then(|b| std::str::from_utf8(b).ok())
                    .ok_or("bad string")?;
                self.i += 1;
                return Ok(s.to_string());
            }
            if c == b'\\' {
                return Err("escapes in header strings are not supported".into());
            }
            self.i += 1;
        }
        Err("unterminated string".into())
    }
    fn boolean(&mut self) -> std::result::Result<bool, String> {
        let rest = self.s.get(self.i..).unwrap_or_default();
        if rest.starts_with(b"True") {
            self.i += 4;
            Ok(true)
        } else if rest.starts_with(b"False") {
            self.i += 5;
            Ok(false)
        } else {
            Err(format!("expected True or False at offset {}", self.i))
        }
    }
    fn tuple(&mut self) -> std::result::Result<Vec<u64>, String> {
        self.expect(b'(')?;
        let mut dims = Vec::new();
        loop {
            self.ws();
            if self.eat(b')') {
                return Ok(dims);
            }
            let start = self.i;
            while matches!(self.peek(), Some(b'0'..=b'9')) {
                self.i += 1;
            }
            let digits = self
                .s
                .get(start..self.i)
                .and_then(|b| std::str::from_utf8(b).ok())
                .unwrap_or_default();
            let d: u64 = digits
                .parse()
                .map_err(|_| format!("bad dimension at offset {start}"))?;
            self.eat(b'L'); // Python 2 long suffix
            dims.push(d);
            if dims.len() > 32 {
                return Err("more than 32 dimensions".into());
            }
            self.ws();
            if !self.eat(b',') {
                self.ws();
                self.expect(b')')?;
                return Ok(dims);
            }
        }
    }
}

/// A `.npy` array: a whole file or a region of one (a stored `.npz`
/// member). Data is read in blocks with positional reads rather than
/// through a memory map: a mapped input counts toward the process's
/// resident memory as it is touched, which breaks the `--memory` budget on
/// inputs larger than it, while a block read keeps one block resident.
#[derive(Debug)]
pub struct NpyFile {
    /// The name used in messages (`data.npz:node_feat.npy` for members).
    pub path: PathBuf,
    /// Its header (`data_offset` relative to the start of the array).
    pub header: NpyHeader,
    file: File,
    file_path: PathBuf,
    base: u64,
}

/// Opens `path` for reading and returns it with its length.
pub(crate) fn open_with_len(path: &Path) -> Result<(File, u64)> {
    let file = File::open(path).map_err(|e| Error::io("open", path, e))?;
    let len = file
        .metadata()
        .map_err(|e| Error::io("stat", path, e))?
        .len();
    Ok((file, len))
}

impl NpyFile {
    /// Opens and checks `path`: header, and data length equal to the shape.
    pub fn open(path: &Path) -> Result<Self> {
        let (file, len) = open_with_len(path)?;
        Self::open_region(file, path, path.to_path_buf(), 0, len)
    }

    /// Opens the array stored in `len` bytes at `base` of `file` (read from
    /// `file_path`), named `name` in messages.
    pub fn open_region(
        file: File,
        file_path: &Path,
        name: PathBuf,
        base: u64,
        len: u64,
    ) -> Result<Self> {
        let want_head = (len as usize).min(12 + MAX_HEADER_LEN);
        let mut head = vec![0u8; want_head];
        read_exact_at(&file, file_path, base, &mut head)?;
        let header = parse_header(&head, &name)?;
        let want = header
            .len()
            .and_then(|n| n.checked_mul(header.dtype.size() as u64))
            .unwrap_or(u64::MAX);
        let have = len.saturating_sub(header.data_offset);
        if have != want {
            return Err(bad(
                &name,
                header.data_offset,
                format!(
                    "shape {:?} needs {want} data bytes but the array has {have} (truncated or corrupt)",
                    header.shape
                ),
            ));
        }
        Ok(NpyFile {
            path: name,
            header,
            file,
            file_path: file_path.to_path_buf(),
            base,
        })
    }

    /// Number of elements.
    pub fn len(&self) -> u64 {
        self.header.len().unwrap_or(0)
    }

    /// True when the array holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Reads the raw bytes of elements `first..first + count` into `buf`.
    pub fn read_raw(&self, first: u64, count: usize, buf: &mut Vec<u8>) -> Result<()> {
        let size = self.header.dtype.size();
        let end = first.saturating_add(count as u64);
        if end > self.len() {
            return Err(Error::OutOfRange(format!(
                "{}: elements {first}..{end} of an array of {}",
                self.path.display(),
                self.len()
            )));
        }
        buf.resize(count * size, 0);
        let offset = self.base + self.header.data_offset + first * size as u64;
        read_exact_at(&self.file, &self.file_path, offset, buf)
    }

    /// Elements `first..first + count`, each decoded from its raw bytes by
    /// `decode`, into `out` (cleared first); `raw` is a scratch buffer.
    fn read_decoded<T>(
        &self,
        first: u64,
        count: usize,
        raw: &mut Vec<u8>,
        out: &mut Vec<T>,
        decode: impl Fn(&[u8]) -> T,
    ) -> Result<()> {
        self.read_raw(first, count, raw)?;
        out.clear();
        out.extend(raw.chunks_exact(self.header.dtype.size()).map(decode));
        Ok(())
    }

    /// Elements `first..first + count` as integers (`None` for floats).
    pub fn read_ints(
        &self,
        first: u64,
        count: usize,
        raw: &mut Vec<u8>,
        out: &mut Vec<i128>,
    ) -> Result<bool> {
        if matches!(self.header.dtype, NpyType::Float(_)) {
            return Ok(false);
        }
        let signed = matches!(self.header.dtype, NpyType::Int(_));
        let big = self.header.big_endian;
        self.read_decoded(first, count, raw, out, |c| decode_int(c, signed, big))?;
        Ok(true)
    }

    /// Elements `first..first + count` converted to `f32` (any numeric type).
    pub fn read_f32(
        &self,
        first: u64,
        count: usize,
        raw: &mut Vec<u8>,
        out: &mut Vec<f32>,
    ) -> Result<()> {
        let (t, big) = (self.header.dtype, self.header.big_endian);
        if matches!((t, big), (NpyType::Float(4), false)) {
            self.read_decoded(first, count, raw, out, |c| {
                f32::from_le_bytes(<[u8; 4]>::try_from(c).unwrap_or_default())
            })
        } else {
            self.read_decoded(first, count, raw, out, |c| decode_float(c, t, big) as f32)
        }
    }

    /// Elements `first..first + count` as `f64` (any numeric type).
    pub fn read_f64(
        &self,
        first: u64,
        count: usize,
        raw: &mut Vec<u8>,
        out: &mut Vec<f64>,
    ) -> Result<()> {
        let (t, big) = (self.header.dtype, self.header.big_endian);
        self.read_decoded(first, count, raw, out, |c| decode_float(c, t, big))
    }

    /// Element `i` as an `i128` (integers and bools; `None` for floats or
    /// out of range). One read per call: for tests and small arrays.
    pub fn int_at(&self, i: usize) -> Option<i128> {
        let (mut raw, mut out) = (Vec::new(), Vec::new());
        match self.read_ints(i as u64, 1, &mut raw, &mut out) {
            Ok(true) => out.first().copied(),
            _ => None,
        }
    }

    /// Element `i` as an `f64` (any numeric type). One read per call.
    pub fn float_at(&self, i: usize) -> Option<f64> {
        let (mut raw, mut out) = (Vec::new(), Vec::new());
        self.read_f64(i as u64, 1, &mut raw, &mut out).ok()?;
        out.first().copied()
    }
}

/// Decodes the elements in `data` (the bytes after a header `h`) as
/// integers; `None` for float arrays. For small arrays read whole.
pub fn decode_ints(h: &NpyHeader, data: &[u8]) -> Option<Vec<i128>> {
    let signed = match h.dtype {
        NpyType::Float(_) => return None,
        NpyType::Int(_) => true,
        NpyType::Uint(_) | NpyType::Bool => false,
    };
    Some(
        data.chunks_exact(h.dtype.size())
            .map(|c| decode_int(c, signed, h.big_endian))
            .collect(),
    )
}

fn le_bytes8(c: &[u8], big: bool) -> [u8; 8] {
    let mut b = [0u8; 8];
    let n = c.len().min(8);
    if let (Some(dst), Some(src)) = (b.get_mut(..n), c.get(..n)) {
        dst.copy_from_slice(src);
        if big {
            dst.reverse();
        }
    }
    b
}

fn decode_int(c: &[u8], signed: bool, big: bool) -> i128 {
    let raw = u64::from_le_bytes(le_bytes8(c, big));
    if signed {
        let shift = 64 - 8 * c.len().clamp(1, 8) as u32;
        i128::from(((raw << shift) as i64) >> shift)
    } else {
        i128::from(raw)
    }
}

fn decode_float(c: &[u8], t: NpyType, big: bool) -> f64 {
    let b = le_bytes8(c, big);
    match t {
        NpyType::Float(2) => {
            f64::from(half::f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32())
        }
        NpyType::Float(4) => f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        NpyType::Float(_) => f64::from_le_bytes(b),
        NpyType::Int(_) => decode_int(c, true, big) as f64,
        NpyType::Uint(_) | NpyType::Bool => decode_int(c, false, big) as f64,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::import::npy_write::NpyWriter;
    use proptest::prelude::*;

    fn header_bytes(version: u8, dict: &str) -> Vec<u8> {
        let mut b = b"\x93NUMPY".to_vec();
        b.extend_from_slice(&[version, 0]);
        if version == 1 {
            b.extend_from_slice(&(dict.len() as u16).to_le_bytes());
        } else {
            b.extend_from_slice(&(dict.len() as u32).to_le_bytes());
        }
        b.extend_from_slice(dict.as_bytes());
        b
    }

    /// The header of a version-`version` file holding `dict`, parsed.
    fn parsed(version: u8, dict: &str) -> NpyHeader {
        parse_header(&header_bytes(version, dict), Path::new("a")).unwrap()
    }

    #[test]
    fn parses_numpy_headers_of_every_version() {
        for v in [1, 2, 3] {
            let h = parsed(
                v,
                "{'descr': '<i8', 'fortran_order': False, 'shape': (3, 2), }        \n",
            );
            assert_eq!(
                (h.dtype, h.big_endian, h.fortran_order, h.shape.clone()),
                (NpyType::Int(8), false, false, vec![3, 2])
            );
        }
        let h = parsed(
            1,
            "{'descr': '>f4', 'fortran_order': True, 'shape': (5,)}\n",
        );
        assert_eq!(
            (h.dtype, h.big_endian, h.fortran_order, h.shape),
            (NpyType::Float(4), true, true, vec![5])
        );
        let h = parsed(
            1,
            "{\"shape\": (), \"descr\": \"|b1\", \"fortran_order\": False}",
        );
        assert_eq!(h.len(), Some(1));
    }

    #[test]
    fn hostile_headers_are_errors() {
        let cases = [
            (header_bytes(1, "{'descr': '|O', 'fortran_order': False, 'shape': (3,), }"), "object"),
            (header_bytes(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16), }"), "overflows"),
            (header_bytes(1, "{'descr': '<i8', 'shape': (3,), }"), "fortran_order"),
            (header_bytes(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), 'extra': 1}"), "unexpected"),
            (header_bytes(1, "{'descr': '<c16', 'fortran_order': False, 'shape': (3,), }"), "not supported"),
            (header_bytes(1, "{'descr': '<i8', 'fortran_order': Maybe, 'shape': (3,), }"), "True or False"),
            (header_bytes(9, "{}"), "version"),
            (b"\x93NUMPY\x01\x00\xff\xff".to_vec(), "ends inside"),
            (b"PK\x03\x04".to_vec(), "magic"),
        ];
        for (bytes, want) in cases {
            let err = parse_header(&bytes, Path::new("x.npy"))
                .unwrap_err()
                .to_string();
            assert!(err.contains(want) && err.contains("x.npy"), "{want}: {err}");
        }
        let mut long = b"\x93NUMPY\x02\x00".to_vec();
        long.extend_from_slice(&(10_000_000u32).to_le_bytes());
        assert!(parse_header(&long, Path::new("x"))
            .unwrap_err()
            .to_string()
            .contains("limit"));
    }

    proptest! {
        #[test]
        fn any_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = parse_header(&bytes, Path::new("f"));
            let mut framed = header_bytes(1, "");
            framed.truncate(8);
            framed.extend_from_slice(&((bytes.len() as u16).to_le_bytes()));
            framed.extend_from_slice(&bytes);
            let _ = parse_header(&framed, Path::new("f"));
        }

        #[test]
        fn round_trip_with_our_writer(values in proptest::collection::vec(any::<i32>(), 0..100)) {
            let dir = tempfile::tempdir().unwrap();
            let p = dir.path().join("a.npy");
            let mut w = NpyWriter::create(&p, "<i4", &[]).unwrap();
            let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            w.write(&bytes, values.len() as u64).unwrap();
            w.finish().unwrap();
            let f = NpyFile::open(&p).unwrap();
            prop_assert_eq!(f.header.shape.clone(), vec![values.len() as u64]);
            for (i, v) in values.iter().enumerate() {
                prop_assert_eq!(f.int_at(i), Some(i128::from(*v)));
            }
        }
    }

    #[test]
    fn truncated_data_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.npy");
        let mut b = header_bytes(
            1,
            "{'descr': '<f4', 'fortran_order': False, 'shape': (10,), }\n",
        );
        b.extend_from_slice(&[0u8; 36]);
        std::fs::write(&p, &b).unwrap();
        let err = NpyFile::open(&p).err().unwrap().to_string();
        assert!(err.contains("t.npy") && err.contains("truncated"), "{err}");
        let mut be = header_bytes(
            1,
            "{'descr': '>i2', 'fortran_order': False, 'shape': (2,), }\n",
        );
        be.extend_from_slice(&[0xff, 0xfe, 0x00, 0x05]);
        std::fs::write(&p, &be).unwrap();
        let f = NpyFile::open(&p).unwrap();
        assert_eq!((f.int_at(0), f.int_at(1)), (Some(-2), Some(5)));
    }
}
