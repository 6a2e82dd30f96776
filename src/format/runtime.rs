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
use crate::format::version::{Version, V1_3, V1_4};

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

/// An integer a [`Seq`] holds: its fixed width and little-endian decoding.
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
                <[u8; std::mem::size_of::<$t>()]>::try_from(b).map_or(0, <$t>::from_le_bytes)
            }
        }
    )*};
}
seq_int!(u32, u64, i64);

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

/// Most fanouts a run record holds, and most hops an `adj` record holds.
pub const MAX_RUN_FANOUTS: usize = 64;

/// What a runtime file belongs to: its store, its run (seed, epoch,
/// seed order) and the parameters that shaped it: the `run` payload
/// (fields in declaration order), the first record of every runtime file;
/// the executor and `ginex-dump --verify` refuse a file whose stamp is not
/// the expected one. Encoded field by field as bincode encodes them, its
/// fanouts as a [`Seq`]; `relation_fanouts`, when there are some, after
/// the last field (a v1.4 file; without them the payload and the file are
/// v1.3's, byte for byte).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunStamp {
    /// CRC-32 of the store manifest's payload (`sample::neighbor_cache::store_identity`).
    pub store_id: u32,
    /// The run seed.
    pub seed: u64,
    /// The epoch.
    pub epoch: u64,
    /// CRC-32 of the seed-node order when one was given (evaluation,
    /// prediction); 0 for the training split shuffled per epoch.
    pub seed_order: u32,
    /// Superbatch index.
    pub superbatch: u64,
    /// The superbatch's first batch within the epoch.
    pub first_batch: u64,
    /// Batches in the superbatch.
    pub num_batches: u64,
    /// Seeds per batch.
    pub batch_size: u64,
    /// Fanouts, one count per hop for all relations, as given (input
    /// layer last); empty when the run samples per relation.
    pub fanouts: Vec<i64>,
    /// Feature-cache capacity in rows.
    pub cache_rows: u64,
    /// k of the k-hop approximation (1 = exact).
    pub changeset_every: u64,
    /// Whether the superbatch's cache starts with the previous one's.
    pub carry_over: bool,
    /// Whether nodes with no use left in the superbatch are ranked by a
    /// reuse prior (out-degree) instead of dropped.
    pub reuse_prior: bool,
    /// Per-relation fanouts (v1.4), None for one count per hop.
    pub relation_fanouts: Option<RelationFanoutsStamp>,
}

/// The per-relation fanouts a run samples with, bound to its store's
/// schema: the `relation_fanouts` of a v1.4 `run` record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RelationFanoutsStamp {
    /// Every relation of the store, as its canonical `src:name:dst`, in
    /// schema order (at most [`MAX_STAMP_RELATIONS`], names of at most
    /// 255 bytes).
    pub relations: Vec<String>,
    /// Per hop, seeds' hop first (at most [`MAX_RUN_FANOUTS`]): each
    /// relation's count (-1 = all, 0 = none), as many as `relations`.
    pub hops: Vec<Vec<i64>>,
}

/// Most relations a [`RelationFanoutsStamp`] lists (a schema's most).
pub const MAX_STAMP_RELATIONS: usize = crate::format::schema::MAX_TYPES;

impl Encode for RelationFanoutsStamp {
    fn encode<E: Encoder>(&self, e: &mut E) -> std::result::Result<(), EncodeError> {
        self.relations.encode(e)?;
        (self.hops.len() as u64).encode(e)?;
        self.hops
            .iter()
            .try_for_each(|h| Seq::borrowed(h).encode(e))
    }
}

impl<C> Decode<C> for RelationFanoutsStamp {
    fn decode<D: Decoder<Context = C>>(d: &mut D) -> std::result::Result<Self, DecodeError> {
        let count = u64::decode(d)?;
        if count > MAX_STAMP_RELATIONS as u64 {
            return Err(DecodeError::Other("more than 65536 relations"));
        }
        let mut relations = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let len = u64::decode(d)?;
            if len == 0 || len > 255 {
                return Err(DecodeError::Other("a relation name of 0 or over 255 bytes"));
            }
            d.claim_container_read::<u8>(len as usize)?;
            let mut name = vec![0u8; len as usize];
            d.reader().read(&mut name)?;
            let name = String::from_utf8(name)
                .map_err(|_| DecodeError::Other("a relation name is not UTF-8"))?;
            relations.push(name);
        }
        let hops = u64::decode(d)?;
        if hops > MAX_RUN_FANOUTS as u64 {
            return Err(DecodeError::Other("more than 64 hops of relation fanouts"));
        }
        let hops = (0..hops)
            .map(|_| {
                let h = Seq::<i64>::decode(d)?.into_vec();
                if h.len() == relations.len() {
                    Ok(h)
                } else {
                    Err(DecodeError::Other(
                        "a hop of relation fanouts has not one count per relation",
                    ))
                }
            })
            .collect::<std::result::Result<_, _>>()?;
        Ok(RelationFanoutsStamp { relations, hops })
    }
}

