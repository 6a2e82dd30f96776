//! Where an epoch's superbatches start and end: the one layout that the
//! executor's pipeline ([`crate::exec::pipeline`]) and the policy lab's
//! simulator ([`crate::exec::curves`]) both cut an epoch by, so the lab
//! replays the superbatches the executor ran.
//!
//! The first superbatch has nothing to hide behind: its sampling S(0) and
//! its changesets C(0) run before the first batch. Under the `short`
//! layout (what `auto`, the default, resolves to unless the store's
//! topology is larger than the memory budget) the first superbatch is
//! [`SHORT_FIRST_SUPERBATCH`] batches and each next one twice the one
//! before, up to the configured size, so the first batch waits for a
//! short S(0) and C(0), and the inspector's next, longer superbatches run
//! while the executor gathers. Where the topology dwarfs the budget every
//! lockstep round reads most of it, so `auto` resolves to `full` there
//! ([`crate::exec::list_bound`]).
//! The batches are the same under either layout (a batch's seed is its
//! index in the epoch); what changes is each superbatch's Belady horizon,
//! so the misses are optimal per superbatch of the layout.

use std::ops::Range;

use serde::{Serialize, Serializer};

use crate::error::{Error, Result};

/// How long an epoch's first superbatches are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FirstSuperbatch {
    /// The `--memory` planner chooses: `full` where the store's topology
    /// is larger than the budget (each lockstep round then reads most of
    /// it, however short: [`crate::exec::list_bound`]), `short`
    /// otherwise; `short` without a plan.
    #[default]
    Auto,
    /// Every superbatch has the configured size (the last one the rest).
    Full,
    /// [`SHORT_FIRST_SUPERBATCH`] batches, then twice the one before up to
    /// the configured size.
    Short,
}

/// Batches in the first superbatch of the [`FirstSuperbatch::Short`]
/// layout: one full lockstep round of up to four workers
/// ([`MIN_SAMPLING_ROUND`](crate::inspect::superbatch::MIN_SAMPLING_ROUND)).
pub const SHORT_FIRST_SUPERBATCH: u64 = 16;

impl Serialize for FirstSuperbatch {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl FirstSuperbatch {
    /// Every layout, in the order the help lists them.
    pub const ALL: [FirstSuperbatch; 3] = [
        FirstSuperbatch::Auto,
        FirstSuperbatch::Short,
        FirstSuperbatch::Full,
    ];

    /// Parses `auto`, `short` or `full`.
    pub fn parse(s: &str) -> Result<FirstSuperbatch> {
        Error::parse_name(
            s,
            "first superbatch",
            &FirstSuperbatch::ALL,
            FirstSuperbatch::name,
        )
    }

    /// The name [`parse`](Self::parse) takes.
    pub fn name(self) -> &'static str {
        match self {
            FirstSuperbatch::Auto => "auto",
            FirstSuperbatch::Full => "full",
            FirstSuperbatch::Short => "short",
        }
    }

    /// The superbatches of an epoch of `total` batches cut in superbatches
    /// of `per_superbatch` batches (0: one superbatch of the whole epoch,
    /// under either layout: the policy lab's exact optimum), as ranges of batch indices, in order: they cover `0..total` with no
    /// gap and no overlap, none empty, none longer than `per_superbatch`.
    pub fn bounds(self, total: u64, per_superbatch: u64) -> Vec<Range<u64>> {
        let per = match per_superbatch {
            0 => total.max(1),
            n => n,
        };
        let mut len = match self {
            FirstSuperbatch::Short | FirstSuperbatch::Auto if per_superbatch > 0 => {
                SHORT_FIRST_SUPERBATCH.min(per)
            }
            _ => per,
        };
        let mut out = Vec::with_capacity(total.div_ceil(per) as usize + 4);
        let mut first = 0;
        while first < total {
            let end = first + len.min(total - first);
            out.push(first..end);
            first = end;
            len = len.saturating_mul(2).min(per);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_cuts_equal_superbatches_and_short_ramps_up_to_them() {
        let full = FirstSuperbatch::Full.bounds(250, 100);
        assert_eq!(full, vec![0..100, 100..200, 200..250]);
        let short = FirstSuperbatch::Short.bounds(250, 100);
        assert_eq!(short, vec![0..16, 16..48, 48..112, 112..212, 212..250]);
        // Unresolved (no plan), auto is short.
        assert_eq!(FirstSuperbatch::Auto.bounds(250, 100), short);
        // A superbatch no longer than the short one: the layouts agree.
        for per in [1, 5, 16] {
            assert_eq!(
                FirstSuperbatch::Short.bounds(77, per),
                FirstSuperbatch::Full.bounds(77, per),
                "{per}"
            );
        }
        // 0: the whole epoch, under either layout.
        for layout in FirstSuperbatch::ALL {
            assert_eq!(layout.bounds(40, 0), vec![0..40]);
        }
        for layout in FirstSuperbatch::ALL {
            assert!(layout.bounds(0, 10).is_empty());
            for (total, per) in [(1, 100), (17, 20), (1000, 64), (33, 0)] {
                let b = layout.bounds(total, per);
                assert_eq!(b.first().unwrap().start, 0);
                assert_eq!(b.last().unwrap().end, total);
                assert!(b.windows(2).all(|w| w[0].end == w[1].start));
                let cap = if per == 0 { total } else { per };
                assert!(b.iter().all(|r| !r.is_empty() && r.end - r.start <= cap));
            }
        }
    }

    #[test]
    fn names_round_trip_and_bad_names_are_refused() {
        for layout in FirstSuperbatch::ALL {
            assert_eq!(FirstSuperbatch::parse(layout.name()).unwrap(), layout);
        }
        let err = FirstSuperbatch::parse("tiny").unwrap_err().to_string();
        assert!(err.contains("tiny") && err.contains("short"), "{err}");
        assert_eq!(FirstSuperbatch::default(), FirstSuperbatch::Auto);
    }
}
