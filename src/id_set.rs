//! A set of node ids as one bit each: an eighth of a byte a node, against
//! the feature cache's four-byte address table. The inspector and the
//! executor use it for the per-superbatch sets they keep (rows used, rows
//! pending, rows cached in a replay).

/// Node ids, a bit each; it grows to the largest id inserted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct IdSet(Vec<u64>);

impl IdSet {
    /// An empty set with room for ids up to `max` (it grows past it).
    pub(crate) fn up_to(max: u64) -> IdSet {
        IdSet(vec![0; (max as usize >> 6) + 1])
    }

    /// The set of `ids`.
    pub(crate) fn of(ids: impl IntoIterator<Item = u64> + Clone) -> IdSet {
        let max = ids.clone().into_iter().max().unwrap_or(0);
        let mut set = IdSet::up_to(max);
        ids.into_iter().for_each(|id| {
            set.insert(id);
        });
        set
    }

    /// Adds `id`; false when it was there already.
    pub(crate) fn insert(&mut self, id: u64) -> bool {
        let word = id as usize >> 6;
        if word >= self.0.len() {
            self.0.resize(word + 1, 0);
        }
        let had = self.0[word] & (1 << (id & 63)) != 0;
        self.0[word] |= 1 << (id & 63);
        !had
    }

    /// Removes `id`; false when it was not there.
    pub(crate) fn remove(&mut self, id: u64) -> bool {
        match self.0.get_mut(id as usize >> 6) {
            Some(w) if *w & (1 << (id & 63)) != 0 => {
                *w &= !(1 << (id & 63));
                true
            }
            _ => false,
        }
    }

    /// Whether `id` is in the set.
    pub(crate) fn contains(&self, id: u64) -> bool {
        self.0
            .get(id as usize >> 6)
            .is_some_and(|w| w & (1 << (id & 63)) != 0)
    }
}

/// The ids of a set in ascending order, each found by its position in
/// constant time (a count of the ids before each 64-bit word, 8 bytes a
/// word): what a binary search over the sorted ids answers, without its
/// cache miss a step.
#[derive(Debug, Clone, Default)]
pub(crate) struct IdRanks {
    words: Vec<u64>,
    before: Vec<u64>,
}

impl IdRanks {
    /// The ranks of `set`'s ids (a snapshot: later changes to `set` are
    /// not seen).
    pub(crate) fn of(set: &IdSet) -> IdRanks {
        let mut count = 0u64;
        let before = set
            .0
            .iter()
            .map(|w| {
                let at = count;
                count += u64::from(w.count_ones());
                at
            })
            .collect();
        IdRanks {
            words: set.0.clone(),
            before,
        }
    }

    /// The position of `id` among the ids in ascending order; None when
    /// `id` is not one of them.
    pub(crate) fn rank(&self, id: u64) -> Option<usize> {
        let word = id as usize >> 6;
        let bits = *self.words.get(word)?;
        let bit = 1u64 << (id & 63);
        (bits & bit != 0)
            .then(|| (self.before[word] + u64::from((bits & (bit - 1)).count_ones())) as usize)
    }
}

/// Fewest ids [`sort_distinct`] sorts through their bits; fewer are
/// sorted by comparison.
const FEWEST_SORTED_BY_BITS: usize = 1024;
/// Most 64-bit words of bits per id for which [`sort_distinct`] sorts
/// through the bits: one, so the bits never take more memory than the ids
/// themselves. (A word scanned costs about what a comparison does, and a
/// comparison sort of `k` ids makes `log2 k` comparisons an id, ~19 for
/// an init of 500 k rows.)
const MAX_WORDS_PER_ID: usize = 1;

/// Sorts `ids` ascending. Ids that are distinct and dense enough (their
/// span at most [`MAX_WORDS_PER_ID`] words of bits an id) are sorted by
/// setting a bit each and reading the bits back in order, in time linear
/// in the ids and their span: an init's 500 k rows of 3 M nodes in 6 ms
/// instead of the comparison sort's 25–30 ms, which the device waited for
/// at every superbatch boundary. Any other input (a repeated id included)
/// is sorted by comparison.
pub(crate) fn sort_distinct(ids: &mut [u64]) {
    let Some(&max) = ids.iter().max() else {
        return;
    };
    let words = (max >> 6) as usize + 1;
    if ids.len() < FEWEST_SORTED_BY_BITS || words > ids.len() * MAX_WORDS_PER_ID {
        ids.sort_unstable();
        return;
    }
    let mut set = IdSet::up_to(max);
    if !ids.iter().all(|&id| set.insert(id)) {
        ids.sort_unstable();
        return;
    }
    let mut out = ids.iter_mut();
    for (w, &bits) in set.0.iter().enumerate() {
        let mut rest = bits;
        while rest != 0 {
            let bit = rest.trailing_zeros() as u64;
            rest &= rest - 1;
            // As many bits are set as there are ids: `out` never runs dry.
            if let Some(slot) = out.next() {
                *slot = ((w as u64) << 6) | bit;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{sort_distinct, IdRanks, IdSet};

    #[test]
    fn distinct_ids_sort_as_a_comparison_sort_does() {
        let mut rng = crate::rng::Wyrand(7);
        // Dense (through the bits), sparse, small, with repeats (both by
        // comparison), and ids at the ends of their words.
        let dense: Vec<u64> = {
            let mut v: Vec<u64> = (0..200_000u64)
                .filter(|_| rng.next_u64() % 3 == 0)
                .collect();
            for i in (1..v.len()).rev() {
                v.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
            }
            v
        };
        let sparse: Vec<u64> = (0..5_000u64).map(|i| (i * 1_000_003) % (1 << 40)).collect();
        let small = vec![9u64, 3, 7, 1];
        let mut repeated = dense.clone();
        repeated.extend_from_slice(&dense[..10]);
        let edges: Vec<u64> = (0..4_096u64)
            .rev()
            .map(|i| i * 64 + 63)
            .chain([0, 64])
            .collect();
        for ids in [dense, sparse, small, repeated, edges, Vec::new()] {
            let mut expected = ids.clone();
            expected.sort_unstable();
            let mut sorted = ids;
            sort_distinct(&mut sorted);
            assert_eq!(sorted, expected);
        }
    }

    #[test]
    fn ranks_are_the_positions_in_the_sorted_ids() {
        let mut ids: Vec<u64> = (0..5000u64).map(|i| (i * 7919) % 100_003).collect();
        ids.extend([0, 63, 64, 127, 128, 100_002]);
        ids.sort_unstable();
        ids.dedup();
        let ranks = IdRanks::of(&IdSet::of(ids.iter().copied()));
        for probe in 0..100_100u64 {
            assert_eq!(
                ranks.rank(probe),
                ids.binary_search(&probe).ok(),
                "id {probe}"
            );
        }
        assert_eq!(ranks.rank(1 << 40), None);
        assert_eq!(IdRanks::of(&IdSet::default()).rank(0), None);
    }

    #[test]
    fn grows_past_its_size_and_answers_for_ids_beyond_it() {
        let mut s = IdSet::up_to(10);
        assert!(!s.contains(1_000));
        assert!(s.insert(1_000));
        assert!(!s.insert(1_000));
        assert!(s.contains(1_000) && !s.contains(999));
        assert!(s.remove(1_000) && !s.remove(1_000) && !s.remove(1 << 40));
        let t = IdSet::of([3u64, 64, 65]);
        assert!(t.contains(3) && t.contains(64) && t.contains(65) && !t.contains(63));
    }
}