impl RelationFanoutsStamp {
    /// As `--fanouts` takes them: `cites=10:5,writes=5:5` (each relation
    /// that draws at some hop, by its name when no other relation has it,
    /// else in full; `*=0:…` when none draws).
    pub fn describe(&self) -> String {
        let short = |full: &str| -> String {
            let name = full.split(':').nth(1).unwrap_or(full);
            let same = self
                .relations
                .iter()
                .filter(|r| r.split(':').nth(1) == Some(name))
                .count();
            if same == 1 { name } else { full }.to_string()
        };
        let counts = |r: usize| -> Vec<String> {
            self.hops
                .iter()
                .map(|h| h.get(r).copied().unwrap_or(0).to_string())
                .collect()
        };
        let parts: Vec<String> = (self.relations.iter().enumerate())
            .filter(|&(r, _)| self.hops.iter().any(|h| h.get(r).is_some_and(|&k| k != 0)))
            .map(|(r, name)| format!("{}={}", short(name), counts(r).join(":")))
            .collect();
        if parts.is_empty() {
            format!("*={}", vec!["0"; self.hops.len()].join(":"))
        } else {
            parts.join(",")
        }
    }
}

impl Encode for RunStamp {
    fn encode<E: Encoder>(&self, e: &mut E) -> std::result::Result<(), EncodeError> {
        self.store_id.encode(e)?;
        self.seed.encode(e)?;
        self.epoch.encode(e)?;
        self.seed_order.encode(e)?;
        self.superbatch.encode(e)?;
        self.first_batch.encode(e)?;
        self.num_batches.encode(e)?;
        self.batch_size.encode(e)?;
        Seq::borrowed(&self.fanouts).encode(e)?;
        self.cache_rows.encode(e)?;
        self.changeset_every.encode(e)?;
        self.carry_over.encode(e)?;
        self.reuse_prior.encode(e)?;
        match &self.relation_fanouts {
            Some(r) => r.encode(e),
            None => Ok(()),
        }
    }
}

/// A v1.3 `run` payload: every field but `relation_fanouts`.
impl<C> Decode<C> for RunStamp {
    fn decode<D: Decoder<Context = C>>(d: &mut D) -> std::result::Result<Self, DecodeError> {
        // Struct-literal fields are evaluated in the order written: the
        // declaration order, as the encoder writes them.
        Ok(RunStamp {
            store_id: u32::decode(d)?,
            seed: u64::decode(d)?,
            epoch: u64::decode(d)?,
            seed_order: u32::decode(d)?,
            superbatch: u64::decode(d)?,
            first_batch: u64::decode(d)?,
            num_batches: u64::decode(d)?,
            batch_size: u64::decode(d)?,
            fanouts: Seq::<i64>::decode(d)?.into_vec(),
            cache_rows: u64::decode(d)?,
            changeset_every: u64::decode(d)?,
            carry_over: bool::decode(d)?,
            reuse_prior: bool::decode(d)?,
            relation_fanouts: None,
        })
    }
}
bincode::impl_borrow_decode!(RunStamp);

/// A v1.4 `run` payload: a v1.3 one, then `relation_fanouts`.
struct RunStampV14(RunStamp);

impl<C> Decode<C> for RunStampV14 {
    fn decode<D: Decoder<Context = C>>(d: &mut D) -> std::result::Result<Self, DecodeError> {
        let mut stamp = <RunStamp as Decode<C>>::decode(d)?;
        stamp.relation_fanouts = Some(RelationFanoutsStamp::decode(d)?);
        Ok(RunStampV14(stamp))
    }
}
bincode::impl_borrow_decode!(RunStampV14);

impl RunStamp {
    /// The version of a runtime file holding this stamp: 1.4 with
    /// per-relation fanouts, else 1.3.
    pub fn version(&self) -> Version {
        if self.relation_fanouts.is_some() {
            V1_4
        } else {
            V1_3
        }
    }

    /// The run record's payload.
    pub fn encode(&self) -> Result<Vec<u8>> {
        encode_payload(self, 96 + 8 * self.fanouts.len())
    }

