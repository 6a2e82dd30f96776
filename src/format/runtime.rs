//! Runtime files: the records a superbatch's inspector writes and its
//! executor reads. Spec: `format/runtime.md`.
//!
//! A runtime file is a common-header file whose payload is a sequence of
//! framed records. Each record carries its own checksummed header, so a
//! reader streaming records finds a torn or damaged record and names the
//! batch and offset, before the whole-payload CRC is ever checked.

use std::path::Path;

use crate::error::{Error, Result};
use crate::format::bytes::{le_u16, le_u32, le_u64};

/// Record magic, `GXRC`.
pub const RECORD_MAGIC: [u8; 4] = *b"GXRC";
/// Offset of the magic in a record header.
pub const REC_MAGIC_OFFSET: usize = 0;
/// Offset of the record kind (`u16`).
pub const REC_KIND_OFFSET: usize = REC_MAGIC_OFFSET + 4;
/// Offset of the reserved `u16`.
pub const REC_RESERVED_OFFSET: usize = REC_KIND_OFFSET + 2;
/// Offset of the batch index (`u64`).
pub const REC_BATCH_OFFSET: usize = REC_RESERVED_OFFSET + 2;
/// Offset of the payload length (`u64`).
pub const REC_LEN_OFFSET: usize = REC_BATCH_OFFSET + 8;
/// Offset of the payload CRC-32 (`u32`).
pub const REC_PAYLOAD_CRC_OFFSET: usize = REC_LEN_OFFSET + 8;
/// Offset of the record header CRC-32 (`u32`) over bytes `0..28`.
pub const REC_HEADER_CRC_OFFSET: usize = REC_PAYLOAD_CRC_OFFSET + 4;
/// Size of a record header.
pub const RECORD_HEADER_SIZE: usize = REC_HEADER_CRC_OFFSET + 4;

/// Largest record payload a reader accepts (a corrupt length must not
/// allocate unbounded memory).
pub const MAX_RECORD_PAYLOAD: u64 = 1 << 34;

/// What a record holds. Numeric values are part of the format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u16)]
pub enum RecordKind {
    /// The sampled node ids of a batch, seeds first.
    Ids = 1,
    /// The hop adjacencies of a batch.
    Adj = 2,
    /// The cache init of a superbatch (batch field = first batch index).
    Init = 3,
    /// The cache update applied after a batch.
    Update = 4,
}

impl RecordKind {
    /// Decodes the numeric kind.
    pub fn from_u16(v: u16) -> Option<RecordKind> {
        [
            RecordKind::Ids,
            RecordKind::Adj,
            RecordKind::Init,
            RecordKind::Update,
        ]
        .into_iter()
        .find(|k| *k as u16 == v)
    }

    /// Name used in messages and JSON.
    pub fn name(self) -> &'static str {
        match self {
            RecordKind::Ids => "ids",
            RecordKind::Adj => "adj",
            RecordKind::Init => "init",
            RecordKind::Update => "update",
        }
    }
}

/// A decoded record header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordHeader {
    /// What the record holds.
    pub kind: RecordKind,
    /// Batch index within the run (superbatch-relative numbering is the
    /// writer's choice; the executor checks the sequence).
    pub batch: u64,
    /// Payload bytes following the header.
    pub payload_len: u64,
    /// CRC-32 of the payload.
    pub payload_crc: u32,
}

impl RecordHeader {
    /// Header for `payload`.
    pub fn for_payload(kind: RecordKind, batch: u64, payload: &[u8]) -> Self {
        RecordHeader {
            kind,
            batch,
            payload_len: payload.len() as u64,
            payload_crc: crate::format::crc32(payload),
        }
    }

