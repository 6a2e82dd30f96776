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

#[cfg(test)]
mod tests {
    use super::{IdRanks, IdSet};

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
