//! CSC topology layout: `indptr`, `indices` and the segment table.
//!
//! Spec: `format/csc.md`. In-neighbor lists of consecutive destination
//! nodes are grouped into segments; each segment has a CRC-32 over its bytes
//! in `indices`. Edge offsets are `u64` throughout, so graphs with more than
//! 2^32 edges are representable.

use std::path::Path;

use crate::error::{Error, Result};
use crate::format::bytes::{le_u32, le_u64};

/// Width of one entry of `indices`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IndexWidth {
    /// `u32` ids, used when `num_nodes < 2^32`.
    U32,
    /// `u64` ids otherwise.
    U64,
}

impl IndexWidth {
    /// The width a store of `num_nodes` nodes uses.
    pub fn for_nodes(num_nodes: u64) -> IndexWidth {
        if num_nodes <= u64::from(u32::MAX) {
            IndexWidth::U32
        } else {
            IndexWidth::U64
        }
    }

    /// Bytes per id.
    pub fn bytes(self) -> usize {
        match self {
            IndexWidth::U32 => 4,
            IndexWidth::U64 => 8,
        }
    }

    /// Decodes the byte count stored in the manifest.
    pub fn from_bytes(b: u8) -> Option<IndexWidth> {
        match b {
            4 => Some(IndexWidth::U32),
            8 => Some(IndexWidth::U64),
            _ => None,
        }
    }

    /// Byte offset inside the `indices` payload of edge number `edge`.
    pub fn edge_offset(self, edge: u64) -> Option<u64> {
        edge.checked_mul(self.bytes() as u64)
    }

    /// File offset in `indices` (after its one-page header) of edge number
    /// `edge`; for edges of a store, whose length the manifest bounds.
    pub fn edge_file_offset(self, edge: u64) -> u64 {
        crate::format::PAGE_SIZE as u64 + edge * self.bytes() as u64
    }

    /// Appends `id` in this width.
    pub fn push(self, id: u64, out: &mut Vec<u8>) {
        match self {
            IndexWidth::U32 => out.extend_from_slice(&(id as u32).to_le_bytes()),
            IndexWidth::U64 => out.extend_from_slice(&id.to_le_bytes()),
        }
    }

    /// Decodes a run of ids of this width.
    pub fn decode(self, bytes: &[u8], out: &mut Vec<u64>) {
        match self {
            IndexWidth::U32 => out.extend(bytes.chunks_exact(4).map(|c| u64::from(le_u32(c, 0)))),
            IndexWidth::U64 => out.extend(bytes.chunks_exact(8).map(|c| le_u64(c, 0))),
        }
    }
}

/// Default target size of a segment's bytes in `indices`: a page. A list
/// read from disk costs its whole segment (the CRC unit), so a segment of
/// about a page costs two page reads at most positions, where 16 KiB
/// segments cost four or five (measured: list reads were half of an
/// out-of-core epoch's disk reads with 16 KiB segments).
pub const DEFAULT_SEGMENT_BYTES: u64 = 4 * 1024;

/// Offset of `first_node` in a segment table entry.
pub const SEG_FIRST_NODE_OFFSET: usize = 0;
/// Offset of `node_count`.
pub const SEG_NODE_COUNT_OFFSET: usize = SEG_FIRST_NODE_OFFSET + 8;
/// Offset of `edge_start`.
pub const SEG_EDGE_START_OFFSET: usize = SEG_NODE_COUNT_OFFSET + 8;
/// Offset of `edge_count`.
pub const SEG_EDGE_COUNT_OFFSET: usize = SEG_EDGE_START_OFFSET + 8;
/// Offset of the segment's CRC-32.
pub const SEG_CRC_OFFSET: usize = SEG_EDGE_COUNT_OFFSET + 8;
/// Offset of the reserved word.
pub const SEG_RESERVED_OFFSET: usize = SEG_CRC_OFFSET + 4;
/// Size of one segment table entry.
pub const SEGMENT_ENTRY_SIZE: usize = SEG_RESERVED_OFFSET + 4;

