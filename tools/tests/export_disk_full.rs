//! Disk full during an export, simulated through the storage seam
//! (`ginex::internals::io::space`): `ginex-export dgl` and `graphbolt` that run out of
//! space at any point — edge chunks, feature chunks, labels, masks, the
//! metadata written last — fail with an error naming the file and saying
//! "No space left on device", leave nothing at `--out` and no staging
//! directory beside it; with space again the same export succeeds. The
//! budget is process-wide, so this binary holds one test.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::collections::BTreeSet;
use std::path::Path;

use clap::Parser;
use ginex::internals::export::dgl::{export_dgl, DglExport};
use ginex::internals::export::graphbolt::{export_graphbolt, GraphBoltExport};
use ginex::internals::export::ExportReport;
use ginex::internals::io::space::{bytes_written, simulate_disk_space};
use ginex_cli::commands::{run as ginex_run, GinexCli};

/// Every file under `dir` (relative path -> bytes).
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

fn export(kind: &str, store: &Path, out: &Path) -> ginex::Result<ExportReport> {
    if kind == "dgl" {
        let mut o = DglExport::new(store, out);
        o.chunks = 3;
        export_dgl(&o)
    } else {
        export_graphbolt(&GraphBoltExport::new(store, out))
    }
}

#[test]
fn full_disk_at_any_point_of_an_export_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let cli = GinexCli::try_parse_from([
        "ginex",
        "gen",
        "--quiet",
        "--nodes",
        "8000",
        "--avg-degree",
        "10",
        "--dim",
        "16",
        "--split",
        "0.5,0.2,0.2",
        "--seed",
        "5",
        "--out",
        store.to_str().unwrap(),
    ])
    .unwrap();
    ginex_run(cli, &mut Vec::new()).unwrap();

    for kind in ["dgl", "graphbolt"] {
        simulate_disk_space(None);
        let reference = dir.path().join(format!("{kind}-reference"));
        let r = export(kind, &store, &reference).unwrap();
        let total = bytes_written();
        assert_eq!(
            total, r.bytes_written,
            "{kind}: every byte goes through the seam"
        );
        let mut failed_files = BTreeSet::new();
        for (i, fraction) in [0.0, 0.05, 0.3, 0.6, 0.9, 0.999].into_iter().enumerate() {
            let out = dir.path().join(format!("{kind}-t{i}"));
            let space = (total as f64 * fraction) as u64;
            simulate_disk_space(Some(space));
            let err = export(kind, &store, &out).expect_err(&format!(
                "{kind}: export succeeded with {space} of {total} bytes"
            ));
            simulate_disk_space(None);
            let msg = err.to_string();
            assert!(
                msg.contains("No space left on device"),
                "{kind} {space}/{total}: {msg}"
            );
            match &err {
                ginex::Error::Io { path, .. } => {
                    failed_files.insert(path.file_name().unwrap().to_string_lossy().into_owned());
                }
                other => panic!("expected an I/O error naming the file, got {other:?}"),
            }
            assert!(!out.exists(), "{kind} {space} bytes: output left at --out");
            assert_eq!(
                common::leftovers(dir.path()),
                Vec::<String>::new(),
                "{kind} {space} bytes: staging left"
            );
        }
        eprintln!("{kind}: {total} bytes; out of space while writing {failed_files:?}");
        assert!(
            failed_files.len() >= 3,
            "{kind}: every failure hit the same file: {failed_files:?}"
        );
        // With space again: the same export, byte for byte.
        let out = dir.path().join(format!("{kind}-t0"));
        export(kind, &store, &out).unwrap();
        assert_eq!(
            tree(&out),
            tree(&reference),
            "{kind}: the retried export differs"
        );
    }
}
