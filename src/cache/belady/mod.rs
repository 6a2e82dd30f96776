//! Exact batch-granular Belady changesets (Ginex §3.4, Fig. 12–13) and the
//! k-hop approximation (Ginex++ §4.2).
//!
//! Given the ids each batch of a superbatch will gather and a cache of
//! `capacity` rows, compute the cache's initial contents and, after each
//! batch, which ids to insert (with their position in the gathered rows)
//! and which to evict, so that the total number of misses is the minimum any
//! policy can achieve.
//!
//! The computation, in O(total accesses · log₆₄ S) time with a bucket
//! queue keyed by next use, is in `belady/plan.rs`.
//!
//! Carry-over between superbatches: the cache a superbatch ends with is the
//! cache the next one starts with. [`compute_changesets_from`] takes those
//! `carried` ids as the starting state. A carried id the new superbatch
//! uses keeps its slot, keyed by its next use; the free slots are filled
//! with the earliest first uses not already cached; a carried id it never
//! uses keeps a slot only if one is still free, and only with a
//! [`ReusePrior`] (which also decides, at the end of the superbatch, which
//! rows the cache carries out: without one, the cache ends holding only
//! rows the superbatch used, however large it is). So the init of a later
//! superbatch reads only rows it does not hold. Filling a free slot costs the same read as missing that
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

use plan::plan_from;

use crate::format::sections::FeatureSections;
#[cfg(test)]
pub(crate) use prior::test_prior;
pub use prior::ReusePrior;

mod pages;
mod plan;
mod prior;

pub use pages::{cheapest_plan, plan_page_reads};

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

    /// The page companions this update inserts after a batch of
    /// `batch_len` rows: the ids at positions `batch_len, batch_len + 1, …`
    /// in position order. `Err` says why the update is corrupt: one out of
    /// that dense order, or more than [`max_page_companions`].
    pub fn companions(&self, batch_len: usize) -> std::result::Result<Vec<u64>, String> {
        let mut past: Vec<(u64, u64)> = self
            .in_positions
            .iter()
            .zip(&self.in_ids)
            .filter(|(&pos, _)| pos >= batch_len as u64)
            .map(|(&pos, &id)| (pos, id))
            .collect();
        past.sort_unstable();
        for (k, &(pos, id)) in past.iter().enumerate() {
            let expected = (batch_len + k) as u64;
            if pos != expected {
                return Err(format!(
                    "update inserts node {id} from position {pos}, past the batch's {batch_len} \
                     rows, where the next page companion belongs at {expected}"
                ));
            }
        }
        // Their buffer is planned for this many (`MemoryPlan::batch_buffers`).
        let most = max_page_companions(batch_len as u64);
        if past.len() as u64 > most {
            return Err(format!(
                "update inserts {} page companions after a batch of {batch_len} rows, \
                 which reads at most {most}",
                past.len()
            ));
        }
        Ok(past.into_iter().map(|(_, id)| id).collect())
    }
}

/// Rows of a batch per page companion it may read, at least: a batch of
/// `n` rows reads at most `n / 8` (rounded up). The executor reads a
/// batch's misses straight into the batch and its companions into a buffer
/// of their own, which the memory plan prices at that share of the largest
/// batch ([`max_page_companions`]).
pub const BATCH_ROWS_PER_PAGE_COMPANION: u64 = 8;

