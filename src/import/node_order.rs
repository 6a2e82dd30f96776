//! Node orders for a store's layout (`--reorder`): which node gets which
//! new id. [`crate::import::reorder`] writes a store in such an order and
//! [`crate::import::locality`] measures which order pays.
//!
//! The orders ([`Reorder`]):
//!
//! * `none` — the input's order.
//! * `degree` — descending in-degree (ties by id): the nodes that are the
//!   in-neighbour of many others, so the rows sampled most often, share
//!   pages with each other.
//! * `auto` — the default of `ginex-import` and `ginex gen`: the store is
//!   built in the input's order, its batches' pages are measured under
//!   that order and under `bfs` and `degree`
//!   ([`crate::import::locality::decide`]), and it is renumbered by the
//!   best of them only when that cuts the pages its sampled batches
//!   read together by the stated margin
//!   ([`crate::import::locality::AUTO_MARGIN`]); otherwise the built store
//!   is renamed into place unchanged.
//! * `bfs` — breadth-first over in-neighbour lists (Cuthill–McKee without
//!   the reversal), each component started at its highest-in-degree
//!   unvisited node. When a node is taken from the queue, all its
//!   unvisited in-neighbours get consecutive ids, hottest first (descending
//!   out-degree, ties by id), and a batch reads exactly the in-neighbours
//!   of its nodes (the sampler walks in-edges), so the sampled neighbours
//!   of one node land on few pages. Hottest first pays: with each
//!   expansion in id order instead, the pages 8 sampled batches read
//!   together were 248,023 on a 3M-node store with random node ids (now
//!   217,156) and 244,422 on the generator's order (now 216,683), and a
//!   2.9x epoch on the random-id store read 1,125,681 pages (now
//!   1,075,112; docs/lab/performance-journal.md, "BFS, hottest neighbours first"). A
//!   node's hot neighbours, which the feature cache holds whatever their
//!   order, go first and share pages with each other; its cold ones, the
//!   rows actually read, follow packed together.
//!
//! Cost: in-degrees come from `indptr`, which [`Store::open`] holds anyway;
//! out-degrees from the store's `out_degrees` file (counted where an older
//! store has none). BFS reads each neighbour list once from disk, in
//! `O(N)` memory: the order (8 bytes a node), its inverse (8 bytes a
//! node), the out-degrees (4 bytes a node) and a visited bit set; nothing
//! is `O(E)`.
#![deny(clippy::unwrap_used, clippy::indexing_slicing)]

use crate::error::{Error, Result};
use crate::store::Store;

/// A node order for the store layout; see the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reorder {
    /// The input's order.
    #[default]
    None,
    /// Descending in-degree, ties by id.
    Degree,
    /// Breadth-first over in-neighbour lists from the hubs, each node's
    /// neighbours hottest first.
    Bfs,
    /// Measured: the best of the others where it pays, else `none`.
    Auto,
}

impl Reorder {
    /// Every order, for parsing and listing.
    pub const ALL: [Reorder; 4] = [Reorder::None, Reorder::Degree, Reorder::Bfs, Reorder::Auto];

    /// The orders that are computed, not decided.
    pub const ORDERS: [Reorder; 3] = [Reorder::None, Reorder::Degree, Reorder::Bfs];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Reorder::None => "none",
            Reorder::Degree => "degree",
            Reorder::Bfs => "bfs",
            Reorder::Auto => "auto",
        }
    }

    /// Whether this always renumbers (`degree`, `bfs`): what a typed
    /// import refuses (`auto` keeps a typed store's order).
    pub fn renumbers(self) -> bool {
        matches!(self, Reorder::Degree | Reorder::Bfs)
    }

    /// Parses a name (`none`, `degree`, `bfs`, `auto`).
    pub fn parse(s: &str) -> Result<Self> {
        Error::parse_name(s, "reorder", &Self::ALL, Self::name)
    }
}

/// The new order of `store`'s nodes: `order[new] = old`.
pub fn node_order(store: &Store, how: Reorder) -> Result<Vec<u64>> {
    match how {
        Reorder::None => Ok((0..store.num_nodes()).collect()),
        Reorder::Degree => Ok(degree_order(store)),
        Reorder::Bfs => bfs_order(store),
        Reorder::Auto => Err(Error::invalid_argument(
            "--reorder auto is decided by measuring the store, not computed as an order",
        )),
    }
}

fn degree_order(store: &Store) -> Vec<u64> {
    let indptr = store.indptr();
    let degree = |v: u64| -> u64 {
        let at = |i: u64| indptr.get(i as usize).copied().unwrap_or(0);
        at(v + 1).saturating_sub(at(v))
    };
    let mut order: Vec<u64> = (0..store.num_nodes()).collect();
    order.sort_by_key(|&v| (std::cmp::Reverse(degree(v)), v));
    order
}

fn bfs_order(store: &Store) -> Result<Vec<u64>> {
    let n = store.num_nodes();
    let starts = degree_order(store);
    let mut visited = vec![0u64; n.div_ceil(64) as usize];
    // Returns true the first time `v` is seen.
    let mut visit = |v: u64| -> bool {
        match visited.get_mut((v / 64) as usize) {
            Some(w) if *w & (1 << (v % 64)) == 0 => {
                *w |= 1 << (v % 64);
                true
            }
            _ => false,
        }
    };
    let out_degrees = crate::sample::neighbor_cache::out_degrees(store)?;
    let hotness = |u: u64| out_degrees.get(u as usize).copied().unwrap_or(0);
    // The order is its own queue: `head` is the next node to expand.
    let mut order: Vec<u64> = Vec::with_capacity(n as usize);
    let mut head = 0usize;
    for s in starts {
        if !visit(s) {
            continue;
        }
        order.push(s);
        while let Some(&v) = order.get(head) {
            head += 1;
            let first_new = order.len();
            for u in store.in_neighbors(v)? {
                if visit(u) {
                    order.push(u);
                }
            }
            // Hottest first (see the module docs).
            if let Some(fresh) = order.get_mut(first_new..) {
                fresh.sort_unstable_by_key(|&u| (std::cmp::Reverse(hotness(u)), u));
            }
        }
    }
    Ok(order)
}

/// `order` inverted (`new_of[old] = new`), checked to be a permutation of
/// `0..n`.
pub(crate) fn invert(order: &[u64], n: u64) -> Result<Vec<u64>> {
    let broken = || Error::invalid_argument("node order is not a permutation of the node ids");
    if order.len() as u64 != n {
        return Err(broken());
    }
    let mut new_of = vec![u64::MAX; order.len()];
    for (new, &old) in order.iter().enumerate() {
        match new_of.get_mut(old as usize) {
            Some(slot) if *slot == u64::MAX => *slot = new as u64,
            _ => return Err(broken()),
        }
    }
    Ok(new_of)
}
