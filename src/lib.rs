//! # ginex — out-of-core GNN training on one machine with an SSD
//!
//! A tour of the crate, in data-flow order (a map of files and artifacts is
//! `ARCHITECTURE.md` at the repository root):
//!
//! * [`error`] — the one error type: every variant names the file, the
//!   position and the reason.
//! * [`format`] — the byte layouts of every file we write (specs in
//!   `format/*.md`): the common header, the manifest, feature pages, CSC
//!   segments, labels and splits, the neighbor cache, runtime records; their
//!   offsets and checksums. Pure encode/decode, no I/O.
//! * [`io`] — the only module with `unsafe`: durable atomic directory
//!   creation, checksummed file writers, positional and streaming reads, the
//!   batched page readers (io_uring, pread) with a fault-injection seam.
//! * [`store`] — a store directory: [`store::StoreBuilder`] streams features
//!   and topology into a staging directory and commits it atomically;
//!   [`store::Store`] opens, reads (every page and segment read from disk is
//!   checked against its CRC) and verifies; [`store::gather`] is the batched
//!   miss path.
//! * [`import`] — data in: the synthetic power-law generator with planted
//!   classes (`ginex gen`), raw `.npy`/edge-list output, and the importers of
//!   edge lists, `.npy`/`.npz`, OGB and DGL datasets.
//! * [`export`] — data out: DGL's chunked graph format (DistDGL's input) and
//!   GraphBolt's on-disk dataset, streamed from a store within a memory
//!   budget and renamed into place at the end; both re-import byte-identically.
//! * [`sample`] — the k-hop neighbor sampler, the sources of neighbor lists
//!   (in memory, on disk) and the compressed neighbor cache, built once
//!   (streaming the topology) and reused.
//! * [`inspect`] — the inspector: runs the sampler ahead of an epoch, writes
//!   runtime files and computes exact Belady changesets per superbatch.
//! * [`cache`] — the feature cache driven by changesets (carried over
//!   between superbatches), the dynamic row caches (LRU, SIEVE, S3-FIFO,
//!   CLOCK) and the static policies' selections.
//! * [`exec`] — the executor: one epoch under any cache policy, the
//!   superbatch pipeline, the memory planner, stage timers; the mmap
//!   baseline; the policy lab's trace simulator.
//! * `train` — models and the trainer loop on tch (cargo feature `train`).
//! * [`checkpoint_meta`] — the trainer's checkpoint metadata, parsed without tch.
//! * [`verify`] — verification of any file ginex writes, by its kind.
//! * [`progress`], [`rng`], [`hash`] — progress reporting to a sink the
//!   application installs, seeded random streams, the integer-key hash.
//!
//! The command-line tools are a separate crate (`tools/`, `ginex-cli`) that
//! depends on this one, so embedding ginex pulls in no argument parser or
//! terminal code.

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod cache;
pub mod checkpoint_meta;
pub mod error;
pub mod exec;
pub mod export;
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