/// The most page companions a batch of `batch_len` rows reads: see
/// [`BATCH_ROWS_PER_PAGE_COMPANION`].
pub fn max_page_companions(batch_len: u64) -> u64 {
    batch_len.div_ceil(BATCH_ROWS_PER_PAGE_COMPANION)
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
    /// Whether the updates admit page companions
    /// ([`compute_changesets_paged`]).
    pub paged: bool,
    /// Feature pages the plan reads ([`plan_page_reads`]), when counted.
    pub page_reads: Option<u64>,
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

/// `C[0]` of a superbatch that starts with an empty cache, without the
/// rest of its changesets: the first `capacity` distinct ids of `batches`
/// in order of first use (the order of [`Changesets::init`]). One pass;
/// the executor reads them while the changesets are computed.
pub fn fresh_init<B: AsRef<[u64]>>(batches: &[B], capacity: usize) -> Vec<u64> {
    let mut init = FreshInit::new(capacity);
    for b in batches {
        if init.extend(b.as_ref()) {
            break;
        }
    }
    init.into_ids()
}

/// [`fresh_init`] built a batch at a time, as a superbatch is sampled:
/// once the first batches hold `capacity` distinct ids the init is known
/// ([`is_known`](Self::is_known)), whatever the later batches hold, so
/// its reads may start before the superbatch is sampled.
#[derive(Debug, Clone)]
pub struct FreshInit {
    capacity: usize,
    seen: crate::id_set::IdSet,
    ids: Vec<u64>,
}

impl FreshInit {
    /// An empty init of at most `capacity` ids.
    pub fn new(capacity: usize) -> FreshInit {
        FreshInit {
            capacity,
            seen: crate::id_set::IdSet::default(),
            ids: Vec::new(),
        }
    }

    /// Adds the next batch's ids (in order); returns whether the init is
    /// now known (it holds `capacity` ids).
    pub fn extend(&mut self, batch: &[u64]) -> bool {
        for &id in batch {
            if self.is_known() {
                break;
            }
            if self.seen.insert(id) {
                self.ids.push(id);
            }
        }
        self.is_known()
    }

    /// Whether later batches can no longer change the init.
    pub fn is_known(&self) -> bool {
        self.ids.len() >= self.capacity
    }

    /// The init: the superbatch's `C[0]` once it is known, or once every
    /// batch was added.
    pub fn into_ids(self) -> Vec<u64> {
        self.ids
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
    compute_changesets_from(batches, capacity, every, &[], &ReusePrior::none())
}

/// [`compute_changesets`] for a superbatch that starts with the `carried`
/// ids cached (distinct, at most `capacity`: the previous superbatch's
/// [`Changesets::final_cache`]), ranking the nodes it does not use again by
/// `prior` (see [`ReusePrior`]: the ranking changes which rows the cache
/// carries out of the superbatch, never the superbatch's own reads).
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
    prior: &ReusePrior,
) -> Changesets {
    let planned = plan_from(batches, capacity, every, carried, prior, None);
    if every <= 1 || carried.is_empty() {
        return planned;
    }
    let mut fresh = plan_from(batches, capacity, every, &[], prior, None);
    let held: std::collections::HashSet<u64> = carried.iter().copied().collect();
    fresh.init_reads = fresh.init.iter().filter(|id| !held.contains(id)).count() as u64;
    if fresh.total_reads() < planned.total_reads() {
        fresh
    } else {
        planned
    }
}

/// Rows that share a feature page. In a store of one layout, page `p`
/// holds rows `p * rows_per_page .. (p + 1) * rows_per_page`; in a typed
/// store of several layouts (format/features.md, "Sections") each section
/// packs its own rows that way from its own first page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageGroups {
    runs: std::sync::Arc<[PageRun]>,
}

/// Rows `first_row..end_row`, packed `rows_per_page` to a page (or, for
/// rows larger than a page, one row every `pages_per_row` pages) from page
/// `first_page` on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PageRun {
    first_row: u64,
    end_row: u64,
    first_page: u64,
    rows_per_page: u64,
    pages_per_row: u64,
}

impl PageRun {
    fn end_page(&self) -> u64 {
        let rows = self.end_row - self.first_row;
        rows.div_ceil(self.rows_per_page)
            .saturating_mul(self.pages_per_row)
            .saturating_add(self.first_page)
    }
}

