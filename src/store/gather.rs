//! The miss path: page-deduplicated feature gather and batched neighbor-list
//! reads through a [`PageReader`].
//!
//! Ginex reads each missing row with its own synchronous `pread`. Here a
//! batch's rows are mapped to pages, the pages deduplicated (rows sharing a
//! page cost one read), all reads issued as one batch at a deep queue depth,
//! every page checked against its CRC, and the rows copied out in request
//! order.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::format::header::FileKind;
use crate::format::manifest::store_file_name;
use crate::format::PAGE_SIZE;
use crate::io::aligned::AlignedBuf;
use crate::io::fault::FaultPlan;
use crate::io::page_reader::{make_reader, Backend, PageReader, ReadOp};
use crate::store::Store;

/// Counters of a gatherer since it was created.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GatherStats {
    /// Rows requested.
    pub rows: u64,
    /// Distinct pages (runs of pages for rows larger than a page) read.
    pub unique_pages: u64,
    /// Bytes read from the files.
    pub bytes_read: u64,
    /// Neighbor lists requested.
    pub lists: u64,
    /// CSC segments read for them.
    pub segments: u64,
}

/// How to read.
#[derive(Debug, Clone)]
pub struct GatherOptions {
    /// Which reader.
    pub backend: Backend,
    /// Reads in flight (io_uring) or threads (pread).
    pub queue_depth: usize,
    /// Open files with `O_DIRECT` (falls back to buffered where refused).
    pub direct: bool,
    /// Faults to inject (tests).
    pub faults: Arc<FaultPlan>,
}

impl Default for GatherOptions {
    fn default() -> Self {
        GatherOptions {
            backend: Backend::Auto,
            queue_depth: 64,
            direct: true,
            faults: Arc::new(FaultPlan::default()),
        }
    }
}

/// Batched reads of one store's feature rows and neighbor lists.
pub struct Gatherer {
    reader: Box<dyn PageReader>,
    features: usize,
    indices: usize,
    buf: AlignedBuf,
    stats: GatherStats,
    pages: Vec<(u64, u64)>,
    ops: Vec<ReadOp>,
}

impl Gatherer {
    /// A gatherer over `store`'s feature and indices files.
    pub fn new(store: &Store, options: &GatherOptions) -> Result<Self> {
        let mut reader = make_reader(
            options.backend,
            options.queue_depth,
            options.direct,
            options.faults.clone(),
        )?;
        let features =
            reader.add_file(&store.dir().join(store_file_name(FileKind::FeaturePages)))?;
        let indices = reader.add_file(&store.dir().join(store_file_name(FileKind::Indices)))?;
        Ok(Gatherer {
            reader,
            features,
            indices,
            buf: AlignedBuf::zeroed(PAGE_SIZE)?,
            stats: GatherStats::default(),
            pages: Vec::new(),
            ops: Vec::new(),
        })
    }

