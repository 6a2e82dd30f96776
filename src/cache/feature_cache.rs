//! The feature cache (Ginex §3.3, Fig. 11): direct addressing.
//!
//! An address table holds one `u32` per node — its slot, or [`EMPTY`] — and
//! the slot array holds `capacity` rows in one aligned allocation. Gather copies hits
//! from slots and reads all misses of a batch in one call to the miss path
//! (the page-deduplicated gather engine). An update moves each inserted id
//! into an evicted id's slot, copying its row from the tensor just gathered.
//! Every update is validated first, so an illegal record is an error, never
//! a corrupted cache.

use std::time::{Duration, Instant};

use crate::cache::belady::Update;
use crate::error::{Error, Result};
use crate::io::aligned::AlignedBuf;
use crate::store::row_targets::{fill_batch, RowTargets};

/// Bytes of rows `init` reads at a time.
pub const INIT_CHUNK_BYTES: usize = 8 << 20;

/// Rows of `row_bytes` in one [`INIT_CHUNK_BYTES`] read (at least one).
pub fn init_chunk_rows(row_bytes: usize) -> usize {
    (INIT_CHUNK_BYTES / row_bytes.max(1)).max(1)
}

/// Address-table value of a node that is not cached.
pub const EMPTY: u32 = u32::MAX;
/// A table entry while [`FeatureCache::begin_init`] runs: an id of the
/// init not cached yet. Never a slot (the capacity is below `EMPTY`, so
/// the largest slot is `EMPTY - 2`).
const LISTED: u32 = EMPTY - 1;

/// Where cache misses are read from.
pub trait RowSource {
    /// Bytes per row.
    fn row_bytes(&self) -> usize;
    /// Reads the rows of `ids`, in order, into `out` (`ids.len() * row_bytes`).
    fn read_rows(&self, ids: &[u64], out: &mut [u8]) -> Result<()>;
    /// Reads the rows of `ids` into `to` (row `k` to `to.row_mut(k)`).
    /// The gather engine reads them straight there; this default reads
    /// them into a buffer of their own first.
    fn read_rows_to(&self, ids: &[u64], to: &mut RowTargets<'_>) -> Result<()> {
        to.check_rows(ids.len())?;
        let mut rows = vec![0u8; ids.len() * self.row_bytes()];
        self.read_rows(ids, &mut rows)?;
        to.fill_from(&rows)
    }
}

impl RowSource for crate::store::Store {
    fn row_bytes(&self) -> usize {
        self.layout().row_bytes()
    }
    fn read_rows(&self, ids: &[u64], out: &mut [u8]) -> Result<()> {
        self.read_feature_rows(ids, out)
    }
}

/// Counters of a cache since it was created.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CacheCounters {
    /// Rows served from slots.
    pub hits: u64,
    /// Rows read through the miss path by gathers.
    pub misses: u64,
    /// Rows read by `init` (rows the cache did not hold already).
    pub init_reads: u64,
    /// Page companions read by gathers (rows on pages their misses read,
    /// for the next update to insert).
    pub companions: u64,
    /// Bytes copied into and out of slots.
    pub bytes_copied: u64,
    /// Time in `init`.
    pub init_time: Duration,
    /// Time in `gather`.
    pub gather_time: Duration,
    /// Time in `apply`.
    pub update_time: Duration,
}

/// The feature cache. See the module docs.
pub struct FeatureCache {
    table: Vec<u32>,
    slot_ids: Vec<u64>,
    free_slots: Vec<u32>,
    slots: AlignedBuf,
    row_bytes: usize,
    counters: CacheCounters,
    miss_ids: Vec<u64>,
    miss_at: Vec<usize>,
    /// (position in the batch, slot) of the last gather's hits.
    hit_at: Vec<(u32, u32)>,
    /// The last gather's page companions' rows, positions
    /// `gathered_rows…` of the next update (their ids: the last
    /// `companions` of `miss_ids`). The misses are read straight into the
    /// batch.
    companion_rows: Vec<u8>,
    companions: usize,
    gathered_rows: usize,
}

const FREE: u64 = u64::MAX;

impl FeatureCache {
    /// Bytes per node of the address table, whatever the capacity.
    pub const ADDRESS_BYTES_PER_NODE: u64 = 4;

