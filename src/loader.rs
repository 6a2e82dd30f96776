//! The embedded data loader: one epoch of batches as an iterator, through
//! the same executor as `ginex epoch` ([`run_epoch`]).
//!
//! [`Loader::builder`] takes the run's parameters (the same knobs and
//! defaults as the `ginex epoch` flags); [`LoaderBuilder::build`] checks
//! them and, given a memory budget, runs the memory planner
//! ([`plan_epoch_with`]) on the calling thread. The first
//! [`next`](Iterator::next) starts the epoch on a background thread, which
//! sends owned [`Batch`]es through a bounded channel (one batch waiting,
//! one being handed over; both counted in the memory plan), so gathering
//! batch *i + 1* overlaps whatever the caller does with batch *i*.
//!
//! The thread owns a clone of the [`Store`] (cheap: the tables and open
//! files are shared, nothing is read again), so a `Loader` borrows nothing
//! and can be moved or kept beside the store freely.
//!
//! Dropping a `Loader` before the end of the epoch closes the channel: the
//! executor's next hand-over fails with [`Error::Cancelled`], the epoch
//! unwinds (its superbatch threads stop, its runtime-file directory is
//! removed) and the drop waits for the thread to finish. The thread stops
//! at its next batch boundary.

use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, Receiver};
use std::thread::JoinHandle;

use crate::cache::Policy;
use crate::error::{Error, Result};
use crate::exec::builder::EpochConfigBuilder;
use crate::exec::config::EpochConfig;
use crate::exec::epoch::{run_epoch, EpochBatch, EpochReport};
use crate::exec::plan::{MemoryPlan, WorkingSet};
use crate::format::pages::Dtype;
use crate::sample::fanouts::Fanouts;
use crate::sample::link::{EdgeOrder, LinkLabels, LinkTask, NegMode, NegSource};
use crate::sample::sampler::{epoch_order, Hop};
use crate::sample::typed::{TypedBatch, TypedNodes};
use crate::store::Store;

/// Which nodes an epoch's batches are seeded from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Split {
    /// The training split (shuffled per epoch by default, as `ginex epoch`).
    #[default]
    Train,
    /// The validation split.
    Valid,
    /// The test split.
    Test,
    /// Every node, `0..num_nodes`.
    All,
}

impl Split {
    /// Every split.
    pub const ALL: [Split; 4] = [Split::Train, Split::Valid, Split::Test, Split::All];

    /// Its name (`train`, `valid`, `test`, `all`).
    pub fn name(self) -> &'static str {
        match self {
            Split::Train => "train",
            Split::Valid => "valid",
            Split::Test => "test",
            Split::All => "all",
        }
    }

    /// Parses a name.
    pub fn parse(s: &str) -> Result<Split> {
        Split::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                Error::invalid_argument(format!(
                    "unknown split {s:?}; use train, valid, test or all"
                ))
            })
    }
}

/// One gathered batch, owned.
///
/// Layout (the sampler's, see `ginex::internals::sample::sampler`): `ids` lists every
/// sampled node once, **seeds first** (`ids[..num_seeds]`); each hop's
/// targets are a prefix of `ids`. **`hops` is input layer first**:
/// `hops[0]` is the last hop sampled (its sources are all of `ids`),
/// `hops.last()` has the seeds as targets, so a model applies its layers in
/// `hops` order. Each [`Hop`] is a bipartite graph in local indices into
/// `ids`: edge `e` goes from source `src[e] < num_src` to target
/// `dst[e] < num_dst`.
#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    /// Batch index in the epoch.
    pub index: u64,
    /// Sampled node ids, seeds first.
    pub ids: Vec<u64>,
    /// Seeds: `ids[..num_seeds]`.
    pub num_seeds: usize,
    /// Hops, input layer first.
    pub hops: Vec<Hop>,
    /// `ids.len()` feature rows, in `ids` order, as raw little-endian bytes
    /// of the store's dtype ([`rows_f32`](Self::rows_f32) converts).
    pub rows: Vec<u8>,
    /// The store's feature dtype.
    pub dtype: Dtype,
    /// Elements per row.
    pub dim: usize,
    /// Labels of the seeds (`-1` = missing); `None` when the store has no
    /// labels.
    pub labels: Option<Vec<i32>>,
    /// CRC-32 of `rows`: the per-batch checksum of `ginex epoch --report`.
    pub checksum: u32,
    /// A link batch's positive and negative edges, indices into the seeds
    /// ([`LoaderBuilder::link`]); None for a node batch.
    pub link: Option<LinkLabels>,
}

