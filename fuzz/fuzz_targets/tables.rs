//! Labels, splits, original-id and out-degree decoders (format/labels.md,
//! splits.md, orig_ids.md, out-degrees.md) never panic; what they accept re-encodes to the same bytes.
//!
//! Input: `[num_nodes: u8] [num_classes: u8] [payload]`; every decoder sees
//! the same payload.
#![no_main]
use std::path::Path;

use ginex::internals::format::tables::{
    decode_labels, decode_original_ids, decode_out_degrees, encode_labels, encode_original_ids,
    encode_out_degrees, Splits, MISSING_LABEL,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz");
    let [n, classes, payload @ ..] = data else {
        return;
    };
    let (n, classes) = (u64::from(*n), u32::from(*classes));

    if let Ok(labels) = decode_labels(payload, n, classes, path) {
        assert_eq!(labels.len() as u64, n);
        assert!(labels
            .iter()
            .all(|&l| l == MISSING_LABEL || (l >= 0 && (l as u32) < classes)));
        let mut again = Vec::new();
        encode_labels(&labels, &mut again);
        assert_eq!(again, payload);
    }

    if let Ok(ids) = decode_original_ids(payload, n, path) {
        let mut again = Vec::new();
        encode_original_ids(&ids, &mut again);
        assert_eq!(again, payload);
    }

    if let Ok(degrees) = decode_out_degrees(payload, n, path) {
        assert_eq!(degrees.len() as u64, n);
        let mut again = Vec::new();
        encode_out_degrees(&degrees, &mut again);
        assert_eq!(again, payload);
    }

    if let Ok(s) = Splits::decode(payload, n, path) {
        for list in [&s.train, &s.valid, &s.test] {
            assert!(list.windows(2).all(|w| w[0] < w[1]));
            assert!(list.iter().all(|&id| id < n));
        }
        assert_eq!(s.first_overlap(), None);
        let mut again = Vec::new();
        s.encode(&mut again);
        assert_eq!(again, payload);
        match Splits::decode(&again, n, path) {
            Ok(back) => assert_eq!(back, s),
            Err(e) => panic!("re-encoded splits do not decode: {e}"),
        }
    }

    // Node and class counts whose byte sizes overflow are errors, not panics.
    for big in [u64::MAX, u64::MAX / 4 + 1, u64::MAX / 8 + 1] {
        let _ = decode_labels(payload, big, u32::MAX, path);
        let _ = decode_original_ids(payload, big, path);
        let _ = decode_out_degrees(payload, big, path);
        let _ = Splits::decode(payload, big, path);
    }
});