impl PageGroups {
    /// The groups of a layout with `rows_per_page` rows a page; None when a
    /// page holds one row or less (no row has a companion).
    pub fn of(rows_per_page: u64) -> Option<PageGroups> {
        (rows_per_page > 1).then(|| PageGroups {
            runs: vec![PageRun {
                first_row: 0,
                end_row: u64::MAX,
                first_page: 0,
                rows_per_page,
                pages_per_row: 1,
            }]
            .into(),
        })
    }

    /// The groups of a store's feature pages, one run per section; None
    /// when no page holds two rows.
    pub fn of_sections(sections: &FeatureSections) -> Option<PageGroups> {
        if sections.is_uniform() {
            return Self::of(sections.uniform_rows_per_page());
        }
        let runs: Vec<PageRun> = sections
            .sections()
            .iter()
            .map(|s| PageRun {
                first_row: s.first_row,
                end_row: s.first_row + s.rows,
                first_page: s.first_page,
                rows_per_page: (s.layout.rows_per_page() as u64).max(1),
                pages_per_row: s.layout.pages_per_row(),
            })
            .collect();
        runs.iter()
            .any(|r| r.rows_per_page > 1)
            .then(|| PageGroups { runs: runs.into() })
    }

    /// The page row `id` starts on (past every run: a page of its own).
    pub fn page_of(&self, id: u64) -> u64 {
        let i = self.runs.partition_point(|r| r.end_row <= id);
        match self.runs.get(i) {
            Some(r) if r.first_row <= id => {
                r.first_page + (id - r.first_row) / r.rows_per_page * r.pages_per_row
            }
            _ => u64::MAX - id.min(u64::MAX / 2),
        }
    }

    /// The rows starting on page `page` (empty past every run).
    pub fn rows_on(&self, page: u64) -> std::ops::Range<u64> {
        let i = self.runs.partition_point(|r| r.end_page() <= page);
        match self.runs.get(i) {
            Some(r) if r.first_page <= page && (page - r.first_page) % r.pages_per_row == 0 => {
                let start = ((page - r.first_page) / r.pages_per_row)
                    .saturating_mul(r.rows_per_page)
                    .saturating_add(r.first_row);
                start..start.saturating_add(r.rows_per_page).min(r.end_row)
            }
            _ => 0..0,
        }
    }
}

#[cfg(test)]
mod page_group_tests {
    use super::*;
    use crate::format::pages::{Dtype, FeatureLayout};
    use crate::format::schema::test_schema;

    #[test]
    fn one_layout_groups_rows_by_their_page() {
        let g = PageGroups::of(4).unwrap();
        assert_eq!((g.page_of(0), g.page_of(7), g.page_of(8)), (0, 1, 2));
        assert_eq!(g.rows_on(1), 4..8);
        assert_eq!(PageGroups::of(1), None);
    }

    #[test]
    fn sections_group_rows_by_their_own_pages() {
        // a: 5 rows of 1 KiB (4 a page: pages 0, 1); b: 3 rows of 6 KiB
        // (2 pages a row: pages 2..8); c: 9 rows of 512 f16, 1 KiB again
        // but another layout (4 a page: pages 8..11).
        let mut s = test_schema(
            &[("a", 0, 5, 256), ("b", 5, 3, 1536), ("c", 8, 9, 512)],
            &[],
        );
        s.node_types[2].dtype = Some(Dtype::F16);
        let row = s.row_format().unwrap();
        let sections = FeatureSections::of(Some(&s), row, 17).unwrap();
        let g = PageGroups::of_sections(&sections).unwrap();
        for id in 0..17 {
            let page = g.page_of(id);
            assert_eq!(page, sections.locate(id).page, "row {id}");
            assert!(g.rows_on(page).contains(&id), "row {id} on page {page}");
        }
        assert_eq!(g.rows_on(1), 4..5);
        assert_eq!(g.rows_on(4), 6..7);
        assert_eq!(g.rows_on(3), 0..0, "the second page of row 5");
        assert_eq!(g.rows_on(9), 12..16);
        assert_eq!(g.rows_on(10), 16..17);
        assert_eq!(g.rows_on(11), 0..0);
        let wide = FeatureSections::uniform(FeatureLayout::new(1536, Dtype::F32).unwrap(), 3);
        assert_eq!(PageGroups::of_sections(&wide.unwrap()), None);
    }
}

