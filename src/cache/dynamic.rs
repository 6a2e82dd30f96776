//! Dynamic row caches: one address table, one slot array and one batched
//! miss path shared by every demand-filled policy (`lru`, `sieve`,
//! `s3fifo`, `clock`, `2q`); only the replacement decision differs, and it sits
//! behind the small [`Replacement`] trait.
//!
//! # Batch semantics (identical for every dynamic policy)
//!
//! A batch is served in two phases:
//!
//! 1. **Lookup.** Every id of the batch is looked up, in batch order,
//!    against the cache as it stood *before* the batch. A hit copies the
//!    row out and tells the policy ([`Replacement::on_hit`]); a miss is
//!    remembered.
//! 2. **Insert.** All misses are read through the miss path in one call
//!    (the page-deduplicated gather engine), copied out, and then inserted
//!    one at a time in batch order, exactly as the sequential policy would
//!    insert them on a miss: if the cache is full the policy picks a victim
//!    ([`Replacement::evict`]) and the new row takes its slot.
//!
//! So a batch's hits are looked up before any of its misses are inserted,
//! and a batch never evicts a row it still needs: every row of the batch has
//! been copied out before the first eviction. (A victim may be a row this
//! batch hit — it was already served.) Ids of one batch are distinct (the
//! sampler guarantees it); a repeated id is a miss both times but is
//! inserted once.
//!
//! Slots are handed out in order `0, 1, 2, …` while the cache fills; after
//! that a new row always takes its victim's slot. [`Residency`] is the
//! bookkeeping alone (no row bytes): the trace simulator replays batches
//! through exactly this code, so its miss counts are those of the executor.

use crate::cache::feature_cache::{RowSource, EMPTY};
use crate::error::{Error, Result};
use crate::io::aligned::AlignedBuf;
use crate::store::row_targets::fill_batch;

/// Linked-list and "no slot" marker.
pub(crate) const NONE: u32 = u32::MAX;

/// The replacement decision of a dynamic policy, over slots `0..capacity`.
pub trait Replacement {
    /// Fresh state for a cache of `capacity` rows (at least 1) over nodes
    /// `0..num_nodes`.
    fn with_capacity(capacity: usize, num_nodes: usize) -> Self;
    /// Bytes that state takes, at most, for the whole run (it allocates
    /// everything up front; the memory planner sizes caches with this).
    fn state_bytes(capacity: usize, num_nodes: usize) -> u64;
    /// A lookup hit the row in `slot`.
    fn on_hit(&mut self, slot: u32);
    /// Node `id` was just placed in `slot` (a fresh slot or the last victim).
    fn on_insert(&mut self, slot: u32, id: u64);
    /// The cache is full: choose a victim, forget it, and return its slot.
    /// `slot_ids[s]` is the node cached in slot `s`.
    fn evict(&mut self, slot_ids: &[u64]) -> u32;
}

/// A dynamic policy as the policy table ([`crate::cache::TABLE`]) holds
/// it: its replacement's constructors and state bytes, behind function
/// pointers, so that the executor, the planner and the lab reach any
/// policy without naming its type.
#[derive(Clone, Copy)]
pub struct Dynamic {
    /// An empty row cache: `(num_nodes, capacity, row_bytes)`.
    pub row_cache: fn(u64, usize, usize) -> Result<Box<dyn RowGather>>,
    /// An empty [`Residency`] (bookkeeping only): `(num_nodes, capacity)`.
    pub residency: fn(u64, usize) -> Result<Box<dyn Simulate>>,
    /// [`Replacement::state_bytes`].
    pub state_bytes: fn(usize, usize) -> u64,
}

fn new_row_cache<P: Replacement + 'static>(
    num_nodes: u64,
    capacity: usize,
    row_bytes: usize,
) -> Result<Box<dyn RowGather>> {
    Ok(Box::new(DynamicCache::<P>::new(
        num_nodes, capacity, row_bytes,
    )?))
}

fn new_residency<P: Replacement + 'static>(
    num_nodes: u64,
    capacity: usize,
) -> Result<Box<dyn Simulate>> {
    Ok(Box::new(Residency::<P>::new(num_nodes, capacity)?))
}

