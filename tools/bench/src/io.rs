//! `ginex bench io`: the miss path's throughput — Ginex-style one pread per
//! row, the pread reader at several thread counts, the io_uring reader at
//! several queue depths, and (when installed) fio's 4 KiB random-read IOPS
//! on the same file, all in one invocation.

use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use serde::Serialize;

use crate::machine::machine_description;
use crate::report::sorted_json;
use ginex::internals::error::{Error, Result};
use ginex::internals::format::header::FileKind;
use ginex::internals::format::pages::FeatureLayout;
use ginex::internals::format::PAGE_SIZE;
use ginex::internals::io::aligned::AlignedBuf;
use ginex::internals::io::make_reader;
use ginex::internals::io::page_reader::{open_for_reads, ReadOp};
use ginex::internals::io::read::drop_from_page_cache;
use ginex::internals::io::Backend;
use ginex::internals::store::gather::{GatherOptions, Gatherer};
use ginex::internals::store::Store;

/// Arguments of `ginex bench io`.
#[derive(Debug, Args)]
pub struct IoBenchArgs {
    /// The store to read.
    pub store: PathBuf,
    /// Ids per batch (uniformly random over all nodes).
    #[arg(long, default_value_t = 100_000)]
    pub batch: usize,
    /// Batches per configuration.
    #[arg(long, default_value_t = 3)]
    pub batches: usize,
    /// io_uring queue depths to measure.
    #[arg(long, value_delimiter = ',', default_value = "1,8,32,64,128")]
    pub qd: Vec<usize>,
    /// pread thread counts to measure.
    #[arg(long, value_delimiter = ',', default_value = "1,2,8,32")]
    pub threads: Vec<usize>,
    /// Seconds of fio (0 = skip; skipped too when fio is not installed).
    #[arg(long, default_value_t = 10)]
    pub fio_seconds: u32,
    /// Print one JSON object per configuration instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Seed of the random ids.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Read sizes, in 4 KiB pages, of the size sweep: random page-aligned
    /// reads of that many consecutive pages at queue depth 64 (io_uring),
    /// fitted to a cost per read plus a cost per page (empty = skip).
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16,32")]
    pub read_pages: Vec<u64>,
    /// Reads per size of the size sweep.
    #[arg(long, default_value_t = 60_000)]
    pub sweep_reads: usize,
}

/// One size of the read-size sweep.
struct SizeRow {
    pages: u64,
    reads: usize,
    secs: f64,
}

/// Random page-aligned reads of `pages` consecutive feature pages, `reads`
/// of them, through the io_uring reader at queue depth 64, in rounds of
/// at most 32 MiB of buffer.
fn read_size(store: &Store, pages: u64, reads: usize, seed: u64) -> Result<SizeRow> {
    let mut reader = make_reader(Backend::Uring, 64, true, Default::default())?;
    let path = store.path_of(FileKind::FeaturePages);
    let file = reader.add_file(&path)?;
    let total_pages = reader.files()[file].len / PAGE_SIZE as u64;
    let starts = random_batch(total_pages.saturating_sub(pages).max(1), reads, seed);
    let len = pages as usize * PAGE_SIZE;
    let per_round = ((32usize << 20) / len).max(1);
    let mut buf = AlignedBuf::zeroed(per_round * len)?;
    let started = Instant::now();
    for round in starts.chunks(per_round) {
        let ops: Vec<ReadOp> = round
            .iter()
            .enumerate()
            .map(|(k, &page)| ReadOp {
                file,
                offset: FeatureLayout::page_offset(page),
                len,
                dst: k * len,
                allow_eof: false,
            })
            .collect();
        reader.read_batch(&ops, &mut buf)?;
    }
    Ok(SizeRow {
        pages,
        reads,
        secs: started.elapsed().as_secs_f64(),
    })
}

/// Largest read the fit uses: past ~8 pages a read is bound by the
/// device's bandwidth, not by a cost per read plus a cost per page.
const FIT_MAX_PAGES: u64 = 8;

