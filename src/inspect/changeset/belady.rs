//! The changeset computation behind [`super::compute_changesets_from`] and
//! [`super::compute_changesets_paged`].
//!
//! Exact batch-granular Belady over a superbatch (or over windows of
//! `every` batches), in O(total accesses · log₆₄ S) time (the log term is
//! at most 4 for superbatches below 16.7M batches) and memory proportional
//! to the accesses (4 bytes each for `iters` and the dense trace, which for
//! exact windows is the list of each window's ids; k-hop adds 8 for the
//! positions and the per-batch trace) plus the distinct ids (~25 bytes
//! each):
//!
//! 1. Map global ids to dense local ids in order of first appearance (a
//!    direct table when the largest id is below 2x the accesses, else a
//!    hash map); the
//!    first `capacity` dense ids are the ones with the earliest first use,
//!    so `C[0]` is simply dense ids `0..capacity`.
//! 2. Two counting passes build the paper's `iters` (every node's access
//!    iterations, sorted, in CSR form) and a cursor per node, so a node's
//!    next use after the current iteration is one array read.
//! 3. The cached nodes sit in a bucket queue indexed by next-use iteration
//!    (intrusive linked lists, plus a bucket for "never again"), with a
//!    64-ary occupancy bitmap to find the farthest next use in at most
//!    log₆₄ S word scans. At iteration `i` the bucket `i` holds exactly the
//!    cache hits; they are re-keyed to their next use. Each miss whose next
//!    use is finite then replaces the cached node with the farthest next use
//!    if that is strictly farther (streaming top-K, so the result is the
//!    K nearest next uses of `C[i] ∪ ids[i]`). Never-again cached nodes
//!    are evicted first. With no [`ReusePrior`] never-again misses are not
//!    inserted; with one, "never again" is a run of buckets past the last
//!    iteration, one per prior rank, so never-again nodes compete for the
//!    slots no finite next use wants, nearest rank first, and the carried
//!    ids the superbatch does not use keep the slots its init leaves free.
//! 4. With page companions (exact windows only), the rows on the pages a
//!    batch's misses read that the batch does not gather, that are not
//!    cached and that the superbatch uses later join that batch's misses
//!    as candidates, at positions past the batch's rows (found through the
//!    dense ids sorted by global id, 4 bytes a node).

use super::prior::{ReusePrior, RANKS};
use super::{Changesets, PageGroups, Update};
use crate::hash::FxMap;

/// Global id to dense id.
enum DenseMap {
    /// A table indexed by global id (ids small relative to the trace).
    Direct(Vec<u32>),
    /// A hash map otherwise.
    Hashed(FxMap<u64, u32>),
}

impl DenseMap {
    fn get_or_insert(&mut self, id: u64, new: impl FnOnce() -> u32) -> u32 {
        match self {
            DenseMap::Direct(t) => {
                let slot = &mut t[id as usize];
                if *slot == NIL {
                    *slot = new();
                }
                *slot
            }
            DenseMap::Hashed(m) => *m.entry(id).or_insert_with(new),
        }
    }
}

const NIL: u32 = u32::MAX;

/// Occupancy bitmap over buckets with summary levels, for find-max.
struct Occupancy {
    levels: Vec<Vec<u64>>, // levels[0] = one bit per bucket
}

impl Occupancy {
    fn new(buckets: usize) -> Self {
        let mut levels = Vec::new();
        let mut n = buckets.max(1);
        loop {
            let words = n.div_ceil(64);
            levels.push(vec![0u64; words]);
            if words == 1 {
                break;
            }
            n = words;
        }
        Occupancy { levels }
    }

    fn set(&mut self, mut i: usize) {
        for level in &mut self.levels {
            let (w, b) = (i / 64, i % 64);
            let was = level[w];
            level[w] |= 1 << b;
            if was != 0 {
                break;
            }
            i = w;
        }
    }

