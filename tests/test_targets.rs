//! Both crates set `autotests = false` (the tests in `tests/` are split
//! between the library and the CLI crate, which share the folder), so
//! cargo would silently never build a `tests/*.rs` file that neither
//! `Cargo.toml` lists. This test fails when that happens, or when a file is
//! listed twice (it would run twice).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The `tests/*.rs` files a manifest's `[[test]]` entries build, as paths
/// relative to the repository root (`path = …`, or `tests/NAME.rs` when the
/// entry names no path).
fn listed(manifest: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(manifest).expect("read the manifest");
    let dir = manifest.parent().expect("a manifest has a folder");
    let mut out = Vec::new();
    let mut entry: Option<(Option<String>, Option<String>)> = None;
    let mut finish = |e: Option<(Option<String>, Option<String>)>| {
        if let Some((name, path)) = e {
            let file = match (path, name) {
                (Some(p), _) => dir.join(p),
                (None, Some(n)) => dir.join("tests").join(format!("{n}.rs")),
                (None, None) => panic!(
                    "{}: a [[test]] with neither name nor path",
                    manifest.display()
                ),
            };
            let file = file
                .canonicalize()
                .unwrap_or_else(|e| panic!("{}: {}: {e}", manifest.display(), file.display()));
            out.push(
                file.strip_prefix(root())
                    .expect("inside the repository")
                    .display()
                    .to_string(),
            );
        }
    };
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            finish(entry.take());
            if line == "[[test]]" {
                entry = Some((None, None));
            }
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let value = value.trim().trim_matches('"').to_string();
        if let Some((name, path)) = entry.as_mut() {
            match key.trim() {
                "name" => *name = Some(value),
                "path" => *path = Some(value),
                _ => {}
            }
        }
    }
    finish(entry.take());
    out
}

#[test]
fn every_test_file_is_built_exactly_once() {
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for manifest in ["Cargo.toml", "tools/Cargo.toml"] {
        for file in listed(&root().join(manifest)) {
            *count.entry(file).or_default() += 1;
        }
    }
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(root().join("tests")).expect("read tests/") {
        let path = entry.expect("read tests/").path();
        if path.extension().is_some_and(|e| e == "rs") {
            let rel = format!(
                "tests/{}",
                path.file_name().expect("a file").to_string_lossy()
            );
            if !count.contains_key(&rel) {
                missing.push(rel);
            }
        }
    }
    assert!(
        missing.is_empty(),
        "these test files are listed in neither Cargo.toml nor tools/Cargo.toml, so cargo never builds them: {missing:?}; add a [[test]] entry"
    );
    let twice: Vec<_> = count.iter().filter(|(_, &n)| n > 1).collect();
    assert!(
        twice.is_empty(),
        "test files listed more than once: {twice:?}"
    );
}
