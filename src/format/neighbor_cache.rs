//! The neighbor-cache file: a fixed header, a membership bitmap with a rank
//! directory (O(1) location of a node's entry), list offsets, and the blob
//! of encoded lists. Spec: `format/neighbor-cache.md`.
//!
//! Codecs for one sorted in-neighbor list; every encoded list starts with
//! its length as a LEB128 varint (checked against the store's degree when
//! decoding, which bounds every allocation), then:
//! * `raw` — ids at the store's index width (Ginex's layout);
//! * `zstd-list` — the raw bytes compressed with zstd, each list on its own
//!   (Ginex++ §3.3);
//! * `delta-bitpack` — first id as a LEB128 varint, then the `d - 1` gaps
//!   between consecutive ids bit-packed at the width of the largest gap
//!   (one byte gives the width);
//! * `block-bitpack` — the same idea with the first id packed among the
//!   gaps when that is smaller, and a compact location table: one `u64`
//!   per block of [`BLOCK_LISTS`] lists plus a `u16` (or `u32`) end offset
//!   per list stored at the start of its block, instead of a `u64` per list.

use std::path::Path;

use crate::error::{Error, Result};
use crate::format::bytes::{le_u32, le_u64};
use crate::format::csc::IndexWidth;
use crate::format::version::{Version, V1_1};

/// Offset of the store's node count (`u64`) in the payload.
pub const NC_NUM_NODES_OFFSET: usize = 0;
/// Offset of the CRC of the store's manifest payload (`u32`): ties the cache
/// to one store.
pub const NC_STORE_CRC_OFFSET: usize = NC_NUM_NODES_OFFSET + 8;
/// Offset of the codec (`u8`).
pub const NC_CODEC_OFFSET: usize = NC_STORE_CRC_OFFSET + 4;
/// Offset of the index width in bytes (`u8`).
pub const NC_WIDTH_OFFSET: usize = NC_CODEC_OFFSET + 1;
/// Offset of the reserved `u16`.
pub const NC_RESERVED_OFFSET: usize = NC_WIDTH_OFFSET + 1;
/// Offset of the number of cached lists (`u64`).
pub const NC_COUNT_OFFSET: usize = NC_RESERVED_OFFSET + 2;
/// Offset of the blob length (`u64`).
pub const NC_BLOB_LEN_OFFSET: usize = NC_COUNT_OFFSET + 8;
/// Size of the fixed part of a version 1.0 file; the bitmap follows.
pub const NC_FIXED_SIZE_V1_0: usize = NC_BLOB_LEN_OFFSET + 8;
/// Offset of the byte budget the cache was built for (`u64`, version 1.1).
pub const NC_BUDGET_OFFSET: usize = NC_FIXED_SIZE_V1_0;
/// Size of the fixed part of a version 1.1 file; the bitmap follows.
pub const NC_FIXED_SIZE: usize = NC_BUDGET_OFFSET + 8;

/// Nodes per rank-directory entry (one `u32` count per 512 bitmap bits).
pub const RANK_BLOCK: u64 = 512;

/// Lists per block of the `block-bitpack` location table.
pub const BLOCK_LISTS: u64 = 32;
/// Bit of a `block-bitpack` directory entry that marks a block whose end
/// offsets are `u32` (a block spanning more than `u16::MAX` bytes).
pub const BLOCK_WIDE_BIT: u64 = 1 << 63;

/// How lists are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Codec {
    /// Plain ids.
    Raw = 1,
    /// zstd per list.
    ZstdList = 2,
    /// Delta + bit packing per list.
    DeltaBitpack = 3,
    /// Delta + bit packing with a block location table.
    BlockBitpack = 4,
}

impl Codec {
    /// All codecs.
    pub const ALL: [Codec; 4] = [
        Codec::Raw,
        Codec::ZstdList,
        Codec::DeltaBitpack,
        Codec::BlockBitpack,
    ];