impl Batch {
    /// The seed ids.
    pub fn seeds(&self) -> &[u64] {
        &self.ids[..self.num_seeds]
    }

    /// The rows as `f32`, `ids.len() * dim` values, row-major.
    pub fn rows_f32(&self) -> Vec<f32> {
        let mut out = vec![0f32; self.ids.len() * self.dim];
        self.dtype.decode_to_f32(self.dim, &self.rows, &mut out);
        out
    }

    /// The typed (heterogeneous) view of the batch on a typed `store` (the
    /// store it came from): per node type its nodes (global and type-local
    /// ids, positions in `ids` and so in the rows, the seeds' labels), per
    /// relation its edges over all hops in type-local indices, PyG's
    /// heterogeneous `NeighborLoader` layout (see [`TypedBatch`]). An
    /// untyped store (no schema) is refused: its batch has one node type
    /// and no relations to split by, and its hops are already that view.
    pub fn typed(&self, store: &Store) -> Result<TypedBatch> {
        let schema = store.schema().ok_or_else(|| {
            Error::invalid_argument(format!(
                "{} is not a typed store (it has no schema): its batches have one node type; use the batch's hops as they are",
                store.dir().display()
            ))
        })?;
        TypedBatch::new(
            schema,
            &self.ids,
            self.num_seeds,
            &self.hops,
            self.labels.as_deref(),
        )
    }

    /// The rows of one node type of [`typed`](Self::typed) as `f32`,
    /// `nodes.len() * dim` values in the type's node order; None for a
    /// featureless type.
    pub fn type_rows_f32(&self, nodes: &TypedNodes) -> Option<Vec<f32>> {
        if !nodes.has_features {
            return None;
        }
        let row_bytes = self.dtype.row_bytes(self.dim);
        let mut raw = Vec::with_capacity(nodes.len() * row_bytes);
        for &p in &nodes.positions {
            let at = p as usize * row_bytes;
            raw.extend_from_slice(self.rows.get(at..at + row_bytes)?);
        }
        let mut out = vec![0f32; nodes.len() * self.dim];
        self.dtype.decode_to_f32(self.dim, &raw, &mut out);
        Some(out)
    }

    fn from_epoch(b: &EpochBatch<'_>, dtype: Dtype, dim: usize, labels: Option<&[i32]>) -> Batch {
        Batch {
            index: b.batch,
            ids: b.ids.to_vec(),
            num_seeds: b.num_seeds,
            hops: b.hops.to_vec(),
            rows: b.rows.to_vec(),
            dtype,
            dim,
            labels: labels.map(|l| {
                b.ids[..b.num_seeds]
                    .iter()
                    .map(|&v| l.get(v as usize).copied().unwrap_or(-1))
                    .collect()
            }),
            checksum: crate::format::crc32(b.rows),
            link: b.link.cloned(),
        }
    }

    /// Bytes a batch of `ws`'s largest size holds (rows, ids, hops, labels).
    fn bytes_for(ws: &WorkingSet, row_bytes: u64, batch_size: u64) -> u64 {
        ws.max_ids * (row_bytes + 8) + (ws.mean_edges * 8.0 * 1.5) as u64 + batch_size * 4
    }
}

/// Batches a loader holds beside the consumer's: one waiting in the
/// channel, one blocked in the hand-over.
const BATCHES_IN_FLIGHT: u64 = 2;

#[derive(Debug, Clone)]
enum Seeds {
    Split(Split),
    Nodes(Vec<u64>),
}

#[derive(Debug, Clone)]
enum Memory {
    Text(String),
    Bytes(u64),
}

/// Parameters of a [`Loader`]; made by [`Loader::builder`]. Defaults are
/// those of `ginex epoch` (both start from the same
/// [`EpochConfigBuilder`]): policy `ginex`, fanouts `10,10,10`, batches of
/// 1000 seeds, a 256 MiB feature cache, no neighbor cache, superbatches of
/// 100 batches, seed 0, epoch 0, the training split shuffled.
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until build() is called"]
pub struct LoaderBuilder<'s> {
    store: &'s Store,
    /// The epoch's configuration (everything but the seeds and the link
    /// task, which the loader resolves against the store).
    config: EpochConfigBuilder,
    memory: Option<Memory>,
    seeds: Seeds,
    shuffle: Option<bool>,
    reserve_bytes: u64,
    link: Option<LinkTask>,
}