    fn clear(&mut self, mut i: usize) {
        for level in &mut self.levels {
            let (w, b) = (i / 64, i % 64);
            level[w] &= !(1 << b);
            if level[w] != 0 {
                break;
            }
            i = w;
        }
    }

    /// The highest set bucket, if any.
    fn max(&self) -> Option<usize> {
        let mut i = self.levels.last()?[0].checked_ilog2()? as usize;
        for level in self.levels.iter().rev().skip(1) {
            i = i * 64 + level[i].ilog2() as usize;
        }
        Some(i)
    }
}

/// Nodes of the cache grouped by next-use iteration.
struct BucketQueue {
    head: Vec<u32>,
    next: Vec<u32>,
    occupancy: Occupancy,
}

impl BucketQueue {
    fn new(buckets: usize, nodes: usize) -> Self {
        BucketQueue {
            head: vec![NIL; buckets],
            next: vec![NIL; nodes],
            occupancy: Occupancy::new(buckets),
        }
    }

    fn push(&mut self, bucket: usize, node: u32) {
        if self.head[bucket] == NIL {
            self.occupancy.set(bucket);
        }
        self.next[node as usize] = self.head[bucket];
        self.head[bucket] = node;
    }

    /// Removes and returns every node of `bucket`, as a linked list head.
    fn take(&mut self, bucket: usize) -> u32 {
        let h = std::mem::replace(&mut self.head[bucket], NIL);
        if h != NIL {
            self.occupancy.clear(bucket);
        }
        h
    }

    fn pop(&mut self, bucket: usize) -> u32 {
        let h = self.head[bucket];
        self.head[bucket] = self.next[h as usize];
        if self.head[bucket] == NIL {
            self.occupancy.clear(bucket);
        }
        h
    }
}

