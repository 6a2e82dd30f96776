//! 2Q replacement (Johnson and Shasha, "2Q: A Low Overhead High
//! Performance Buffer Management Replacement Algorithm", VLDB'94), the
//! "full version" of the paper with its recommended sizes.
//!
//! Three queues: `A1in`, a FIFO of rows seen once recently (at most `Kin =
//! ⌊capacity / 4⌋` of them before it gives up its rows); `Am`, an LRU list
//! of rows hit again after they left `A1in`; and `A1out`, a FIFO of the ids
//! (no rows) last evicted from `A1in`, at most `Kout = ⌊capacity / 2⌋`.
//!
//! * Hit in `Am`: the row moves to `Am`'s head. Hit in `A1in`: nothing
//!   moves (a burst of correlated references counts once).
//! * Miss, when the cache is full, first frees a slot: if `A1in` holds more
//!   than `Kin` rows, its oldest row is evicted and its id enters `A1out`
//!   (whose oldest id leaves when it holds more than `Kout`); otherwise
//!   `Am`'s least recently used row is evicted (its id is forgotten).
//! * Then the new row enters `Am`'s head if its id was in `A1out` (as it
//!   stood before the eviction; the id leaves `A1out`), else `A1in`'s head.
//!
//! Both queues are intrusive lists over slots; `A1out` is a list over a
//! ring of `Kout + 1` ids (one above its bound between an eviction and the
//! insert that follows it, so the insert sees `A1out` as it stood before
//! the eviction, as the paper's order has it) with each node's place in a
//! table. Slot array, address table, miss path and batch semantics are
//! those of [`super::dynamic`].

use crate::cache::dynamic::{DynamicCache, Replacement, SlotList, NONE};

/// 2Q row cache.
pub type TwoQCache = DynamicCache<TwoQ>;

/// 2Q replacement. See the module docs.
pub struct TwoQ {
    /// Rows seen once (FIFO: new at the head, oldest at the tail).
    a1in: SlotList,
    /// Rows seen again (LRU: most recent at the head).
    am: SlotList,
    /// Whether the row in a slot is in `Am` (else in `A1in`).
    in_am: Vec<bool>,
    /// Rows in `A1in`.
    a1in_len: usize,
    /// `Kin`.
    kin: usize,
    ghosts: Ghosts,
}

/// `A1out`: at most `bound` ids, oldest first, in a list over a ring of
/// `bound + 1` places.
struct Ghosts {
    order: SlotList,
    ids: Vec<u64>,
    /// Places not in use.
    free: Vec<u32>,
    /// Each node's place, or [`NONE`].
    place: Vec<u32>,
    bound: usize,
}

impl Ghosts {
    fn new(bound: usize, num_nodes: usize) -> Ghosts {
        // No ghosts (a cache of one row) need no table.
        let num_nodes = if bound == 0 { 0 } else { num_nodes };
        Ghosts {
            order: SlotList::new(bound + 1),
            ids: vec![u64::MAX; bound + 1],
            free: (0..=bound as u32).rev().collect(),
            place: vec![NONE; num_nodes],
            bound,
        }
    }

    fn bytes(bound: usize, num_nodes: usize) -> u64 {
        let num_nodes = if bound == 0 { 0 } else { num_nodes };
        let places = bound as u64 + 1;
        SlotList::bytes(places as usize) + 12 * places + 4 * num_nodes as u64
    }

    fn len(&self) -> usize {
        self.ids.len() - self.free.len()
    }

    /// Adds `id` as the newest (room for one above the bound).
    fn push(&mut self, id: u64) {
        if self.free.is_empty() {
            self.pop_oldest();
        }
        if let Some(p) = self.free.pop() {
            self.ids[p as usize] = id;
            self.place[id as usize] = p;
            self.order.push_front(p);
        }
    }

    fn pop_oldest(&mut self) {
        let p = self.order.tail;
        if p != NONE {
            self.remove_place(p);
        }
    }

    fn remove_place(&mut self, p: u32) {
        self.order.unlink(p);
        self.place[self.ids[p as usize] as usize] = NONE;
        self.free.push(p);
    }

    fn contains(&self, id: u64) -> bool {
        self.place.get(id as usize).is_some_and(|&p| p != NONE)
    }

    /// `id` is no longer a ghost.
    fn take(&mut self, id: u64) {
        if let Some(&p) = self.place.get(id as usize) {
            if p != NONE {
                self.remove_place(p);
            }
        }
    }

