//! Byte layouts of every file ginex writes: encode, decode, checksums.
//!
//! No I/O happens here. Each submodule is the code side of one document in
//! `format/`; offsets are defined once as chained constants and tests check
//! them against the spec tables.

// Parser lints for every decoder below: a corrupt file must be an error,
// never a panic (tests may unwrap and index).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::indexing_slicing))]

pub mod bytes;
pub mod csc;
pub mod edge_splits;
pub mod header;
pub mod manifest;
pub mod neighbor_cache;
pub mod pages;
pub mod q8;
pub mod runtime;
pub mod schema;
pub mod sections;
pub mod tables;
pub mod version;

/// The page size of feature and index files; the unit of direct I/O.
pub const PAGE_SIZE: usize = 4096;

/// CRC-32 (IEEE 802.3 polynomial, reflected, as zlib's `crc32`) of `bytes`.
pub fn crc32(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}
