//! Neighbor-cache list decoders never panic and never return more ids than
//! the degree bound allows.
#![no_main]
use std::path::Path;

use ginex::internals::format::csc::IndexWidth;
use ginex::internals::format::neighbor_cache::Codec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&bound, bytes)) = data.split_first() else {
        return;
    };
    for codec in Codec::ALL {
        for width in [IndexWidth::U32, IndexWidth::U64] {
            let mut out = Vec::new();
            let _ = codec.decode(
                bytes,
                u64::from(bound),
                width,
                &mut out,
                Path::new("fuzz"),
                0,
            );
            assert!(out.len() as u64 <= u64::from(bound));
        }
    }
});
