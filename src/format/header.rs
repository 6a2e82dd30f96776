//! The common file header that starts every file ginex writes.
//!
//! Layout and rules: `format/header.md`. The offsets below are the single
//! source of truth for the byte table in that document (a test checks them).

use std::path::Path;

use crate::error::{Error, Result};
use crate::format::bytes::{le_u16, le_u32, le_u64};
use crate::format::version::{
    Version, CURRENT, OLDEST_SUPPORTED, V1_0, V1_1, V1_10, V1_3, V1_6, V1_7,
};
use crate::format::PAGE_SIZE;

/// PNG-style magic: a high byte, the name, CR LF, DOS EOF, LF.
pub const MAGIC: [u8; 8] = [0x89, b'G', b'N', b'X', b'\r', b'\n', 0x1a, b'\n'];

/// Offset of the magic bytes.
pub const MAGIC_OFFSET: usize = 0;
/// Offset of the file kind (`u32`).
pub const KIND_OFFSET: usize = MAGIC_OFFSET + MAGIC.len();
/// Offset of the format major version (`u16`).
pub const MAJOR_OFFSET: usize = KIND_OFFSET + 4;
/// Offset of the format minor version (`u16`).
pub const MINOR_OFFSET: usize = MAJOR_OFFSET + 2;
/// Offset of the header length (`u32`): where the payload starts.
pub const HEADER_LEN_OFFSET: usize = MINOR_OFFSET + 2;
/// Offset of the flags word (`u32`, zero in v1).
pub const FLAGS_OFFSET: usize = HEADER_LEN_OFFSET + 4;
/// Offset of the payload length (`u64`).
pub const PAYLOAD_LEN_OFFSET: usize = FLAGS_OFFSET + 4;
/// Offset of the payload CRC-32 (`u32`).
pub const PAYLOAD_CRC_OFFSET: usize = PAYLOAD_LEN_OFFSET + 8;
/// Offset of the reserved bytes (zero in v1).
pub const RESERVED_OFFSET: usize = PAYLOAD_CRC_OFFSET + 4;
/// Number of reserved bytes.
pub const RESERVED_LEN: usize = 24;
/// Offset of the header CRC-32 (`u32`) over bytes `0..HEADER_CRC_OFFSET`.
pub const HEADER_CRC_OFFSET: usize = RESERVED_OFFSET + RESERVED_LEN;
/// Size of the encoded header fields.
pub const HEADER_SIZE: usize = HEADER_CRC_OFFSET + 4;

/// Header length of files read with `O_DIRECT`: one whole page, so that the
/// payload's pages are aligned.
pub const PAGE_HEADER_LEN: u32 = PAGE_SIZE as u32;
/// Header length of every other file.
pub const COMPACT_HEADER_LEN: u32 = HEADER_SIZE as u32;

/// What a file holds. The numeric values are part of the format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum FileKind {
    /// The store manifest (`MANIFEST`).
    Manifest = 1,
    /// Feature rows packed in 4096-byte pages.
    FeaturePages = 2,
    /// One CRC-32 per feature page.
    PageChecksums = 3,
    /// CSC `indptr`: `num_nodes + 1` `u64` offsets.
    Indptr = 4,
    /// CSC `indices`: concatenated sorted in-neighbor lists.
    Indices = 5,
    /// The segment table of `indices`.
    SegmentTable = 6,
    /// One `i32` label per node.
    Labels = 7,
    /// Train / valid / test node lists.
    Splits = 8,
    /// Original (pre-remapping) id of every node.
    OriginalIds = 9,
    /// A neighbor cache built for one store.
    NeighborCache = 10,
    /// Runtime file: per-batch sampled ids and hop adjacencies of one superbatch.
    RunSamples = 11,
    /// Runtime file: cache init and per-batch updates of one superbatch.
    RunChanges = 12,
    /// The node types and relations of a typed store (v1.3).
    Schema = 13,
    /// Link-prediction edge splits and their negatives (v1.6).
    EdgeSplits = 14,
    /// Every node's out-degree (v1.10).
    OutDegrees = 15,
}

impl FileKind {
    /// Every kind, in numeric order.
    pub const ALL: [FileKind; 15] = [
        FileKind::Manifest,
        FileKind::FeaturePages,
        FileKind::PageChecksums,
        FileKind::Indptr,
        FileKind::Indices,
        FileKind::SegmentTable,
        FileKind::Labels,
        FileKind::Splits,
        FileKind::OriginalIds,
        FileKind::NeighborCache,
        FileKind::RunSamples,
        FileKind::RunChanges,
        FileKind::Schema,
        FileKind::EdgeSplits,
        FileKind::OutDegrees,
    ];

    /// Decodes the numeric kind.
    pub fn from_u32(v: u32) -> Option<FileKind> {
        FileKind::ALL.into_iter().find(|k| *k as u32 == v)
    }