    /// Bytes a cache of `rows` rows of `row_bytes` takes besides its
    /// address table: each slot's row, its node id (8) and its free-list
    /// entry (4).
    pub fn slot_bytes(rows: u64, row_bytes: u64) -> u64 {
        rows * (row_bytes + 12)
    }

    /// An empty cache of `capacity` rows of `row_bytes` for `num_nodes` nodes.
    pub fn new(num_nodes: u64, capacity: usize, row_bytes: usize) -> Result<Self> {
        if capacity as u64 >= u64::from(EMPTY) {
            return Err(Error::invalid_argument(format!(
                "feature cache capacity {capacity} rows must be below 2^32 - 1"
            )));
        }
        let bytes = capacity
            .checked_mul(row_bytes)
            .ok_or_else(|| {
                Error::OutOfMemory(format!(
                    "a feature cache of {capacity} rows of {row_bytes} bytes overflows the address space"
                ))
            })?;
        let nodes = usize::try_from(num_nodes)
            .map_err(|_| Error::OutOfMemory(format!("{num_nodes} nodes do not fit in memory")))?;
        Ok(FeatureCache {
            table: vec![EMPTY; nodes],
            slot_ids: vec![FREE; capacity],
            free_slots: (0..capacity as u32).rev().collect(),
            slots: AlignedBuf::zeroed(bytes)?,
            row_bytes,
            counters: CacheCounters::default(),
            miss_ids: Vec::new(),
            miss_at: Vec::new(),
            hit_at: Vec::new(),
            companion_rows: Vec::new(),
            companions: 0,
            gathered_rows: 0,
        })
    }

    /// Rows the cache holds at most.
    pub fn capacity(&self) -> usize {
        self.slot_ids.len()
    }

    /// Rows cached now.
    pub fn len(&self) -> usize {
        self.capacity() - self.free_slots.len()
    }

    /// True when nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Slots free now.
    pub fn free_slot_count(&self) -> usize {
        self.free_slots.len()
    }

    /// Evicts `ids` (each cached, none twice): their slots become free.
    /// Validated first, so an illegal list leaves the cache unchanged.
    pub fn evict(&mut self, ids: &[u64]) -> Result<()> {
        let mut seen = std::collections::HashSet::with_capacity(ids.len());
        for &id in ids {
            let i = self.check_id(id)?;
            if self.table[i] == EMPTY || !seen.insert(id) {
                return Err(Error::internal(format!(
                    "evict: node {id} is not cached (or listed twice)"
                )));
            }
        }
        for &id in ids {
            let slot = std::mem::replace(&mut self.table[id as usize], EMPTY);
            self.slot_ids[slot as usize] = FREE;
            self.free_slots.push(slot);
        }
        Ok(())
    }

    /// Whether `id` is cached.
    pub fn contains(&self, id: u64) -> bool {
        self.table.get(id as usize).is_some_and(|&s| s != EMPTY)
    }

    /// The cached ids, ascending.
    pub fn cached_ids(&self) -> Vec<u64> {
        let mut ids: Vec<u64> = self
            .slot_ids
            .iter()
            .copied()
            .filter(|&id| id != FREE)
            .collect();
        ids.sort_unstable();
        ids
    }

    /// Counters so far.
    pub fn counters(&self) -> &CacheCounters {
        &self.counters
    }

    fn check_id(&self, id: u64) -> Result<usize> {
        usize::try_from(id)
            .ok()
            .filter(|&i| i < self.table.len())
            .ok_or_else(|| {
                Error::OutOfRange(format!(
                    "node {id} is not below the node count {}",
                    self.table.len()
                ))
            })
    }

    /// Makes the cache hold exactly `ids` (distinct, at most `capacity`):
    /// rows it holds already stay in their slots and are not read again,
    /// cached ids not in `ids` are evicted, and only the missing rows are
    /// read through `source`, in id order, [`INIT_CHUNK_BYTES`] at a time.
    /// Returns the rows read.
    pub fn init(&mut self, ids: &[u64], source: &dyn RowSource) -> Result<u64> {
        let load = self.begin_init(ids)?;
        let started = Instant::now();
        // In id order, so the rows of one page fall in one chunk and each
        // page is read once (the gather engine deduplicates pages per call);
        // in chunks, so an init of millions of rows needs no second copy of
        // them in memory.
        let rb = self.row_bytes;
        let per_chunk = init_chunk_rows(rb);
        let mut buf = vec![0u8; per_chunk.min(load.len()) * rb];
        for ids in load.chunks(per_chunk) {
            let rows = &mut buf[..ids.len() * rb];
            source.read_rows(ids, rows)?;
            self.fill(ids, rows)?;
        }
        self.counters.init_time += started.elapsed();
        Ok(load.len() as u64)
    }

