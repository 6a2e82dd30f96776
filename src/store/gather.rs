//! The miss path: page-deduplicated feature gather and batched neighbor-list
//! reads through a [`PageReader`].
//!
//! Ginex reads each missing row with its own synchronous `pread`. Here a
//! batch's rows are mapped to pages, the pages deduplicated (rows sharing a
//! page cost one read), pages a few pages apart merged into one read (the
//! pages between them read and dropped: see [`GatherOptions::merge_gap_pages`]),
//! all reads issued as one batch at a deep queue depth, every needed page
//! checked against its CRC, and the rows copied out in request order.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::format::header::FileKind;
use crate::format::pages::FeatureLayout;
use crate::format::PAGE_SIZE;
use crate::io::aligned::AlignedBuf;
use crate::io::fault::FaultPlan;
use crate::io::page_reader::{PageReader, ReadOp};
use crate::io::{make_reader, Backend};
use crate::store::read_cost::{ReadCostModel, SequentialReads, SCAN_READ_PAGES};
use crate::store::row_targets::RowTargets;
use crate::store::segments::check_segment;
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
    /// Reads issued for them (segments sharing a page are read together).
    pub list_reads: u64,
    /// Of `list_reads`, those issued while a feature read of the same
    /// [`ReadActivity`] was in flight (their reads share the device).
    pub list_reads_beside_features: u64,
    /// The bytes of those.
    pub list_bytes_beside_features: u64,
    /// Of `read_ns`, the feature read rounds during which a list read of
    /// the same [`ReadActivity`] was in flight at some point.
    pub read_ns_beside_lists: u64,
    /// Of `unique_pages`, those read in such rounds.
    pub pages_beside_lists: u64,
    /// Of `read_ns`, the rounds during which an init reader's round of
    /// the same [`ReadActivity`] was in flight at some point (never
    /// counted by the init reader itself).
    pub read_ns_beside_init: u64,
    /// Of `unique_pages`, those read in such rounds.
    pub pages_beside_init: u64,
    /// Feature reads issued: page runs merged across small gaps count once.
    pub feature_reads: u64,
    /// Gathers read as one sequential pass over their pages' span
    /// ([`SequentialReads`]), of those that needed more than one read.
    pub sequential_passes: u64,
    /// The cost model's prediction for the feature reads issued, in
    /// nanoseconds of device time ([`ReadCostModel`]).
    pub predicted_read_ns: u64,
    /// Measured wall time of the feature reads, in nanoseconds.
    pub read_ns: u64,
    /// When the first feature read was issued.
    pub first_read: Option<std::time::Instant>,
}

/// Largest read that merging neighbouring segments may produce.
const MAX_MERGED_READ: u64 = 1 << 20;

/// Default of [`GatherOptions::merge_gap_pages`]. `ginex bench io` fits
/// random reads of 1–8 consecutive pages at queue depth 64 to a cost per
/// read plus a cost per page; on this project's machine reading up to 3
/// unneeded pages costs less than the read it saves (the fit:
/// `docs/lab/performance-journal.md`, "Device read-size sweep").
pub const DEFAULT_MERGE_GAP_PAGES: u64 = 3;

/// Largest feature read that merging page runs may produce (32 pages): past
/// it a read is bandwidth-bound and merging saves nothing.
const MAX_MERGED_FEATURE_PAGES: u64 = 32;

/// One feature read: the page runs `first_run..first_run + runs` of a
/// gather, and the pages `page..page + pages` that cover them.
#[derive(Debug, Clone, Copy)]
struct Extent {
    first_run: usize,
    runs: usize,
    page: u64,
    pages: u64,
}

/// Groups sorted, distinct page runs `(first page, pages)` into reads:
/// a run joins the read before it when at most `max_gap` pages lie between
/// them and the read stays within `max_pages` (a run longer than that is
/// a read of its own). `None`: one read per run.
fn merge_runs(runs: &[(u64, u64)], max_gap: Option<u64>, max_pages: u64, out: &mut Vec<Extent>) {
    out.clear();
    for (k, &(page, pages)) in runs.iter().enumerate() {
        if let (Some(gap), Some(last)) = (max_gap, out.last_mut()) {
            let end = last.page + last.pages;
            if page >= end && page - end <= gap && page + pages - last.page <= max_pages {
                last.pages = page + pages - last.page;
                last.runs += 1;
                continue;
            }
        }
        out.push(Extent {
            first_run: k,
            runs: 1,
            page,
            pages,
        });
    }
}

