//! DGL `metadata.json` handling (`import::dgl::import_dgl`): any document
//! is refused with an error or imported, never a panic, and an import
//! that fails leaves no store. Chunk paths can only name files that exist
//! beside the document (itself), so most inputs exercise the JSON and
//! metadata checks; a store that does get built is removed again.
#![no_main]
use ginex::internals::import::dgl::{import_dgl, DglImport};
use ginex::internals::import::pipeline::CommonOptions;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("ginex-fuzz-dgl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    let meta = dir.join("metadata.json");
    std::fs::write(&meta, data).expect("write the input");
    let out = dir.join("store");
    let mut common = CommonOptions::new(&out);
    common.memory = 16 << 20;
    let opts = DglImport {
        metadata: meta,
        feat_key: "feat".into(),
        label_key: "label".into(),
        mask_keys: ["train_mask".into(), "val_mask".into(), "test_mask".into()],
        orig_id_key: None,
        num_classes: None,
        common,
    };
    match import_dgl(&opts) {
        Ok(_) => std::fs::remove_dir_all(&out).expect("remove the store"),
        Err(_) => assert!(!out.exists(), "a failed import left a store"),
    }
});
