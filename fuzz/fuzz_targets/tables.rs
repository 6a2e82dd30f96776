//! Labels, splits and original-id decoders never panic.
#![no_main]
use std::path::Path;

use ginex::format::tables::{decode_labels, decode_original_ids, Splits};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&n, payload)) = data.split_first() else { return };
    let n = u64::from(n);
    let _ = decode_labels(payload, n, 7, Path::new("fuzz"));
    let _ = decode_original_ids(payload, n, Path::new("fuzz"));
    if let Ok(s) = Splits::decode(payload, n, Path::new("fuzz")) {
        let mut again = Vec::new();
        s.encode(&mut again);
        assert_eq!(again, payload);
    }
});
