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
//!    direct table when the largest id is below 4x the accesses, else a
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
use super::{max_page_companions, Changesets, PageGroups, Update};
use rustc_hash::{FxHashMap, FxHashSet};

/// Global id to dense id.
enum DenseMap {
    /// A table indexed by global id (ids small relative to the trace).
    Direct(Vec<u32>),
    /// A hash map otherwise.
    Hashed(FxHashMap<u64, u32>),
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
    let pages = pages.filter(|_| every == 1);
    let paged = pages.is_some();
    let every = every.max(1);
    let accesses: Vec<u64> = batches.iter().map(|b| b.as_ref().len() as u64).collect();
    let trace = DenseTrace::build(batches, every, carried);
    let by_global = match pages {
        Some(_) => trace.sorted_by_global(),
        None => Vec::new(),
    };
    let uses = NextUses::count(&trace, prior);
    let mut cache = Cache {
        queue: BucketQueue::new(trace.num_windows() + RANKS, trace.global.len()),
        cached: vec![false; trace.global.len()],
    };
    let (init, kept) = initial_cache(&trace, &uses, &mut cache, capacity, every);
    let mut replay = Replay {
        trace: &trace,
        uses,
        cache,
        capacity,
        every,
        accesses: &accesses,
        pages,
        by_global,
        size: init.len(),
        updates: vec![Update::default(); batches.len()],
        misses: vec![0u64; batches.len()],
        inserted: FxHashMap::default(),
        miss_list: Vec::new(),
        miss_pages: Vec::new(),
        trace_at: 0,
    };
    for w in 0..trace.num_windows() {
        replay.window(w);
    }
    let Replay {
        cache,
        updates,
        misses,
        ..
    } = replay;
    let mut final_cache: Vec<u64> = (0..trace.global.len())
        .filter(|&d| cache.cached[d])
        .map(|d| trace.global[d])
        .collect();
    final_cache.sort_unstable();
    Changesets {
        init_reads: (init.len() - kept) as u64,
        init,
        updates,
        misses,
        accesses,
        final_cache,
        paged,
        page_reads: None,
    }
}

/// A superbatch's accesses in dense ids (step 1 of the module docs).
struct DenseTrace {
    /// The global id of every dense id: the traced ones in order of first
    /// use, then the carried ones the superbatch never touches.
    global: Vec<u64>,
    /// How many dense ids the superbatch traces (the first ones).
    traced: usize,
    /// The dense id of every carried id, in the caller's order.
    carried: Vec<u32>,
    /// Each window's distinct dense ids, one flat list.
    win_ids: Vec<u32>,
    /// Where each window starts in `win_ids` (one more entry than windows).
    win_start: Vec<usize>,
    /// Windows of several batches (k-hop): `win_pos` and `trace` are kept.
    windowed: bool,
    /// k-hop: the position of each of `win_ids` first occurrence in its
    /// window.
    win_pos: Vec<u32>,
    /// k-hop: the dense id of every access, for the per-batch miss counts.
    trace: Vec<u32>,
}

impl DenseTrace {
    /// Dense ids in order of first appearance (a direct table when ids are
    /// small relative to the trace, else a hash map); each window as a flat
    /// list of its distinct dense ids. With windows of several batches
    /// (k-hop) also the position of each one's first occurrence in the
    /// window and the dense id of every access, for the per-batch miss
    /// counts; an exact window is one batch of distinct ids, so both are
    /// its list itself (4 bytes an access in all, with `iters`).
    fn build<B: AsRef<[u64]>>(batches: &[B], every: usize, carried: &[u64]) -> DenseTrace {
        let total: usize = batches.iter().map(|b| b.as_ref().len()).sum();
        let max_id = batches
            .iter()
            .flat_map(|b| b.as_ref().iter().copied())
            .chain(carried.iter().copied())
            .max()
            .unwrap_or(0);
        // The table takes 4 bytes a node, a hash map 16–32 a distinct id
        // (12 bytes an entry and its control byte, in a table at most 7/8
        // full and up to twice that after its last doubling): the table
        // while it is at most 16 bytes an access. A superbatch of a large
        // store spans most of its ids, so this is the table there, which
        // is several times faster than hashing every access.
        let direct = max_id < (total as u64).saturating_mul(4).max(1 << 16);
        Self::build_with(batches, every, carried, direct.then_some(max_id))
    }

