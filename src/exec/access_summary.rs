//! What the executor needs to know of a superbatch's accesses besides its
//! runtime files, computed by the inspector while it holds the trace.
//!
//! The executor streams a superbatch's records and updates from its files
//! one batch at a time, so it never holds the superbatch's ids. Two of its
//! decisions look across the whole superbatch, though: which batch first
//! needs each row of the staged init ([`crate::exec::staged_init`]), and,
//! for the next superbatch's read-ahead ([`crate::exec::read_ahead`]), when
//! each row of the final cache is used for the last time, which rows the
//! superbatch touches and how many slots each update fills. This summary
//! answers them in a few bytes per cache row and a bit per node, instead of
//! eight bytes per access.

use crate::cache::belady::Update;
use crate::id_set::{IdRanks, IdSet};

/// A superbatch's accesses, as far as the executor's look-ahead needs them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct AccessSummary {
    /// Batches in the superbatch.
    num_batches: usize,
    /// The init's ids, ascending, and the first batch using each
    /// (`num_batches` when none does).
    init_ids: Vec<u64>,
    init_first_use: Vec<u32>,
    /// The final cache's ids, ascending, and the last batch using each
    /// ([`NEVER`] when none does).
    final_ids: Vec<u64>,
    final_last_use: Vec<u32>,
    /// Every id a batch accesses.
    used: IdSet,
    /// Per batch, rows its update inserts minus rows it evicts.
    net_inserts: Vec<i64>,
}

/// No batch of the superbatch uses the row.
pub(crate) const NEVER: u32 = u32::MAX;

impl AccessSummary {
    /// The summary of a superbatch whose batches access `batches`, whose
    /// cache starts as `init` and ends as `final_cache`, after `updates`.
    pub(crate) fn new<B: AsRef<[u64]>>(
        batches: &[B],
        init: &[u64],
        final_cache: &[u64],
        updates: &[Update],
    ) -> AccessSummary {
        let num_batches = batches.len();
        let used = IdSet::of(batches.iter().flat_map(|b| b.as_ref().iter().copied()));
        let in_order = batches.iter().enumerate();
        let (init_ids, init_first_use) =
            first_sightings(init, in_order.clone(), num_batches as u32);
        let (final_ids, final_last_use) = first_sightings(final_cache, in_order.rev(), NEVER);
        AccessSummary {
            num_batches,
            init_ids,
            init_first_use,
            final_ids,
            final_last_use,
            used,
            net_inserts: updates
                .iter()
                .map(|u| u.in_ids.len() as i64 - u.out_ids.len() as i64)
                .collect(),
        }
    }

    /// Batches in the superbatch.
    pub(crate) fn num_batches(&self) -> usize {
        self.num_batches
    }

    /// The first batch that uses `id`, a row of the init
    /// ([`num_batches`](Self::num_batches) when none does, or when `id` is
    /// not in the init).
    pub(crate) fn first_use(&self, id: u64) -> usize {
        match self.init_ids.binary_search(&id) {
            Ok(at) => self.init_first_use[at] as usize,
            Err(_) => self.num_batches,
        }
    }

    /// The final cache's ids, ascending, each with the last batch that uses
    /// it ([`NEVER`] when none does).
    pub(crate) fn final_last_uses(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.final_ids
            .iter()
            .copied()
            .zip(self.final_last_use.iter().copied())
    }

    /// The final cache's ids, ascending.
    pub(crate) fn final_ids(&self) -> &[u64] {
        &self.final_ids
    }

    /// Whether a batch of the superbatch accesses `id`.
    pub(crate) fn used(&self, id: u64) -> bool {
        self.used.contains(id)
    }

    /// Per batch, rows its update inserts minus rows it evicts.
    pub(crate) fn net_inserts(&self) -> &[i64] {
        &self.net_inserts
    }
}

/// `ids` sorted and deduplicated, each with the first batch of `batches`
/// (walked in the order given) that accesses it; `none` for ids no batch
/// accesses.
fn first_sightings<'a, B: AsRef<[u64]> + 'a>(
    ids: &[u64],
    batches: impl Iterator<Item = (usize, &'a B)>,
    none: u32,
) -> (Vec<u64>, Vec<u32>) {
    let mut ids = ids.to_vec();
    ids.sort_unstable();
    ids.dedup();
    let mut seen_at = vec![none; ids.len()];
    let mut pending = IdSet::of(ids.iter().copied());
    let ranks = IdRanks::of(&pending);
    for (b, batch) in batches {
        for &id in batch.as_ref() {
            if pending.remove(id) {
                if let Some(at) = ranks.rank(id) {
                    seen_at[at] = b as u32;
                }
            }
        }
    }
    (ids, seen_at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_and_last_uses_used_rows_and_net_inserts() {
        let batches: [&[u64]; 3] = [&[1, 2], &[5, 7], &[2, 9]];
        let up = |i: &[u64], o: &[u64]| Update {
            in_ids: i.to_vec(),
            out_ids: o.to_vec(),
            in_positions: (0..i.len() as u64).collect(),
        };
        let updates = [up(&[], &[]), up(&[5, 7], &[1]), up(&[], &[3])];
        let s = AccessSummary::new(&batches, &[2, 3, 1], &[2, 3, 5, 7], &updates);
        assert_eq!(s.num_batches(), 3);
        assert_eq!((s.first_use(1), s.first_use(2), s.first_use(3)), (0, 0, 3));
        assert_eq!(s.first_use(5), 3, "not in the init");
        let last: Vec<(u64, u32)> = s.final_last_uses().collect();
        assert_eq!(last, vec![(2, 2), (3, NEVER), (5, 1), (7, 1)]);
        assert!(s.used(9) && s.used(1) && !s.used(3) && !s.used(1 << 30));
        assert!(s.final_ids().contains(&5) && !s.final_ids().contains(&9));
        assert_eq!(s.net_inserts(), &[0, 1, -1]);
    }
}