/// Least-squares fit of seconds per read = `a + b * pages` over the sizes
/// of at most [`FIT_MAX_PAGES`]: (a, b) in µs.
fn fit_read_cost(rows: &[SizeRow]) -> Option<(f64, f64)> {
    let pts: Vec<(f64, f64)> = rows
        .iter()
        .filter(|r| r.pages <= FIT_MAX_PAGES)
        .map(|r| (r.pages as f64, 1e6 * r.secs / r.reads as f64))
        .collect();
    if pts.len() < 2 {
        return None;
    }
    let n = pts.len() as f64;
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx == 0.0 {
        return None;
    }
    let b = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum::<f64>() / sxx;
    Some((my - b * mx, b))
}

/// The read-cost model of a sweep: the fit's cost per read and per page,
/// and a page's cost in the largest reads measured (at least 16 pages;
/// the fit's per-page cost without such reads), rounded to 0.01 µs.
fn read_cost_model(rows: &[SizeRow]) -> Option<ginex::internals::store::read_cost::ReadCostModel> {
    let (a, b) = fit_read_cost(rows)?;
    let sequential = rows
        .iter()
        .filter(|r| r.pages >= 16)
        .max_by_key(|r| r.pages)
        .map_or(b, |r| 1e6 * r.secs / r.reads as f64 / r.pages as f64);
    let round = |x: f64| (x.max(0.0) * 100.0).round() / 100.0;
    Some(ginex::internals::store::read_cost::ReadCostModel {
        us_per_read: round(a),
        us_per_page: round(b),
        us_per_page_sequential: round(sequential.max(b)),
    })
}

struct Row {
    reader: String,
    param: String,
    rows: u64,
    pages: u64,
    bytes: u64,
    secs: f64,
}

fn random_batch(n: u64, len: usize, seed: u64) -> Vec<u64> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        })
        .collect()
}

/// Ginex's miss path: one synchronous direct `pread` of a row's page(s) per
/// requested row, on one thread, no deduplication (checksums still checked).
fn ginex_style(store: &Store, batches: &[Vec<u64>]) -> Result<Row> {
    let path = store.path_of(FileKind::FeaturePages);
    let f = open_for_reads(&path, true)?;
    let layout = store.feature_sections();
    let mut buf = ginex::internals::io::aligned::AlignedBuf::zeroed(
        layout.max_pages_per_row() as usize * PAGE_SIZE,
    )?;
    let started = Instant::now();
    let (mut rows, mut bytes) = (0u64, 0u64);
    for ids in batches {
        for &id in ids {
            let loc = layout.locate(id);
            let len = loc.pages as usize * PAGE_SIZE;
            buf.ensure_len(len)?;
            let off = FeatureLayout::page_offset(loc.page);
            f.file
                .read_exact_at(buf.as_mut_slice(), off)
                .map_err(|e| Error::ReadFailed {
                    path: path.clone(),
                    offset: off,
                    len: len as u64,
                    source: e,
                })?;
            let crc = ginex::internals::format::crc32(&buf.as_slice()[..PAGE_SIZE]);
            if store.page_crcs().get(loc.page as usize) != Some(&crc) {
                return Err(Error::corrupt(&path, off, "page checksum mismatch"));
            }
            rows += 1;
            bytes += len as u64;
        }
    }
    Ok(Row {
        reader: "ginex-pread-per-row".into(),
        param: "1 thread".into(),
        rows,
        pages: rows,
        bytes,
        secs: started.elapsed().as_secs_f64(),
    })
}

fn batched(store: &Store, batches: &[Vec<u64>], backend: Backend, depth: usize) -> Result<Row> {
    let mut g = Gatherer::new(
        store,
        &GatherOptions {
            backend,
            queue_depth: depth,
            ..GatherOptions::default()
        },
    )?;
    let rb = store.layout().row_bytes();
    let mut out = vec![0u8; batches.first().map_or(0, Vec::len) * rb];
    let started = Instant::now();
    for ids in batches {
        out.resize(ids.len() * rb, 0);
        g.gather(store, ids, &mut out)?;
    }
    let secs = started.elapsed().as_secs_f64();
    let st = g.stats();
    let (reader, param) = match backend {
        Backend::Pread => ("pread".to_string(), format!("{depth} threads")),
        _ => (g.backend_name().to_string(), format!("qd {depth}")),
    };
    Ok(Row {
        reader,
        param,
        rows: st.rows,
        pages: st.unique_pages,
        bytes: st.bytes_read,
        secs,
    })
}

