//! The gather engine as the feature cache's miss path.

use std::cell::RefCell;

use crate::cache::feature_cache::{RowSource, INIT_CHUNK_BYTES};
use crate::error::{Error, Result};
use crate::format::pages::FeatureLayout;
use crate::format::PAGE_SIZE;
use crate::store::gather::{GatherOptions, GatherStats, Gatherer};
use crate::store::row_targets::RowTargets;
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
    /// one init chunk of `chunk_bytes` (at most [`INIT_CHUNK_BYTES`]; the
    /// planner counts it in `staged_init::buffer_bytes`).
    pub(crate) fn for_staged_init(
        store: &'a Store,
        options: &GatherOptions,
        chunk_bytes: u64,
    ) -> Result<Self> {
        let chunk_bytes = chunk_bytes.min(INIT_CHUNK_BYTES as u64) as usize;
        Ok(GatherRows {
            store,
            gatherer: RefCell::new(
                Gatherer::new(store, options)?
                    .with_chunk_bytes(chunk_bytes)
                    .as_init_reader(),
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
        self.gatherer
            .borrow_mut()
            .gather(self.store, ids, out)
            .map_err(|e| name_the_node(self.store, ids, e))
    }
    fn read_rows_to(&self, ids: &[u64], to: &mut RowTargets<'_>) -> Result<()> {
        self.gatherer
            .borrow_mut()
            .gather_to(self.store, ids, to)
            .map_err(|e| name_the_node(self.store, ids, e))
    }
}

/// A failed read of feature pages, with the page and a node of `ids` it
/// held named in its message (the reader knows only file and offset).
fn name_the_node(store: &Store, ids: &[u64], e: Error) -> Error {
    let Error::ReadFailed {
        path,
        offset,
        len,
        source,
    } = e
    else {
        return e;
    };
    let layout = store.feature_sections();
    let end = offset.saturating_add(len);
    let (first, last) = (
        offset.saturating_sub(FeatureLayout::page_offset(0)) / PAGE_SIZE as u64,
        end.saturating_sub(FeatureLayout::page_offset(0) + 1) / PAGE_SIZE as u64,
    );
    let hit = ids.iter().find_map(|&id| {
        let loc = layout.locate(id);
        let at = FeatureLayout::page_offset(loc.page);
        (at < end && offset < at + loc.pages * PAGE_SIZE as u64).then_some((id, loc.page))
    });
    let source = match hit {
        Some((id, page)) => std::io::Error::new(
            source.kind(),
            format!(
                "{source}; the read covers feature pages {first} to {last}; node {id} (page {page}) is one of those it was reading"
            ),
        ),
        None => source,
    };
    Error::ReadFailed {
        path,
        offset,
        len,
        source,
    }
}
