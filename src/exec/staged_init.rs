//! Staged init: a superbatch's init rows are read while the superbatch runs.
//!
//! Ginex's executor reads every row of a superbatch's init before its first
//! batch, then gathers the batches from the cache. Here a thread of its own
//! reads the rows, in chunks, while the executor starts: before batch `b`
//! the executor waits only for the chunks holding a row that batches
//! `..=b` use, and with [`Pipeline::Full`] the next superbatch is sampled
//! meanwhile. The cache holds exactly what Belady's init says once the
//! superbatch is over, every row is read once, and batches and checksums do
//! not change: only *when* a row arrives does.
//!
//! The chunks follow page order, not first use. A superbatch's init is
//! dense (a large share of all feature pages), so in page order the gather
//! engine merges pages a few apart into one read
//! (`GatherOptions::merge_gap_pages`); ordered by the batch that first uses
//! them, a chunk's pages are scattered over the whole file and few merge
//! (the reads and times of both orders: `docs/lab/performance-journal.md`, "Merged
//! reads"). A chunk never splits a page, so every page is read once.
//!
//! [`Pipeline::Full`]: crate::exec::config::Pipeline::Full
//! [`INIT_CHUNK_BYTES`]: crate::cache::feature_cache::INIT_CHUNK_BYTES

use std::sync::mpsc;

use crate::cache::feature_cache::{init_chunk_rows, FeatureCache, RowSource, INIT_CHUNK_BYTES};
use crate::error::{Error, Result};

/// Chunks of the staged init's buffers ([`Pipeline::Full`]): a chunk being
/// read (and the reader's page buffer, capped at a chunk), up to two in the
/// channel (the read-ahead's; a superbatch's own init has one), one being
/// filled (or, reading the next superbatch's init ahead, held until the
/// cache has room). The two readers never overlap: the read-ahead starts
/// once the superbatch's own init is in.
pub const STAGED_INIT_CHUNKS: u64 = 5;
/// Most bytes of the staged init's buffers; see [`buffer_bytes`].
pub const STAGED_INIT_BYTES: u64 = STAGED_INIT_CHUNKS * INIT_CHUNK_BYTES as u64;

/// Rows of a chunk of an init of `rows` rows into a cache of `cache_rows`
/// rows of `row_bytes`: a 32nd of the init (so that the first batches do
/// not wait for all of it), but at most a 128th of the cache, at least
/// 64, at most [`INIT_CHUNK_BYTES`] worth. The cap on the cache's share
/// keeps the staged init's buffers ([`buffer_bytes`]) at a 32nd of the
/// cache: cut by the init alone, a cold cache's first init, the whole
/// cache, set them at an eighth of it, which the later inits (at 5× a
/// fifth of the cache) never used.
pub(crate) fn chunk_rows(rows: usize, cache_rows: usize, row_bytes: usize) -> usize {
    (rows / 32)
        .min(cache_rows / 128)
        .clamp(64, init_chunk_rows(row_bytes).max(64))
}

/// Bytes of the largest chunk an init into a cache of `cache_rows` rows of
/// `row_bytes` is cut into: an init never loads more rows than the cache
/// holds, and [`chunk_rows`] grows with the init, so no chunk of any of
/// the run's inits is larger. The staged init's reader caps its read
/// buffer at it too.
pub fn chunk_bytes(cache_rows: u64, row_bytes: u64) -> u64 {
    let rows = usize::try_from(cache_rows).unwrap_or(usize::MAX);
    let rows = chunk_rows(rows, rows, row_bytes as usize) as u64;
    rows.saturating_mul(row_bytes).min(INIT_CHUNK_BYTES as u64)
}

