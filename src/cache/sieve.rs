//! SIEVE replacement (Zhang et al., "SIEVE is Simpler than LRU", NSDI'24).
//!
//! One FIFO queue (new rows enter at the head), a visited bit per row and a
//! hand. A hit only sets the row's visited bit — no list update. To evict,
//! the hand starts where it last stopped (at the tail the first time, and
//! again whenever it runs off the head), moves from the tail toward the
//! head, clears the visited bit of every row it passes, and evicts the
//! first row whose bit was clear; the hand then rests on that row's
//! neighbour toward the head. Rows that survive stay where they are, so new
//! rows and retained old ones are kept apart by the hand.
//!
//! The queue is an intrusive doubly linked list over slots (shared with
//! LRU); slot array, address table, miss path and batch semantics are those
//! of [`super::dynamic`].

use crate::cache::dynamic::{DynamicCache, Replacement, SlotList, NONE};

/// SIEVE row cache.
pub type SieveCache = DynamicCache<Sieve>;

/// SIEVE replacement. See the module docs.
pub struct Sieve {
    list: SlotList,
    visited: Vec<bool>,
    hand: u32,
}

impl Replacement for Sieve {
    fn with_capacity(capacity: usize, _num_nodes: usize) -> Self {
        Sieve {
            list: SlotList::new(capacity),
            visited: vec![false; capacity],
            hand: NONE,
        }
    }

    fn state_bytes(capacity: usize, _num_nodes: usize) -> u64 {
        SlotList::bytes(capacity) + capacity as u64
    }

    fn on_hit(&mut self, slot: u32) {
        self.visited[slot as usize] = true;
    }

    fn on_insert(&mut self, slot: u32, _id: u64) {
        self.visited[slot as usize] = false;
        self.list.push_front(slot);
    }

    fn evict(&mut self, _slot_ids: &[u64]) -> u32 {
        let mut o = if self.hand == NONE {
            self.list.tail
        } else {
            self.hand
        };
        while self.visited[o as usize] {
            self.visited[o as usize] = false;
            o = self.list.prev[o as usize];
            if o == NONE {
                o = self.list.tail;
            }
        }
        self.hand = self.list.prev[o as usize];
        self.list.unlink(o);
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::dynamic::testing::{gather_hits, hits_marking, matches_reference};

    /// Reference SIEVE on a vector ordered tail (index 0, oldest) to head,
    /// with the hand as an index into it.
    fn reference(batches: &[Vec<u64>], capacity: usize) -> Vec<bool> {
        let mut q: Vec<(u64, bool)> = Vec::new(); // (id, visited), tail first
        let mut hand: Option<usize> = None;
        let mut seq = Vec::new();
        for b in batches {
            let hit = hits_marking(&mut q, b);
            for (id, _) in b.iter().zip(&hit).filter(|(_, h)| !**h) {
                if capacity == 0 {
                    continue;
                }
                if q.len() == capacity {
                    let mut i = hand.unwrap_or(0);
                    while q[i].1 {
                        q[i].1 = false;
                        i = if i + 1 == q.len() { 0 } else { i + 1 };
                    }
                    q.remove(i);
                    // The hand rests on the evicted row's neighbour toward
                    // the head, which now sits at index i (none: off the head).
                    hand = (i < q.len()).then_some(i);
                }
                q.push((*id, false));
            }
            seq.extend(hit);
        }
        seq
    }

    matches_reference!(Sieve, reference, 1usize..50);

    #[test]
    fn hand_keeps_visited_rows_and_evicts_new_ones_first() {
        // Capacity 3: 1, 2, 3 in; 1 hit; 4 in evicts 2 (1 was visited,
        // its bit cleared); 5 in evicts 3 (the hand moved on), not 1.
        let seq = gather_hits::<Sieve>(
            &[vec![1, 2, 3], vec![1], vec![4], vec![5], vec![1, 2, 3]],
            3,
            10,
        );
        assert_eq!(
            seq,
            [false, false, false, true, false, false, true, false, false]
        );
    }
}