    /// The name used in JSON dumps and messages.
    pub fn name(self) -> &'static str {
        match self {
            FileKind::Manifest => "manifest",
            FileKind::FeaturePages => "feature-pages",
            FileKind::PageChecksums => "page-checksums",
            FileKind::Indptr => "indptr",
            FileKind::Indices => "indices",
            FileKind::SegmentTable => "segment-table",
            FileKind::Labels => "labels",
            FileKind::Splits => "splits",
            FileKind::OriginalIds => "original-ids",
            FileKind::NeighborCache => "neighbor-cache",
            FileKind::RunSamples => "run-samples",
            FileKind::RunChanges => "run-changes",
            FileKind::Schema => "schema",
            FileKind::EdgeSplits => "edge-splits",
            FileKind::OutDegrees => "out-degrees",
        }
    }

    /// Whether files of this kind are listed in a store's manifest (the
    /// manifest itself, runtime and cache files are not).
    pub fn listed_in_manifest(self) -> bool {
        !matches!(
            self,
            FileKind::Manifest
                | FileKind::NeighborCache
                | FileKind::RunSamples
                | FileKind::RunChanges
        )
    }

    /// The version files of this kind are written with: the newest that
    /// changed this kind's layout (readers take any version in
    /// `OLDEST_SUPPORTED..=CURRENT`).
    pub fn written_version(self) -> Version {
        match self {
            FileKind::NeighborCache => V1_1,
            FileKind::RunSamples | FileKind::RunChanges | FileKind::Schema => V1_3,
            FileKind::EdgeSplits => V1_6,
            FileKind::FeaturePages => V1_7,
            FileKind::OutDegrees => V1_10,
            _ => V1_0,
        }
    }

    /// The header length files of this kind use.
    pub fn header_len(self) -> u32 {
        match self {
            FileKind::FeaturePages | FileKind::Indices => PAGE_HEADER_LEN,
            _ => COMPACT_HEADER_LEN,
        }
    }
}

/// The decoded common header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileHeader {
    /// What the file holds.
    pub kind: FileKind,
    /// Format version the file was written with.
    pub version: Version,
    /// Bytes from the start of the file to the payload.
    pub header_len: u32,
    /// Payload length in bytes.
    pub payload_len: u64,
    /// CRC-32 (IEEE) of the payload bytes.
    pub payload_crc: u32,
}

impl FileHeader {
    /// A header for `kind` at the version that kind is written with.
    pub fn new(kind: FileKind, payload_len: u64, payload_crc: u32) -> Self {
        FileHeader {
            kind,
            version: kind.written_version(),
            header_len: kind.header_len(),
            payload_len,
            payload_crc,
        }
    }

    /// Total file length the header implies.
    pub fn file_len(&self) -> u64 {
        u64::from(self.header_len) + self.payload_len
    }

