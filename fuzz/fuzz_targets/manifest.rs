//! The manifest decoder never panics; what it accepts round-trips.
#![no_main]
use std::path::Path;

use ginex::format::manifest::Manifest;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = Manifest::decode(data, Path::new("fuzz")) {
        assert_eq!(m.encode(), data);
    }
});
