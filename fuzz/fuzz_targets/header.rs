//! `FileHeader::decode` (format/header.md) never panics, and what it
//! accepts is exactly what `encode` writes: a valid header has one encoding.
#![no_main]
use std::path::Path;

use ginex::internals::format::header::{FileHeader, HEADER_SIZE};
use ginex::internals::format::version::{CURRENT, OLDEST_SUPPORTED};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz");
    let Ok(h) = FileHeader::decode(data, path) else {
        return;
    };
    let bytes = h.encode();
    assert_eq!(&bytes[..], &data[..HEADER_SIZE]);
    match FileHeader::decode(&bytes, path) {
        Ok(again) => assert_eq!(again, h),
        Err(e) => panic!("re-encoded header does not decode: {e}"),
    }
    assert!(h.expect_kind(h.kind, path).is_ok());
    assert_eq!(h.header_len, h.kind.header_len());
    assert!((OLDEST_SUPPORTED..=CURRENT).contains(&h.version));
});