/// One entry of the segment table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// First destination node of the segment.
    pub first_node: u64,
    /// Number of consecutive destination nodes.
    pub node_count: u64,
    /// Index of the segment's first edge in `indices` (= `indptr[first_node]`).
    pub edge_start: u64,
    /// Number of edges (ids) in the segment.
    pub edge_count: u64,
    /// CRC-32 of the segment's `edge_count * width` bytes of `indices`.
    pub crc: u32,
}

impl Segment {
    /// Encodes the entry.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.first_node.to_le_bytes());
        out.extend_from_slice(&self.node_count.to_le_bytes());
        out.extend_from_slice(&self.edge_start.to_le_bytes());
        out.extend_from_slice(&self.edge_count.to_le_bytes());
        out.extend_from_slice(&self.crc.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
    }

    /// One past the last node of the segment.
    pub fn end_node(&self) -> u64 {
        self.first_node.saturating_add(self.node_count)
    }
}

/// Decodes a whole segment table payload and checks its structure against
/// `indptr`: segments are non-empty, contiguous, cover every node and agree
/// with `indptr` on edge ranges.
pub fn decode_segment_table(payload: &[u8], indptr: &[u64], path: &Path) -> Result<Vec<Segment>> {
    if payload.len() % SEGMENT_ENTRY_SIZE != 0 {
        return Err(Error::corrupt(
            path,
            0,
            format!(
                "segment table length {} is not a multiple of {SEGMENT_ENTRY_SIZE}",
                payload.len()
            ),
        ));
    }
    let num_nodes = indptr.len().saturating_sub(1) as u64;
    let mut segments = Vec::with_capacity(payload.len() / SEGMENT_ENTRY_SIZE);
    let mut next_node = 0u64;
    for (i, e) in payload.chunks_exact(SEGMENT_ENTRY_SIZE).enumerate() {
        let at = (i * SEGMENT_ENTRY_SIZE) as u64;
        let seg = Segment {
            first_node: le_u64(e, SEG_FIRST_NODE_OFFSET),
            node_count: le_u64(e, SEG_NODE_COUNT_OFFSET),
            edge_start: le_u64(e, SEG_EDGE_START_OFFSET),
            edge_count: le_u64(e, SEG_EDGE_COUNT_OFFSET),
            crc: le_u32(e, SEG_CRC_OFFSET),
        };
        let bad = |what: String| Error::corrupt(path, at, format!("segment {i}: {what}"));
        if le_u32(e, SEG_RESERVED_OFFSET) != 0 {
            return Err(bad("reserved word is not zero".into()));
        }
        if seg.first_node != next_node || seg.node_count == 0 || seg.end_node() > num_nodes {
            return Err(bad(format!(
                "covers nodes {}..{} but segments must be non-empty, contiguous from {next_node} and end by {num_nodes}",
                seg.first_node,
                seg.end_node()
            )));
        }
        let (Some(&lo), Some(&hi)) = (
            indptr.get(seg.first_node as usize),
            indptr.get(seg.end_node() as usize),
        ) else {
            return Err(bad(format!(
                "covers nodes {}..{} beyond the indptr of {} entries",
                seg.first_node,
                seg.end_node(),
                indptr.len()
            )));
        };
        // `hi < lo` only for an indptr that was not validated first.
        if seg.edge_start != lo || Some(seg.edge_count) != hi.checked_sub(lo) {
            return Err(bad(format!(
                "edge range {}+{} disagrees with indptr ({lo}..{hi})",
                seg.edge_start, seg.edge_count
            )));
        }
        next_node = seg.end_node();
        segments.push(seg);
    }
    if next_node != num_nodes {
        return Err(Error::corrupt(
            path,
            payload.len() as u64,
            format!("segments cover nodes 0..{next_node} of {num_nodes}"),
        ));
    }
    Ok(segments)
}

