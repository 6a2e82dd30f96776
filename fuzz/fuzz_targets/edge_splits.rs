//! The edge-splits decoder (format/edge-splits.md) never panics; what it
//! accepts passes `validate` and survives an encode / decode round trip.
//!
//! Input: `[num_nodes: u8] [payload]`.
#![no_main]
use std::path::Path;

use ginex::internals::format::edge_splits::EdgeSplits;
use ginex::internals::format::version::CURRENT;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz");
    let [n, payload @ ..] = data else {
        return;
    };
    let n = u64::from(*n);
    if let Ok(s) = EdgeSplits::decode(payload, n, path, CURRENT) {
        assert_eq!(s.validate(n), Ok(()));
        let again = s.encode();
        match EdgeSplits::decode(&again, n, path, CURRENT) {
            Ok(back) => assert_eq!(back, s),
            Err(e) => panic!("re-encoded edge splits do not decode: {e}"),
        }
    }
    let _ = EdgeSplits::decode(payload, u64::MAX, path, CURRENT);
});