    /// [`build`](Self::build) with a direct table over ids up to `max_id`
    /// (the largest id of the trace and `carried`), or a hash map (None).
    fn build_with<B: AsRef<[u64]>>(
        batches: &[B],
        every: usize,
        carried: &[u64],
        max_id: Option<u64>,
    ) -> DenseTrace {
        let total: usize = batches.iter().map(|b| b.as_ref().len()).sum();
        let mut mapper = match max_id {
            Some(max_id) => DenseMap::Direct(vec![NIL; max_id as usize + 1]),
            None => DenseMap::Hashed(FxHashMap::default()),
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
        let carried: Vec<u32> = carried
            .iter()
            .map(|&id| {
                mapper.get_or_insert(id, || {
                    global.push(id);
                    (global.len() - 1) as u32
                })
            })
            .collect();
        DenseTrace {
            global,
            traced,
            carried,
            win_ids,
            win_start,
            windowed,
            win_pos,
            trace,
        }
    }

    fn num_windows(&self) -> usize {
        self.win_start.len() - 1
    }

    /// Window `w`'s range of `win_ids`.
    fn window(&self, w: usize) -> std::ops::Range<usize> {
        self.win_start[w]..self.win_start[w + 1]
    }

    /// The dense ids sorted by global id, for page companions to look rows
    /// up by global id (4 bytes a node; a page's rows are a run of it).
    fn sorted_by_global(&self) -> Vec<u32> {
        let mut v: Vec<u32> = (0..self.global.len() as u32).collect();
        v.sort_unstable_by_key(|&d| self.global[d as usize]);
        v
    }
}

/// Every node's uses (step 2 of the module docs): `iters` in CSR form and
/// a cursor per node at its next use.
struct NextUses<'a> {
    start: Vec<u32>,
    iters: Vec<u32>,
    cursor: Vec<u32>,
    /// The first "never again" bucket: nodes with no use left in the
    /// superbatch go to the buckets `never..never + RANKS`, by their prior
    /// rank: the lower the rank (the likelier a reuse after the
    /// superbatch), the nearer the bucket, so the last evicted. Without a
    /// prior they share the last.
    never: usize,
    prior: &'a ReusePrior,
    global: &'a [u64],
}

impl<'a> NextUses<'a> {
    /// Two counting passes over the windows of `trace`.
    fn count(trace: &'a DenseTrace, prior: &'a ReusePrior) -> NextUses<'a> {
        let nodes = trace.global.len();
        let mut start = vec![0u32; nodes + 1];
        for &d in &trace.win_ids {
            start[d as usize + 1] += 1;
        }
        for i in 0..nodes {
            start[i + 1] += start[i];
        }
        let mut cursor: Vec<u32> = start[..nodes].to_vec();
        let mut iters = vec![0u32; start[nodes] as usize];
        for w in 0..trace.num_windows() {
            for &d in &trace.win_ids[trace.window(w)] {
                iters[cursor[d as usize] as usize] = w as u32;
                cursor[d as usize] += 1;
            }
        }
        cursor.copy_from_slice(&start[..nodes]);
        NextUses {
            start,
            iters,
            cursor,
            never: trace.num_windows(),
            prior,
            global: &trace.global,
        }
    }

    /// The bucket of `d`: its next use, or its "never again" bucket.
    fn next(&self, d: u32) -> usize {
        let c = self.cursor[d as usize];
        if c < self.start[d as usize + 1] {
            self.iters[c as usize] as usize
        } else {
            self.never + self.prior.rank(self.global[d as usize])
        }
    }

    /// Moves the cursors of `ids` past their use in the current window.
    fn advance(&mut self, ids: &[u32]) {
        for &d in ids {
            self.cursor[d as usize] += 1;
        }
    }

    /// Whether the last use `d`'s cursor has passed is in window `w`.
    fn used_in(&self, d: u32, w: usize) -> bool {
        let c = self.cursor[d as usize];
        c > self.start[d as usize] && self.iters[c as usize - 1] as usize == w
    }
}