impl<'s> LoaderBuilder<'s> {
    /// Fanouts per hop, seeds' hop first as on the command line (`-1` = all
    /// neighbors).
    pub fn fanouts(mut self, fanouts: impl IntoIterator<Item = i64>) -> Self {
        self.config = self
            .config
            .fanouts(Fanouts::Uniform(fanouts.into_iter().collect()));
        self
    }

    /// Fanouts of either form (a typed store's per-relation fanouts:
    /// `"cites=10:5,writes=5:5".parse()?`, [`Fanouts::per_relation`] or
    /// [`Fanouts::per_hop`]); relation names are checked against the
    /// store's schema by [`build`](Self::build).
    pub fn relation_fanouts(mut self, fanouts: Fanouts) -> Self {
        self.config = self.config.fanouts(fanouts);
        self
    }

    /// The sampler (neighbor sampling unless told; a LABOR sampler such
    /// as [`Sampler::Labor0`](crate::Sampler::Labor0) or a
    /// [`SamplerConfig`](crate::SamplerConfig) with its
    /// layer and batch dependency): a LABOR batch's hops carry importance
    /// weights ([`Hop::weights`]).
    pub fn sampler(mut self, sampler: impl Into<crate::sample::labor::SamplerConfig>) -> Self {
        self.config = self.config.sampler(sampler.into());
        self
    }

    /// Seeds per batch (the last batch may be smaller).
    pub fn batch_size(mut self, n: usize) -> Self {
        self.config = self.config.batch_size(n);
        self
    }

    /// The feature-cache policy.
    pub fn policy(mut self, policy: Policy) -> Self {
        self.config = self.config.policy(policy);
        self
    }

    /// One memory budget for the whole data path, as text (`"4GiB"`,
    /// `"512MiB"`; parsed by [`build`](Self::build)): the planner measures
    /// two of the epoch's batches and sizes the neighbor cache, the feature
    /// cache and the superbatch to fit, counting the loader's batches in
    /// flight and the seed labels. Explicit sizes override its choices.
    pub fn memory(mut self, budget: &str) -> Self {
        self.memory = Some(Memory::Text(budget.to_string()));
        self
    }

    /// [`memory`](Self::memory) in bytes.
    pub fn memory_bytes(mut self, bytes: u64) -> Self {
        self.memory = Some(Memory::Bytes(bytes));
        self
    }

    /// Feature-cache size in bytes (rows = bytes / row bytes).
    pub fn feature_cache_bytes(mut self, bytes: u64) -> Self {
        self.config = self.config.feature_cache_bytes(Some(bytes));
        self
    }

    /// Neighbor-cache size in bytes (0 = none). Built once beside the store
    /// (`STORE.ncache/`) and reused by every later run with the same size.
    pub fn neighbor_cache_bytes(mut self, bytes: u64) -> Self {
        self.config = self.config.neighbor_cache_bytes(Some(bytes));
        self
    }

