//! `.npz` archives (what `numpy.savez` / `savez_compressed` write): a zip
//! file of `.npy` members. A minimal, strict zip reader of our own — the end
//! of central directory record (with its ZIP64 locator and record), the
//! central directory (with ZIP64 extra fields), local headers — for stored
//! and deflated members. A stored member is read in place (no copy); a
//! deflated one is inflated into a scratch file first, with its CRC-32 and
//! size checked. Multi-disk archives, encryption and other compression
//! methods are refused with a message.
//!
//! The tests write their archives with `tests/common/npz_writer.rs`.
#![deny(clippy::unwrap_used, clippy::indexing_slicing)]

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::import::npy::NpyFile;
use crate::io::read::read_exact_at;

const EOCD_SIG: u32 = 0x0605_4b50;
const ZIP64_LOCATOR_SIG: u32 = 0x0706_4b50;
const ZIP64_EOCD_SIG: u32 = 0x0606_4b50;
const CENTRAL_SIG: u32 = 0x0201_4b50;
const LOCAL_SIG: u32 = 0x0403_4b50;
const EOCD_LEN: usize = 22;
const MAX_COMMENT: usize = 0xffff;
/// Central directories larger than this are refused (an npz has a handful
/// of members; this bounds what a hostile file can make us allocate).
const MAX_CENTRAL_DIR: u64 = 64 << 20;

/// How a member's bytes are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Uncompressed.
    Stored,
    /// Raw deflate.
    Deflate,
}

/// One member of the archive.
#[derive(Debug, Clone)]
pub struct Member {
    /// Name inside the archive (`edge_index.npy`).
    pub name: String,
    /// Storage method.
    pub method: Method,
    /// CRC-32 of the uncompressed bytes.
    pub crc: u32,
    /// Compressed size.
    pub compressed: u64,
    /// Uncompressed size.
    pub size: u64,
    /// Offset of the member's local header.
    pub local_offset: u64,
}

/// An open `.npz` (or any zip) archive.
pub struct NpzArchive {
    path: PathBuf,
    file: File,
    len: u64,
    members: Vec<Member>,
}

fn bad(path: &Path, at: u64, reason: impl Into<String>) -> Error {
    Error::InvalidInput {
        source_file: path.to_path_buf(),
        line: None,
        reason: format!("byte {at}: {}", reason.into()),
    }
}

fn u16_at(b: &[u8], i: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(i..i + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], i: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(i..i + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], i: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(i..i + 8)?.try_into().ok()?))
}

impl NpzArchive {
    /// Opens `path` and reads its central directory.
    pub fn open(path: &Path) -> Result<Self> {
        let (file, len) = crate::import::npy::open_with_len(path)?;
        let mut archive = NpzArchive {
            path: path.to_path_buf(),
            file,
            len,
            members: Vec::new(),
        };
        archive.members = archive.read_directory()?;
        Ok(archive)
    }

