//! Which lists a neighbor cache holds, chosen in memory bounded by the
//! node count: at most three 4-byte numbers per node (a score's inputs and
//! the encoded size), never a list of every node sorted, nor an allocation
//! per list.
//!
//! Nodes with in-neighbors are taken in rank order — score descending,
//! ties by node id ascending — while the file fits the budget. The score
//! is the [`Pick`]'s: [`Pick::Degree`] ranks by out-degree / in-degree
//! (Aligraph's metric); [`Pick::Reads`] by the list reads a node is
//! expected to cost an epoch, weighted by the bytes a miss reads, per
//! encoded byte ([`ReadsModel`]). What is taken is therefore a prefix of
//! that order, named by the rank key of the first node left out
//! ([`Cut`]). That key is found a 16-bit digit at a time, most significant
//! first: one pass over the nodes counts the nodes and encoded bytes under
//! each digit value among those sharing the digits found so far, and the
//! first value whose nodes do not all fit is the next digit (a radix
//! select; at most eight passes, no sort).

use crate::error::Result;
use crate::format::neighbor_cache::{Codec, BLOCK_LISTS};
use crate::store::Store;
use crate::store::STREAM_CHUNK_BYTES;

/// Bytes of an encoded list's share of a `block-bitpack` location table
/// when its block is narrow (a `u16` end offset).
const NARROW_END_BYTES: u64 = 2;
/// What a list miss reads beside the list itself, in the reads pick's
/// score: about a page (the rest of its CSC segment, the request).
const MISS_OVERHEAD_BYTES: f64 = 4096.0;
/// Values of one digit of the rank key.
const DIGIT_VALUES: usize = 1 << 16;

/// The nodes taken: those whose rank key is below the first key left out
/// (`None`: every node with in-neighbors).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut(pub Option<u128>);

/// Totals of a set of lists: how many and their encoded bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Lists {
    /// Lists.
    pub count: u64,
    /// Encoded bytes.
    pub bytes: u64,
}

/// The sizes of a cache's location table and blob for the lists a [`Cut`]
/// takes, laid out by node id as the file holds them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LayoutSize {
    /// Lists taken and their encoded bytes.
    pub lists: Lists,
    /// Entries of the location table (u64 each).
    pub table_entries: u64,
    /// Bytes of the blob.
    pub blob_bytes: u64,
}

/// How a neighbor cache chooses its lists.
#[derive(Debug, Clone, PartialEq)]
pub enum Pick<'a> {
    /// By out-degree / in-degree (the pick of format 1.9 and before; a
    /// run's pick where its sampling has no [`ReadsModel`]: link batches,
    /// fanouts per relation): a proxy for how often a list is read per
    /// byte that ignores the fanouts, the seeds and reads shared by a batch.
    Degree,
    /// By expected list reads per encoded byte under a run's sampling
    /// ([`ReadsModel`]).
    Reads(ReadsModel<'a>),
}

/// What decides how often sampling reads each list in an epoch: the seeds
/// (their own lists are read at hop 0), the fanouts (hop `k` reads the
/// lists of hop `k`'s targets, each drawn from a target's list with
/// probability `min(1, fanout / in-degree)`), and how many times a list can
/// be read per hop at most (once per batch, or once per lockstep round).
///
/// Node `v`'s expected visits at hop 0 are 1 for a seed, 0 otherwise; at
/// hop `k + 1`, `p(u) = Σ p_k(v) · min(1, f_k / deg(v))` over the lists
/// `v` that hold `u`, a node visited twice in a batch counted once
/// (`B · (1 − e^(−p/B))` over the epoch's `B` batches). The lists read at
/// hop `k` are those of its distinct targets per read unit (`U` units an
/// epoch: `U · (1 − e^(−p_k/U))`), summed over hops 0–2 (hops past the
/// third are left out: one pass over the topology per hop, and two
/// buffers of `f32`). A miss costs a read of the list's bytes in the
/// store plus about a page (its segment's rest, the request), so the
/// score is the bytes a node's misses are expected to read, reads × (list
/// bytes + 4 KiB), per encoded byte the cache would spend on it. (Reads
/// per encoded byte alone took small lists first: on a 707 M-edge store
/// it missed 19 % fewer lookups than [`Pick::Degree`] but read 6 % more
/// bytes; this score read 22 % fewer bytes in 6 % fewer reads.)
#[derive(Debug, Clone, PartialEq)]
pub struct ReadsModel<'a> {
    /// Neighbors drawn per target, per hop (negative: all of them).
    pub fanouts: Vec<i64>,
    /// The seed nodes of an epoch (None: every node).
    pub seeds: Option<&'a [u64]>,
    /// Batches in an epoch.
    pub batches: f64,
    /// How many batches share one read of a list per hop (1: each batch
    /// reads its own; a lockstep round's batches, or a superbatch's).
    pub batches_per_read: f64,
}