/// The cache during the replay: which dense ids it holds, by next use.
struct Cache {
    queue: BucketQueue,
    cached: Vec<bool>,
}

impl Cache {
    fn insert(&mut self, d: u32, key: usize) {
        self.cached[d as usize] = true;
        self.queue.push(key, d);
    }
}

/// Chooses C[0] into `cache`: the carried ids this superbatch uses, then
/// the free slots filled with the earliest first uses (= the first dense
/// ids) not already cached; a carried id it never uses only holds a slot,
/// so it goes — unless, with a prior, a slot is still free. Returns C[0]'s
/// global ids and how many of them were carried.
fn initial_cache(
    trace: &DenseTrace,
    uses: &NextUses,
    cache: &mut Cache,
    capacity: usize,
    every: usize,
) -> (Vec<u64>, usize) {
    let mut carried_used: Vec<u32> = Vec::new();
    for &d in &trace.carried {
        if !cache.cached[d as usize] && uses.next(d) < uses.never {
            cache.cached[d as usize] = true; // marks "seen" until C[0] is chosen
            carried_used.push(d);
        }
    }
    for &d in &carried_used {
        cache.cached[d as usize] = false;
    }
    let mut fill = Fill {
        uses,
        cache,
        init: Vec::new(),
        kept: 0,
    };
    if every == 1 {
        fill.exact(&carried_used, trace.traced, capacity);
    } else {
        fill.nearest(carried_used, trace.traced, capacity);
    }
    // Slots the superbatch leaves free keep the carried ids it does not
    // use, nearest beyond-horizon key first: they cost no read.
    if uses.prior.is_some() && fill.init.len() < capacity {
        let mut unused: Vec<u32> = trace
            .carried
            .iter()
            .copied()
            .filter(|&d| !fill.cache.cached[d as usize])
            .collect();
        unused.sort_by_key(|&d| uses.next(d));
        for d in unused.into_iter().take(capacity - fill.init.len()) {
            fill.take(d, true);
        }
    }
    (fill.init, fill.kept)
}

/// C[0] as it is filled.
struct Fill<'a, 'u> {
    uses: &'a NextUses<'u>,
    cache: &'a mut Cache,
    init: Vec<u64>,
    /// How many of `init` were carried.
    kept: usize,
}

impl Fill<'_, '_> {
    fn take(&mut self, d: u32, carried: bool) {
        self.cache.insert(d, self.uses.next(d));
        self.init.push(self.uses.global[d as usize]);
        self.kept += usize::from(carried);
    }

    /// Exact: keep every carried id that is used (the updates evict by next
    /// use later, bypassing rows not worth a slot), fill the rest.
    fn exact(&mut self, carried_used: &[u32], traced: usize, capacity: usize) {
        for &d in carried_used.iter().take(capacity) {
            self.take(d, true);
        }
        for d in 0..traced as u32 {
            if self.init.len() >= capacity {
                break;
            }
            if !self.cache.cached[d as usize] {
                self.take(d, false);
            }
        }
    }