/// Checks that `indptr` starts at 0, never decreases and ends at `num_edges`.
pub fn validate_indptr(indptr: &[u64], num_edges: u64, path: &Path) -> Result<()> {
    if indptr.first() != Some(&0) {
        return Err(Error::corrupt(path, 0, "indptr[0] is not 0"));
    }
    let decrease = indptr.windows(2).enumerate().find_map(|(i, w)| match w {
        [a, b] if b < a => Some((i, *a, *b)),
        _ => None,
    });
    if let Some((i, a, b)) = decrease {
        return Err(Error::corrupt(
            path,
            (i as u64 + 1) * 8,
            format!("indptr decreases at node {i}: {a} then {b}"),
        ));
    }
    let last = indptr.last().copied().unwrap_or(0);
    if last != num_edges {
        return Err(Error::corrupt(
            path,
            (indptr.len() as u64 - 1) * 8,
            format!("indptr ends at {last} but the manifest says {num_edges} edges"),
        ));
    }
    Ok(())
}

/// Cuts nodes into segments: a segment closes at the first node boundary
/// where it holds at least `target_bytes` of ids. Incremental, so builders
/// can stream.
#[derive(Debug)]
pub struct SegmentPlanner {
    width: IndexWidth,
    target_bytes: u64,
    open: Option<Segment>,
    hasher: crc32fast::Hasher,
}

impl SegmentPlanner {
    /// A planner for ids of `width`.
    pub fn new(width: IndexWidth, target_bytes: u64) -> Self {
        SegmentPlanner {
            width,
            target_bytes: target_bytes.max(1),
            open: None,
            hasher: crc32fast::Hasher::new(),
        }
    }

    /// Adds the next node, whose list is encoded in `list_bytes` and starts at
    /// edge `edge_start`. Returns a segment when one closes.
    pub fn push_node(&mut self, node: u64, edge_start: u64, list_bytes: &[u8]) -> Option<Segment> {
        let seg = self.open.get_or_insert(Segment {
            first_node: node,
            node_count: 0,
            edge_start,
            edge_count: 0,
            crc: 0,
        });
        seg.node_count += 1;
        seg.edge_count += (list_bytes.len() / self.width.bytes()) as u64;
        self.hasher.update(list_bytes);
        if seg.edge_count * self.width.bytes() as u64 >= self.target_bytes {
            self.close()
        } else {
            None
        }
    }

