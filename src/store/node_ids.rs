//! The ids a user sees. A store with original ids (`orig_ids`: written by
//! `--remap` and by `--reorder`) numbers its nodes `0..N` internally, but
//! every id that crosses the user boundary — ids passed in (`ginex predict
//! --nodes`, Python `Store.features`) and ids handed back (sampled ids,
//! splits, neighbours) — is an original id, and per-node arrays handed
//! back (labels, predictions of every node) are in ascending original id
//! ("user order"). A store without original ids is its own user order.
//!
//! Memory: the original id of every node and the (original, store) pairs
//! sorted for lookups, 24 bytes a node.
#![deny(clippy::unwrap_used, clippy::indexing_slicing)]

use crate::error::{Error, Result};
use crate::store::Store;

/// Store id ↔ original id; see the module docs.
#[derive(Debug, Clone)]
pub struct NodeIds {
    n: u64,
    /// `orig[v]`: the original id of store node `v`; `None`: the identity.
    orig: Option<Vec<u64>>,
    /// (original id, store id), sorted by original id.
    by_orig: Vec<(u64, u64)>,
}

impl NodeIds {
    /// The ids of `store`. A store whose original ids repeat (possible for
    /// ids given with `--orig-ids`) cannot map them back: its ids are its
    /// store ids, with a warning. So are a typed store's, whose original
    /// ids are per node type (format/schema.md): users address its nodes
    /// by global id, and the schema maps those to types.
    pub fn of(store: &Store) -> Result<Self> {
        let n = store.num_nodes();
        if store.schema().is_some() {
            return Ok(Self::identity(n));
        }
        let Some(orig) = store.original_ids()? else {
            return Ok(Self::identity(n));
        };
        let by_orig = by_original_id(&orig);
        if by_orig
            .windows(2)
            .any(|w| matches!(w, [a, b] if a.0 == b.0))
        {
            tracing::warn!(
                "{}: original ids repeat; node ids are the store's own",
                store.dir().display()
            );
            return Ok(Self::identity(n));
        }
        Ok(NodeIds {
            n,
            orig: Some(orig),
            by_orig,
        })
    }

    /// The identity on `0..n` (a store without original ids).
    pub fn identity(n: u64) -> Self {
        NodeIds {
            n,
            orig: None,
            by_orig: Vec::new(),
        }
    }

    /// True when user ids are the store ids.
    pub fn is_identity(&self) -> bool {
        self.orig.is_none()
    }

    /// The original id of store node `v` (`v` below the node count).
    pub fn original(&self, v: u64) -> u64 {
        match &self.orig {
            Some(o) => o.get(v as usize).copied().unwrap_or(v),
            None => v,
        }
    }

    /// The original ids of store nodes `ids`.
    pub fn originals(&self, ids: &[u64]) -> Vec<u64> {
        ids.iter().map(|&v| self.original(v)).collect()
    }

    /// The store node of original id `id`; an error names an id the store
    /// does not hold.
    pub fn store_id(&self, id: u64) -> Result<u64> {
        if self.orig.is_none() {
            return if id < self.n {
                Ok(id)
            } else {
                Err(Error::OutOfRange(format!(
                    "node {id} is not below the node count {}",
                    self.n
                )))
            };
        }
        self.by_orig
            .binary_search_by_key(&id, |&(o, _)| o)
            .ok()
            .and_then(|i| self.by_orig.get(i))
            .map(|&(_, v)| v)
            .ok_or_else(|| {
                Error::OutOfRange(format!("node {id} is not an original id of this store"))
            })
    }

    /// The store nodes of original ids `ids`.
    pub fn store_ids(&self, ids: &[u64]) -> Result<Vec<u64>> {
        ids.iter().map(|&id| self.store_id(id)).collect()
    }

    /// Store ids in user order (ascending original id).
    pub fn user_order(&self) -> Vec<u64> {
        match &self.orig {
            Some(_) => self.by_orig.iter().map(|&(_, v)| v).collect(),
            None => (0..self.n).collect(),
        }
    }

    /// Original ids in ascending order (the ids of [`Self::user_order`]).
    pub fn sorted_originals(&self) -> Vec<u64> {
        match &self.orig {
            Some(_) => self.by_orig.iter().map(|&(o, _)| o).collect(),
            None => (0..self.n).collect(),
        }
    }

    /// A per-store-node array `values` rearranged into user order.
    pub fn to_user_order<T: Copy>(&self, values: &[T]) -> Vec<T> {
        match &self.orig {
            Some(_) => self
                .by_orig
                .iter()
                .filter_map(|&(_, v)| values.get(v as usize).copied())
                .collect(),
            None => values.to_vec(),
        }
    }
}

/// `(original id, store id)` of every node, sorted.
fn by_original_id(orig: &[u64]) -> Vec<(u64, u64)> {
    let mut by_orig: Vec<(u64, u64)> = orig
        .iter()
        .enumerate()
        .map(|(v, &o)| (o, v as u64))
        .collect();
    by_orig.sort_unstable();
    by_orig
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn with(orig: Vec<u64>) -> NodeIds {
        let by_orig = by_original_id(&orig);
        NodeIds {
            n: orig.len() as u64,
            orig: Some(orig),
            by_orig,
        }
    }

    #[test]
    fn maps_both_ways_and_orders_by_original_id() {
        let ids = with(vec![30, 10, 20]);
        assert_eq!(ids.originals(&[0, 1, 2]), vec![30, 10, 20]);
        assert_eq!(ids.store_ids(&[10, 20, 30]).unwrap(), vec![1, 2, 0]);
        assert!(ids.store_id(11).is_err());
        assert_eq!(ids.user_order(), vec![1, 2, 0]);
        assert_eq!(ids.sorted_originals(), vec![10, 20, 30]);
        assert_eq!(ids.to_user_order(&['a', 'b', 'c']), vec!['b', 'c', 'a']);
        let id = NodeIds::identity(3);
        assert!(id.is_identity());
        assert_eq!(id.store_ids(&[2, 0]).unwrap(), vec![2, 0]);
        assert!(id.store_id(3).is_err());
        assert_eq!(id.to_user_order(&[5, 6, 7]), vec![5, 6, 7]);
    }
}
