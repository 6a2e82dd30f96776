//! Runtime record headers, counted arrays and run records never panic and
//! never allocate from a corrupt length.
#![no_main]
use std::path::Path;

use ginex::format::runtime::{decode_counted_u64s, RecordHeader, RunStamp};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = RecordHeader::decode(data, Path::new("fuzz"), 0) {
        assert_eq!(&h.encode()[..], &data[..32]);
    }
    if let Ok(s) = RunStamp::decode(data, Path::new("fuzz"), 0) {
        assert_eq!(s.encode(), data);
    }
    let mut at = 0;
    while at < data.len() {
        match decode_counted_u64s(data, &mut at, "fuzz", Path::new("fuzz"), 0) {
            Ok(_) => {}
            Err(_) => break,
        }
    }
});
