//! The `.npz` (zip) reader: end-of-central-directory search, ZIP64
//! records, the central directory and local headers never panic on any
//! bytes, and every member it can read lies inside the file. Each input is
//! written to a scratch file (the reader works on files).
#![no_main]
use ginex::internals::import::npz::NpzArchive;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("ginex-fuzz-npz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    let path = dir.join("in.npz");
    std::fs::write(&path, data).expect("write the input");
    let Ok(archive) = NpzArchive::open(&path) else {
        return;
    };
    for m in archive.members() {
        // Offsets are checked when a member is read, not when listed.
        if archive.member_prefix(&m.name, 256).is_ok() {
            assert!(m.local_offset < data.len() as u64, "{m:?}");
        }
        let _ = archive.header(&m.name);
        let _ = archive.array(&m.name, &dir.join("scratch"));
    }
    let _ = std::fs::remove_dir_all(dir.join("scratch"));
});
