//! A zip writer of whole members, for `.npz` fixtures: stored or deflated,
//! optionally with every ZIP64 record forced (as numpy writes large
//! members), duplicate names allowed (a reader must refuse them). The
//! library reads archives only (`ginex::internals::import::npz`).

use std::fs::File;
use std::io::{BufWriter, Result, Write};
use std::path::Path;

pub use ginex::internals::import::npz::Method;

const EOCD_SIG: u32 = 0x0605_4b50;
const ZIP64_LOCATOR_SIG: u32 = 0x0706_4b50;
const ZIP64_EOCD_SIG: u32 = 0x0606_4b50;
const CENTRAL_SIG: u32 = 0x0201_4b50;
const LOCAL_SIG: u32 = 0x0403_4b50;

/// Writes a zip archive of whole members (fixtures for tests).
pub struct NpzWriter {
    out: BufWriter<File>,
    offset: u64,
    central: Vec<u8>,
    count: u64,
    zip64: bool,
}

/// The fields a local and a central header share from the CRC on: CRC-32,
/// compressed and uncompressed sizes (`u32::MAX` when in the ZIP64 extra),
/// name length, extra-field length.
fn put_sizes(
    out: &mut Vec<u8>,
    crc: u32,
    (compressed, size): (u32, u32),
    name: &str,
    extra: &[u8],
) {
    out.extend(crc.to_le_bytes());
    out.extend(compressed.to_le_bytes());
    out.extend(size.to_le_bytes());
    out.extend((name.len() as u16).to_le_bytes());
    out.extend((extra.len() as u16).to_le_bytes());
}

/// A ZIP64 extended-information extra field (tag 1) holding `values`.
fn zip64_extra(values: &[u64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + 8 * values.len());
    out.extend(1u16.to_le_bytes());
    out.extend(((8 * values.len()) as u16).to_le_bytes());
    for v in values {
        out.extend(v.to_le_bytes());
    }
    out
}

impl NpzWriter {
    /// Creates `path`; with `force_zip64` every record carries ZIP64 fields
    /// (as numpy does for large members).
    pub fn create(path: &Path, force_zip64: bool) -> Result<Self> {
        let f = File::create(path)?;
        Ok(NpzWriter {
            out: BufWriter::new(f),
            offset: 0,
            central: Vec::new(),
            count: 0,
            zip64: force_zip64,
        })
    }

    fn put(&mut self, b: &[u8]) -> Result<()> {
        self.out.write_all(b)?;
        self.offset += b.len() as u64;
        Ok(())
    }

    /// Adds a member holding `data`.
    pub fn add(&mut self, name: &str, data: &[u8], method: Method) -> Result<()> {
        let crc = ginex::internals::format::crc32(data);
        let body = match method {
            Method::Stored => data.to_vec(),
            Method::Deflate => {
                let mut enc =
                    flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
                enc.write_all(data)?;
                enc.finish()?
            }
        };
        let m: u16 = if method == Method::Stored { 0 } else { 8 };
        let z = self.zip64;
        let (c32, s32) = if z {
            (u32::MAX, u32::MAX)
        } else {
            (body.len() as u32, data.len() as u32)
        };
        let local_offset = self.offset;
        let (local_extra, central_extra) = if z {
            let sizes = [data.len() as u64, body.len() as u64];
            (
                zip64_extra(&sizes),
                zip64_extra(&[sizes[0], sizes[1], local_offset]),
            )
        } else {
            (Vec::new(), Vec::new())
        };
        let mut local = Vec::new();
        local.extend(LOCAL_SIG.to_le_bytes());
        local.extend([45u16, 0, m, 0, 0x21].iter().flat_map(|v| v.to_le_bytes()));
        put_sizes(&mut local, crc, (c32, s32), name, &local_extra);
        local.extend(name.as_bytes());
        local.extend(&local_extra);
        self.put(&local)?;
        self.put(&body)?;
        let c = &mut self.central;
        c.extend(CENTRAL_SIG.to_le_bytes());
        c.extend(
            [45u16, 45, 0, m, 0, 0x21]
                .iter()
                .flat_map(|v| v.to_le_bytes()),
        );
        put_sizes(c, crc, (c32, s32), name, &central_extra);
        c.extend([0u16, 0, 0].iter().flat_map(|v| v.to_le_bytes()));
        c.extend(0u32.to_le_bytes());
        c.extend((if z { u32::MAX } else { local_offset as u32 }).to_le_bytes());
        c.extend(name.as_bytes());
        c.extend(&central_extra);
        self.count += 1;
        Ok(())
    }

    /// Writes the central directory and end records.
    pub fn finish(mut self) -> Result<()> {
        let cd_offset = self.offset;
        let central = std::mem::take(&mut self.central);
        self.put(&central)?;
        let cd_size = central.len() as u64;
        let z = self.zip64;
        if z {
            let rec_at = self.offset;
            let mut r = Vec::new();
            r.extend(ZIP64_EOCD_SIG.to_le_bytes());
            r.extend(44u64.to_le_bytes());
            r.extend([45u16, 45].iter().flat_map(|v| v.to_le_bytes()));
            r.extend([0u32, 0].iter().flat_map(|v| v.to_le_bytes()));
            r.extend(
                [self.count, self.count, cd_size, cd_offset]
                    .iter()
                    .flat_map(|v| v.to_le_bytes()),
            );
            r.extend(ZIP64_LOCATOR_SIG.to_le_bytes());
            r.extend(0u32.to_le_bytes());
            r.extend(rec_at.to_le_bytes());
            r.extend(1u32.to_le_bytes());
            self.put(&r)?;
        }
        let mut e = Vec::new();
        e.extend(EOCD_SIG.to_le_bytes());
        e.extend([0u16, 0].iter().flat_map(|v| v.to_le_bytes()));
        let n16 = if z { 0xffff } else { self.count as u16 };
        e.extend([n16, n16].iter().flat_map(|v| v.to_le_bytes()));
        e.extend((if z { u32::MAX } else { cd_size as u32 }).to_le_bytes());
        e.extend((if z { u32::MAX } else { cd_offset as u32 }).to_le_bytes());
        e.extend(0u16.to_le_bytes());
        self.put(&e)?;
        self.out
            .into_inner()
            .map_err(|e| e.into_error())?
            .sync_all()
    }
}
