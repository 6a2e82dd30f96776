//! The trainer's checkpoint metadata (`epoch-NNNNN.json`) and `LATEST`
//! pointer never panic, whatever the bytes; an accepted document parses
//! the same again from its own serialisation, its weights record and run
//! identity included (checkpoint format 3), and the identity it carries
//! is the one its keys give.
#![no_main]
use std::path::Path;

use ginex::internals::checkpoint_meta::{parse_latest, parse_meta, run_identity};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = parse_meta(data, Path::new("fuzz")) {
        let again = serde_json::to_vec(&m.value).unwrap();
        let back = parse_meta(&again, Path::new("fuzz")).unwrap();
        assert_eq!(back.epoch, m.epoch);
        assert_eq!(back.progress.best_epoch, m.progress.best_epoch);
        assert_eq!(back.weights, m.weights);
        assert_eq!(back.identity, m.identity);
        if let Some(id) = m.identity {
            assert_eq!(id, run_identity(&m.value));
        }
        assert_eq!(back.link_decoder, m.link_decoder);
    }
    if let Ok(name) = parse_latest(data, Path::new("fuzz")) {
        assert!(name.starts_with("epoch-") && !name.contains('/'));
    }
});
