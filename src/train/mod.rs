//! The training layer (cargo feature `train`, tch/libtorch): models over
//! sampled hops (`model`), one optimisation step and evaluation (`trainer`),
//! and the epoch loop on the executor's batches with checkpoints and
//! prediction (`run`). It reads the store only through the executor.

pub mod model;
pub mod run;
pub mod trainer;

/// The tch crate this layer is built on (devices, tensors), for callers.
pub use tch;
