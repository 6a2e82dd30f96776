//! The order a link epoch visits its training edges in (`--edge-order`).
//!
//! `random` shuffles every edge from the run seed and the epoch (as node
//! seeds are shuffled). `blocked:P` cuts the node ids (the store's node
//! order, so `--reorder` groups neighbourhoods too) into P equal ranges
//! and the edges into the P × P blocks of (source range, destination
//! range), the edge buckets of Marius and MariusGNN. The blocks are
//! visited row by row with the columns in alternate directions (a
//! boustrophedon), so each block shares its source range with the one
//! before it, and at a row's turn its destination range: consecutive
//! batches and superbatches draw their endpoints from two ranges that
//! change one at a time (BETA's buffer-aware order with a buffer of two
//! ranges). Per epoch, the P range labels are permuted (the block-level
//! shuffle) and each block's edges are shuffled, both from the run seed,
//! so the order is deterministic and every edge appears exactly once.

use crate::error::{Error, Result};
use crate::rng::{stream_seed, Wyrand};
use crate::sample::seeds::epoch_order;

const PURPOSE_BLOCKS: u64 = 14;

/// The ranges `blocked` cuts the node ids into when not told.
pub const DEFAULT_RANGES: u32 = 16;
/// The most ranges `blocked:P` takes (P² blocks are counted in memory).
pub const MAX_RANGES: u32 = 1024;

/// The order of a link epoch's training edges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EdgeOrder {
    /// Every edge shuffled per epoch.
    #[default]
    Random,
    /// Blocks of (source range, destination range), `ranges` of each.
    Blocked {
        /// Node-id ranges per endpoint (P).
        ranges: u32,
    },
}

impl EdgeOrder {
    /// Parses `random`, `blocked` or `blocked:P` (P node-id ranges, 1 to
    /// [`MAX_RANGES`]; `blocked` is `blocked:16`).
    pub fn parse(s: &str) -> Result<EdgeOrder> {
        let bad = |why: String| Error::invalid_argument(format!("--edge-order {s:?}: {why}"));
        match s {
            "random" => return Ok(EdgeOrder::Random),
            "blocked" => {
                return Ok(EdgeOrder::Blocked {
                    ranges: DEFAULT_RANGES,
                })
            }
            _ => {}
        }
        let Some(p) = s.strip_prefix("blocked:") else {
            return Err(bad(format!(
                "expected random, blocked or blocked:P (P node-id ranges, 1 to {MAX_RANGES})"
            )));
        };
        match p.parse::<u32>() {
            Ok(ranges) if (1..=MAX_RANGES).contains(&ranges) => Ok(EdgeOrder::Blocked { ranges }),
            _ => Err(bad(format!(
                "blocked:P takes a whole number of node-id ranges from 1 to {MAX_RANGES}"
            ))),
        }
    }

    /// The text [`parse`](Self::parse) takes.
    pub fn name(self) -> String {
        match self {
            EdgeOrder::Random => "random".into(),
            EdgeOrder::Blocked { ranges } => format!("blocked:{ranges}"),
        }
    }

    /// The epoch's order of the edge indices `0..src.len()` (edge `i` is
    /// `src[i] → dst[i]`).
    pub fn order(self, src: &[u64], dst: &[u64], seed: u64, epoch: u64) -> Vec<u64> {
        match self {
            EdgeOrder::Random => {
                let all: Vec<u64> = (0..src.len() as u64).collect();
                epoch_order(&all, seed, epoch)
            }
            EdgeOrder::Blocked { ranges } => blocked(src, dst, ranges.max(1), seed, epoch),
        }
    }
}