    /// A neighbor-cache file to use instead of the default location (it
    /// must match the store, codec and size; built there when missing).
    pub fn neighbor_cache_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.config = self.config.neighbor_cache(Some(path.into()));
        self
    }

    /// Batches per superbatch (`ginex` policy).
    pub fn superbatch(mut self, batches: u64) -> Self {
        self.config = self.config.superbatch(Some(batches));
        self
    }

    /// k of the k-hop changeset approximation (`ginex`; 1 = exact).
    pub fn changeset_every(mut self, k: usize) -> Self {
        self.config = self.config.changeset_every(k);
        self
    }

    /// Pre-sampling epochs of the `presc` policy.
    pub fn presc_rounds(mut self, rounds: u64) -> Self {
        self.config = self.config.presc_rounds(rounds);
        self
    }

    /// The run seed (sampling and shuffling).
    pub fn seed(mut self, seed: u64) -> Self {
        self.config = self.config.seed(seed);
        self
    }

    /// The epoch number (with the seed, it picks the shuffle and the draws).
    pub fn epoch(mut self, epoch: u64) -> Self {
        self.config = self.config.epoch(epoch);
        self
    }

    /// Seeds from a split of the store.
    pub fn split(mut self, split: Split) -> Self {
        self.seeds = Seeds::Split(split);
        self
    }

    /// Seeds from these nodes, in this order unless shuffled.
    pub fn seed_nodes(mut self, nodes: Vec<u64>) -> Self {
        self.seeds = Seeds::Nodes(nodes);
        self
    }

    /// Shuffle the seeds per epoch (from the seed and the epoch). Default:
    /// on for [`Split::Train`], off otherwise. The training split
    /// shuffled is exactly `ginex epoch`'s order.
    pub fn shuffle(mut self, on: bool) -> Self {
        self.shuffle = Some(on);
        self
    }

    /// Sampling workers of the `ginex` inspector (default: the cores).
    pub fn workers(mut self, n: usize) -> Self {
        self.config = self.config.workers(Some(n));
        self
    }

    /// Directory for runtime files (default: `STORE.runs` beside the
    /// store). The run writes in its own subdirectory and removes it.
    pub fn run_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.config = self.config.run_dir(Some(dir.into()));
        self
    }

    /// Stop after this many batches.
    pub fn max_batches(mut self, n: u64) -> Self {
        self.config = self.config.max_batches(Some(n));
        self
    }

    /// Link batches: `batch_size` positive edges each (every edge of the
    /// graph, shuffled per epoch from the seed and the epoch), with `neg`
    /// negatives per positive (uniform destination corruption); the
    /// batch's seeds are their endpoints and [`Batch::link`] indexes them.
    /// The batch's own edges are left out of its sampled neighbourhoods.
    /// Seeds set by [`split`](Self::split) or
    /// [`seed_nodes`](Self::seed_nodes) are ignored.
    pub fn link(mut self, neg: usize) -> Self {
        self.link.get_or_insert_with(LinkTask::default).neg = neg;
        self
    }

    /// How link batches present their negatives (for the caller: the
    /// batches are the same); implies [`link`](Self::link) with one
    /// negative when it was not called.
    pub fn neg_mode(mut self, mode: NegMode) -> Self {
        self.link.get_or_insert_with(LinkTask::default).mode = mode;
        self
    }

    /// Whether the graph is undirected (link batches): each pair is one
    /// positive, and a batch leaves both directions of its edges out of
    /// its neighbourhoods. Default: off.
    pub fn undirected(mut self, on: bool) -> Self {
        self.link.get_or_insert_with(LinkTask::default).undirected = on;
        self
    }

    /// Where link batches draw their negatives from (`--negatives`):
    /// uniformly (the default), from the batch's own endpoints, or a mix
    /// ([`NegSource`]); implies [`link`](Self::link) with one negative
    /// when it was not called.
    pub fn negatives(mut self, source: NegSource) -> Self {
        self.link.get_or_insert_with(LinkTask::default).negatives = source;
        self
    }

    /// The order a link epoch visits its edges in (`--edge-order`):
    /// shuffled (the default) or in blocks of node-id ranges
    /// ([`EdgeOrder`]); implies [`link`](Self::link) with one negative
    /// when it was not called.
    pub fn edge_order(mut self, order: EdgeOrder) -> Self {
        self.link.get_or_insert_with(LinkTask::default).order = order;
        self
    }

    /// Bytes of the budget to leave to the caller (a model, an optimiser).
    pub fn reserve_bytes(mut self, bytes: u64) -> Self {
        self.reserve_bytes = bytes;
        self
    }

    /// Checks the parameters, plans the memory budget when one was given,
    /// and returns the loader (the epoch starts at the first `next`).
    pub fn build(self) -> Result<Loader> {
        let store = self.store;
        self.config.check(store)?;
        let memory = match &self.memory {
            Some(Memory::Text(s)) => Some(crate::size::parse_bytes(s)?),
            Some(Memory::Bytes(b)) => Some(*b),
            None => None,
        };
        let mut config = self.config.unplanned(store);
        let shuffle = self
            .shuffle
            .unwrap_or(matches!(self.seeds, Seeds::Split(Split::Train)));
        config.seed_nodes = match self.link {
            Some(_) => None,
            None => self.seed_order(shuffle, &config)?,
        };
        let mut link = self.link;
        if let Some(task) = &link {
            task.check_negatives(
                (config.batch_size, store.num_edges()),
                store.layout().row_bytes() as u64,
                memory,
            )?;
        }
        let link_positives = match &mut link {
            Some(task) => {
                let options = crate::store::gather::GatherOptions::default();
                let source = crate::sample::source::StoreSource::new(store, None, &options)?;
                let (positives, undirected) =
                    crate::exec::sampler::link_positives(store, &source, task.undirected)?;
                task.undirected = undirected;
                Some(positives)
            }
            None => None,
        };
        config.link = link;
        config.link_positives = link_positives.clone();
        let labels = store.labels()?;
        let labels_bytes = labels.as_ref().map_or(0, |l| 4 * l.len() as u64);
        let row_bytes = store.layout().row_bytes() as u64;
        let batch_size = config.batch_size as u64;
        let extra = |ws: &WorkingSet| {
            self.reserve_bytes
                + labels_bytes
                + BATCHES_IN_FLIGHT * Batch::bytes_for(ws, row_bytes, batch_size)
                + crate::exec::plan::consumer_copy_bytes(ws, row_bytes)
        };
        let plan = self
            .config
            .clone()
            .memory(memory)
            .plan(store, &mut config, &extra)?;
        let seeds = match (&link_positives, &config.seed_nodes) {
            (Some(p), _) => p.len(),
            (None, Some(order)) => order.len(),
            (None, None) => store.splits()?.map_or(0, |s| s.train.len()),
        };
        if seeds == 0 && link_positives.is_some() {
            return Err(Error::invalid_argument(format!(
                "{}: the link loader has no positive edges (the graph has no edges)",
                store.dir().display()
            )));
        }
        if seeds == 0 {
            return Err(Error::invalid_argument(format!(
                "{}: the loader has no seed nodes ({})",
                store.dir().display(),
                match &self.seeds {
                    Seeds::Split(s) => format!("the {} split is empty or missing", s.name()),
                    Seeds::Nodes(_) => "seed_nodes is empty".to_string(),
                }
            )));
        }
        let batches = seeds.div_ceil(config.batch_size) as u64;
        let len = config.max_batches.map_or(batches, |m| m.min(batches)) as usize;
        Ok(Loader {
            len,
            yielded: 0,
            plan,
            config: config.clone(),
            state: State::Ready(Box::new(Pending {
                store: store.clone(),
                config,
                labels,
            })),
            report: None,
        })
    }

    /// The seed order handed to the executor: `None` for the training split
    /// shuffled (the executor shuffles it itself, as `ginex epoch` does).
    fn seed_order(&self, shuffle: bool, config: &EpochConfig) -> Result<Option<Vec<u64>>> {
        let store = self.store;
        let nodes = match &self.seeds {
            Seeds::Split(Split::Train) if shuffle => return Ok(None),
            Seeds::Split(Split::All) => (0..store.num_nodes()).collect(),
            Seeds::Split(split) => {
                let splits = store.splits()?.ok_or_else(|| {
                    Error::invalid_argument(format!(
                        "{} has no splits file, so there is no {} split; use Split::All or seed_nodes",
                        store.dir().display(),
                        split.name()
                    ))
                })?;
                match split {
                    Split::Train => splits.train,
                    Split::Valid => splits.valid,
                    _ => splits.test,
                }
            }
            Seeds::Nodes(nodes) => {
                if let Some(v) = nodes.iter().find(|&&v| v >= store.num_nodes()) {
                    return Err(Error::OutOfRange(format!(
                        "seed node {v} is not below the node count {} of {}",
                        store.num_nodes(),
                        store.dir().display()
                    )));
                }
                nodes.clone()
            }
        };
        Ok(Some(if shuffle {
            epoch_order(&nodes, config.seed, config.epoch)
        } else {
            nodes
        }))
    }
}

