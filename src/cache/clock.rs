//! CLOCK replacement (second chance; Corbató 1968, as in every OS text).
//!
//! The slots form a circle in slot order (the cache fills slots `0, 1, 2,
//! …` and a new row takes its victim's slot, so slot order is the circle).
//! A hit sets the row's reference bit; a new row starts with the bit clear.
//! To evict, the hand (starting at slot 0) skips every row whose bit is set,
//! clearing it — its second chance — and evicts the first row whose bit is
//! clear; the new row takes that slot and the hand moves past it, so the
//! new row is the last the hand will reach.
//!
//! Slot array, address table, miss path and batch semantics are those of
//! [`super::dynamic`].

use crate::cache::dynamic::{DynamicCache, Replacement};

/// CLOCK row cache.
pub type ClockCache = DynamicCache<Clock>;

/// CLOCK replacement. See the module docs.
pub struct Clock {
    referenced: Vec<bool>,
    hand: usize,
}

impl Replacement for Clock {
    fn with_capacity(capacity: usize, _num_nodes: usize) -> Self {
        Clock {
            referenced: vec![false; capacity],
            hand: 0,
        }
    }

    fn state_bytes(capacity: usize, _num_nodes: usize) -> u64 {
        capacity as u64
    }

    fn on_hit(&mut self, slot: u32) {
        self.referenced[slot as usize] = true;
    }

    fn on_insert(&mut self, slot: u32, _id: u64) {
        self.referenced[slot as usize] = false;
    }

    fn evict(&mut self, _slot_ids: &[u64]) -> u32 {
        let n = self.referenced.len();
        while self.referenced[self.hand] {
            self.referenced[self.hand] = false;
            self.hand = if self.hand + 1 == n { 0 } else { self.hand + 1 };
        }
        let victim = self.hand;
        self.hand = if self.hand + 1 == n { 0 } else { self.hand + 1 };
        victim as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::dynamic::testing::{hits_marking, matches_reference};
    use std::collections::VecDeque;

    /// Reference second chance as a FIFO queue: the front is the oldest;
    /// a front row with its bit set is cleared and moved to the back.
    fn reference(batches: &[Vec<u64>], capacity: usize) -> Vec<bool> {
        let mut q: VecDeque<(u64, bool)> = VecDeque::new();
        let mut seq = Vec::new();
        for b in batches {
            let hit = hits_marking(q.make_contiguous(), b);
            for (id, _) in b.iter().zip(&hit).filter(|(_, h)| !**h) {
                if capacity == 0 {
                    continue;
                }
                if q.len() == capacity {
                    while let Some((x, true)) = q.front().copied() {
                        q.pop_front();
                        q.push_back((x, false));
                    }
                    q.pop_front();
                }
                q.push_back((*id, false));
            }
            seq.extend(hit);
        }
        seq
    }

    matches_reference!(Clock, reference, 1usize..50);
}