impl<'a> ReadsModel<'a> {
    /// A model from the seeds, the batch size and the batches a lockstep
    /// round holds.
    pub fn new(
        fanouts: Vec<i64>,
        seeds: Option<&'a [u64]>,
        num_seeds: u64,
        batch_size: u64,
        batches_per_read: u64,
    ) -> ReadsModel<'a> {
        ReadsModel {
            fanouts,
            seeds,
            batches: num_seeds.div_ceil(batch_size.max(1)).max(1) as f64,
            batches_per_read: batches_per_read.max(1) as f64,
        }
    }

    /// A short fingerprint of the model, for the cache's default file name
    /// (the same model picks the same lists).
    pub fn fingerprint(&self) -> u32 {
        let mut h = crc32fast::Hasher::new();
        for f in &self.fanouts {
            h.update(&f.to_le_bytes());
        }
        h.update(&self.batches.to_le_bytes());
        h.update(&self.batches_per_read.to_le_bytes());
        if let Some(seeds) = self.seeds {
            // The seeds as a set (their order is the epoch's shuffle, not
            // the model's): a sum of mixed ids, and their count.
            let sum = seeds.iter().fold(0u64, |acc, &s| {
                acc.wrapping_add(crate::rng::mix64(s ^ 0x5eed_5eed_5eed_5eed))
            });
            h.update(&sum.to_le_bytes());
            h.update(&(seeds.len() as u64).to_le_bytes());
        }
        h.finalize()
    }

    /// Distinct visits per batch-sized unit: `units · (1 − e^(−p/units))`.
    fn distinct(p: f64, units: f64) -> f64 {
        units * -(-p / units).exp_m1()
    }

    /// The fraction of `v`'s list of `len` ids a target draws at `hop`.
    fn drawn(&self, hop: usize, len: usize) -> f64 {
        match self.fanouts.get(hop) {
            Some(&f) if f >= 0 && (f as usize) < len => f as f64 / len as f64,
            Some(_) => 1.0,
            None => 0.0,
        }
    }
}

/// Every node's rank score inputs and encoded list size, from streaming
/// passes over the topology: what ranking and pricing the lists needs.
pub struct Candidates<'s> {
    store: &'s Store,
    score: Score,
    encoded_len: Vec<u32>,
}

/// What a node's rank score is computed from.
enum Score {
    /// Out-degrees (the score is out-degree / in-degree).
    OutDegree(Vec<u32>),
    /// Expected list reads an epoch, weighted by the bytes a miss reads
    /// (in units of [`MISS_OVERHEAD_BYTES`]; the score is this / encoded
    /// bytes).
    Reads(Vec<f32>),
}

impl<'s> Candidates<'s> {
    /// Most bytes this takes per node of the store (the reads pick's: its
    /// two `f32` buffers and the encoded sizes; the degree pick takes 8).
    pub const BYTES_PER_NODE: u64 = 12;
    /// Bytes of the digit histogram a choice holds beside it.
    pub const HISTOGRAM_BYTES: u64 = DIGIT_VALUES as u64 * 32;