    /// The first half of [`FeatureCache::init`]: evicts every cached id not
    /// in `ids` (distinct, at most `capacity`) and returns, ascending, the
    /// ids of `ids` not cached yet. The caller reads their rows and hands
    /// them to [`FeatureCache::fill`] in any order and chunking, and must
    /// not gather an id before it is filled (it would count as a miss).
    pub fn begin_init(&mut self, ids: &[u64]) -> Result<Vec<u64>> {
        let started = Instant::now();
        if ids.len() > self.capacity() {
            return Err(Error::internal(format!(
                "init of {} rows exceeds the capacity of {}",
                ids.len(),
                self.capacity()
            )));
        }
        // Walked in ascending order (a copy, 8 bytes a row while it is
        // walked), the address table is read in order rather than a
        // cache miss a row, and the rows to load come out sorted: on a
        // fresh 500 k-row init of 3 M nodes, sorting first and walking
        // took 25 ms where walking took 22 and sorting the load 6.5 more.
        let mut ascending = ids.to_vec();
        crate::id_set::sort_distinct(&mut ascending);
        let mut wanted = vec![false; self.capacity()];
        let mut load: Vec<u64> = Vec::new();
        // A repeated id is found by what the first sight left: its slot
        // marked wanted, or its table entry marked LISTED. (A hash set of
        // the init's ids took ~0.5 s of the executor's time a superbatch
        // and 150 MiB the plan did not price at 13.5M rows.)
        let listed = ascending.iter().try_for_each(|&id| {
            let i = self.check_id(id)?;
            match self.table[i] {
                EMPTY => {
                    self.table[i] = LISTED;
                    load.push(id);
                    Ok(())
                }
                slot if slot == LISTED || wanted[slot as usize] => {
                    Err(Error::internal(format!("init lists node {id} twice")))
                }
                slot => {
                    wanted[slot as usize] = true;
                    Ok(())
                }
            }
        });
        drop(ascending);
        for &id in &load {
            self.table[id as usize] = EMPTY;
        }
        listed?;
        for (slot, keep) in wanted.iter().enumerate() {
            let id = self.slot_ids[slot];
            if id != FREE && !keep {
                self.table[id as usize] = EMPTY;
                self.slot_ids[slot] = FREE;
            }
        }
        self.free_slots = (0..self.capacity() as u32)
            .rev()
            .filter(|&s| self.slot_ids[s as usize] == FREE)
            .collect();
        self.counters.init_time += started.elapsed();
        Ok(load)
    }

    /// Inserts the rows (`ids.len() * row_bytes`) of `ids`, none of them
    /// cached, into free slots; counted as init reads.
    pub fn fill(&mut self, ids: &[u64], rows: &[u8]) -> Result<()> {
        let rb = self.row_bytes;
        Error::check_output_len(rows.len(), ids.len(), rb, "bytes")?;
        if ids.len() > self.free_slots.len() {
            return Err(Error::internal(format!(
                "init fills {} rows but the cache has {} free slots",
                ids.len(),
                self.free_slots.len()
            )));
        }
        for (k, &id) in ids.iter().enumerate() {
            let i = self.check_id(id)?;
            if self.table[i] != EMPTY {
                return Err(Error::internal(format!(
                    "init fills node {id}, which is cached already"
                )));
            }
            let slot = self
                .free_slots
                .pop()
                .ok_or_else(|| Error::internal("init: no free slot left"))?
                as usize;
            self.slots.as_mut_slice()[slot * rb..(slot + 1) * rb]
                .copy_from_slice(&rows[k * rb..(k + 1) * rb]);
            self.table[i] = slot as u32;
            self.slot_ids[slot] = id;
        }
        self.counters.init_reads += ids.len() as u64;
        Ok(())
    }

    /// Fills `out` (`ids.len() * row_bytes`) with the rows of `ids`: hits
    /// from slots, misses through `source` in one call. Returns the number
    /// of misses.
    pub fn gather(&mut self, ids: &[u64], out: &mut [u8], source: &dyn RowSource) -> Result<u64> {
        self.gather_with(ids, &[], out, source)
    }

