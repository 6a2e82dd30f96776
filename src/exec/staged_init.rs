//! Staged init: a superbatch's init rows are read while the superbatch runs.
//!
//! Ginex's executor reads every row of a superbatch's init before its first
//! batch, then gathers the batches from the cache: the reads (I/O) and the
//! gathers, the consumer and — with [`Pipeline::Full`] — the next
//! superbatch's sampling (CPU) take turns. Here the rows to read are ordered
//! by the batch that first uses them and read by a thread of their own; the
//! executor waits before batch `b` only for the rows batches `..=b` need.
//! The cache holds exactly what Belady's init says once the superbatch is
//! over, every row is read once, and batches and checksums do not change:
//! only *when* a row arrives does.
//!
//! The rows of one page go with the page's earliest first use, so a page is
//! read once as with the id-ordered init (except at chunk boundaries).
//!
//! [`Pipeline::Full`]: crate::exec::config::Pipeline::Full

use std::sync::mpsc;

use crate::cache::feature_cache::{FeatureCache, RowSource};
use crate::error::{Error, Result};

/// Rows read together, and the first batch (of the superbatch) that needs
/// any of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InitChunk {
    /// Ascending ids.
    pub ids: Vec<u64>,
    /// Index in the superbatch of the first batch using one of them.
    pub needed_by: usize,
}

/// Orders `load` (ascending, distinct) into chunks of at most `chunk_rows`
/// by first use in `batches`: a row goes with the earliest first use of any
/// loaded row on its page (`page_of`); rows no batch uses go last. Groups
/// are merged into a chunk until it is full, so a chunk is read no later
/// than its first batch needs it.
pub(crate) fn order_by_first_use(
    load: &[u64],
    batches: &[&[u64]],
    page_of: impl Fn(u64) -> u64,
    chunk_rows: usize,
) -> Vec<InitChunk> {
    let Some(&max) = load.last() else {
        return Vec::new();
    };
    let never = batches.len();
    let mut pending = vec![0u64; (max as usize >> 6) + 1];
    for &id in load {
        pending[id as usize >> 6] |= 1 << (id & 63);
    }
    let mut first_use = vec![never; load.len()];
    for (b, ids) in batches.iter().enumerate() {
        for &id in ids.iter() {
            let Some(word) = pending.get_mut(id as usize >> 6) else {
                continue;
            };
            let bit = 1u64 << (id & 63);
            if *word & bit != 0 {
                *word &= !bit;
                if let Ok(pos) = load.binary_search(&id) {
                    first_use[pos] = b;
                }
            }
        }
    }
    // Every row of a page takes the page's earliest first use.
    let mut start = 0;
    while start < load.len() {
        let page = page_of(load[start]);
        let end = start
            + load[start..]
                .iter()
                .take_while(|&&id| page_of(id) == page)
                .count();
        let earliest = first_use[start..end].iter().copied().min().unwrap_or(never);
        first_use[start..end].fill(earliest);
        start = end;
    }
    let mut order: Vec<(usize, u64)> = first_use.into_iter().zip(load.iter().copied()).collect();
    order.sort_unstable();
    let chunk_rows = chunk_rows.max(1);
    order
        .chunks(chunk_rows)
        .map(|c| InitChunk {
            needed_by: c[0].0,
            ids: {
                let mut ids: Vec<u64> = c.iter().map(|&(_, id)| id).collect();
                ids.sort_unstable();
                ids
            },
        })
        .collect()
}

/// A chunk read: its ids and their rows.
type ReadChunk = Result<(Vec<u64>, Vec<u8>)>;

/// The executor's end of a staged init: chunks arrive in order from the
/// reading thread and are filled into the cache on demand.
pub(crate) struct Arrivals {
    rx: mpsc::Receiver<ReadChunk>,
    /// `needed_by` of the chunks not yet received, in order.
    upcoming: std::collections::VecDeque<usize>,
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

    fn receive(&mut self, cache: &mut FeatureCache) -> Result<()> {
        let (ids, rows) = self
            .rx
            .recv()
            .map_err(|_| Error::invalid_argument("internal: the init reader stopped"))??;
        self.upcoming.pop_front();
        cache.fill(&ids, &rows)
    }
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
    let (tx, rx) = mpsc::sync_channel(1);
    let mut arrivals = Arrivals {
        rx,
        upcoming: chunks.iter().map(|c| c.needed_by).collect(),
    };
    std::thread::scope(|scope| {
        let reader = scope.spawn(move || {
            let source = match open() {
                Ok(s) => s,
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return None;
                }
            };
            let rb = source.row_bytes();
            for chunk in chunks {
                let mut rows = vec![0u8; chunk.ids.len() * rb];
                let read = source.read_rows(&chunk.ids, &mut rows);
                let failed = read.is_err();
                let sent = tx.send(read.map(|()| (chunk.ids, rows)));
                if failed || sent.is_err() {
                    break; // an error was handed over, or the executor stopped
                }
            }
            Some(done(&source))
        });
        let result = body(&mut arrivals);
        // Unblock the reader if the body stopped early.
        drop(arrivals);
        let stats = reader
            .join()
            .map_err(|_| Error::invalid_argument("the init reader thread panicked"))?;
        result.map(|r| (r, stats))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_follow_first_use_and_keep_pages_whole() {
        // Pages of 4 rows. Batch 0 uses 9, batch 1 uses 2 and 20, batch 2
        // uses 1; 10 shares page 2 with 9; 30 is never used.
        let load = [1, 2, 9, 10, 20, 30];
        let batches: [&[u64]; 3] = [&[9, 5], &[2, 20, 9], &[1]];
        let chunks = order_by_first_use(&load, &batches, |id| id / 4, 100);
        assert_eq!(
            chunks,
            vec![InitChunk {
                ids: vec![1, 2, 9, 10, 20, 30],
                needed_by: 0
            }]
        );
        let chunks = order_by_first_use(&load, &batches, |id| id / 4, 2);
        let got: Vec<(Vec<u64>, usize)> =
            chunks.into_iter().map(|c| (c.ids, c.needed_by)).collect();
        // 9 and 10 (page 2) first; 1 and 2 (page 0) take batch 1 from 2;
        // then 20 (batch 1) and 30 (never).
        assert_eq!(
            got,
            vec![(vec![9, 10], 0), (vec![1, 2], 1), (vec![20, 30], 1)]
        );
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
        let batches: [&[u64]; 3] = [&[90], &[3, 90], &[7, 50]];
        let chunks = order_by_first_use(&load, &batches, |id| id, 1);
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
        let chunks = order_by_first_use(&load, &[&[1], &[666], &[2]], |id| id, 1);
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
        let chunks = order_by_first_use(&load, &[&ids[..10], &ids[10..]], |id| id, 10);
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
