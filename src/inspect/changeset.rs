//! Exact batch-granular Belady changesets (Ginex §3.4, Fig. 12–13) and the
//! k-hop approximation (Ginex++ §4.2).
//!
//! Given the ids each batch of a superbatch will gather and a cache of
//! `capacity` rows, compute the cache's initial contents and, after each
//! batch, which ids to insert (with their position in the gathered rows)
//! and which to evict, so that the total number of misses is the minimum any
//! policy can achieve.
//!
//! Algorithm, in O(total accesses · log₆₄ S) time (the log term is at most
//! 4 for superbatches below 16.7M batches) and memory proportional to the
//! accesses (4 bytes each for `iters` and the dense trace) plus the
//! distinct ids:
//!
//! 1. Map global ids to dense local ids in order of first appearance (a
//!    direct table when the largest id is below 8x the accesses, else a
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
//!    K nearest next uses of `C[i] ∪ ids[i]`). Never-again misses are not
//!    inserted; never-again cached nodes are evicted first.
//!
//! Carry-over between superbatches: the cache a superbatch ends with is the
//! cache the next one starts with. [`compute_changesets_from`] takes those
//! `carried` ids as the starting state. A carried id the new superbatch
//! uses keeps its slot, keyed by its next use; one it never uses is
//! dropped at init; the free slots are filled with the earliest first uses
//! not already cached. So the init of a later superbatch reads only rows it
//! does not hold. Filling a free slot costs the same read as missing that
//! row at its first use, and nothing useful is evicted to make room, so
//! init reads plus batch misses stay the optimum from the carried start
//! (checked against an exhaustive search in the tests). With `every > 1`
//! the cache cannot change inside a window, so there `C[0]` is instead the
//! `capacity` nearest next uses of carried ∪ traced ids, carried ones
//! first on ties — or, when that reads more on this trace, the plan of a
//! fresh cache (k-hop is not optimal; see [`compute_changesets_from`]).
//!
//! With `every = k > 1`, batches are merged into windows of `k` (the union of
//! their ids) and the same algorithm runs over windows: the cache changes
//! only after the last batch of each window, and `in_positions` index the
//! concatenation of the window's batches (see `format/runtime.md`).

use crate::hash::FxMap;

/// The update applied after one batch: each `in_ids[j]` takes the slot of
/// `out_ids[j]`, its row copied from position `in_positions[j]` of the
/// rows gathered since the previous update.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Update {
    /// Ids inserted into the cache.
    pub in_ids: Vec<u64>,
    /// Ids evicted (same length as `in_ids` once the cache is full).
    pub out_ids: Vec<u64>,
    /// Row of each inserted id in the gathered rows (see [`Update`]).
    pub in_positions: Vec<u64>,
}

impl Update {
    /// True when the cache does not change.
    pub fn is_empty(&self) -> bool {
        self.in_ids.is_empty() && self.out_ids.is_empty()
    }
}

/// The changesets of one superbatch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changesets {
    /// Ids cached before the first batch (`C[0]`): the carried ids kept, then
    /// the ids loaded in order of first use. The executor keeps those it
    /// holds already, evicts the rest and reads only the missing ones.
    pub init: Vec<u64>,
    /// Rows `C[0]` holds that the carried cache did not: what init reads.
    pub init_reads: u64,
    /// One update per batch, applied after that batch is gathered (empty
    /// except at window ends when `every > 1`).
    pub updates: Vec<Update>,
    /// Misses of each batch under these changesets (the optimum for
    /// `every = 1`).
    pub misses: Vec<u64>,
    /// Accesses (ids) of each batch.
    pub accesses: Vec<u64>,
    /// The ids cached after the last update, ascending: the carried start of
    /// the next superbatch.
    pub final_cache: Vec<u64>,
}

impl Changesets {
    /// Total misses of the batches (init rows not included).
    pub fn total_misses(&self) -> u64 {
        self.misses.iter().sum()
    }

    /// Rows read: init reads plus batch misses.
    pub fn total_reads(&self) -> u64 {
        self.init_reads + self.total_misses()
    }

    /// Total accesses.
    pub fn total_accesses(&self) -> u64 {
        self.accesses.iter().sum()
    }
}

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

/// Computes the changesets of a superbatch that starts with an empty cache:
/// `batches[i]` are the ids batch `i` gathers (each id at most once per
/// batch), `capacity` the cache rows, `every` the k of the k-hop
/// approximation (1 = exact).
pub fn compute_changesets<B: AsRef<[u64]>>(
    batches: &[B],
    capacity: usize,
    every: usize,
) -> Changesets {
    compute_changesets_from(batches, capacity, every, &[])
}

