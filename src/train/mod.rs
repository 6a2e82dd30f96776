//! The training layer (cargo feature `train`, tch/libtorch): models over
//! sampled hops, and (with the executor) the trainer loop, evaluation and
//! checkpoints. It never touches the disk directly.

pub mod model;
pub mod run;
pub mod trainer;

/// The tch crate this layer is built on (devices, tensors), for callers.
pub use tch;
