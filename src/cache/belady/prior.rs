//! How soon a node is likely to be used after the superbatch ends: the
//! tie-break among cached nodes whose next use lies beyond the horizon.
//!
//! Inside a superbatch the changesets know every node's next use. Past its
//! last batch they know nothing: exact superbatch-local Belady (Ginex)
//! treats all those nodes alike, evicts them first and never inserts a
//! miss that has no use left, so a cache larger than a superbatch's working
//! set ends every superbatch holding only what that superbatch used. A
//! [`ReusePrior`] ranks those nodes instead — by out-degree, the number of
//! neighbor lists a node sits in, which is what makes sampling reach it —
//! so the cache carried into the next superbatch holds the nodes most
//! likely to be needed there, and free slots are never wasted. The ranking
//! only orders nodes that the current superbatch never uses again, so the
//! superbatch's own reads stay the optimum from its carried start.

/// Ranks above which nothing is ranked (all rank-less nodes share it).
pub const RANKS: usize = 256;

/// A rank per node, 0 for the nodes most likely reused soonest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReusePrior {
    /// Empty: no prior (Ginex's superbatch-local Belady).
    ranks: Vec<u8>,
}

impl ReusePrior {
    /// No prior: nodes with no use left in the superbatch are evicted first,
    /// in no order, and never inserted.
    pub fn none() -> Self {
        ReusePrior::default()
    }

    /// Ranks nodes by out-degree `deg[v]`: rank `255 − ⌊8·log₂(deg + 1)⌋`
    /// (clamped at 0), so each doubling of the degree is 8 ranks nearer.
    pub fn from_out_degrees(deg: &[u32]) -> Self {
        let ranks = deg
            .iter()
            .map(|&d| {
                let level = (8.0 * (f64::from(d) + 1.0).log2()).min(255.0) as u8;
                255 - level
            })
            .collect();
        ReusePrior { ranks }
    }

    /// The prior of `store`: its out-degrees, from one streaming pass over
    /// the topology ([`out_degrees`](crate::sample::neighbor_cache::out_degrees)).
    pub fn of_store(store: &crate::store::Store) -> crate::error::Result<Self> {
        Ok(Self::from_out_degrees(
            &crate::sample::neighbor_cache::out_degrees(store)?,
        ))
    }

    /// Whether there is a prior.
    pub fn is_some(&self) -> bool {
        !self.ranks.is_empty()
    }

    /// The rank of `id` (the farthest for an unknown id or no prior).
    pub fn rank(&self, id: u64) -> usize {
        self.ranks
            .get(id as usize)
            .map_or(RANKS - 1, |&r| usize::from(r))
    }

    /// Bytes it holds.
    pub fn bytes(&self) -> u64 {
        self.ranks.len() as u64
    }
}

/// A prior over nodes `0..40` of mixed out-degrees when `on`, else none
/// (for tests that drive caches over small traces).
#[cfg(test)]
pub(crate) fn test_prior(on: bool) -> ReusePrior {
    if on {
        ReusePrior::from_out_degrees(&(0..40).map(|v| v * 7 % 13).collect::<Vec<u32>>())
    } else {
        ReusePrior::none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn higher_degree_ranks_nearer() {
        let p = ReusePrior::from_out_degrees(&[0, 1, 3, 1000, u32::MAX]);
        let r: Vec<usize> = (0..5).map(|v| p.rank(v)).collect();
        assert_eq!(r[0], 255);
        assert_eq!(r[1], 247);
        assert_eq!(r[2], 239);
        assert!(r[3] < r[2] && r[4] <= r[3]);
        assert_eq!(p.rank(99), RANKS - 1);
        assert_eq!(ReusePrior::none().rank(0), RANKS - 1);
        assert!(!ReusePrior::none().is_some() && p.is_some());
    }
}