/// What the thread will run, before the first batch is asked for.
struct Pending {
    store: Store,
    config: EpochConfig,
    labels: Option<Vec<i32>>,
}

enum State {
    Ready(Box<Pending>),
    Running {
        batches: Receiver<Batch>,
        thread: JoinHandle<Result<EpochReport>>,
    },
    Done,
}

/// One epoch of batches: an iterator of [`Batch`]es gathered by the same
/// executor, with the same batches and checksums, as `ginex epoch`.
///
/// ```
/// # fn main() -> ginex::Result<()> {
/// # let tmp = tempfile::tempdir().unwrap();
/// # let path = tmp.path().join("store");
/// # ginex::generate_store(&ginex::SynthParams { nodes: 2000, dim: 8, ..Default::default() },
/// #     &path, &ginex::NoProgress)?;
/// let store = ginex::Store::open(&path)?;
/// let mut loader = ginex::Loader::builder(&store)
///     .fanouts([10, 5])
///     .batch_size(100)
///     .policy(ginex::Policy::Ginex)
///     .memory("256MiB")
///     .build()?;
/// let batches = loader.len();
/// for batch in &mut loader {
///     let batch = batch?;
///     let x = batch.rows_f32(); // ids.len() × dim values
///     assert_eq!(x.len(), batch.ids.len() * store.feature_dim() as usize);
///     assert_eq!(batch.hops.last().map(|h| h.num_dst), Some(batch.num_seeds));
/// }
/// let report = loader.report().expect("the epoch ran to its end");
/// assert_eq!(report.batches.len(), batches);
/// # Ok(()) }
/// ```
pub struct Loader {
    len: usize,
    yielded: usize,
    plan: Option<MemoryPlan>,
    config: EpochConfig,
    state: State,
    report: Option<EpochReport>,
}