    /// Decodes a run record's payload found at byte `base` of `path`, a
    /// runtime file of format `version` (1.4: with relation fanouts).
    pub fn decode(p: &[u8], path: &Path, base: u64, version: Version) -> Result<RunStamp> {
        let bad = |what: String| Error::corrupt(path, base, format!("run record: {what}"));
        let stamp: RunStamp = if version >= V1_4 {
            decode_payload::<RunStampV14>(p).map_err(bad)?.0
        } else {
            decode_payload(p).map_err(bad)?
        };
        if stamp.fanouts.len() > MAX_RUN_FANOUTS {
            return Err(bad(format!(
                "{} fanouts (at most {MAX_RUN_FANOUTS})",
                stamp.fanouts.len()
            )));
        }
        Ok(stamp)
    }

    /// The fanouts as `--fanouts` takes them.
    pub fn describe_fanouts(&self) -> String {
        match &self.relation_fanouts {
            Some(r) => r.describe(),
            None => self
                .fanouts
                .iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(","),
        }
    }

    /// Every field as `(name, value)`, in record order, for messages and
    /// dumps.
    pub fn fields(&self) -> Vec<(&'static str, String)> {
        vec![
            ("store", format!("{:#010x}", self.store_id)),
            ("seed", self.seed.to_string()),
            ("epoch", self.epoch.to_string()),
            (
                "seed order",
                if self.seed_order == 0 {
                    "train split".to_string()
                } else {
                    format!("{:#010x}", self.seed_order)
                },
            ),
            ("superbatch", self.superbatch.to_string()),
            ("first batch", self.first_batch.to_string()),
            ("batches", self.num_batches.to_string()),
            ("batch size", self.batch_size.to_string()),
            ("fanouts", self.describe_fanouts()),
            ("cache rows", self.cache_rows.to_string()),
            ("k", self.changeset_every.to_string()),
            ("carry-over", self.carry_over.to_string()),
            ("reuse prior", self.reuse_prior.to_string()),
        ]
    }

    /// One line: `store 0x1234abcd, seed 1, epoch 0, …`.
    pub fn describe(&self) -> String {
        self.fields()
            .into_iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The fields that differ from `expected`, each as `NAME: expected X,
    /// found Y`; empty when the stamps are equal.
    pub fn differences(&self, expected: &RunStamp) -> Vec<String> {
        self.differences_as(expected, "expected", "found")
    }

    /// As [`differences`](Self::differences), with `other`'s value labelled
    /// `other_label` and ours `own_label`.
    pub fn differences_as(
        &self,
        other: &RunStamp,
        other_label: &str,
        own_label: &str,
    ) -> Vec<String> {
        other
            .fields()
            .into_iter()
            .zip(self.fields())
            .filter(|(e, f)| e.1 != f.1)
            .map(|((name, e), (_, f))| format!("{name}: {other_label} {e}, {own_label} {f}"))
            .collect()
    }

    /// Refuses `path` unless its stamp (`self`) is `expected`, naming the
    /// file, each differing field with both values, and what to do.
    pub fn check(&self, expected: &RunStamp, path: &Path) -> Result<()> {
        if self == expected {
            return Ok(());
        }
        let mut diff = self.differences(expected);
        if diff.is_empty() {
            diff.push("relation fanouts differ".into());
        }
        let whose = if self.store_id != expected.store_id {
            "another store"
        } else {
            "another run or superbatch"
        };
        Err(Error::invalid_argument(format!(
            "{}: runtime file of {whose}, refused ({}); delete it and run the inspector again",
            path.display(),
            diff.join("; ")
        )))
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
        RunStamp {
            store_id: 0xdead_beef,
            seed: 7,
            epoch: 2,
            seed_order: 0,
            superbatch: 3,
            first_batch: 30,
            num_batches: 10,
            batch_size: 64,
            fanouts: vec![10, -1],
            cache_rows: 500,
            changeset_every: 1,
            carry_over: true,
            reuse_prior: true,
            relation_fanouts: None,
        }
    }

    fn le(v: &[u64]) -> Vec<u8> {
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
    }

    #[test]
    fn run_stamp_round_trips_and_names_what_differs() {
        let s = stamp();
        let p = s.encode().unwrap();
        assert_eq!(RunStamp::decode(&p, Path::new("r"), 0, V1_3).unwrap(), s);
        for (carry_over, reuse_prior) in [(true, false), (false, true), (false, false)] {
            let t = RunStamp {
                carry_over,
                reuse_prior,
                ..s.clone()
            };
            let q = t.encode().unwrap();
            assert_eq!(RunStamp::decode(&q, Path::new("r"), 0, V1_3).unwrap(), t);
        }
        // A flag byte other than 0 or 1 is corruption.
        let mut unknown = p.clone();
        let last = unknown.len() - 1;
        unknown[last] = 2;
        let err = RunStamp::decode(&unknown, Path::new("r"), 64, V1_3)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("run record") && err.contains("invalid boolean 2"),
            "{err}"
        );
        for cut in 0..p.len() {
            assert!(RunStamp::decode(&p[..cut], Path::new("r"), 0, V1_3).is_err());
        }
        let mut longer = p.clone();
        longer.push(0);
        let err = RunStamp::decode(&longer, Path::new("r"), 0, V1_3)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("unexpected bytes after the last field"),
            "{err}"
        );
        let many = RunStamp {
            fanouts: vec![1; MAX_RUN_FANOUTS + 1],
            ..s.clone()
        };
        let err = RunStamp::decode(&many.encode().unwrap(), Path::new("r"), 0, V1_3)
            .unwrap_err()
            .to_string();
        assert!(err.contains("65 fanouts (at most 64)"), "{err}");
        let mut other = s.clone();
        other.seed = 8;
        other.store_id = 1;
        let err = other
            .check(&s, Path::new("sb-000003.samples"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("sb-000003.samples")
                && err.contains("another store")
                && err.contains("seed: expected 7, found 8")
                && err.contains("store: expected 0xdeadbeef, found 0x00000001"),
            "{err}"
        );
        assert!(s.check(&s, Path::new("x")).is_ok());
    }

