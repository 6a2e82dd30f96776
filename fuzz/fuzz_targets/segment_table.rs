//! Segment table and indptr validation never panic, whatever indptr and
//! table bytes they are given.
#![no_main]
use std::path::Path;

use ginex::format::csc::{decode_segment_table, validate_indptr};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // First byte: number of nodes (0..=31); then that many u16 degrees build
    // a monotone indptr; the rest is the segment table.
    let Some((&n, rest)) = data.split_first() else { return };
    let n = (n % 32) as usize;
    if rest.len() < 2 * n {
        return;
    }
    let (degrees, table) = rest.split_at(2 * n);
    let mut indptr = vec![0u64];
    for d in degrees.chunks_exact(2) {
        let last = *indptr.last().unwrap_or(&0);
        indptr.push(last + u64::from(u16::from_le_bytes([d[0], d[1]])));
    }
    let edges = *indptr.last().unwrap_or(&0);
    let _ = validate_indptr(&indptr, edges, Path::new("fuzz"));
    if let Ok(segments) = decode_segment_table(table, &indptr, Path::new("fuzz")) {
        let covered: u64 = segments.iter().map(|s| s.node_count).sum();
        assert_eq!(covered, n as u64);
    }
    // An arbitrary (possibly non-monotone) indptr must not panic either.
    let raw: Vec<u64> = table.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8]))).collect();
    let _ = validate_indptr(&raw, edges, Path::new("fuzz"));
});
