//! Page bounds: the fewest feature pages a cache of a given size must read
//! for a trace. Two figures, under their own names:
//!
//! * **The row-cache bound** ([`PageFloor::row_bound`]): no cache that
//!   holds at most `R` rows between batches (every row policy of the
//!   executor, whatever it reads ahead) reads fewer pages than the offline
//!   optimum of a *page* cache of `R × p` pages, `p` the most pages one row
//!   of the trace spans. Proof: run any row cache beside a page cache that,
//!   between batches, holds exactly the pages on which the row cache holds
//!   a row (at most `R × p` of them). When a batch needs a page the page
//!   cache lacks, no row of that page is resident, so the row cache reads
//!   the page too; a page the page cache adds after a batch holds a row the
//!   row cache read during that batch, so it was either needed by the batch
//!   (counted above) or read ahead by the row cache (counted by both, and a
//!   read ahead never beats reading on demand, Belady 1966). So the page
//!   cache reads no more pages than the row cache, and the page-cache
//!   optimum at `R × p` pages reads no more than that page cache. It is a
//!   lower bound for every row policy of that many rows, and for fewer rows.
//! * **The page-cache optimum at the same bytes** ([`PageFloor::floor`]):
//!   what an offline cache of *whole pages* with the row cache's bytes
//!   reads. A row cache keeps only the rows it wants from a page, so it can
//!   hold rows of more pages than a page cache of its bytes and read fewer
//!   pages than this figure (on random layouts it does: round 4 measured
//!   0.62×). It says how much a layout costs, not what any policy must read.
//!
//! Both map the trace's batches to the distinct pages their rows live on
//! ([`page_trace`]) and take the offline optimum of a page-granular cache
//! with the inspector's batch-granular Belady ([`compute_changesets`],
//! proven against an exhaustive search in its tests) over the whole trace
//! at once: no superbatch horizon, no prior, starting empty. Reads are the
//! pages its init loads plus every batch's page misses.

use crate::cache::belady::compute_changesets;
use crate::exec::curves::Trace;
use crate::format::sections::FeatureSections;
use crate::format::PAGE_SIZE;
use rustc_hash::FxHashSet;

/// The page bounds of a trace at one cache size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageFloor {
    /// Rows the row cache holds.
    pub cache_rows: u64,
    /// Pages the page cache of the same bytes holds: the cache bytes over
    /// the page size.
    pub capacity_pages: u64,
    /// Pages the trace's batches touch, summed over batches: what a run
    /// with no cache reads (before merging nearby pages into one read).
    pub pages_needed: u64,
    /// Distinct pages in the whole trace: what any cache reads at least.
    pub distinct_pages: u64,
    /// The offline optimum of a page cache of `capacity_pages` pages: not
    /// a lower bound for a row cache (see the module docs).
    pub floor: u64,
    /// Pages of the page cache whose optimum bounds the row cache:
    /// `cache_rows` times the most pages a row of the trace spans.
    pub row_bound_capacity_pages: u64,
    /// The fewest pages any cache of `cache_rows` rows reads for the trace
    /// (see the module docs for the proof).
    pub row_bound: u64,
}

/// Each batch of `trace` as the distinct feature pages its rows occupy under
/// `layout`, in order of first touch within the batch (a row larger than a
/// page touches all of its pages).
pub fn page_trace(trace: &Trace, layout: &FeatureSections) -> Trace {
    page_trace_and_span(trace, layout).0
}

/// [`page_trace`], and the most pages one row of the trace spans (0 for an
/// empty trace).
fn page_trace_and_span(trace: &Trace, layout: &FeatureSections) -> (Trace, u64) {
    let mut span = 0;
    let mut pages = Trace::default();
    let mut seen: FxHashSet<u64> = FxHashSet::default();
    let mut batch_pages: Vec<u64> = Vec::new();
    for batch in trace.batches() {
        seen.clear();
        batch_pages.clear();
        for &id in batch {
            let at = layout.locate(id);
            span = span.max(at.pages);
            for page in at.page..at.page + at.pages {
                if seen.insert(page) {
                    batch_pages.push(page);
                }
            }
        }
        pages.push(&batch_pages);
    }
    (pages, span)
}