/// [`compute_changesets_from`] with page companions (`every = 1`): a batch
/// that misses a row reads its whole page, so the other rows on that page
/// that the superbatch uses later compete for slots exactly as misses do
/// (admitted when their next use is nearer than the farthest cached one),
/// inserted from positions past the batch's own rows (`len`, `len + 1`, …
/// in `in_positions`; see `format/runtime.md`). A batch takes at most
/// [`max_page_companions`] of them. Not optimal over pages
/// (nor over rows: the row plan is): [`plan_superbatch`] counts both plans'
/// pages ([`plan_page_reads`]) and keeps the one that reads fewer.
///
/// [`plan_superbatch`]: crate::inspect::superbatch::plan_superbatch
pub fn compute_changesets_paged<B: AsRef<[u64]>>(
    batches: &[B],
    capacity: usize,
    carried: &[u64],
    prior: &ReusePrior,
    pages: PageGroups,
) -> Changesets {
    plan_from(batches, capacity, 1, carried, prior, Some(pages))
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

    proptest! {
        /// The init read ahead of the changesets is the changesets' init,
        /// in the same order, for every k.
        #[test]
        fn fresh_init_is_the_changesets_init(
            batches in trace(8, 24),
            capacity in 0usize..30,
            every in 1usize..4,
            degrees in proptest::collection::vec(0u32..50, 24),
        ) {
            let fresh = fresh_init(&batches, capacity);
            let cs = compute_changesets(&batches, capacity, every);
            prop_assert_eq!(&fresh, &cs.init);
            let prior = ReusePrior::from_out_degrees(&degrees);
            let cs = compute_changesets_from(&batches, capacity, every, &[], &prior);
            prop_assert_eq!(&fresh, &cs.init);
        }

        /// Once a prefix of the batches says the init is known, it is the
        /// init of the whole superbatch: the reads may start there.
        #[test]
        fn an_init_known_from_a_prefix_is_the_whole_superbatchs(
            batches in trace(8, 24),
            capacity in 0usize..30,
        ) {
            let whole = fresh_init(&batches, capacity);
            let mut init = FreshInit::new(capacity);
            let mut known_after = None;
            for (i, b) in batches.iter().enumerate() {
                if init.extend(b) && known_after.is_none() {
                    known_after = Some(i);
                    prop_assert_eq!(&init.clone().into_ids(), &whole);
                }
            }
            prop_assert_eq!(init.is_known(), whole.len() == capacity);
            prop_assert_eq!(&init.into_ids(), &whole);
            // Known no later than the first batch that brings the
            // capacity-th distinct id.
            if let Some(i) = known_after {
                prop_assert_eq!(fresh_init(&batches[..=i], capacity), whole);
                if i > 0 {
                    prop_assert!(fresh_init(&batches[..i], capacity).len() < capacity);
                }
            }
        }
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
            prior in any_prior(6),
        ) {
            let carried: Vec<u64> = carried.into_iter().take(capacity).collect();
            let cs = compute_changesets_from(&batches, capacity, 1, &carried, &prior);
            replay_from(&batches, capacity, 1, &carried, &cs);
            prop_assert_eq!(
                cs.total_reads(),
                exhaustive_reads_from(&batches, capacity, 6, &carried)
            );
        }

        /// A reuse prior decides only what the cache holds beyond the
        /// superbatch's uses: every batch misses exactly what it misses
        /// without one, init reads the same rows, and the cache ends full
        /// (as full as the ids it has seen allow).
        #[test]
        fn a_prior_changes_what_is_carried_out_not_the_reads(
            batches in trace(8, 30),
            capacity in 0usize..12,
            carried in proptest::collection::btree_set(0u64..30, 0..12),
            every in 1usize..3,
            prior in any_prior(30),
        ) {
            let carried: Vec<u64> = carried.into_iter().take(capacity).collect();
            let with = compute_changesets_from(&batches, capacity, every, &carried, &prior);
            let without = compute_changesets_from(&batches, capacity, every, &carried, &ReusePrior::none());
            replay_from(&batches, capacity, every, &carried, &with);
            prop_assert_eq!(&with.misses, &without.misses);
            prop_assert_eq!(with.init_reads, without.init_reads);
            if prior.is_some() {
                let seen: BTreeSet<u64> = batches.iter().flatten().chain(&carried).copied().collect();
                prop_assert_eq!(with.final_cache.len(), capacity.min(seen.len()));
            }
        }

        /// Superbatches chained through `final_cache` read no more rows than
        /// superbatches that each start empty (the reset the executor did
        /// before carry-over), for exact and k-hop changesets.
        #[test]
        fn carry_over_never_reads_more_than_reset(
            sbs in proptest::collection::vec(trace(6, 30), 1..4),
            capacity in 1usize..12,
            every in 1usize..3,
            prior in any_prior(30),
        ) {
            let mut carried: Vec<u64> = Vec::new();
            let (mut chained, mut reset) = (0u64, 0u64);
            for batches in &sbs {
                let cs = compute_changesets_from(batches, capacity, every, &carried, &prior);
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

    /// No prior, or out-degrees of ids `0..nodes` (some zero).
    fn any_prior(nodes: usize) -> impl Strategy<Value = ReusePrior> {
        proptest::option::of(proptest::collection::vec(0u32..100, nodes))
            .prop_map(|deg| deg.map_or_else(ReusePrior::none, |d| ReusePrior::from_out_degrees(&d)))
    }

    /// Three superbatches [1][2] | [3] | [1], two slots, node 1 the
    /// likeliest reused: without a prior the second superbatch drops 1 and
    /// 2 (it does not use them) and the third reads 1 again; with one, 1
    /// keeps the slot 3 leaves free.
    #[test]
    fn a_prior_keeps_a_free_slot_for_the_likeliest_reuse() {
        let sbs = [vec![vec![1u64], vec![2]], vec![vec![3]], vec![vec![1]]];
        let prior = ReusePrior::from_out_degrees(&[0, 50, 5, 1]);
        let reads = |prior: &ReusePrior| {
            let mut carried = Vec::new();
            let mut reads = Vec::new();
            for batches in &sbs {
                let cs = compute_changesets_from(batches, 2, 1, &carried, prior);
                replay_from(batches, 2, 1, &carried, &cs);
                reads.push(cs.total_reads());
                carried = cs.final_cache;
            }
            (reads, carried)
        };
        assert_eq!(reads(&ReusePrior::none()), (vec![2, 1, 1], vec![1]));
        assert_eq!(reads(&prior), (vec![2, 1, 0], vec![1, 3]));
    }

    /// When the superbatch fills the cache, a never-again miss replaces
    /// the cached never-again node of the farther rank (lower degree).
    #[test]
    fn never_again_nodes_compete_by_rank() {
        // Capacity 1: batch 0 caches 2 (its only use), batch 1 misses 1,
        // which has a higher degree, so 1 takes the slot.
        let prior = ReusePrior::from_out_degrees(&[0, 40, 3]);
        let cs = compute_changesets_from(&[vec![2u64], vec![1]], 1, 1, &[], &prior);
        assert_eq!(cs.final_cache, vec![1]);
        let cs = compute_changesets_from(&[vec![1u64], vec![2]], 1, 1, &[], &prior);
        assert_eq!(cs.final_cache, vec![1]);
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
