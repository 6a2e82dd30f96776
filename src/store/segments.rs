//! Reading the CSC topology segment by segment: the one place that checks a
//! segment's bytes against its CRC, and a streaming pass over every
//! in-neighbor list that never holds more than a bounded run of segments.

use std::path::Path;

use crate::error::{Error, Result};
use crate::format::crc32;
use crate::format::csc::Segment;
use crate::format::header::FileKind;
use crate::io::read::read_exact_at;
use crate::store::Store;

/// Checks segment `index` (`seg`), whose bytes `bytes` were read from
/// `path` at file offset `offset`, against its CRC.
pub fn check_segment(
    path: &Path,
    index: usize,
    seg: &Segment,
    offset: u64,
    bytes: &[u8],
) -> Result<()> {
    Error::check_crc(
        path,
        format_args!("segment {index}"),
        offset,
        seg.crc,
        crc32(bytes),
    )
}

/// Bytes of `indices` read per step of a streaming pass over the topology
/// ([`Store::for_each_list`]'s usual `chunk_bytes`).
pub const STREAM_CHUNK_BYTES: u64 = 1 << 20;

impl Store {
    /// Calls `visit(v, list)` for every node in id order with its sorted
    /// in-neighbor list, reading `indices` in runs of whole segments of about
    /// `chunk_bytes` (at least one segment), each segment checked against its
    /// CRC. Memory: one run of segments, never the whole topology.
    #[doc(hidden)]
    pub fn for_each_list(
        &self,
        chunk_bytes: u64,
        visit: &mut dyn FnMut(u64, &[u64]) -> Result<()>,
    ) -> Result<()> {
        let width = self.index_width();
        let wb = width.bytes();
        let path = self.path_of(FileKind::Indices);
        let file = std::fs::File::open(&path).map_err(|e| Error::io("open", &path, e))?;
        let segments = self.segments();
        let indptr = self.indptr();
        let mut buf: Vec<u8> = Vec::new();
        let mut ids: Vec<u64> = Vec::new();
        let mut next_node = 0u64;
        let mut s = 0usize;
        while s < segments.len() {
            // A run of segments of about `chunk_bytes`.
            let first = s;
            let mut bytes = 0u64;
            while s < segments.len()
                && (s == first || bytes + segments[s].edge_count * wb as u64 <= chunk_bytes)
            {
                bytes += segments[s].edge_count * wb as u64;
                s += 1;
            }
            let start = segments[first].edge_start;
            let offset = width.edge_file_offset(start);
            buf.resize(bytes as usize, 0);
            read_exact_at(&file, &path, offset, &mut buf)?;
            for (i, seg) in segments[first..s].iter().enumerate() {
                let lo = ((seg.edge_start - start) * wb as u64) as usize;
                let hi = lo + (seg.edge_count * wb as u64) as usize;
                let region = buf.get(lo..hi).ok_or_else(|| {
                    Error::corrupt(
                        &path,
                        offset + lo as u64,
                        format!("segment {} lies outside its run", first + i),
                    )
                })?;
                check_segment(&path, first + i, seg, offset + lo as u64, region)?;
            }
            ids.clear();
            width.decode(&buf, &mut ids);
            let end_node = segments[s - 1].end_node();
            while next_node < end_node {
                let v = next_node as usize;
                let lo = (indptr[v] - start) as usize;
                let hi = (indptr[v + 1] - start) as usize;
                let list = ids.get(lo..hi).ok_or_else(|| {
                    Error::corrupt(
                        &path,
                        offset,
                        format!("node {v}'s list lies outside its segments"),
                    )
                })?;
                visit(next_node, list)?;
                next_node += 1;
            }
        }
        // Nodes after the last segment have empty lists.
        while next_node < self.num_nodes() {
            visit(next_node, &[])?;
            next_node += 1;
        }
        Ok(())
    }
}
