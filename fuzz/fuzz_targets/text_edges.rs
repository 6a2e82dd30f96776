//! The text edge-list parser (`import::text::TextEdges`: delimiter
//! detection, the one header line, comments, BOM, the allocation-free fast
//! path) and the line reader behind id and count files
//! (`import::text::Lines`) never panic, never buffer past the line bound,
//! and stop at the first error.
#![no_main]
use std::io::{BufReader, Cursor};
use std::path::Path;

use ginex::internals::import::text::{Lines, TextEdges, MAX_LINE};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz.txt");
    // The first byte picks a fixed delimiter (DGL csv) or detection.
    let (fixed, body) = match data.split_first() {
        Some((&d, rest)) if d & 1 == 1 => (Some(d >> 1), rest),
        _ => (None, data),
    };
    let reader = Box::new(BufReader::with_capacity(64, Cursor::new(body.to_vec())));
    let mut edges = TextEdges::from_reader(reader, path);
    if let Some(d) = fixed {
        edges = edges.with_delimiter(d);
    }
    let mut last_line = 0;
    loop {
        match edges.next_edge() {
            Ok(Some(_)) => {
                assert!(edges.line() > last_line);
                last_line = edges.line();
            }
            Ok(None) | Err(_) => break,
        }
    }
    let reader = Box::new(BufReader::with_capacity(64, Cursor::new(body.to_vec())));
    let mut lines = Lines::from_reader(reader, path);
    while let Ok(Some(line)) = lines.next_line() {
        assert!(line.len() <= MAX_LINE);
    }
});
