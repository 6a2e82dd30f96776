//! The training layer (cargo feature `train`, tch/libtorch): models over
//! sampled hops (`model`; each architecture one file of `conv`, the hops
//! `hop`), link-prediction decoders (`decoder`), one optimisation step and evaluation (`trainer`),
//! what a run is asked to do (`options`), the passes of the executor's
//! batches into the model (`pass`), the epoch loop (`run`), its
//! checkpoints (`checkpoint`), the model's memory measured on its first
//! batch for the memory plan (`memory`), the target type of a typed store
//! (`target`), evaluation and prediction (`eval`), link prediction's
//! training passes and evaluation (`link`), and
//! exact layer-wise inference over the whole graph (`layerwise`; by
//! streaming, `layerwise_stream`, within the plan of `layerwise_plan`). It
//! reads the store only through the executor.

pub mod checkpoint;
pub mod conv;
pub mod decoder;
pub mod eval;
pub mod hop;
pub mod layerwise;
pub mod layerwise_plan;
pub mod layerwise_stream;
pub mod link;
pub mod memory;
pub mod model;
pub mod options;
pub(crate) mod pass;
pub mod run;
pub mod target;
pub mod trainer;

/// The tch crate this layer is built on (devices, tensors), for callers.
pub use tch;