/// The staged init's buffers for a cache of `cache_rows` rows of
/// `row_bytes`, its share of the memory plan: [`STAGED_INIT_CHUNKS`]
/// chunks of [`chunk_bytes`] (a chunk is at most 1/128 of the cache's
/// rows, at least 64, at most [`INIT_CHUNK_BYTES`], as [`chunk_rows`]
/// cuts them). A small cache's inits are small, so are its buffers: 5 × 8
/// MiB would be a third of a 70 MiB cache.
pub fn buffer_bytes(cache_rows: u64, row_bytes: u64) -> u64 {
    STAGED_INIT_CHUNKS * chunk_bytes(cache_rows, row_bytes)
}

/// Rows read together, and the first batch (of the superbatch) that needs
/// any of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InitChunk {
    /// Ascending ids.
    pub ids: Vec<u64>,
    /// Index in the superbatch of the first batch using one of them or
    /// one of a later chunk's (chunks arrive in order; `batches.len()`
    /// when none does).
    pub needed_by: usize,
}

/// Cuts `load` (ascending, distinct) into chunks of about `chunk_rows`
/// consecutive rows, never splitting the rows of one page (`page_of`),
/// each needed by the first batch that uses one of its rows or of a later
/// chunk's (`first_use`, at most `never`: none does).
pub(crate) fn chunks_in_page_order(
    load: &[u64],
    first_use: impl Fn(u64) -> usize,
    never: usize,
    page_of: impl Fn(u64) -> u64,
    chunk_rows: usize,
) -> Vec<InitChunk> {
    if load.is_empty() {
        return Vec::new();
    }
    let first_use: Vec<usize> = load.iter().map(|&id| first_use(id).min(never)).collect();
    let chunk_rows = chunk_rows.max(1);
    let mut chunks = Vec::with_capacity(load.len() / chunk_rows + 1);
    let mut start = 0;
    while start < load.len() {
        let mut end = (start + chunk_rows).min(load.len());
        // Extend to the end of the last row's page.
        let page = page_of(load[end - 1]);
        while end < load.len() && page_of(load[end]) == page {
            end += 1;
        }
        chunks.push(InitChunk {
            ids: load[start..end].to_vec(),
            needed_by: first_use[start..end].iter().copied().min().unwrap_or(never),
        });
        start = end;
    }
    // Chunks arrive in order: a chunk is needed by the first batch that
    // needs it or any chunk after it.
    let mut earliest = never;
    for chunk in chunks.iter_mut().rev() {
        earliest = earliest.min(chunk.needed_by);
        chunk.needed_by = earliest;
    }
    chunks
}

/// A chunk read: its ids and their rows.
type ReadChunk = Result<(Vec<u64>, Vec<u8>)>;

/// The executor's end of a staged init: chunks arrive in order from the
/// reading thread and are filled into the cache on demand.
pub(crate) struct Arrivals {
    rx: mpsc::Receiver<ReadChunk>,
    /// `needed_by` of the chunks not yet filled, in order.
    upcoming: std::collections::VecDeque<usize>,
    /// A chunk received but not filled yet ([`Arrivals::fill_ready`]).
    held: Option<(Vec<u64>, Vec<u8>)>,
    /// Row buffers filled, back to the reader for its next chunks (a fresh
    /// buffer of 8 MiB per chunk cost a page fault per 4 KiB).
    spent: mpsc::Sender<Vec<u8>>,
}

impl Arrivals {
    /// Fills every chunk needed by batch `b` (or earlier) into `cache`.
    pub(crate) fn wait_for(&mut self, b: usize, cache: &mut FeatureCache) -> Result<()> {
        while self.upcoming.front().is_some_and(|&n| n <= b) {
            self.receive(cache)?;
        }
        Ok(())
    }

    /// Fills every remaining chunk into `cache`.
    pub(crate) fn finish(&mut self, cache: &mut FeatureCache) -> Result<()> {
        while !self.upcoming.is_empty() {
            self.receive(cache)?;
        }
        Ok(())
    }

    /// True once every chunk is filled.
    pub(crate) fn is_done(&self) -> bool {
        self.upcoming.is_empty()
    }

