//! Runtime files: the records a superbatch's inspector writes and its
//! executor reads. Spec: `format/runtime.md`.
//!
//! A runtime file is a common-header file whose payload is a sequence of
//! framed records. Each record carries its own checksummed header, so a
//! reader streaming records finds a torn or damaged record and names the
//! batch and offset, before the whole-payload CRC is ever checked. The
//! payloads are bincode encodings of the structs here ([`PAYLOAD_CONFIG`]).

use std::borrow::Cow;
use std::path::Path;

use bincode::config::{
    Config, Configuration, Endianness, Fixint, IntEncoding, Limit, LittleEndian,
};
use bincode::de::read::Reader;
use bincode::de::Decoder;
use bincode::enc::Encoder;
use bincode::error::{DecodeError, EncodeError};
use bincode::{Decode, Encode};

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
    /// The store, run and parameters the file belongs to (v1.2; the first
    /// record of every file; batch field = the superbatch's first batch).
    Run = 5,
    /// A link batch's positive and negative edges over its seeds (v1.6;
    /// after its `adj` record, in the samples file of a link run).
    Link = 6,
}

impl RecordKind {
    /// Decodes the numeric kind.
    pub fn from_u16(v: u16) -> Option<RecordKind> {
        [
            RecordKind::Ids,
            RecordKind::Adj,
            RecordKind::Init,
            RecordKind::Update,
            RecordKind::Run,
            RecordKind::Link,
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
            RecordKind::Run => "run",
            RecordKind::Link => "link",
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

// ---------------------------------------------------------------------------
// Record payloads: bincode encodings of the structs below.
// ---------------------------------------------------------------------------

/// The bincode configuration of every record payload (bincode 2.x):
/// little-endian, fixed-width integers (a `u64` is 8 bytes, a length is a
/// `u64`), and a decode limit of [`MAX_RECORD_PAYLOAD`] bytes.
pub type PayloadConfig =
    Configuration<LittleEndian, Fixint, Limit<{ MAX_RECORD_PAYLOAD as usize }>>;

/// The one [`PayloadConfig`] value every payload is written and read with.
pub const PAYLOAD_CONFIG: PayloadConfig = bincode::config::standard()
    .with_little_endian()
    .with_fixed_int_encoding()
    .with_limit::<{ MAX_RECORD_PAYLOAD as usize }>();

/// Encodes `value` as a record payload ([`PAYLOAD_CONFIG`]), reserving
/// `size_hint` bytes up front.
pub fn encode_payload<T: Encode>(value: &T, size_hint: usize) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(size_hint);
    bincode::encode_into_std_write(value, &mut out, PAYLOAD_CONFIG)
        .map_err(|e| Error::internal(format!("encoding a runtime record payload: {e}")))?;
    Ok(out)
}

/// Decodes a whole record payload as `T` ([`PAYLOAD_CONFIG`]). The error
/// says what is wrong, for the caller to place (file, record, offset): the
/// payload ends inside a field (a torn payload, or a count larger than the
/// record), a value is invalid, or bytes follow the last field.
pub fn decode_payload<T: Decode<()>>(p: &[u8]) -> std::result::Result<T, String> {
    let (value, used) =
        bincode::decode_from_slice::<T, _>(p, PAYLOAD_CONFIG).map_err(|e| match e {
            DecodeError::UnexpectedEnd { additional } => format!(
                "the {}-byte payload ends inside a field ({additional} more bytes needed: a torn payload, or a count larger than the record)",
                p.len()
            ),
            DecodeError::LimitExceeded => format!(
                "the payload exceeds the decode limit of {MAX_RECORD_PAYLOAD} bytes"
            ),
            DecodeError::InvalidBooleanValue(v) => {
                format!("invalid boolean {v} (only 0 and 1 are defined)")
            }
            DecodeError::OutsideUsizeRange(v) => {
                format!("count {v} is larger than this machine can address")
            }
            DecodeError::Other(what) => what.to_string(),
            other => format!("undecodable payload ({other})"),
        })?;
    if used != p.len() {
        return Err(format!(
            "{} unexpected bytes after the last field (at payload byte {used})",
            p.len() - used
        ));
    }
    Ok(value)
}

/// A number a [`Seq`] holds: its fixed width and little-endian decoding.
pub trait SeqInt: Copy + Encode + 'static {
    /// Bytes per value under [`PAYLOAD_CONFIG`].
    const SIZE: usize;
    /// The value of `SIZE` little-endian bytes.
    fn from_le(b: &[u8]) -> Self;
}

macro_rules! seq_int {
    ($($t:ty),*) => {$(
        impl SeqInt for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn from_le(b: &[u8]) -> Self {
                <[u8; std::mem::size_of::<$t>()]>::try_from(b).map_or(<$t>::default(), <$t>::from_le_bytes)
            }
        }
    )*};
}
seq_int!(u32, u64, i64, f32);