    /// Decodes the numeric code.
    pub fn from_u8(v: u8) -> Option<Codec> {
        Codec::ALL.into_iter().find(|c| *c as u8 == v)
    }

    /// Name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Codec::Raw => "raw",
            Codec::ZstdList => "zstd-list",
            Codec::DeltaBitpack => "delta-bitpack",
            Codec::BlockBitpack => "block-bitpack",
        }
    }

    /// Parses a name.
    pub fn parse(s: &str) -> Result<Codec> {
        Error::parse_name(s, "codec", &Codec::ALL, Codec::name)
    }

    /// Appends the encoding of the sorted `list` to `out`: its length as a
    /// LEB128 varint, then the codec's bytes.
    pub fn encode(self, list: &[u64], width: IndexWidth, out: &mut Vec<u8>) -> Result<()> {
        push_varint(list.len() as u64, out);
        match self {
            Codec::Raw => {
                for &id in list {
                    width.push(id, out);
                }
            }
            Codec::ZstdList => {
                let mut raw = Vec::with_capacity(list.len() * width.bytes());
                for &id in list {
                    width.push(id, &mut raw);
                }
                // (Compressing bytes in memory fails only on a broken zstd.)
                let z = zstd::bulk::compress(&raw, 3)
                    .map_err(|e| Error::internal(format!("zstd: {e}")))?;
                out.extend_from_slice(&z);
            }
            Codec::DeltaBitpack => encode_delta_bitpack(list, out),
            Codec::BlockBitpack => encode_block_bitpack(list, out),
        }
        Ok(())
    }

    /// Decodes one encoded list (exactly `bytes`) into `out`. `max_degree`
    /// bounds the length it may claim (the store's degree when known), so a
    /// corrupt length never allocates more.
    pub fn decode(
        self,
        bytes: &[u8],
        max_degree: u64,
        width: IndexWidth,
        out: &mut Vec<u64>,
        path: &Path,
        at: u64,
    ) -> Result<()> {
        let bad = |what: &str| Error::corrupt(path, at, format!("neighbor-cache list: {what}"));
        let mut pos = 0usize;
        let degree = read_varint(bytes, &mut pos).ok_or_else(|| bad("truncated length"))?;
        if degree > max_degree {
            return Err(bad("length exceeds the node's degree"));
        }
        let bytes = bytes.get(pos..).ok_or_else(|| bad("truncated length"))?;
        let raw_len = degree
            .checked_mul(width.bytes() as u64)
            .ok_or_else(|| bad("degree overflows"))?;
        match self {
            Codec::Raw => {
                if bytes.len() as u64 != raw_len {
                    return Err(bad("length does not match the degree"));
                }
                width.decode(bytes, out);
            }
            Codec::ZstdList => {
                // The frame must say its content size, and that size must be
                // the degree's: checked before any buffer is sized by it.
                match zstd::zstd_safe::get_frame_content_size(bytes) {
                    Ok(Some(n)) if n == raw_len => {}
                    _ => return Err(bad("zstd frame size does not match the degree")),
                }
                let raw = ZSTD_DECODER.with(|cell| {
                    let mut slot = cell.borrow_mut();
                    if slot.is_none() {
                        *slot = zstd::bulk::Decompressor::new().ok();
                    }
                    let d = slot.as_mut()?;
                    d.decompress(bytes, raw_len as usize).ok()
                });
                let raw = raw
                    .ok_or_else(|| bad("zstd data does not decompress within the degree's size"))?;
                if raw.len() as u64 != raw_len {
                    return Err(bad("decompressed length does not match the degree"));
                }
                width.decode(&raw, out);
            }
            Codec::DeltaBitpack => decode_delta_bitpack(bytes, degree, out)
                .ok_or_else(|| bad("malformed delta-bitpack data"))?,
            Codec::BlockBitpack => decode_block_bitpack(bytes, degree, out)
                .ok_or_else(|| bad("malformed block-bitpack data"))?,
        }
        Ok(())
    }
}

