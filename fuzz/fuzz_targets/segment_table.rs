//! CSC structure checks (format/csc.md) never panic.
//!
//! Input: `[n: u8] [target: u8] [n degrees: u8 each] [segment table bytes]`.
//! The degrees build a valid `indptr` of `n` nodes; the rest is decoded as
//! a segment table against it. The `SegmentPlanner`'s own cut of the same
//! graph (segment target `target` bytes) must always decode and follow the
//! cutting rule of the spec.
#![no_main]
use std::path::Path;

use ginex::internals::format::crc32;
use ginex::internals::format::csc::{
    decode_segment_table, validate_indptr, IndexWidth, Segment, SegmentPlanner,
};
use libfuzzer_sys::fuzz_target;

/// Enough zero bytes for every edge of the largest input graph
/// (255 nodes of degree 255, 8-byte ids).
static ZEROS: [u8; 255 * 255 * 8] = [0; 255 * 255 * 8];

fn encode(segments: &[Segment]) -> Vec<u8> {
    let mut out = Vec::new();
    for s in segments {
        s.encode(&mut out);
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz");
    let [n, target, rest @ ..] = data else {
        return;
    };
    let n = usize::from(*n);
    if rest.len() < n {
        return;
    }
    let (degrees, table) = rest.split_at(n);
    let mut indptr = vec![0u64; n + 1];
    for (v, &d) in degrees.iter().enumerate() {
        indptr[v + 1] = indptr[v] + u64::from(d);
    }
    let edges = indptr[n];
    assert!(validate_indptr(&indptr, edges, path).is_ok());
    assert!(validate_indptr(&indptr, edges + 1, path).is_err());

    // Arbitrary table bytes against a valid indptr.
    if let Ok(segments) = decode_segment_table(table, &indptr, path) {
        assert_eq!(encode(&segments), table);
        assert_eq!(segments.iter().map(|s| s.node_count).sum::<u64>(), n as u64);
        assert_eq!(segments.iter().map(|s| s.edge_count).sum::<u64>(), edges);
    }

    // The planner's cut of this graph.
    for width in [IndexWidth::U32, IndexWidth::U64] {
        let wb = width.bytes();
        let mut planner = SegmentPlanner::new(width, u64::from(*target));
        let mut planned = Vec::new();
        for (v, &d) in degrees.iter().enumerate() {
            let list = &ZEROS[..usize::from(d) * wb];
            planned.extend(planner.push_node(v as u64, indptr[v], list));
        }
        planned.extend(planner.close());
        match decode_segment_table(&encode(&planned), &indptr, path) {
            Ok(decoded) => assert_eq!(decoded, planned),
            Err(e) => panic!("planned segments do not decode: {e}"),
        }
        let target = u64::from(*target).max(1);
        let wb = wb as u64;
        for (i, s) in planned.iter().enumerate() {
            let end = s.end_node() as usize;
            let last_list = indptr[end] - indptr[end - 1];
            // Closed at the first node boundary that reaches the target...
            assert!((s.edge_count - last_list) * wb < target);
            // ...and every segment but the last reaches it.
            if i + 1 < planned.len() {
                assert!(s.edge_count * wb >= target);
            }
            assert_eq!(s.crc, crc32(&ZEROS[..(s.edge_count * wb) as usize]));
        }
    }

    // An arbitrary (possibly decreasing) indptr: validation never panics,
    // and one it accepts can be used to decode a table.
    let raw: Vec<u64> = table
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect();
    let _ = validate_indptr(&raw, edges, path);
    if let Some(&last) = raw.last() {
        if validate_indptr(&raw, last, path).is_ok() {
            let _ = decode_segment_table(table, &raw, path);
        }
    }
});
