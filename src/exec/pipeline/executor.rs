//! The executor: one feature cache for the whole epoch; per superbatch
//! its init, then its batches, the next superbatch's init read ahead.

use super::timed;
use crate::cache::belady::Update;
use crate::cache::feature_cache::{FeatureCache, RowSource};
use crate::error::{Error, Result};
use crate::exec::access_summary::AccessSummary;
use crate::exec::prepared::Prepared;
use crate::exec::read_ahead::{plan_read_ahead, ReadAhead};
use crate::exec::report::{BatchStat, EpochBatch, EpochReport};
use crate::exec::rows::GatherRows;
use crate::exec::staged_init::{
    chunks_in_page_order, join_reader, spawn_reader, with_staged_init, Arrivals, InitChunk,
};
use crate::format::sections::FeatureSections;
use crate::inspect::superbatch::{OwnedFiles, SampledRecord, SuperbatchReader};
use crate::sample::sampler::decode_hops_with;
use crate::store::gather::GatherStats;

/// The executor side: one feature cache for the whole epoch.
pub(super) struct Executor<'a, 'c, 'r> {
    pub(super) cache: FeatureCache,
    pub(super) rows: &'a dyn RowSource,
    /// Staged init ([`Pipeline::Full`]): opens the init reader's own rows.
    pub(super) staged: Option<OpenRows<'r>>,
    pub(super) layout: &'a FeatureSections,
    pub(super) row_bytes: usize,
    pub(super) consume: &'a mut (dyn FnMut(&EpochBatch<'_>) -> Result<()> + 'c),
    pub(super) out: Vec<u8>,
    pub(super) window: Vec<u8>,
}

impl<'r> Executor<'_, '_, 'r> {
    /// E(s): its init, then its batches; `next` asks for the next
    /// superbatch's init, to read it ahead.
    pub(super) fn run(
        &mut self,
        p: &Prepared,
        next: NextInit<'_>,
        report: &mut EpochReport,
    ) -> Result<()> {
        let (mut files, init) = timed(&mut report.load_runs, || -> Result<_> {
            let mut files = SuperbatchReader::open(p.files.paths(), &p.spec.stamp())?;
            let init = files.take_init();
            Ok((files, init))
        })?;
        let Some(open_rows) = self.staged else {
            report.init_reads +=
                timed(&mut report.cache_init, || self.cache.init(&init, self.rows))?;
            return self.main_loop(p, &mut files, None, next, report);
        };
        let (load, chunks) = timed(&mut report.cache_init, || -> Result<_> {
            let load = self.cache.begin_init(&init)?;
            drop(init);
            let chunks = self.init_chunks(&load, Some(&p.summary));
            Ok((load, chunks))
        })?;
        let ((), stats) = with_staged_init(
            chunks,
            open_rows,
            |rows| rows.stats(),
            |arrivals| self.main_loop(p, &mut files, Some(arrivals), next, report),
        )?;
        count_init_reads(load.len(), stats, report);
        Ok(())
    }

    /// The init rows `load` in chunks of 8 MiB (smaller for small inits,
    /// so that the first batches do not wait for all of it, and for small
    /// caches, [`chunk_rows`](crate::exec::staged_init::chunk_rows)), each needed
    /// by the first batch that uses it (`summary`; without one, by the
    /// first batch).
    pub(super) fn init_chunks(
        &self,
        load: &[u64],
        summary: Option<&AccessSummary>,
    ) -> Vec<InitChunk> {
        let layout = &self.layout;
        let chunk_rows =
            crate::exec::staged_init::chunk_rows(load.len(), self.cache.capacity(), self.row_bytes);
        let page_of = |id| layout.locate(id).page;
        match summary {
            Some(s) => chunks_in_page_order(
                load,
                |id| s.first_use(id),
                s.num_batches(),
                page_of,
                chunk_rows,
            ),
            None => chunks_in_page_order(load, |_| 0, 0, page_of, chunk_rows),
        }
    }

    /// Reads `init` into the cache before its superbatch's changesets exist
    /// (staged init only): the first superbatch starts from an empty cache,
    /// so its init is known once it is sampled ([`fresh_init`]), and is read
    /// while its changesets are computed. The superbatch's own init then
    /// finds those rows cached and reads nothing.
    pub(super) fn init_ahead(&mut self, init: &[u64], report: &mut EpochReport) -> Result<()> {
        let Some(open_rows) = self.staged else {
            return Ok(());
        };
        let (rows, stats) = timed(&mut report.cache_init, || -> Result<_> {
            let load = self.cache.begin_init(init)?;
            let chunks = self.init_chunks(&load, None);
            let cache = &mut self.cache;
            let ((), stats) = with_staged_init(
                chunks,
                open_rows,
                |rows| rows.stats(),
                |arrivals| arrivals.finish(cache),
            )?;
            Ok((load.len(), stats))
        })?;
        count_init_reads(rows, stats, report);
        Ok(())
    }