    /// Streams `store`'s topology once (a run of segments at a time),
    /// counting out-degrees and encoding every list with `codec` to price it.
    pub fn measure(store: &'s Store, codec: Codec) -> Result<Self> {
        let n = store.num_nodes() as usize;
        let width = store.index_width();
        let mut out_degree = vec![0u32; n];
        let mut encoded_len = vec![0u32; n];
        let mut scratch = Vec::new();
        store.for_each_list(STREAM_CHUNK_BYTES, &mut |v, list| {
            for &u in list {
                out_degree[u as usize] = out_degree[u as usize].saturating_add(1);
            }
            scratch.clear();
            codec.encode(list, width, &mut scratch)?;
            encoded_len[v as usize] = u32::try_from(scratch.len()).unwrap_or(u32::MAX);
            Ok(())
        })?;
        Ok(Candidates {
            store,
            score: Score::OutDegree(out_degree),
            encoded_len,
        })
    }

    /// The candidates of `pick` ([`measure`](Self::measure) for
    /// [`Pick::Degree`]).
    pub fn measure_pick(store: &'s Store, codec: Codec, pick: &Pick<'_>) -> Result<Self> {
        match pick {
            Pick::Degree => Self::measure(store, codec),
            Pick::Reads(model) => Self::measure_reads(store, codec, model),
        }
    }

    /// Expected reads ([`ReadsModel`]): the first pass encodes every list
    /// and spreads hop 0's visits (the seeds) to hop 1; a second, where
    /// the model has three hops or more, spreads hop 1's to hop 2.
    fn measure_reads(store: &'s Store, codec: Codec, model: &ReadsModel<'_>) -> Result<Self> {
        let n = store.num_nodes() as usize;
        let width = store.index_width();
        let mut seed_bits: Option<Vec<u64>> = None;
        if let Some(seeds) = model.seeds {
            let mut bits = vec![0u64; n.div_ceil(64)];
            for &s in seeds.iter().filter(|&&s| (s as usize) < n) {
                bits[s as usize / 64] |= 1 << (s % 64);
            }
            seed_bits = Some(bits);
        }
        let is_seed = |v: usize| {
            seed_bits
                .as_ref()
                .is_none_or(|b| b[v / 64] >> (v % 64) & 1 == 1)
        };
        let mut encoded_len = vec![0u32; n];
        let mut hop1 = vec![0f32; n];
        let mut scratch = Vec::new();
        store.for_each_list(STREAM_CHUNK_BYTES, &mut |v, list| {
            scratch.clear();
            codec.encode(list, width, &mut scratch)?;
            encoded_len[v as usize] = u32::try_from(scratch.len()).unwrap_or(u32::MAX);
            if model.fanouts.len() > 1 && is_seed(v as usize) {
                let w = model.drawn(0, list.len()) as f32;
                for &u in list {
                    hop1[u as usize] += w;
                }
            }
            Ok(())
        })?;
        let batches = model.batches;
        for p in hop1.iter_mut() {
            *p = ReadsModel::distinct(f64::from(*p), batches) as f32;
        }
        let mut hop2 = Vec::new();
        if model.fanouts.len() > 2 {
            hop2 = vec![0f32; n];
            store.for_each_list(STREAM_CHUNK_BYTES, &mut |v, list| {
                let w = hop1[v as usize] * model.drawn(1, list.len()) as f32;
                if w > 0.0 {
                    for &u in list {
                        hop2[u as usize] += w;
                    }
                }
                Ok(())
            })?;
        }
        // Reads: the distinct targets per read unit, summed over hops,
        // times the bytes a miss reads (the list and about a page).
        let units = batches / model.batches_per_read;
        let reads = |p: f32| ReadsModel::distinct(f64::from(p), batches.min(units.max(1.0)));
        let (ip, wb) = (store.indptr(), width.bytes() as u64);
        for (v, p1) in hop1.iter_mut().enumerate() {
            let p2 = hop2.get(v).copied().unwrap_or(0.0);
            let p0 = if model.fanouts.is_empty() || !is_seed(v) {
                0.0
            } else {
                1.0
            };
            let raw = ((ip[v + 1] - ip[v]) * wb) as f64;
            let miss_bytes = raw + MISS_OVERHEAD_BYTES;
            *p1 = ((reads(p0) + reads(*p1) + reads(p2)) * miss_bytes / MISS_OVERHEAD_BYTES) as f32;
        }
        Ok(Candidates {
            store,
            score: Score::Reads(hop1),
            encoded_len,
        })
    }