/// Runs fio's 4 KiB random direct reads at QD 64 on `file`; `None` when fio
/// is not installed.
fn fio_iops(file: &std::path::Path, seconds: u32) -> Option<f64> {
    let out = std::process::Command::new("fio")
        .args([
            "--name=ginex",
            "--rw=randread",
            "--bs=4k",
            "--direct=1",
            "--ioengine=io_uring",
            "--iodepth=64",
        ])
        .arg(format!("--filename={}", file.display()))
        .args([
            format!("--runtime={seconds}"),
            "--time_based".into(),
            "--output-format=json".into(),
            "--readonly".into(),
        ])
        .output()
        .ok()?;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    v["jobs"][0]["read"]["iops"].as_f64()
}

/// `ginex bench io`: plan (the store and its batches), run every reader
/// configuration, report (a table, or `--json` lines).
pub fn run_io_bench(args: &IoBenchArgs, out: &mut dyn Write) -> Result<()> {
    let store = Store::open(&args.store)?;
    let batches: Vec<Vec<u64>> = (0..args.batches)
        .map(|b| random_batch(store.num_nodes(), args.batch, args.seed + b as u64))
        .collect();
    let run = IoRun::measure(args, &store, &batches)?;
    if args.json {
        run.report_json(out)
    } else {
        run.report_table(args, &store, out)
    }
}

/// What `ginex bench io` measured.
struct IoRun {
    /// Ginex-style pread first, then pread and io_uring by threads/depth.
    rows: Vec<Row>,
    /// The read-size sweep.
    sizes: Vec<SizeRow>,
    /// The sweep's fit: µs per read, µs per page.
    fit: Option<(f64, f64)>,
    /// fio's IOPS, when it ran.
    fio: Option<f64>,
}

impl IoRun {
    /// Every reader configuration and read size, each after dropping the
    /// pages from the page cache; then fio.
    fn measure(args: &IoBenchArgs, store: &Store, batches: &[Vec<u64>]) -> Result<Self> {
        let pages_path = store.path_of(FileKind::FeaturePages);
        let mut rows = Vec::new();
        drop_from_page_cache(&pages_path)?;
        rows.push(ginex_style(store, batches)?);
        for &t in &args.threads {
            drop_from_page_cache(&pages_path)?;
            rows.push(batched(store, batches, Backend::Pread, t)?);
        }
        for &qd in &args.qd {
            drop_from_page_cache(&pages_path)?;
            rows.push(batched(store, batches, Backend::Uring, qd)?);
        }
        let mut sizes = Vec::new();
        for &pages in &args.read_pages {
            drop_from_page_cache(&pages_path)?;
            sizes.push(read_size(store, pages.max(1), args.sweep_reads, args.seed)?);
        }
        let fit = fit_read_cost(&sizes);
        let fio = if args.fio_seconds > 0 {
            fio_iops(&pages_path, args.fio_seconds)
        } else {
            None
        };
        Ok(IoRun {
            rows,
            sizes,
            fit,
            fio,
        })
    }