impl Dynamic {
    /// The descriptor of replacement `P`.
    pub const fn of<P: Replacement + 'static>() -> Dynamic {
        Dynamic {
            row_cache: new_row_cache::<P>,
            residency: new_residency::<P>,
            state_bytes: P::state_bytes,
        }
    }

    /// Bytes a cache of `capacity` rows of `row_bytes` over `num_nodes`
    /// nodes takes besides the address table (4 bytes per node, counted by
    /// the planner for every cache): the rows, each slot's node id, and the
    /// policy's state.
    pub fn cache_bytes(&self, capacity: u64, num_nodes: u64, row_bytes: u64) -> u64 {
        let state = if capacity == 0 {
            0
        } else {
            (self.state_bytes)(capacity as usize, num_nodes as usize)
        };
        capacity.saturating_mul(row_bytes + 8).saturating_add(state)
    }

    /// The most rows whose [`cache_bytes`](Self::cache_bytes) fit in
    /// `bytes` (at most `num_nodes`).
    pub fn rows_within(&self, bytes: u64, num_nodes: u64, row_bytes: u64) -> u64 {
        let (mut lo, mut hi) = (0u64, num_nodes.min(bytes / (row_bytes + 8).max(1)));
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if self.cache_bytes(mid, num_nodes, row_bytes) <= bytes {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        lo
    }
}

/// Which node sits in which slot, and the policy's state: a dynamic cache
/// without its row bytes. See the module docs for the batch semantics.
pub struct Residency<P> {
    table: Vec<u32>,
    slot_ids: Vec<u64>,
    used: usize,
    policy: Option<P>, // None when the capacity is 0
}

impl<P: Replacement> Residency<P> {
    /// An empty cache of `capacity` rows over `num_nodes` nodes.
    pub fn new(num_nodes: u64, capacity: usize) -> Result<Self> {
        if capacity as u64 >= u64::from(NONE) {
            return Err(Error::invalid_argument(format!(
                "cache capacity {capacity} rows must be below 2^32 - 1"
            )));
        }
        let nodes = usize::try_from(num_nodes)
            .map_err(|_| Error::OutOfMemory(format!("{num_nodes} nodes do not fit in memory")))?;
        Ok(Residency {
            table: vec![EMPTY; nodes],
            slot_ids: vec![u64::MAX; capacity],
            used: 0,
            policy: (capacity > 0).then(|| P::with_capacity(capacity, nodes)),
        })
    }

    /// Rows the cache holds at most.
    pub fn capacity(&self) -> usize {
        self.slot_ids.len()
    }

    /// Rows cached now.
    pub fn len(&self) -> usize {
        self.used
    }

    /// True when nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.used == 0
    }

    /// Whether `id` is cached.
    pub fn contains(&self, id: u64) -> bool {
        self.table.get(id as usize).is_some_and(|&s| s != EMPTY)
    }

    /// Phase 1: looks up every id of a batch. Calls `on_hit(position,
    /// slot)` for each hit (after telling the policy) and pushes the
    /// position of each miss onto `miss_at` (cleared first).
    pub fn lookup(
        &mut self,
        ids: &[u64],
        miss_at: &mut Vec<usize>,
        mut on_hit: impl FnMut(usize, u32),
    ) -> Result<()> {
        miss_at.clear();
        for (pos, &id) in ids.iter().enumerate() {
            let slot = *self.table.get(id as usize).ok_or_else(|| {
                Error::OutOfRange(format!(
                    "node {id} is not below the node count {}",
                    self.table.len()
                ))
            })?;
            if slot == EMPTY {
                miss_at.push(pos);
            } else {
                if let Some(p) = &mut self.policy {
                    p.on_hit(slot);
                }
                on_hit(pos, slot);
            }
        }
        Ok(())
    }

    /// Phase 2: inserts one missed id (already checked by [`Self::lookup`]),
    /// evicting if the cache is full. Returns its slot, or `None` when the
    /// capacity is 0 or the id is cached already (a repeat in one batch).
    pub fn insert(&mut self, id: u64) -> Option<u32> {
        let policy = self.policy.as_mut()?;
        let entry = self.table.get(id as usize).copied()?;
        if entry != EMPTY {
            return None;
        }
        let slot = if self.used < self.slot_ids.len() {
            self.used += 1;
            (self.used - 1) as u32
        } else {
            let victim = policy.evict(&self.slot_ids);
            self.table[self.slot_ids[victim as usize] as usize] = EMPTY;
            victim
        };
        self.slot_ids[slot as usize] = id;
        self.table[id as usize] = slot;
        policy.on_insert(slot, id);
        Some(slot)
    }

    /// Both phases for a batch without rows (the trace simulator): fills
    /// `miss_at` with the positions of the misses.
    pub fn access(&mut self, ids: &[u64], miss_at: &mut Vec<usize>) -> Result<()> {
        self.lookup(ids, miss_at, |_, _| {})?;
        for &pos in miss_at.iter() {
            self.insert(ids[pos]);
        }
        Ok(())
    }
}