thread_local! {
    /// One zstd decompression context per thread (creating one per list
    /// costs more than decoding the list).
    static ZSTD_DECODER: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { std::cell::RefCell::new(None) };
}

fn push_varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn read_varint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at)?;
        *at += 1;
        v |= u64::from(byte & 0x7f).checked_shl(shift)?;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// The gaps between consecutive ids of a sorted list.
fn gaps(list: &[u64]) -> impl Iterator<Item = u64> + '_ {
    list.windows(2).map(|w| match w {
        [a, b] => b - a,
        _ => 0,
    })
}

fn encode_delta_bitpack(list: &[u64], out: &mut Vec<u8>) {
    let Some((&first, _)) = list.split_first() else {
        return;
    };
    let max_gap = gaps(list).max().unwrap_or(0);
    let bits = bits_of(max_gap);
    out.push(bits as u8);
    push_varint(first, out);
    pack_bits(gaps(list), bits, out);
}

fn decode_delta_bitpack(b: &[u8], degree: u64, out: &mut Vec<u64>) -> Option<()> {
    if degree == 0 {
        return b.is_empty().then_some(());
    }
    let bits = u32::from(*b.first()?);
    if bits > 64 {
        return None;
    }
    let mut at = 1;
    let first = read_varint(b, &mut at)?;
    let gaps = degree - 1;
    let need = (gaps.checked_mul(u64::from(bits))?).div_ceil(8);
    if (b.len() - at) as u64 != need {
        return None;
    }
    out.reserve(degree as usize);
    out.push(first);
    let mask: u128 = if bits == 64 {
        u128::from(u64::MAX)
    } else {
        (1u128 << bits) - 1
    };
    let (mut acc, mut filled, mut prev) = (0u128, 0u32, first);
    let mut bytes = b.get(at..)?.iter();
    for _ in 0..gaps {
        while filled < bits {
            acc |= u128::from(*bytes.next()?) << filled;
            filled += 8;
        }
        let gap = (acc & mask) as u64;
        acc >>= bits;
        filled -= bits;
        prev = prev.checked_add(gap)?;
        out.push(prev);
    }
    Some(())
}

/// Bits needed for `v` (0 for 0).
fn bits_of(v: u64) -> u32 {
    64 - v.leading_zeros()
}

/// Appends `values` packed at `bits` bits each, low bits first.
fn pack_bits(values: impl Iterator<Item = u64>, bits: u32, out: &mut Vec<u8>) {
    let mut acc: u128 = 0;
    let mut filled = 0u32;
    for v in values {
        acc |= u128::from(v) << filled;
        filled += bits;
        while filled >= 8 {
            out.push(acc as u8);
            acc >>= 8;
            filled -= 8;
        }
    }
    if filled > 0 {
        out.push(acc as u8);
    }
}

/// Flag in the width byte of a `block-bitpack` list: the first id is packed
/// with the gaps (else it precedes them as a varint).
const FIRST_INLINE: u8 = 0x80;

fn encode_block_bitpack(list: &[u64], out: &mut Vec<u8>) {
    let Some((&first, _)) = list.split_first() else {
        return;
    };
    let max_gap = gaps(list).max().unwrap_or(0);
    let gap_bits = bits_of(max_gap);
    let inline_bits = gap_bits.max(bits_of(first));
    let d = list.len() as u64;
    let inline_len = (d * u64::from(inline_bits)).div_ceil(8);
    let mut first_varint = Vec::with_capacity(10);
    push_varint(first, &mut first_varint);
    let apart_len = first_varint.len() as u64 + ((d - 1) * u64::from(gap_bits)).div_ceil(8);
    let gaps = gaps(list);
    if inline_len <= apart_len {
        out.push(inline_bits as u8 | FIRST_INLINE);
        pack_bits(std::iter::once(first).chain(gaps), inline_bits, out);
    } else {
        out.push(gap_bits as u8);
        out.extend_from_slice(&first_varint);
        pack_bits(gaps, gap_bits, out);
    }
}