    /// One JSON object per reader, fio, read size and the fit.
    fn report_json(&self, out: &mut dyn Write) -> Result<()> {
        let w = |e: std::io::Error| Error::io("write", "<stdout>", e);
        let (rows, sizes) = (&self.rows, &self.sizes);
        for r in rows {
            let v = sorted_json(&ReaderLine {
                reader: &r.reader,
                param: &r.param,
                rows: r.rows,
                page_reads: r.pages,
                page_reads_per_s: r.pages as f64 / r.secs,
                rows_per_s: r.rows as f64 / r.secs,
                mb_per_s: r.bytes as f64 / 1e6 / r.secs,
                seconds: r.secs,
            });
            writeln!(out, "{v}").map_err(w)?;
        }
        let v = sorted_json(&FioLine {
            reader: "fio",
            qd: 64,
            page_reads_per_s: self.fio,
        });
        writeln!(out, "{v}").map_err(w)?;
        for r in sizes {
            let v = sorted_json(&SizeLine {
                reader: "io_uring",
                qd: 64,
                read_pages: r.pages,
                reads: r.reads,
                reads_per_s: r.reads as f64 / r.secs,
                mb_per_s: (r.reads as u64 * r.pages * PAGE_SIZE as u64) as f64 / 1e6 / r.secs,
            });
            writeln!(out, "{v}").map_err(w)?;
        }
        if let Some((a, b)) = self.fit {
            let v = sorted_json(&FitLine {
                fit_us_per_read: a,
                fit_us_per_page: b,
                read_cost: read_cost_model(sizes).map(|m| m.to_arg()),
            });
            writeln!(out, "{v}").map_err(w)?;
        }
        Ok(())
    }

    /// The readers' table, fio's line and the read-size sweep.
    fn report_table(&self, args: &IoBenchArgs, store: &Store, out: &mut dyn Write) -> Result<()> {
        let w = |e: std::io::Error| Error::io("write", "<stdout>", e);
        let (rows, fio) = (&self.rows, self.fio);
        let uring64 = rows
            .iter()
            .find(|r| r.reader == "io_uring" && r.param == "qd 64")
            .map(|r| r.pages as f64 / r.secs);
        let ginex = rows.first().map(|r| r.rows as f64 / r.secs).unwrap_or(0.0);
        writeln!(out, "bench io: {}", args.store.display()).map_err(w)?;
        writeln!(out, "  machine: {}", machine_description()).map_err(w)?;
        writeln!(
            out,
            "  dataset: {} nodes, dim {} {} ({} bytes/row), features {:.1} MB; {} batches of {} uniform random ids, seed {}; direct I/O, page cache dropped before each configuration",
            store.num_nodes(),
            store.feature_dim(),
            store.dtype().name(),
            store.layout().row_bytes(),
            store.manifest().file(FileKind::FeaturePages).map_or(0, |f| f.len) as f64 / 1e6,
            args.batches,
            args.batch,
            args.seed
        )
        .map_err(w)?;
        writeln!(
            out,
            "  {:<22} {:<11} {:>12} {:>12} {:>14} {:>9} {:>9}",
            "reader", "param", "rows/s", "page reads", "page reads/s", "MB/s", "vs ginex"
        )
        .map_err(w)?;
        for r in rows {
            writeln!(
                out,
                "  {:<22} {:<11} {:>12.0} {:>12} {:>14.0} {:>9.1} {:>8.2}x",
                r.reader,
                r.param,
                r.rows as f64 / r.secs,
                r.pages,
                r.pages as f64 / r.secs,
                r.bytes as f64 / 1e6 / r.secs,
                (r.rows as f64 / r.secs) / ginex.max(1e-9)
            )
            .map_err(w)?;
        }
        if let Some(r) = rows.get(1) {
            writeln!(
                out,
                "  dedup: {} rows requested, {} pages read ({:.1}% saved)",
                r.rows,
                r.pages,
                100.0 * (1.0 - r.pages as f64 / r.rows.max(1) as f64)
            )
            .map_err(w)?;
        }
        match (fio, uring64) {
            (Some(f), Some(u)) => writeln!(out, "  fio randread 4k qd64 io_uring direct: {f:.0} IOPS; io_uring reader at qd 64: {u:.0} page reads/s = {:.1}% of fio", 100.0 * u / f).map_err(w)?,
            (Some(f), None) => writeln!(out, "  fio randread 4k qd64: {f:.0} IOPS (no qd 64 row to compare)").map_err(w)?,
            (None, _) => writeln!(out, "  fio: not run (install fio, or --fio-seconds > 0)").map_err(w)?,
        }
        self.report_sizes(args, out)
    }

