//! The gather engine as the feature cache's miss path.

use std::cell::RefCell;

use crate::cache::feature_cache::{RowSource, INIT_CHUNK_BYTES};
use crate::error::Result;
use crate::store::gather::{GatherOptions, GatherStats, Gatherer};
use crate::store::Store;

/// Feature rows of a store read through one [`Gatherer`] (one per thread).
pub(crate) struct GatherRows<'a> {
    store: &'a Store,
    gatherer: RefCell<Gatherer>,
}

impl<'a> GatherRows<'a> {
    /// A gatherer over `store`'s feature file.
    pub(crate) fn new(store: &'a Store, options: &GatherOptions) -> Result<Self> {
        Ok(GatherRows {
            store,
            gatherer: RefCell::new(Gatherer::new(store, options)?),
        })
    }

    /// A gatherer for the staged init's reader, its read buffer capped at
    /// one init chunk ([`INIT_CHUNK_BYTES`]; the planner's
    /// `STAGED_INIT_BYTES`).
    pub(crate) fn for_staged_init(store: &'a Store, options: &GatherOptions) -> Result<Self> {
        Ok(GatherRows {
            store,
            gatherer: RefCell::new(
                Gatherer::new(store, options)?.with_chunk_bytes(INIT_CHUNK_BYTES),
            ),
        })
    }

    /// The gatherer's counters so far.
    pub(crate) fn stats(&self) -> GatherStats {
        self.gatherer.borrow().stats()
    }
}

impl RowSource for GatherRows<'_> {
    fn row_bytes(&self) -> usize {
        self.store.layout().row_bytes()
    }
    fn read_rows(&self, ids: &[u64], out: &mut [u8]) -> Result<()> {
        self.gatherer.borrow_mut().gather(self.store, ids, out)
    }
}