    /// Closes the open segment, if any.
    pub fn close(&mut self) -> Option<Segment> {
        let mut seg = self.open.take()?;
        seg.crc = std::mem::replace(&mut self.hasher, crc32fast::Hasher::new()).finalize();
        Some(seg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Planner output encodes and decodes back to itself, covers every
        /// node, and each segment's CRC is over exactly its lists' bytes.
        #[test]
        fn planned_segments_round_trip(degrees in proptest::collection::vec(0u64..40, 1..200), target in 1u64..300, wide in any::<bool>()) {
            let width = if wide { IndexWidth::U64 } else { IndexWidth::U32 };
            let mut indptr = vec![0u64];
            let mut indices = Vec::new();
            let mut planner = SegmentPlanner::new(width, target);
            let mut segments = Vec::new();
            for (v, &d) in degrees.iter().enumerate() {
                let start = *indptr.last().unwrap();
                let mut list = Vec::new();
                for k in 0..d {
                    width.push((v as u64 * 7 + k) % degrees.len() as u64, &mut list);
                }
                indices.extend_from_slice(&list);
                indptr.push(start + d);
                segments.extend(planner.push_node(v as u64, start, &list));
            }
            segments.extend(planner.close());
            let mut table = Vec::new();
            for s in &segments {
                s.encode(&mut table);
            }
            let decoded = decode_segment_table(&table, &indptr, Path::new("seg")).unwrap();
            prop_assert_eq!(&decoded, &segments);
            validate_indptr(&indptr, *indptr.last().unwrap(), Path::new("indptr")).unwrap();
            for s in &segments {
                let lo = (s.edge_start as usize) * width.bytes();
                let hi = lo + s.edge_count as usize * width.bytes();
                prop_assert_eq!(s.crc, crate::format::crc32(&indices[lo..hi]));
            }
        }
    }

    #[test]
    fn segment_entry_offsets_match_the_spec_table() {
        assert_eq!(
            [
                SEG_FIRST_NODE_OFFSET,
                SEG_NODE_COUNT_OFFSET,
                SEG_EDGE_START_OFFSET,
                SEG_EDGE_COUNT_OFFSET,
                SEG_CRC_OFFSET,
                SEG_RESERVED_OFFSET
            ],
            [0, 8, 16, 24, 32, 36]
        );
        assert_eq!(SEGMENT_ENTRY_SIZE, 40);
    }

    #[test]
    fn width_follows_node_count() {
        assert_eq!(IndexWidth::for_nodes(u64::from(u32::MAX)), IndexWidth::U32);
        assert_eq!(IndexWidth::for_nodes(1 << 32), IndexWidth::U64);
    }

    /// Appends a segment table entry: `[first_node, node_count,
    /// edge_start, edge_count]` and its CRC.
    fn encode_segment(
        table: &mut Vec<u8>,
        [first_node, node_count, edge_start, edge_count]: [u64; 4],
        crc: u32,
    ) {
        Segment {
            first_node,
            node_count,
            edge_start,
            edge_count,
            crc,
        }
        .encode(table);
    }

    /// Edge counts above 2^32 are representable: a synthetic indptr with
    /// 6 billion edges validates, segments over it decode, and byte offsets
    /// do not wrap.
    #[test]
    fn more_than_four_billion_edges() {
        let big = 3_000_000_000u64;
        let indptr = vec![0, big, 2 * big, 2 * big];
        validate_indptr(&indptr, 2 * big, Path::new("indptr")).unwrap();
        let mut table = Vec::new();
        encode_segment(&mut table, [0, 1, 0, big], 1);
        encode_segment(&mut table, [1, 2, big, big], 2);
        let segs = decode_segment_table(&table, &indptr, Path::new("seg")).unwrap();
        assert_eq!(segs[1].edge_start + segs[1].edge_count, 6_000_000_000);
        assert_eq!(IndexWidth::U32.edge_offset(2 * big), Some(24_000_000_000));
        assert_eq!(IndexWidth::U64.edge_offset(u64::MAX / 4), None);
    }

    #[test]
    fn segment_table_rejects_gaps_and_mismatches() {
        let indptr = vec![0, 2, 5, 5];
        let mut gap = Vec::new();
        encode_segment(&mut gap, [0, 1, 0, 2], 0);
        encode_segment(&mut gap, [2, 1, 5, 0], 0);
        assert!(decode_segment_table(&gap, &indptr, Path::new("s")).is_err());
        let mut wrong = Vec::new();
        encode_segment(&mut wrong, [0, 3, 0, 4], 0);
        assert!(decode_segment_table(&wrong, &indptr, Path::new("s")).is_err());
        let mut short = Vec::new();
        encode_segment(&mut short, [0, 2, 0, 5], 0);
        assert!(decode_segment_table(&short, &indptr, Path::new("s")).is_err());
        assert!(validate_indptr(&[0, 3, 2], 2, Path::new("i")).is_err());
        assert!(validate_indptr(&[1, 3], 3, Path::new("i")).is_err());
    }

    #[test]
    fn planner_closes_at_node_boundaries() {
        let mut p = SegmentPlanner::new(IndexWidth::U32, 8);
        assert!(p.push_node(0, 0, &[0; 4]).is_none());
        let s = p.push_node(1, 1, &[0; 12]).unwrap(); // 16 bytes >= 8
        assert_eq!(
            (s.first_node, s.node_count, s.edge_start, s.edge_count),
            (0, 2, 0, 4)
        );
        assert_eq!(s.crc, crate::format::crc32(&[0; 16]));
        assert!(p.push_node(2, 4, &[]).is_none());
        let last = p.close().unwrap();
        assert_eq!(
            (last.first_node, last.node_count, last.edge_count),
            (2, 1, 0)
        );
        assert!(p.close().is_none());
    }
}