    fn relation_stamp() -> RunStamp {
        RunStamp {
            fanouts: Vec::new(),
            relation_fanouts: Some(RelationFanoutsStamp {
                relations: vec!["paper:cites:paper".into(), "author:writes:paper".into()],
                hops: vec![vec![10, 0], vec![5, -1]],
            }),
            ..stamp()
        }
    }

    /// Per-relation fanouts append their block to the v1.3 payload (the
    /// bytes format/runtime.md spells out) and make the file v1.4; one
    /// list for all keeps v1.3's bytes.
    #[test]
    fn relation_fanouts_make_a_v1_4_run_record() {
        assert_eq!(stamp().version(), V1_3);
        let s = relation_stamp();
        assert_eq!(s.version(), V1_4);
        let mut want = 0xdead_beef_u32.to_le_bytes().to_vec();
        want.extend(le(&[7, 2]));
        want.extend(0u32.to_le_bytes());
        want.extend(le(&[3, 30, 10, 64, 0, 500, 1]));
        want.extend([1, 1]);
        assert_eq!(want.len(), 82);
        want.extend(le(&[2, 17]));
        want.extend(b"paper:cites:paper");
        want.extend(le(&[19]));
        want.extend(b"author:writes:paper");
        want.extend(le(&[2, 2, 10, 0, 2, 5, (-1i64) as u64]));
        let p = s.encode().unwrap();
        assert_eq!(p, want);
        assert_eq!(RunStamp::decode(&p, Path::new("r"), 0, V1_4).unwrap(), s);
        assert_eq!(s.describe_fanouts(), "cites=10:5,writes=0:-1");
        let err = RunStamp::decode(&p, Path::new("r"), 0, V1_3)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("unexpected bytes after the last field"),
            "{err}"
        );
        let v13 = stamp().encode().unwrap();
        assert!(RunStamp::decode(&v13, Path::new("r"), 0, V1_4).is_err());
        // A run of other fanouts is refused, naming both.
        let err = s
            .check(&stamp(), Path::new("sb-000003.samples"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("fanouts: expected 10,-1, found cites=10:5,writes=0:-1"),
            "{err}"
        );
        let mut other = relation_stamp();
        if let Some(r) = &mut other.relation_fanouts {
            r.hops[1][1] = 3;
        }
        let err = other.check(&s, Path::new("x")).unwrap_err().to_string();
        assert!(err.contains("found cites=10:5,writes=0:3"), "{err}");
        // Counts that do not match the relations, empty names and too
        // many hops are corruption.
        for (bad, what) in [
            (
                RelationFanoutsStamp {
                    relations: vec!["a:r:b".into()],
                    hops: vec![vec![1, 2]],
                },
                "not one count per relation",
            ),
            (
                RelationFanoutsStamp {
                    relations: vec![String::new()],
                    hops: vec![vec![1]],
                },
                "a relation name of 0 or over 255 bytes",
            ),
            (
                RelationFanoutsStamp {
                    relations: vec!["a:r:b".into()],
                    hops: vec![vec![1]; MAX_RUN_FANOUTS + 1],
                },
                "more than 64 hops",
            ),
        ] {
            let t = RunStamp {
                relation_fanouts: Some(bad),
                ..s.clone()
            };
            let err = RunStamp::decode(&t.encode().unwrap(), Path::new("r"), 0, V1_4)
                .unwrap_err()
                .to_string();
            assert!(err.contains(what), "{err}");
        }
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