/// The first of the pages `bytes` holds (the first being `page`) whose CRC
/// is not `crcs`' entry for it: `(page, expected, got)`.
fn first_bad_page(crcs: &[u32], page: u64, bytes: &[u8]) -> Option<(u64, u32, u32)> {
    bytes
        .chunks_exact(PAGE_SIZE)
        .zip(page..)
        .find_map(|(chunk, p)| {
            let got = crate::format::crc32(chunk);
            let expected = crcs.get(p as usize).copied().unwrap_or(!got);
            (got != expected).then_some((p, expected, got))
        })
}

/// Feature reads in flight among the gatherers that share it (one epoch's
/// executor, staged-init reader and list reader), so the list reads can
/// count how many of theirs went to the device beside a feature read.
#[derive(Debug, Default)]
pub struct ReadActivity {
    feature_reads: AtomicUsize,
    list_reads: AtomicUsize,
    /// List read batches started so far.
    list_started: AtomicUsize,
    /// Read rounds of an init reader ([`Gatherer::as_init_reader`]) in
    /// flight, and started so far.
    init_reads: AtomicUsize,
    init_started: AtomicUsize,
}

impl ReadActivity {
    /// A mark of the list reads now: whether one is in flight, and how
    /// many have started.
    fn list_mark(&self) -> (bool, usize) {
        (
            self.list_reads.load(Ordering::Relaxed) > 0,
            self.list_started.load(Ordering::Relaxed),
        )
    }

    /// Whether a list read was in flight at `mark` or started since.
    fn lists_since(&self, mark: (bool, usize)) -> bool {
        mark.0 || self.list_started.load(Ordering::Relaxed) != mark.1
    }

    /// [`list_mark`](Self::list_mark) of the init reader's rounds.
    fn init_mark(&self) -> (bool, usize) {
        (
            self.init_reads.load(Ordering::Relaxed) > 0,
            self.init_started.load(Ordering::Relaxed),
        )
    }

    /// Whether an init reader's round was in flight at `mark` or started
    /// since.
    fn init_since(&self, mark: (bool, usize)) -> bool {
        mark.0 || self.init_started.load(Ordering::Relaxed) != mark.1
    }

    fn enter_init(&self) -> InitInFlight<'_> {
        self.init_started.fetch_add(1, Ordering::Relaxed);
        self.init_reads.fetch_add(1, Ordering::Relaxed);
        InitInFlight(self)
    }

    fn enter_lists(&self) -> ListsInFlight<'_> {
        self.list_started.fetch_add(1, Ordering::Relaxed);
        self.list_reads.fetch_add(1, Ordering::Relaxed);
        ListsInFlight(self)
    }

    /// Whether a feature read is in flight now.
    pub fn feature_read_in_flight(&self) -> bool {
        self.feature_reads.load(Ordering::Relaxed) > 0
    }

    fn enter(&self) -> InFlight<'_> {
        self.feature_reads.fetch_add(1, Ordering::Relaxed);
        InFlight(self)
    }
}

/// One feature read batch in flight; ends when dropped.
struct InFlight<'a>(&'a ReadActivity);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.feature_reads.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One list read batch in flight; ends when dropped.
struct ListsInFlight<'a>(&'a ReadActivity);

impl Drop for ListsInFlight<'_> {
    fn drop(&mut self) {
        self.0.list_reads.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One init reader's round in flight; ends when dropped.
struct InitInFlight<'a>(&'a ReadActivity);

impl Drop for InitInFlight<'_> {
    fn drop(&mut self) {
        self.0.init_reads.fetch_sub(1, Ordering::Relaxed);
    }
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
    /// Feature pages needed by a gather that lie at most this many pages
    /// apart are read as one (the pages between them read and dropped, up
    /// to 128 KiB a read); `None` reads each page (run) on its own. The
    /// bytes read grow, the reads issued shrink; only dense gathers, such
    /// as a superbatch's init, have such gaps. CSC segments read for
    /// neighbour lists ([`Gatherer::visit_lists`]) are merged across the
    /// same gaps (up to 1 MiB a read): dense where a lockstep round asks
    /// for its lists in node order.
    pub merge_gap_pages: Option<u64>,
    /// Whether a gather may read its pages' whole span in one sequential
    /// pass instead (see [`crate::store::read_cost`]).
    pub sequential_reads: SequentialReads,
    /// The device's read cost, which prices both plans.
    pub read_cost: ReadCostModel,
    /// Shared with the other gatherers of a run: feature reads mark it,
    /// list reads count what they issue beside them.
    pub activity: Option<Arc<ReadActivity>>,
}

