//! The store manifest: what the store holds and the list of its files.
//!
//! Spec: `format/manifest.md`. The manifest is written last; a directory
//! without a valid manifest is not a store.

use std::path::Path;

use crate::error::{Error, Result};
use crate::format::bytes::{le_u32, le_u64};
use crate::format::csc::IndexWidth;
use crate::format::header::FileKind;
use crate::format::pages::{Dtype, FeatureLayout};

/// Offset of `num_nodes` (`u64`) in the manifest payload.
pub const NUM_NODES_OFFSET: usize = 0;
/// Offset of `num_edges` (`u64`).
pub const NUM_EDGES_OFFSET: usize = NUM_NODES_OFFSET + 8;
/// Offset of `feature_dim` (`u32`).
pub const FEATURE_DIM_OFFSET: usize = NUM_EDGES_OFFSET + 8;
/// Offset of the dtype code (`u8`).
pub const DTYPE_OFFSET: usize = FEATURE_DIM_OFFSET + 4;
/// Offset of the index width in bytes (`u8`: 4 or 8).
pub const INDEX_WIDTH_OFFSET: usize = DTYPE_OFFSET + 1;
/// Offset of the reserved `u16`.
pub const MANIFEST_RESERVED_OFFSET: usize = INDEX_WIDTH_OFFSET + 1;
/// Offset of `num_classes` (`u32`, 0 when the store has no labels).
pub const NUM_CLASSES_OFFSET: usize = MANIFEST_RESERVED_OFFSET + 2;
/// Offset of `file_count` (`u32`).
pub const FILE_COUNT_OFFSET: usize = NUM_CLASSES_OFFSET + 4;
/// Offset of the first file entry.
pub const FILE_ENTRIES_OFFSET: usize = FILE_COUNT_OFFSET + 4;
/// Size of a file entry after its name: kind `u32`, length `u64`, CRC `u32`.
pub const FILE_ENTRY_TAIL: usize = 4 + 8 + 4;

/// One file of the store as the manifest records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEntry {
    /// What the file holds; also fixes its name.
    pub kind: FileKind,
    /// Whole file length in bytes (header included).
    pub len: u64,
    /// The payload CRC-32 recorded in the file's header.
    pub payload_crc: u32,
}

impl FileEntry {
    /// The file's name inside the store directory.
    pub fn name(&self) -> &'static str {
        store_file_name(self.kind)
    }
}

/// The file name each kind has inside a store directory (runtime files,
/// which live outside the manifest, get their kind name).
pub fn store_file_name(kind: FileKind) -> &'static str {
    match kind {
        FileKind::Manifest => "MANIFEST",
        FileKind::FeaturePages => "features.pages",
        FileKind::PageChecksums => "features.crc",
        FileKind::Indptr => "indptr",
        FileKind::Indices => "indices",
        FileKind::SegmentTable => "indices.seg",
        FileKind::Labels => "labels",
        FileKind::Splits => "splits",
        FileKind::OriginalIds => "orig_ids",
        FileKind::Schema => "schema",
        FileKind::EdgeSplits => "edge_splits",
        FileKind::OutDegrees => "out_degrees",
        FileKind::NeighborCache | FileKind::RunSamples | FileKind::RunChanges => kind.name(),
    }
}

/// Files every store has.
pub const REQUIRED_FILES: [FileKind; 5] = [
    FileKind::FeaturePages,
    FileKind::PageChecksums,
    FileKind::Indptr,
    FileKind::Indices,
    FileKind::SegmentTable,
];

/// The decoded manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// Number of nodes.
    pub num_nodes: u64,
    /// Number of edges (length of `indices`).
    pub num_edges: u64,
    /// Feature dimension and dtype.
    pub layout: FeatureLayout,
    /// Width of ids in `indices`.
    pub index_width: IndexWidth,
    /// Number of label classes (0 when there are no labels).
    pub num_classes: u32,
    /// Every other file of the store, in kind order.
    pub files: Vec<FileEntry>,
}

impl Manifest {
    /// The entry of `kind`, if the store has that file.
    pub fn file(&self, kind: FileKind) -> Option<&FileEntry> {
        self.files.iter().find(|f| f.kind == kind)
    }