/// A sequence of integers in a payload, encoded exactly as bincode encodes
/// a `Vec<T>` (a `u64` count, then the values). Borrowed when written,
/// owned when read. Its decoder is bincode's, with two differences: it
/// checks that the payload holds all `count` values before allocating
/// them (bincode's `Vec` preallocates whatever count it reads, bounded
/// only by the 16 GiB limit), and under [`PAYLOAD_CONFIG`] it converts
/// them in one pass over the payload rather than one call per value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seq<'a, T: SeqInt>(pub Cow<'a, [T]>);

impl<'a, T: SeqInt> Seq<'a, T> {
    /// Borrows `values` for writing.
    pub fn borrowed(values: &'a [T]) -> Self {
        Seq(Cow::Borrowed(values))
    }

    /// The values.
    pub fn into_vec(self) -> Vec<T> {
        self.0.into_owned()
    }
}

impl<T: SeqInt> std::ops::Deref for Seq<'_, T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        &self.0
    }
}

impl<T: SeqInt> Encode for Seq<'_, T> {
    fn encode<E: Encoder>(&self, e: &mut E) -> std::result::Result<(), EncodeError> {
        (self.0.len() as u64).encode(e)?;
        self.0.iter().try_for_each(|v| v.encode(e))
    }
}

impl<T: SeqInt + Decode<C>, C> Decode<C> for Seq<'_, T> {
    fn decode<D: Decoder<Context = C>>(d: &mut D) -> std::result::Result<Self, DecodeError> {
        let count = u64::decode(d)?;
        let len = usize::try_from(count).map_err(|_| DecodeError::OutsideUsizeRange(count))?;
        d.claim_container_read::<T>(len)?;
        let fixed_le = matches!(d.config().int_encoding(), IntEncoding::Fixed)
            && matches!(d.config().endianness(), Endianness::Little);
        let bytes = len.saturating_mul(T::SIZE);
        let values: Vec<T> = match d.reader().peek_read(bytes) {
            Some(b) if fixed_le => b.chunks_exact(T::SIZE).map(T::from_le).collect(),
            _ => {
                // Not all there (an error once the payload ends), or not a
                // slice or not fixed-width little-endian: value by value,
                // preallocating at most 1 MiB.
                let mut v = Vec::with_capacity(len.min((1 << 20) / T::SIZE));
                for _ in 0..len {
                    // As bincode's `Vec`: the value claims its own bytes.
                    d.unclaim_bytes_read(T::SIZE);
                    v.push(T::decode(d)?);
                }
                return Ok(Seq(Cow::Owned(v)));
            }
        };
        d.reader().consume(bytes);
        Ok(Seq(Cow::Owned(values)))
    }
}
impl<'de, T: SeqInt + Decode<C>, C> bincode::BorrowDecode<'de, C> for Seq<'_, T> {
    fn borrow_decode<D: bincode::de::BorrowDecoder<'de, Context = C>>(
        d: &mut D,
    ) -> std::result::Result<Self, DecodeError> {
        Decode::decode(d)
    }
}