    /// The batches of a superbatch whose init is done, or (`arrivals`)
    /// arriving, streamed from its `files`: each batch waits for the init
    /// rows it needs, a non-empty update for all of them (it may evict
    /// one). Once they are all in, and the next superbatch's init is known
    /// (`next`), that init is read ahead ([`crate::exec::read_ahead`]).
    pub(super) fn main_loop(
        &mut self,
        p: &Prepared,
        files: &mut SuperbatchReader,
        mut arrivals: Option<&mut Arrivals>,
        next: NextInit<'_>,
        report: &mut EpochReport,
    ) -> Result<()> {
        self.window.clear();
        std::thread::scope(|scope| {
            let mut ahead: Option<Running<'_>> = None;
            let mut run = || -> Result<()> {
                let batches = p.summary.num_batches();
                let mut i = 0;
                while let Some((record, update)) = files.next_batch()? {
                    let window_end = (i + 1) % p.spec.every.max(1) == 0 || i + 1 == batches;
                    let work = (&record, &update);
                    // Before the batch too: a superbatch whose init was
                    // read ahead whole has none to wait for, and its batch
                    // would leave the device idle.
                    self.read_ahead_once_ready(scope, &mut ahead, arrivals.as_deref(), p, next);
                    self.batch(p, (i, window_end), work, arrivals.as_deref_mut(), report)?;
                    self.read_ahead_once_ready(scope, &mut ahead, arrivals.as_deref(), p, next);
                    if let Some(running) = ahead.as_mut() {
                        timed(&mut report.cache_update, || {
                            running.ahead.after_batch(i, &mut self.cache)
                        })?;
                    }
                    i += 1;
                }
                timed(&mut report.cache_init, || -> Result<()> {
                    if let Some(a) = arrivals.as_deref_mut() {
                        a.finish(&mut self.cache)?;
                    }
                    if let Some(running) = ahead.as_mut() {
                        running.ahead.finish(&mut self.cache)?;
                    }
                    Ok(())
                })
            };
            let result = run();
            let Some(Running {
                ahead,
                reader,
                rows,
            }) = ahead
            else {
                return result;
            };
            // The reader stops once its end is dropped (after an error).
            drop(ahead);
            let stats = join_reader(reader)?;
            result?;
            count_init_reads(rows, stats, report);
            report.read_ahead += rows as u64;
            Ok(())
        })
    }

    /// Batch `i` of a superbatch (`window_end`: the last of its window of
    /// `every` batches): waits for its init rows (`arrivals`), gathers it,
    /// hands it to the consumer, and applies its update (at the window's
    /// end).
    pub(super) fn batch(
        &mut self,
        p: &Prepared,
        (i, window_end): (usize, bool),
        (rec, update): (&SampledRecord, &Update),
        mut arrivals: Option<&mut Arrivals>,
        report: &mut EpochReport,
    ) -> Result<()> {
        if let Some(a) = arrivals.as_deref_mut() {
            timed(&mut report.cache_init, || a.wait_for(i, &mut self.cache))?;
        }
        let rb = self.row_bytes;
        let b = p.spec.first_batch + i as u64;
        let hops = decode_hops_with(&rec.adj, p.spec.run.sampler.is_some())?;
        let num_seeds = hops.last().map_or(rec.ids.len(), |h| h.num_dst);
        if let Some(l) = &rec.link {
            l.check(num_seeds, &format!("link record of batch {b}"))
                .map_err(|e| Error::corrupt(&p.files.paths().samples, 0, e.to_string()))?;
        }
        self.out.resize(rec.ids.len() * rb, 0);
        let companions = if p.spec.every == 1 {
            page_companions(update, rec.ids.len(), &p.files)?
        } else {
            Vec::new()
        };
        let misses = timed(&mut report.gather, || {
            self.cache
                .gather_with(&rec.ids, &companions, &mut self.out, self.rows)
        })?;
        report.page_companions += companions.len() as u64;
        report.batches.push(BatchStat {
            batch: b,
            hits: rec.ids.len() as u64 - misses,
            misses,
            checksum: crc32fast::hash(&self.out),
        });
        (self.consume)(&EpochBatch {
            batch: b,
            ids: &rec.ids,
            num_seeds,
            hops: &hops,
            rows: &self.out,
            link: rec.link.as_ref(),
        })?;
        if !update.is_empty() {
            if let Some(a) = arrivals {
                timed(&mut report.cache_init, || a.finish(&mut self.cache))?;
            }
        }
        timed(&mut report.cache_update, || {
            if p.spec.every == 1 {
                return self.cache.apply(update, &self.out);
            }
            self.window.extend_from_slice(&self.out);
            if window_end {
                self.cache.apply(update, &self.window)?;
                self.window.clear();
            }
            Ok(())
        })
    }