    /// Nodes of the store.
    pub fn num_nodes(&self) -> u64 {
        self.encoded_len.len() as u64
    }

    fn in_degree(&self, v: usize) -> u64 {
        let indptr = self.store.indptr();
        indptr[v + 1] - indptr[v]
    }

    /// `v`'s rank key (rank order is ascending key): the bits of its score
    /// inverted (a non-negative `f64`'s bits order as its value does), then
    /// its id; `None` for an empty list, which is never cached.
    fn rank_key(&self, v: usize) -> Option<u128> {
        let in_degree = self.in_degree(v);
        if in_degree == 0 {
            return None;
        }
        let score = match &self.score {
            Score::OutDegree(d) => f64::from(d[v]) / in_degree as f64,
            Score::Reads(r) => f64::from(r[v]) / f64::from(self.encoded_len[v].max(1)),
        };
        Some(u128::from(!score.to_bits()) << 64 | v as u128)
    }

    /// Whether the cut takes `v`.
    pub fn takes(&self, cut: Cut, v: usize) -> bool {
        self.rank_key(v)
            .is_some_and(|k| cut.0.is_none_or(|first_out| k < first_out))
    }

    /// Where the longest prefix of rank order whose lists satisfy `fits`
    /// ends (`fits` must hold for every prefix of a set it holds for).
    pub fn longest_prefix(&self, fits: &dyn Fn(Lists) -> bool) -> Cut {
        let n = self.encoded_len.len();
        let mut before = Lists::default(); // ranked before the digits found so far
        let mut prefix = 0u128;
        for digit in 0..8u32 {
            let shift = 112 - 16 * digit;
            // Per digit value: its nodes' lists, and one node's key.
            let mut under = vec![(Lists::default(), 0u128); DIGIT_VALUES];
            for v in 0..n {
                let Some(key) = self.rank_key(v) else {
                    continue;
                };
                if digit > 0 && key >> (shift + 16) != prefix >> (shift + 16) {
                    continue;
                }
                let (lists, any_key) = &mut under[(key >> shift) as usize & (DIGIT_VALUES - 1)];
                lists.count += 1;
                lists.bytes += u64::from(self.encoded_len[v]);
                *any_key = key;
            }
            let mut first_out = None;
            for (value, (lists, any_key)) in under.iter().enumerate().filter(|(_, l)| l.0.count > 0)
            {
                let with = Lists {
                    count: before.count + lists.count,
                    bytes: before.bytes + lists.bytes,
                };
                if !fits(with) {
                    if lists.count == 1 {
                        // The one node under this value is the first left out.
                        return Cut(Some(*any_key));
                    }
                    first_out = Some(value);
                    break;
                }
                before = with;
            }
            // Every node fits (only possible at the first digit: later ones
            // look inside a digit value whose nodes did not all fit).
            let Some(value) = first_out else {
                return Cut(None);
            };
            prefix |= (value as u128) << shift;
        }
        Cut(Some(prefix))
    }

    /// The location table and blob sizes of the lists `cut` takes, laid out
    /// by node id with `codec`.
    pub fn layout_size(&self, cut: Cut, codec: Codec) -> LayoutSize {
        let mut size = LayoutSize::default();
        let blocked = codec == Codec::BlockBitpack;
        let (mut in_block, mut block_bytes) = (0u64, 0u64);
        for v in 0..self.encoded_len.len() {
            if !self.takes(cut, v) {
                continue;
            }
            let len = u64::from(self.encoded_len[v]);
            size.lists.count += 1;
            size.lists.bytes += len;
            if blocked {
                in_block += 1;
                block_bytes += len;
                if in_block == BLOCK_LISTS {
                    close_block(&mut size, in_block, block_bytes);
                    (in_block, block_bytes) = (0, 0);
                }
            }
        }
        if blocked {
            close_block(&mut size, in_block, block_bytes);
        } else {
            size.table_entries = size.lists.count + 1;
            size.blob_bytes = size.lists.bytes;
        }
        size
    }

