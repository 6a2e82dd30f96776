//! Sampling: the k-hop neighbor sampler, its fanouts (one count per hop,
//! or per relation on a typed store) and the neighbor sources it reads
//! lists from (in memory, or the store through batched reads behind a
//! neighbor cache). Knows nothing about features. `link` makes link
//! batches (positive edges with negatives) for link prediction, in the
//! `edge_order` it is given, its negatives from the `negatives` source. `typed` reads a batch
//! through a typed store's schema (node types, relations).

pub mod edge_order;
pub mod fanouts;
pub mod labor;
mod labor_solve;
pub mod link;
pub mod negatives;
pub mod neighbor_cache;
pub mod neighbor_cache_pick;
pub mod neighbor_cache_reuse;
pub mod sampler;
pub mod seeds;
pub mod source;
pub mod typed;
