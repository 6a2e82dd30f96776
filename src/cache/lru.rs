//! LRU replacement: what a simple application cache does, the baseline the
//! Belady-driven cache is compared against. The recency order is an
//! intrusive doubly linked list over slots, so a hit, an insert and an
//! eviction are O(1). Slot array, address table, miss path and batch
//! semantics are the shared ones of [`super::dynamic`].

use crate::cache::dynamic::{DynamicCache, Replacement, SlotList};

/// LRU row cache.
pub type LruCache = DynamicCache<Lru>;

/// LRU replacement: a hit or an insert moves the slot to the head; the
/// victim is the tail (least recently used).
pub struct Lru {
    list: SlotList,
}

impl Replacement for Lru {
    fn with_capacity(capacity: usize, _num_nodes: usize) -> Self {
        Lru {
            list: SlotList::new(capacity),
        }
    }

    fn state_bytes(capacity: usize, _num_nodes: usize) -> u64 {
        SlotList::bytes(capacity)
    }

    fn on_hit(&mut self, slot: u32) {
        self.list.unlink(slot);
        self.list.push_front(slot);
    }

    fn on_insert(&mut self, slot: u32, _id: u64) {
        self.list.push_front(slot);
    }

    fn evict(&mut self, _slot_ids: &[u64]) -> u32 {
        let victim = self.list.tail;
        self.list.unlink(victim);
        victim
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::dynamic::testing::matches_reference;
    use std::collections::VecDeque;

    /// Reference LRU on a deque, with the same within-batch semantics:
    /// hits refreshed in order, then misses inserted in order.
    fn reference(batches: &[Vec<u64>], capacity: usize) -> Vec<bool> {
        let mut q: VecDeque<u64> = VecDeque::new(); // front = most recent
        let mut seq = Vec::new();
        for b in batches {
            let hit: Vec<bool> = b.iter().map(|id| q.contains(id)).collect();
            for id in b {
                if let Some(p) = q.iter().position(|x| x == id) {
                    q.remove(p);
                    q.push_front(*id);
                }
            }
            for (id, _) in b.iter().zip(&hit).filter(|(_, h)| !**h) {
                if capacity > 0 {
                    if q.len() == capacity {
                        q.pop_back();
                    }
                    q.push_front(*id);
                }
            }
            seq.extend(hit);
        }
        seq
    }

    matches_reference!(Lru, reference, 0usize..50);
}
