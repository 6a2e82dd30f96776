//! A dynamic row cache with LRU replacement: what a simple application
//! cache does, the baseline the Belady-driven cache is compared against.
//!
//! Same address-table layout as [`FeatureCache`](super::feature_cache::FeatureCache);
//! the recency order is an intrusive doubly linked list over slots, so a hit,
//! an insert and an eviction are O(1).

use crate::cache::feature_cache::{RowSource, EMPTY};
use crate::error::{Error, Result};

const NONE: u32 = u32::MAX;

/// LRU row cache. See the module docs.
pub struct LruCache {
    table: Vec<u32>,
    slot_ids: Vec<u64>,
    prev: Vec<u32>,
    next: Vec<u32>,
    head: u32, // most recent
    tail: u32, // least recent
    used: usize,
    slots: Vec<u8>,
    row_bytes: usize,
    hits: u64,
    misses: u64,
    miss_ids: Vec<u64>,
    miss_at: Vec<usize>,
    miss_rows: Vec<u8>,
}

impl LruCache {
    /// An empty cache of `capacity` rows.
    pub fn new(num_nodes: u64, capacity: usize, row_bytes: usize) -> Result<Self> {
        if capacity as u64 >= u64::from(NONE) {
            return Err(Error::invalid_argument(format!(
                "cache capacity {capacity} rows must be below 2^32 - 1"
            )));
        }
        let nodes = usize::try_from(num_nodes)
            .map_err(|_| Error::invalid_argument("node count does not fit in memory"))?;
        Ok(LruCache {
            table: vec![EMPTY; nodes],
            slot_ids: vec![u64::MAX; capacity],
            prev: vec![NONE; capacity],
            next: vec![NONE; capacity],
            head: NONE,
            tail: NONE,
            used: 0,
            slots: vec![0u8; capacity * row_bytes],
            row_bytes,
            hits: 0,
            misses: 0,
            miss_ids: Vec::new(),
            miss_at: Vec::new(),
            miss_rows: Vec::new(),
        })
    }

    /// (hits, misses) so far.
    pub fn counts(&self) -> (u64, u64) {
        (self.hits, self.misses)
    }

    fn unlink(&mut self, s: u32) {
        let (p, n) = (self.prev[s as usize], self.next[s as usize]);
        if p == NONE {
            self.head = n
        } else {
            self.next[p as usize] = n
        }
        if n == NONE {
            self.tail = p
        } else {
            self.prev[n as usize] = p
        }
    }

    fn push_front(&mut self, s: u32) {
        self.prev[s as usize] = NONE;
        self.next[s as usize] = self.head;
        if self.head != NONE {
            self.prev[self.head as usize] = s;
        }
        self.head = s;
        if self.tail == NONE {
            self.tail = s;
        }
    }

    /// Gathers `ids` into `out`: hits from slots (and refreshed), misses
    /// read through `source` in one call and then inserted, evicting the
    /// least recently used rows. Returns the misses.
    pub fn gather(&mut self, ids: &[u64], out: &mut [u8], source: &dyn RowSource) -> Result<u64> {
        let rb = self.row_bytes;
        Error::check_output_len(out.len(), ids.len(), rb, "bytes")?;
        self.miss_ids.clear();
        self.miss_at.clear();
        for (pos, &id) in ids.iter().enumerate() {
            let slot = *self.table.get(id as usize).ok_or_else(|| {
                Error::OutOfRange(format!(
                    "node {id} is not below the node count {}",
                    self.table.len()
                ))
            })?;
            if slot == EMPTY {
                self.miss_ids.push(id);
                self.miss_at.push(pos);
            } else {
                let s = slot as usize * rb;
                out[pos * rb..(pos + 1) * rb].copy_from_slice(&self.slots[s..s + rb]);
                self.unlink(slot);
                self.push_front(slot);
            }
        }
        let misses = self.miss_ids.len();
        self.miss_rows.resize(misses * rb, 0);
        source.read_rows(&self.miss_ids, &mut self.miss_rows)?;
        let capacity = self.slot_ids.len();
        for k in 0..misses {
            let (id, pos) = (self.miss_ids[k], self.miss_at[k]);
            let row = k * rb..(k + 1) * rb;
            out[pos * rb..(pos + 1) * rb].copy_from_slice(&self.miss_rows[row.clone()]);
            if capacity == 0 {
                continue;
            }
            let slot = if self.used < capacity {
                self.used += 1;
                (self.used - 1) as u32
            } else {
                let victim = self.tail;
                self.unlink(victim);
                self.table[self.slot_ids[victim as usize] as usize] = EMPTY;
                victim
            };
            self.slots[slot as usize * rb..(slot as usize + 1) * rb]
                .copy_from_slice(&self.miss_rows[row]);
            self.slot_ids[slot as usize] = id;
            self.table[id as usize] = slot;
            self.push_front(slot);
        }
        self.hits += (ids.len() - misses) as u64;
        self.misses += misses as u64;
        Ok(misses as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Strategy;
    use std::collections::VecDeque;

    struct Rows;
    impl RowSource for Rows {
        fn row_bytes(&self) -> usize {
            2
        }
        fn read_rows(&self, ids: &[u64], out: &mut [u8]) -> Result<()> {
            for (id, r) in ids.iter().zip(out.chunks_exact_mut(2)) {
                r.copy_from_slice(&(*id as u16).to_le_bytes());
            }
            Ok(())
        }
    }

    /// Reference LRU on a deque, with the same within-batch semantics:
    /// hits refreshed in order, then misses inserted in order.
    fn reference(batches: &[Vec<u64>], capacity: usize) -> u64 {
        let mut q: VecDeque<u64> = VecDeque::new(); // front = most recent
        let mut misses = 0;
        for b in batches {
            let miss: Vec<u64> = b.iter().copied().filter(|id| !q.contains(id)).collect();
            for id in b {
                if let Some(p) = q.iter().position(|x| x == id) {
                    q.remove(p);
                    q.push_front(*id);
                }
            }
            for id in &miss {
                if capacity > 0 {
                    if q.len() == capacity {
                        q.pop_back();
                    }
                    q.push_front(*id);
                }
            }
            misses += miss.len() as u64;
        }
        misses
    }

    proptest::proptest! {
        #[test]
        fn matches_reference_and_returns_true_rows(
            batches in proptest::collection::vec(proptest::collection::btree_set(0u64..30, 0..10).prop_map(|s| s.into_iter().collect::<Vec<_>>()), 0..20),
            capacity in 0usize..12,
        ) {
            let mut c = LruCache::new(30, capacity, 2).unwrap();
            let mut total = 0;
            for b in &batches {
                let mut out = vec![0u8; b.len() * 2];
                total += c.gather(b, &mut out, &Rows).unwrap();
                let mut want = vec![0u8; b.len() * 2];
                Rows.read_rows(b, &mut want).unwrap();
                proptest::prop_assert_eq!(out, want);
            }
            proptest::prop_assert_eq!(total, reference(&batches, capacity));
        }
    }
}