    /// The members in directory order.
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let end = offset.checked_add(len as u64);
        if end.is_none_or(|e| e > self.len) {
            return Err(bad(
                &self.path,
                offset,
                format!(
                    "a {len}-byte structure here runs past the end of the {}-byte file (truncated?)",
                    self.len
                ),
            ));
        }
        let mut buf = vec![0u8; len];
        read_exact_at(&self.file, &self.path, offset, &mut buf)?;
        Ok(buf)
    }

    fn read_directory(&self) -> Result<Vec<Member>> {
        let dir = self.end_record()?;
        if dir.size > MAX_CENTRAL_DIR {
            return Err(bad(
                &self.path,
                dir.eocd_at,
                format!(
                    "central directory of {} bytes exceeds the {MAX_CENTRAL_DIR}-byte limit",
                    dir.size
                ),
            ));
        }
        let cd = self.read_at(dir.offset, dir.size as usize)?;
        let mut members: Vec<Member> = Vec::new();
        let mut names = std::collections::HashSet::new();
        let mut i = 0usize;
        for k in 0..dir.entries {
            let (member, len) = central_entry(&self.path, &cd, i, dir.offset, (k, dir.entries))?;
            if !names.insert(member.name.clone()) {
                return Err(bad(
                    &self.path,
                    dir.offset + i as u64,
                    format!(
                        "central directory entry {k} repeats the member name {:?} (an archive \
                         that names two arrays alike is ambiguous)",
                        member.name
                    ),
                ));
            }
            members.push(member);
            i += len;
        }
        Ok(members)
    }

    /// Where the central directory is, from the end-of-central-directory
    /// record (and the ZIP64 one, where there is one).
    fn end_record(&self) -> Result<CentralDir> {
        let p = &self.path;
        let tail_len = (self.len as usize).min(EOCD_LEN + MAX_COMMENT);
        let tail_start = self.len - tail_len as u64;
        let tail = self.read_at(tail_start, tail_len)?;
        // The last EOCD signature whose comment length reaches the end.
        let eocd_rel = (0..=tail_len.saturating_sub(EOCD_LEN))
            .rev()
            .find(|&i| {
                u32_at(&tail, i) == Some(EOCD_SIG)
                    && u16_at(&tail, i + 20)
                        .is_some_and(|c| i + EOCD_LEN + usize::from(c) == tail_len)
            })
            .ok_or_else(|| {
                bad(
                    p,
                    self.len,
                    "no zip end-of-central-directory record (not a .npz/zip file, or truncated)",
                )
            })?;
        let eocd_at = tail_start + eocd_rel as u64;
        let e = tail.get(eocd_rel..).unwrap_or_default();
        let field = |i| u16_at(e, i).unwrap_or(0);
        let (disk, cd_disk) = (field(4), field(6));
        let mut dir = CentralDir {
            entries: u64::from(field(10)),
            size: u64::from(u32_at(e, 12).unwrap_or(0)),
            offset: u64::from(u32_at(e, 16).unwrap_or(0)),
            eocd_at,
        };
        if ![0, 0xffff].contains(&disk) || ![0, 0xffff].contains(&cd_disk) {
            return Err(bad(
                p,
                eocd_at,
                "multi-disk (split) zip archives are not supported",
            ));
        }
        let needs64 = dir.entries == 0xffff || dir.size == 0xffff_ffff || dir.offset == 0xffff_ffff;
        if needs64 || eocd_at >= 20 {
            if let Some((entries, size, offset)) = self.zip64_end_record(eocd_at, needs64)? {
                (dir.entries, dir.size, dir.offset) = (entries, size, offset);
            }
        }
        Ok(dir)
    }

    /// The entries, size and offset of the central directory from the
    /// ZIP64 end record, when a ZIP64 locator stands before the end record
    /// at `eocd_at`; without one, an error when the end record `needs64`.
    fn zip64_end_record(&self, eocd_at: u64, needs64: bool) -> Result<Option<(u64, u64, u64)>> {
        let p = &self.path;
        let loc_at = eocd_at.checked_sub(20);
        let locator = match loc_at {
            Some(at) => Some((at, self.read_at(at, 20)?)),
            None => None,
        };
        match locator {
            Some((at, loc)) if u32_at(&loc, 0) == Some(ZIP64_LOCATOR_SIG) => {
                let rec_at = u64_at(&loc, 8).unwrap_or(u64::MAX);
                let rec = self.read_at(rec_at, 56).map_err(|_| {
                    bad(
                        p,
                        at,
                        format!("ZIP64 locator points at byte {rec_at}, outside the file"),
                    )
                })?;
                if u32_at(&rec, 0) != Some(ZIP64_EOCD_SIG) {
                    return Err(bad(
                        p,
                        rec_at,
                        "ZIP64 end-of-central-directory record has a bad signature",
                    ));
                }
                if u32_at(&rec, 16) != Some(0) || u32_at(&rec, 20) != Some(0) {
                    return Err(bad(
                        p,
                        rec_at,
                        "multi-disk (split) zip archives are not supported",
                    ));
                }
                Ok(Some((
                    u64_at(&rec, 32).unwrap_or(0),
                    u64_at(&rec, 40).unwrap_or(0),
                    u64_at(&rec, 48).unwrap_or(0),
                )))
            }
            _ if needs64 => Err(bad(
                p,
                eocd_at,
                "the end record says ZIP64 but there is no ZIP64 locator before it",
            )),
            _ => Ok(None),
        }
    }

    /// The member named `name` or `name.npy`.
    pub fn member(&self, name: &str) -> Option<&Member> {
        let exact = self.members.iter().find(|m| m.name == name);
        exact.or_else(|| {
            self.members
                .iter()
                .find(|m| m.name.strip_suffix(".npy") == Some(name))
        })
    }

    /// Offset of a member's data (after its local header).
    fn data_offset(&self, m: &Member) -> Result<u64> {
        let h = self.read_at(m.local_offset, 30)?;
        if u32_at(&h, 0) != Some(LOCAL_SIG) {
            return Err(bad(
                &self.path,
                m.local_offset,
                format!("local header of {:?} has a bad signature", m.name),
            ));
        }
        let skip =
            30 + u64::from(u16_at(&h, 26).unwrap_or(0)) + u64::from(u16_at(&h, 28).unwrap_or(0));
        let start = m.local_offset + skip;
        if start.checked_add(m.compressed).is_none_or(|e| e > self.len) {
            return Err(bad(
                &self.path,
                start,
                format!(
                    "member {:?} ({} bytes) runs past the end of the file (truncated?)",
                    m.name, m.compressed
                ),
            ));
        }
        Ok(start)
    }

    fn find(&self, name: &str) -> Result<&Member> {
        self.member(name).ok_or_else(|| {
            let names: Vec<&str> = self.members.iter().map(|m| m.name.as_str()).collect();
            Error::InvalidInput {
                source_file: self.path.clone(),
                line: None,
                reason: format!("no member {name:?} (the archive holds {names:?})"),
            }
        })
    }

    fn dup(&self) -> Result<File> {
        self.file
            .try_clone()
            .map_err(|e| Error::io("dup", &self.path, e))
    }

    /// The inflated bytes of deflated member `m`, whose data starts at `start`.
    fn inflater(&self, m: &Member, start: u64) -> Result<impl Read> {
        let mut src = self.dup()?;
        src.seek(SeekFrom::Start(start))
            .map_err(|e| Error::io("seek", &self.path, e))?;
        Ok(flate2::read::DeflateDecoder::new(std::io::BufReader::new(
            src.take(m.compressed),
        )))
    }

    fn corrupt_stream(&self, m: &Member, start: u64, e: std::io::Error) -> Error {
        bad(
            &self.path,
            start,
            format!(
                "member {:?}: deflate stream is corrupt or truncated ({e})",
                m.name
            ),
        )
    }

    /// The first `limit` bytes of member `name` (all of it if shorter),
    /// inflated when deflated: enough for a header or a small array.
    pub fn member_prefix(&self, name: &str, limit: usize) -> Result<Vec<u8>> {
        let m = self.find(name)?;
        let start = self.data_offset(m)?;
        let want = (m.size as usize).min(limit);
        match m.method {
            Method::Stored => self.read_at(start, want),
            Method::Deflate => {
                let mut out = Vec::with_capacity(want);
                self.inflater(m, start)?
                    .take(want as u64)
                    .read_to_end(&mut out)
                    .map_err(|e| self.corrupt_stream(m, start, e))?;
                if out.len() != want {
                    return Err(bad(
                        &self.path,
                        start,
                        format!(
                            "member {:?} inflates to fewer than {want} bytes (truncated?)",
                            m.name
                        ),
                    ));
                }
                Ok(out)
            }
        }
    }

    /// The header of member `name` (reads only its start).
    pub fn header(&self, name: &str) -> Result<crate::import::npy::NpyHeader> {
        let bytes = self.member_prefix(name, 12 + crate::import::npy::MAX_HEADER_LEN)?;
        let label = PathBuf::from(format!("{}:{name}", self.path.display()));
        crate::import::npy::parse_header(&bytes, &label)
    }

    /// Opens member `name` (`.npy` suffix optional) as an array. Deflated
    /// members are inflated into a file under `scratch` first.
    pub fn array(&self, name: &str, scratch: &Path) -> Result<NpyFile> {
        let m = self.find(name)?;
        let label = PathBuf::from(format!("{}:{}", self.path.display(), m.name));
        let start = self.data_offset(m)?;
        match m.method {
            Method::Stored => NpyFile::open_region(self.dup()?, &self.path, label, start, m.size),
            Method::Deflate => {
                std::fs::create_dir_all(scratch)
                    .map_err(|e| Error::io("create directory", scratch, e))?;
                let out_path = scratch.join(format!("npz-{}", sanitize(&m.name)));
                let mut dec = self.inflater(m, start)?;
                let out = File::create(&out_path).map_err(|e| Error::io("create", &out_path, e))?;
                let mut w = BufWriter::with_capacity(1 << 20, crate::io::space::Metered::new(out));
                let mut hasher = crc32fast::Hasher::new();
                let mut buf = vec![0u8; 1 << 20];
                let mut total = 0u64;
                loop {
                    let n = dec
                        .read(&mut buf)
                        .map_err(|e| self.corrupt_stream(m, start, e))?;
                    if n == 0 {
                        break;
                    }
                    let chunk = buf.get(..n).unwrap_or_default();
                    hasher.update(chunk);
                    total += n as u64;
                    if total > m.size {
                        return Err(bad(
                            &self.path,
                            start,
                            format!(
                                "member {:?} inflates past its recorded size {}",
                                m.name, m.size
                            ),
                        ));
                    }
                    w.write_all(chunk)
                        .map_err(|e| Error::io("write", &out_path, e))?;
                }
                w.flush().map_err(|e| Error::io("write", &out_path, e))?;
                if total != m.size {
                    return Err(bad(&self.path, start, format!("member {:?} inflates to {total} bytes but the directory says {} (truncated?)", m.name, m.size)));
                }
                let crc = hasher.finalize();
                if crc != m.crc {
                    return Err(bad(&self.path, start, format!("member {:?}: CRC-32 {crc:#010x} does not match the stored {:#010x} (corrupt)", m.name, m.crc)));
                }
                let f = File::open(&out_path).map_err(|e| Error::io("open", &out_path, e))?;
                NpyFile::open_region(f, &out_path, label, 0, total)
            }
        }
    }
}

fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Where the central directory is.
struct CentralDir {
    entries: u64,
    size: u64,
    offset: u64,
    /// Where the end-of-central-directory record is (for errors).
    eocd_at: u64,
}

/// Entry `k` of `entries` of the central directory `cd` (read from byte
/// `cd_offset` of `p`), at `i` in it; with the entry's length in `cd`.
fn central_entry(
    p: &Path,
    cd: &[u8],
    i: usize,
    cd_offset: u64,
    (k, entries): (u64, u64),
) -> Result<(Member, usize)> {
    let at = cd_offset + i as u64;
    let h = cd.get(i..i + 46).ok_or_else(|| {
        bad(
            p,
            at,
            format!("central directory ends before entry {k} of {entries}"),
        )
    })?;
    if u32_at(h, 0) != Some(CENTRAL_SIG) {
        return Err(bad(
            p,
            at,
            format!("central directory entry {k} has a bad signature"),
        ));
    }
    let g16 = |o| usize::from(u16_at(h, o).unwrap_or(0));
    let g32 = |o| u32_at(h, o).unwrap_or(0);
    let flags = g16(8);
    let method = match g16(10) {
        0 => Method::Stored,
        8 => Method::Deflate,
        m => return Err(bad(p, at, format!("entry {k} uses compression method {m}; only stored (0) and deflate (8) are supported"))),
    };
    if flags & 1 != 0 {
        return Err(bad(p, at, format!("entry {k} is encrypted")));
    }
    let crc = g32(16);
    let mut compressed = u64::from(g32(20));
    let mut size = u64::from(g32(24));
    let (name_len, extra_len, comment_len) = (g16(28), g16(30), g16(32));
    let mut local_offset = u64::from(g32(42));
    let name_bytes = cd
        .get(i + 46..i + 46 + name_len)
        .ok_or_else(|| bad(p, at, "entry name runs past the central directory"))?;
    let name = String::from_utf8_lossy(name_bytes).into_owned();
    let extra = cd
        .get(i + 46 + name_len..i + 46 + name_len + extra_len)
        .ok_or_else(|| bad(p, at, "entry extra field runs past the central directory"))?;
    let err = |what: &str| bad(p, at, format!("entry {name:?}: {what}"));
    read_zip64_extra(extra, [&mut size, &mut compressed, &mut local_offset], err)?;
    if method == Method::Stored && compressed != size {
        return Err(bad(
            p,
            at,
            format!("stored entry {name:?} has compressed size {compressed} but size {size}"),
        ));
    }
    let member = Member {
        name,
        method,
        crc,
        compressed,
        size,
        local_offset,
    };
    Ok((member, 46 + name_len + extra_len + comment_len))
}

/// Reads the ZIP64 extended information of an entry's `extra` field into
/// `values` (size, compressed size, local header offset): the 8-byte
/// values present are exactly those whose 4-byte field is 0xffffffff, in
/// this order. `err` makes the error of a malformed field.
fn read_zip64_extra(
    extra: &[u8],
    values: [&mut u64; 3],
    err: impl Fn(&str) -> Error,
) -> Result<()> {
    let mut values = values;
    let mut j = 0usize;
    while let (Some(id), Some(len)) = (u16_at(extra, j), u16_at(extra, j + 2)) {
        let body = extra
            .get(j + 4..j + 4 + usize::from(len))
            .ok_or_else(|| err("extra field runs past its end"))?;
        if id == 1 {
            let mut o = 0usize;
            for v in values.iter_mut() {
                if **v == 0xffff_ffff {
                    **v = u64_at(body, o).ok_or_else(|| err("ZIP64 extra field too short"))?;
                    o += 8;
                }
            }
        }
        j += 4 + usize::from(len);
    }
    Ok(())
}
