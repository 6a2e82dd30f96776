//! Store integrity: every flipped byte and every truncation is detected,
//! and the golden v1 fixtures still open and read back what was written.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use ginex::internals::format::pages::{Dtype, FeatureLayout};
use ginex::internals::format::tables::Splits;
use ginex::internals::import::synth::SynthParams;
use ginex::internals::store::{ListSink, StoreBuilder, StoreSpec};
use ginex::Store;

fn small_store(dir: &Path) -> PathBuf {
    let p = SynthParams {
        nodes: 100,
        avg_degree: 4.0,
        dim: 16,
        classes: 3,
        seed: 11,
        split: [0.5, 0.2, 0.2],
        ..SynthParams::default()
    };
    common::synth_store(dir, "store", &p)
}

fn files_of(store: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(store)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

fn open_and_verify(dir: &Path) -> ginex::Result<()> {
    Store::open(dir)?.verify().map(|_| ())
}

/// Flipping any single byte of any file of a small store is detected by
/// `open` or `verify`: every byte of each file's header and tail, and every
/// 5th byte elsewhere (every page, segment and table entry gets hit).
#[test]
fn every_flipped_byte_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    let store = small_store(dir.path());
    open_and_verify(&store).unwrap();
    let mut checked = 0;
    for file in files_of(&store) {
        let original = fs::read(&file).unwrap();
        let len = original.len();
        for pos in (0..len).filter(|&p| p < 128 || p + 128 >= len || p % 5 == 0) {
            let mut damaged = original.clone();
            damaged[pos] ^= 0x5a;
            fs::write(&file, &damaged).unwrap();
            assert!(
                open_and_verify(&store).is_err(),
                "flipping byte {pos} of {} went unnoticed",
                file.display()
            );
            checked += 1;
        }
        fs::write(&file, &original).unwrap();
    }
    open_and_verify(&store).unwrap();
    assert!(checked > 3_000, "only {checked} bytes checked");
}

/// Truncating any file makes `open` or `verify` fail with an error that
/// names the file.
#[test]
fn every_truncation_is_detected_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let store = small_store(dir.path());
    for file in files_of(&store) {
        let original = fs::read(&file).unwrap();
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let len = original.len();
        for cut in [0, 1, 63, 64, len / 2, len - 1] {
            if cut >= len {
                continue;
            }
            fs::write(&file, &original[..cut]).unwrap();
            let err = open_and_verify(&store)
                .expect_err(&format!("{name} truncated to {cut} bytes went unnoticed"))
                .to_string();
            assert!(
                err.contains(&name),
                "error for truncated {name} does not name it: {err}"
            );
        }
        fs::write(&file, &original).unwrap();
    }
}

/// A damaged feature page is reported on read, naming the page.
#[test]
fn reads_check_their_page_and_segment() {
    let dir = tempfile::tempdir().unwrap();
    let store_path = small_store(dir.path());
    let pages = store_path.join("features.pages");
    let mut bytes = fs::read(&pages).unwrap();
    bytes[4096 + 4096 + 10] ^= 1; // page 1
    fs::write(&pages, &bytes).unwrap();
    let indices = store_path.join("indices");
    let mut bytes = fs::read(&indices).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    fs::write(&indices, &bytes).unwrap();

    let store = Store::open(&store_path).unwrap();
    let mut row = vec![0u8; 64];
    store.read_feature_rows(&[0], &mut row).unwrap(); // page 0 is intact
    let err = store
        .read_feature_rows(&[64], &mut row)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("feature page 1") && err.contains("features.pages"),
        "{err}"
    );
    let err = store.in_neighbors(99).unwrap_err().to_string();
    assert!(err.contains("segment") && err.contains("indices"), "{err}");
}

// ------------------------------------------------------------ golden fixtures

/// The golden stores' contents are pure functions of the node id, so a
/// fixture written by an older build can be checked by a newer one.
fn golden_feature(v: u64, j: u64) -> f32 {
    ((v * 31 + j * 7) % 97) as f32 / 8.0 - 6.0
}

fn golden_neighbors(v: u64, n: u64) -> Vec<u64> {
    let mut list: Vec<u64> = (0..(v % 5)).map(|k| (v * 13 + k * 29 + 1) % n).collect();
    list.sort_unstable();
    list
}