    /// [`gather`](Self::gather), also reading the rows of `companions` —
    /// rows on the pages the batch's misses read, which the next update
    /// inserts from positions `ids.len()…` (see
    /// [`compute_changesets_paged`](crate::cache::belady::compute_changesets_paged)).
    /// They are read in the same call as the misses, so they share their
    /// pages, and wait in a buffer of their own until the update; the
    /// misses are read straight into `out`.
    pub fn gather_with(
        &mut self,
        ids: &[u64],
        companions: &[u64],
        out: &mut [u8],
        source: &dyn RowSource,
    ) -> Result<u64> {
        let started = Instant::now();
        let rb = self.row_bytes;
        Error::check_output_len(out.len(), ids.len(), rb, "bytes")?;
        self.miss_ids.clear();
        self.miss_at.clear();
        self.hit_at.clear();
        self.companions = 0;
        for (pos, &id) in ids.iter().enumerate() {
            let i = self.check_id(id)?;
            match self.table[i] {
                EMPTY => {
                    self.miss_ids.push(id);
                    self.miss_at.push(pos);
                }
                // (A batch of 2^32 rows does not fit in memory.)
                slot => self.hit_at.push((pos as u32, slot)),
            }
        }
        let misses = self.miss_ids.len();
        for &id in companions {
            self.check_id(id)?;
        }
        self.miss_ids.extend_from_slice(companions);
        self.companion_rows.resize(companions.len() * rb, 0);
        let miss_ids = &self.miss_ids;
        fill_batch(
            out,
            rb,
            (self.slots.as_slice(), &self.hit_at),
            &self.miss_at,
            &mut self.companion_rows,
            |to| source.read_rows_to(miss_ids, to),
        )?;
        self.companions = companions.len();
        self.gathered_rows = ids.len();
        let hits = (ids.len() - misses) as u64;
        self.counters.hits += hits;
        self.counters.misses += misses as u64;
        self.counters.companions += companions.len() as u64;
        self.counters.bytes_copied += hits * rb as u64;
        self.counters.gather_time += started.elapsed();
        Ok(misses as u64)
    }

    /// Applies an update after a gather: validates every entry (evicted ids
    /// cached, inserted ids not cached and distinct, positions inside
    /// `gathered` or, past its rows, among the last gather's companions
    /// when `gathered` is that gather's output; free slots available), then
    /// moves rows.
    pub fn apply(&mut self, update: &Update, gathered: &[u8]) -> Result<()> {
        let started = Instant::now();
        let rb = self.row_bytes;
        let rows = gathered.len() / rb.max(1);
        let companions = if rows == self.gathered_rows {
            self.companions
        } else {
            0
        };
        let companion_base = self.miss_ids.len() - companions;
        if update.in_positions.len() != update.in_ids.len()
            || update.out_ids.len() > update.in_ids.len()
        {
            return Err(Error::internal(
                "update: in_ids, out_ids and in_positions lengths disagree",
            ));
        }
        let free_needed = update.in_ids.len() - update.out_ids.len();
        if self.free_slots.len() < free_needed {
            return Err(Error::internal(format!(
                "update inserts {free_needed} rows beyond its evictions but the cache has {} free slots",
                self.free_slots.len()
            )));
        }
        let mut seen =
            std::collections::HashSet::with_capacity(update.in_ids.len() + update.out_ids.len());
        for &out in &update.out_ids {
            let i = self.check_id(out)?;
            if self.table[i] == EMPTY || !seen.insert(out) {
                return Err(Error::internal(format!(
                    "update evicts node {out}, which is not cached (or twice)"
                )));
            }
        }
        for (&id, &pos) in update.in_ids.iter().zip(&update.in_positions) {
            let i = self.check_id(id)?;
            if self.table[i] != EMPTY || !seen.insert(id) {
                return Err(Error::internal(format!(
                    "update inserts node {id}, which is cached already (or twice)"
                )));
            }
            let companion = pos.checked_sub(rows as u64).and_then(|k| {
                self.miss_ids
                    .get(companion_base + k as usize)
                    .filter(|_| k < companions as u64)
            });
            if pos >= rows as u64 && companion != Some(&id) {
                return Err(Error::internal(format!(
                    "update position {pos} of node {id} is outside the {rows} gathered rows \
                     and is not that node among the {companions} page companions read with them"
                )));
            }
        }
        let mut targets = Vec::with_capacity(update.in_ids.len());
        for &out in &update.out_ids {
            let slot = std::mem::replace(&mut self.table[out as usize], EMPTY);
            self.slot_ids[slot as usize] = FREE;
            targets.push(slot as usize);
        }
        let keep = self.free_slots.len() - free_needed;
        targets.extend(self.free_slots.drain(keep..).rev().map(|s| s as usize));
        for ((&id, &pos), slot) in update.in_ids.iter().zip(&update.in_positions).zip(targets) {
            let pos = pos as usize;
            let row = if pos < rows {
                &gathered[pos * rb..(pos + 1) * rb]
            } else {
                let k = pos - rows;
                &self.companion_rows[k * rb..(k + 1) * rb]
            };
            self.slots.as_mut_slice()[slot * rb..(slot + 1) * rb].copy_from_slice(row);
            self.table[id as usize] = slot as u32;
            self.slot_ids[slot] = id;
        }
        self.counters.bytes_copied += (update.in_ids.len() * rb) as u64;
        self.counters.update_time += started.elapsed();
        Ok(())
    }

