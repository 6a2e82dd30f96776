//! TEMPORARY STUB of the link-store helper's reader (issue #40, contract
//! section 1): finds no edge splits. Replaced by link-store's module when
//! it lands.

use crate::error::Result;
use crate::format::edge_splits::EdgeSplits;
use crate::store::Store;

impl Store {
    /// The store's edge splits; Ok(None) when it was imported without any.
    pub fn edge_splits(&self) -> Result<Option<EdgeSplits>> {
        Ok(None)
    }
}
