//! Fixtures the test binaries share (`mod common;` in each): synthetic
//! stores and small file helpers. The library's tests and the CLI crate's
//! both include this file, so it uses the library only; each binary uses
//! some of it.
#![allow(dead_code)]

pub mod npz_writer;

use std::io::Write;
use std::path::{Path, PathBuf};

use ginex::internals::import::synth::{generate_store, NoProgress, SynthParams};
use ginex::Store;

/// Generates the synthetic store `p` at `dir/name`; returns its path.
pub fn synth_store(dir: &Path, name: &str, p: &SynthParams) -> PathBuf {
    let out = dir.join(name);
    generate_store(p, &out, &NoProgress).unwrap();
    out
}

/// Generates the synthetic store `p` at `dir/name` and opens it.
pub fn open_synth_store(dir: &Path, name: &str, p: &SynthParams) -> Store {
    Store::open(synth_store(dir, name, p)).unwrap()
}

/// A fresh temporary directory holding the synthetic store `p` at `s`,
/// opened.
pub fn temp_synth_store(p: &SynthParams) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = open_synth_store(dir.path(), "s", p);
    (dir, store)
}

/// Names in `dir` of staging leftovers (`ginex-tmp`).
pub fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("ginex-tmp"))
        .collect()
}

/// Writes `text` gzip-compressed to `path`.
pub fn gz(path: &Path, text: &(impl AsRef<[u8]> + ?Sized)) {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(text.as_ref()).unwrap();
    std::fs::write(path, enc.finish().unwrap()).unwrap();
}

/// A path as a command-line argument.
pub fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// A `.npy` file (format 1.0, header padded to 128 bytes) of `descr` and
/// `shape` (Python tuple syntax) holding `data`.
pub fn npy_bytes(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    let mut h = format!("{dict:<117}\n").into_bytes();
    let mut b = b"\x93NUMPY\x01\x00".to_vec();
    b.extend((h.len() as u16).to_le_bytes());
    b.append(&mut h);
    b.extend_from_slice(data);
    b
}