/// `ids` payload: the sampled node ids of a batch, seeds first.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode)]
pub struct IdsPayload<'a> {
    /// The ids, in gather order.
    pub ids: Seq<'a, u64>,
}

/// `init` payload: the node ids the feature cache holds before the
/// superbatch's first batch.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode)]
pub struct InitPayload<'a> {
    /// The ids kept, then the ids to load.
    pub init: Seq<'a, u64>,
}

/// `update` payload: the cache update applied after a batch.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode)]
pub struct UpdatePayload<'a> {
    /// Ids inserted into the cache.
    pub in_ids: Seq<'a, u64>,
    /// Ids evicted.
    pub out_ids: Seq<'a, u64>,
    /// Row of each inserted id in the rows gathered since the previous update.
    pub in_positions: Seq<'a, u64>,
}

/// `adj` payload: the hop adjacencies of a batch, input layer first.
/// Encoded as bincode encodes the struct (the hops as a `Vec`); decoded by
/// hand only to refuse more than [`MAX_RUN_FANOUTS`] hops before
/// allocating them.
#[derive(Debug, Clone, PartialEq, Eq, Encode)]
pub struct AdjPayload<'a> {
    /// The hops (at most [`MAX_RUN_FANOUTS`]).
    pub hops: Vec<HopPayload<'a>>,
}

impl<C> Decode<C> for AdjPayload<'_> {
    fn decode<D: Decoder<Context = C>>(d: &mut D) -> std::result::Result<Self, DecodeError> {
        let count = u64::decode(d)?;
        if count > MAX_RUN_FANOUTS as u64 {
            return Err(DecodeError::Other("more than 64 hops"));
        }
        let hops = (0..count)
            .map(|_| HopPayload::decode(d))
            .collect::<std::result::Result<_, _>>()?;
        Ok(AdjPayload { hops })
    }
}
bincode::impl_borrow_decode!(AdjPayload<'_>);

/// One hop of an [`AdjPayload`], in local indices (into the batch's ids).
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode)]
pub struct HopPayload<'a> {
    /// Targets: `ids[..num_dst]`.
    pub num_dst: u64,
    /// Sources: `ids[..num_src]`.
    pub num_src: u64,
    /// Source of each edge (`< num_src`).
    pub src: Seq<'a, u32>,
    /// Target of each edge (`< num_dst`), as many as `src`.
    pub dst: Seq<'a, u32>,
}

/// `link` payload: a link batch's supervision, indices into its seeds
/// (`sample::link::LinkLabels`).
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode)]
pub struct LinkPayload<'a> {
    /// Source of each positive edge (P).
    pub src: Seq<'a, u32>,
    /// Destination of each positive edge (P).
    pub dst: Seq<'a, u32>,
    /// Negatives per positive (K).
    pub neg: u64,
    /// Negative destinations, `P × K` row-major.
    pub neg_dst: Seq<'a, u32>,
}

/// `adj` payload of a LABOR run (v1.8 files whose `run` record names a
/// sampler): an [`AdjPayload`], then each hop's edge weights
/// (`sample::sampler::Hop::weights`), as many hops and, per hop, as many
/// weights as edges (checked by `decode_hops_with`).
#[derive(Debug, Clone, PartialEq, Encode)]
pub struct WeightedAdjPayload<'a> {
    /// The hops.
    pub adj: AdjPayload<'a>,
    /// Per hop, each edge's importance weight.
    pub weights: Vec<Seq<'a, f32>>,
}