/// The page bounds of `trace` for a row cache of `cache_rows` rows taking
/// `cache_bytes`: the row-cache bound and the optimum of a page cache of
/// the same bytes (whole pages: `cache_bytes / PAGE_SIZE`).
pub fn page_floor(
    trace: &Trace,
    layout: &FeatureSections,
    cache_rows: u64,
    cache_bytes: u64,
) -> PageFloor {
    let (pages, span) = page_trace_and_span(trace, layout);
    let batches: Vec<&[u64]> = pages.batches().collect();
    let optimum = |capacity_pages: u64| {
        let capacity = usize::try_from(capacity_pages).unwrap_or(usize::MAX);
        let plan = compute_changesets(&batches, capacity, 1);
        plan.init_reads + plan.total_misses()
    };
    let mut distinct = pages.ids.clone();
    distinct.sort_unstable();
    distinct.dedup();
    let distinct_pages = distinct.len() as u64;
    let capacity_pages = cache_bytes / PAGE_SIZE as u64;
    let row_bound_capacity_pages = cache_rows.saturating_mul(span.max(1));
    // Past the distinct pages a larger cache changes nothing: the plans
    // below take the smaller capacity.
    PageFloor {
        cache_rows,
        capacity_pages,
        pages_needed: pages.accesses(),
        distinct_pages,
        floor: optimum(capacity_pages.min(distinct_pages)),
        row_bound_capacity_pages,
        row_bound: optimum(row_bound_capacity_pages.min(distinct_pages)),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::*;
    use crate::format::pages::{Dtype, FeatureLayout};

    /// 1 KiB rows: four to a page.
    fn quarter_page_rows() -> FeatureSections {
        uniform(FeatureLayout::new(256, Dtype::F32).unwrap())
    }

    fn uniform(layout: FeatureLayout) -> FeatureSections {
        FeatureSections::uniform(layout, 1 << 20).unwrap()
    }

    #[test]
    fn batches_become_their_distinct_pages() {
        let trace = Trace::from_batches(&[vec![0u64, 5, 1, 4, 9], vec![3, 3, 2]]);
        let pages = page_trace(&trace, &quarter_page_rows());
        assert_eq!(pages.batch(0), &[0, 1, 2]);
        assert_eq!(pages.batch(1), &[0]);
        // A row of 1.5 pages touches both of its pages.
        let wide = uniform(FeatureLayout::new(1536, Dtype::F32).unwrap());
        let pages = page_trace(&Trace::from_batches(&[vec![1u64]]), &wide);
        assert_eq!(pages.batch(0), &[2, 3]);
    }

    #[test]
    fn a_cache_of_every_page_reads_each_page_once() {
        let trace = Trace::from_batches(&[vec![0u64, 8], vec![1, 9, 20], vec![2, 21]]);
        let layout = quarter_page_rows();
        let all = page_floor(&trace, &layout, 1 << 10, 1 << 20);
        assert_eq!(all.pages_needed, 2 + 3 + 2);
        assert_eq!(all.distinct_pages, 3);
        assert_eq!(all.floor, 3);
        assert_eq!(all.row_bound, 3);
        // No cache: every batch reads its pages.
        let none = page_floor(&trace, &layout, 0, PAGE_SIZE as u64 - 1);
        assert_eq!(none.capacity_pages, 0);
        assert_eq!(none.floor, none.pages_needed);
        assert_eq!(none.row_bound, none.pages_needed);
    }

    /// Round 4's counterexample in miniature: rows of two pages alternate,
    /// and a row cache of two rows keeps the one row of each page that comes
    /// back, reading 2 pages, while a page cache of the same bytes (half a
    /// page: none) reads every page every time. The bound stays below the
    /// row cache; the page-cache optimum does not.
    #[test]
    fn a_row_cache_can_beat_the_page_cache_optimum_but_not_the_bound() {
        // Rows 0 and 4 sit on pages 0 and 1; batches need both, four times.
        let trace = Trace::from_batches(&[vec![0u64, 4], vec![0, 4], vec![0, 4], vec![0, 4]]);
        let layout = quarter_page_rows();
        let f = page_floor(&trace, &layout, 2, 2 * 1024);
        assert_eq!(f.capacity_pages, 0);
        assert_eq!(f.floor, 8);
        let row_cache_reads = 2; // both rows once, then every batch hits
        assert!(f.floor > row_cache_reads);
        assert_eq!(f.row_bound_capacity_pages, 2);
        assert_eq!(f.row_bound, 2);
        assert!(f.row_bound <= row_cache_reads);
    }

    /// The fewest page reads of any page cache of `capacity` pages over
    /// `batches` of pages below `universe` (tiny cases): start from any set
    /// (each page loaded is a read), after each batch keep any subset of
    /// (cache ∪ batch).
    fn exhaustive_page_reads(batches: &[&[u64]], capacity: usize, universe: u32) -> u64 {
        let states: Vec<u32> = (0u32..1 << universe)
            .filter(|m| m.count_ones() as usize <= capacity)
            .collect();
        let mut best: HashMap<u32, u64> = states
            .iter()
            .map(|&m| (m, u64::from(m.count_ones())))
            .collect();
        for batch in batches {
            let need = batch.iter().fold(0u32, |m, &p| m | 1 << p);
            let mut next: HashMap<u32, u64> = HashMap::new();
            for (&cache, &cost) in &best {
                let cost = cost + u64::from((need & !cache).count_ones());
                for &keep in &states {
                    if keep & !(cache | need) == 0 {
                        let e = next.entry(keep).or_insert(u64::MAX);
                        *e = (*e).min(cost);
                    }
                }
            }
            best = next;
        }
        best.values().copied().min().unwrap_or(0)
    }

    proptest! {
        /// The floor is the exhaustive optimum of a page cache, lies between
        /// the distinct pages and the pages a cacheless run needs, and never
        /// rises with the cache.
        #[test]
        fn the_floor_is_the_page_cache_optimum(
            batches in proptest::collection::vec(
                proptest::collection::vec(0u64..28, 0..10), 0..7),
            capacity in 0u64..5,
        ) {
            let layout = quarter_page_rows();
            let trace = Trace::from_batches(&batches);
            let bytes = capacity * PAGE_SIZE as u64;
            let f = page_floor(&trace, &layout, capacity * 4, bytes);
            let pages = page_trace(&trace, &layout);
            let page_batches: Vec<&[u64]> = pages.batches().collect();
            prop_assert_eq!(f.floor, exhaustive_page_reads(&page_batches, capacity as usize, 7));
            prop_assert!(f.distinct_pages <= f.floor && f.floor <= f.pages_needed);
            let bigger = page_floor(&trace, &layout, capacity * 4 + 4, bytes + PAGE_SIZE as u64);
            prop_assert!(bigger.floor <= f.floor);
            prop_assert!(bigger.row_bound <= f.row_bound);
            // Rows of a quarter page: the bound's cache has a page a row.
            prop_assert_eq!(f.row_bound_capacity_pages, capacity * 4);
            prop_assert!(f.row_bound <= f.floor);
        }

        /// The row-cache bound is at most what the best row cache reads,
        /// found by exhaustive search on tiny cases (8 rows, 2 a page).
        #[test]
        fn no_row_cache_reads_fewer_pages_than_the_bound(
            batches in proptest::collection::vec(
                proptest::collection::vec(0u64..8, 0..6), 0..6),
            rows in 0u64..5,
        ) {
            // 2 KiB rows: two to a page, rows 2p and 2p+1 on page p.
            let layout = uniform(FeatureLayout::new(512, Dtype::F32).unwrap());
            let trace = Trace::from_batches(&batches);
            let f = page_floor(&trace, &layout, rows, rows * 2048);
            let best = exhaustive_row_cache_page_reads(&batches, rows as usize);
            prop_assert!(
                f.row_bound <= best,
                "bound {} above the best row cache's {} pages", f.row_bound, best
            );
        }
    }

    /// The fewest pages any row cache of `capacity` rows reads over
    /// `batches` of rows below 8 (two rows a page): a batch reads every
    /// page holding a row it needs that is not cached (each page once);
    /// after the batch the cache keeps any subset of (cache ∪ the rows of
    /// the pages it read), as page companions allow.
    fn exhaustive_row_cache_page_reads(batches: &[Vec<u64>], capacity: usize) -> u64 {
        let page_rows = |pages: u32| -> u32 {
            (0..4)
                .filter(|p| pages & 1 << p != 0)
                .fold(0, |m, p| m | 0b11 << (2 * p))
        };
        let states: Vec<u32> = (0u32..1 << 8)
            .filter(|m| m.count_ones() as usize <= capacity)
            .collect();
        let mut best: HashMap<u32, u64> = HashMap::from([(0, 0)]);
        for batch in batches {
            let need = batch.iter().fold(0u32, |m, &r| m | 1 << r);
            let mut next: HashMap<u32, u64> = HashMap::new();
            for (&cache, &cost) in &best {
                let missing = need & !cache;
                let pages = (0..4)
                    .filter(|p| missing & 0b11 << (2 * p) != 0)
                    .fold(0, |m, p| m | 1 << p);
                let cost = cost + u64::from(u32::count_ones(pages));
                let available = cache | page_rows(pages);
                for &keep in &states {
                    if keep & !available == 0 {
                        let e = next.entry(keep).or_insert(u64::MAX);
                        *e = (*e).min(cost);
                    }
                }
            }
            best = next;
        }
        best.values().copied().min().unwrap_or(0)
    }
}
