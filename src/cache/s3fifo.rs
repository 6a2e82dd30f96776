//! S3-FIFO replacement (Yang et al., "FIFO queues are all you need for
//! cache eviction", SOSP'23), as the authors' simulator runs it for the
//! paper (libCacheSim `S3FIFOv0`).
//!
//! Three FIFO queues: a small queue S of `max(1, ⌊capacity / 10⌋)` rows, a
//! main queue M of the rest, and a ghost queue G of ids only (no rows),
//! holding at most as many ids as M's share. Each cached row has a 2-bit
//! frequency, capped at 3.
//!
//! * Hit: `freq = min(freq + 1, 3)`. Nothing moves.
//! * Miss: the row is inserted with `freq = 0` — into M if its id is in G
//!   (the id leaves G), else into S — after one eviction if the cache is
//!   full.
//! * Evict: if M holds more than its share, or S is empty, evict from M:
//!   take M's oldest row; if its `freq > 0`, reinsert it at M's head with
//!   `freq - 1` and look again; else it is the victim. Otherwise evict from
//!   S: take S's oldest row; if it was hit at least twice since it entered
//!   (`freq ≥ 2`), move it to M's head with `freq = 0` and look again
//!   (checking M's share only once S is empty); else it is the victim and
//!   its id enters G (G's oldest id leaves when G is full).
//!
//! Slot array, address table, miss path and batch semantics are those of
//! [`super::dynamic`]. All state is allocated up front, so a cache's memory
//! is known before it runs ([`Replacement::state_bytes`]): the two queues
//! and the frequencies (9 bytes per slot), and the ghost queue (see
//! [`Ghost`]: 4 bytes per node and 10 per slot).

use std::collections::VecDeque;

use crate::cache::dynamic::{DynamicCache, Replacement, NONE};

/// S3-FIFO row cache.
pub type S3FifoCache = DynamicCache<S3Fifo>;

/// Frequency cap (two bits).
const MAX_FREQ: u8 = 3;
/// A row moves from S to M when hit at least this often while in S.
const MOVE_TO_MAIN: u8 = 2;
/// A ring position that holds no id (its id left the ghost queue early).
const HOLE: u64 = u64::MAX;

/// The ghost queue: at most `capacity` ids, oldest first, in a ring of
/// fixed length. An id taken out early (a ghost hit) leaves a hole; when
/// the ring is full of ids and holes it is compacted in place. `pos[id]`
/// is the id's place in the ring, or [`NONE`]. The ring has room for a
/// quarter more than `capacity` (and 64), so compacting costs O(1) per
/// ghost hit, amortized.
struct Ghost {
    ring: Vec<u64>,
    /// Oldest entry (id or hole).
    head: usize,
    /// Entries in the ring, holes included.
    len: usize,
    /// Ids in the ring.
    live: usize,
    pos: Vec<u32>,
    capacity: usize,
}

impl Ghost {
    fn ring_len(capacity: usize) -> usize {
        // Indices must fit a u32 below NONE (capacity is below 2^32 - 1).
        capacity
            .saturating_add(capacity / 4 + 64)
            .min(NONE as usize)
    }

    fn new(capacity: usize, num_nodes: usize) -> Ghost {
        // A ghost of no ids (a cache of one row) needs no ring and no table.
        let (ring_len, nodes) = match capacity {
            0 => (0, 0),
            c => (Self::ring_len(c), num_nodes),
        };
        Ghost {
            ring: vec![HOLE; ring_len],
            head: 0,
            len: 0,
            live: 0,
            pos: vec![NONE; nodes],
            capacity,
        }
    }

    fn bytes(capacity: usize, num_nodes: usize) -> u64 {
        if capacity == 0 {
            return 0;
        }
        8 * Self::ring_len(capacity) as u64 + 4 * num_nodes as u64
    }

    fn contains_then_remove(&mut self, id: u64) -> bool {
        match self.pos.get_mut(id as usize) {
            Some(p) if *p != NONE => {
                self.ring[*p as usize] = HOLE;
                *p = NONE;
                self.live -= 1;
                true
            }
            _ => false,
        }
    }

    /// Takes the oldest entry off the ring; returns whether it was an id.
    fn pop_oldest(&mut self) -> bool {
        let id = std::mem::replace(&mut self.ring[self.head], HOLE);
        self.head = (self.head + 1) % self.ring.len();
        self.len -= 1;
        if id == HOLE {
            return false;
        }
        self.pos[id as usize] = NONE;
        self.live -= 1;
        true
    }

