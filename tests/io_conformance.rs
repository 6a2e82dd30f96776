//! One conformance suite for both page readers (io_uring and pread, direct
//! and buffered, one round or several per batch): raw batched reads must
//! equal plain reads of the file; batched gathers and neighbor-list reads
//! must equal the sequential reference reader; injected faults must surface
//! as errors that name the file and offset (EIO) or be absorbed (short
//! reads, a filesystem refusing O_DIRECT); a flipped bit must be caught.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ginex::internals::format::pages::Dtype;
use ginex::internals::import::synth::SynthParams;
use ginex::internals::io::aligned::AlignedBuf;
use ginex::internals::io::fault::FaultPlan;
use ginex::internals::io::page_reader::ReadOp;
use ginex::internals::io::{make_reader, Backend};
use ginex::internals::store::gather::{GatherOptions, Gatherer};
use ginex::internals::store::read_cost::{ReadCostModel, SequentialReads};
use ginex::internals::store::row_targets::RowTargets;
use ginex::{Error, Store};

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
    common::synth_store(dir, name, &p)
}

/// A reader configuration under test.
#[derive(Debug, Clone, Copy)]
struct Config {
    backend: Backend,
    direct: bool,
    /// Queue depth (io_uring) or threads (pread).
    qd: usize,
    /// Cap of the gather buffer; small values force several rounds.
    chunk: usize,
    /// Feature pages this far apart are read as one (None: never).
    merge: Option<u64>,
    /// Sequential passes over a gather's span.
    seq: SequentialReads,
}

impl Config {
    /// Whether a gather needing two single pages `gap` pages apart reads
    /// them in one read of `span` pages: merged, or (where sequential
    /// passes are on) priced lower as one read by the default cost model.
    fn bridges(&self, gap: u64, span: u64) -> bool {
        let fits = self.chunk as u64 >= span * 4096;
        let model = ReadCostModel::default();
        let scan = match self.seq {
            SequentialReads::Always => true,
            SequentialReads::Auto => {
                self.merge.is_some() && model.read_us(span) < 2.0 * model.read_us(1)
            }
            SequentialReads::Never => false,
        };
        fits && (self.merge.is_some_and(|m| m >= gap) || scan)
    }
}

fn configs() -> Vec<Config> {
    let c = |backend, direct, qd, chunk, merge| Config {
        backend,
        direct,
        qd,
        chunk,
        merge,
        seq: SequentialReads::Auto,
    };
    let scan = |backend, chunk| Config {
        seq: SequentialReads::Always,
        ..c(backend, true, 16, chunk, Some(3))
    };
    vec![
        scan(Backend::Uring, 16 << 20),
        scan(Backend::Pread, 7 * 4096),
        c(Backend::Uring, true, 64, 16 << 20, Some(3)),
        c(Backend::Uring, true, 64, 16 << 20, None),
        c(Backend::Uring, false, 3, 16 << 20, Some(40)),
        c(Backend::Uring, true, 8, 5 * 4096, Some(3)),
        c(Backend::Uring, false, 4, 5 * 4096, None),
        c(Backend::Pread, true, 3, 16 << 20, Some(3)),
        c(Backend::Pread, true, 4, 16 << 20, Some(0)),
        c(Backend::Pread, false, 1, 16 << 20, None),
        c(Backend::Pread, true, 3, 3 * 4096, Some(3)),
    ]
}

