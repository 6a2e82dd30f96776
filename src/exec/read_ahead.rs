//! Reading the next superbatch's init while this one runs.
//!
//! With carry-over, superbatch `s + 1` starts from the cache superbatch `s`
//! ends with: its init evicts the rows of that cache it does not keep and
//! reads the rows it needs that are not cached. Done at the boundary, the
//! reads wait for nothing but leave the device idle while `s` gathers from
//! its cache. Here they start as soon as the changesets of `s + 1` exist,
//! during the main loop of `s`:
//!
//! * a row `s + 1` does not keep is evicted right after its last use in
//!   `s` (a row `s` never uses at once): its slot is free from then on;
//! * a row `s + 1` loads is read ahead unless `s` uses it (an update of `s`
//!   could insert it) or holds it now (an update of `s` will evict it);
//!   those few are read at the boundary, as before;
//! * a chunk of rows read ahead is filled only while the cache keeps the
//!   free slots the remaining updates of `s` insert into.
//!
//! Every update of `s` then finds the cache it was computed for, minus
//! rows it will not touch again; the cache `s + 1` starts with is its
//! init, as before; batches, checksums and the rows read do not change.
//! Only when the reads happen does. (What it saves at a superbatch
//! boundary: `docs/lab/performance-journal.md`, "Pipelines".)

use crate::cache::feature_cache::FeatureCache;
use crate::error::Result;
use crate::exec::access_summary::{AccessSummary, NEVER};
use crate::exec::staged_init::Arrivals;
use crate::id_set::IdSet;

/// What superbatch `s` can do for the init of `s + 1` during its main loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReadAheadPlan {
    /// Rows of the next init to read ahead, ascending.
    pub load: Vec<u64>,
    /// Cached rows the next init drops, each with the batch of `s` after
    /// which it may go (the end of the window of its last use; 0 when `s`
    /// does not use it), in that batch order.
    pub evictions: Vec<(usize, u64)>,
    /// Free slots the updates after batch `i` still insert into, beyond
    /// their evictions (at any point of the rest of the superbatch).
    pub reserve_after: Vec<usize>,
}

/// Plans the read-ahead of `next_init` (the next superbatch's `C[0]`)
/// during a superbatch summarised by `summary` (its updates applied at the
/// end of windows of `every` batches); `cache` is the cache now (the rows
/// it holds that the next init loads are left to the boundary).
pub(crate) fn plan_read_ahead(
    cache: &FeatureCache,
    next_init: &[u64],
    summary: &AccessSummary,
    every: usize,
) -> ReadAheadPlan {
    let kept = IdSet::of(next_init.iter().copied());
    // A row the superbatch misses is cached by the update at the end of
    // its window: it may go after that one. Rows it never uses go at once.
    let every = every.max(1);
    let batches = summary.num_batches();
    let window_end = |b: usize| ((b / every + 1) * every - 1).min(batches.saturating_sub(1));
    let mut evictions: Vec<(usize, u64)> = summary
        .final_last_uses()
        .filter(|&(id, _)| !kept.contains(id))
        .map(|(id, last)| match last {
            NEVER => (0, id),
            b => (window_end(b as usize), id),
        })
        .collect();
    // (after, id), ids ascending within a batch.
    in_batch_order(&mut evictions, batches);
    // A bit a node, not a binary search over the final cache a row: the
    // plan is on the device's critical path between two read-aheads
    // (30–60 ms of searches on 436 k rows).
    let finally_cached = IdSet::of(summary.final_ids().iter().copied());
    let mut load: Vec<u64> = next_init
        .iter()
        .copied()
        .filter(|&id| !summary.used(id) && !cache.contains(id) && !finally_cached.contains(id))
        .collect();
    crate::id_set::sort_distinct(&mut load);
    let net = summary.net_inserts();
    let mut reserve_after = vec![0usize; batches];
    for i in (0..batches.saturating_sub(1)).rev() {
        reserve_after[i] = (net[i + 1] + reserve_after[i + 1] as i64).max(0) as usize;
    }
    ReadAheadPlan {
        load,
        evictions,
        reserve_after,
    }
}

/// Orders `evictions` by (batch after which the row may go, id). They
/// come in ascending ids (the final cache's order), so a counting sort by
/// batch, which keeps each batch's ids in the order they come, gives that
/// order in linear time: the comparison sort took 4–10 ms of the 65 ms the
/// device waited at a superbatch boundary (3 M nodes at 2.9×). Any other
/// input is sorted by comparison.
fn in_batch_order(evictions: &mut Vec<(usize, u64)>, batches: usize) {
    let ascending_ids = evictions.windows(2).all(|w| w[0].1 < w[1].1);
    if !ascending_ids || evictions.iter().any(|&(after, _)| after >= batches) {
        evictions.sort_unstable();
        return;
    }
    let mut start = vec![0usize; batches + 1];
    for &(after, _) in evictions.iter() {
        start[after + 1] += 1;
    }
    for b in 0..batches {
        start[b + 1] += start[b];
    }
    let mut ordered = vec![(0usize, 0u64); evictions.len()];
    for &e in evictions.iter() {
        ordered[start[e.0]] = e;
        start[e.0] += 1;
    }
    *evictions = ordered;
}

