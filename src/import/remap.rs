//! Id remapping for inputs whose node ids are not `0..N` (SNAP edge lists,
//! sparse crawls): the distinct ids of the edge list, sorted, become
//! `0..N` in order, and the store keeps the original id of every node.
//!
//! Collection is streaming: ids are buffered in a bounded block, each full
//! block is sorted, deduplicated and merged into the running sorted set, so
//! memory is the distinct ids (8 bytes each) plus one block, whatever the
//! edge count. Lookup is a direct table when the original ids are dense
//! enough to afford one within the memory budget (4 bytes per id up to the
//! largest), else a binary search in the sorted set.
#![deny(clippy::unwrap_used, clippy::indexing_slicing)]

use crate::error::{Error, Result};

/// Collects ids; see the module docs.
pub struct IdCollector {
    block: Vec<u64>,
    block_cap: usize,
    merged: Vec<u64>,
}

impl IdCollector {
    /// A collector whose buffer holds at most `memory / 4` bytes of ids.
    pub fn new(memory: u64) -> Self {
        let block_cap = ((memory / 4) / 8).clamp(1 << 10, 1 << 27) as usize;
        IdCollector {
            block: Vec::new(),
            block_cap,
            merged: Vec::new(),
        }
    }

    /// Adds one id.
    pub fn push(&mut self, id: u64) {
        self.block.push(id);
        if self.block.len() >= self.block_cap {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if self.block.is_empty() {
            return;
        }
        self.block.sort_unstable();
        self.block.dedup();
        let old = std::mem::take(&mut self.merged);
        let mut out = Vec::with_capacity(old.len() + self.block.len());
        let (mut a, mut b) = (old.iter().peekable(), self.block.iter().peekable());
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(&&x), Some(&&y)) if x < y => a.next(),
                (Some(&&x), Some(&&y)) if x > y => b.next(),
                (Some(_), Some(_)) => {
                    a.next();
                    b.next()
                }
                (Some(_), None) => a.next(),
                (None, Some(_)) => b.next(),
                (None, None) => break,
            };
            if let Some(&v) = next {
                out.push(v);
            }
        }
        self.merged = out;
        self.block.clear();
    }

    /// The finished map.
    pub fn finish(mut self, memory: u64) -> Result<IdMap> {
        self.flush();
        self.block = Vec::new();
        IdMap::from_sorted(self.merged, memory)
    }
}

/// Original id → new id.
pub struct IdMap {
    ids: Vec<u64>,
    dense: Option<Vec<u32>>,
}

impl IdMap {
    /// From sorted distinct original ids.
    pub fn from_sorted(ids: Vec<u64>, memory: u64) -> Result<Self> {
        if ids.windows(2).any(|w| matches!(w, [a, b] if a >= b)) {
            return Err(Error::invalid_argument(
                "id map input is not sorted and distinct",
            ));
        }
        let max = ids.last().copied().unwrap_or(0);
        let table_bytes = max.saturating_add(1).saturating_mul(4);
        let dense = (ids.len() < u32::MAX as usize && table_bytes <= memory / 4).then(|| {
            let mut t = vec![u32::MAX; (max + 1) as usize];
            for (new, &old) in ids.iter().enumerate() {
                if let Some(slot) = t.get_mut(old as usize) {
                    *slot = new as u32;
                }
            }
            t
        });
        Ok(IdMap { ids, dense })
    }

    /// Number of distinct ids.
    pub fn len(&self) -> u64 {
        self.ids.len() as u64
    }

    /// True when no ids were seen.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// New id of `original`, if it occurred.
    pub fn get(&self, original: u64) -> Option<u64> {
        match &self.dense {
            Some(t) => t
                .get(usize::try_from(original).ok()?)
                .copied()
                .filter(|&v| v != u32::MAX)
                .map(u64::from),
            None => self.ids.binary_search(&original).ok().map(|i| i as u64),
        }
    }

    /// Original id of every new id, in order.
    pub fn original_ids(&self) -> &[u64] {
        &self.ids
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn map_is_the_rank_in_the_sorted_distinct_ids(
            ids in proptest::collection::vec(0u64..5000, 0..3000),
            memory in prop_oneof![Just(0u64), Just(1u64 << 30)],
        ) {
            let mut c = IdCollector::new(0);
            for &i in &ids {
                c.push(i);
            }
            let m = c.finish(memory).unwrap();
            let mut want = ids.clone();
            want.sort_unstable();
            want.dedup();
            prop_assert_eq!(m.original_ids(), want.as_slice());
            for (rank, &id) in want.iter().enumerate() {
                prop_assert_eq!(m.get(id), Some(rank as u64));
            }
            prop_assert_eq!(m.get(5001), None);
            prop_assert_eq!(m.get(u64::MAX), None);
        }
    }
}