    /// The read-size sweep's table, its fit and the read-cost model.
    fn report_sizes(&self, args: &IoBenchArgs, out: &mut dyn Write) -> Result<()> {
        let w = |e: std::io::Error| Error::io("write", "<stdout>", e);
        let sizes = &self.sizes;
        if sizes.is_empty() {
            return Ok(());
        }
        writeln!(
            out,
            "  read sizes (io_uring, qd 64, {} random page-aligned reads each):",
            args.sweep_reads
        )
        .map_err(w)?;
        writeln!(
            out,
            "  {:>6} {:>10} {:>12} {:>9} {:>12}",
            "pages", "KiB", "reads/s", "MB/s", "µs/read"
        )
        .map_err(w)?;
        for r in sizes {
            let bytes = r.reads as u64 * r.pages * PAGE_SIZE as u64;
            writeln!(
                out,
                "  {:>6} {:>10} {:>12.0} {:>9.1} {:>12.2}",
                r.pages,
                r.pages * 4,
                r.reads as f64 / r.secs,
                bytes as f64 / 1e6 / r.secs,
                1e6 * r.secs / r.reads as f64
            )
            .map_err(w)?;
        }
        if let Some((a, b)) = self.fit {
            writeln!(
                out,
                "  fit over reads of at most {FIT_MAX_PAGES} pages: {a:.2} µs per read + {b:.2} µs per page; reading a gap of g unneeded pages to save a read pays while g < {:.1}",
                a / b.max(1e-9)
            )
            .map_err(w)?;
        }
        if let Some(m) = read_cost_model(sizes) {
            writeln!(
                out,
                "  read-cost model of this device (pass it to epoch/train/bench): --read-cost {m}"
            )
            .map_err(w)?;
        }
        Ok(())
    }
}

/// A `--json` line of `ginex bench io`: one reader configuration.
#[derive(Serialize)]
struct ReaderLine<'a> {
    reader: &'a str,
    param: &'a str,
    rows: u64,
    page_reads: u64,
    page_reads_per_s: f64,
    rows_per_s: f64,
    mb_per_s: f64,
    seconds: f64,
}

/// The `--json` line of fio's page reads (null when not run).
#[derive(Serialize)]
struct FioLine {
    reader: &'static str,
    qd: u32,
    page_reads_per_s: Option<f64>,
}

/// A `--json` line of the read-size sweep.
#[derive(Serialize)]
struct SizeLine {
    reader: &'static str,
    qd: u32,
    read_pages: u64,
    reads: usize,
    reads_per_s: f64,
    mb_per_s: f64,
}

/// The `--json` line of the read-cost fit.
#[derive(Serialize)]
struct FitLine {
    fit_us_per_read: f64,
    fit_us_per_page: f64,
    read_cost: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fit recovers cost per read and per page from reads of up to 8
    /// pages and ignores the bandwidth-bound larger ones.
    #[test]
    fn the_read_cost_fit_skips_bandwidth_bound_sizes() {
        let row = |pages: u64, us: f64| SizeRow {
            pages,
            reads: 1000,
            secs: us * 1000.0 / 1e6,
        };
        let rows = [
            row(1, 12.0),
            row(2, 14.0),
            row(4, 18.0),
            row(8, 26.0),
            row(32, 500.0),
        ];
        let (a, b) = fit_read_cost(&rows).unwrap();
        assert!((a - 10.0).abs() < 1e-6 && (b - 2.0).abs() < 1e-6, "{a} {b}");
        assert!(fit_read_cost(&rows[3..]).is_none());
        // The model: the fit, and a page of the largest read (500/32 µs).
        let m = read_cost_model(&rows).unwrap();
        assert_eq!(
            (m.us_per_read, m.us_per_page, m.us_per_page_sequential),
            (10.0, 2.0, 15.63)
        );
        // Without large reads, a page of a large read costs the fit's.
        let m = read_cost_model(&rows[..4]).unwrap();
        assert_eq!(m.us_per_page_sequential, 2.0);
    }
}