impl Default for GatherOptions {
    fn default() -> Self {
        GatherOptions {
            backend: Backend::Auto,
            queue_depth: 64,
            direct: true,
            faults: crate::io::fault::process_faults(),
            merge_gap_pages: Some(DEFAULT_MERGE_GAP_PAGES),
            sequential_reads: SequentialReads::default(),
            read_cost: ReadCostModel::default(),
            activity: None,
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
    /// Raw rows of `gather_f32`, kept so the hot path does not allocate.
    raw: Vec<u8>,
    /// (page run, position in ids) of the current gather.
    order: Vec<(usize, usize)>,
    /// The reads covering `pages`.
    extents: Vec<Extent>,
    /// The reads of a sequential pass over `pages`, when that is priced.
    scan_extents: Vec<Extent>,
    /// Where each page run of the current round starts in `buf`.
    run_at: Vec<usize>,
    merge_gap_pages: Option<u64>,
    sequential_reads: SequentialReads,
    read_cost: ReadCostModel,
    chunk_bytes: usize,
    activity: Option<Arc<ReadActivity>>,
    /// Whether this gatherer is an init reader beside the executor.
    init_reader: bool,
}

/// Default cap of a gatherer's read buffer: 32 MiB (8192 page reads per
/// round), so a 100k-row batch does not pin hundreds of MiB while the queue
/// stays full for all but the last few reads of each round.
pub const DEFAULT_CHUNK_BYTES: usize = 32 << 20;

impl Gatherer {
    /// A gatherer over `store`'s feature and indices files.
    pub fn new(store: &Store, options: &GatherOptions) -> Result<Self> {
        store.require_rows_are_ids("gathering feature rows")?;
        let mut reader = make_reader(
            options.backend,
            options.queue_depth,
            options.direct,
            options.faults.clone(),
        )?;
        let features = reader.add_file(&store.path_of(FileKind::FeaturePages))?;
        let indices = reader.add_file(&store.path_of(FileKind::Indices))?;
        Ok(Gatherer {
            reader,
            features,
            indices,
            buf: AlignedBuf::zeroed(PAGE_SIZE)?,
            stats: GatherStats::default(),
            pages: Vec::new(),
            ops: Vec::new(),
            raw: Vec::new(),
            order: Vec::new(),
            extents: Vec::new(),
            scan_extents: Vec::new(),
            run_at: Vec::new(),
            merge_gap_pages: options.merge_gap_pages,
            sequential_reads: options.sequential_reads,
            read_cost: options.read_cost,
            chunk_bytes: DEFAULT_CHUNK_BYTES,
            activity: options.activity.clone(),
            init_reader: false,
        })
    }

    /// The reader's name (`io_uring` or `pread`).
    pub fn backend_name(&self) -> &'static str {
        self.reader.name()
    }

    /// Whether the feature file is read with `O_DIRECT` (false where the
    /// filesystem refused it, or when not asked for).
    pub fn direct_io(&self) -> bool {
        self.reader
            .files()
            .get(self.features)
            .is_some_and(|f| f.direct)
    }

    /// Marks this gatherer as an init reader running beside the executor
    /// (its rounds are what [`GatherStats::read_ns_beside_init`] counts).
    pub fn as_init_reader(mut self) -> Self {
        self.init_reader = true;
        self
    }

    /// Counters so far.
    pub fn stats(&self) -> GatherStats {
        self.stats
    }

    /// Bytes of the aligned read buffer now (it grows to the largest
    /// round read, never past the cap but for a single row or list that
    /// needs more).
    pub fn read_buffer_bytes(&self) -> usize {
        self.buf.capacity()
    }

    /// Caps the aligned read buffer at about `bytes` (at least one row's
    /// pages): a batch whose unique pages need more is read in several
    /// rounds, each a full batch at the reader's queue depth. The default
    /// is [`DEFAULT_CHUNK_BYTES`].
    pub fn with_chunk_bytes(mut self, bytes: usize) -> Self {
        self.chunk_bytes = bytes;
        self
    }

    /// Fills `out` (`ids.len() * row_bytes`) with the rows of `ids`, in
    /// order, as little-endian bytes of the store dtype.
    ///
    /// Each distinct page (or run of pages, for rows larger than a page) is
    /// read once however many of its rows are asked for, checked against
    /// its CRC, and the rows copied out. Duplicate ids are fine. On error
    /// `out` holds an unspecified mix of rows.
    pub fn gather(&mut self, store: &Store, ids: &[u64], out: &mut [u8]) -> Result<()> {
        let rb = store.layout().row_bytes();
        self.gather_to(store, ids, &mut RowTargets::in_order(out, rb))
    }

    /// [`gather`](Self::gather) into `to`: row `k` of `ids` to
    /// `to.row_mut(k)`, copied from the page it was read on (a cache's
    /// misses straight into their places in the batch).
    pub fn gather_to(&mut self, store: &Store, ids: &[u64], to: &mut RowTargets<'_>) -> Result<()> {
        let layout = store.feature_sections();
        to.check_rows(ids.len())?;
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
        // (run index, position in ids), sorted by run: the rows each run
        // serves, in the order the runs are read.
        self.order.clear();
        for (i, &id) in ids.iter().enumerate() {
            let loc = layout.locate(id);
            let k = self
                .pages
                .binary_search(&(loc.page, loc.pages))
                .unwrap_or_default();
            self.order.push((k, i));
        }
        self.order.sort_unstable();
        self.plan_reads();
        let crcs = store.page_crcs();
        let mut served = 0usize; // entries of `order` copied out so far
        let mut next = 0usize; // first extent of the round
        while next < self.extents.len() {
            // A round: extents whose reads fit the buffer cap (at least one).
            let mut bytes = 0usize;
            let mut end = next;
            while end < self.extents.len() {
                let len = self.extents[end].pages as usize * PAGE_SIZE;
                if end > next && bytes + len > self.chunk_bytes {
                    break;
                }
                bytes += len;
                end += 1;
            }
            let round = &self.extents[next..end];
            self.buf.ensure_len(bytes)?;
            self.ops.clear();
            self.run_at.clear();
            let mut dst = 0usize;
            for e in round {
                self.ops.push(ReadOp {
                    file: self.features,
                    offset: FeatureLayout::page_offset(e.page),
                    len: e.pages as usize * PAGE_SIZE,
                    dst,
                    allow_eof: false,
                });
                for &(page, _) in &self.pages[e.first_run..e.first_run + e.runs] {
                    self.run_at.push(dst + (page - e.page) as usize * PAGE_SIZE);
                }
                dst += e.pages as usize * PAGE_SIZE;
            }
            let first_run = round[0].first_run;
            let end_run = first_run + self.run_at.len();
            // Each read's needed pages are checked as soon as it completes,
            // while the rest of the round is still in flight; the pages of
            // a gap are dropped unread by anyone.
            let (pages, order) = (&self.pages, &self.order[served..]);
            let check = |k: usize, bytes: &[u8]| -> Result<()> {
                let e = &round[k];
                let runs = &pages[e.first_run..e.first_run + e.runs];
                for (run, &(page, count)) in (e.first_run..).zip(runs) {
                    let at = (page - e.page) as usize * PAGE_SIZE;
                    let run_bytes = &bytes[at..at + count as usize * PAGE_SIZE];
                    let Some((p, expected, got)) = first_bad_page(crcs, page, run_bytes) else {
                        continue;
                    };
                    let pos = order
                        .iter()
                        .find(|&&(r, _)| r == run)
                        .map_or(0, |&(_, pos)| pos);
                    return Error::check_crc(
                        &store.path_of(FileKind::FeaturePages),
                        format_args!("feature page {p} (holding node {})", ids[pos]),
                        FeatureLayout::page_offset(p),
                        expected,
                        got,
                    );
                }
                Ok(())
            };
            let started = std::time::Instant::now();
            self.stats.first_read.get_or_insert(started);
            let activity = self.activity.as_deref();
            let lists = activity.map(ReadActivity::list_mark);
            let init = activity.map(ReadActivity::init_mark);
            let in_flight = activity.map(ReadActivity::enter);
            let init_round = activity
                .filter(|_| self.init_reader)
                .map(ReadActivity::enter_init);
            self.reader
                .read_batch_checked(&self.ops, &mut self.buf, &check)?;
            drop((in_flight, init_round));
            let took = started.elapsed().as_nanos() as u64;
            self.stats.read_ns += took;
            if let (Some(a), Some(mark)) = (activity, lists) {
                if a.lists_since(mark) {
                    self.stats.read_ns_beside_lists += took;
                    self.stats.pages_beside_lists += (end_run - first_run) as u64;
                }
            }
            if let (Some(a), Some(mark)) = (activity, init) {
                if !self.init_reader && a.init_since(mark) {
                    self.stats.read_ns_beside_init += took;
                    self.stats.pages_beside_init += (end_run - first_run) as u64;
                }
            }
            let bytes_in = self.buf.as_slice();
            while let Some(&(k, pos)) = self.order.get(served) {
                if k >= end_run {
                    break;
                }
                let (page, _) = self.pages[k];
                let read = &bytes_in[self.run_at[k - first_run]..];
                layout.copy_row(read, page, ids[pos], to.row_mut(pos))?;
                served += 1;
            }
            self.stats.bytes_read += bytes as u64;
            self.stats.feature_reads += round.len() as u64;
            next = end;
        }
        self.stats.rows += ids.len() as u64;
        self.stats.unique_pages += self.pages.len() as u64;
        Ok(())
    }

    /// Groups this gather's page runs (`pages`) into reads (`extents`):
    /// merged random reads, or a sequential pass over their span where
    /// [`SequentialReads`] takes it, priced by the cost model. Reads stay
    /// within the buffer cap.
    fn plan_reads(&mut self) {
        let cap = (self.chunk_bytes / PAGE_SIZE).max(1) as u64;
        merge_runs(
            &self.pages,
            self.merge_gap_pages,
            MAX_MERGED_FEATURE_PAGES.min(cap),
            &mut self.extents,
        );
        let cost = |extents: &[Extent]| -> f64 {
            extents
                .iter()
                .map(|e| self.read_cost.read_us(e.pages))
                .sum()
        };
        let random_us = cost(&self.extents);
        let mut predicted_us = random_us;
        // A sequential pass is merging taken to the whole span: `Auto`
        // considers it only where merging is on.
        let consider = match self.sequential_reads {
            SequentialReads::Auto => self.merge_gap_pages.is_some(),
            SequentialReads::Never => false,
            SequentialReads::Always => true,
        };
        if self.extents.len() > 1 && consider {
            merge_runs(
                &self.pages,
                Some(u64::MAX),
                SCAN_READ_PAGES.min(cap),
                &mut self.scan_extents,
            );
            let scan_us = cost(&self.scan_extents);
            if self.sequential_reads.choose_scan(random_us, scan_us) {
                std::mem::swap(&mut self.extents, &mut self.scan_extents);
                self.stats.sequential_passes += 1;
                predicted_us = scan_us;
            }
        }
        self.stats.predicted_read_ns += (predicted_us * 1e3) as u64;
    }

    /// Like [`gather`](Self::gather), converting to `f32`.
    pub fn gather_f32(&mut self, store: &Store, ids: &[u64], out: &mut [f32]) -> Result<()> {
        Error::check_output_len(out.len(), ids.len(), store.feature_dim() as usize, "values")?;
        let mut raw = std::mem::take(&mut self.raw);
        raw.resize(ids.len() * store.layout().row_bytes(), 0);
        let result = self.gather(store, ids, &mut raw);
        if result.is_ok() {
            store
                .dtype()
                .decode_to_f32(store.feature_dim() as usize, &raw, out);
        }
        self.raw = raw;
        result
    }

    /// The in-neighbor lists of `nodes` (in order), reading every CSC
    /// segment they touch once, in one batch, each checked against its CRC.
    /// All of them are held at once: for a bounded working set, see
    /// [`visit_lists`](Self::visit_lists).
    pub fn read_lists(&mut self, store: &Store, nodes: &[u64]) -> Result<Vec<Vec<u64>>> {
        let mut lists = Vec::with_capacity(nodes.len());
        self.read_group(store, nodes, &mut |_, list| lists.push(list.to_vec()))?;
        Ok(lists)
    }

    /// Calls `visit(i, list)` with the in-neighbor list of every `nodes[i]`,
    /// in order, reading them in groups whose CSC segments take at most
    /// the read buffer's cap ([`with_chunk_bytes`](Self::with_chunk_bytes);
    /// a group of one node may take more, its list being needed whole).
    /// Each segment a group touches is read once, in one batch, and
    /// checked against its CRC; each list is decoded into one reused
    /// buffer. So a hop's targets never hold all their lists at once: a
    /// hop of a million targets on a skewed graph reaches hundreds of
    /// millions of in-neighbors.
    pub fn visit_lists(
        &mut self,
        store: &Store,
        nodes: &[u64],
        visit: &mut dyn FnMut(usize, &[u64]),
    ) -> Result<()> {
        let segments = store.segments();
        let (width, page) = (store.index_width().bytes() as u64, PAGE_SIZE as u64);
        let cap = self.chunk_bytes as u64;
        let gap = self.merge_gap_pages.unwrap_or(0) * page;
        let mut in_group = rustc_hash::FxHashSet::<usize>::default();
        let (mut start, mut bytes) = (0usize, 0u64);
        for (i, &v) in nodes.iter().enumerate() {
            let s = segments.partition_point(|seg| seg.end_node() <= v);
            if in_group.contains(&s) {
                continue;
            }
            // What reading the segment adds at most: its pages, a
            // boundary page and the merged gap before it.
            let more = segments.get(s).map_or(0, |seg| {
                (seg.edge_count * width).div_ceil(page) * page + page + gap
            });
            if i > start && bytes + more > cap {
                self.read_group(store, &nodes[start..i], &mut |k, list| {
                    visit(start + k, list)
                })?;
                (start, bytes) = (i, 0);
                in_group.clear();
            }
            in_group.insert(s);
            bytes += more;
        }
        self.read_group(store, &nodes[start..], &mut |k, list| {
            visit(start + k, list)
        })
    }

    /// [`read_lists`](Self::read_lists) of one group, visited in order.
    fn read_group(
        &mut self,
        store: &Store,
        nodes: &[u64],
        visit: &mut dyn FnMut(usize, &[u64]),
    ) -> Result<()> {
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
        let page = PAGE_SIZE as u64;
        // Page-aligned reads covering the wanted segments; segments whose
        // ranges share or touch a page, or lie at most `merge_gap_pages`
        // apart, are read together (up to MAX_MERGED_READ bytes; the pages
        // between are read and dropped), so a boundary page is read once.
        // spans: (file offset, bytes, buffer offset); seg_at[k]: where
        // segment unique[k]'s first byte lands in the buffer.
        let gap = self.merge_gap_pages.unwrap_or(0) * page;
        let mut spans: Vec<(u64, usize, usize)> = Vec::with_capacity(unique.len());
        let mut seg_at = Vec::with_capacity(unique.len());
        let mut total = 0usize;
        for &s in &unique {
            let seg = &segments[s];
            let start = page + seg.edge_start * width;
            let end = start + seg.edge_count * width;
            let a = start / page * page;
            let b = end.div_ceil(page) * page;
            if let Some(last) = spans.last_mut() {
                let last_end = last.0 + last.1 as u64;
                if a <= last_end + gap && b - last.0 <= MAX_MERGED_READ {
                    let grow = b.saturating_sub(last_end) as usize;
                    last.1 += grow;
                    total += grow;
                    seg_at.push(last.2 + (start - last.0) as usize);
                    continue;
                }
            }
            spans.push((a, (b - a) as usize, total));
            seg_at.push(total + (start - a) as usize);
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
        if !self.ops.is_empty() {
            if let Some(a) = self.activity.as_deref() {
                if a.feature_read_in_flight() {
                    self.stats.list_reads_beside_features += self.ops.len() as u64;
                    self.stats.list_bytes_beside_features +=
                        self.ops.iter().map(|o| o.len as u64).sum::<u64>();
                }
            }
            let in_flight = self.activity.as_deref().map(ReadActivity::enter_lists);
            self.reader.read_batch(&self.ops, &mut self.buf)?;
            drop(in_flight);
        }
        let path = store.path_of(FileKind::Indices);
        let bytes = self.buf.as_slice();
        for (k, &s) in unique.iter().enumerate() {
            let seg = &segments[s];
            let at = seg_at[k];
            check_segment(
                &path,
                s,
                seg,
                page + seg.edge_start * width,
                &bytes[at..at + (seg.edge_count * width) as usize],
            )?;
        }
        let indptr = store.indptr();
        let mut list = Vec::new();
        for (i, (&v, &s)) in nodes.iter().zip(&wanted).enumerate() {
            let k = unique.binary_search(&s).unwrap_or(0);
            let seg = &segments[s];
            let seg_at = seg_at[k];
            let lo = seg_at + ((indptr[v as usize] - seg.edge_start) * width) as usize;
            let hi = seg_at + ((indptr[v as usize + 1] - seg.edge_start) * width) as usize;
            list.clear();
            store.index_width().decode(&bytes[lo..hi], &mut list);
            visit(i, &list);
        }
        self.stats.lists += nodes.len() as u64;
        self.stats.segments += unique.len() as u64;
        self.stats.list_reads += spans.len() as u64;
        self.stats.bytes_read += total as u64;
        Ok(())
    }
}
