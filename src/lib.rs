//! # ginex — out-of-core GNN training on one machine with an SSD
//!
//! ginex keeps a graph (topology, node features, labels, splits) in a
//! checksummed on-disk **store** and prepares GNN mini-batches from it
//! under a memory budget: a k-hop neighbor sampler, a compressed neighbor
//! cache and a feature cache whose replacement follows Belady's optimal
//! policy (Ginex, VLDB'22). A Rust program embeds it in three steps: make a
//! store, open it, iterate a [`Loader`].
//!
//! ```
//! # fn main() -> ginex::Result<()> {
//! # let tmp = tempfile::tempdir().unwrap();
//! # let path = tmp.path().join("store");
//! // A small synthetic store (or ginex::import_files for your own data).
//! ginex::generate_store(
//!     &ginex::SynthParams { nodes: 2000, dim: 16, classes: 4, ..Default::default() },
//!     &path,
//!     &ginex::NoProgress,
//! )?;
//! let store = ginex::Store::open(&path)?;
//! let mut loader = ginex::Loader::builder(&store)
//!     .fanouts([10, 10])
//!     .batch_size(100)
//!     .policy(ginex::Policy::Ginex)
//!     .memory("256MiB")
//!     .build()?;
//! for batch in &mut loader {
//!     let batch = batch?;
//!     let features: Vec<f32> = batch.rows_f32(); // one row per id, seeds first
//!     let labels = batch.labels.as_deref();        // the seeds' labels
//!     # let _ = (features, labels);
//! }
//! println!("miss ratio {:.3}", loader.report().unwrap().miss_ratio());
//! # Ok(()) }
//! ```
//!
//! The runnable programs in `examples/` show more: `open_and_inspect.rs`,
//! `import_arrays.rs` (a store from vectors in memory), `train_loop.rs` (a
//! baseline trained on a `Loader`'s batches) and, with the `train` feature,
//! `tch_sage.rs` (GraphSAGE on tch).
//!
//! ## The public API
//!
//! * **Stores**: [`Store`] (open, verify, counts, feature rows of ids,
//!   neighbors, labels, splits); [`StoreBuilder`] with [`StoreSpec`],
//!   [`FeatureLayout`], [`FeatureWriter`], [`TopologyWriter`] and
//!   [`ListSink`] writes one from rows and in-neighbor lists; [`Dtype`],
//!   [`Splits`], [`VerifyReport`]; [`NodeIds`] maps the original ids of a
//!   `--remap` / `--reorder` store (the ids users see) to store ids.
//!   Link prediction: [`Store::edge_splits`] gives the [`EdgeSplits`]
//!   (train / valid / test [`EdgeSplit`]s and their [`Negatives`]; the
//!   held-out edges are not in the graph), imported with
//!   [`CommonOptions::edge_splits`] ([`EdgeSplitSource`], [`EdgeSplitFiles`])
//!   or written with [`StoreBuilder::write_edge_splits`].
//! * **Data in**: [`import_files`] ([`FilesImport`]: `.npy` arrays and edge
//!   lists), [`import_ogb`] ([`OgbImport`]), [`import_dgl`] ([`DglImport`]),
//!   with [`CommonOptions`], [`CscOptions`] and an [`ImportReport`];
//!   [`generate_store`] ([`SynthParams`], [`SynthReport`]) makes synthetic
//!   power-law graphs with planted classes; [`CommonOptions::reorder`]
//!   ([`Reorder`], or [`reorder_store`] on a finished store) renumbers the
//!   nodes for page locality, keeping the original ids; `auto`, the
//!   default, does so only where it measures a cut in the pages a
//!   superbatch's batches read
//!   ([`LayoutDecision`], on the batches of a [`LayoutSample`]). Long work reports to a
//!   [`Progress`] ([`NoProgress`] shows nothing) or to the process's
//!   [`progress`] sink.
//! * **Batches**: [`Loader`] (built by a [`LoaderBuilder`]) yields
//!   [`Batch`]es whose [`Hop`]s are the sampled bipartite layers; seeds come
//!   from a [`Split`] or a list; on a typed store [`Batch::typed`] gives a
//!   [`TypedBatch`] ([`TypedNodes`] per node type, [`TypedEdges`] per
//!   relation, PyG's heterogeneous layout); the cache [`Policy`]; after
//!   the epoch an [`EpochReport`] ([`BatchStat`] per batch); the
//!   [`MemoryPlan`] of a budget (measured on a [`WorkingSet`]).
//! * **Errors**: one [`Error`] type (every variant names the file, the
//!   position and the reason) and [`Result`].
//!
//! Everything else lives under one hidden module, `ginex::internals`, only
//! so that the ginex command-line tools (`tools/`, crate `ginex-cli`), the
//! tests, the fuzz targets and the Python bindings can reach it: it is
//! hidden from these docs and has no stability promise (one crate rather
//! than several: the tools use the executor's internals — reports, stage
//! timers, format decoders — that a split would have to make public
//! anyway).
//! `tests/public-api.txt` lists the public API exactly; a test fails when it
//! changes without that file changing too.
//!
//! ## A tour of the modules
//!
//! In data-flow order (a map of files and artifacts is `ARCHITECTURE.md` at
//! the repository root):
//!
//! * `error` — the one error type: every variant names the file, the
//!   position and the reason.
//! * `format` — the byte layouts of every file we write (specs in
//!   `format/*.md`): the common header, the manifest, feature pages, CSC
//!   segments, labels and splits, the neighbor cache, runtime records; their
//!   offsets and checksums. Pure encode/decode, no I/O.
//! * `io` — the only module with `unsafe`: durable atomic directory
//!   creation, checksummed file writers, positional and streaming reads, the
//!   batched page readers (io_uring, pread) with a fault-injection seam.
//! * `store` — a store directory: `StoreBuilder` streams features and
//!   topology into a staging directory and commits it atomically; `Store`
//!   opens, reads (every page and segment read from disk is checked against
//!   its CRC) and verifies; `store::gather` is the batched miss path.
//! * `import` — data in: the synthetic power-law generator with planted
//!   classes (`ginex gen`), raw `.npy`/edge-list output, and the importers of
//!   edge lists, `.npy`/`.npz`, OGB and DGL datasets; `import::reorder`
//!   renumbers a finished store's nodes (`--reorder`), `import::locality`
//!   measures whether it pays (`--reorder auto`, the layout hints).
//! * `export` — data out: DGL's chunked graph format (DistDGL's input) and
//!   GraphBolt's on-disk dataset, streamed from a store within a memory
//!   budget and renamed into place at the end; both re-import byte-identically
//!   (typed stores: in both formats' heterogeneous layouts, `dgl` round-trips).
//! * `sample` — the k-hop neighbor sampler and its [`Fanouts`] (per hop for
//!   all relations, or per relation on a typed store), the sources of
//!   neighbor lists (in memory, on disk) and the compressed neighbor cache,
//!   built once (streaming the topology) and reused.
//! * `inspect` — the inspector: runs the sampler ahead of an epoch, writes
//!   runtime files and computes exact Belady changesets per superbatch.
//! * `cache` — the feature cache driven by changesets (carried over
//!   between superbatches), the dynamic row caches (LRU, SIEVE, S3-FIFO,
//!   CLOCK, 2Q) and the static policies' selections.
//! * `exec` — the executor: one epoch under any cache policy, the
//!   superbatch pipeline, the memory planner, stage timers; the mmap
//!   baseline; the policy lab's trace simulator.
//! * `loader` — the embedded [`Loader`]: the executor's epoch on a thread,
//!   its batches through a bounded channel.
//! * `train` — models and the trainer loop on tch (cargo feature `train`).
//! * `checkpoint_meta` — the trainer's checkpoint metadata, parsed without tch.
//! * `link_metrics` — link-prediction metrics (AUC, AP, MRR, Hits@K), without tch.
//! * `verify` — verification of any file ginex writes, by its kind.
//! * [`progress`], `size`, `rng` — progress reporting to a sink the
//!   application installs, byte-size parsing, seeded random streams.
//!
//! The command-line tools are a separate crate (`tools/`, `ginex-cli`) that
//! depends on this one, so embedding ginex pulls in no argument parser or
//! terminal code.