    /// Fills the chunks that have arrived (with `wait`, every chunk, as it
    /// arrives), in order, as long as `cache` keeps at least `reserve`
    /// slots free; returns the rows filled.
    pub(crate) fn fill_ready(
        &mut self,
        cache: &mut FeatureCache,
        reserve: usize,
        wait: bool,
    ) -> Result<u64> {
        let mut filled = 0;
        while !self.upcoming.is_empty() {
            let Some((ids, rows)) = self.next_chunk(wait)? else {
                break;
            };
            if cache.free_slot_count() < ids.len() + reserve {
                self.held = Some((ids, rows));
                break;
            }
            filled += ids.len() as u64;
            self.fill(cache, ids, rows)?;
        }
        Ok(filled)
    }

    fn receive(&mut self, cache: &mut FeatureCache) -> Result<()> {
        let (ids, rows) = self
            .next_chunk(true)?
            .ok_or_else(|| Error::internal("no chunk arrived"))?;
        self.fill(cache, ids, rows)
    }

    /// The chunk held back, else the next to arrive (waiting for it with
    /// `wait`; `None` when none has arrived).
    fn next_chunk(&mut self, wait: bool) -> Result<Option<(Vec<u64>, Vec<u8>)>> {
        let stopped = || Error::internal("the init reader stopped");
        if let Some(chunk) = self.held.take() {
            return Ok(Some(chunk));
        }
        if wait {
            return self.rx.recv().map_err(|_| stopped())?.map(Some);
        }
        match self.rx.try_recv() {
            Ok(chunk) => chunk.map(Some),
            Err(mpsc::TryRecvError::Empty) => Ok(None),
            Err(mpsc::TryRecvError::Disconnected) => Err(stopped()),
        }
    }

    /// Fills an upcoming chunk into `cache` and hands its buffer back.
    fn fill(&mut self, cache: &mut FeatureCache, ids: Vec<u64>, rows: Vec<u8>) -> Result<()> {
        self.upcoming.pop_front();
        cache.fill(&ids, &rows)?;
        let _ = self.spent.send(rows);
        Ok(())
    }
}

