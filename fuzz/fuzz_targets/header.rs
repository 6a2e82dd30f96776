//! The common header decoder never panics; what it accepts re-encodes to
//! the same bytes.
#![no_main]
use std::path::Path;

use ginex::format::header::{FileHeader, HEADER_SIZE};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = FileHeader::decode(data, Path::new("fuzz")) {
        assert_eq!(&h.encode()[..], &data[..HEADER_SIZE]);
    }
});