fn gatherer(s: &Store, c: Config, faults: Arc<FaultPlan>) -> Gatherer {
    let opts = GatherOptions {
        backend: c.backend,
        queue_depth: c.qd,
        direct: c.direct,
        faults,
        merge_gap_pages: c.merge,
        sequential_reads: c.seq,
        read_cost: ReadCostModel::default(),
        activity: None,
    };
    Gatherer::new(s, &opts).unwrap().with_chunk_bytes(c.chunk)
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

/// Raw reads through each `PageReader`: random page-aligned ranges (one
/// and several pages, the last partial page of the file with `allow_eof`),
/// in random destination order, equal the file's bytes.
#[test]
fn readers_equal_plain_reads() {
    let dir = workdir();
    let path = dir.path().join("raw");
    let len = 97 * 4096 + 1234;
    let bytes: Vec<u8> = (0..len).map(|i| (i ^ (i >> 9) ^ (i >> 17)) as u8).collect();
    std::fs::write(&path, &bytes).unwrap();
    for c in configs() {
        let mut r = make_reader(c.backend, c.qd, c.direct, Arc::default()).unwrap();
        let f = r.add_file(&path).unwrap();
        let mut ops = Vec::new();
        let mut dst = 0;
        for k in 0..60u64 {
            let page = (k * 37) % 98;
            let pages = 1 + (k % 3) as usize;
            ops.push(ReadOp {
                file: f,
                offset: page * 4096,
                len: pages * 4096,
                dst,
                allow_eof: true,
            });
            dst += pages * 4096;
        }
        ops.reverse();
        let mut out = AlignedBuf::zeroed(dst).unwrap();
        out.as_mut_slice().fill(0xEE);
        r.read_batch(&ops, &mut out).unwrap();
        for op in &ops {
            let start = op.offset as usize;
            let end = (start + op.len).min(len);
            let got = &out.as_slice()[op.dst..op.dst + op.len];
            assert_eq!(&got[..end - start], &bytes[start..end], "{c:?} {op:?}");
            assert!(got[end - start..].iter().all(|&b| b == 0), "{c:?} {op:?}");
        }
        // Past the end without allow_eof: an error naming file and offset.
        let bad = [ReadOp {
            file: f,
            offset: 97 * 4096,
            len: 4096,
            dst: 0,
            allow_eof: false,
        }];
        let err = r.read_batch(&bad, &mut out).unwrap_err().to_string();
        assert!(
            err.contains("raw") && err.contains(&format!("offset {len}")),
            "{c:?}: {err}"
        );
    }
}

#[test]
fn gather_equals_the_reference_reader() {
    let dir = workdir();
    for (dim, dtype) in [
        (40u32, Dtype::F32),
        (1500, Dtype::F32), // 6000-byte rows: two pages each
        (33, Dtype::F16),
        (1024, Dtype::Bf16), // exactly two rows per page
    ] {
        let path = store(dir.path(), &format!("s{dim}"), dim, dtype);
        let s = Store::open(&path).unwrap();
        for c in configs() {
            let mut g = gatherer(&s, c, Arc::default());
            for salt in 0..4 {
                let ids = batch(s.num_nodes(), 50 + salt as usize * 100, salt);
                let mut out = vec![0u8; ids.len() * s.layout().row_bytes()];
                g.gather(&s, &ids, &mut out).unwrap();
                let want = reference(&s, &ids);
                assert_eq!(out, want, "{c:?} dim={dim} salt={salt}");
                // Scattered: the first rows to reversed places of a batch
                // that holds only them, the rest in order after them.
                let rb = s.layout().row_bytes();
                let scattered = ids.len() / 3;
                let at: Vec<usize> = (0..scattered).rev().collect();
                let (mut batch, mut rest) = (
                    vec![0u8; scattered * rb],
                    vec![0u8; (ids.len() - scattered) * rb],
                );
                let mut to = RowTargets::scattered(&mut batch, &at, &mut rest, rb).unwrap();
                g.gather_to(&s, &ids, &mut to).unwrap();
                for (k, &pos) in at.iter().enumerate() {
                    assert_eq!(
                        batch[pos * rb..(pos + 1) * rb],
                        want[k * rb..(k + 1) * rb],
                        "{c:?} dim={dim} salt={salt}: row {k} at {pos}"
                    );
                }
                assert_eq!(rest, want[scattered * rb..], "{c:?} dim={dim}");
                // Targets for another number of rows: an error, not a panic.
                let mut short = RowTargets::scattered(&mut batch, &at, &mut [], rb).unwrap();
                assert!(g.gather_to(&s, &ids, &mut short).is_err());
            }
            // An empty batch reads nothing and succeeds.
            let before = g.stats();
            g.gather(&s, &[], &mut []).unwrap();
            assert_eq!(g.read_lists(&s, &[]).unwrap(), Vec::<Vec<u64>>::new());
            assert_eq!(g.stats().bytes_read, before.bytes_read);
            let st = g.stats();
            if s.layout().rows_per_page() > 1 {
                assert!(
                    st.unique_pages < st.rows,
                    "pages were not deduplicated: {st:?}"
                );
            }
            let ids = [0, 7, s.num_nodes() - 1, 7];
            let mut f = vec![0f32; ids.len() * dim as usize];
            g.gather_f32(&s, &ids, &mut f).unwrap();
            let mut want = vec![0f32; ids.len() * dim as usize];
            s.read_feature_rows_f32(&ids, &mut want).unwrap();
            assert_eq!(
                f.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                want.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
            );
            // A wrong output size is an error, not a panic.
            assert!(g.gather_f32(&s, &ids, &mut want[1..]).is_err());
        }
    }
}

/// Rows sharing a page cost one page read; the counters say so exactly.
#[test]
fn gather_reads_each_page_once_and_counts() {
    let dir = workdir();
    let path = store(dir.path(), "s", 40, Dtype::F32); // 160-byte rows
    let s = Store::open(&path).unwrap();
    let rpp = s.layout().rows_per_page() as u64;
    assert_eq!(rpp, 25);
    // Every row of pages 0 and 3, each twice, plus the last row.
    let mut ids: Vec<u64> = (0..rpp).chain(3 * rpp..4 * rpp).collect();
    ids.extend(ids.clone());
    ids.push(s.num_nodes() - 1);
    for c in configs() {
        let mut g = gatherer(&s, c, Arc::default());
        let mut out = vec![0u8; ids.len() * s.layout().row_bytes()];
        g.gather(&s, &ids, &mut out).unwrap();
        assert_eq!(out, reference(&s, &ids), "{c:?}");
        let st = g.stats();
        // Pages 0 and 3 lie two pages apart: one read of 4 pages when
        // gaps of 2 are merged (and the buffer holds 4 pages).
        // (`Auto` keeps random reads: a pass would span all 120 pages.)
        let merged = c.merge.is_some_and(|gap| gap >= 2) && c.chunk >= 4 * 4096;
        let last_page = s.layout().locate(s.num_nodes() - 1).page;
        let cap = (c.chunk as u64 / 4096).min(256);
        let (reads, pages_read) = match (c.seq, merged) {
            // One read over the whole span when a read can hold it;
            // otherwise the gap to the last page is longer than a read
            // and is skipped: pages 0..4 and the last.
            (SequentialReads::Always, _) if cap > last_page => (1, last_page + 1),
            (SequentialReads::Always, _) => (2, 5),
            (_, true) => (2, 5),
            (_, false) => (3, 3),
        };
        assert_eq!(
            (st.rows, st.unique_pages, st.feature_reads, st.bytes_read),
            (ids.len() as u64, 3, reads, pages_read * 4096),
            "{c:?}"
        );
    }
}

/// Merging across gaps never changes the rows, only the reads: random
/// batches give the same bytes with and without it, with fewer reads and
/// at least as many bytes read; merging everything reaches the 32-page cap.
#[test]
fn merged_reads_give_the_same_rows_in_fewer_reads() {
    let dir = workdir();
    let path = store(dir.path(), "s", 40, Dtype::F32); // 25 rows per page, 120 pages
    let s = Store::open(&path).unwrap();
    let base = Config {
        backend: Backend::Uring,
        direct: true,
        qd: 16,
        chunk: 16 << 20,
        merge: None,
        seq: SequentialReads::Never,
    };
    for gap in [0u64, 1, 3, 200] {
        let mut plain = gatherer(&s, base, Arc::default());
        let mut merged = gatherer(
            &s,
            Config {
                merge: Some(gap),
                ..base
            },
            Arc::default(),
        );
        for salt in 0..6 {
            let ids = batch(s.num_nodes(), 20 + 40 * salt as usize, salt);
            let rb = s.layout().row_bytes();
            let (mut a, mut b) = (vec![0u8; ids.len() * rb], vec![0u8; ids.len() * rb]);
            plain.gather(&s, &ids, &mut a).unwrap();
            merged.gather(&s, &ids, &mut b).unwrap();
            assert_eq!(a, b, "gap {gap} salt {salt}");
        }
        let (p, m) = (plain.stats(), merged.stats());
        assert_eq!(m.unique_pages, p.unique_pages);
        assert!(
            m.feature_reads < p.feature_reads,
            "gap {gap}: {m:?} vs {p:?}"
        );
        assert!(m.bytes_read >= p.bytes_read, "gap {gap}: {m:?} vs {p:?}");
        if gap == 200 {
            // Everything merges, up to 32 pages a read: more than 8 pages
            // a read on average, and no more than 32.
            let pages = m.bytes_read / 4096;
            assert!(m.feature_reads >= pages.div_ceil(32), "{m:?}");
            assert!(m.feature_reads * 8 < pages, "reads were not merged: {m:?}");
        }
    }
}

#[test]
fn neighbor_lists_equal_the_reference_reader() {
    let dir = workdir();
    let path = store(dir.path(), "s", 8, Dtype::F32);
    let s = Store::open(&path).unwrap();
    let n = s.num_nodes();
    assert!(s.segments().len() > 2, "the test wants several segments");
    for c in configs() {
        let mut g = gatherer(&s, c, Arc::default());
        let mut nodes = batch(n, 300, 5);
        nodes.extend([0, n - 1, n - 2, 0]);
        let lists = g.read_lists(&s, &nodes).unwrap();
        for (&v, list) in nodes.iter().zip(&lists) {
            assert_eq!(list, &s.in_neighbors(v).unwrap(), "{c:?} node {v}");
        }
        let st = g.stats();
        assert!(st.segments < nodes.len() as u64, "{st:?}");
        // Neighbouring segments share boundary pages: read together.
        assert!(st.list_reads < st.segments, "{st:?}");
        assert!(st.bytes_read < 2 * std::fs::metadata(path.join("indices")).unwrap().len());
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
    // Many reads around the victim, so others are in flight when it fails.
    let mut ids: Vec<u64> = (0..s.num_nodes()).step_by(25).collect();
    ids.insert(40, victim);
    for c in configs() {
        let mut g = gatherer(&s, c, Arc::new(FaultPlan::eio_at(offset)));
        let mut out = vec![0u8; ids.len() * layout.row_bytes()];
        let err = g.gather(&s, &ids, &mut out).unwrap_err();
        match &err {
            Error::ReadFailed { source, .. } => {
                assert_eq!(source.raw_os_error(), Some(libc::EIO), "{c:?}: {err}")
            }
            other => panic!("{c:?}: expected ReadFailed, got {other}"),
        }
        // The failed read is named by file, offset and length, and covers
        // the victim's page (merged reads start before it).
        let msg = err.to_string();
        let read = msg
            .split_once("read of ")
            .and_then(|(_, r)| r.split_once(" bytes at offset "))
            .and_then(|(len, r)| {
                let at = r.split(|ch: char| !ch.is_ascii_digit()).next()?;
                Some((len.parse::<u64>().ok()?, at.parse::<u64>().ok()?))
            });
        assert!(
            msg.contains("features.pages")
                && read.is_some_and(|(len, at)| at <= offset && offset < at + len),
            "{c:?}: {msg}"
        );
        // The reader is still usable after the failed batch (gathers
        // whose reads stay clear of the failing offset: a sequential pass
        // from page 0 to node 2000's would read through it).
        for ok in [vec![3, 5], vec![2000]] {
            let mut out = vec![0u8; ok.len() * layout.row_bytes()];
            g.gather(&s, &ok, &mut out).unwrap();
            assert_eq!(out, reference(&s, &ok));
        }
        // Neighbor-list reads report it too, naming the indices file.
        let mut g = gatherer(&s, c, Arc::new(FaultPlan::eio_at(4096)));
        let err = g.read_lists(&s, &[0, 1]).unwrap_err().to_string();
        assert!(
            err.contains("indices") && err.contains("offset 4096"),
            "{c:?}: {err}"
        );
    }
}

#[test]
fn injected_short_reads_are_resubmitted() {
    let dir = workdir();
    let path = store(dir.path(), "s", 1500, Dtype::F32); // 2-page rows: 8 KiB reads
    let s = Store::open(&path).unwrap();
    for c in configs() {
        let plan = Arc::new(FaultPlan::short_reads(2, 2048));
        let mut g = gatherer(&s, c, plan.clone());
        let ids = batch(s.num_nodes(), 200, 3);
        let mut out = vec![0u8; ids.len() * s.layout().row_bytes()];
        g.gather(&s, &ids, &mut out).unwrap();
        assert_eq!(out, reference(&s, &ids), "{c:?}");
        let lists = g.read_lists(&s, &[0, 1, s.num_nodes() - 1]).unwrap();
        assert_eq!(lists[2], s.in_neighbors(s.num_nodes() - 1).unwrap());
        // A sequential pass issues a few large reads, the others hundreds.
        let fired = if c.seq == SequentialReads::Always {
            0
        } else {
            10
        };
        assert!(
            plan.short_reads_injected() > fired,
            "{c:?}: the fault never fired"
        );
    }
}

/// A filesystem that refuses O_DIRECT (EINVAL on open) means buffered
/// reads, not a failure.
#[test]
fn refused_o_direct_falls_back_to_buffered() {
    let dir = workdir();
    let path = store(dir.path(), "s", 40, Dtype::F32);
    let s = Store::open(&path).unwrap();
    for c in configs() {
        let mut g = gatherer(&s, c, Arc::new(FaultPlan::refusing_direct()));
        assert!(!g.direct_io(), "{c:?}");
        let ids = batch(s.num_nodes(), 100, 1);
        let mut out = vec![0u8; ids.len() * s.layout().row_bytes()];
        g.gather(&s, &ids, &mut out).unwrap();
        assert_eq!(out, reference(&s, &ids), "{c:?}");
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
    let row_in_page_2 = 2 * s.layout().rows_per_page() as u64 + 3;
    for c in configs() {
        let mut g = gatherer(&s, c, Arc::default());
        // Healthy pages before and after, in another round when chunked.
        let ids = [0, 200, 2999, row_in_page_2, 1];
        let mut out = vec![0u8; ids.len() * s.layout().row_bytes()];
        let err = g.gather(&s, &ids, &mut out).unwrap_err();
        assert!(
            matches!(err, Error::ChecksumMismatch { .. }),
            "{c:?}: {err}"
        );
        let err = err.to_string();
        assert!(
            err.contains("features.pages")
                && err.contains("feature page 2")
                && err.contains(&format!("node {row_in_page_2}"))
                && err.contains(&format!("offset {}", 3 * 4096)),
            "{c:?}: {err}"
        );
        let err = g.read_lists(&s, &[0]).unwrap_err().to_string();
        assert!(err.contains("segment 0"), "{err}");
        // Rows on pages 1 and 3 around the damaged page: merged into one
        // read of pages 1..=3, whose page 2 is read and dropped unchecked.
        let around = [s.layout().rows_per_page() as u64, row_in_page_2 + 25];
        let before = g.stats();
        let mut out = vec![0u8; around.len() * s.layout().row_bytes()];
        g.gather(&s, &around, &mut out).unwrap();
        assert_eq!(out, reference(&s, &around), "{c:?}");
        let reads = g.stats().feature_reads - before.feature_reads;
        assert_eq!(reads, if c.bridges(1, 3) { 1 } else { 2 }, "{c:?}");
        // Healthy data still reads.
        let ok = [0, 2999];
        let mut out = vec![0u8; ok.len() * s.layout().row_bytes()];
        g.gather(&s, &ok, &mut out).unwrap();
        assert_eq!(out, reference(&s, &ok));
        let last = s.num_nodes() - 1;
        assert_eq!(
            g.read_lists(&s, &[last]).unwrap()[0],
            s.in_neighbors(last).unwrap()
        );
        // An id past the end is an error.
        let mut one = vec![0u8; s.layout().row_bytes()];
        assert!(g.gather(&s, &[s.num_nodes()], &mut one).is_err());
        assert!(g.read_lists(&s, &[s.num_nodes()]).is_err());
    }
}

/// A sequential pass reads the same rows as random reads, and `Auto` takes
/// it exactly where the cost model prices it lower: on this machine's
/// model, for a gather needing every other page (60 single-page reads
/// against one read of 119 pages), not for one needing two pages 100
/// apart; on a device whose reads are dear, for both.
#[test]
fn sequential_passes_give_the_same_rows_where_the_cost_model_prices_them_lower() {
    let dir = workdir();
    let path = store(dir.path(), "s", 40, Dtype::F32); // 25 rows per page, 120 pages
    let s = Store::open(&path).unwrap();
    let rpp = s.layout().rows_per_page() as u64;
    let dense: Vec<u64> = (0..60).map(|p| 2 * p * rpp + p % rpp).collect();
    let sparse: Vec<u64> = vec![3, 100 * rpp + 1];
    let open = |seq, read_cost| {
        let opts = GatherOptions {
            backend: Backend::Uring,
            queue_depth: 16,
            direct: true,
            faults: Arc::default(),
            merge_gap_pages: Some(0),
            sequential_reads: seq,
            read_cost,
            activity: None,
        };
        Gatherer::new(&s, &opts).unwrap()
    };
    let gather = |g: &mut Gatherer, ids: &[u64]| {
        let mut out = vec![0u8; ids.len() * s.layout().row_bytes()];
        g.gather(&s, ids, &mut out).unwrap();
        assert_eq!(out, reference(&s, ids));
        g.stats()
    };
    let ssd = ReadCostModel::THIS_MACHINE;
    let ns = |us: f64| (us * 1e3) as u64;

    let mut never = open(SequentialReads::Never, ssd);
    let st = gather(&mut never, &dense);
    assert_eq!((st.feature_reads, st.sequential_passes), (60, 0));
    assert_eq!(st.predicted_read_ns, ns(60.0 * ssd.read_us(1)));

    let mut auto = open(SequentialReads::Auto, ssd);
    let st = gather(&mut auto, &dense);
    assert_eq!((st.feature_reads, st.sequential_passes), (1, 1), "{st:?}");
    assert_eq!(st.bytes_read, 119 * 4096);
    assert!(ssd.read_us(119) < 60.0 * ssd.read_us(1));
    assert_eq!(st.predicted_read_ns, ns(ssd.read_us(119)));
    let st = gather(&mut auto, &sparse);
    assert_eq!((st.feature_reads, st.sequential_passes), (3, 1), "{st:?}");

    let dear = ReadCostModel {
        us_per_read: 1000.0,
        us_per_page: 1.0,
        us_per_page_sequential: 1.0,
    };
    let mut auto_dear = open(SequentialReads::Auto, dear);
    let st = gather(&mut auto_dear, &sparse);
    assert_eq!((st.feature_reads, st.sequential_passes), (1, 1), "{st:?}");
    assert_eq!(st.bytes_read, 101 * 4096);

    // Merging off: `Auto` reads page by page; `Always` still passes.
    let opts = |seq| GatherOptions {
        merge_gap_pages: None,
        sequential_reads: seq,
        read_cost: dear,
        ..GatherOptions::default()
    };
    let mut off = Gatherer::new(&s, &opts(SequentialReads::Auto)).unwrap();
    assert_eq!(gather(&mut off, &sparse).feature_reads, 2);
    let mut always = Gatherer::new(&s, &opts(SequentialReads::Always)).unwrap();
    assert_eq!(gather(&mut always, &sparse).sequential_passes, 1);
}

/// A hop's lists are read a buffer's worth at a time: with the buffer
/// capped at a few pages, `visit_lists` visits exactly the lists
/// `read_lists` returns, in order, and the read buffer stays within the
/// cap (before, every list of the hop was read and decoded at once: on a
/// skewed graph, hundreds of MiB that no plan counted).
#[test]
fn neighbor_lists_are_visited_within_the_read_buffer_cap() {
    let dir = workdir();
    let path = store(dir.path(), "s", 8, Dtype::F32);
    let s = Store::open(&path).unwrap();
    let n = s.num_nodes();
    let cap = 3 * 4096;
    let largest_segment = s.segments().iter().map(|g| g.edge_count * 4).max().unwrap();
    assert!(
        largest_segment as usize + 4096 <= cap,
        "the test wants small segments"
    );
    let mut nodes = batch(n, 300, 7);
    nodes.extend([0, n - 1]);
    let whole = gatherer(&s, configs()[0], Arc::default())
        .read_lists(&s, &nodes)
        .unwrap();
    for c in configs() {
        let mut g = gatherer(&s, c, Arc::default()).with_chunk_bytes(cap);
        let mut seen = Vec::new();
        g.visit_lists(&s, &nodes, &mut |i, list| seen.push((i, list.to_vec())))
            .unwrap();
        let want: Vec<(usize, Vec<u64>)> = whole.iter().cloned().enumerate().collect();
        assert_eq!(seen, want, "{c:?}");
        assert!(
            g.read_buffer_bytes() <= cap + 4096,
            "{c:?}: {} bytes",
            g.read_buffer_bytes()
        );
        assert!(g.stats().list_reads > 1, "{c:?}: read in one round");
    }
}
