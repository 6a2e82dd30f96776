//! Issue 45, item 5: every user-named output file — `ginex predict --out`
//! (its `.npy` writer, `NpyWriter::create_output`), reports, plots, SVGs
//! and bench outputs (all through `ginex_cli::write_report`) — is written
//! to a temporary beside it and renamed; on a full disk (simulated through
//! the storage seam, `ginex::internals::io::space`, as `tools/tests/disk_full.rs`
//! does) the call fails with "No space left on device", leaves no partial
//! file and no temporary, and an existing file is left as it was. The
//! budget is process-wide, so this binary holds one test.

use std::path::Path;

use ginex::internals::import::npy_write::NpyWriter;
use ginex::internals::io::space::{bytes_written, simulate_disk_space};

/// The names in `dir` (sorted).
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Writes 1000 rows x 64 f32 logits to `path` as predict does.
fn write_logits(path: &Path) -> ginex::Result<()> {
    let mut w = NpyWriter::create_output(path, "<f4", &[64])?;
    let row: Vec<u8> = (0..64u32).flat_map(|i| (i as f32).to_le_bytes()).collect();
    for _ in 0..1000 {
        w.write(&row, 64)?;
    }
    w.finish()
}

#[test]
fn a_full_disk_leaves_no_partial_output_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();

    // The sizes with space: a report of 300 kB and 256 kB of logits.
    let report = vec![b'x'; 300_000];
    simulate_disk_space(None);
    ginex_cli::write_report(&d.join("ref.svg"), &report).unwrap();
    let report_bytes = bytes_written();
    assert!(report_bytes >= 300_000, "the report went through the seam");
    simulate_disk_space(None);
    write_logits(&d.join("ref.npy")).unwrap();
    let npy_bytes = bytes_written();
    assert!(npy_bytes >= 256_000, "the logits went through the seam");
    let reference = names(d);

    for fraction in [0.0, 0.1, 0.5, 0.9, 0.999] {
        // Reports, plots, SVGs: new and replacing an existing file.
        for (name, existing) in [
            ("new.svg", None),
            ("old.json", Some(b"previous".as_slice())),
        ] {
            let path = d.join(name);
            if let Some(bytes) = existing {
                std::fs::write(&path, bytes).unwrap();
            }
            simulate_disk_space(Some((report_bytes as f64 * fraction) as u64));
            let err = ginex_cli::write_report(&path, &report)
                .unwrap_err()
                .to_string();
            simulate_disk_space(None);
            assert!(err.contains("No space left on device"), "{err}");
            match existing {
                None => assert!(!path.exists(), "a partial {name} was left at {fraction}"),
                Some(bytes) => {
                    assert_eq!(std::fs::read(&path).unwrap(), bytes, "{name} was changed");
                    std::fs::remove_file(&path).unwrap();
                }
            }
        }
        // predict --out.
        let out = d.join("pred.npy");
        simulate_disk_space(Some((npy_bytes as f64 * fraction) as u64));
        let err = write_logits(&out).unwrap_err().to_string();
        simulate_disk_space(None);
        assert!(err.contains("No space left on device"), "{err}");
        assert!(!out.exists(), "a partial pred.npy was left at {fraction}");
        assert_eq!(names(d), reference, "a temporary was left at {fraction}");
    }

    // With space, the same calls write complete files.
    write_logits(&d.join("pred.npy")).unwrap();
    let bytes = std::fs::read(d.join("pred.npy")).unwrap();
    assert_eq!(bytes, std::fs::read(d.join("ref.npy")).unwrap());
    ginex_cli::write_report(&d.join("new.svg"), &report).unwrap();
    assert_eq!(std::fs::read(d.join("new.svg")).unwrap(), report);
}