/// The blocked order ([`EdgeOrder::Blocked`]).
fn blocked(src: &[u64], dst: &[u64], p: u32, seed: u64, epoch: u64) -> Vec<u64> {
    let p = p as usize;
    let span = src.iter().chain(dst).max().map_or(1, |m| m + 1);
    let width = span.div_ceil(p as u64).max(1);
    let block = |i: usize| (src[i] / width) as usize * p + (dst[i] / width) as usize;
    // Counting sort of the edges by block.
    let mut start = vec![0usize; p * p + 1];
    for i in 0..src.len() {
        start[block(i) + 1] += 1;
    }
    for b in 0..p * p {
        start[b + 1] += start[b];
    }
    let mut next = start.clone();
    let mut by_block = vec![0u64; src.len()];
    for i in 0..src.len() {
        let b = block(i);
        by_block[next[b]] = i as u64;
        next[b] += 1;
    }
    let mut rng = Wyrand(stream_seed(seed, PURPOSE_BLOCKS, epoch));
    let mut label: Vec<usize> = (0..p).collect();
    for i in (1..p).rev() {
        label.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mut order = Vec::with_capacity(src.len());
    for (row, &r) in label.iter().enumerate() {
        for col in 0..p {
            let c = label[if row % 2 == 0 { col } else { p - 1 - col }];
            let edges = &mut by_block[start[r * p + c]..start[r * p + c + 1]];
            for i in (1..edges.len()).rev() {
                edges.swap(i, rng.below(i as u64 + 1) as usize);
            }
            order.extend_from_slice(edges);
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_its_names_and_refuses_others() {
        for s in ["random", "blocked:16", "blocked:1", "blocked:1024"] {
            assert_eq!(EdgeOrder::parse(s).unwrap().name(), s);
        }
        assert_eq!(
            EdgeOrder::parse("blocked").unwrap(),
            EdgeOrder::Blocked { ranges: 16 }
        );
        for bad in ["blocked:0", "blocked:1025", "blocked:x", "beta", ""] {
            let e = EdgeOrder::parse(bad).unwrap_err().to_string();
            assert!(e.contains("--edge-order"), "{bad}: {e}");
        }
    }

    /// The range pair of each edge in `order`, and how many times the
    /// pair changes both ranges at once from one edge to the next.
    fn double_switches(src: &[u64], dst: &[u64], order: &[u64], width: u64) -> usize {
        let pair = |e: u64| (src[e as usize] / width, dst[e as usize] / width);
        order
            .windows(2)
            .filter(|w| {
                let (a, b) = (pair(w[0]), pair(w[1]));
                a.0 != b.0 && a.1 != b.1
            })
            .count()
    }

    proptest! {
        /// Every edge exactly once per epoch, the same order from the same
        /// seed, and consecutive edges change at most one range at a time
        /// on a complete grid of blocks.
        #[test]
        fn blocked_visits_every_edge_once_changing_one_range_at_a_time(
            edges in proptest::collection::vec((0u64..200, 0u64..200), 0..600),
            p in 1u32..9,
            seed in any::<u64>(),
            epoch in 0u64..4,
        ) {
            let (src, dst): (Vec<u64>, Vec<u64>) = edges.into_iter().unzip();
            let order = EdgeOrder::Blocked { ranges: p };
            let got = order.order(&src, &dst, seed, epoch);
            prop_assert_eq!(&got, &order.order(&src, &dst, seed, epoch));
            let mut sorted = got.clone();
            sorted.sort_unstable();
            prop_assert_eq!(sorted, (0..src.len() as u64).collect::<Vec<_>>());
            // Every block: the P × P grid of one edge each (plus the
            // random ones), so no block is skipped.
            let span = src.iter().chain(&dst).max().map_or(1, |m| m + 1).max(p as u64);
            let width = span.div_ceil(p as u64);
            let (mut gs, mut gd) = (src.clone(), dst.clone());
            for i in 0..p as u64 {
                for j in 0..p as u64 {
                    gs.push(i * width);
                    gd.push(j * width);
                }
            }
            let full = order.order(&gs, &gd, seed, epoch);
            prop_assert_eq!(double_switches(&gs, &gd, &full, width), 0);
        }
    }

    #[test]
    fn blocks_and_edges_within_them_are_shuffled_per_epoch() {
        let src: Vec<u64> = (0..4000).map(|i| (i * 7919) % 1000).collect();
        let dst: Vec<u64> = (0..4000).map(|i| (i * 104_729) % 1000).collect();
        let order = EdgeOrder::Blocked { ranges: 4 };
        let (a, b) = (order.order(&src, &dst, 1, 0), order.order(&src, &dst, 1, 1));
        assert_ne!(a, b);
        assert_ne!(a, order.order(&src, &dst, 2, 0));
        // The first block differs between the epochs or is shuffled inside.
        let first = |o: &[u64]| (src[o[0] as usize] / 250, dst[o[0] as usize] / 250);
        assert!(first(&a) != first(&b) || a[..10] != b[..10]);
        // Random is the shuffle node seeds get.
        let all: Vec<u64> = (0..4000).collect();
        assert_eq!(
            EdgeOrder::Random.order(&src, &dst, 3, 2),
            epoch_order(&all, 3, 2)
        );
    }
}
