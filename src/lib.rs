//! # ginex — out-of-core GNN training on one machine with an SSD
//!
//! A tour of the crate, in data-flow order:
//!
//! * [`format`] — the byte layouts of every file we write (specs in
//!   `format/*.md`): the common header, the manifest, feature pages, CSC
//!   segments, labels and splits. Pure encode/decode and checksums, no I/O.
//! * [`io`] — the only module with `unsafe`: durable atomic directory
//!   creation, checksummed file writers, positional reads.
//! * [`store`] — a store directory: [`store::StoreBuilder`] streams features
//!   and topology into a staging directory and commits it atomically;
//!   [`store::Store`] opens, reads (every page and segment read from disk is
//!   checked against its CRC) and verifies.
//! * [`import`] — data in: the synthetic power-law generator with planted
//!   classes (`ginex gen`), raw `.npy`/edge-list output.
//! * [`progress`] — progress of long work, reported to whatever sink the
//!   application installs (the command-line tools draw terminal bars).
//!
//! The command-line tools are a separate crate (`tools/`, `ginex-cli`) that
//! depends on this one, so embedding ginex pulls in no argument parser or
//! terminal code.
//!
//! Later layers (sampler, inspector, feature cache, executor, training)
//! sit on top of `store` and never touch the bytes directly.

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod cache;
pub mod error;
pub mod exec;
pub mod format;
pub mod hash;
pub mod import;
pub mod inspect;
#[allow(unsafe_code)]
pub mod io;
pub mod progress;
pub mod rng;
pub mod sample;
pub mod store;
#[cfg(feature = "train")]
pub mod train;
pub mod verify;

pub use error::{Error, Result};
pub use store::Store;
