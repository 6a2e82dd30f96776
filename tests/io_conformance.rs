//! One conformance suite for both page readers (io_uring and pread, direct
//! and buffered): batched gathers and neighbor-list reads must equal the
//! sequential reference reader, and injected faults must surface as errors
//! that name the file and offset (EIO) or be absorbed (short reads).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ginex::format::pages::Dtype;
use ginex::import::synth::{generate_store, NoProgress, SynthParams};
use ginex::io::fault::FaultPlan;
use ginex::io::page_reader::Backend;
use ginex::store::gather::{GatherOptions, Gatherer};
use ginex::Store;

/// Stores live under the target dir (ext4 here), so O_DIRECT is exercised;
/// on filesystems that refuse it the readers fall back to buffered reads.
fn workdir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

fn store(dir: &Path, name: &str, dim: u32, dtype: Dtype) -> PathBuf {
    let p = SynthParams {
        nodes: 3000,
        avg_degree: 12.0,
        dim,
        dtype,
        classes: 4,
        seed: 9,
        ..SynthParams::default()
    };
    let out = dir.join(name);
    generate_store(&p, &out, &NoProgress).unwrap();
    out
}

fn configs() -> Vec<(Backend, bool, usize)> {
    vec![
        (Backend::Uring, true, 64),
        (Backend::Uring, false, 3),
        (Backend::Pread, true, 4),
        (Backend::Pread, false, 1),
    ]
}

fn options(backend: Backend, direct: bool, qd: usize, faults: FaultPlan) -> GatherOptions {
    GatherOptions {
        backend,
        queue_depth: qd,
        direct,
        faults: Arc::new(faults),
    }
}

/// Deterministic pseudo-random ids, with duplicates and neighbours.
fn batch(n: u64, len: usize, salt: u64) -> Vec<u64> {
    let mut x = salt.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            match i % 5 {
                0 => n - 1,           // last row, last page
                1 => (x % n) / 2 * 2, // neighbours share pages
                _ => x % n,
            }
        })
        .collect()
}

fn reference(store: &Store, ids: &[u64]) -> Vec<u8> {
    let mut out = vec![0u8; ids.len() * store.layout().row_bytes()];
    store.read_feature_rows(ids, &mut out).unwrap();
    out
}

#[test]
fn gather_equals_the_reference_reader() {
    let dir = workdir();
    for (dim, dtype) in [(40u32, Dtype::F32), (1500, Dtype::F32), (33, Dtype::F16)] {
        let path = store(dir.path(), &format!("s{dim}"), dim, dtype);
        let s = Store::open(&path).unwrap();
        for (backend, direct, qd) in configs() {
            let mut g =
                Gatherer::new(&s, &options(backend, direct, qd, FaultPlan::default())).unwrap();
            for salt in 0..4 {
                let ids = batch(s.num_nodes(), 50 + salt as usize * 100, salt);
                let mut out = vec![0u8; ids.len() * s.layout().row_bytes()];
                g.gather(&s, &ids, &mut out).unwrap();
                assert_eq!(
                    out,
                    reference(&s, &ids),
                    "{backend:?} direct={direct} dim={dim} salt={salt}"
                );
            }
            // An empty batch reads nothing and succeeds.
            let before = g.stats();
            g.gather(&s, &[], &mut []).unwrap();
            assert_eq!(g.read_lists(&s, &[]).unwrap(), Vec::<Vec<u64>>::new());
            assert_eq!(g.stats().bytes_read, before.bytes_read);
            let st = g.stats();
            assert!(
                st.unique_pages < st.rows,
                "pages were not deduplicated: {st:?}"
            );
            let mut f = vec![0f32; 3 * dim as usize];
            g.gather_f32(&s, &[0, 7, s.num_nodes() - 1], &mut f)
                .unwrap();
            let mut want = vec![0f32; 3 * dim as usize];
            s.read_feature_rows_f32(&[0, 7, s.num_nodes() - 1], &mut want)
                .unwrap();
            assert_eq!(f, want);
        }
    }
}