/// A read-ahead under way: its rows arriving, the evictions not done yet.
pub(crate) struct ReadAhead {
    arrivals: Arrivals,
    evictions: Vec<(usize, u64)>,
    evicted: usize,
    reserve_after: Vec<usize>,
    /// Wait for the rows the cache has room for after each batch, instead
    /// of filling only those that have arrived (tests: the most filled
    /// early, deterministically).
    wait: bool,
}

impl ReadAhead {
    /// The read-ahead of `plan`, whose rows arrive through `arrivals`
    /// (`wait`: see the field).
    pub(crate) fn new(plan: ReadAheadPlan, arrivals: Arrivals, wait: bool) -> ReadAhead {
        ReadAhead {
            arrivals,
            evictions: plan.evictions,
            evicted: 0,
            reserve_after: plan.reserve_after,
            wait,
        }
    }

    /// After batch `b`'s update: evicts the rows last used by then, and
    /// fills the rows that have arrived into the slots the rest of the
    /// superbatch leaves free. Does not wait for rows (unless `wait`).
    pub(crate) fn after_batch(&mut self, b: usize, cache: &mut FeatureCache) -> Result<()> {
        self.evict_through(b, cache)?;
        let reserve = self.reserve_after.get(b).copied().unwrap_or(0);
        self.arrivals.fill_ready(cache, reserve, self.wait)?;
        Ok(())
    }

    /// After the superbatch's last update: the remaining evictions, then
    /// every remaining row (waiting for them).
    pub(crate) fn finish(&mut self, cache: &mut FeatureCache) -> Result<()> {
        self.evict_through(usize::MAX, cache)?;
        self.arrivals.finish(cache)
    }