    /// The lists of a cache of at most `budget` bytes whose parts other
    /// than the location table and blob (an empty cache's) take `empty`
    /// bytes: taken in rank
    /// order while each list's bytes and its table share fit, then, as
    /// `block-bitpack` blocks with large lists take wider end offsets than
    /// priced, the lowest-ranked dropped until the laid-out file fits.
    /// Returns the cut and its layout.
    pub fn pick(&self, codec: Codec, budget: u64, empty: u64) -> (Cut, LayoutSize) {
        let blocked = codec == Codec::BlockBitpack;
        let table = |count: u64| {
            if blocked {
                NARROW_END_BYTES * count + 8 * count.div_ceil(BLOCK_LISTS)
            } else {
                8 * count
            }
        };
        let mut cut = self.longest_prefix(&|l| empty + l.bytes + table(l.count) <= budget);
        loop {
            let size = self.layout_size(cut, codec);
            let file = empty + 8 * size.table_entries + size.blob_bytes;
            if file <= budget || size.lists.count == 0 {
                return (cut, size);
            }
            // Drop the fewest lowest-ranked lists whose bytes (and a
            // narrow end offset each) make up the excess.
            let priced = size.lists.bytes + NARROW_END_BYTES * size.lists.count;
            let keep = priced.checked_sub(file - budget);
            cut = self.longest_prefix(&|l| {
                keep.is_some_and(|k| l.bytes + NARROW_END_BYTES * l.count <= k)
            });
        }
    }
}

/// Adds a `block-bitpack` block of `count` lists of `bytes` encoded bytes
/// to `size`: a directory entry, an end offset per list (`u32` once the
/// block's lists pass 64 KiB) and the lists.
fn close_block(size: &mut LayoutSize, count: u64, bytes: u64) {
    if count > 0 {
        let end_bytes = if bytes > u64::from(u16::MAX) {
            4
        } else {
            NARROW_END_BYTES
        };
        size.table_entries += 1;
        size.blob_bytes += count * end_bytes + bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default file name of a reads-picked cache follows the model:
    /// the same seeds in another order (another epoch's shuffle) name the
    /// same file, other seeds, fanouts or read unit another.
    #[test]
    fn the_fingerprint_follows_the_model_not_the_seed_order() {
        fn model(s: &[u64], f: Vec<i64>, per: u64) -> u32 {
            ReadsModel::new(f, Some(s), s.len() as u64, 2, per).fingerprint()
        }
        let (s, sh, o) = ([5u64, 9, 2, 7], [7u64, 2, 5, 9], [5u64, 9, 2, 8]);
        assert_eq!(model(&s, vec![10, 10], 1), model(&sh, vec![10, 10], 1));
        assert_ne!(model(&s, vec![10, 10], 1), model(&o, vec![10, 10], 1));
        assert_ne!(model(&s, vec![10, 10], 1), model(&s, vec![10, 5], 1));
        assert_ne!(model(&s, vec![10, 10], 1), model(&s, vec![10, 10], 2));
    }

    /// Visits spread by the fanout's draw probability and saturate per
    /// read unit.
    #[test]
    fn draws_and_distinct_visits() {
        let m = ReadsModel::new(vec![2, -1], None, 100, 10, 1);
        assert_eq!(m.drawn(0, 8), 0.25);
        assert_eq!(m.drawn(0, 2), 1.0);
        assert_eq!(m.drawn(1, 1000), 1.0);
        assert_eq!(m.drawn(2, 5), 0.0);
        let d = ReadsModel::distinct(1e9, 10.0);
        assert!((d - 10.0).abs() < 1e-9, "{d}");
        let small = ReadsModel::distinct(0.01, 10.0);
        assert!((small - 0.01).abs() < 1e-4, "{small}");
    }
}