    /// Checks that the address table and the slots agree (tests, debugging).
    pub fn check_consistency(&self) -> Result<()> {
        for (slot, &id) in self.slot_ids.iter().enumerate() {
            if id != FREE && self.table.get(id as usize) != Some(&(slot as u32)) {
                return Err(Error::internal(format!(
                    "slot {slot} holds node {id} but the table disagrees"
                )));
            }
        }
        let mapped = self.table.iter().filter(|&&s| s != EMPTY).count();
        let used = self.slot_ids.iter().filter(|&&id| id != FREE).count();
        let free_ok = self
            .free_slots
            .iter()
            .all(|&s| self.slot_ids.get(s as usize) == Some(&FREE));
        if mapped != used || used != self.len() || !free_ok {
            return Err(Error::internal(format!(
                "{mapped} nodes mapped, {used} slots used, {} free slots listed",
                self.free_slots.len()
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::belady::{
        compute_changesets, compute_changesets_from, compute_changesets_paged, test_prior,
        Changesets, PageGroups,
    };
    use proptest::prelude::*;

    /// Row of node v: its id repeated as bytes.
    struct Synthetic(usize);
    impl RowSource for Synthetic {
        fn row_bytes(&self) -> usize {
            self.0
        }
        fn read_rows(&self, ids: &[u64], out: &mut [u8]) -> Result<()> {
            for (id, row) in ids.iter().zip(out.chunks_exact_mut(self.0)) {
                for (k, b) in row.iter_mut().enumerate() {
                    *b = (id.wrapping_mul(31) as usize + k) as u8;
                }
            }
            Ok(())
        }
    }

    fn trace() -> impl Strategy<Value = Vec<Vec<u64>>> {
        proptest::collection::vec(
            proptest::collection::btree_set(0u64..40, 0..15)
                .prop_map(|s| s.into_iter().rev().collect()),
            0..15,
        )
    }

    /// Runs `batches` through an initialised `cache` as the executor does:
    /// every gather must equal the uncached rows and miss what `cs`
    /// predicts; each window's update is applied at its end. With
    /// `check_each`, the cache's consistency is checked after every batch.
    fn drive(
        cache: &mut FeatureCache,
        src: &Synthetic,
        batches: &[Vec<u64>],
        cs: &Changesets,
        every: usize,
        check_each: bool,
    ) -> Result<(), TestCaseError> {
        let mut window = Vec::new();
        for (i, ids) in batches.iter().enumerate() {
            let mut out = vec![0u8; ids.len() * 6];
            let companions = if every == 1 {
                cs.updates[i].companions(ids.len()).unwrap()
            } else {
                Vec::new()
            };
            let misses = cache.gather_with(ids, &companions, &mut out, src).unwrap();
            let mut want = vec![0u8; ids.len() * 6];
            src.read_rows(ids, &mut want).unwrap();
            prop_assert_eq!(&out, &want);
            prop_assert_eq!(misses, cs.misses[i]);
            window.extend_from_slice(&out);
            if (i + 1) % every == 0 || i + 1 == batches.len() {
                cache.apply(&cs.updates[i], &window).unwrap();
                window.clear();
            }
            if check_each {
                cache.check_consistency().unwrap();
            }
        }
        Ok(())
    }

    proptest! {
        /// Page companions (four rows a page) carried over superbatches with
        /// a prior: every gather equals the uncached rows (so every
        /// companion row copied into a slot was the right row), misses equal
        /// the plan's, the cache stays consistent and ends as planned.
        #[test]
        fn paged_changesets_drive_the_cache_exactly(
            superbatches in proptest::collection::vec(trace(), 1..4),
            capacity in 0usize..12,
            with_prior in any::<bool>(),
        ) {
            let src = Synthetic(6);
            let prior = test_prior(with_prior);
            let mut cache = FeatureCache::new(40, capacity, 6).unwrap();
            let mut carried: Vec<u64> = Vec::new();
            for batches in &superbatches {
                let cs = compute_changesets_paged(batches, capacity, &carried, &prior, PageGroups::of(4).unwrap());
                cache.init(&cs.init, &src).unwrap();
                drive(&mut cache, &src, batches, &cs, 1, true)?;
                let mut held: Vec<u64> = (0..40).filter(|&id| cache.contains(id)).collect();
                held.sort_unstable();
                prop_assert_eq!(&held, &cs.final_cache);
                carried = cs.final_cache;
            }
        }

        /// Driving the cache with exact changesets: every gather equals the
        /// uncached rows, misses equal the optimal counts, and the cache stays
        /// consistent.
        #[test]
        fn changesets_drive_the_cache_exactly(batches in trace(), capacity in 0usize..12, every in 1usize..4) {
            let src = Synthetic(6);
            let cs = compute_changesets(&batches, capacity, every);
            let mut cache = FeatureCache::new(40, capacity, 6).unwrap();
            cache.init(&cs.init, &src).unwrap();
            drive(&mut cache, &src, &batches, &cs, every, true)?;
        }
    }

    proptest! {
        /// Carry-over: one cache driven through several superbatches, each
        /// computed from the previous one's final cache. Init reads exactly
        /// the rows it lacks, gathers are exact, and each superbatch ends
        /// with the cache its changesets predicted.
        #[test]
        fn carried_changesets_drive_one_cache_across_superbatches(
            sbs in proptest::collection::vec(trace(), 1..4),
            capacity in 0usize..12,
            every in 1usize..3,
            with_prior in any::<bool>(),
        ) {
            let src = Synthetic(6);
            let mut cache = FeatureCache::new(40, capacity, 6).unwrap();
            let mut carried: Vec<u64> = Vec::new();
            let prior = test_prior(with_prior);
            for batches in &sbs {
                let cs = compute_changesets_from(batches, capacity, every, &carried, &prior);
                prop_assert_eq!(cache.init(&cs.init, &src).unwrap(), cs.init_reads);
                drive(&mut cache, &src, batches, &cs, every, false)?;
                cache.check_consistency().unwrap();
                prop_assert_eq!(cache.cached_ids(), cs.final_cache.clone());
                carried = cs.final_cache;
            }
        }
    }

    #[test]
    fn illegal_updates_are_rejected_and_leave_the_cache_intact() {
        let src = Synthetic(4);
        let mut cache = FeatureCache::new(10, 2, 4).unwrap();
        cache.init(&[1, 2], &src).unwrap();
        let gathered = vec![0u8; 3 * 4];
        let bad = [
            Update {
                in_ids: vec![5],
                out_ids: vec![7],
                in_positions: vec![0],
            }, // 7 not cached
            Update {
                in_ids: vec![2],
                out_ids: vec![1],
                in_positions: vec![0],
            }, // 2 already cached
            Update {
                in_ids: vec![5],
                out_ids: vec![1],
                in_positions: vec![3],
            }, // position out of range
            Update {
                in_ids: vec![5, 6],
                out_ids: vec![1],
                in_positions: vec![0, 1],
            }, // no free slot
            Update {
                in_ids: vec![5],
                out_ids: vec![1],
                in_positions: vec![],
            }, // lengths
            Update {
                in_ids: vec![50],
                out_ids: vec![1],
                in_positions: vec![0],
            }, // id out of range
        ];
        for u in &bad {
            assert!(cache.apply(u, &gathered).is_err(), "{u:?} accepted");
            cache.check_consistency().unwrap();
            assert!(cache.contains(1) && cache.contains(2));
        }
        cache
            .apply(
                &Update {
                    in_ids: vec![5],
                    out_ids: vec![1],
                    in_positions: vec![2],
                },
                &gathered,
            )
            .unwrap();
        assert!(cache.contains(5) && !cache.contains(1));
        cache.check_consistency().unwrap();
    }

    /// Whose fault: an update or eviction that breaks the cache's
    /// invariants is a bug (ginex computes them), a capacity is the
    /// caller's argument, a node beyond the store is out of range, a cache
    /// larger than the address space is memory the machine cannot give.
    #[test]
    fn errors_say_whose_fault() {
        let src = Synthetic(4);
        let mut cache = FeatureCache::new(10, 2, 4).unwrap();
        cache.init(&[1, 2], &src).unwrap();
        let evicts_uncached = Update {
            in_ids: vec![5],
            out_ids: vec![7],
            in_positions: vec![0],
        };
        match cache.apply(&evicts_uncached, &[0u8; 12]) {
            Err(Error::Internal(m)) => assert!(m.contains("node 7"), "{m}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(cache.evict(&[9]), Err(Error::Internal(_))));
        assert!(matches!(cache.evict(&[90]), Err(Error::OutOfRange(_))));
        assert!(matches!(
            FeatureCache::new(10, u32::MAX as usize, 4),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            FeatureCache::new(10, 1 << 30, usize::MAX / 4),
            Err(Error::OutOfMemory(_))
        ));
    }

    #[test]
    fn an_init_listing_a_node_twice_is_refused_and_changes_nothing() {
        let src = Synthetic(4);
        let mut cache = FeatureCache::new(10, 4, 4).unwrap();
        cache.init(&[1, 2], &src).unwrap();
        // Twice uncached (3), twice cached (2), and a bad id after an
        // uncached one: each refused, naming the node.
        for (ids, node) in [(&[3, 5, 3][..], "node 3"), (&[2, 4, 2], "node 2")] {
            match cache.begin_init(ids) {
                Err(Error::Internal(m)) => assert!(m.contains(node) && m.contains("twice"), "{m}"),
                other => panic!("{other:?}"),
            }
        }
        assert!(matches!(
            cache.begin_init(&[6, 10]),
            Err(Error::OutOfRange(_))
        ));
        // Nothing was evicted or marked: the cache holds 1 and 2 still, and
        // a right init loads exactly what it lacks.
        let mut out = vec![0u8; 8];
        assert_eq!(cache.gather(&[1, 2], &mut out, &src).unwrap(), 0);
        assert_eq!(cache.begin_init(&[3, 2, 6]).unwrap(), vec![3, 6]);
    }

    #[test]
    fn gather_counts_hits_and_misses() {
        let src = Synthetic(3);
        let mut cache = FeatureCache::new(100, 4, 3).unwrap();
        cache.init(&[10, 20], &src).unwrap();
        let mut out = vec![0u8; 9];
        assert_eq!(cache.gather(&[20, 30, 10], &mut out, &src).unwrap(), 1);
        assert_eq!((cache.counters().hits, cache.counters().misses), (2, 1));
        assert!(cache.gather(&[100], &mut [0u8; 3], &src).is_err());
    }

    /// A batch whose hits are copied on a thread of their own (4 MiB of
    /// them and more) holds the rows the source has, hits and misses alike,
    /// and its page companions reach the next update.
    #[test]
    fn a_large_batch_copies_its_hits_beside_the_read() {
        use crate::store::row_targets::HITS_BESIDE_READ_BYTES;
        let rb = 4096;
        let n = 3 * HITS_BESIDE_READ_BYTES / rb;
        let src = Synthetic(rb);
        let mut cache = FeatureCache::new(2 * n as u64, n, rb).unwrap();
        // Even nodes cached: the batch's even ids hit, its odd ones miss.
        let cached: Vec<u64> = (0..n as u64).map(|v| 2 * v).collect();
        cache.init(&cached, &src).unwrap();
        let ids: Vec<u64> = (0..n as u64).rev().map(|v| 2 * v).chain([1, 3]).collect();
        let companions = [5, 7];
        let mut out = vec![0u8; ids.len() * rb];
        let misses = cache
            .gather_with(&ids, &companions, &mut out, &src)
            .unwrap();
        assert_eq!(misses, 2);
        let mut want = vec![0u8; ids.len() * rb];
        src.read_rows(&ids, &mut want).unwrap();
        assert!(
            out == want,
            "the gathered batch differs from the source's rows"
        );
        // The companions' rows are what the update inserts.
        let mut row = vec![0u8; rb];
        src.read_rows(&[7], &mut row).unwrap();
        assert_eq!(&cache.companion_rows[rb..], &row[..]);
    }
}
