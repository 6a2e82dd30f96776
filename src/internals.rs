//! The modules behind the curated API, for the ginex command-line tools
//! (`tools/`, crate `ginex-cli`), the tests, the fuzz targets and the
//! Python bindings: public under this one name, hidden from the docs, with
//! no stability promise. An embedding application uses the items
//! re-exported at the crate root.

#[path = "cache/mod.rs"]
pub mod cache;
#[path = "checkpoint_meta.rs"]
pub mod checkpoint_meta;
#[path = "error.rs"]
pub mod error;
#[path = "exec/mod.rs"]
pub mod exec;
#[path = "export/mod.rs"]
pub mod export;
#[path = "format/mod.rs"]
pub mod format;
#[path = "import/mod.rs"]
pub mod import;
#[path = "inspect/mod.rs"]
pub mod inspect;
#[allow(unsafe_code)]
#[path = "io/mod.rs"]
pub mod io;
#[path = "link_metrics.rs"]
pub mod link_metrics;
#[path = "sample/mod.rs"]
pub mod sample;
#[path = "size.rs"]
pub mod size;
#[path = "store/mod.rs"]
pub mod store;
#[cfg(feature = "train")]
#[path = "train/mod.rs"]
pub mod train;
#[path = "verify.rs"]
pub mod verify;