#![deny(unsafe_code)]
#![warn(missing_docs)]

/// The modules behind the curated API, for the ginex command-line tools
/// (`tools/`, crate `ginex-cli`), the tests, the fuzz targets and the
/// Python bindings: public under this one name, hidden from the docs, with
/// no stability promise. An embedding application uses the items
/// re-exported at the crate root.
#[doc(hidden)]
pub mod internals;

// The crate's own paths (`crate::store::…`) name the same modules.
pub(crate) use internals::{
    cache, checkpoint_meta, error, exec, export, format, import, inspect, io, sample, size, store,
};
#[cfg(feature = "train")]
pub(crate) use internals::{link_metrics, train, verify};

// Internal only.
pub(crate) mod id_set;
mod loader;
pub(crate) mod rng;

pub mod progress;

pub use cache::Policy;
pub use error::{Error, Result};
pub use exec::epoch::{BatchStat, EpochReport, Timeline};
pub use exec::plan::{MemoryPlan, WorkingSet};
pub use format::edge_splits::{EdgeSplit, EdgeSplits, Negatives};
pub use format::pages::{Dtype, FeatureLayout};
pub use format::q8::Q8Error;
pub use format::tables::Splits;
pub use import::dgl::{import_dgl, DglImport};
pub use import::files::{import_files, FilesImport};
pub use import::locality::{Decision as LayoutDecision, Sample as LayoutSample};
pub use import::ogb::{import_ogb, OgbImport};
pub use import::pipeline::{CommonOptions, EdgeSplitFiles, EdgeSplitSource, ImportReport};
pub use import::reorder::{reorder_store, Reorder, Reordered};
pub use import::synth::{generate_store, SynthParams, SynthReport};
pub use loader::{Batch, Loader, LoaderBuilder, Split};
pub use progress::{NoProgress, Progress};
pub use sample::fanouts::Fanouts;
pub use sample::labor::{Sampler, SamplerConfig};
pub use sample::link::{EdgeOrder, LinkLabels, NegMode, NegSource};
pub use sample::sampler::Hop;
pub use sample::typed::{TypedBatch, TypedEdges, TypedNodes};
pub use store::edges::{CscOptions, CscStats};
pub use store::{
    FeatureWriter, ListSink, NodeIds, Store, StoreBuilder, StoreSpec, TopologyWriter, VerifyReport,
};