    /// Encodes the 64 header bytes (padding up to `header_len` is zero and
    /// written by the caller).
    pub fn encode(&self) -> [u8; HEADER_SIZE] {
        let mut b = [0u8; HEADER_SIZE];
        b[MAGIC_OFFSET..KIND_OFFSET].copy_from_slice(&MAGIC);
        b[KIND_OFFSET..MAJOR_OFFSET].copy_from_slice(&(self.kind as u32).to_le_bytes());
        b[MAJOR_OFFSET..MINOR_OFFSET].copy_from_slice(&self.version.major.to_le_bytes());
        b[MINOR_OFFSET..HEADER_LEN_OFFSET].copy_from_slice(&self.version.minor.to_le_bytes());
        b[HEADER_LEN_OFFSET..FLAGS_OFFSET].copy_from_slice(&self.header_len.to_le_bytes());
        b[PAYLOAD_LEN_OFFSET..PAYLOAD_CRC_OFFSET].copy_from_slice(&self.payload_len.to_le_bytes());
        b[PAYLOAD_CRC_OFFSET..RESERVED_OFFSET].copy_from_slice(&self.payload_crc.to_le_bytes());
        let crc = crate::format::crc32(&b[..HEADER_CRC_OFFSET]);
        b[HEADER_CRC_OFFSET..HEADER_SIZE].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes and validates a header: magic, header checksum, reserved
    /// bytes, kind, version range and header length. `path` is for errors.
    pub fn decode(bytes: &[u8], path: &Path) -> Result<FileHeader> {
        let Some(b) = bytes.first_chunk::<HEADER_SIZE>() else {
            return Err(Error::corrupt(
                path,
                0,
                format!(
                    "file is {} bytes, shorter than the {HEADER_SIZE}-byte header",
                    bytes.len()
                ),
            ));
        };
        if b[MAGIC_OFFSET..KIND_OFFSET] != MAGIC {
            return Err(Error::corrupt(path, 0, "bad magic: not a ginex file"));
        }
        let stored = le_u32(b, HEADER_CRC_OFFSET);
        let computed = crate::format::crc32(&b[..HEADER_CRC_OFFSET]);
        Error::check_crc(path, "header", 0, stored, computed)?;
        let version = Version {
            major: le_u16(b, MAJOR_OFFSET),
            minor: le_u16(b, MINOR_OFFSET),
        };
        if !(OLDEST_SUPPORTED..=CURRENT).contains(&version) {
            return Err(Error::UnsupportedVersion {
                path: path.to_path_buf(),
                found: version.to_string(),
                supported: format!("{OLDEST_SUPPORTED}..={CURRENT}"),
            });
        }
        let kind_raw = le_u32(b, KIND_OFFSET);
        let kind = FileKind::from_u32(kind_raw).ok_or_else(|| {
            Error::corrupt(
                path,
                KIND_OFFSET as u64,
                format!("unknown file kind {kind_raw}"),
            )
        })?;
        let header_len = le_u32(b, HEADER_LEN_OFFSET);
        if header_len != kind.header_len() {
            return Err(Error::corrupt(
                path,
                HEADER_LEN_OFFSET as u64,
                format!(
                    "header length {header_len} is wrong for a {} file (expected {})",
                    kind.name(),
                    kind.header_len()
                ),
            ));
        }
        if le_u32(b, FLAGS_OFFSET) != 0
            || b[RESERVED_OFFSET..HEADER_CRC_OFFSET]
                .iter()
                .any(|&x| x != 0)
        {
            return Err(Error::corrupt(
                path,
                FLAGS_OFFSET as u64,
                "flags or reserved header bytes are not zero",
            ));
        }
        Ok(FileHeader {
            kind,
            version,
            header_len,
            payload_len: {
                let len = le_u64(b, PAYLOAD_LEN_OFFSET);
                if len.checked_add(u64::from(header_len)).is_none() {
                    return Err(Error::corrupt(
                        path,
                        PAYLOAD_LEN_OFFSET as u64,
                        format!("payload length {len} overflows the file size"),
                    ));
                }
                len
            },
            payload_crc: le_u32(b, PAYLOAD_CRC_OFFSET),
        })
    }

    /// Checks that the header names the kind the caller expects.
    pub fn expect_kind(self, kind: FileKind, path: &Path) -> Result<Self> {
        if self.kind != kind {
            return Err(Error::corrupt(
                path,
                KIND_OFFSET as u64,
                format!(
                    "expected a {} file, found a {} file",
                    kind.name(),
                    self.kind.name()
                ),
            ));
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn offsets_match_the_spec_table() {
        // format/header.md, "Byte table".
        assert_eq!(
            [
                MAGIC_OFFSET,
                KIND_OFFSET,
                MAJOR_OFFSET,
                MINOR_OFFSET,
                HEADER_LEN_OFFSET,
                FLAGS_OFFSET
            ],
            [0, 8, 12, 14, 16, 20]
        );
        assert_eq!(
            [
                PAYLOAD_LEN_OFFSET,
                PAYLOAD_CRC_OFFSET,
                RESERVED_OFFSET,
                HEADER_CRC_OFFSET
            ],
            [24, 32, 36, 60]
        );
        assert_eq!(HEADER_SIZE, 64);
    }

    fn any_kind() -> impl Strategy<Value = FileKind> {
        proptest::sample::select(FileKind::ALL.to_vec())
    }

    proptest! {
        #[test]
        fn round_trip(kind in any_kind(), len in 0u64..u64::MAX / 2, crc in any::<u32>()) {
            let h = FileHeader::new(kind, len, crc);
            let back = FileHeader::decode(&h.encode(), Path::new("x")).unwrap();
            prop_assert_eq!(h, back);
        }

        #[test]
        fn any_flipped_bit_is_rejected(kind in any_kind(), len in any::<u64>(), bit in 0usize..HEADER_SIZE * 8) {
            let mut b = FileHeader::new(kind, len, 7).encode();
            b[bit / 8] ^= 1 << (bit % 8);
            prop_assert!(FileHeader::decode(&b, Path::new("x")).is_err());
        }
    }

    #[test]
    fn newer_version_is_refused_with_both_versions_named() {
        let mut h = FileHeader::new(FileKind::Labels, 0, 0);
        h.version = Version { major: 2, minor: 0 };
        let err = FileHeader::decode(&h.encode(), Path::new("labels")).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, Error::UnsupportedVersion { .. }), "{msg}");
        let range = format!("{OLDEST_SUPPORTED}..={CURRENT}");
        assert!(msg.contains("2.0") && msg.contains(&range), "{msg}");
    }

    #[test]
    fn payload_length_that_overflows_the_file_size_is_refused() {
        let h = FileHeader::new(FileKind::Labels, u64::MAX - 10, 0);
        let err = FileHeader::decode(&h.encode(), Path::new("labels"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("overflows"), "{err}");
        assert!(!FileKind::NeighborCache.listed_in_manifest());
    }

    #[test]
    fn short_input_is_an_error_not_a_panic() {
        assert!(FileHeader::decode(&MAGIC, Path::new("x")).is_err());
    }
}