struct Golden {
    name: &'static str,
    nodes: u64,
    dim: u32,
    dtype: Dtype,
    with_tables: bool,
}

const GOLDEN: [Golden; 2] = [
    Golden {
        name: "v1-small",
        nodes: 40,
        dim: 3,
        dtype: Dtype::F16,
        with_tables: true,
    },
    Golden {
        name: "v1-wide-rows",
        nodes: 6,
        dim: 1100,
        dtype: Dtype::F32,
        with_tables: false,
    },
];

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("fixtures")
}

fn write_golden(g: &Golden, path: &Path) {
    let layout = FeatureLayout::new(g.dim, g.dtype).unwrap();
    let mut b = StoreBuilder::create(
        path,
        StoreSpec {
            segment_bytes: 16,
            ..StoreSpec::new(g.nodes, layout)
        },
    )
    .unwrap();
    let mut fw = b.feature_writer().unwrap();
    for v in 0..g.nodes {
        let values: Vec<f32> = (0..u64::from(g.dim))
            .map(|j| golden_feature(v, j))
            .collect();
        let mut row = vec![0u8; layout.row_bytes()];
        g.dtype.encode_f32(values.len(), &values, &mut row);
        fw.push_rows(&row).unwrap();
    }
    b.add_features(fw).unwrap();
    let mut tw = b.topology_writer().unwrap();
    for v in 0..g.nodes {
        tw.push_list(&golden_neighbors(v, g.nodes)).unwrap();
    }
    b.add_topology(tw).unwrap();
    if g.with_tables {
        let labels: Vec<i32> = (0..g.nodes)
            .map(|v| if v % 7 == 3 { -1 } else { (v % 4) as i32 })
            .collect();
        b.write_labels(&labels, 4).unwrap();
        let splits = Splits {
            train: (0..g.nodes).filter(|v| v % 3 == 0).collect(),
            valid: (0..g.nodes).filter(|v| v % 3 == 1 && v % 2 == 0).collect(),
            test: (0..g.nodes).filter(|v| v % 3 == 2).collect(),
        };
        b.write_splits(&splits).unwrap();
        b.write_original_ids(&(0..g.nodes).map(|v| v * 1000 + 7).collect::<Vec<_>>())
            .unwrap();
    }
    b.finish().unwrap();
}

/// Golden v1 stores checked into `tests/fixtures/` (generated here when
/// missing) must open, verify and read back exactly what was written, so a
/// later format change cannot silently break old stores.
#[test]
fn golden_v1_fixtures_still_read() {
    for g in &GOLDEN {
        let path = fixture_dir().join(g.name);
        if !path.exists() {
            fs::create_dir_all(fixture_dir()).unwrap();
            write_golden(g, &path);
        }
        let store =
            Store::open(&path).unwrap_or_else(|e| panic!("golden {} no longer opens: {e}", g.name));
        store.verify().unwrap();
        assert_eq!(
            (store.num_nodes(), store.feature_dim(), store.dtype()),
            (g.nodes, g.dim, g.dtype)
        );
        let ids: Vec<u64> = (0..g.nodes).rev().collect();
        let mut values = vec![0f32; ids.len() * g.dim as usize];
        store.read_feature_rows_f32(&ids, &mut values).unwrap();
        for (row, &v) in values.chunks_exact(g.dim as usize).zip(&ids) {
            for (j, &x) in row.iter().enumerate() {
                let want = golden_feature(v, j as u64);
                assert!(
                    (x - want).abs() <= want.abs() * 1e-3,
                    "{}: node {v} elem {j}: {x} != {want}",
                    g.name
                );
            }
        }
        let mut edges = 0;
        for v in 0..g.nodes {
            let want = golden_neighbors(v, g.nodes);
            edges += want.len() as u64;
            assert_eq!(store.in_neighbors(v).unwrap(), want, "{}: node {v}", g.name);
        }
        assert_eq!(store.num_edges(), edges);
        if g.with_tables {
            let labels = store.labels().unwrap().unwrap();
            assert_eq!(labels[3], -1);
            assert_eq!(labels[5], 1);
            let s = store.splits().unwrap().unwrap();
            assert_eq!(s.train.len(), 14);
            assert_eq!(store.original_ids().unwrap().unwrap()[2], 2007);
        }
    }
}

