//! The `.npy` header parser (`import::npy::parse_header`) never panics
//! and never allocates from a hostile length; a header it accepts lies
//! inside the bytes and describes a shape whose byte size did not overflow.
#![no_main]
use std::path::Path;

use ginex::internals::import::npy::{parse_header, MAX_HEADER_LEN};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(h) = parse_header(data, Path::new("fuzz.npy")) else {
        return;
    };
    assert!(h.data_offset as usize <= data.len());
    assert!(h.data_offset as usize <= 12 + MAX_HEADER_LEN);
    let elements = h
        .len()
        .expect("an accepted shape has a checked element count");
    assert!(elements.checked_mul(h.dtype.size() as u64).is_some());
});
