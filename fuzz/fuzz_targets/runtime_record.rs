//! Runtime record headers and every record payload (bincode) never panic
//! and never allocate from a corrupt length.
#![no_main]
use std::path::Path;

use ginex::internals::format::runtime::{
    decode_payload, encode_payload, AdjPayload, IdsPayload, InitPayload, RecordHeader, RunStamp,
    UpdatePayload,
};
use ginex::internals::format::version::{V1_3, V1_4};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = RecordHeader::decode(data, Path::new("fuzz"), 0) {
        assert_eq!(&h.encode()[..], &data[..32]);
    }
    // A payload that decodes is the encoding of what it decoded to: the
    // encoding is canonical (fixed-width integers, exact length).
    for version in [V1_3, V1_4] {
        if let Ok(s) = RunStamp::decode(data, Path::new("fuzz"), 0, version) {
            assert_eq!(s.encode().unwrap(), data);
            assert_eq!(s.version(), version);
        }
    }
    if let Ok(p) = decode_payload::<IdsPayload>(data) {
        assert_eq!(encode_payload(&p, 0).unwrap(), data);
    }
    if let Ok(p) = decode_payload::<InitPayload>(data) {
        assert_eq!(encode_payload(&p, 0).unwrap(), data);
    }
    if let Ok(p) = decode_payload::<UpdatePayload>(data) {
        assert_eq!(encode_payload(&p, 0).unwrap(), data);
    }
    if let Ok(p) = decode_payload::<AdjPayload>(data) {
        assert_eq!(encode_payload(&p, 0).unwrap(), data);
    }
    let _ = ginex::internals::sample::sampler::decode_hops(data);
});
