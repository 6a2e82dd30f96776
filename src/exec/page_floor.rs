//! The page floor: the fewest feature pages any cache of a given size must
//! read for a trace, when the cache holds whole pages.
//!
//! A read brings a 4 KiB page, not a row, so what a run costs is the pages
//! it reads. Row policies (every policy of the executor) are judged in rows;
//! the floor judges them in pages: the trace's batches are mapped to the
//! distinct pages their rows live on ([`page_trace`]) and the offline
//! optimum of a page-granular cache of the same bytes is computed with the
//! inspector's batch-granular Belady ([`compute_changesets`], proven
//! against an exhaustive search in its tests) over the whole trace at
//! once: no superbatch horizon, no prior, starting empty. Its reads (the
//! pages its init loads plus every batch's page misses) are the floor.
//!
//! What the floor is and is not: it is the optimum of caching *pages* with
//! this many bytes; a row cache of the same bytes can hold rows of more
//! pages than a page cache can (it keeps only the rows it wants from a
//! page), so a row policy may read fewer pages than the floor on some
//! traces. It is the reference the out-of-core benchmark reports every
//! policy's pages against ("pages / floor").

use crate::cache::belady::compute_changesets;
use crate::exec::curves::Trace;
use crate::format::sections::FeatureSections;
use crate::format::PAGE_SIZE;
use crate::hash::FxMap;

/// The page floor of a trace at one cache size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageFloor {
    /// Pages the cache holds: the cache bytes over the page size.
    pub capacity_pages: u64,
    /// Pages the trace's batches touch, summed over batches: what a run
    /// with no cache reads (before merging nearby pages into one read).
    pub pages_needed: u64,
    /// Distinct pages in the whole trace: what any cache reads at least.
    pub distinct_pages: u64,
    /// The offline optimum of a page cache of `capacity_pages` pages.
    pub floor: u64,
}

/// Each batch of `trace` as the distinct feature pages its rows occupy under
/// `layout`, in order of first touch within the batch (a row larger than a
/// page touches all of its pages).
pub fn page_trace(trace: &Trace, layout: &FeatureSections) -> Trace {
    let mut pages = Trace::default();
    let mut seen: FxMap<u64, ()> = FxMap::default();
    let mut batch_pages: Vec<u64> = Vec::new();
    for batch in trace.batches() {
        seen.clear();
        batch_pages.clear();
        for &id in batch {
            let at = layout.locate(id);
            for page in at.page..at.page + at.pages {
                if seen.insert(page, ()).is_none() {
                    batch_pages.push(page);
                }
            }
        }
        pages.push(&batch_pages);
    }
    pages
}

/// The page floor of `trace` for a cache of `cache_bytes` (whole pages:
/// `cache_bytes / PAGE_SIZE`).
pub fn page_floor(trace: &Trace, layout: &FeatureSections, cache_bytes: u64) -> PageFloor {
    let pages = page_trace(trace, layout);
    let batches: Vec<&[u64]> = pages.batches().collect();
    let capacity_pages = cache_bytes / PAGE_SIZE as u64;
    let capacity = usize::try_from(capacity_pages).unwrap_or(usize::MAX);
    let plan = compute_changesets(&batches, capacity, 1);
    let mut distinct = pages.ids.clone();
    distinct.sort_unstable();
    distinct.dedup();
    PageFloor {
        capacity_pages,
        pages_needed: pages.accesses(),
        distinct_pages: distinct.len() as u64,
        floor: plan.init_reads + plan.total_misses(),
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
        let all = page_floor(&trace, &layout, 1 << 20);
        assert_eq!(all.pages_needed, 2 + 3 + 2);
        assert_eq!(all.distinct_pages, 3);
        assert_eq!(all.floor, 3);
        // No cache: every batch reads its pages.
        let none = page_floor(&trace, &layout, PAGE_SIZE as u64 - 1);
        assert_eq!(none.capacity_pages, 0);
        assert_eq!(none.floor, none.pages_needed);
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
            let f = page_floor(&trace, &layout, bytes);
            let pages = page_trace(&trace, &layout);
            let page_batches: Vec<&[u64]> = pages.batches().collect();
            prop_assert_eq!(f.floor, exhaustive_page_reads(&page_batches, capacity as usize, 7));
            prop_assert!(f.distinct_pages <= f.floor && f.floor <= f.pages_needed);
            let bigger = page_floor(&trace, &layout, bytes + PAGE_SIZE as u64);
            prop_assert!(bigger.floor <= f.floor);
        }
    }
}