/// [`compute_changesets`] for a superbatch that starts with the `carried`
/// ids cached (distinct, at most `capacity`: the previous superbatch's
/// [`Changesets::final_cache`]).
///
/// k-hop (`every > 1`) is not optimal, so no rule for `C[0]` is best on every
/// trace; it computes both the carried plan and the plan a fresh cache
/// would follow (whose init then reads only what the carried cache lacks)
/// and keeps the one that reads less, so carrying over never reads more
/// than starting empty.
pub fn compute_changesets_from<B: AsRef<[u64]>>(
    batches: &[B],
    capacity: usize,
    every: usize,
    carried: &[u64],
) -> Changesets {
    let planned = plan_from(batches, capacity, every, carried);
    if every <= 1 || carried.is_empty() {
        return planned;
    }
    let mut fresh = plan_from(batches, capacity, every, &[]);
    let held: std::collections::HashSet<u64> = carried.iter().copied().collect();
    fresh.init_reads = fresh.init.iter().filter(|id| !held.contains(id)).count() as u64;
    if fresh.total_reads() < planned.total_reads() {
        fresh
    } else {
        planned
    }
}

fn plan_from<B: AsRef<[u64]>>(
    batches: &[B],
    capacity: usize,
    every: usize,
    carried: &[u64],
) -> Changesets {
    let every = every.max(1);
    let accesses: Vec<u64> = batches.iter().map(|b| b.as_ref().len() as u64).collect();

    // Dense ids in order of first appearance (a direct table when ids are
    // small relative to the trace, else a hash map); each window as a flat
    // list of its distinct dense ids with the position of their first
    // occurrence in the window; and the dense id of every access, for the
    // per-batch miss counts.
    let total: usize = batches.iter().map(|b| b.as_ref().len()).sum();
    let max_id = batches
        .iter()
        .flat_map(|b| b.as_ref().iter().copied())
        .chain(carried.iter().copied())
        .max()
        .unwrap_or(0);
    let mut mapper = if max_id < (total as u64).saturating_mul(8).max(1 << 16) {
        DenseMap::Direct(vec![NIL; max_id as usize + 1])
    } else {
        DenseMap::Hashed(FxMap::default())
    };
    let mut global: Vec<u64> = Vec::new();
    let mut last_window: Vec<u32> = Vec::new(); // window index + 1 where last seen
    let mut win_ids: Vec<u32> = Vec::new();
    let mut win_pos: Vec<u64> = Vec::new();
    let mut win_start: Vec<usize> = vec![0];
    let mut trace: Vec<u32> = Vec::with_capacity(total);
    for (w, group) in batches.chunks(every).enumerate() {
        let mut offset = 0u64;
        for batch in group {
            for (pos, &id) in batch.as_ref().iter().enumerate() {
                let d = mapper.get_or_insert(id, || {
                    global.push(id);
                    last_window.push(0);
                    (global.len() - 1) as u32
                });
                trace.push(d);
                if last_window[d as usize] != w as u32 + 1 {
                    last_window[d as usize] = w as u32 + 1;
                    win_ids.push(d);
                    win_pos.push(offset + pos as u64);
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
    let never = num_windows; // the "never again" bucket
    let next_use = |cursor: &[u32], d: u32| -> usize {
        let c = cursor[d as usize];
        if c < start[d as usize + 1] {
            iters[c as usize] as usize
        } else {
            never
        }
    };

    // C[0]: the carried ids this superbatch uses (a carried id it never
    // uses only holds a slot, so it goes), then the free slots filled with
    // the earliest first uses (= the first dense ids) not already cached.
    let mut queue = BucketQueue::new(num_windows + 1, nodes);
    let mut cached = vec![false; nodes];
    let mut init: Vec<u64> = Vec::new();
    let mut kept = 0usize;
    let mut carried_used: Vec<u32> = Vec::new();
    for &d in &carried_dense {
        if !cached[d as usize] && next_use(&cursor, d) != never {
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
    let init_reads = (init.len() - kept) as u64;
    let mut size = init.len();
    let mut updates = vec![Update::default(); batches.len()];
    let mut misses = vec![0u64; batches.len()];
    let mut inserted_at: Vec<u32> = vec![NIL; nodes]; // index into this window's in_ids
    let mut inserted_window: Vec<u32> = vec![NIL; nodes];
    let mut miss_list: Vec<(u32, u64)> = Vec::new();
    let mut trace_at = 0usize;
    for w in 0..num_windows {
        // Per-batch misses against the cache of this window.
        let first = w * every;
        let last = (first + every).min(batches.len());
        for b in first..last {
            let len = accesses[b] as usize;
            misses[b] = trace[trace_at..trace_at + len]
                .iter()
                .filter(|&&d| !cached[d as usize])
                .count() as u64;
            trace_at += len;
        }
        let range = window(w);
        miss_list.clear();
        miss_list.extend(
            win_ids[range.clone()]
                .iter()
                .zip(&win_pos[range.clone()])
                .map(|(&d, &p)| (d, p))
                .filter(|&(d, _)| !cached[d as usize]),
        );
        for &d in &win_ids[range] {
            cursor[d as usize] += 1;
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
            if key == never || capacity == 0 {
                continue;
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
                if inserted_window[e as usize] == w as u32 {
                    // Inserted earlier in this window: give its slot to d.
                    let j = inserted_at[e as usize] as usize;
                    update.in_ids[j] = global[d as usize];
                    update.in_positions[j] = pos;
                    inserted_at[d as usize] = j as u32;
                    inserted_window[d as usize] = w as u32;
                    inserted_window[e as usize] = NIL;
                    cached[d as usize] = true;
                    queue.push(key, d);
                    continue;
                }
                update.out_ids.push(global[e as usize]);
            }
            inserted_at[d as usize] = update.in_ids.len() as u32;
            inserted_window[d as usize] = w as u32;
            update.in_ids.push(global[d as usize]);
            update.in_positions.push(pos);
            cached[d as usize] = true;
            queue.push(key, d);
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::{BTreeSet, HashMap};

    /// Independent reference: Belady by brute-force look-ahead. Cache state
    /// as a set; next use found by scanning the future; keep the `capacity`
    /// candidates with the nearest next use. Windows of `every` batches
    /// (exact for `every = 1`).
    fn reference_misses(batches: &[Vec<u64>], capacity: usize, every: usize) -> u64 {
        let windows: Vec<BTreeSet<u64>> = batches
            .chunks(every)
            .map(|g| g.iter().flatten().copied().collect())
            .collect();
        let next_use = |id: u64, after: usize| {
            windows
                .iter()
                .enumerate()
                .skip(after + 1)
                .find(|(_, w)| w.contains(&id))
                .map_or(usize::MAX, |(i, _)| i)
        };
        // C0: capacity ids with the earliest first use (ties do not change
        // the miss count).
        let mut all: Vec<u64> = windows
            .iter()
            .flatten()
            .copied()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let first_use = |id: u64| {
            windows
                .iter()
                .position(|w| w.contains(&id))
                .unwrap_or(usize::MAX)
        };
        all.sort_by_key(|&id| first_use(id));
        let mut cache: BTreeSet<u64> = all.into_iter().take(capacity).collect();
        let mut misses = 0;
        for (w, group) in batches.chunks(every).enumerate() {
            for batch in group {
                misses += batch.iter().filter(|id| !cache.contains(id)).count() as u64;
            }
            let mut cand: Vec<u64> = cache.union(&windows[w]).copied().collect();
            cand.sort_by_key(|&id| next_use(id, w));
            cache = cand
                .into_iter()
                .filter(|&id| next_use(id, w) != usize::MAX)
                .take(capacity)
                .collect();
        }
        misses
    }

    /// Exhaustive optimum over every feasible schedule (tiny cases only):
    /// any initial set of at most `capacity` ids, then after each batch any
    /// subset of (cache ∪ batch) of at most `capacity` ids.
    fn exhaustive_misses(batches: &[Vec<u64>], capacity: usize, universe: u64) -> u64 {
        let masks = cache_states(capacity, universe);
        let start = masks.iter().map(|&m| (m, 0)).collect();
        cheapest_schedule(batches, &masks, start)
    }

    /// Every cache content of at most `capacity` of `universe` ids, as bit masks.
    fn cache_states(capacity: usize, universe: u64) -> Vec<u32> {
        (0u32..1 << universe)
            .filter(|m| m.count_ones() as usize <= capacity)
            .collect()
    }

    /// The fewest reads over the batches from the start states (state ->
    /// reads so far): a batch misses what the cache lacks, after it the
    /// cache may become any state within (cache ∪ batch).
    fn cheapest_schedule(batches: &[Vec<u64>], masks: &[u32], start: HashMap<u32, u64>) -> u64 {
        let mut best = start;
        for b in batches {
            let bm = b.iter().fold(0u32, |m, &id| m | 1 << id);
            let mut next: HashMap<u32, u64> = HashMap::new();
            for (&c, &cost) in &best {
                let cost = cost + u64::from((bm & !c).count_ones());
                let pool = c | bm;
                for &n in masks {
                    if n & !pool == 0 {
                        let e = next.entry(n).or_insert(u64::MAX);
                        *e = (*e).min(cost);
                    }
                }
            }
            best = next;
        }
        best.values().copied().min().unwrap_or(0)
    }

    fn trace(max_batches: usize, max_nodes: u64) -> impl Strategy<Value = Vec<Vec<u64>>> {
        proptest::collection::vec(
            proptest::collection::btree_set(0..max_nodes, 0..max_nodes as usize)
                .prop_map(|s| s.into_iter().collect::<Vec<_>>()),
            0..=max_batches,
        )
        .prop_map(|mut batches| {
            // Shuffle within batches so positions matter.
            for (i, b) in batches.iter_mut().enumerate() {
                let k = if b.is_empty() { 0 } else { i % b.len() };
                b.rotate_left(k);
            }
            batches
        })
    }

    /// Exhaustive optimum of reads (rows loaded before the first batch plus
    /// batch misses) for a cache that starts holding `carried`: before the
    /// first batch any set of at most `capacity` ids, paying one read per id
    /// not carried; after each batch any subset of (cache ∪ batch).
    fn exhaustive_reads_from(
        batches: &[Vec<u64>],
        capacity: usize,
        universe: u64,
        carried: &[u64],
    ) -> u64 {
        let masks = cache_states(capacity, universe);
        let carried_mask = carried.iter().fold(0u32, |m, &id| m | 1 << id);
        let start = masks
            .iter()
            .map(|&m| (m, u64::from((m & !carried_mask).count_ones())))
            .collect();
        cheapest_schedule(batches, &masks, start)
    }

    /// Replays the changesets on a simulated cache: every step legal, the
    /// miss counts reproduced, positions pointing at the right ids.
    fn replay(batches: &[Vec<u64>], capacity: usize, every: usize, cs: &Changesets) {
        replay_from(batches, capacity, every, &[], cs);
    }

    /// [`replay`] from a cache that starts holding `carried`; the cache at
    /// the end must be `final_cache`.
    fn replay_from(
        batches: &[Vec<u64>],
        capacity: usize,
        every: usize,
        carried: &[u64],
        cs: &Changesets,
    ) {
        let before: BTreeSet<u64> = carried.iter().copied().collect();
        let mut cache: BTreeSet<u64> = cs.init.iter().copied().collect();
        assert_eq!(cache.len(), cs.init.len(), "init has duplicates");
        assert_eq!(
            cache.difference(&before).count() as u64,
            cs.init_reads,
            "init reads"
        );
        assert!(cache.len() <= capacity);
        let mut window_rows: Vec<u64> = Vec::new();
        for (i, batch) in batches.iter().enumerate() {
            let misses = batch.iter().filter(|id| !cache.contains(id)).count() as u64;
            assert_eq!(misses, cs.misses[i], "batch {i}");
            window_rows.extend(batch);
            let u = &cs.updates[i];
            assert_eq!(u.in_ids.len(), u.in_positions.len());
            for out in &u.out_ids {
                assert!(
                    cache.remove(out),
                    "batch {i}: evicts {out}, which is not cached"
                );
            }
            for (id, &pos) in u.in_ids.iter().zip(&u.in_positions) {
                assert_eq!(
                    window_rows[pos as usize], *id,
                    "batch {i}: in_position of {id}"
                );
                assert!(cache.insert(*id), "batch {i}: inserts {id} twice");
            }
            assert!(cache.len() <= capacity);
            if (i + 1) % every == 0 || i + 1 == batches.len() {
                window_rows.clear();
            } else {
                assert!(u.is_empty(), "k-hop: cache changed inside a window");
            }
        }
        assert_eq!(
            cache.into_iter().collect::<Vec<_>>(),
            cs.final_cache,
            "final cache"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// Carry-over: from any carried start, init rows plus misses are the
        /// exhaustive optimum, every step is legal, and the cache ends as
        /// `final_cache`.
        #[test]
        fn carried_start_reads_are_optimal(
            batches in trace(5, 6),
            capacity in 1usize..4,
            carried in proptest::collection::btree_set(0u64..6, 0..4),
        ) {
            let carried: Vec<u64> = carried.into_iter().take(capacity).collect();
            let cs = compute_changesets_from(&batches, capacity, 1, &carried);
            replay_from(&batches, capacity, 1, &carried, &cs);
            prop_assert_eq!(
                cs.total_reads(),
                exhaustive_reads_from(&batches, capacity, 6, &carried)
            );
        }

        /// Superbatches chained through `final_cache` read no more rows than
        /// superbatches that each start empty (the reset the executor did
        /// before carry-over), for exact and k-hop changesets.
        #[test]
        fn carry_over_never_reads_more_than_reset(
            sbs in proptest::collection::vec(trace(6, 30), 1..4),
            capacity in 1usize..12,
            every in 1usize..3,
        ) {
            let mut carried: Vec<u64> = Vec::new();
            let (mut chained, mut reset) = (0u64, 0u64);
            for batches in &sbs {
                let cs = compute_changesets_from(batches, capacity, every, &carried);
                replay_from(batches, capacity, every, &carried, &cs);
                chained += cs.total_reads();
                reset += compute_changesets(batches, capacity, every).total_reads();
                carried = cs.final_cache;
            }
            prop_assert!(chained <= reset, "carry-over {chained} > reset {reset}");
        }

        #[test]
        fn exact_matches_brute_force_belady(batches in trace(12, 30), capacity in 1usize..10) {
            let cs = compute_changesets(&batches, capacity, 1);
            prop_assert_eq!(cs.total_misses(), reference_misses(&batches, capacity, 1));
            replay(&batches, capacity, 1, &cs);
        }

        /// k-hop: every update is legal and lands at a window end, the
        /// per-batch misses are what the updates imply, and k = 1 is the
        /// exact algorithm. (Ties inside a window change the k-hop miss
        /// count, so there is no exact reference for k > 1.)
        #[test]
        fn k_hop_updates_are_legal_and_consistent(batches in trace(12, 30), capacity in 1usize..10, every in 1usize..5) {
            let cs = compute_changesets(&batches, capacity, every);
            replay(&batches, capacity, every, &cs);
            if every == 1 {
                prop_assert_eq!(cs.total_misses(), reference_misses(&batches, capacity, 1));
            }
        }

        /// Huge ids take the hash-map path: same changesets up to renaming.
        #[test]
        fn sparse_ids_give_the_same_changesets(batches in trace(12, 30), capacity in 1usize..10, every in 1usize..4) {
            let big = |id: u64| (id + 1) << 40;
            let sparse: Vec<Vec<u64>> = batches.iter().map(|b| b.iter().map(|&id| big(id)).collect()).collect();
            let dense = compute_changesets(&batches, capacity, every);
            let far = compute_changesets(&sparse, capacity, every);
            prop_assert_eq!(&far.misses, &dense.misses);
            prop_assert_eq!(far.init, dense.init.iter().map(|&id| big(id)).collect::<Vec<_>>());
            for (a, b) in far.updates.iter().zip(&dense.updates) {
                prop_assert_eq!(&a.in_ids, &b.in_ids.iter().map(|&id| big(id)).collect::<Vec<_>>());
                prop_assert_eq!(&a.in_positions, &b.in_positions);
            }
        }

        /// The reference itself is optimal: checked against every feasible
        /// schedule on the tiniest traces.
        #[test]
        fn reference_is_optimal(batches in trace(5, 6), capacity in 1usize..4) {
            let fast = compute_changesets(&batches, capacity, 1).total_misses();
            prop_assert_eq!(reference_misses(&batches, capacity, 1), exhaustive_misses(&batches, capacity, 6));
            prop_assert_eq!(fast, exhaustive_misses(&batches, capacity, 6));
        }
    }

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

    #[test]
    fn large_superbatch_does_not_overflow_iterations() {
        // 100k batches: iteration numbers far beyond 16 bits.
        let batches: Vec<Vec<u64>> = (0..100_000u64)
            .map(|i| vec![i % 1000, 5000 + i % 7])
            .collect();
        let cs = compute_changesets(&batches, 10, 1);
        assert_eq!(cs.updates.len(), 100_000);
        assert_eq!(cs.total_accesses(), 200_000);
        assert!(cs.total_misses() < 110_000);
    }

    #[test]
    fn everything_fits_means_no_updates() {
        let batches = vec![vec![3, 1], vec![1, 2], vec![2, 3]];
        let cs = compute_changesets(&batches, 10, 1);
        assert_eq!(cs.init, vec![3, 1, 2]);
        assert!(cs.updates.iter().all(Update::is_empty));
        assert_eq!(cs.total_misses(), 0);
    }
}
