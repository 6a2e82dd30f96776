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
//! [`super::dynamic`].

use std::collections::VecDeque;

use crate::cache::dynamic::{DynamicCache, Replacement};
use crate::hash::FxMap;

/// S3-FIFO row cache.
pub type S3FifoCache = DynamicCache<S3Fifo>;

/// Frequency cap (two bits).
const MAX_FREQ: u8 = 3;
/// A row moves from S to M when hit at least this often while in S.
const MOVE_TO_MAIN: u8 = 2;

/// The ghost queue: ids in FIFO order, with removal from the middle done
/// lazily (an entry is live while `live[id]` holds its sequence number).
struct Ghost {
    queue: VecDeque<(u64, u64)>,
    live: FxMap<u64, u64>,
    capacity: usize,
    seq: u64,
}

impl Ghost {
    fn contains_then_remove(&mut self, id: u64) -> bool {
        self.live.remove(&id).is_some()
    }

    fn push(&mut self, id: u64) {
        if self.capacity == 0 {
            return;
        }
        while self.live.len() >= self.capacity {
            match self.queue.pop_front() {
                Some((old, s)) if self.live.get(&old) == Some(&s) => {
                    self.live.remove(&old);
                }
                Some(_) => {}
                None => break,
            }
        }
        self.seq += 1;
        self.queue.push_back((id, self.seq));
        self.live.insert(id, self.seq);
        if self.queue.len() > 2 * self.capacity + 64 {
            let live = &self.live;
            self.queue.retain(|(x, s)| live.get(x) == Some(s));
        }
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
    fn with_capacity(capacity: usize) -> Self {
        let small = (capacity / 10).max(1);
        let main_share = capacity.saturating_sub(small);
        S3Fifo {
            small: VecDeque::with_capacity(capacity),
            main: VecDeque::with_capacity(capacity),
            ghost: Ghost {
                queue: VecDeque::new(),
                live: FxMap::default(),
                capacity: main_share,
                seq: 0,
            },
            freq: vec![0; capacity],
            main_share,
        }
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