    /// Moves the ids to the front of the ring, in order, dropping holes.
    fn compact(&mut self) {
        self.ring.rotate_left(self.head);
        self.head = 0;
        let mut write = 0;
        for read in 0..self.len {
            let id = self.ring[read];
            if id != HOLE {
                // write <= read: the place written was read already.
                self.ring[write] = id;
                self.pos[id as usize] = write as u32;
                write += 1;
            }
        }
        self.ring[write..].fill(HOLE);
        self.len = write;
    }

    fn push(&mut self, id: u64) {
        if self.capacity == 0 || id as usize >= self.pos.len() {
            return;
        }
        // An id enters once (a cached row is never in the ghost queue, but
        // a repeat must not leave a stale entry behind).
        self.contains_then_remove(id);
        while self.live >= self.capacity {
            if self.len == 0 {
                break;
            }
            self.pop_oldest();
        }
        if self.len == self.ring.len() {
            self.compact();
        }
        let at = (self.head + self.len) % self.ring.len();
        self.ring[at] = id;
        self.pos[id as usize] = at as u32;
        self.len += 1;
        self.live += 1;
    }
}

/// S3-FIFO replacement. See the module docs.
pub struct S3Fifo {
    small: VecDeque<u32>,
    main: VecDeque<u32>,
    ghost: Ghost,
    freq: Vec<u8>,
    main_share: usize,
}

impl Replacement for S3Fifo {
    fn with_capacity(capacity: usize, num_nodes: usize) -> Self {
        let small = (capacity / 10).max(1);
        let main_share = capacity.saturating_sub(small);
        S3Fifo {
            small: VecDeque::with_capacity(capacity),
            main: VecDeque::with_capacity(capacity),
            ghost: Ghost::new(main_share, num_nodes),
            freq: vec![0; capacity],
            main_share,
        }
    }

    fn state_bytes(capacity: usize, num_nodes: usize) -> u64 {
        let main_share = capacity.saturating_sub((capacity / 10).max(1));
        9 * capacity as u64 + Ghost::bytes(main_share, num_nodes)
    }

    fn on_hit(&mut self, slot: u32) {
        let f = &mut self.freq[slot as usize];
        *f = (*f + 1).min(MAX_FREQ);
    }

    fn on_insert(&mut self, slot: u32, id: u64) {
        self.freq[slot as usize] = 0;
        if self.ghost.contains_then_remove(id) {
            self.main.push_back(slot);
        } else {
            self.small.push_back(slot);
        }
    }