    /// Starts the read-ahead of the next superbatch's init (into `ahead`,
    /// in `scope`) unless it runs: once the superbatch's own init is in
    /// (`arrivals` done) and the next init is known (`next`).
    pub(super) fn read_ahead_once_ready<'scope>(
        &self,
        scope: &'scope std::thread::Scope<'scope, '_>,
        ahead: &mut Option<Running<'scope>>,
        arrivals: Option<&Arrivals>,
        p: &Prepared,
        next: NextInit<'_>,
    ) where
        'r: 'scope,
    {
        let own_init_done = arrivals.is_none_or(Arrivals::is_done);
        if let (None, Some(open), true) = (&ahead, self.staged, own_init_done) {
            if let Some(init) = next() {
                *ahead = Some(self.start_read_ahead(scope, open, p, &init));
            }
        }
    }

    /// Starts reading `next_init` (the next superbatch's) ahead, during
    /// the rest of superbatch `p`, through a reader in `scope`.
    pub(super) fn start_read_ahead<'scope, 'o: 'scope>(
        &self,
        scope: &'scope std::thread::Scope<'scope, '_>,
        open: OpenRows<'o>,
        p: &Prepared,
        next_init: &[u64],
    ) -> Running<'scope> {
        let plan = plan_read_ahead(&self.cache, next_init, &p.summary, p.spec.every);
        let rows = plan.load.len();
        let chunks = self.init_chunks(&plan.load, None);
        let (arrivals, reader) =
            spawn_reader(scope, chunks, open, |r| r.stats(), READ_AHEAD_CHUNKS);
        Running {
            ahead: ReadAhead::new(plan, arrivals, false),
            reader,
            rows,
        }
    }
}

/// The page companions `update` inserts after a batch of `len` rows
/// ([`Update::companions`]); a gap, or more than a batch may read, is a
/// corrupt changes file.
pub(super) fn page_companions(update: &Update, len: usize, files: &OwnedFiles) -> Result<Vec<u64>> {
    update
        .companions(len)
        .map_err(|reason| Error::corrupt(&files.paths().changes, 0, reason))
}

/// A read-ahead under way: its executor end, its reader, its rows.
pub(super) struct Running<'scope> {
    pub(super) ahead: ReadAhead,
    pub(super) reader: std::thread::ScopedJoinHandle<'scope, Option<GatherStats>>,
    pub(super) rows: usize,
}

/// Chunks the read-ahead's reader may run ahead of the executor, which
/// takes them between batches (the planner's
/// [`STAGED_INIT_CHUNKS`](crate::exec::staged_init::STAGED_INIT_CHUNKS) counts
/// them). Two: with one, the reader (a chunk in ~28 ms at 2.9× on 3 M
/// nodes) waited 0.3–0.4 s an epoch for the executor's batches (~70 ms
/// each) to take it; with two, 0.05–0.2 s.
pub(super) const READ_AHEAD_CHUNKS: usize = 2;

/// Asks, without waiting, for the next superbatch's init (`C[0]`): `None`
/// while its changesets are not computed.
pub(super) type NextInit<'a> = &'a mut dyn FnMut() -> Option<Vec<u64>>;

/// Opens a row source for another thread (the staged init's reader).
pub(super) type OpenRows<'a> = &'a (dyn Fn() -> Result<GatherRows<'a>> + Sync);

/// Counts an init's `rows` and its reader's reads (`stats`) in `report`.
pub(super) fn count_init_reads(rows: usize, stats: Option<GatherStats>, report: &mut EpochReport) {
    if let Some(stats) = stats {
        report.add_gather_stats(&stats);
        report.init_reader_read += std::time::Duration::from_nanos(stats.read_ns);
        report.init_reader_pages += stats.unique_pages;
    }
    report.init_reads += rows as u64;
}