impl<C> Decode<C> for WeightedAdjPayload<'_> {
    fn decode<D: Decoder<Context = C>>(d: &mut D) -> std::result::Result<Self, DecodeError> {
        let adj = AdjPayload::decode(d)?;
        let count = u64::decode(d)?;
        if count > MAX_RUN_FANOUTS as u64 {
            return Err(DecodeError::Other("more than 64 hops of weights"));
        }
        let weights = (0..count)
            .map(|_| Seq::<f32>::decode(d))
            .collect::<std::result::Result<_, _>>()?;
        Ok(WeightedAdjPayload { adj, weights })
    }
}
bincode::impl_borrow_decode!(WeightedAdjPayload<'_>);

/// Most fanouts a run record holds, and most hops an `adj` record holds.
pub const MAX_RUN_FANOUTS: usize = 64;

mod stamp;
pub use stamp::{
    LinkStamp, RelationFanoutsStamp, RunStamp, SamplerStamp, MAX_STAMP_RELATIONS, SAMPLER_CODES,
};

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

    fn stamp() -> RunStamp {
        stamp::tests::stamp()
    }

    pub(super) fn le(v: &[u64]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    /// The payloads are the bytes `format/runtime.md` spells out, field by
    /// field (bincode 2, fixed-width little-endian integers, u64 lengths).
    #[test]
    fn payload_bytes_match_the_spec() {
        let s = stamp();
        let mut want = 0xdead_beef_u32.to_le_bytes().to_vec();
        want.extend(le(&[7, 2]));
        want.extend(0u32.to_le_bytes());
        want.extend(le(&[3, 30, 10, 64, 2, 10, (-1i64) as u64, 500, 1]));
        want.extend([1, 1]);
        assert_eq!(s.encode().unwrap(), want);
        assert_eq!(want.len(), 82 + 8 * 2);

        let ids = IdsPayload {
            ids: Seq::borrowed(&[5, 6]),
        };
        assert_eq!(encode_payload(&ids, 0).unwrap(), le(&[2, 5, 6]));
        let init = InitPayload {
            init: Seq::borrowed(&[9]),
        };
        assert_eq!(encode_payload(&init, 0).unwrap(), le(&[1, 9]));
        let update = UpdatePayload {
            in_ids: Seq::borrowed(&[4, 5]),
            out_ids: Seq::borrowed(&[6]),
            in_positions: Seq::borrowed(&[0, 1]),
        };
        assert_eq!(
            encode_payload(&update, 0).unwrap(),
            le(&[2, 4, 5, 1, 6, 2, 0, 1])
        );
        let adj = AdjPayload {
            hops: vec![HopPayload {
                num_dst: 1,
                num_src: 3,
                src: Seq::borrowed(&[1, 2]),
                dst: Seq::borrowed(&[0, 0]),
            }],
        };
        let mut want = le(&[1, 1, 3, 2]);
        want.extend([1u32, 2].iter().flat_map(|x| x.to_le_bytes()));
        want.extend(le(&[2]));
        want.extend([0u32, 0].iter().flat_map(|x| x.to_le_bytes()));
        assert_eq!(encode_payload(&adj, 0).unwrap(), want);
        // v1.8 (LABOR): the hop count again, then each hop's weights.
        let weighted = WeightedAdjPayload {
            adj: adj.clone(),
            weights: vec![Seq::borrowed(&[0.25f32, 0.75])],
        };
        want.extend(le(&[1, 2]));
        want.extend([0.25f32, 0.75].iter().flat_map(|x| x.to_le_bytes()));
        let p = encode_payload(&weighted, 0).unwrap();
        assert_eq!(p, want);
        assert_eq!(decode_payload::<WeightedAdjPayload>(&p).unwrap(), weighted);
        assert!(decode_payload::<AdjPayload>(&p).is_err());
        let link = LinkPayload {
            src: Seq::borrowed(&[0, 3]),
            dst: Seq::borrowed(&[1, 4]),
            neg: 1,
            neg_dst: Seq::borrowed(&[2, 5]),
        };
        let u32s = |v: &[u32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let mut want = le(&[2]);
        want.extend(u32s(&[0, 3]));
        want.extend(le(&[2]));
        want.extend(u32s(&[1, 4]));
        want.extend(le(&[1, 2]));
        want.extend(u32s(&[2, 5]));
        assert_eq!(encode_payload(&link, 0).unwrap(), want);
        assert_eq!(want.len(), 32 + 4 * (2 * 2 + 2));
        assert_eq!(decode_payload::<LinkPayload>(&want).unwrap(), link);
        assert!(decode_payload::<LinkPayload>(&want[..want.len() - 1]).is_err());
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
        fn payloads_round_trip_and_truncations_are_refused(
            a in proptest::collection::vec(any::<u64>(), 0..50),
            b in proptest::collection::vec(any::<u64>(), 0..50),
            c in proptest::collection::vec(any::<u64>(), 0..50),
            e in proptest::collection::vec(any::<u32>(), 0..50),
        ) {
            let ids = IdsPayload { ids: Seq::borrowed(&a) };
            let p = encode_payload(&ids, 0).unwrap();
            prop_assert_eq!(decode_payload::<IdsPayload>(&p).unwrap(), ids);
            prop_assert!(decode_payload::<IdsPayload>(&p[..p.len() - 1]).is_err());
            let init = InitPayload { init: Seq::borrowed(&b) };
            let p = encode_payload(&init, 0).unwrap();
            prop_assert_eq!(decode_payload::<InitPayload>(&p).unwrap(), init);
            let update = UpdatePayload {
                in_ids: Seq::borrowed(&a),
                out_ids: Seq::borrowed(&b),
                in_positions: Seq::borrowed(&c),
            };
            let p = encode_payload(&update, 0).unwrap();
            prop_assert_eq!(decode_payload::<UpdatePayload>(&p).unwrap(), update);
            for cut in [0, p.len() / 2, p.len() - 1] {
                prop_assert!(decode_payload::<UpdatePayload>(&p[..cut]).is_err());
            }
            let adj = AdjPayload {
                hops: vec![
                    HopPayload { num_dst: 1, num_src: 2, src: Seq::borrowed(&e), dst: Seq::borrowed(&e) },
                    HopPayload { num_dst: 3, num_src: 4, src: Seq::borrowed(&[]), dst: Seq::borrowed(&[]) },
                ],
            };
            let p = encode_payload(&adj, 0).unwrap();
            prop_assert_eq!(decode_payload::<AdjPayload>(&p).unwrap(), adj);
            prop_assert!(decode_payload::<AdjPayload>(&p[..p.len() - 1]).is_err());
        }
    }

    /// The decode limit: a count larger than the payload is an error, never
    /// an allocation of what the count says (a 2^40-element `Vec<u64>`
    /// would be 8 TiB): past the limit (2^34 bytes, the fields before
    /// included) at once, below it once the payload ends.
    #[test]
    fn huge_count_is_an_error_not_an_allocation() {
        for (count, want) in [
            (3u64, "ends inside a field"),
            ((1 << 31) - 1, "ends inside a field"),
            // 8 bytes of count and 2^34 of values: one word past the limit.
            (1 << 31, "exceeds the decode limit of 17179869184 bytes"),
            (1 << 40, "exceeds the decode limit"),
            (u64::MAX / 8, "exceeds the decode limit"),
            (u64::MAX, "exceeds the decode limit"),
        ] {
            let mut p = count.to_le_bytes().to_vec();
            p.extend(le(&[1, 2]));
            let err = decode_payload::<IdsPayload>(&p).unwrap_err();
            assert!(err.contains(want), "{count}: {err}");
        }
        // u32 values: the limit counts 4 bytes each.
        let mut p = le(&[1, 1, 2, (1 << 32) + 1]);
        p.extend([0u8; 8]);
        let err = decode_payload::<AdjPayload>(&p).unwrap_err();
        assert!(err.contains("decode limit"), "{err}");
        let mut p = le(&[u64::MAX]);
        p.extend([0u8; 40]);
        let err = decode_payload::<AdjPayload>(&p).unwrap_err();
        assert!(err.contains("more than 64 hops"), "{err}");
        // The configuration the spec names.
        assert_eq!(PAYLOAD_CONFIG.limit(), Some(MAX_RECORD_PAYLOAD as usize));
        assert!(matches!(PAYLOAD_CONFIG.endianness(), Endianness::Little));
        assert!(matches!(PAYLOAD_CONFIG.int_encoding(), IntEncoding::Fixed));
    }
}