    /// Encodes the payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(FILE_ENTRIES_OFFSET + self.files.len() * 32);
        b.extend_from_slice(&self.num_nodes.to_le_bytes());
        b.extend_from_slice(&self.num_edges.to_le_bytes());
        b.extend_from_slice(&self.layout.dim.to_le_bytes());
        b.push(self.layout.dtype as u8);
        b.push(self.index_width.bytes() as u8);
        b.extend_from_slice(&0u16.to_le_bytes());
        b.extend_from_slice(&self.num_classes.to_le_bytes());
        b.extend_from_slice(&(self.files.len() as u32).to_le_bytes());
        for f in &self.files {
            let name = f.name().as_bytes();
            b.push(name.len() as u8);
            b.extend_from_slice(name);
            b.extend_from_slice(&(f.kind as u32).to_le_bytes());
            b.extend_from_slice(&f.len.to_le_bytes());
            b.extend_from_slice(&f.payload_crc.to_le_bytes());
        }
        b
    }

    /// Decodes and validates a manifest payload. `path` is for errors.
    pub fn decode(p: &[u8], path: &Path) -> Result<Manifest> {
        let bad = |at: usize, what: String| Error::corrupt(path, at as u64, what);
        let Some(fixed) = p.first_chunk::<FILE_ENTRIES_OFFSET>() else {
            return Err(bad(
                0,
                format!(
                    "manifest payload is {} bytes, shorter than {FILE_ENTRIES_OFFSET}",
                    p.len()
                ),
            ));
        };
        let num_nodes = le_u64(p, NUM_NODES_OFFSET);
        let dim = le_u32(p, FEATURE_DIM_OFFSET);
        let dtype_code = fixed[DTYPE_OFFSET];
        let dtype = Dtype::from_u8(dtype_code)
            .ok_or_else(|| bad(DTYPE_OFFSET, format!("unknown dtype code {dtype_code}")))?;
        let layout = FeatureLayout::new(dim, dtype)
            .map_err(|_| bad(FEATURE_DIM_OFFSET, "feature dimension is 0".into()))?;
        let width_code = fixed[INDEX_WIDTH_OFFSET];
        let index_width = IndexWidth::from_bytes(width_code).ok_or_else(|| {
            bad(
                INDEX_WIDTH_OFFSET,
                format!("index width {width_code} is neither 4 nor 8"),
            )
        })?;
        if index_width != IndexWidth::for_nodes(num_nodes) {
            return Err(bad(
                INDEX_WIDTH_OFFSET,
                format!("index width {width_code} is wrong for {num_nodes} nodes"),
            ));
        }
        if fixed[MANIFEST_RESERVED_OFFSET..NUM_CLASSES_OFFSET] != [0, 0] {
            return Err(bad(
                MANIFEST_RESERVED_OFFSET,
                "reserved bytes are not zero".into(),
            ));
        }
        let file_count = le_u32(p, FILE_COUNT_OFFSET) as usize;
        let mut files: Vec<FileEntry> = Vec::new();
        let mut at = FILE_ENTRIES_OFFSET;
        for i in 0..file_count {
            let name_len = *p
                .get(at)
                .ok_or_else(|| bad(at, format!("file entry {i} of {file_count} is missing")))?
                as usize;
            let tail = at + 1 + name_len;
            let entry = p
                .get(at + 1..tail + FILE_ENTRY_TAIL)
                .ok_or_else(|| bad(at, format!("file entry {i} is truncated")))?;
            let name = entry.get(..name_len).unwrap_or_default();
            let kind_raw = le_u32(entry, name_len);
            let kind = FileKind::from_u32(kind_raw)
                .filter(|k| k.listed_in_manifest())
                .ok_or_else(|| {
                    bad(
                        tail,
                        format!("file entry {i}: unknown or invalid file kind {kind_raw}"),
                    )
                })?;
            if name != store_file_name(kind).as_bytes() {
                return Err(bad(
                    at + 1,
                    format!(
                        "file entry {i}: name {:?} does not match kind {}",
                        String::from_utf8_lossy(name),
                        kind.name()
                    ),
                ));
            }
            if files
                .last()
                .is_some_and(|prev| prev.kind as u32 >= kind as u32)
            {
                return Err(bad(
                    at,
                    format!("file entry {i}: kinds are duplicated or out of order"),
                ));
            }
            files.push(FileEntry {
                kind,
                len: le_u64(entry, name_len + 4),
                payload_crc: le_u32(entry, name_len + 12),
            });
            at = tail + FILE_ENTRY_TAIL;
        }
        if at != p.len() {
            return Err(bad(
                at,
                format!("{} unexpected bytes after the file entries", p.len() - at),
            ));
        }
        let manifest = Manifest {
            num_nodes,
            num_edges: le_u64(p, NUM_EDGES_OFFSET),
            layout,
            index_width,
            num_classes: le_u32(p, NUM_CLASSES_OFFSET),
            files,
        };
        for kind in REQUIRED_FILES {
            if manifest.file(kind).is_none() {
                return Err(bad(
                    FILE_COUNT_OFFSET,
                    format!("the required file {} is not listed", store_file_name(kind)),
                ));
            }
        }
        if (manifest.num_classes == 0) != manifest.file(FileKind::Labels).is_none() {
            return Err(bad(
                NUM_CLASSES_OFFSET,
                "num_classes must be non-zero exactly when the store has labels".into(),
            ));
        }
        if manifest.num_classes > i32::MAX as u32 {
            return Err(bad(
                NUM_CLASSES_OFFSET,
                format!(
                    "num_classes {} exceeds 2^31 - 1 (labels are i32)",
                    manifest.num_classes
                ),
            ));
        }
        Ok(manifest)
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
                NUM_NODES_OFFSET,
                NUM_EDGES_OFFSET,
                FEATURE_DIM_OFFSET,
                DTYPE_OFFSET,
                INDEX_WIDTH_OFFSET
            ],
            [0, 8, 16, 20, 21]
        );
        assert_eq!(
            [
                MANIFEST_RESERVED_OFFSET,
                NUM_CLASSES_OFFSET,
                FILE_COUNT_OFFSET,
                FILE_ENTRIES_OFFSET
            ],
            [22, 24, 28, 32]
        );
    }

    fn sample(num_nodes: u64, num_edges: u64, dim: u32, classes: u32, optional: u8) -> Manifest {
        let mut files: Vec<FileEntry> = REQUIRED_FILES
            .iter()
            .map(|&kind| FileEntry {
                kind,
                len: 64 + kind as u64,
                payload_crc: kind as u32,
            })
            .collect();
        for (bit, kind) in [FileKind::Labels, FileKind::Splits, FileKind::OriginalIds]
            .into_iter()
            .enumerate()
        {
            let wanted = if kind == FileKind::Labels {
                classes > 0
            } else {
                optional & (1 << bit) != 0
            };
            if wanted {
                files.push(FileEntry {
                    kind,
                    len: 99,
                    payload_crc: 5,
                });
            }
        }
        files.sort_by_key(|f| f.kind as u32);
        Manifest {
            num_nodes,
            num_edges,
            layout: FeatureLayout::new(dim, Dtype::F16).unwrap(),
            index_width: IndexWidth::for_nodes(num_nodes),
            num_classes: classes,
            files,
        }
    }

    proptest! {
        #[test]
        fn round_trip(n in any::<u64>(), e in any::<u64>(), dim in 1u32.., classes in 0u32..1000, optional in 0u8..8) {
            let m = sample(n, e, dim, classes, optional);
            prop_assert_eq!(Manifest::decode(&m.encode(), Path::new("MANIFEST")).unwrap(), m);
        }

        #[test]
        fn truncation_is_an_error(cut in 0usize..200) {
            let bytes = sample(10, 20, 4, 3, 7).encode();
            prop_assume!(cut < bytes.len());
            prop_assert!(Manifest::decode(&bytes[..cut], Path::new("MANIFEST")).is_err());
        }
    }

    #[test]
    fn missing_required_file_is_named() {
        let mut m = sample(10, 20, 4, 0, 0);
        m.files.retain(|f| f.kind != FileKind::Indices);
        let err = Manifest::decode(&m.encode(), Path::new("MANIFEST"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("indices"), "{err}");
    }

    #[test]
    fn num_classes_beyond_i32_is_refused() {
        let ok = sample(10, 20, 4, i32::MAX as u32, 0);
        assert_eq!(
            Manifest::decode(&ok.encode(), Path::new("MANIFEST")).unwrap(),
            ok
        );
        let m = sample(10, 20, 4, i32::MAX as u32 + 1, 0);
        let err = Manifest::decode(&m.encode(), Path::new("MANIFEST"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("num_classes 2147483648 exceeds"), "{err}");
    }
}
