//! `Manifest::decode` (format/manifest.md) never panics; what it accepts
//! re-encodes to the same bytes and decodes to the same value; and the
//! sizes `Store::open` derives from an accepted manifest never panic.
#![no_main]
use std::path::Path;

use ginex::internals::format::manifest::Manifest;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz");
    let Ok(m) = Manifest::decode(data, path) else {
        return;
    };
    let bytes = m.encode();
    assert_eq!(bytes, data);
    match Manifest::decode(&bytes, path) {
        Ok(again) => assert_eq!(again, m),
        Err(e) => panic!("re-encoded manifest does not decode: {e}"),
    }
    for f in &m.files {
        assert!(f.kind.listed_in_manifest());
    }
    // What Store::open computes from the manifest's numbers.
    let _ = m.index_width.edge_offset(m.num_edges);
    let layout = m.layout;
    assert!(layout.row_bytes() >= 1);
    if let Ok(pages) = layout.num_pages(m.num_nodes) {
        assert!(layout.payload_len(m.num_nodes).is_ok());
        if m.num_nodes > 0 {
            let last = layout.locate(m.num_nodes - 1);
            assert!(last.page + last.pages <= pages);
            assert!(last.offset_in_page + layout.row_bytes().min(4096) <= 4096);
        }
    }
});