    /// Drops the oldest ids above the bound.
    fn trim(&mut self) {
        while self.len() > self.bound {
            self.pop_oldest();
        }
    }
}

impl Replacement for TwoQ {
    fn with_capacity(capacity: usize, num_nodes: usize) -> Self {
        TwoQ {
            a1in: SlotList::new(capacity),
            am: SlotList::new(capacity),
            in_am: vec![false; capacity],
            a1in_len: 0,
            kin: capacity / 4,
            ghosts: Ghosts::new(capacity / 2, num_nodes),
        }
    }

    fn state_bytes(capacity: usize, num_nodes: usize) -> u64 {
        2 * SlotList::bytes(capacity) + capacity as u64 + Ghosts::bytes(capacity / 2, num_nodes)
    }

    fn on_hit(&mut self, slot: u32) {
        if self.in_am[slot as usize] {
            self.am.unlink(slot);
            self.am.push_front(slot);
        }
    }

    fn on_insert(&mut self, slot: u32, id: u64) {
        // Whether `id` was in A1out before the eviction that freed `slot`
        // (that eviction's id is not `id`, which was not cached); then
        // A1out goes back to its bound.
        let seen = self.ghosts.contains(id);
        self.ghosts.trim();
        if seen {
            self.ghosts.take(id);
            self.in_am[slot as usize] = true;
            self.am.push_front(slot);
        } else {
            self.in_am[slot as usize] = false;
            self.a1in.push_front(slot);
            self.a1in_len += 1;
        }
    }

    fn evict(&mut self, slot_ids: &[u64]) -> u32 {
        // A full cache with an empty Am holds capacity > Kin rows in A1in.
        if self.a1in_len > self.kin || self.am.tail == NONE {
            let victim = self.a1in.tail;
            self.a1in.unlink(victim);
            self.a1in_len -= 1;
            if self.ghosts.bound > 0 {
                self.ghosts.push(slot_ids[victim as usize]);
            }
            victim
        } else {
            let victim = self.am.tail;
            self.am.unlink(victim);
            victim
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::dynamic::testing::{gather_hits, matches_reference};
    use std::collections::VecDeque;

    /// Reference 2Q on deques, in the paper's order: look up A1out, free a
    /// slot, insert.
    fn reference(batches: &[Vec<u64>], capacity: usize) -> Vec<bool> {
        let (kin, kout) = (capacity / 4, capacity / 2);
        // Front = newest (A1in, A1out) or most recent (Am).
        let (mut a1in, mut am, mut a1out) = (VecDeque::new(), VecDeque::new(), VecDeque::new());
        let mut seq = Vec::new();
        for b in batches {
            let hit: Vec<bool> = b
                .iter()
                .map(|id| a1in.contains(id) || am.contains(id))
                .collect();
            for id in b {
                if let Some(p) = am.iter().position(|x| x == id) {
                    am.remove(p);
                    am.push_front(*id);
                }
            }
            for (id, _) in b.iter().zip(&hit).filter(|(_, h)| !**h) {
                if capacity == 0 {
                    continue;
                }
                let ghost = a1out.contains(id);
                if a1in.len() + am.len() == capacity {
                    if a1in.len() > kin {
                        let old = a1in.pop_back().unwrap();
                        a1out.push_front(old);
                        if a1out.len() > kout {
                            a1out.pop_back();
                        }
                    } else {
                        am.pop_back();
                    }
                }
                if ghost {
                    a1out.retain(|x| x != id);
                    am.push_front(*id);
                } else {
                    a1in.push_front(*id);
                }
            }
            seq.extend(hit);
        }
        seq
    }

    matches_reference!(TwoQ, reference, 0usize..50);

    #[test]
    fn a_row_seen_twice_survives_a_scan_that_flushes_lru() {
        // Capacity 4 (Kin 1, Kout 2): 1..4 fill A1in; 5 evicts 1 (A1in is
        // over Kin), which becomes a ghost; 1 again enters Am (evicting 2);
        // the scan 6, 7, 8, 9 cycles through A1in and 1 stays. LRU loses it.
        let batches = [
            vec![1, 2, 3, 4],
            vec![5],
            vec![1],
            vec![6],
            vec![7],
            vec![8],
            vec![9],
            vec![1],
        ];
        let mut want = vec![false; 10];
        want.push(true);
        assert_eq!(gather_hits::<TwoQ>(&batches, 4, 10), want);
        want[10] = false;
        assert_eq!(gather_hits::<crate::cache::lru::Lru>(&batches, 4, 10), want);
    }
}