#[test]
fn neighbor_lists_equal_the_reference_reader() {
    let dir = workdir();
    let path = store(dir.path(), "s", 8, Dtype::F32);
    let s = Store::open(&path).unwrap();
    let n = s.num_nodes();
    for (backend, direct, qd) in configs() {
        let mut g = Gatherer::new(&s, &options(backend, direct, qd, FaultPlan::default())).unwrap();
        let mut nodes = batch(n, 300, 5);
        nodes.extend([0, n - 1, n - 2]);
        let lists = g.read_lists(&s, &nodes).unwrap();
        for (&v, list) in nodes.iter().zip(&lists) {
            assert_eq!(
                list,
                &s.in_neighbors(v).unwrap(),
                "{backend:?} direct={direct} node {v}"
            );
        }
        assert!(g.stats().segments < nodes.len() as u64);
    }
}

#[test]
fn injected_eio_names_file_and_offset() {
    let dir = workdir();
    let path = store(dir.path(), "s", 40, Dtype::F32);
    let s = Store::open(&path).unwrap();
    let layout = s.layout();
    let victim = 1000u64;
    let offset = 4096 * (layout.locate(victim).page + 1);
    for (backend, direct, qd) in configs() {
        let mut g =
            Gatherer::new(&s, &options(backend, direct, qd, FaultPlan::eio_at(offset))).unwrap();
        let ids = vec![3, victim, 2000, 5];
        let mut out = vec![0u8; ids.len() * layout.row_bytes()];
        let err = g.gather(&s, &ids, &mut out).unwrap_err().to_string();
        assert!(
            err.contains("features.pages") && err.contains(&format!("offset {offset}")),
            "{backend:?}: {err}"
        );
        // The reader is still usable after the failed batch.
        let ok = vec![3, 2000];
        let mut out = vec![0u8; ok.len() * layout.row_bytes()];
        g.gather(&s, &ok, &mut out).unwrap();
        assert_eq!(out, reference(&s, &ok));
    }
}

#[test]
fn injected_short_reads_are_resubmitted() {
    let dir = workdir();
    let path = store(dir.path(), "s", 1500, Dtype::F32); // 2-page rows: 8 KiB reads
    let s = Store::open(&path).unwrap();
    for (backend, direct, qd) in configs() {
        let mut g = Gatherer::new(
            &s,
            &options(backend, direct, qd, FaultPlan::short_reads(2, 2048)),
        )
        .unwrap();
        let ids = batch(s.num_nodes(), 200, 3);
        let mut out = vec![0u8; ids.len() * s.layout().row_bytes()];
        g.gather(&s, &ids, &mut out).unwrap();
        assert_eq!(out, reference(&s, &ids), "{backend:?} direct={direct}");
        let lists = g.read_lists(&s, &[0, 1, s.num_nodes() - 1]).unwrap();
        assert_eq!(lists[2], s.in_neighbors(s.num_nodes() - 1).unwrap());
    }
}

#[test]
fn corrupted_page_and_segment_are_detected() {
    let dir = workdir();
    let path = store(dir.path(), "s", 40, Dtype::F32);
    let pages = path.join("features.pages");
    let mut bytes = std::fs::read(&pages).unwrap();
    bytes[4096 * 3 + 17] ^= 4; // payload page 2
    std::fs::write(&pages, bytes).unwrap();
    let indices = path.join("indices");
    let mut bytes = std::fs::read(&indices).unwrap();
    bytes[4096 + 8] ^= 4; // first segment
    std::fs::write(&indices, bytes).unwrap();
    let s = Store::open(&path).unwrap();
    let row_in_page_2 = 2 * s.layout().rows_per_page() as u64;
    for (backend, direct, qd) in configs() {
        let mut g = Gatherer::new(&s, &options(backend, direct, qd, FaultPlan::default())).unwrap();
        let mut out = vec![0u8; s.layout().row_bytes()];
        let err = g
            .gather(&s, &[row_in_page_2], &mut out)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("feature page 2") && err.contains(&format!("node {row_in_page_2}")),
            "{err}"
        );
        let err = g.read_lists(&s, &[0]).unwrap_err().to_string();
        assert!(err.contains("segment 0"), "{err}");
        assert!(g.gather(&s, &[s.num_nodes()], &mut out).is_err());
    }
}