/// A structurally bad payload with a valid checksum (what a buggy writer
/// would produce): the error names the file offset of the bad value, not
/// its offset within the payload.
#[test]
fn decoder_errors_name_file_offsets() {
    use ginex::internals::format::header::FileKind;
    use ginex::internals::format::tables::decode_labels;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("labels");
    let labels: Vec<u8> = [0i32, 1, 7, 2]
        .iter()
        .flat_map(|l| l.to_le_bytes())
        .collect();
    ginex::internals::io::writer::write_file(&path, FileKind::Labels, &labels).unwrap();
    let file = ginex::internals::store::read_checked_file(&path, FileKind::Labels).unwrap();
    assert_eq!(file.payload, labels, "payload read back");
    let err = file.decode(|p| decode_labels(p, 4, 3, &path)).unwrap_err();
    match err {
        ginex::Error::Corrupt { offset, what, .. } => {
            assert_eq!(offset, 64 + 2 * 4, "{what}");
            assert!(what.contains("node 2"), "{what}");
        }
        other => panic!("expected corruption, got {other:?}"),
    }
}

// ------------------------------------------------------------ out-degrees

/// Every store a v1.10 build writes records its out-degrees, and they are
/// what a pass over its topology counts; a store without them (the golden
/// v1.0 fixture) still gets them, counted.
#[test]
fn a_store_records_the_out_degrees_its_topology_counts() {
    use ginex::internals::sample::neighbor_cache::out_degrees;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(small_store(dir.path())).unwrap();
    let recorded = store.recorded_out_degrees().unwrap().expect("recorded");
    let counted = store.count_out_degrees().unwrap();
    assert_eq!(recorded, counted);
    assert_eq!(
        recorded.iter().map(|&d| u64::from(d)).sum::<u64>(),
        store.num_edges()
    );
    assert!(
        recorded.iter().any(|&d| d > 1),
        "a degree above 1 is tested"
    );
    assert_eq!(out_degrees(&store).unwrap(), recorded);

    let old = Store::open(fixture_dir().join("v1-small")).unwrap();
    assert_eq!(old.recorded_out_degrees().unwrap(), None);
    let mut want = vec![0u32; 40];
    for v in 0..40 {
        for u in golden_neighbors(v, 40) {
            want[u as usize] += 1;
        }
    }
    assert_eq!(out_degrees(&old).unwrap(), want);
}

/// A table whose checksums hold but whose counts are wrong (a buggy
/// writer's) is refused by `verify`, which names the file, the entry's
/// offset and both counts; `open` and the reads do not recount.
#[test]
fn verify_refuses_out_degrees_that_disagree_with_the_topology() {
    use ginex::internals::format::header::FileKind;
    use ginex::internals::format::tables::encode_out_degrees;
    use ginex::internals::io::writer::write_file;
    let dir = tempfile::tempdir().unwrap();
    let path = small_store(dir.path());
    let store = Store::open(&path).unwrap();
    let mut degrees = store.recorded_out_degrees().unwrap().unwrap();
    degrees[7] += 1;
    let table = store.path_of(FileKind::OutDegrees);
    let manifest_path = store.path_of(FileKind::Manifest);
    let mut manifest = store.manifest().clone();
    drop(store);
    let mut payload = Vec::new();
    encode_out_degrees(&degrees, &mut payload);
    fs::remove_file(&table).unwrap();
    let header = write_file(&table, FileKind::OutDegrees, &payload).unwrap();
    for f in &mut manifest.files {
        if f.kind == FileKind::OutDegrees {
            f.payload_crc = header.payload_crc;
        }
    }
    fs::remove_file(&manifest_path).unwrap();
    write_file(&manifest_path, FileKind::Manifest, &manifest.encode()).unwrap();

    let store = Store::open(&path).unwrap();
    assert_eq!(store.recorded_out_degrees().unwrap().unwrap(), degrees);
    match store.verify().unwrap_err() {
        ginex::Error::Corrupt {
            path: at,
            offset,
            what,
        } => {
            assert_eq!(at, table);
            assert_eq!(offset, 64 + 4 * 7, "{what}");
            assert!(
                what.contains("node 7") && what.contains(&degrees[7].to_string()),
                "{what}"
            );
        }
        other => panic!("expected corruption, got {other:?}"),
    }
}