    /// k-hop: the cache cannot change inside a window, so C[0] is the
    /// `capacity` nearest next uses of carried ∪ traced (carried first on
    /// ties: they cost no read). Traced dense ids are already in order of
    /// first use; merge the carried ones in.
    fn nearest(&mut self, mut carried_used: Vec<u32>, traced: usize, capacity: usize) {
        carried_used.sort_by_key(|&d| self.uses.next(d));
        let is_carried: FxHashSet<u32> = carried_used.iter().copied().collect();
        let (mut c, mut t) = (0usize, 0u32);
        while self.init.len() < capacity {
            while (t as usize) < traced && is_carried.contains(&t) {
                t += 1;
            }
            let ck = carried_used.get(c).map(|&d| self.uses.next(d));
            let tk = ((t as usize) < traced).then(|| self.uses.next(t));
            match (ck, tk) {
                (Some(a), Some(b)) if a <= b => {
                    self.take(carried_used[c], true);
                    c += 1;
                }
                (_, Some(_)) => {
                    self.take(t, false);
                    t += 1;
                }
                (Some(_), None) => {
                    self.take(carried_used[c], true);
                    c += 1;
                }
                (None, None) => break,
            }
        }
    }
}

/// The replay of the windows over the cache (steps 3 and 4 of the module
/// docs), building the updates and the per-batch miss counts.
struct Replay<'a> {
    trace: &'a DenseTrace,
    uses: NextUses<'a>,
    cache: Cache,
    capacity: usize,
    every: usize,
    accesses: &'a [u64],
    pages: Option<PageGroups>,
    by_global: Vec<u32>,
    /// Slots in use.
    size: usize,
    updates: Vec<Update>,
    misses: Vec<u64>,
    /// Nodes inserted by this window's update: index into its in_ids.
    inserted: FxHashMap<u32, u32>,
    /// This window's candidates: dense id and position.
    miss_list: Vec<(u32, u64)>,
    miss_pages: Vec<u64>,
    /// k-hop: where the next batch starts in `trace.trace`.
    trace_at: usize,
}