/// A dynamic row cache: [`Residency`] plus the slot array of rows.
pub struct DynamicCache<P> {
    residency: Residency<P>,
    /// Allocated like the Belady and static caches' slots (mapped on first
    /// use, huge pages), so that every policy pays the same for its memory.
    slots: AlignedBuf,
    row_bytes: usize,
    hits: u64,
    misses: u64,
    miss_ids: Vec<u64>,
    miss_at: Vec<usize>,
    /// (position in the batch, slot) of the last gather's hits.
    hit_at: Vec<(u32, u32)>,
}

impl<P: Replacement> DynamicCache<P> {
    /// An empty cache of `capacity` rows of `row_bytes`.
    pub fn new(num_nodes: u64, capacity: usize, row_bytes: usize) -> Result<Self> {
        let bytes = capacity.checked_mul(row_bytes).ok_or_else(|| {
            Error::OutOfMemory(format!(
                "a row cache of {capacity} rows of {row_bytes} bytes overflows the address space"
            ))
        })?;
        Ok(DynamicCache {
            residency: Residency::new(num_nodes, capacity)?,
            slots: AlignedBuf::zeroed(bytes)?,
            row_bytes,
            hits: 0,
            misses: 0,
            miss_ids: Vec::new(),
            miss_at: Vec::new(),
            hit_at: Vec::new(),
        })
    }

    /// (hits, misses) so far.
    pub fn counts(&self) -> (u64, u64) {
        (self.hits, self.misses)
    }

    /// The bookkeeping (which node is in which slot).
    pub fn residency(&self) -> &Residency<P> {
        &self.residency
    }

    /// Gathers `ids` into `out` with the batch semantics of the module
    /// docs. Returns the misses.
    pub fn gather(&mut self, ids: &[u64], out: &mut [u8], source: &dyn RowSource) -> Result<u64> {
        let rb = self.row_bytes;
        if out.len() != ids.len() * rb {
            return Err(Error::OutOfRange(format!(
                "output holds {} bytes, {} rows need {}",
                out.len(),
                ids.len(),
                ids.len() * rb
            )));
        }
        self.hit_at.clear();
        let hit_at = &mut self.hit_at;
        // (A batch of 2^32 rows does not fit in memory.)
        self.residency.lookup(ids, &mut self.miss_at, |pos, slot| {
            hit_at.push((pos as u32, slot))
        })?;
        self.miss_ids.clear();
        self.miss_ids.extend(self.miss_at.iter().map(|&p| ids[p]));
        let misses = self.miss_ids.len();
        // The hits from their slots and the misses straight into their
        // places in the batch, then inserted from there.
        let miss_ids = &self.miss_ids;
        fill_batch(
            out,
            rb,
            (self.slots.as_slice(), &self.hit_at),
            &self.miss_at,
            &mut [],
            |to| source.read_rows_to(miss_ids, to),
        )?;
        for (&id, &pos) in self.miss_ids.iter().zip(&self.miss_at) {
            let row = &out[pos * rb..(pos + 1) * rb];
            if let Some(slot) = self.residency.insert(id) {
                self.slots.as_mut_slice()[slot as usize * rb..(slot as usize + 1) * rb]
                    .copy_from_slice(row);
            }
        }
        self.hits += (ids.len() - misses) as u64;
        self.misses += misses as u64;
        Ok(misses as u64)
    }
}

/// A dynamic cache of any policy, as the executor holds it.
pub trait RowGather {
    /// See [`DynamicCache::gather`].
    fn gather(&mut self, ids: &[u64], out: &mut [u8], source: &dyn RowSource) -> Result<u64>;
}

impl<P: Replacement> RowGather for DynamicCache<P> {
    fn gather(&mut self, ids: &[u64], out: &mut [u8], source: &dyn RowSource) -> Result<u64> {
        DynamicCache::gather(self, ids, out, source)
    }
}

