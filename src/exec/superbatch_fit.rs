//! A superbatch whose batches fit the feature cache.
//!
//! Where the distinct rows of a superbatch's batches fit the feature cache,
//! `ginex` reads every miss at the superbatch's init: sorted by page and
//! merged, read beside the superbatch before it, none at gather time. One
//! batch longer and part of them are read one by one while the batches
//! wait. On the generator's 3 M × 256 store at 2.9× (a 395 k-row cache, batches of
//! ~124 k rows) superbatches of 6 batches read all 1.78 M misses at init
//! in 393,628 reads and ran in 11.7–13.4 s; the planner's 15 read 1.31 M
//! misses, 39 % at init, in 825,084 reads and ran in 15.2–16.2 s
//! (`docs/lab/performance-journal.md`, "A superbatch that fits the feature cache").
//!
//! The planner keeps its automatic superbatch (at most a quarter of what
//! is left, [`crate::exec::plan`]) where it is the whole epoch
//! ([`worth_fitting`]), else unless a shorter one of at least
//! [`MIN_FITTED_SUPERBATCH`] batches fits: the longest superbatch whose
//! distinct rows, estimated from the probe's two batches
//! ([`DistinctGrowth`]), are no more than the feature cache planned beside
//! it (a shorter superbatch leaves more memory to the cache, so each
//! length is planned and checked).

/// Shortest superbatch the planner shortens to: shorter ones leave too
/// few batches to read the next init beside. Measured on the 3 M × 256
/// store at 2.9× (one to three runs each; all misses at init from 6
/// batches down):
/// 3 batches 17.2 s, 4 14.7–16.2 s, 5 11.6–14.2 s, 6 11.7–13.4 s, against
/// 15.2–16.2 s for the planner's 15 (`docs/lab/performance-journal.md`, "A superbatch
/// that fits the feature cache").
pub const MIN_FITTED_SUPERBATCH: u64 = 5;

/// A superbatch length whose distinct rows fit a feature cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SuperbatchFit {
    /// Batches (from the epoch's first).
    pub batches: u64,
    /// Their distinct rows, estimated ([`DistinctGrowth`]).
    pub distinct_rows: u64,
}

/// How a superbatch's distinct rows grow with its batches, estimated from
/// the planner's probe: a batch's `one` distinct rows, times the batches
/// to the power `exponent`, where two batches hold `two`. The growth
/// slows as batches are added (the 3 M store at 2.9x: 124,519 rows in one
/// batch, 200,954 in two, 307,513 in four, 452,470 in eight), so this
/// overestimates longer superbatches: 429 k for six against 385 k
/// measured: on stores whose growth slows like this one's, a superbatch
/// it says fits does (the probe's two batches are a sample, so this is an
/// estimate, not a bound).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DistinctGrowth {
    /// Distinct rows of one batch.
    pub one: f64,
    /// log2(two batches' distinct rows / one's).
    pub exponent: f64,
}

impl DistinctGrowth {
    /// From the probe's batches: `mean_ids` distinct rows a batch, and the
    /// `rows` both gathered (each batch's ids, one after the other). None
    /// unless exactly two batches were probed.
    pub fn from_probe(batches: u64, mean_ids: f64, rows: &[u64]) -> Option<Self> {
        if batches != 2 || mean_ids < 1.0 {
            return None;
        }
        let mut distinct = rows.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        Some(DistinctGrowth {
            one: mean_ids,
            exponent: (distinct.len() as f64 / mean_ids).log2().clamp(0.0, 1.0),
        })
    }

    /// Estimated distinct rows of `batches` batches.
    pub fn distinct_rows(&self, batches: u64) -> u64 {
        (self.one * (batches as f64).powf(self.exponent)).ceil() as u64
    }
}

/// The fit of a superbatch of `batches` batches under a cache of
/// `cache_rows` rows: Some where its estimated distinct rows fit.
pub fn fits(growth: &DistinctGrowth, batches: u64, cache_rows: u64) -> Option<SuperbatchFit> {
    let distinct_rows = growth.distinct_rows(batches);
    (batches > 0 && distinct_rows <= cache_rows).then_some(SuperbatchFit {
        batches,
        distinct_rows,
    })
}

/// Whether a fitted superbatch can shorten `auto` batches of at most
/// `max_ids` rows for a cache of `cache_rows` in an epoch of
/// `epoch_batches`: not where `auto` batches fit even with no row in
/// common (nothing to shorten), nor where `auto` is already at most
/// [`MIN_FITTED_SUPERBATCH`], nor where `auto` is the whole epoch: Belady
/// over the whole epoch reads each row it must read once, and shorter
/// superbatches only split its init (the demo's 2.2 M-node store at 2.8×:
/// 33 batches in one superbatch 1.67 s, in three of 11–12 1.81 s, the same
/// misses in 12 % more pages).
pub fn worth_fitting(auto: u64, epoch_batches: u64, max_ids: u64, cache_rows: u64) -> bool {
    auto > MIN_FITTED_SUPERBATCH
        && auto < epoch_batches
        && auto.saturating_mul(max_ids) > cache_rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_growth_from_two_batches_bounds_longer_superbatches_from_above() {
        // The 3 M store's first batches at 2.9x (docs/lab/performance-journal.md):
        // two batches of 124,519 and 123,000 ids sharing 46,565.
        let mut rows: Vec<u64> = (0..124_519).collect();
        rows.extend(124_519 - 46_565..124_519 - 46_565 + 123_000);
        let g = DistinctGrowth::from_probe(2, 123_759.5, &rows).unwrap();
        assert_eq!(g.distinct_rows(1), 123_760);
        assert_eq!(g.distinct_rows(2), 200_954);
        // Measured: 307,513 rows in four batches, 385,386 in six.
        assert!((307_513..330_000).contains(&g.distinct_rows(4)), "{g:?}");
        assert!((385_386..440_000).contains(&g.distinct_rows(6)), "{g:?}");
        assert_eq!(
            fits(&g, 5, 400_000).map(|f| f.batches),
            Some(5),
            "{}",
            g.distinct_rows(5)
        );
        assert_eq!(fits(&g, 6, 400_000), None, "{}", g.distinct_rows(6));
        assert_eq!(DistinctGrowth::from_probe(1, 10.0, &[1, 2, 3]), None);
        assert!(worth_fitting(15, 60, 124_519, 395_693));
        assert!(!worth_fitting(15, 15, 124_519, 395_693), "the whole epoch");
        assert!(
            !worth_fitting(40, 200, 300_000, 13_500_000),
            "40 batches fit"
        );
        assert!(!worth_fitting(5, 60, 124_519, 100));
    }
}