    /// The reader's name (`io_uring` or `pread`).
    pub fn backend_name(&self) -> &'static str {
        self.reader.name()
    }

    /// Counters so far.
    pub fn stats(&self) -> GatherStats {
        self.stats
    }

    /// Fills `out` (`ids.len() * row_bytes`) with the rows of `ids`, in
    /// order, as little-endian bytes of the store dtype.
    pub fn gather(&mut self, store: &Store, ids: &[u64], out: &mut [u8]) -> Result<()> {
        let layout = store.layout();
        let rb = layout.row_bytes();
        if out.len() != ids.len() * rb {
            return Err(Error::OutOfRange(format!(
                "output holds {} bytes, {} rows need {}",
                out.len(),
                ids.len(),
                ids.len() * rb
            )));
        }
        let n = store.num_nodes();
        // Unique page runs, sorted: (first page, pages).
        self.pages.clear();
        for &id in ids {
            if id >= n {
                return Err(Error::OutOfRange(format!(
                    "node {id} is not below the node count {n}"
                )));
            }
            let loc = layout.locate(id);
            self.pages.push((loc.page, loc.pages));
        }
        self.pages.sort_unstable();
        self.pages.dedup();
        let per_run = layout.pages_per_row() as usize * PAGE_SIZE;
        self.buf.ensure_len(self.pages.len() * per_run)?;
        self.ops.clear();
        self.ops.extend(
            self.pages
                .iter()
                .enumerate()
                .map(|(k, &(page, pages))| ReadOp {
                    file: self.features,
                    offset: (PAGE_SIZE as u64) * (page + 1),
                    len: pages as usize * PAGE_SIZE,
                    dst: k * per_run,
                    allow_eof: false,
                }),
        );
        self.reader.read_batch(&self.ops, &mut self.buf)?;
        let crcs = store.page_crcs();
        let path = store.dir().join(store_file_name(FileKind::FeaturePages));
        let bytes = self.buf.as_slice();
        for (k, &(page, pages)) in self.pages.iter().enumerate() {
            for i in 0..pages {
                let p = page + i;
                let at = k * per_run + i as usize * PAGE_SIZE;
                let got = crc32fast::hash(&bytes[at..at + PAGE_SIZE]);
                let expected = crcs.get(p as usize).copied().unwrap_or(!got);
                if got != expected {
                    let node = ids
                        .iter()
                        .copied()
                        .find(|&id| layout.locate(id).page == page)
                        .unwrap_or(0);
                    return Err(Error::ChecksumMismatch {
                        path,
                        region: format!("feature page {p} (holding node {node})"),
                        offset: PAGE_SIZE as u64 * (p + 1),
                        expected,
                        got,
                    });
                }
            }
        }
        for (&id, dst) in ids.iter().zip(out.chunks_exact_mut(rb)) {
            let loc = layout.locate(id);
            let k = self
                .pages
                .binary_search(&(loc.page, loc.pages))
                .unwrap_or(0);
            let at = k * per_run + loc.offset_in_page;
            dst.copy_from_slice(&bytes[at..at + rb]);
        }
        self.stats.rows += ids.len() as u64;
        self.stats.unique_pages += self.pages.len() as u64;
        self.stats.bytes_read += (self.ops.iter().map(|o| o.len).sum::<usize>()) as u64;
        Ok(())
    }

    /// Like [`gather`](Self::gather), converting to `f32`.
    pub fn gather_f32(&mut self, store: &Store, ids: &[u64], out: &mut [f32]) -> Result<()> {
        let mut raw = vec![0u8; ids.len() * store.layout().row_bytes()];
        if out.len() != ids.len() * store.feature_dim() as usize {
            return Err(Error::OutOfRange(format!(
                "output holds {} values, {} rows need {}",
                out.len(),
                ids.len(),
                ids.len() * store.feature_dim() as usize
            )));
        }
        self.gather(store, ids, &mut raw)?;
        store.dtype().decode_to_f32(&raw, out);
        Ok(())
    }

    /// The in-neighbor lists of `nodes` (in order), reading every CSC
    /// segment they touch once, in one batch, each checked against its CRC.
    pub fn read_lists(&mut self, store: &Store, nodes: &[u64]) -> Result<Vec<Vec<u64>>> {
        let segments = store.segments();
        let n = store.num_nodes();
        let mut wanted: Vec<usize> = Vec::with_capacity(nodes.len());
        for &v in nodes {
            if v >= n {
                return Err(Error::OutOfRange(format!(
                    "node {v} is not below the node count {n}"
                )));
            }
            wanted.push(segments.partition_point(|s| s.end_node() <= v));
        }
        let mut unique = wanted.clone();
        unique.sort_unstable();
        unique.dedup();
        let width = store.index_width().bytes() as u64;
        // Aligned byte range of each segment in the indices file.
        let mut spans = Vec::with_capacity(unique.len());
        let mut total = 0usize;
        for &s in &unique {
            let seg = &segments[s];
            let start = PAGE_SIZE as u64 + seg.edge_start * width;
            let end = start + seg.edge_count * width;
            let a = start / PAGE_SIZE as u64 * PAGE_SIZE as u64;
            let b = end.div_ceil(PAGE_SIZE as u64) * PAGE_SIZE as u64;
            spans.push((a, (b - a) as usize, total));
            total += (b - a) as usize;
        }
        self.buf.ensure_len(total.max(1))?;
        self.ops.clear();
        self.ops.extend(spans.iter().map(|&(a, len, dst)| ReadOp {
            file: self.indices,
            offset: a,
            len,
            dst,
            allow_eof: true,
        }));
        self.reader.read_batch(&self.ops, &mut self.buf)?;
        let path = store.dir().join(store_file_name(FileKind::Indices));
        let bytes = self.buf.as_slice();
        for (k, &s) in unique.iter().enumerate() {
            let seg = &segments[s];
            let start = PAGE_SIZE as u64 + seg.edge_start * width;
            let (a, _, dst) = spans[k];
            let at = dst + (start - a) as usize;
            let got = crc32fast::hash(&bytes[at..at + (seg.edge_count * width) as usize]);
            if got != seg.crc {
                return Err(Error::ChecksumMismatch {
                    path,
                    region: format!("segment {s}"),
                    offset: start,
                    expected: seg.crc,
                    got,
                });
            }
        }
        let indptr = store.indptr();
        let mut lists = Vec::with_capacity(nodes.len());
        for (&v, &s) in nodes.iter().zip(&wanted) {
            let k = unique.binary_search(&s).unwrap_or(0);
            let seg = &segments[s];
            let (a, _, dst) = spans[k];
            let seg_at = dst + (PAGE_SIZE as u64 + seg.edge_start * width - a) as usize;
            let lo = seg_at + ((indptr[v as usize] - seg.edge_start) * width) as usize;
            let hi = seg_at + ((indptr[v as usize + 1] - seg.edge_start) * width) as usize;
            let mut list = Vec::with_capacity((hi - lo) / width as usize);
            store.index_width().decode(&bytes[lo..hi], &mut list);
            lists.push(list);
        }
        self.stats.lists += nodes.len() as u64;
        self.stats.segments += unique.len() as u64;
        self.stats.bytes_read += total as u64;
        Ok(lists)
    }
}