/// A [`Residency`] of any policy, as the policy lab replays it.
pub trait Simulate {
    /// See [`Residency::access`].
    fn access(&mut self, ids: &[u64], miss_at: &mut Vec<usize>) -> Result<()>;
}

impl<P: Replacement> Simulate for Residency<P> {
    fn access(&mut self, ids: &[u64], miss_at: &mut Vec<usize>) -> Result<()> {
        Residency::access(self, ids, miss_at)
    }
}

/// A doubly linked list over slots (LRU's recency order, SIEVE's queue):
/// `head` is the newest end; `prev` points toward the head.
pub(crate) struct SlotList {
    pub(crate) prev: Vec<u32>,
    pub(crate) next: Vec<u32>,
    pub(crate) head: u32,
    pub(crate) tail: u32,
}

impl SlotList {
    /// Bytes of a list over `capacity` slots.
    pub(crate) fn bytes(capacity: usize) -> u64 {
        8 * capacity as u64
    }

    pub(crate) fn new(capacity: usize) -> Self {
        SlotList {
            prev: vec![NONE; capacity],
            next: vec![NONE; capacity],
            head: NONE,
            tail: NONE,
        }
    }

    pub(crate) fn unlink(&mut self, s: u32) {
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

    pub(crate) fn push_front(&mut self, s: u32) {
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
}

/// Test helpers shared by the policies' unit tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// Row `id` is the id as two little-endian bytes.
    pub(crate) struct Rows;
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

    /// Gathers `batches` through a `DynamicCache<P>`; checks every row and
    /// returns the hit (true) / miss sequence.
    pub(crate) fn gather_hits<P: Replacement>(
        batches: &[Vec<u64>],
        capacity: usize,
        nodes: u64,
    ) -> Vec<bool> {
        let mut c = DynamicCache::<P>::new(nodes, capacity, 2).unwrap();
        let mut res = Residency::<P>::new(nodes, capacity).unwrap();
        let mut seq = Vec::new();
        let mut miss_at = Vec::new();
        for b in batches {
            let mut out = vec![0u8; b.len() * 2];
            let misses = c.gather(b, &mut out, &Rows).unwrap();
            let mut want = vec![0u8; b.len() * 2];
            Rows.read_rows(b, &mut want).unwrap();
            assert_eq!(out, want, "gathered rows differ");
            res.access(b, &mut miss_at).unwrap();
            assert_eq!(misses as usize, miss_at.len(), "simulation differs");
            let mut hits = vec![true; b.len()];
            for &p in &miss_at {
                hits[p] = false;
            }
            seq.extend(hits);
        }
        seq
    }

    /// Random batches of distinct ids below `nodes`.
    /// The property every dynamic policy's tests state: on random batches
    /// and capacities (in `$capacities`), `$policy` hits exactly where `$reference` (a small,
    /// obviously correct model of the paper's algorithm) hits, and returns
    /// the true rows.
    macro_rules! matches_reference {
        ($policy:ty, $reference:path, $capacities:expr) => {
            proptest::proptest! {
                #[test]
                fn matches_reference_and_returns_true_rows(
                    batches in $crate::cache::dynamic::testing::batches(60),
                    capacity in $capacities,
                ) {
                    proptest::prop_assert_eq!(
                        $crate::cache::dynamic::testing::gather_hits::<$policy>(&batches, capacity, 60),
                        $reference(&batches, capacity)
                    );
                }
            }
        };
    }
    pub(crate) use matches_reference;

    /// For a reference model of `(id, referenced)` entries: which ids of
    /// `batch` hit, every entry they hit marked referenced.
    pub(crate) fn hits_marking(entries: &mut [(u64, bool)], batch: &[u64]) -> Vec<bool> {
        let hit: Vec<bool> = batch
            .iter()
            .map(|id| entries.iter().any(|e| e.0 == *id))
            .collect();
        for id in batch {
            if let Some(e) = entries.iter_mut().find(|e| e.0 == *id) {
                e.1 = true;
            }
        }
        hit
    }

    pub(crate) fn batches(nodes: u64) -> impl proptest::strategy::Strategy<Value = Vec<Vec<u64>>> {
        use proptest::strategy::Strategy;
        proptest::collection::vec(
            proptest::collection::vec(0..nodes, 0..12).prop_map(|v| {
                let mut seen = std::collections::HashSet::new();
                v.into_iter().filter(|x| seen.insert(*x)).collect()
            }),
            0..40,
        )
    }
}
