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

/// Offset of the store id (`u32`) in a run record's payload.
pub const RUN_STORE_OFFSET: usize = 0;
/// Offset of the flags (`u32`; bit 0: carry-over, bit 1: reuse prior).
pub const RUN_FLAGS_OFFSET: usize = RUN_STORE_OFFSET + 4;
/// Offset of the run seed (`u64`).
pub const RUN_SEED_OFFSET: usize = RUN_FLAGS_OFFSET + 4;
/// Offset of the epoch (`u64`).
pub const RUN_EPOCH_OFFSET: usize = RUN_SEED_OFFSET + 8;
/// Offset of the superbatch index (`u64`).
pub const RUN_SUPERBATCH_OFFSET: usize = RUN_EPOCH_OFFSET + 8;
/// Offset of the superbatch's first batch (`u64`).
pub const RUN_FIRST_BATCH_OFFSET: usize = RUN_SUPERBATCH_OFFSET + 8;
/// Offset of the superbatch's batch count (`u64`).
pub const RUN_BATCHES_OFFSET: usize = RUN_FIRST_BATCH_OFFSET + 8;
/// Offset of the batch size (`u64`).
pub const RUN_BATCH_SIZE_OFFSET: usize = RUN_BATCHES_OFFSET + 8;
/// Offset of the feature-cache capacity in rows (`u64`).
pub const RUN_CACHE_ROWS_OFFSET: usize = RUN_BATCH_SIZE_OFFSET + 8;
/// Offset of k, the k-hop approximation's window (`u64`).
pub const RUN_EVERY_OFFSET: usize = RUN_CACHE_ROWS_OFFSET + 8;
/// Offset of the seed-order CRC (`u32`; 0 = the training split shuffled).
pub const RUN_SEED_ORDER_OFFSET: usize = RUN_EVERY_OFFSET + 8;
/// Offset of the fanout count F (`u32`).
pub const RUN_FANOUT_COUNT_OFFSET: usize = RUN_SEED_ORDER_OFFSET + 4;
/// Offset of the F fanouts (`i64` each).
pub const RUN_FANOUTS_OFFSET: usize = RUN_FANOUT_COUNT_OFFSET + 4;
/// Most fanouts a run record holds (the adjacency codec's hop limit).
pub const MAX_RUN_FANOUTS: usize = 64;

/// What a runtime file belongs to: its store, its run (seed, epoch,
/// seed order) and the parameters that shaped it. Stored in the `run`
/// record every v1.2 runtime file starts with; the executor and
/// `ginex-dump --verify` refuse a file whose stamp is not the expected one.
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
    /// Fanouts, as given (input layer last).
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
}