/// `v` as little-endian bytes.
pub fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// `v` as little-endian bytes.
pub fn i64_bytes(v: &[i64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Every file of a directory (not its subdirectories), by name.
pub fn files_of(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

/// Asserts that the directories `original` and `rebuilt` hold the same
/// files with the same bytes (`what` names the comparison).
pub fn assert_same_files(original: &Path, rebuilt: &Path, what: &str) {
    let (mut a, mut b) = (files_of(original), files_of(rebuilt));
    if !a.contains_key("out_degrees") && b.contains_key("out_degrees") {
        // A store written before v1.10 (the golden fixtures) is rebuilt
        // with its out-degrees (format/out-degrees.md): they are what its
        // topology counts, and its manifest is the same but for their
        // entry.
        use ginex::internals::format::header::FileKind;
        let (old, new) = (
            Store::open(original).unwrap(),
            Store::open(rebuilt).unwrap(),
        );
        assert_eq!(
            new.recorded_out_degrees().unwrap(),
            Some(old.count_out_degrees().unwrap()),
            "{what}: out_degrees"
        );
        let listed = |s: &Store| {
            let mut m = s.manifest().clone();
            m.files.retain(|f| f.kind != FileKind::OutDegrees);
            m
        };
        assert_eq!(listed(&old), listed(&new), "{what}: MANIFEST");
        for name in ["out_degrees", "MANIFEST"] {
            a.remove(name);
            b.remove(name);
        }
    }
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "{what}: different files"
    );
    for (name, bytes) in &a {
        if name == "features.pages" && bytes.get(12..16) == Some(&[1, 0, 0, 0]) {
            // A v1.0 store (the golden fixtures) is rebuilt at the current
            // version: the same pages, with the version, the header CRC and
            // the layout record (format/features.md, v1.7) added.
            let c = &b[name];
            assert_eq!(c.len(), bytes.len(), "{what}: {name} length");
            assert_eq!(&c[12..16], &[1, 0, 7, 0], "{what}: {name} rebuilt as 1.7");
            let same = |r: std::ops::Range<usize>| bytes[r.clone()] == c[r];
            assert!(
                same(0..12) && same(16..60) && same(76..bytes.len()),
                "{what}: {name} differs beyond its version and layout record"
            );
            assert!(
                bytes[64..76].iter().all(|&x| x == 0),
                "{what}: v1.0 padding"
            );
            continue;
        }
        assert!(
            bytes == &b[name],
            "{what}: {name} differs ({} vs {} bytes)",
            bytes.len(),
            b[name].len()
        );
    }
}

/// What a recording progress sink saw: per phase its name, total, last
/// The 3000-node store of the epoch and loader tests (dim 24, 4 classes,
/// splits 0.2 / 0.1 / 0.1).
pub fn small_epoch_store() -> (tempfile::TempDir, Store) {
    temp_synth_store(&SynthParams {
        nodes: 3000,
        avg_degree: 10.0,
        dim: 24,
        classes: 4,
        seed: 8,
        split: [0.2, 0.1, 0.1],
        ..SynthParams::default()
    })
}

/// A typed store with features on every node type: `ginex gen --hetero`
/// (`nodes` nodes, dim 6, 3 classes; papers featured, authors and fields
/// not), then authors' features derived from the papers they write and
/// fields' from their papers (`ginex derive-features`). Built in `dir`.
#[allow(dead_code)]
pub fn typed_store(dir: &Path, nodes: u64) -> Store {
    typed_store_with(dir, nodes, ginex::internals::import::derive::Reduce::Mean)
}

/// [`typed_store`] whose `field` rows are made by `field` (`Reduce::Zero`:
/// zero rows, for a learnable embedding).
pub fn typed_store_with(
    dir: &Path,
    nodes: u64,
    field: ginex::internals::import::derive::Reduce,
) -> Store {
    use ginex::internals::import::derive::{derive_features, DeriveOptions, Reduce};
    let p = SynthParams {
        nodes,
        avg_degree: 4.0,
        dim: 6,
        classes: 3,
        seed: 3,
        split: [0.4, 0.2, 0.2],
        hetero: true,
        ..SynthParams::default()
    };
    ginex::generate_store(&p, &dir.join("typed"), &ginex::NoProgress).unwrap();
    for (from, target, via, out, reduce) in [
        ("typed", "author", "writes", "typed-a", Reduce::Mean),
        ("typed-a", "field", "has_topic", "typed-af", field),
    ] {
        derive_features(&DeriveOptions {
            store: dir.join(from),
            out: dir.join(out),
            target: target.into(),
            from: "paper".into(),
            via: via.into(),
            reduce,
            memory: 1 << 20,
        })
        .unwrap();
    }
    Store::open(dir.join("typed-af")).unwrap()
}

/// What `ginex epoch STORE --policy P --feature-cache-bytes 28800
/// --neighbor-cache-bytes 40000 --batch-size 40 --fanouts 6,4 --superbatch 5
/// --seed 3 --epoch 1 --workers 2 --run-dir RUNS` runs on
/// [`small_epoch_store`] (tools/src/epoch.rs).
pub fn epoch_config(
    policy: ginex::Policy,
    run_dir: &Path,
) -> ginex::internals::exec::epoch::EpochConfig {
    use ginex::internals::exec::config::{CacheConfig, GinexOptions};
    let ginex = GinexOptions {
        superbatch: 5,
        ..GinexOptions::default()
    };
    ginex::internals::exec::epoch::EpochConfig {
        cache: CacheConfig::new(policy, ginex, 1),
        feature_cache_rows: 300,
        neighbor_cache_bytes: 40_000,
        batch_size: 40,
        fanouts: vec![6, 4].into(),
        seed: 3,
        epoch: 1,
        workers: 2,
        run_dir: run_dir.to_path_buf(),
        ..ginex::internals::exec::epoch::EpochConfig::default()
    }
}

/// position and last message.
pub type Phases = std::sync::Arc<std::sync::Mutex<Vec<(String, u64, u64, String)>>>;

/// A progress sink that records every phase into [`Phases`].
pub struct Recorder(pub Phases);
struct RecordedPhase(Phases, usize);

impl ginex::progress::ProgressSink for Recorder {
    fn phase(&self, what: &str, total: u64) -> Box<dyn ginex::progress::PhaseProgress> {
        let mut phases = self.0.lock().unwrap();
        phases.push((what.to_string(), total, 0, String::new()));
        Box::new(RecordedPhase(self.0.clone(), phases.len() - 1))
    }
}

impl ginex::progress::PhaseProgress for RecordedPhase {
    fn set_position(&self, pos: u64) {
        self.0.lock().unwrap()[self.1].2 = pos;
    }
    fn set_message(&self, message: &str) {
        self.0.lock().unwrap()[self.1].3 = message.to_string();
    }
    fn finish(&self) {}
}

/// The `ginex` options of `cfg` (an [`epoch_config`] of `Policy::Ginex`).
pub fn ginex_options(
    cfg: &mut ginex::internals::exec::epoch::EpochConfig,
) -> &mut ginex::internals::exec::config::GinexOptions {
    cfg.cache.ginex_mut().expect("a ginex configuration")
}