/// Reads the `bits`-bit value at bit `pos` of `b` (`bits <= 64`); None past
/// the end.
#[inline]
fn bits_at(b: &[u8], pos: u64, bits: u32) -> Option<u64> {
    let byte = (pos / 8) as usize;
    let shift = (pos % 8) as u32;
    if bits == 0 {
        return Some(0);
    }
    if bits + shift <= 64 {
        if let Some(w) = b.get(byte..byte + 8) {
            let mut a = [0u8; 8];
            a.copy_from_slice(w);
            let v = u64::from_le_bytes(a) >> shift;
            return Some(if bits == 64 {
                v
            } else {
                v & ((1u64 << bits) - 1)
            });
        }
    }
    let need = (shift + bits).div_ceil(8) as usize;
    let mut acc = 0u128;
    for (k, x) in b.get(byte..byte + need)?.iter().enumerate() {
        acc |= u128::from(*x) << (8 * k);
    }
    let v = (acc >> shift) as u64;
    Some(if bits == 64 {
        v
    } else {
        v & ((1u64 << bits) - 1)
    })
}

fn decode_block_bitpack(b: &[u8], degree: u64, out: &mut Vec<u64>) -> Option<()> {
    if degree == 0 {
        return b.is_empty().then_some(());
    }
    let flag = *b.first()?;
    let bits = u32::from(flag & !FIRST_INLINE);
    if bits > 64 {
        return None;
    }
    let mut at = 1;
    let (mut prev, packed) = if flag & FIRST_INLINE != 0 {
        (0u64, degree)
    } else {
        (read_varint(b, &mut at)?, degree - 1)
    };
    let need = packed.checked_mul(u64::from(bits))?.div_ceil(8);
    let body = b.get(at..)?;
    if body.len() as u64 != need {
        return None;
    }
    out.reserve(degree as usize);
    if flag & FIRST_INLINE == 0 {
        out.push(prev);
    }
    let mut pos = 0u64;
    for _ in 0..packed {
        prev = prev.checked_add(bits_at(body, pos, bits)?)?;
        pos += u64::from(bits);
        out.push(prev);
    }
    Some(())
}

/// The fixed part of a neighbor-cache payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NcacheHeader {
    /// Nodes of the store the cache was built for.
    pub num_nodes: u64,
    /// CRC of that store's manifest payload.
    pub store_crc: u32,
    /// List codec.
    pub codec: Codec,
    /// Id width of the store.
    pub width: IndexWidth,
    /// Cached lists.
    pub count: u64,
    /// Blob bytes.
    pub blob_len: u64,
    /// The byte budget the cache was built for (None in version 1.0 files,
    /// which did not record it).
    pub budget: Option<u64>,
}

impl NcacheHeader {
    /// Size of the fixed part (it grew by the budget in version 1.1).
    pub fn fixed_len(&self) -> u64 {
        if self.budget.is_some() {
            NC_FIXED_SIZE as u64
        } else {
            NC_FIXED_SIZE_V1_0 as u64
        }
    }

    /// Bytes of the membership bitmap.
    pub fn bitmap_len(&self) -> u64 {
        self.num_nodes.div_ceil(64) * 8
    }

    /// Bytes of the rank directory.
    pub fn rank_len(&self) -> u64 {
        self.num_nodes.div_ceil(RANK_BLOCK) * 4
    }

    /// Bytes of the location table: `count + 1` u64 offsets, or for
    /// `block-bitpack` one u64 per block of [`BLOCK_LISTS`] lists.
    pub fn offsets_len(&self) -> u64 {
        match self.codec {
            Codec::BlockBitpack => self.count.div_ceil(BLOCK_LISTS) * 8,
            _ => (self.count + 1) * 8,
        }
    }

    /// Total payload length implied.
    pub fn payload_len(&self) -> u64 {
        self.fixed_len() + self.bitmap_len() + self.rank_len() + self.offsets_len() + self.blob_len
    }