impl RunStamp {
    /// The run record's payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut p = Vec::with_capacity(RUN_FANOUTS_OFFSET + 8 * self.fanouts.len());
        p.extend_from_slice(&self.store_id.to_le_bytes());
        p.extend_from_slice(
            &(u32::from(self.carry_over) | u32::from(self.reuse_prior) << 1).to_le_bytes(),
        );
        for v in [
            self.seed,
            self.epoch,
            self.superbatch,
            self.first_batch,
            self.num_batches,
            self.batch_size,
            self.cache_rows,
            self.changeset_every,
        ] {
            p.extend_from_slice(&v.to_le_bytes());
        }
        p.extend_from_slice(&self.seed_order.to_le_bytes());
        p.extend_from_slice(&(self.fanouts.len() as u32).to_le_bytes());
        for f in &self.fanouts {
            p.extend_from_slice(&f.to_le_bytes());
        }
        p
    }

    /// Decodes a run record's payload found at byte `base` of `path`.
    pub fn decode(p: &[u8], path: &Path, base: u64) -> Result<RunStamp> {
        let bad = |at: usize, what: String| {
            Error::corrupt(path, base + at as u64, format!("run record: {what}"))
        };
        if p.len() < RUN_FANOUTS_OFFSET {
            return Err(bad(
                0,
                format!(
                    "payload is {} bytes, shorter than the {RUN_FANOUTS_OFFSET}-byte fixed part",
                    p.len()
                ),
            ));
        }
        let flags = le_u32(p, RUN_FLAGS_OFFSET);
        if flags & !3 != 0 {
            return Err(bad(
                RUN_FLAGS_OFFSET,
                format!(
                    "unknown flags {flags:#x} (only bit 0, carry-over, and bit 1, reuse prior, are defined)"
                ),
            ));
        }
        let count = le_u32(p, RUN_FANOUT_COUNT_OFFSET) as usize;
        if count > MAX_RUN_FANOUTS || p.len() != RUN_FANOUTS_OFFSET + 8 * count {
            return Err(bad(
                RUN_FANOUT_COUNT_OFFSET,
                format!(
                    "{count} fanouts (at most {MAX_RUN_FANOUTS}) do not fill the {}-byte payload",
                    p.len()
                ),
            ));
        }
        let fanouts = (0..count)
            .map(|i| le_u64(p, RUN_FANOUTS_OFFSET + 8 * i) as i64)
            .collect();
        Ok(RunStamp {
            store_id: le_u32(p, RUN_STORE_OFFSET),
            seed: le_u64(p, RUN_SEED_OFFSET),
            epoch: le_u64(p, RUN_EPOCH_OFFSET),
            seed_order: le_u32(p, RUN_SEED_ORDER_OFFSET),
            superbatch: le_u64(p, RUN_SUPERBATCH_OFFSET),
            first_batch: le_u64(p, RUN_FIRST_BATCH_OFFSET),
            num_batches: le_u64(p, RUN_BATCHES_OFFSET),
            batch_size: le_u64(p, RUN_BATCH_SIZE_OFFSET),
            fanouts,
            cache_rows: le_u64(p, RUN_CACHE_ROWS_OFFSET),
            changeset_every: le_u64(p, RUN_EVERY_OFFSET),
            carry_over: flags & 1 == 1,
            reuse_prior: flags & 2 == 2,
        })
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
            (
                "fanouts",
                self.fanouts
                    .iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
            ),
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
        let diff = self.differences(expected);
        if diff.is_empty() {
            return Ok(());
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
        assert_eq!(
            [
                RUN_STORE_OFFSET,
                RUN_FLAGS_OFFSET,
                RUN_SEED_OFFSET,
                RUN_EPOCH_OFFSET,
                RUN_SUPERBATCH_OFFSET,
                RUN_FIRST_BATCH_OFFSET,
                RUN_BATCHES_OFFSET,
                RUN_BATCH_SIZE_OFFSET,
                RUN_CACHE_ROWS_OFFSET,
                RUN_EVERY_OFFSET,
                RUN_SEED_ORDER_OFFSET,
                RUN_FANOUT_COUNT_OFFSET,
                RUN_FANOUTS_OFFSET
            ],
            [0, 4, 8, 16, 24, 32, 40, 48, 56, 64, 72, 76, 80]
        );
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
        }
    }

    #[test]
    fn run_stamp_round_trips_and_names_what_differs() {
        let s = stamp();
        let p = s.encode();
        assert_eq!(p.len(), RUN_FANOUTS_OFFSET + 16);
        assert_eq!(RunStamp::decode(&p, Path::new("r"), 0).unwrap(), s);
        // Flags: bit 0 carry-over, bit 1 reuse prior, each on its own.
        assert_eq!(le_u32(&p, RUN_FLAGS_OFFSET), 3);
        for (carry_over, reuse_prior, flags) in [(true, false, 1), (false, true, 2)] {
            let t = RunStamp {
                carry_over,
                reuse_prior,
                ..s.clone()
            };
            let q = t.encode();
            assert_eq!(le_u32(&q, RUN_FLAGS_OFFSET), flags);
            assert_eq!(RunStamp::decode(&q, Path::new("r"), 0).unwrap(), t);
        }
        let mut unknown = p.clone();
        unknown[RUN_FLAGS_OFFSET] |= 4;
        let err = RunStamp::decode(&unknown, Path::new("r"), 0)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown flags 0x7"), "{err}");
        for cut in 0..p.len() {
            assert!(RunStamp::decode(&p[..cut], Path::new("r"), 0).is_err());
        }
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