    /// Evicts the rows not evicted yet that may go after batch `b`.
    fn evict_through(&mut self, b: usize, cache: &mut FeatureCache) -> Result<()> {
        let rest = &self.evictions[self.evicted..];
        let due = rest.partition_point(|&(last, _)| last <= b);
        let ids: Vec<u64> = rest[..due].iter().map(|&(_, id)| id).collect();
        cache.evict(&ids)?;
        self.evicted += due;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::belady::Update;
    use crate::cache::belady::{compute_changesets_from, test_prior};
    use crate::cache::feature_cache::RowSource;
    use crate::exec::staged_init::{chunks_in_page_order, join_reader, spawn_reader};
    use proptest::prelude::*;

    /// Row of node v: 4 bytes of v.
    struct Rows;
    impl RowSource for Rows {
        fn row_bytes(&self) -> usize {
            4
        }
        fn read_rows(&self, ids: &[u64], out: &mut [u8]) -> crate::error::Result<()> {
            for (id, row) in ids.iter().zip(out.chunks_exact_mut(4)) {
                row.copy_from_slice(&(*id as u32).to_le_bytes());
            }
            Ok(())
        }
    }

    #[test]
    fn evictions_come_in_batch_then_id_order() {
        // Ascending ids, batches mixed: the counting sort's path.
        let mut rng = crate::rng::Wyrand(3);
        let ascending: Vec<(usize, u64)> = (0..5_000u64)
            .map(|i| ((rng.next_u64() % 12) as usize, i * 3))
            .collect();
        // Ids out of order, or a batch past the last: by comparison.
        let mut shuffled = ascending.clone();
        shuffled.reverse();
        let past_the_end = vec![(12usize, 1u64), (0, 2), (3, 5)];
        for mut evictions in [ascending, shuffled, past_the_end, Vec::new()] {
            let mut expected = evictions.clone();
            expected.sort_unstable();
            in_batch_order(&mut evictions, 12);
            assert_eq!(evictions, expected);
        }
    }

    fn update(ins: &[u64], outs: &[u64]) -> Update {
        Update {
            in_ids: ins.to_vec(),
            out_ids: outs.to_vec(),
            in_positions: (0..ins.len() as u64).collect(),
        }
    }

    #[test]
    fn the_plan_frees_rows_after_their_last_use_and_reads_only_untouched_rows() {
        // The cache holds 1, 2, 3, 4 and ends with 1, 2, 3, 5: batch 1
        // inserts 5 into a free slot, batch 2 evicts 4. The next init keeps
        // 1 and 5, and loads 7 (used now: left to the boundary), 8 (free to
        // read ahead) and 4 (cached now, evicted later: left too).
        let mut cache = FeatureCache::new(20, 6, 4).unwrap();
        cache.init(&[1, 2, 3, 4], &Rows).unwrap();
        let batches: [&[u64]; 3] = [&[1, 2], &[5, 7], &[2]];
        let updates = [update(&[], &[]), update(&[5], &[]), update(&[], &[4])];
        let plan = plan_read_ahead(
            &cache,
            &[1, 5, 7, 8, 4],
            &AccessSummary::new(&batches, &[1, 2, 3, 4], &[1, 2, 3, 5], &updates),
            1,
        );
        assert_eq!(plan.load, vec![8]);
        // 3 is never used: free at once; 2 after batch 2.
        assert_eq!(plan.evictions, vec![(0, 3), (2, 2)]);
        // After batch 0 the update of batch 1 still inserts one row more
        // than it evicts; batch 2 evicts one (net -1, no reserve).
        assert_eq!(plan.reserve_after, vec![1, 0, 0]);
        // In windows of two batches, 2 (last used by batch 0) may go after
        // the update at the end of its window, batch 1.
        let windowed = [update(&[], &[]), update(&[5], &[]), update(&[], &[4])];
        let windowed_batches: [&[u64]; 3] = [&[2], &[5, 7], &[1]];
        let plan = plan_read_ahead(
            &cache,
            &[1, 5, 7, 8, 4],
            &AccessSummary::new(&windowed_batches, &[1, 2, 3, 4], &[1, 2, 3, 5], &windowed),
            2,
        );
        assert_eq!(plan.evictions, vec![(0, 3), (1, 2)]);
    }

    fn trace() -> impl Strategy<Value = Vec<Vec<u64>>> {
        proptest::collection::vec(
            proptest::collection::btree_set(0u64..40, 0..12).prop_map(|s| s.into_iter().collect()),
            1..8,
        )
    }

    proptest! {
        /// A cache carried over superbatches, each reading the next one's
        /// init ahead from a batch on: every gather is exact and misses what
        /// the changesets say, every update applies, and the next
        /// superbatch's init reads only what was not read ahead, the two
        /// together being its init reads.
        #[test]
        fn reading_ahead_changes_neither_the_batches_nor_the_rows_read(
            sbs in proptest::collection::vec(trace(), 2..4),
            capacity in 1usize..16,
            start in 0usize..8,
            with_prior in any::<bool>(),
            every in 1usize..4,
        ) {
            let mut cache = FeatureCache::new(40, capacity, 4).unwrap();
            let mut carried: Vec<u64> = Vec::new();
            let prior = test_prior(with_prior);
            let all: Vec<_> = sbs
                .iter()
                .map(|b| {
                    let cs = compute_changesets_from(b, capacity, every, &carried, &prior);
                    carried = cs.final_cache.clone();
                    cs
                })
                .collect();
            let mut read_ahead = 0u64;
            for (s, (batches, cs)) in sbs.iter().zip(&all).enumerate() {
                let boundary = cache.begin_init(&cs.init).unwrap();
                prop_assert_eq!(boundary.len() as u64 + read_ahead, cs.init_reads);
                let mut rows = vec![0u8; boundary.len() * 4];
                Rows.read_rows(&boundary, &mut rows).unwrap();
                cache.fill(&boundary, &rows).unwrap();
                let ids: Vec<&[u64]> = batches.iter().map(|b| b.as_slice()).collect();
                let next = all.get(s + 1);
                std::thread::scope(|scope| -> Result<(), TestCaseError> {
                    let mut ahead = None;
                    let mut window = Vec::new();
                    for (i, b) in ids.iter().enumerate() {
                        let mut out = vec![0u8; b.len() * 4];
                        let misses = cache.gather(b, &mut out, &Rows).unwrap();
                        let mut want = vec![0u8; b.len() * 4];
                        Rows.read_rows(b, &mut want).unwrap();
                        prop_assert_eq!(&out, &want);
                        prop_assert_eq!(misses, cs.misses[i]);
                        window.extend_from_slice(&out);
                        if (i + 1) % every == 0 || i + 1 == ids.len() {
                            cache.apply(&cs.updates[i], &window).unwrap();
                            window.clear();
                        }
                        if let (None, Some(next), true) = (&ahead, next, i >= start.min(ids.len() - 1)) {
                            let summary = AccessSummary::new(&ids, &cs.init, &cs.final_cache, &cs.updates);
                            let plan = plan_read_ahead(&cache, &next.init, &summary, every);
                            read_ahead = plan.load.len() as u64;
                            let chunks = chunks_in_page_order(&plan.load, |_| 0, 0, |id| id / 3, 2);
                            let (arrivals, reader) = spawn_reader(scope, chunks, &|| Ok(Rows), |_| (), 1);
                            ahead = Some((ReadAhead::new(plan, arrivals, true), reader));
                        }
                        if let Some((a, _)) = ahead.as_mut() {
                            a.after_batch(i, &mut cache).unwrap();
                        }
                        cache.check_consistency().unwrap();
                    }
                    if let Some((mut a, reader)) = ahead {
                        a.finish(&mut cache).unwrap();
                        drop(a);
                        join_reader(reader).unwrap();
                    } else {
                        read_ahead = 0;
                    }
                    Ok(())
                })?;
                if next.is_none() {
                    prop_assert_eq!(cache.cached_ids(), cs.final_cache.clone());
                }
            }
        }
    }
}
