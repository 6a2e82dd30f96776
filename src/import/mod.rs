//! Data in: readers for user formats and the synthetic generator. Every
//! importer ends in a store built by [`crate::store::StoreBuilder`], so the
//! atomicity and checksum guarantees are the builder's.

pub mod convert;
pub mod derive;
pub mod dgl;
pub mod dgl_schema;
pub mod files;
pub mod locality;
pub mod node_order;
pub mod npy;
pub mod npy_write;
pub mod npz;
pub mod ogb;
pub mod pipeline;
pub mod remap;
pub mod reorder;
pub mod synth;
pub mod text;