    fn evict(&mut self, slot_ids: &[u64]) -> u32 {
        loop {
            if self.main.len() > self.main_share || self.small.is_empty() {
                // The cache is full, so M is not empty here; each pass
                // lowers a frequency, so this ends.
                while let Some(t) = self.main.pop_front() {
                    let f = &mut self.freq[t as usize];
                    if *f > 0 {
                        *f -= 1;
                        self.main.push_back(t);
                    } else {
                        return t;
                    }
                }
            }
            while let Some(t) = self.small.pop_front() {
                if self.freq[t as usize] >= MOVE_TO_MAIN {
                    self.freq[t as usize] = 0;
                    self.main.push_back(t);
                } else {
                    self.ghost.push(slot_ids[t as usize]);
                    return t;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::dynamic::testing::{gather_hits, matches_reference};
    use std::collections::HashMap;

    /// Reference S3-FIFO on id queues (front = oldest) with a plain ghost
    /// queue and a frequency map, following the paper's pseudo-code with
    /// the artifact's eviction choice.
    struct Reference {
        small: VecDeque<u64>,
        main: VecDeque<u64>,
        ghost: VecDeque<u64>,
        freq: HashMap<u64, u8>,
        capacity: usize,
        main_share: usize,
    }

    impl Reference {
        fn cached(&self, id: u64) -> bool {
            self.small.contains(&id) || self.main.contains(&id)
        }

        fn evict(&mut self) {
            loop {
                if self.main.len() > self.main_share || self.small.is_empty() {
                    loop {
                        let t = self.main.pop_front().unwrap();
                        if self.freq[&t] > 0 {
                            *self.freq.get_mut(&t).unwrap() -= 1;
                            self.main.push_back(t);
                        } else {
                            self.freq.remove(&t);
                            return;
                        }
                    }
                }
                while let Some(t) = self.small.pop_front() {
                    if self.freq[&t] >= 2 {
                        self.freq.insert(t, 0);
                        self.main.push_back(t);
                    } else {
                        self.freq.remove(&t);
                        if self.ghost.len() == self.main_share {
                            self.ghost.pop_front();
                        }
                        if self.main_share > 0 {
                            self.ghost.push_back(t);
                        }
                        return;
                    }
                }
            }
        }

        fn insert(&mut self, id: u64) {
            if self.small.len() + self.main.len() == self.capacity {
                self.evict();
            }
            self.freq.insert(id, 0);
            if let Some(p) = self.ghost.iter().position(|&g| g == id) {
                self.ghost.remove(p);
                self.main.push_back(id);
            } else {
                self.small.push_back(id);
            }
        }
    }

    fn reference(batches: &[Vec<u64>], capacity: usize) -> Vec<bool> {
        let small = (capacity / 10).max(1);
        let mut r = Reference {
            small: VecDeque::new(),
            main: VecDeque::new(),
            ghost: VecDeque::new(),
            freq: HashMap::new(),
            capacity,
            main_share: capacity.saturating_sub(small),
        };
        let mut seq = Vec::new();
        for b in batches {
            let hit: Vec<bool> = b.iter().map(|&id| r.cached(id)).collect();
            for (&id, &h) in b.iter().zip(&hit) {
                if h {
                    let f = r.freq.get_mut(&id).unwrap();
                    *f = (*f + 1).min(3);
                }
            }
            for (&id, &h) in b.iter().zip(&hit) {
                if !h && capacity > 0 {
                    r.insert(id);
                }
            }
            seq.extend(hit);
        }
        seq
    }

    matches_reference!(S3Fifo, reference, 1usize..50);

    #[test]
    fn ghost_ring_keeps_fifo_order_through_holes_and_compaction() {
        // A queue model of the ghost: at most `capacity` ids, oldest first.
        // Many early removals make holes, so the ring (8 + 2 + 64 entries)
        // fills and compacts many times, also while it wraps around.
        let (capacity, nodes) = (8usize, 40usize);
        let mut ghost = Ghost::new(capacity, nodes);
        let mut model: VecDeque<u64> = VecDeque::new();
        let mut state = 12345u64;
        let mut compactions = 0;
        for _ in 0..20_000 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let mut id = (state >> 33) % nodes as u64;
            if (state >> 20) % 5 < 3 {
                // Mostly ids that are in the queue: each leaves a hole, and
                // the queue seldom reaches its capacity (which would pop
                // the holes at its front), so the ring fills up.
                if !model.is_empty() && (state >> 24) % 8 != 0 {
                    id = model[(state >> 40) as usize % model.len()];
                }
                let expected = model.iter().position(|&g| g == id).map(|p| model.remove(p));
                assert_eq!(ghost.contains_then_remove(id), expected.is_some());
            } else {
                if ghost.len == ghost.ring.len() {
                    compactions += 1;
                }
                if let Some(p) = model.iter().position(|&g| g == id) {
                    model.remove(p);
                }
                if model.len() == capacity {
                    model.pop_front();
                }
                model.push_back(id);
                ghost.push(id);
            }
            let ring: Vec<u64> = (0..ghost.len)
                .map(|k| ghost.ring[(ghost.head + k) % ghost.ring.len()])
                .filter(|&g| g != HOLE)
                .collect();
            assert_eq!(ring, Vec::from(model.clone()));
            assert_eq!(ghost.live, model.len());
        }
        assert!(compactions > 10, "the ring compacted {compactions} times");
    }

    #[test]
    fn state_bytes_is_what_the_state_allocates() {
        let (capacity, nodes) = (1000usize, 5000usize);
        let s = S3Fifo::with_capacity(capacity, nodes);
        let held = 4 * (s.small.capacity() + s.main.capacity())
            + s.freq.capacity()
            + 8 * s.ghost.ring.capacity()
            + 4 * s.ghost.pos.capacity();
        assert_eq!(S3Fifo::state_bytes(capacity, nodes), held as u64);
    }

    #[test]
    fn ghost_hit_goes_to_main_and_survives_a_scan() {
        // Capacity 10: S holds 1 row, M 9. Node 0 is evicted from S into
        // G, comes back (ghost hit: into M), then a scan of new ids only
        // cycles through S while 0 stays cached in M.
        let mut b: Vec<Vec<u64>> = (0..11).map(|i| vec![i]).collect();
        b.push(vec![0]); // miss, ghost hit: into M
        b.extend((100..140).map(|i| vec![i])); // one-hit scan
        b.push(vec![0]);
        let seq = gather_hits::<S3Fifo>(&b, 10, 200);
        assert!(!seq[11], "0 was evicted, so its return is a miss");
        assert!(seq[seq.len() - 1], "0 survived the scan in M");
    }
}