    /// Encodes the header.
    pub fn encode(&self) -> [u8; RECORD_HEADER_SIZE] {
        let mut b = [0u8; RECORD_HEADER_SIZE];
        b[..4].copy_from_slice(&RECORD_MAGIC);
        b[REC_KIND_OFFSET..REC_RESERVED_OFFSET].copy_from_slice(&(self.kind as u16).to_le_bytes());
        b[REC_BATCH_OFFSET..REC_LEN_OFFSET].copy_from_slice(&self.batch.to_le_bytes());
        b[REC_LEN_OFFSET..REC_PAYLOAD_CRC_OFFSET].copy_from_slice(&self.payload_len.to_le_bytes());
        b[REC_PAYLOAD_CRC_OFFSET..REC_HEADER_CRC_OFFSET]
            .copy_from_slice(&self.payload_crc.to_le_bytes());
        let crc = crate::format::crc32(&b[..REC_HEADER_CRC_OFFSET]);
        b[REC_HEADER_CRC_OFFSET..].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes a record header found at byte `offset` of `path`.
    pub fn decode(b: &[u8], path: &Path, offset: u64) -> Result<RecordHeader> {
        let bad = |what: String| Error::corrupt(path, offset, format!("runtime record: {what}"));
        if b.len() < RECORD_HEADER_SIZE {
            return Err(bad(format!(
                "torn record header ({} of {RECORD_HEADER_SIZE} bytes)",
                b.len()
            )));
        }
        if b.get(..4) != Some(&RECORD_MAGIC[..]) {
            return Err(bad("bad record magic".into()));
        }
        let stored = le_u32(b, REC_HEADER_CRC_OFFSET);
        let got = crate::format::crc32(b.get(..REC_HEADER_CRC_OFFSET).unwrap_or_default());
        Error::check_crc(path, "runtime record header", offset, stored, got)?;
        let kind_raw = le_u16(b, REC_KIND_OFFSET);
        let kind = RecordKind::from_u16(kind_raw)
            .ok_or_else(|| bad(format!("unknown record kind {kind_raw}")))?;
        if le_u16(b, REC_RESERVED_OFFSET) != 0 {
            return Err(bad("reserved bytes are not zero".into()));
        }
        let payload_len = le_u64(b, REC_LEN_OFFSET);
        let batch = le_u64(b, REC_BATCH_OFFSET);
        if payload_len > MAX_RECORD_PAYLOAD {
            return Err(bad(format!("batch {batch}: payload length {payload_len} exceeds the {MAX_RECORD_PAYLOAD}-byte limit")));
        }
        Ok(RecordHeader {
            kind,
            batch,
            payload_len,
            payload_crc: le_u32(b, REC_PAYLOAD_CRC_OFFSET),
        })
    }
}

/// Appends `ids` as `u64` little-endian.
pub fn encode_u64s(ids: &[u64], out: &mut Vec<u8>) {
    out.reserve(ids.len() * 8);
    for id in ids {
        out.extend_from_slice(&id.to_le_bytes());
    }
}

/// Reads a counted `u64` array at `*at` (count `u64` then the values),
/// advancing `*at`; `what` names the field in errors.
pub fn decode_counted_u64s(
    p: &[u8],
    at: &mut usize,
    what: &str,
    path: &Path,
    base: u64,
) -> Result<Vec<u64>> {
    let count = le_u64(p, *at);
    let start = at.checked_add(8);
    let end = count
        .checked_mul(8)
        .and_then(|b| usize::try_from(b).ok())
        .zip(start)
        .and_then(|(b, s)| s.checked_add(b));
    let (Some(start), Some(end)) = (start, end.filter(|&e| e <= p.len())) else {
        return Err(Error::corrupt(
            path,
            base + *at as u64,
            format!("{what}: count {count} runs past the record"),
        ));
    };
    let values = p
        .get(start..end)
        .unwrap_or_default()
        .chunks_exact(8)
        .map(|c| le_u64(c, 0))
        .collect();
    *at = end;
    Ok(values)
}

/// Appends a counted `u64` array.
pub fn encode_counted_u64s(values: &[u64], out: &mut Vec<u8>) {
    out.extend_from_slice(&(values.len() as u64).to_le_bytes());
    encode_u64s(values, out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn offsets_match_the_spec_table() {
        assert_eq!(
            [
                REC_MAGIC_OFFSET,
                REC_KIND_OFFSET,
                REC_RESERVED_OFFSET,
                REC_BATCH_OFFSET,
                REC_LEN_OFFSET,
                REC_PAYLOAD_CRC_OFFSET,
                REC_HEADER_CRC_OFFSET
            ],
            [0, 4, 6, 8, 16, 24, 28]
        );
        assert_eq!(RECORD_HEADER_SIZE, 32);
    }

    proptest! {
        #[test]
        fn header_round_trip_and_bit_flips(batch in any::<u64>(), len in 0u64..MAX_RECORD_PAYLOAD, bit in 0usize..RECORD_HEADER_SIZE * 8) {
            let h = RecordHeader { kind: RecordKind::Update, batch, payload_len: len, payload_crc: 9 };
            let b = h.encode();
            prop_assert_eq!(RecordHeader::decode(&b, Path::new("r"), 0).unwrap(), h);
            let mut d = b;
            d[bit / 8] ^= 1 << (bit % 8);
            prop_assert!(RecordHeader::decode(&d, Path::new("r"), 0).is_err());
        }

        #[test]
        fn counted_arrays_round_trip(a in proptest::collection::vec(any::<u64>(), 0..50), b in proptest::collection::vec(any::<u64>(), 0..50)) {
            let mut p = Vec::new();
            encode_counted_u64s(&a, &mut p);
            encode_counted_u64s(&b, &mut p);
            let mut at = 0;
            prop_assert_eq!(decode_counted_u64s(&p, &mut at, "a", Path::new("r"), 0).unwrap(), a.clone());
            prop_assert_eq!(decode_counted_u64s(&p, &mut at, "b", Path::new("r"), 0).unwrap(), b);
            prop_assert_eq!(at, p.len());
            let mut single = Vec::new();
            encode_counted_u64s(&a, &mut single);
            prop_assert!(decode_counted_u64s(&single[..single.len() - 1], &mut 0, "a", Path::new("r"), 0).is_err());
        }
    }

    #[test]
    fn huge_count_is_an_error_not_an_allocation() {
        let p = u64::MAX.to_le_bytes();
        assert!(decode_counted_u64s(&p, &mut 0, "ids", Path::new("r"), 0).is_err());
    }
}