    /// Encodes the fixed part.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.num_nodes.to_le_bytes());
        out.extend_from_slice(&self.store_crc.to_le_bytes());
        out.push(self.codec as u8);
        out.push(self.width.bytes() as u8);
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(&self.count.to_le_bytes());
        out.extend_from_slice(&self.blob_len.to_le_bytes());
        if let Some(budget) = self.budget {
            out.extend_from_slice(&budget.to_le_bytes());
        }
    }

    /// Decodes and checks the fixed part of a file of `version` against the
    /// payload length.
    pub fn decode(p: &[u8], version: Version, path: &Path) -> Result<Self> {
        let bad = |at: usize, what: String| {
            Error::corrupt(path, at as u64, format!("neighbor cache: {what}"))
        };
        let has_budget = version >= V1_1;
        let fixed = if has_budget {
            NC_FIXED_SIZE
        } else {
            NC_FIXED_SIZE_V1_0
        };
        if p.len() < fixed {
            return Err(bad(0, "payload shorter than its fixed header".into()));
        }
        // Within the fixed header, checked above.
        let byte = |at: usize| p.get(at).copied().unwrap_or_default();
        let codec_raw = byte(NC_CODEC_OFFSET);
        let codec = Codec::from_u8(codec_raw)
            .ok_or_else(|| bad(NC_CODEC_OFFSET, format!("unknown codec {codec_raw}")))?;
        let width = IndexWidth::from_bytes(byte(NC_WIDTH_OFFSET))
            .ok_or_else(|| bad(NC_WIDTH_OFFSET, "bad index width".into()))?;
        if p.get(NC_RESERVED_OFFSET..NC_COUNT_OFFSET) != Some(&[0, 0][..]) {
            return Err(bad(
                NC_RESERVED_OFFSET,
                "reserved bytes are not zero".into(),
            ));
        }
        let h = NcacheHeader {
            num_nodes: le_u64(p, NC_NUM_NODES_OFFSET),
            store_crc: le_u32(p, NC_STORE_CRC_OFFSET),
            codec,
            width,
            count: le_u64(p, NC_COUNT_OFFSET),
            blob_len: le_u64(p, NC_BLOB_LEN_OFFSET),
            budget: has_budget.then(|| le_u64(p, NC_BUDGET_OFFSET)),
        };
        if h.count > h.num_nodes
            || h.num_nodes > (1 << 40)
            || h.blob_len > p.len() as u64
            || h.payload_len() != p.len() as u64
        {
            return Err(bad(
                NC_COUNT_OFFSET,
                format!(
                    "sizes ({} lists of {} nodes, {}-byte blob) do not match the {}-byte payload",
                    h.count,
                    h.num_nodes,
                    h.blob_len,
                    p.len()
                ),
            ));
        }
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn offsets_match_the_spec_table() {
        assert_eq!(
            [
                NC_NUM_NODES_OFFSET,
                NC_STORE_CRC_OFFSET,
                NC_CODEC_OFFSET,
                NC_WIDTH_OFFSET,
                NC_RESERVED_OFFSET,
                NC_COUNT_OFFSET,
                NC_BLOB_LEN_OFFSET,
                NC_FIXED_SIZE_V1_0,
                NC_BUDGET_OFFSET,
                NC_FIXED_SIZE
            ],
            [0, 8, 12, 13, 14, 16, 24, 32, 32, 40]
        );
    }

    fn sorted_list(max: u64) -> impl Strategy<Value = Vec<u64>> {
        proptest::collection::vec(0..max, 0..300).prop_map(|mut v| {
            v.sort_unstable();
            v
        })
    }

    fn round_trip(codec: Codec, list: &[u64], width: IndexWidth) {
        let mut enc = Vec::new();
        codec.encode(list, width, &mut enc).unwrap();
        let mut dec = Vec::new();
        codec
            .decode(&enc, list.len() as u64, width, &mut dec, Path::new("c"), 0)
            .unwrap();
        assert_eq!(dec, list, "{codec:?}");
        // A wrong degree is never silently accepted.
        let mut again = Vec::new();
        if !list.is_empty() {
            assert!(codec
                .decode(
                    &enc,
                    list.len() as u64 - 1,
                    width,
                    &mut again,
                    Path::new("c"),
                    0
                )
                .is_err());
        }
    }

    proptest! {
        #[test]
        fn codecs_round_trip_u32(list in sorted_list(u64::from(u32::MAX))) {
            for c in Codec::ALL { round_trip(c, &list, IndexWidth::U32); }
        }

        #[test]
        fn codecs_round_trip_near_u32_max(list in sorted_list(1000)) {
            let shifted: Vec<u64> = list.iter().map(|x| u64::from(u32::MAX) - 1000 + x).collect();
            for c in Codec::ALL { round_trip(c, &shifted, IndexWidth::U32); }
        }

        #[test]
        fn codecs_round_trip_u64(list in sorted_list(u64::MAX)) {
            for c in Codec::ALL { round_trip(c, &list, IndexWidth::U64); }
        }

        #[test]
        fn corrupt_input_is_an_error_not_a_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64), degree in 0u64..1_000_000) {
            for c in Codec::ALL {
                let mut out = Vec::new();
                let r = c.decode(&bytes, degree, IndexWidth::U32, &mut out, Path::new("c"), 0);
                prop_assert!(out.len() as u64 <= degree);
                // Damaged data is `Corrupt`, never the caller's fault or a bug.
                prop_assert!(r.is_ok() || matches!(r, Err(Error::Corrupt { .. })), "{c:?}: {r:?}");
            }
        }
    }

    /// A flipped byte in a list of the blob (its length, or inside a zstd
    /// frame) is `Corrupt`, naming the file and the list's offset.
    #[test]
    fn a_flipped_byte_in_a_list_is_corrupt_at_the_list() {
        let list = [3u64, 7, 9, 1000, 5000];
        for c in Codec::ALL {
            let mut enc = Vec::new();
            c.encode(&list, IndexWidth::U32, &mut enc).unwrap();
            enc[0] ^= 0x0f; // length 5 becomes 10, above the degree
            let err = c
                .decode(
                    &enc,
                    5,
                    IndexWidth::U32,
                    &mut Vec::new(),
                    Path::new("n.ncache"),
                    4096,
                )
                .unwrap_err();
            match err {
                Error::Corrupt { path, offset, what } => {
                    assert_eq!((path.as_path(), offset), (Path::new("n.ncache"), 4096));
                    assert!(what.contains("degree"), "{what}");
                }
                other => panic!("{c:?}: {other:?}"),
            }
        }
        let mut enc = Vec::new();
        Codec::ZstdList
            .encode(&list, IndexWidth::U32, &mut enc)
            .unwrap();
        let mut corrupt = 0;
        for at in 1..enc.len() {
            let mut bad = enc.clone();
            bad[at] ^= 0xff;
            let mut out = Vec::new();
            match Codec::ZstdList.decode(&bad, 5, IndexWidth::U32, &mut out, Path::new("n"), 0) {
                Err(Error::Corrupt { .. }) => corrupt += 1,
                Err(other) => panic!("byte {at}: {other:?}"),
                Ok(()) => {} // (a flip zstd cannot see: the blob's CRC does)
            }
        }
        assert!(corrupt > 0);
    }

    #[test]
    fn huge_and_empty_lists() {
        let big: Vec<u64> = (0..200_000).map(|i| i * 3).collect();
        for c in Codec::ALL {
            round_trip(c, &big, IndexWidth::U32);
            round_trip(c, &[], IndexWidth::U32);
            round_trip(c, &[u64::MAX], IndexWidth::U64);
        }
        let mut enc = Vec::new();
        Codec::DeltaBitpack
            .encode(&big, IndexWidth::U32, &mut enc)
            .unwrap();
        assert!(
            enc.len() < big.len(),
            "gaps of 3 need 2 bits: {} bytes",
            enc.len()
        );
    }
}
