//! q8 stores (format/features.md, "q8 rows"): decoded rows stay within the
//! error the store records, every reader decodes the same f32 rows, and
//! damage to the codes or their scales is refused, never decoded.

mod common;

use std::path::Path;

use ginex::internals::format::header::{FileHeader, HEADER_SIZE};
use ginex::internals::format::q8::{Q8_CODES_OFFSET, Q8_STEP_OFFSET};
use ginex::internals::import::synth::SynthParams;
use ginex::{Dtype, FeatureLayout, Loader, Policy, Store, StoreBuilder, StoreSpec};

fn params(dtype: Dtype) -> SynthParams {
    SynthParams {
        nodes: 2000,
        avg_degree: 8.0,
        dim: 40,
        classes: 4,
        seed: 5,
        split: [0.2, 0.1, 0.1],
        dtype,
        ..SynthParams::default()
    }
}

fn all_rows(store: &Store) -> Vec<f32> {
    let ids: Vec<u64> = (0..store.feature_rows()).collect();
    let mut out = vec![0f32; ids.len() * store.feature_dim() as usize];
    store.read_feature_rows_f32(&ids, &mut out).unwrap();
    out
}

#[test]
fn q8_rows_decode_within_the_recorded_error_on_every_page() {
    let dir = tempfile::tempdir().unwrap();
    let exact = common::open_synth_store(dir.path(), "f32", &params(Dtype::F32));
    let q8 = common::open_synth_store(dir.path(), "q8", &params(Dtype::Q8));
    assert_eq!(q8.dtype(), Dtype::Q8);
    // 40 codes and their 8-byte scale: 48 bytes, 85 rows a page.
    assert_eq!(q8.layout().row_bytes(), 48);
    assert_eq!(q8.layout().rows_per_page(), 85);
    let recorded = q8.q8_error().expect("a q8 store records its error");
    assert!(exact.q8_error().is_none());
    assert_eq!(recorded.rows, q8.feature_rows());
    let (want, got) = (all_rows(&exact), all_rows(&q8));
    let (mut max, mut sum) = (0f32, 0f64);
    for (x, y) in want.iter().zip(&got) {
        let d = (x - y).abs();
        max = max.max(d);
        sum += f64::from(d);
    }
    // The record is the measurement of these very rows.
    assert_eq!(max, recorded.max_abs);
    let mean = (sum / want.len() as f64) as f32;
    assert!((mean - recorded.mean_abs()).abs() <= mean * 1e-4, "{mean}");
    let (lo, hi) = want
        .iter()
        .fold((f32::MAX, f32::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    assert_eq!((recorded.low, recorded.high), (lo, hi));
    // Half a step of the widest row's range, at most.
    assert!(recorded.relative(recorded.max_abs) <= 1.0 / 510.0 + 1e-6);
    assert!(max > 0.0, "q8 is lossy on gaussian features");
    q8.verify().unwrap();
    // The feature file is 1.11; the f32 store's is still 1.7.
    for (store, minor) in [(&q8, 11), (&exact, 7)] {
        let head = std::fs::read(store.dir().join("features.pages")).unwrap();
        let h = FileHeader::decode(&head[..HEADER_SIZE], Path::new("features.pages")).unwrap();
        assert_eq!((h.version.major, h.version.minor), (1, minor));
    }
}

#[test]
fn every_reader_sees_the_same_f32_rows() {
    let (dir, store) = common::temp_synth_store(&params(Dtype::Q8));
    let runs = dir.path().join("runs");
    let rows = all_rows(&store);
    let dim = store.feature_dim() as usize;
    for policy in [Policy::Ginex, Policy::Lru, Policy::Mmap] {
        let loader = Loader::builder(&store)
            .policy(policy)
            .feature_cache_bytes(200 * 48)
            .batch_size(50)
            .fanouts([5, 3])
            .seed(1)
            .run_dir(&runs)
            .build()
            .unwrap();
        let mut batches = 0;
        for b in loader {
            let b = b.unwrap();
            let x = b.rows_f32();
            for (k, &v) in b.ids.iter().enumerate() {
                let v = v as usize;
                assert_eq!(x[k * dim..(k + 1) * dim], rows[v * dim..(v + 1) * dim]);
            }
            batches += 1;
        }
        assert!(batches > 0, "{policy:?}");
    }
}

/// A q8 store of one page: 3 rows of 4 codes (12 bytes each), written
/// through the builder, so every checksum is right whatever the scale.
fn handmade(dir: &Path, name: &str, rows: &[u8]) -> Store {
    let out = dir.join(name);
    let layout = FeatureLayout::new(4, Dtype::Q8).unwrap();
    let mut b = StoreBuilder::create(&out, StoreSpec::new(3, layout)).unwrap();
    let mut w = b.feature_writer().unwrap();
    w.push_rows(rows).unwrap();
    b.add_features(w).unwrap();
    let mut topo = b.topology_writer().unwrap();
    for _ in 0..3 {
        ginex::ListSink::push_list(&mut topo, &[]).unwrap();
    }
    b.add_topology(topo).unwrap();
    Store::open(b.finish().unwrap()).unwrap()
}

fn q8_rows(values: &[f32]) -> Vec<u8> {
    let mut rows = vec![0u8; values.len() / 4 * 12];
    Dtype::Q8.encode_f32(4, values, &mut rows);
    rows
}

#[test]
fn a_flipped_code_byte_is_caught_and_a_bad_scale_is_never_decoded() {
    let dir = tempfile::tempdir().unwrap();
    let values = [
        0.0f32, 1.0, 2.0, 3.0, -1.0, 0.5, 0.25, 1.0, 7.0, 7.0, 7.0, 7.0,
    ];
    let good = handmade(dir.path(), "good", &q8_rows(&values));
    good.verify().unwrap();
    let mut x = vec![0f32; 12];
    good.read_feature_rows_f32(&[0, 1, 2], &mut x).unwrap();
    assert_eq!(&x[8..], &[7.0; 4], "a constant row is exact");

    // A flipped code byte: the page CRC catches it, in verify and reads.
    let pages = good.dir().join("features.pages");
    let mut bytes = std::fs::read(&pages).unwrap();
    bytes[4096 + 12 + Q8_CODES_OFFSET + 1] ^= 0x10;
    std::fs::write(&pages, &bytes).unwrap();
    let err = good.verify().unwrap_err().to_string();
    assert!(err.contains("feature page 0"), "{err}");
    let err = good.read_feature_rows_f32(&[1], &mut x[..4]).unwrap_err();
    assert!(err.to_string().to_lowercase().contains("checksum"), "{err}");

    // Scales that would decode to garbage, under valid checksums.
    for (step, want) in [
        (f32::NAN, "step is NaN"),
        (f32::INFINITY, "step is inf"),
        (0.0, "step is 0 but its codes are not"),
    ] {
        let mut rows = q8_rows(&values);
        rows[12 + Q8_STEP_OFFSET..12 + Q8_STEP_OFFSET + 4].copy_from_slice(&step.to_le_bytes());
        let name = format!("bad-{}", step.to_string().to_lowercase());
        let store = handmade(dir.path(), &name, &rows);
        let err = store.verify().unwrap_err().to_string();
        assert!(err.contains("feature row 1") && err.contains(want), "{err}");
        let err = store.read_feature_rows_f32(&[1], &mut x[..4]).unwrap_err();
        assert!(err.to_string().contains(want), "{err}");
        // The good rows of the page still read.
        store.read_feature_rows_f32(&[0], &mut x[..4]).unwrap();
    }
}
