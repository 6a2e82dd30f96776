//! Which lists a neighbor cache holds, chosen in memory bounded by the
//! node count: two `u32` per node (out-degree and encoded size), never a
//! list of every node sorted, nor an allocation per list.
//!
//! Nodes with in-neighbors are taken in rank order — out-degree /
//! in-degree descending (Aligraph's metric), ties by node id ascending —
//! while the file fits the budget. What is taken is therefore a prefix of
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

/// Every node's out-degree and encoded list size, from one streaming pass
/// over the topology: what ranking and pricing the lists needs (8 bytes a
/// node).
pub struct Candidates<'s> {
    store: &'s Store,
    out_degree: Vec<u32>,
    encoded_len: Vec<u32>,
}

impl<'s> Candidates<'s> {
    /// Bytes this takes per node of the store.
    pub const BYTES_PER_NODE: u64 = 8;
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
            out_degree,
            encoded_len,
        })
    }

    /// Nodes of the store.
    pub fn num_nodes(&self) -> u64 {
        self.out_degree.len() as u64
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
        let score = f64::from(self.out_degree[v]) / in_degree as f64;
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
        let n = self.out_degree.len();
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
        for v in 0..self.out_degree.len() {
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