pub(super) fn plan_from<B: AsRef<[u64]>>(
    batches: &[B],
    capacity: usize,
    every: usize,
    carried: &[u64],
    prior: &ReusePrior,
    pages: Option<PageGroups>,
) -> Changesets {
    // Page companions need exact windows (window w is batch w).
    let pages = pages.filter(|p| every == 1 && p.rows_per_page > 1);
    let every = every.max(1);
    let accesses: Vec<u64> = batches.iter().map(|b| b.as_ref().len() as u64).collect();

    // Dense ids in order of first appearance (a direct table when ids are
    // small relative to the trace, else a hash map); each window as a flat
    // list of its distinct dense ids. With windows of several batches
    // (k-hop) also the position of each one's first occurrence in the
    // window and the dense id of every access, for the per-batch miss
    // counts; an exact window is one batch of distinct ids, so both are
    // its list itself (4 bytes an access in all, with `iters`).
    let total: usize = batches.iter().map(|b| b.as_ref().len()).sum();
    let max_id = batches
        .iter()
        .flat_map(|b| b.as_ref().iter().copied())
        .chain(carried.iter().copied())
        .max()
        .unwrap_or(0);
    // The table takes 4 bytes a node, a hash map ~16 a distinct id: the
    // table only while it is at most 8 bytes an access.
    let mut mapper = if max_id < (total as u64).saturating_mul(2).max(1 << 16) {
        DenseMap::Direct(vec![NIL; max_id as usize + 1])
    } else {
        DenseMap::Hashed(FxMap::default())
    };
    let mut global: Vec<u64> = Vec::new();
    let mut last_window: Vec<u32> = Vec::new(); // window index + 1 where last seen
    let mut win_ids: Vec<u32> = Vec::new();
    let mut win_pos: Vec<u32> = Vec::new();
    let mut win_start: Vec<usize> = vec![0];
    let windowed = every > 1;
    let mut trace: Vec<u32> = Vec::with_capacity(if windowed { total } else { 0 });
    for (w, group) in batches.chunks(every).enumerate() {
        let mut offset = 0u64;
        for batch in group {
            for (pos, &id) in batch.as_ref().iter().enumerate() {
                let d = mapper.get_or_insert(id, || {
                    global.push(id);
                    last_window.push(0);
                    (global.len() - 1) as u32
                });
                if windowed {
                    trace.push(d);
                }
                if last_window[d as usize] != w as u32 + 1 {
                    last_window[d as usize] = w as u32 + 1;
                    win_ids.push(d);
                    if windowed {
                        win_pos.push((offset + pos as u64) as u32);
                    }
                }
            }
            offset += batch.as_ref().len() as u64;
        }
        win_start.push(win_ids.len());
    }
    // Carried ids the superbatch never touches get dense ids after every
    // traced one: they have no use, so they are the first evicted.
    let traced = global.len();
    let carried_dense: Vec<u32> = carried
        .iter()
        .map(|&id| {
            mapper.get_or_insert(id, || {
                global.push(id);
                (global.len() - 1) as u32
            })
        })
        .collect();
    drop(last_window);
    drop(mapper);
    // Page companions look rows up by global id: the dense ids sorted by
    // it (4 bytes a node; a page's rows are a run of it).
    let by_global: Vec<u32> = match pages {
        Some(_) => {
            let mut v: Vec<u32> = (0..global.len() as u32).collect();
            v.sort_unstable_by_key(|&d| global[d as usize]);
            v
        }
        None => Vec::new(),
    };
    let nodes = global.len();
    let num_windows = win_start.len() - 1;
    let window = |w: usize| win_start[w]..win_start[w + 1];

    // Two counting passes: iters in CSR form.
    let mut start = vec![0u32; nodes + 1];
    for &d in &win_ids {
        start[d as usize + 1] += 1;
    }
    for i in 0..nodes {
        start[i + 1] += start[i];
    }
    let mut cursor: Vec<u32> = start[..nodes].to_vec();
    let mut iters = vec![0u32; start[nodes] as usize];
    for w in 0..num_windows {
        for &d in &win_ids[window(w)] {
            iters[cursor[d as usize] as usize] = w as u32;
            cursor[d as usize] += 1;
        }
    }
    cursor.copy_from_slice(&start[..nodes]);
    // Nodes with no use left in the superbatch go to the "never again"
    // buckets `never..never + RANKS`, by their prior rank: the lower the
    // rank (the likelier a reuse after the superbatch), the nearer the
    // bucket, so the last evicted. Without a prior they share the last.
    let never = num_windows;
    let next_use = |cursor: &[u32], d: u32| -> usize {
        let c = cursor[d as usize];
        if c < start[d as usize + 1] {
            iters[c as usize] as usize
        } else {
            never + prior.rank(global[d as usize])
        }
    };

    // C[0]: the carried ids this superbatch uses, then the free slots
    // filled with the earliest first uses (= the first dense ids) not
    // already cached; a carried id it never uses only holds a slot, so it
    // goes — unless, with a prior, a slot is still free (below).
    let mut queue = BucketQueue::new(num_windows + RANKS, nodes);
    let mut cached = vec![false; nodes];
    let mut init: Vec<u64> = Vec::new();
    let mut kept = 0usize;
    let mut carried_used: Vec<u32> = Vec::new();
    for &d in &carried_dense {
        if !cached[d as usize] && next_use(&cursor, d) < never {
            cached[d as usize] = true; // marks "seen" until C[0] is chosen
            carried_used.push(d);
        }
    }
    for &d in &carried_used {
        cached[d as usize] = false;
    }
    let mut take = |d: u32, carried: bool, cached: &mut Vec<bool>, init: &mut Vec<u64>| {
        cached[d as usize] = true;
        queue.push(next_use(&cursor, d), d);
        init.push(global[d as usize]);
        kept += usize::from(carried);
    };
    if every == 1 {
        // Exact: keep every carried id that is used (the updates evict by
        // next use later, bypassing rows not worth a slot), fill the rest.
        for &d in carried_used.iter().take(capacity) {
            take(d, true, &mut cached, &mut init);
        }
        for d in 0..traced as u32 {
            if init.len() >= capacity {
                break;
            }
            if !cached[d as usize] {
                take(d, false, &mut cached, &mut init);
            }
        }
    } else {
        // k-hop: the cache cannot change inside a window, so C[0] is the
        // `capacity` nearest next uses of carried ∪ traced (carried first on
        // ties: they cost no read). Traced dense ids are already in order
        // of first use; merge the carried ones in.
        carried_used.sort_by_key(|&d| next_use(&cursor, d));
        let is_carried: FxMap<u32, ()> = carried_used.iter().map(|&d| (d, ())).collect();
        let (mut c, mut t) = (0usize, 0u32);
        while init.len() < capacity {
            while (t as usize) < traced && is_carried.contains_key(&t) {
                t += 1;
            }
            let ck = carried_used.get(c).map(|&d| next_use(&cursor, d));
            let tk = ((t as usize) < traced).then(|| next_use(&cursor, t));
            match (ck, tk) {
                (Some(a), Some(b)) if a <= b => {
                    take(carried_used[c], true, &mut cached, &mut init);
                    c += 1;
                }
                (_, Some(_)) => {
                    take(t, false, &mut cached, &mut init);
                    t += 1;
                }
                (Some(_), None) => {
                    take(carried_used[c], true, &mut cached, &mut init);
                    c += 1;
                }
                (None, None) => break,
            }
        }
    }
    // Slots the superbatch leaves free keep the carried ids it does not
    // use, nearest beyond-horizon key first: they cost no read.
    if prior.is_some() && init.len() < capacity {
        let mut unused: Vec<u32> = carried_dense
            .iter()
            .copied()
            .filter(|&d| !cached[d as usize])
            .collect();
        unused.sort_by_key(|&d| next_use(&cursor, d));
        for d in unused.into_iter().take(capacity - init.len()) {
            take(d, true, &mut cached, &mut init);
        }
    }
    let init_reads = (init.len() - kept) as u64;
    let mut size = init.len();
    let mut updates = vec![Update::default(); batches.len()];
    let mut misses = vec![0u64; batches.len()];
    // Nodes inserted by this window's update: index into its in_ids.
    let mut inserted: FxMap<u32, u32> = FxMap::default();
    let mut miss_list: Vec<(u32, u64)> = Vec::new();
    let mut miss_pages: Vec<u64> = Vec::new();
    let mut trace_at = 0usize;
    for w in 0..num_windows {
        // Per-batch misses against the cache of this window.
        let first = w * every;
        let last = (first + every).min(batches.len());
        let range = window(w);
        let missed = |ids: &[u32]| ids.iter().filter(|&&d| !cached[d as usize]).count() as u64;
        if windowed {
            for b in first..last {
                let len = accesses[b] as usize;
                misses[b] = missed(&trace[trace_at..trace_at + len]);
                trace_at += len;
            }
        } else {
            misses[w] = missed(&win_ids[range.clone()]);
        }
        miss_list.clear();
        miss_list.extend(
            win_ids[range.clone()]
                .iter()
                .enumerate()
                .map(|(k, &d)| match windowed {
                    true => (d, u64::from(win_pos[range.start + k])),
                    false => (d, k as u64),
                })
                .filter(|&(d, _)| !cached[d as usize]),
        );
        inserted.clear();
        for &d in &win_ids[range] {
            cursor[d as usize] += 1;
        }
        // Page companions (exact windows: window w is batch w): rows on
        // the pages this batch's misses read that the batch does not
        // gather, are not cached and are used later in the superbatch.
        // They arrive with those pages, so they compete for slots like
        // misses, at positions past the batch's rows.
        let batch_len = accesses[w];
        if let Some(groups) = pages {
            miss_pages.clear();
            miss_pages.extend(
                miss_list
                    .iter()
                    .map(|&(d, _)| global[d as usize] / groups.rows_per_page),
            );
            miss_pages.sort_unstable();
            miss_pages.dedup();
            let mut companions = 0u64;
            'pages: for &page in &miss_pages {
                let first = page * groups.rows_per_page;
                let from = by_global.partition_point(|&d| global[d as usize] < first);
                let on_page = by_global[from..]
                    .iter()
                    .take_while(|&&d| global[d as usize] < first + groups.rows_per_page);
                for &d in on_page {
                    let c = cursor[d as usize];
                    let in_batch = c > start[d as usize] && iters[c as usize - 1] as usize == w;
                    if cached[d as usize] || in_batch || next_use(&cursor, d) >= never {
                        continue;
                    }
                    // The executor reads companions into its miss buffer,
                    // which holds a batch's rows: at most the rows the
                    // batch does not miss.
                    if companions + misses[w] >= batch_len {
                        break 'pages;
                    }
                    miss_list.push((d, batch_len + companions));
                    companions += 1;
                }
            }
        }
        // Hits: exactly the nodes in bucket w. Re-key them.
        let mut h = queue.take(w);
        while h != NIL {
            let nxt = queue.next[h as usize];
            queue.push(next_use(&cursor, h), h);
            h = nxt;
        }
        let update = &mut updates[last - 1];
        for &(d, pos) in &miss_list {
            let key = next_use(&cursor, d);
            if capacity == 0 || (key >= never && !prior.is_some()) {
                continue; // no use left and no prior: not worth a slot
            }
            if size < capacity {
                size += 1;
            } else {
                let far = queue.occupancy.max().unwrap_or(never);
                if far <= key {
                    continue; // the cached node with the farthest use is at least as near
                }
                let e = queue.pop(far);
                cached[e as usize] = false;
                if let Some(j) = inserted.remove(&e) {
                    // Inserted earlier in this window: give its slot to d.
                    let j = j as usize;
                    update.in_ids[j] = global[d as usize];
                    update.in_positions[j] = pos;
                    inserted.insert(d, j as u32);
                    cached[d as usize] = true;
                    queue.push(key, d);
                    continue;
                }
                update.out_ids.push(global[e as usize]);
            }
            inserted.insert(d, update.in_ids.len() as u32);
            update.in_ids.push(global[d as usize]);
            update.in_positions.push(pos);
            cached[d as usize] = true;
            queue.push(key, d);
        }
        if pages.is_some() {
            number_companions(update, batch_len);
        }
    }
    let mut final_cache: Vec<u64> = (0..nodes)
        .filter(|&d| cached[d])
        .map(|d| global[d])
        .collect();
    final_cache.sort_unstable();
    Changesets {
        init,
        init_reads,
        updates,
        misses,
        accesses,
        final_cache,
        paged: pages.is_some(),
        page_reads: None,
    }
}

/// Renumbers the companion positions of `update` (those at or past the
/// batch's `batch_len` rows) to `batch_len, batch_len + 1, …` in their
/// order: candidates that did not get a slot leave no gap, so the executor
/// reads exactly the companions the update inserts.
fn number_companions(update: &mut Update, batch_len: u64) {
    let mut at: Vec<usize> = (0..update.in_positions.len())
        .filter(|&j| update.in_positions[j] >= batch_len)
        .collect();
    at.sort_by_key(|&j| update.in_positions[j]);
    for (rank, j) in at.into_iter().enumerate() {
        update.in_positions[j] = batch_len + rank as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn occupancy_finds_the_max_across_levels() {
        let mut o = Occupancy::new(300_000);
        assert_eq!(o.max(), None);
        for i in [5, 64, 4095, 4096, 299_999, 70_000] {
            o.set(i);
        }
        assert_eq!(o.max(), Some(299_999));
        o.clear(299_999);
        assert_eq!(o.max(), Some(70_000));
        o.clear(70_000);
        o.clear(4096);
        assert_eq!(o.max(), Some(4095));
        for i in [5, 64, 4095] {
            o.clear(i);
        }
        assert_eq!(o.max(), None);
    }
}