/// Starts, in `scope`, a thread that reads `chunks` in order through the
/// row source `open` makes there, at most `ahead` chunks ahead of the
/// executor. Returns the executor's end and the thread, which returns what
/// the source reports when done (`done`; `None` when it could not open).
pub(crate) fn spawn_reader<'scope, S, D>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    chunks: Vec<InitChunk>,
    open: &'scope (dyn Fn() -> Result<S> + Sync),
    done: impl FnOnce(&S) -> D + Send + 'scope,
    ahead: usize,
) -> (Arrivals, std::thread::ScopedJoinHandle<'scope, Option<D>>)
where
    S: RowSource,
    D: Send + 'scope,
{
    let (tx, rx) = mpsc::sync_channel(ahead);
    let (spent, recycled) = mpsc::channel::<Vec<u8>>();
    let arrivals = Arrivals {
        rx,
        upcoming: chunks.iter().map(|c| c.needed_by).collect(),
        held: None,
        spent,
    };
    let reader = scope.spawn(move || {
        let _cpu = crate::io::cpu_time::RoleGuard::start(crate::io::cpu_time::Role::InitReader);
        let source = match open() {
            Ok(s) => s,
            Err(e) => {
                let _ = tx.send(Err(e));
                return None;
            }
        };
        let rb = source.row_bytes();
        for chunk in chunks {
            let mut rows = recycled.try_recv().unwrap_or_default();
            rows.resize(chunk.ids.len() * rb, 0);
            let read = source.read_rows(&chunk.ids, &mut rows);
            let failed = read.is_err();
            let sent = tx.send(read.map(|()| (chunk.ids, rows)));
            if failed || sent.is_err() {
                break; // an error was handed over, or the executor stopped
            }
        }
        Some(done(&source))
    });
    (arrivals, reader)
}

/// Joins a reader thread of [`spawn_reader`].
pub(crate) fn join_reader<D>(
    reader: std::thread::ScopedJoinHandle<'_, Option<D>>,
) -> Result<Option<D>> {
    reader
        .join()
        .map_err(|_| Error::internal("the init reader thread panicked"))
}

/// Runs `body` with the chunks being read, in order, by a thread that
/// reads through the row source `open` makes there (one chunk read ahead).
/// Returns `body`'s result and what the reader's source reports when done
/// (`done`).
pub(crate) fn with_staged_init<S, R, D>(
    chunks: Vec<InitChunk>,
    open: &(dyn Fn() -> Result<S> + Sync),
    done: impl FnOnce(&S) -> D + Send,
    body: impl FnOnce(&mut Arrivals) -> Result<R>,
) -> Result<(R, Option<D>)>
where
    S: RowSource,
    D: Send,
{
    std::thread::scope(|scope| {
        let (mut arrivals, reader) = spawn_reader(scope, chunks, open, done, 1);
        let result = body(&mut arrivals);
        // Unblock the reader if the body stopped early.
        drop(arrivals);
        let stats = join_reader(reader)?;
        result.map(|r| (r, stats))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_init_into_a_cache_cuts_a_chunk_past_the_planned_one() {
        // The plan counts chunks of `chunk_bytes(cache rows)`; an init
        // loads at most the cache's rows, and its chunks must fit.
        for rb in [4usize, 1024, 4096, 100_000] {
            for cache in [0u64, 1, 63, 64, 2_047, 2_048, 71_680, 1 << 20, 50_000_000] {
                let planned = chunk_bytes(cache, rb as u64);
                assert!(planned <= INIT_CHUNK_BYTES as u64);
                for rows in [0, 1, cache / 3, cache / 2, cache] {
                    let cut = (chunk_rows(rows as usize, cache as usize, rb) * rb) as u64;
                    assert!(
                        cut.min(INIT_CHUNK_BYTES as u64) <= planned,
                        "rows {rows} of a {cache}-row cache of {rb} B: {cut} > {planned}"
                    );
                }
            }
        }
    }

    #[test]
    fn chunks_follow_page_order_and_keep_pages_whole() {
        // Pages of 4 rows. Batch 0 uses 9, batch 1 uses 2 and 20, batch 2
        // uses 1; 10 shares page 2 with 9; 30 is never used.
        let load = [1, 2, 9, 10, 20, 30];
        let batches: [&[u64]; 3] = [&[9, 5], &[2, 20, 9], &[1]];
        let chunks = chunks_in_page_order(
            &load,
            first_use_in(&batches),
            batches.len(),
            |id| id / 4,
            100,
        );
        assert_eq!(
            chunks,
            vec![InitChunk {
                ids: vec![1, 2, 9, 10, 20, 30],
                needed_by: 0
            }]
        );
        let got = |chunk_rows| -> Vec<(Vec<u64>, usize)> {
            chunks_in_page_order(
                &load,
                first_use_in(&batches),
                batches.len(),
                |id| id / 4,
                chunk_rows,
            )
            .into_iter()
            .map(|c| (c.ids, c.needed_by))
            .collect()
        };
        // 1 and 2 (page 0) are used first by batch 1, but arrive before
        // 9 and 10 (page 2), which batch 0 needs; 20 by batch 1.
        assert_eq!(
            got(2),
            vec![(vec![1, 2], 0), (vec![9, 10], 0), (vec![20, 30], 1)]
        );
        // A chunk of 3 rows would split page 2: it takes 10 as well.
        assert_eq!(got(3), vec![(vec![1, 2, 9, 10], 0), (vec![20, 30], 1)]);
        // 30 is used by no batch (3 = never).
        assert_eq!(
            got(1),
            vec![
                (vec![1, 2], 0),
                (vec![9, 10], 0),
                (vec![20], 1),
                (vec![30], 3)
            ]
        );
    }

    /// The first of `batches` that uses an id (`batches.len()`: none).
    fn first_use_in<'a>(batches: &'a [&'a [u64]]) -> impl Fn(u64) -> usize + 'a {
        |id| {
            batches
                .iter()
                .position(|b| b.contains(&id))
                .unwrap_or(batches.len())
        }
    }

    struct Rows;
    impl RowSource for Rows {
        fn row_bytes(&self) -> usize {
            8
        }
        fn read_rows(&self, ids: &[u64], out: &mut [u8]) -> Result<()> {
            for (k, &id) in ids.iter().enumerate() {
                if id == 666 {
                    return Err(Error::invalid_argument("row 666 is unreadable"));
                }
                out[k * 8..(k + 1) * 8].copy_from_slice(&id.to_le_bytes());
            }
            Ok(())
        }
    }

    #[test]
    fn staged_init_fills_what_each_batch_needs_before_it() {
        let mut cache = FeatureCache::new(100, 10, 8).unwrap();
        let load = cache.begin_init(&[3, 50, 7, 90]).unwrap();
        let batches: [&[u64]; 3] = [&[3], &[3, 7], &[50, 90]];
        let chunks = chunks_in_page_order(&load, first_use_in(&batches), batches.len(), |id| id, 1);
        let (seen, reads) = with_staged_init(
            chunks,
            &|| Ok(Rows),
            |_| 4u32,
            |arrivals| {
                let mut seen = Vec::new();
                for (b, ids) in batches.iter().enumerate() {
                    arrivals.wait_for(b, &mut cache)?;
                    assert!(ids.iter().all(|&id| cache.contains(id)), "batch {b}");
                    seen.push(cache.len());
                }
                arrivals.finish(&mut cache)?;
                Ok(seen)
            },
        )
        .unwrap();
        assert_eq!(seen, vec![1, 2, 4]);
        assert_eq!(reads, Some(4));
        assert_eq!(cache.counters().init_reads, 4);
        let mut out = vec![0u8; 8];
        cache.gather(&[50], &mut out, &Rows).unwrap();
        assert_eq!(out, 50u64.to_le_bytes());
        cache.check_consistency().unwrap();
    }

    #[test]
    fn a_read_error_reaches_the_executor_and_the_reader_stops() {
        let mut cache = FeatureCache::new(1000, 10, 8).unwrap();
        let load = cache.begin_init(&[1, 666, 2]).unwrap();
        let chunks =
            chunks_in_page_order(&load, first_use_in(&[&[1], &[666], &[2]]), 3, |id| id, 1);
        let err = with_staged_init(
            chunks,
            &|| Ok(Rows),
            |_| (),
            |arrivals| arrivals.finish(&mut cache),
        )
        .unwrap_err();
        assert!(err.to_string().contains("row 666 is unreadable"), "{err}");
    }

    #[test]
    fn an_executor_that_stops_early_does_not_hang_the_reader() {
        let mut cache = FeatureCache::new(100_000, 50_000, 8).unwrap();
        let ids: Vec<u64> = (0..50_000).collect();
        let load = cache.begin_init(&ids).unwrap();
        let chunks = chunks_in_page_order(
            &load,
            first_use_in(&[&ids[..10], &ids[10..]]),
            2,
            |id| id,
            10,
        );
        let err = with_staged_init(
            chunks,
            &|| Ok(Rows),
            |_| (),
            |arrivals| -> Result<()> {
                arrivals.wait_for(0, &mut cache)?;
                Err(Error::invalid_argument("consumer stopped"))
            },
        )
        .unwrap_err();
        assert!(err.to_string().contains("consumer stopped"));
        assert_eq!(cache.len(), 10, "only batch 0's chunk was filled");
    }
}