impl Replay<'_> {
    fn window(&mut self, w: usize) {
        let first = w * self.every;
        let last = (first + self.every).min(self.misses.len());
        self.count_misses(w, first..last);
        self.collect_misses(w);
        self.uses.advance(&self.trace.win_ids[self.trace.window(w)]);
        if let Some(groups) = self.pages.clone() {
            self.add_companions(w, &groups);
        }
        self.rekey_hits(w);
        self.admit_misses(last - 1);
        if self.pages.is_some() {
            number_companions(&mut self.updates[last - 1], self.accesses[w]);
        }
    }

    /// Per-batch misses against the cache of window `w`.
    fn count_misses(&mut self, w: usize, batches: std::ops::Range<usize>) {
        let cached = &self.cache.cached;
        let missed = |ids: &[u32]| ids.iter().filter(|&&d| !cached[d as usize]).count() as u64;
        if self.trace.windowed {
            for b in batches {
                let len = self.accesses[b] as usize;
                self.misses[b] = missed(&self.trace.trace[self.trace_at..self.trace_at + len]);
                self.trace_at += len;
            }
        } else {
            self.misses[w] = missed(&self.trace.win_ids[self.trace.window(w)]);
        }
    }

    /// Window `w`'s ids that are not cached, with their positions.
    fn collect_misses(&mut self, w: usize) {
        let range = self.trace.window(w);
        let (cached, win_pos) = (&self.cache.cached, &self.trace.win_pos);
        let windowed = self.trace.windowed;
        self.miss_list.clear();
        self.miss_list.extend(
            self.trace.win_ids[range.clone()]
                .iter()
                .enumerate()
                .map(|(k, &d)| match windowed {
                    true => (d, u64::from(win_pos[range.start + k])),
                    false => (d, k as u64),
                })
                .filter(|&(d, _)| !cached[d as usize]),
        );
    }

    /// Page companions (exact windows: window w is batch w): rows on the
    /// pages this batch's misses read that the batch does not gather, are
    /// not cached and are used later in the superbatch. They arrive with
    /// those pages, so they compete for slots like misses, at positions
    /// past the batch's rows.
    fn add_companions(&mut self, w: usize, groups: &PageGroups) {
        let batch_len = self.accesses[w];
        let global = &self.trace.global;
        self.miss_pages.clear();
        self.miss_pages.extend(
            self.miss_list
                .iter()
                .map(|&(d, _)| groups.page_of(global[d as usize])),
        );
        self.miss_pages.sort_unstable();
        self.miss_pages.dedup();
        let mut companions = 0u64;
        'pages: for &page in &self.miss_pages {
            let rows = groups.rows_on(page);
            let from = self
                .by_global
                .partition_point(|&d| global[d as usize] < rows.start);
            let on_page = self.by_global[from..]
                .iter()
                .take_while(|&&d| global[d as usize] < rows.end);
            for &d in on_page {
                if self.cache.cached[d as usize]
                    || self.uses.used_in(d, w)
                    || self.uses.next(d) >= self.uses.never
                {
                    continue;
                }
                // The executor reads companions into a buffer of their
                // own, priced at a share of the batch's rows.
                if companions >= max_page_companions(batch_len) {
                    break 'pages;
                }
                self.miss_list.push((d, batch_len + companions));
                companions += 1;
            }
        }
    }

    /// Hits: exactly the nodes in bucket `w`. Re-keys them.
    fn rekey_hits(&mut self, w: usize) {
        let mut h = self.cache.queue.take(w);
        while h != NIL {
            let nxt = self.cache.queue.next[h as usize];
            self.cache.queue.push(self.uses.next(h), h);
            h = nxt;
        }
    }

    /// Admits the window's candidates into the cache, recording the
    /// insertions and evictions in update `at`.
    fn admit_misses(&mut self, at: usize) {
        self.inserted.clear();
        let update = &mut self.updates[at];
        let global = &self.trace.global;
        let never = self.uses.never;
        for &(d, pos) in &self.miss_list {
            let key = self.uses.next(d);
            if self.capacity == 0 || (key >= never && !self.uses.prior.is_some()) {
                continue; // no use left and no prior: not worth a slot
            }
            if self.size < self.capacity {
                self.size += 1;
            } else {
                let far = self.cache.queue.occupancy.max().unwrap_or(never);
                if far <= key {
                    continue; // the cached node with the farthest use is at least as near
                }
                let e = self.cache.queue.pop(far);
                self.cache.cached[e as usize] = false;
                if let Some(j) = self.inserted.remove(&e) {
                    // Inserted earlier in this window: give its slot to d.
                    let j = j as usize;
                    update.in_ids[j] = global[d as usize];
                    update.in_positions[j] = pos;
                    self.inserted.insert(d, j as u32);
                    self.cache.insert(d, key);
                    continue;
                }
                update.out_ids.push(global[e as usize]);
            }
            self.inserted.insert(d, update.in_ids.len() as u32);
            update.in_ids.push(global[d as usize]);
            update.in_positions.push(pos);
            self.cache.insert(d, key);
        }
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

    /// The direct table and the hash map give every id the same dense id
    /// (order of first use), so the changesets are the same bytes whichever
    /// the trace's id range picks.
    #[test]
    fn the_direct_table_and_the_hash_map_give_the_same_dense_trace() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for (every, span) in [(1usize, 50u64), (1, 5000), (3, 300)] {
            let batches: Vec<Vec<u64>> = (0..12)
                .map(|_| {
                    let mut b: Vec<u64> = (0..40).map(|_| next(span)).collect();
                    b.sort_unstable();
                    b.dedup();
                    b
                })
                .collect();
            let carried: Vec<u64> = (0..10).map(|i| span + i).collect();
            let max_id = span + 9;
            let a = DenseTrace::build_with(&batches, every, &carried, Some(max_id));
            let b = DenseTrace::build_with(&batches, every, &carried, None);
            assert_eq!(a.global, b.global);
            assert_eq!((a.traced, &a.carried), (b.traced, &b.carried));
            assert_eq!((&a.win_ids, &a.win_start), (&b.win_ids, &b.win_start));
            assert_eq!((&a.win_pos, &a.trace), (&b.win_pos, &b.trace));
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
}