impl std::fmt::Debug for Loader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loader")
            .field("len", &self.len)
            .field("yielded", &self.yielded)
            .field("policy", &self.config.cache.policy())
            .field("finished", &self.report.is_some())
            .finish()
    }
}

impl Loader {
    /// A builder for a loader over `store`.
    pub fn builder(store: &Store) -> LoaderBuilder<'_> {
        LoaderBuilder {
            store,
            config: EpochConfigBuilder::new(),
            memory: None,
            seeds: Seeds::Split(Split::Train),
            shuffle: None,
            reserve_bytes: 0,
            link: None,
        }
    }

    /// Batches in the epoch (all of them, however many were taken).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the epoch has no batches (never: `build` refuses that).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The epoch's report (stage times, hits, misses, per-batch checksums),
    /// once the last batch has been taken; `None` before.
    pub fn report(&self) -> Option<&EpochReport> {
        self.report.as_ref()
    }

    /// How the memory budget was split, when one was given.
    pub fn memory_plan(&self) -> Option<&MemoryPlan> {
        self.plan.as_ref()
    }

    /// Feature-cache rows the epoch runs with (given or planned).
    pub fn feature_cache_rows(&self) -> usize {
        self.config.feature_cache_rows
    }

    /// Neighbor-cache bytes the epoch runs with (given or planned).
    pub fn neighbor_cache_bytes(&self) -> u64 {
        self.config.neighbor_cache_bytes
    }

    /// Batches per superbatch (given or planned) of the `ginex` policy; 1
    /// for the others (each batch on its own).
    pub fn superbatch(&self) -> u64 {
        self.config.cache.ginex().map_or(1, |g| g.superbatch)
    }

    /// The policy.
    pub fn policy(&self) -> Policy {
        self.config.cache.policy()
    }

    fn start(p: Pending) -> Result<State> {
        let Pending {
            store,
            config,
            labels,
        } = p;
        let (tx, rx) = sync_channel::<Batch>(1);
        let thread = std::thread::Builder::new()
            .name("ginex-loader".into())
            .spawn(move || {
                let dtype = store.dtype();
                let dim = store.feature_dim() as usize;
                run_epoch(&store, &config, &mut |b| {
                    tx.send(Batch::from_epoch(b, dtype, dim, labels.as_deref()))
                        .map_err(|_| Error::Cancelled("the loader was dropped".into()))
                })
            })
            .map_err(|e| Error::io("spawn thread", "ginex-loader", e))?;
        Ok(State::Running {
            batches: rx,
            thread,
        })
    }
}

impl Iterator for Loader {
    type Item = Result<Batch>;

    fn next(&mut self) -> Option<Result<Batch>> {
        loop {
            match std::mem::replace(&mut self.state, State::Done) {
                State::Ready(p) => match Loader::start(*p) {
                    Ok(s) => self.state = s,
                    Err(e) => return Some(Err(e)),
                },
                State::Running { batches, thread } => {
                    if let Ok(b) = batches.recv() {
                        self.state = State::Running { batches, thread };
                        self.yielded += 1;
                        return Some(Ok(b));
                    }
                    // The executor ended: its result says how.
                    return match thread.join() {
                        Ok(Ok(report)) => {
                            self.report = Some(report);
                            None
                        }
                        Ok(Err(e)) => Some(Err(e)),
                        Err(_) => Some(Err(Error::internal("the loader thread panicked"))),
                    };
                }
                State::Done => return None,
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = match self.state {
            State::Done => 0,
            _ => self.len - self.yielded.min(self.len),
        };
        (left, Some(left))
    }
}

impl Drop for Loader {
    fn drop(&mut self) {
        if let State::Running { batches, thread } = std::mem::replace(&mut self.state, State::Done)
        {
            // Closing the channel makes the executor's next hand-over fail
            // (Error::Cancelled); it unwinds and removes its runtime files.
            drop(batches);
            let _ = thread.join();
        }
    }
}
