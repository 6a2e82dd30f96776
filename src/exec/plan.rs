//! The memory planner (Ginex §3.5): one `--memory` budget for the whole
//! process, split into what a run needs.
//!
//! What the budget pays for, in the order the planner reserves it:
//!
//! 1. **fixed** — the process itself ([`BASE_PROCESS_BYTES`], plus
//!    [`LIBTORCH_RESIDENT_BYTES`] in a training build), what the
//!    store keeps resident (`indptr`, page CRCs, the segment table), the
//!    split and this epoch's seed order, the feature cache's address table
//!    (4 bytes per node), `ginex`'s reuse prior (1 byte per node; counting
//!    it needs 4 bytes per node more, but only while the first superbatch
//!    is sampled, before any feature row is cached), and anything the
//!    caller adds (a model);
//! 2. **batch buffers** — the rows of the largest batch (a cache's misses
//!    are read straight into them; `ginex`'s page companions, an eighth
//!    of them at most, beside them, or a k-hop window) and the I/O
//!    engine's buffers (`ginex`'s staged init chunks are priced with its
//!    cache, item 5; the sampler's list reader's buffer goes to the
//!    feature cache where the cache split predicts that the neighbor cache
//!    serves every list the probed batches look up); a consumer that
//!    copies batches (the trainer, the [`Loader`](crate::Loader)) counts
//!    its copies in its extra bytes
//!    ([`consumer_copy_bytes`]), and `ginex epoch`, which copies none,
//!    leaves that memory to the caches;
//! 3. **page-cache reserve** — runtime-file writeback and the neighbor lists
//!    read through the kernel ([`PAGE_CACHE_RESERVE`]);
//! 4. **superbatches in flight** (`ginex`) — the access trace and changeset
//!    working memory of the superbatch prepared beside the one executed
//!    ([`CHANGESET_BYTES_PER_ACCESS`] per access; the executed one streams
//!    its records from its runtime files a batch at a time, and keeps
//!    [`SUPERBATCH_BYTES_PER_CACHE_ROW`] per feature-cache row);
//!    the superbatch size is chosen so this, with the superbatch's batches
//!    while they are sampled where it may be sampled in one lockstep
//!    round, takes at most a quarter of what is left, unless given, then
//!    evened out over the epoch (81 batches with room for 46 make two
//!    superbatches of 41); shortened where a shorter one's batches fit the
//!    feature cache ([`crate::exec::superbatch_fit`]); where the store's
//!    topology is larger than the budget, as long as its lockstep round
//!    fits instead, since every round then reads most of the topology
//!    ([`crate::exec::list_bound`]);
//! 5. **caches** — the rest, split between the neighbor cache (at most
//!    what the whole topology would take) and the feature cache by
//!    measured benefit: the share of the two predicted to leave the
//!    probed batches the fewest reads ([`crate::exec::cache_split`]; an
//!    eighth to the neighbor cache when nothing was probed). A run that
//!    builds its neighbor cache does so before anything but the fixed part
//!    is allocated; a cache whose build (8 bytes a node while the lists
//!    are chosen, [`buildable_neighbor_cache`]) would not fit beside the
//!    fixed part is not planned.
//!
//! Batch sizes come from the store's measured working set: the planner
//! samples a few of the epoch's own batches ([`WorkingSet::probe`]).
//! Explicit cache sizes override the split; a budget that cannot hold the
//! fixed part, one batch, the reserve and a one-batch superbatch is
//! refused with the minimum it needs.

use serde::{Deserialize, Serialize};

use crate::cache::belady::ReusePrior;
use crate::cache::feature_cache::FeatureCache;
use crate::error::{Error, Result};
use crate::exec::cache_split::{
    choose_split, neighbor_budget, ProbeAccesses, SplitBasis, SplitNodes, DEFAULT_NEIGHBOR_SHARE,
};
use crate::exec::config::Pipeline;
use crate::exec::config::{CacheConfig, Lockstep};
use crate::exec::list_bound;
use crate::exec::lockstep::LockstepPlan;
use crate::exec::superbatch_fit::{fits, worth_fitting, DistinctGrowth, MIN_FITTED_SUPERBATCH};
use crate::sample::sampler::EpochSampler;
use crate::store::Store;

/// What the process takes before any data: code, libraries, allocator
/// slack, thread stacks.
pub const BASE_PROCESS_BYTES: u64 = 32 << 20;
/// What libtorch's code and data keep resident in a process built with the
/// `train` feature (measured as the peak RSS of `ginex --help` in such a
/// build against one without: `docs/lab/performance-journal.md`, "Memory allocation
/// and constants"); a constant, so that two runs under one budget plan the
/// same sizes (and find the neighbor cache the first built).
pub const LIBTORCH_RESIDENT_BYTES: u64 = if cfg!(feature = "train") { 96 << 20 } else { 0 };

/// Page cache left to the kernel for runtime-file writeback and list reads.
pub const PAGE_CACHE_RESERVE: u64 = 32 << 20;
/// Memory per access of the superbatch the inspector prepares while the
/// executor runs the one before it: its access trace (8 bytes), the
/// changeset working memory (4 bytes each for the window lists and `iters`,
/// ~25 per distinct id; see `cache::belady`) and the updates until
/// they are written (24 bytes per inserted row). The executed superbatch
/// holds no per-access state: its records and updates are streamed from
/// its runtime files. Measured as the slope of peak RSS against superbatch
/// length on a 6M-node store (`ginex epoch s6m --policy ginex --superbatch
/// S --feature-cache-bytes 100MiB --neighbor-cache-bytes 0`, S = 10 and 40,
/// 118 k accesses a batch): 30 bytes per access (50 before the executor
/// streamed its superbatch, against the 72 + 16 charged then), plus a
/// fifth for allocator slack; `docs/lab/performance-journal.md`, "Lean superbatch
/// state".
pub const CHANGESET_BYTES_PER_ACCESS: u64 = 36;
/// What the `ginex` executor keeps per feature-cache row for the
/// superbatches in flight: the executed one's access summary (the init
/// and final-cache ids with their first and last uses, 24 bytes), the
/// prepared one's init (8) and the cache carried into the next changesets
/// (8).
pub const SUPERBATCH_BYTES_PER_CACHE_ROW: u64 = 40;
/// What a second prepared superbatch keeps per feature-cache row where
/// [`Pipeline::Full`] prepares two ahead of the executed one
/// ([`prepares_two_ahead`]): the prepared one waits with its init (8
/// bytes) and access summary (24) while the one after it is sampled and
/// its changesets computed.
pub const PREPARED_AHEAD_BYTES_PER_CACHE_ROW: u64 = 32;
/// The narrowest feature row for which [`Pipeline::Full`] prepares two
/// superbatches ahead: there [`PREPARED_AHEAD_BYTES_PER_CACHE_ROW`] is at
/// most a 16th of a cache row. Two ahead was measured on 1 KiB rows
/// (`docs/lab/performance-journal.md`, "The next init known a superbatch earlier");
/// on narrow rows (the 2.3 B-edge store's 64 bytes) the same state would
/// take a fifth of the feature cache, unmeasured, so they keep one ahead.
pub const PREPARED_AHEAD_MIN_ROW_BYTES: u64 = 512;

/// Whether [`Pipeline::Full`] prepares two superbatches ahead of the
/// executed one (three superbatches' files at once) for feature rows of
/// `row_bytes`, rather than one: see [`PREPARED_AHEAD_MIN_ROW_BYTES`].
pub fn prepares_two_ahead(row_bytes: u64) -> bool {
    row_bytes >= PREPARED_AHEAD_MIN_ROW_BYTES
}
/// Most bytes of I/O engine buffers: the read buffers of the sampler's and
/// the miss path's gatherers, each up to [`DEFAULT_CHUNK_BYTES`] (measured:
/// both reach it on batches of ~146k rows); smaller batches need less, see
/// [`io_buffer_bytes`].
///
/// [`DEFAULT_CHUNK_BYTES`]: crate::store::gather::DEFAULT_CHUNK_BYTES
pub const IO_BUFFER_BYTES: u64 = 2 * crate::store::gather::DEFAULT_CHUNK_BYTES as u64;

/// The gatherers' read buffers for batches of up to `max_ids` rows of
/// `pages_per_row` pages: a page per row (or neighbor list) at most, and
/// at most [`IO_BUFFER_BYTES`].
pub fn io_buffer_bytes(max_ids: u64, pages_per_row: u64) -> u64 {
    let per_gatherer = (crate::store::gather::DEFAULT_CHUNK_BYTES as u64).min(
        max_ids
            .saturating_mul(pages_per_row.max(1))
            .saturating_mul(crate::format::PAGE_SIZE as u64),
    );
    (2 * per_gatherer).min(IO_BUFFER_BYTES)
}

/// The sampler's list reader's share of [`io_buffer_bytes`]: a page per
/// list of the largest batch, at most one gatherer's
/// [`DEFAULT_CHUNK_BYTES`](crate::store::gather::DEFAULT_CHUNK_BYTES).
fn list_reader_buffer_bytes(ws: &WorkingSet) -> u64 {
    io_buffer_bytes(ws.max_ids, 1) / 2
}

/// A consumer's copy of the largest batch's rows of `row_bytes` (the
/// trainer's input, the batch a [`Loader`](crate::Loader)'s caller holds):
/// what a caller that copies batches adds to the plan's extra bytes. The
/// plan's own batch buffers are the executor's.
pub fn consumer_copy_bytes(ws: &WorkingSet, row_bytes: u64) -> u64 {
    ws.max_ids * row_bytes
}

/// A LABOR sampling worker's scratch per candidate of a batch, at most
/// (`sample::labor_solve`): the packed occurrence and its radix-sort
/// buffer (8 + 8), the wide sort entry (16), the distinct ids and their
/// `π` (8 + 8), the kept draws (16).
pub const LABOR_SCRATCH_BYTES_PER_CANDIDATE: u64 = 64;
/// Largest automatic superbatch.
pub const MAX_AUTO_SUPERBATCH: u64 = 1000;

/// Sizes of a store's batches, measured by sampling some of them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WorkingSet {
    /// Batches sampled.
    pub batches: u64,
    /// Most ids (rows) in one of them.
    pub max_ids: u64,
    /// Mean ids per batch.
    pub mean_ids: f64,
    /// Mean hop edges per batch (the adjacency the runtime files hold).
    pub mean_edges: f64,
    /// Mean LABOR candidates per batch: every in-list entry of each hop's
    /// targets, which LABOR reads whole (0 under neighbor sampling).
    #[serde(default)]
    pub mean_candidates: f64,
}

impl WorkingSet {
    /// Samples the first `probe` batches of `sampler` (the epoch's own
    /// batches, so the sizes are the ones the run will see) in one
    /// lockstep round on this thread: each hop's lists read once for all
    /// of them. (Drawing them on the rayon pool as well left ~20 MiB more
    /// resident for the run; this round is the plan's, before the budget.)
    #[doc(hidden)]
    pub fn probe(sampler: &EpochSampler<'_>, probe: u64) -> Result<WorkingSet> {
        Self::probe_with(sampler, probe, &mut ProbeAccesses::default())
    }

    /// [`probe`](Self::probe), adding what the batches touched to
    /// `accesses`.
    pub(crate) fn probe_with(
        sampler: &EpochSampler<'_>,
        probe: u64,
        accesses: &mut ProbeAccesses,
    ) -> Result<WorkingSet> {
        let n = probe.min(sampler.num_batches()).max(1);
        let (mut max_ids, mut ids, mut edges, mut candidates) = (0u64, 0u64, 0u64, 0u64);
        let mut sampled = 0;
        for batch in sampler.sample_together(0..n.min(sampler.num_batches()))? {
            accesses.add(&batch);
            max_ids = max_ids.max(batch.ids.len() as u64);
            ids += batch.ids.len() as u64;
            edges += batch.num_edges() as u64;
            candidates += sampler.labor_candidates(&batch)?;
            sampled += 1;
        }
        let d = sampled.max(1) as f64;
        Ok(WorkingSet {
            batches: sampled,
            max_ids,
            mean_ids: ids as f64 / d,
            mean_edges: edges as f64 / d,
            mean_candidates: candidates as f64 / d,
        })
    }

    /// Bytes of one batch's records as the executor reads them back: the
    /// ids (8 bytes each) and the encoded adjacency (a u32 source and a
    /// u32 target per edge, see `sample::sampler::encode_hops`).
    fn record_bytes(&self) -> u64 {
        (self.mean_ids * 8.0 + self.mean_edges * 8.0) as u64
    }

    /// Bytes of one batch while it is sampled: its record, the hops it
    /// is encoded from (another 8 bytes per edge) and, under LABOR, the
    /// candidate lists the lockstep round keeps for it (8 bytes each).
    fn sampling_bytes(&self) -> u64 {
        self.record_bytes() + (self.mean_edges * 8.0) as u64 + (self.mean_candidates * 8.0) as u64
    }

    /// Bytes of one sampling worker's LABOR scratch (the packed and sorted
    /// candidate index, its sort buffer, the solved `π` and the draw),
    /// reused from batch to batch: 0 under neighbor sampling.
    fn labor_scratch_bytes(&self) -> u64 {
        (self.mean_candidates * LABOR_SCRATCH_BYTES_PER_CANDIDATE as f64) as u64
    }
}

/// What the plan is for.
#[derive(Debug, Clone)]
pub struct PlanRequest {
    /// The whole budget in bytes.
    pub memory: u64,
    /// The policy that will run, with its options.
    pub cache: CacheConfig,
    /// Sampling workers.
    pub workers: usize,
    /// Batches in the epoch.
    pub batches: u64,
    /// Seeds in the epoch's order.
    pub seeds: u64,
    /// A superbatch size to use instead of choosing one.
    pub superbatch: Option<u64>,
    /// A feature-cache size in bytes to use instead of the split.
    pub feature_cache_bytes: Option<u64>,
    /// A neighbor-cache size in bytes to use instead of the split.
    pub neighbor_cache_bytes: Option<u64>,
    /// Bytes the caller needs beside the data path (a model, libtorch).
    pub extra_bytes: u64,
    /// What the probed batches touched: the neighbor cache's share is
    /// chosen on them (None: [`DEFAULT_NEIGHBOR_SHARE`]).
    pub probe: Option<ProbeAccesses>,
    /// What the plan derives from the store's out-degrees, where the
    /// caller counted it already (beside the probe); None: the plan counts
    /// it where it needs it.
    pub degrees: Option<DegreeCounts>,
    /// At most this many batches in an automatic superbatch (the longest
    /// whose batches fit the feature cache,
    /// [`crate::exec::superbatch_fit`]); None: no bound but the quarter.
    pub longest_superbatch: Option<u64>,
    /// The bytes of the store's topology
    /// ([`list_bound::topology_bytes`]): where they exceed `memory`, the
    /// superbatch is sized for fewer lockstep rounds
    /// ([`crate::exec::list_bound`]).
    pub topology_bytes: u64,
    /// The split's basis, measured on `probe` by the first plan of this
    /// request that prices the split, and kept for the next (leave it
    /// empty: `Default::default()`).
    pub split_basis: std::sync::OnceLock<SplitBasis>,
}

/// What the plan derives from a store's out-degrees (the recorded table,
/// or one pass over an older store's topology): the split's node buckets
/// and, for a policy that uses it, the reuse prior. Counted on a thread
/// beside the probe's batches, whose list reads the main thread waits on.
#[derive(Debug, Clone)]
pub struct DegreeCounts {
    /// The out-degrees.
    pub out_degrees: Vec<u32>,
    /// The split's node buckets.
    pub split_nodes: SplitNodes,
    /// `ginex`'s reuse prior, where `cache` asks for one.
    pub reuse_prior: Option<std::sync::Arc<ReusePrior>>,
}

impl DegreeCounts {
    /// Counts `store`'s, with the reuse prior where `cache` uses one.
    pub fn count(store: &Store, cache: &CacheConfig) -> Result<Self> {
        let out_degrees = crate::sample::neighbor_cache::out_degrees(store)?;
        let split_nodes = SplitNodes::count(store, &out_degrees);
        let reuse_prior = cache
            .ginex()
            .is_some_and(|g| g.reuse_prior)
            .then(|| std::sync::Arc::new(ReusePrior::from_out_degrees(&out_degrees)));
        Ok(DegreeCounts {
            out_degrees,
            split_nodes,
            reuse_prior,
        })
    }

    /// The reuse prior: the one counted, or one counted now.
    pub fn reuse_prior(&self) -> std::sync::Arc<ReusePrior> {
        match &self.reuse_prior {
            Some(prior) => prior.clone(),
            None => std::sync::Arc::new(ReusePrior::from_out_degrees(&self.out_degrees)),
        }
    }
}

/// Splits `req.memory` for a run on `store` whose batches look like `ws`.
pub fn plan(store: &Store, req: &PlanRequest, ws: WorkingSet) -> Result<MemoryPlan> {
    let n = store.num_nodes();
    let rb = store.layout().row_bytes() as u64;
    let ginex = req.cache.ginex();
    let uses_cache = !matches!(req.cache, CacheConfig::Mmap | CacheConfig::None);
    let uses_ncache = req.cache != CacheConfig::Mmap;
    let fixed = fixed_bytes(store, req, uses_cache);
    // Per batch of a superbatch in flight: the access trace and changeset
    // working memory of the superbatch the inspector prepares beside the
    // one executed (which streams its records from its runtime files).
    // Sampled records go to the runtime file as they come; the inspector
    // keeps only their ids.
    let per_batch = if ginex.is_some() {
        (ws.mean_ids * CHANGESET_BYTES_PER_ACCESS as f64) as u64
    } else {
        0
    };
    // The lockstep sampling round in flight, and each worker's LABOR
    // scratch; what one more batch of superbatch costs.
    let round = counted_round(req);
    let sampling =
        round * ws.sampling_bytes() + req.workers.max(1) as u64 * ws.labor_scratch_bytes();
    let batch_cost = match (ginex, req.superbatch) {
        (Some(g), None) => superbatch_batch_bytes(g.lockstep, per_batch, &ws),
        _ => per_batch,
    };
    let batch_buffers = executor_buffers(store, &req.cache, &ws);
    let before_superbatch = fixed + batch_buffers + PAGE_CACHE_RESERVE + sampling;
    let minimum = before_superbatch + batch_cost;
    if req.memory < minimum {
        return Err(below_minimum(
            req.memory,
            minimum,
            [
                fixed,
                batch_buffers,
                PAGE_CACHE_RESERVE,
                sampling,
                batch_cost,
            ],
            ws.max_ids,
        ));
    }
    let left = req.memory - before_superbatch;
    // Where the lists dwarf the budget, rounds cost more than cache.
    let lists_dwarf_memory = req.superbatch.is_none()
        && ginex.is_some_and(|g| g.lockstep != Lockstep::Rounds)
        && list_bound::lists_dwarf_memory(req.topology_bytes, req.memory);
    let superbatch = superbatch_length(req, left, (per_batch, batch_cost), &ws, lists_dwarf_memory);
    let superbatch_bytes = per_batch * superbatch;
    let caches = left.saturating_sub(superbatch_bytes);
    // The whole superbatch in lockstep where its batches fit, taken from
    // the caches (beyond the round counted above, if any); otherwise
    // rounds of workers × 4.
    let lockstep = match ginex {
        Some(g) => crate::exec::lockstep::choose(
            g.lockstep,
            superbatch,
            crate::inspect::superbatch::sampling_round(req.workers),
            ws.sampling_bytes(),
            caches,
        ),
        None => LockstepPlan::default(),
    };
    let lockstep_bytes = lockstep.extra_bytes(round * ws.sampling_bytes());
    let caches = caches.saturating_sub(lockstep_bytes);
    let topology_bytes = list_bound::topology_bytes(store);
    let cache_bytes = |rows: u64| feature_cache_bytes(&req.cache, rows, n, rb);
    let rows_within = |budget: u64| feature_cache_rows_within(&req.cache, budget, n, rb);
    let mut reuse_prior = None;
    let (neighbor_cache_bytes, split) = match (req.neighbor_cache_bytes, &req.probe) {
        (Some(b), _) => (b, None),
        (None, _) if !uses_ncache => (0, None),
        // Measured when the feature cache's size is left to the plan too.
        (None, Some(probe)) if uses_cache && req.feature_cache_bytes.is_none() => {
            let counted;
            let degrees = match &req.degrees {
                Some(d) => d,
                None => {
                    counted = DegreeCounts::count(store, &req.cache)?;
                    &counted
                }
            };
            let basis = match req.split_basis.get() {
                Some(b) => b,
                None => {
                    let on = (&degrees.out_degrees[..], &degrees.split_nodes);
                    let measured = SplitBasis::measure(store, on, probe)?;
                    req.split_basis.get_or_init(|| measured)
                }
            };
            let split = choose_split(basis, caches, topology_bytes, &rows_within);
            if ginex.is_some_and(|g| g.reuse_prior) {
                reuse_prior = Some(degrees.reuse_prior());
            }
            (split.neighbor_bytes, Some(split))
        }
        (None, _) => (
            neighbor_budget(caches, DEFAULT_NEIGHBOR_SHARE, topology_bytes),
            None,
        ),
    };
    // (An explicit size is the caller's to fit.)
    let buildable = buildable_neighbor_cache(req.memory, fixed, n, neighbor_cache_bytes);
    let (neighbor_cache_bytes, split) = match req.neighbor_cache_bytes {
        None if buildable != neighbor_cache_bytes => (buildable, None),
        _ => (neighbor_cache_bytes, split),
    };
    // The list reader's buffer, where the split predicts that the
    // neighbor cache serves every list: it is never filled.
    let unread_list_buffer = match &split {
        Some(s) if s.serves_every_list() => list_reader_buffer_bytes(&ws),
        _ => 0,
    };
    let feature_cache_rows = match req.feature_cache_bytes {
        Some(b) => (b / rb.max(1)).min(n),
        None if uses_cache => {
            rows_within((caches + unread_list_buffer).saturating_sub(neighbor_cache_bytes))
        }
        None => 0,
    };
    let plan = MemoryPlan {
        memory: req.memory,
        fixed,
        batch_buffers: batch_buffers + sampling - unread_list_buffer,
        page_cache_reserve: PAGE_CACHE_RESERVE,
        superbatch_bytes,
        superbatch,
        lockstep_bytes,
        lockstep,
        neighbor_cache_bytes,
        feature_cache_rows,
        feature_cache_bytes: cache_bytes(feature_cache_rows),
        working_set: ws,
        split,
        reuse_prior,
        superbatch_fit: None,
        lists_dwarf_memory,
    };
    if plan.total() > req.memory {
        tracing::warn!("the explicit sizes exceed --memory: {}", plan.describe());
    }
    Ok(plan)
}

/// The superbatch of a run of `req`: the caller's, or for `ginex` the
/// automatic one, evened out over the epoch, whose batches (`batch_cost`
/// each, `per_batch` of it changeset state) take at most a quarter of
/// `left`, or where the lists dwarf memory the longest whose lockstep
/// round fits ([`list_bound::longest_superbatch`]); 1 for other policies.
fn superbatch_length(
    req: &PlanRequest,
    left: u64,
    (per_batch, batch_cost): (u64, u64),
    ws: &WorkingSet,
    lists_dwarf_memory: bool,
) -> u64 {
    match (req.cache.ginex(), req.superbatch) {
        (Some(_), Some(s)) => s.max(1),
        (Some(_), None) => {
            let longest = if lists_dwarf_memory {
                list_bound::longest_superbatch(left, per_batch, ws.sampling_bytes())
            } else {
                left / 4 / batch_cost.max(1)
            };
            let bound = req.longest_superbatch.unwrap_or(u64::MAX).max(1);
            evened_superbatch(
                req.batches,
                longest.clamp(1, MAX_AUTO_SUPERBATCH).min(bound),
            )
        }
        _ => req.superbatch.unwrap_or(1),
    }
}

/// The executor's buffers for batches like `ws`'s: the gathered rows
/// (a cache's misses are read straight into them), `ginex`'s page
/// companions ([`max_page_companions`] of the largest batch) or its k-hop
/// window (a consumer's copy is the consumer's, in `extra_bytes`), the
/// ids and positions beside them, the I/O engine's read buffers, and an
/// init's chunk, unless the staged init's chunks are priced with the
/// cache's rows ([`feature_cache_bytes`]).
///
/// [`max_page_companions`]: crate::cache::belady::max_page_companions
fn executor_buffers(store: &Store, cache: &CacheConfig, ws: &WorkingSet) -> u64 {
    let rb = store.layout().row_bytes() as u64;
    let beside_batch_rows = match cache.ginex() {
        Some(g) if g.changeset_every > 1 => g.changeset_every as u64 * ws.max_ids,
        Some(_) => crate::cache::belady::max_page_companions(ws.max_ids),
        None => 0,
    };
    let init = if staged_init(cache) {
        0
    } else {
        crate::cache::feature_cache::INIT_CHUNK_BYTES as u64
    };
    // A cache's hits copied beside the read of its misses: the positions
    // and slots of the hits, a slice a row.
    let fill = match cache {
        CacheConfig::Mmap | CacheConfig::None => 0,
        _ => crate::store::row_targets::FILL_BYTES_PER_ROW,
    };
    (ws.max_ids + beside_batch_rows) * rb
        + ws.max_ids * (24 + fill)
        + io_buffer_bytes(ws.max_ids, store.feature_sections().max_pages_per_row())
        + init
}

/// The batches being sampled at once that the plan counts before it sizes
/// the superbatch. `ginex`'s inspector samples a round of workers × 4 (at
/// least 16), or none is counted here where an automatic superbatch may be
/// sampled whole in lockstep: such a superbatch's batches are counted with
/// it ([`superbatch_batch_bytes`]), all of them and no more (one shorter
/// than a round holds only its own: a round counted beside them took 45
/// MiB of a 768 MiB SAGE plan that the run never held). Every other policy
/// samples one batch at a time, beside its gather: a round counted for
/// them took 36 MiB of a 585 MiB plan at 5× on 3 M nodes (500-seed
/// batches) from their caches.
fn counted_round(req: &PlanRequest) -> u64 {
    match req.cache.ginex() {
        Some(g) if req.superbatch.is_none() && g.lockstep != Lockstep::Rounds => 0,
        Some(_) => crate::inspect::superbatch::sampling_round(req.workers),
        None => 1,
    }
}

/// What one more batch of an automatic superbatch costs: its share of the
/// changesets' working memory (`per_batch`) and, where the inspector may
/// sample the whole superbatch in lockstep, the batch itself while it is
/// sampled. The superbatch takes at most a quarter of what is left, both
/// together: a whole-superbatch lockstep round priced on top of that
/// quarter took up to half the caches (a third of the feature cache at
/// 2.9× on 3 M nodes, 4.5 s of a 23.5 s epoch; `docs/lab/performance-journal.md`,
/// "The superbatch and its lockstep round within a quarter").
fn superbatch_batch_bytes(lockstep: Lockstep, per_batch: u64, ws: &WorkingSet) -> u64 {
    match lockstep {
        Lockstep::Rounds => per_batch,
        Lockstep::Auto | Lockstep::Superbatch => per_batch + ws.sampling_bytes(),
    }
}

/// What a run holds whatever its caches: the process, libtorch, the
/// store's resident tables, the seeds, the feature cache's address table
/// (a policy with a cache), the reuse prior's ranks (`ginex`) and the
/// caller's `extra_bytes`.
fn fixed_bytes(store: &Store, req: &PlanRequest, uses_cache: bool) -> u64 {
    let n = store.num_nodes();
    let address_table = if uses_cache {
        FeatureCache::ADDRESS_BYTES_PER_NODE * n
    } else {
        0
    };
    let prior = if req.cache.ginex().is_some_and(|g| g.reuse_prior) {
        n
    } else {
        0
    };
    BASE_PROCESS_BYTES
        + LIBTORCH_RESIDENT_BYTES
        + store.resident_bytes()
        + 16 * req.seeds
        + address_table
        + prior
        + req.extra_bytes
}

/// The refusal of a `--memory` below `minimum`, with its parts: fixed,
/// batch buffers (for batches of up to `max_ids` rows), page-cache
/// reserve, sampling and one batch of superbatch.
fn below_minimum(memory: u64, minimum: u64, parts: [u64; 5], max_ids: u64) -> Error {
    let [fixed, batch_buffers, reserve, sampling, per_batch] = parts;
    Error::invalid_argument(format!(
        "--memory {} is below the {} MiB this run needs at the least (fixed {} MiB, \
         batch buffers {} MiB for batches of up to {} rows, page-cache reserve {} MiB, \
         sampling {} MiB, one batch of superbatch {} MiB); give at least --memory {}MiB \
         or use smaller batches / fanouts",
        // Exact below 1 MiB: `--memory 1` is not "0 MiB".
        if memory < 1 << 20 {
            format!("{memory} bytes")
        } else {
            format!("{} MiB", memory >> 20)
        },
        minimum.div_ceil(1 << 20),
        fixed >> 20,
        batch_buffers >> 20,
        max_ids,
        reserve >> 20,
        sampling >> 20,
        per_batch >> 20,
        minimum.div_ceil(1 << 20)
    ))
}

/// The neighbor cache of at most `bytes` a run can build under `memory`
/// on a store of `num_nodes` nodes, once `fixed` is held: the build
/// ([`build_bytes`]: 8 bytes a node while it chooses the lists, then the
/// cache) runs before the run's batches and feature cache are allocated,
/// beside the fixed part and the page-cache reserve only, so a cache whose
/// build would not fit there is not planned (0: sampling reads every list
/// from the store).
///
/// [`build_bytes`]: crate::sample::neighbor_cache::build_bytes
pub fn buildable_neighbor_cache(memory: u64, fixed: u64, num_nodes: u64, bytes: u64) -> u64 {
    let room = memory.saturating_sub(fixed + PAGE_CACHE_RESERVE);
    if bytes == 0 || crate::sample::neighbor_cache::build_bytes(num_nodes, bytes) <= room {
        bytes
    } else {
        0
    }
}

/// The shortest superbatch that covers `batches` in as few superbatches as
/// ones of `longest` batches would: the same number of superbatches, evened
/// out, so that the memory a longer one would take goes to the caches.
fn evened_superbatch(batches: u64, longest: u64) -> u64 {
    let batches = batches.max(1);
    batches.div_ceil(batches.div_ceil(longest.clamp(1, batches)))
}

/// Sizes a run leaves to the planner (None) or fixes itself (Some).
#[derive(Debug, Clone, Copy, Default)]
pub struct ExplicitSizes {
    /// `--feature-cache-bytes`.
    pub feature_cache_bytes: Option<u64>,
    /// `--neighbor-cache-bytes`.
    pub neighbor_cache_bytes: Option<u64>,
    /// `--superbatch`.
    pub superbatch: Option<u64>,
}

/// Batches sampled to measure the working set.
pub const PROBE_BATCHES: u64 = 2;

/// Plans `config` under `memory` bytes: measures the working set on the
/// epoch's first batches (read from the store, no cache) and returns the
/// plan, whose cache sizes and superbatch size fill what `explicit` leaves
/// open; [`MemoryPlan::apply`] puts them in a configuration.
/// `extra_bytes` is what the caller needs beside the data path.
pub fn plan_epoch(
    store: &Store,
    config: &crate::exec::config::EpochConfig,
    memory: u64,
    explicit: ExplicitSizes,
    extra_bytes: u64,
) -> Result<MemoryPlan> {
    plan_epoch_with(store, config, memory, explicit, &|_| extra_bytes)
}

/// [`plan_epoch`] where what the caller needs beside the data path depends
/// on the measured batches (the [`Loader`](crate::Loader)'s batches in
/// flight): `extra_bytes(&working_set)`.
pub fn plan_epoch_with(
    store: &Store,
    config: &crate::exec::config::EpochConfig,
    memory: u64,
    explicit: ExplicitSizes,
    extra_bytes: &dyn Fn(&WorkingSet) -> u64,
) -> Result<MemoryPlan> {
    let train = store.splits()?.map(|s| s.train).unwrap_or_default();
    let options = crate::store::gather::GatherOptions::default();
    let source = crate::sample::source::StoreSource::new(store, None, &options)?;
    let link = crate::exec::sampler::link_epoch(&source, store, config)?;
    let sampler =
        crate::exec::sampler::make_sampler(&source, store, config, &train, link.as_ref())?;
    let mut probe = ProbeAccesses::default();
    // The split needs the out-degrees (read, or on a store before v1.10 a
    // pass over the topology) where the
    // plan sizes both caches: counted beside the probe's batches, whose
    // list reads it would otherwise wait behind.
    let counts_degrees = !matches!(config.cache, CacheConfig::Mmap | CacheConfig::None)
        && explicit.neighbor_cache_bytes.is_none()
        && explicit.feature_cache_bytes.is_none();
    let (ws, degrees) = std::thread::scope(|scope| {
        let degrees =
            counts_degrees.then(|| scope.spawn(|| DegreeCounts::count(store, &config.cache)));
        let ws = WorkingSet::probe_with(&sampler, PROBE_BATCHES, &mut probe);
        let degrees = degrees.map(|d| {
            d.join()
                .unwrap_or_else(|_| Err(Error::internal("out-degree thread panicked")))
        });
        (ws, degrees)
    });
    let (ws, degrees) = (ws?, degrees.transpose()?);
    let batches = config
        .max_batches
        .map_or(sampler.num_batches(), |m| m.min(sampler.num_batches()));
    // A link epoch holds its positives (16 bytes each) beside its order
    // (8), where a node epoch holds its order and labels (16 per seed):
    // count a positive as one and a half seeds.
    let seeds =
        sampler.order.len() as u64 + link.as_ref().map_or(0, |l| l.positives.len() as u64 / 2);
    let growth = DistinctGrowth::from_probe(ws.batches, ws.mean_ids, &probe.rows);
    drop(sampler);
    drop(source);
    crate::io::heap::release_free_memory();
    let mut req = PlanRequest {
        memory,
        cache: config.cache.clone(),
        workers: config.workers,
        batches,
        seeds,
        superbatch: explicit.superbatch,
        feature_cache_bytes: explicit.feature_cache_bytes,
        neighbor_cache_bytes: explicit.neighbor_cache_bytes,
        extra_bytes: extra_bytes(&ws),
        probe: Some(probe),
        degrees,
        longest_superbatch: None,
        topology_bytes: list_bound::topology_bytes(store),
        split_basis: Default::default(),
    };
    let planned = plan(store, &req, ws)?;
    let fitted = match (req.superbatch, growth) {
        // Where the lists dwarf memory, fewer rounds read fewer lists than
        // a superbatch that fits the cache saves rows.
        (None, Some(growth))
            if config.cache.ginex().is_some()
                && !planned.lists_dwarf_memory
                && worth_fitting(
                    planned.superbatch,
                    req.batches,
                    ws.max_ids,
                    planned.feature_cache_rows,
                ) =>
        {
            fitted_superbatch(
                store,
                &mut req,
                (ws, &growth),
                (planned.superbatch, planned.neighbor_cache_bytes),
            )?
        }
        _ => None,
    };
    Ok(fitted.unwrap_or(planned))
}

/// The plan of the longest automatic superbatch shorter than `auto`, of at
/// least [`MIN_FITTED_SUPERBATCH`] batches, whose distinct rows (estimated
/// by `growth`) are no more than the feature cache planned beside it
/// ([`crate::exec::superbatch_fit`]); None where none does. `neighbor_bytes`
/// is the automatic plan's neighbor cache: the lengths are compared with it
/// fixed (no split priced per length), and the one found is planned whole.
fn fitted_superbatch(
    store: &Store,
    req: &mut PlanRequest,
    (ws, growth): (WorkingSet, &DistinctGrowth),
    (auto, neighbor_bytes): (u64, u64),
) -> Result<Option<MemoryPlan>> {
    let explicit_neighbor_bytes = req.neighbor_cache_bytes.replace(neighbor_bytes);
    let mut rows_beside = |longest: u64| -> Result<(u64, u64)> {
        req.longest_superbatch = Some(longest);
        let p = plan(store, req, ws)?;
        Ok((p.superbatch, p.feature_cache_rows))
    };
    let mut found = None;
    for longest in (MIN_FITTED_SUPERBATCH..auto).rev() {
        let (superbatch, rows) = rows_beside(longest)?;
        if fits(growth, superbatch, rows).is_some() {
            found = Some(longest);
            break;
        }
    }
    req.neighbor_cache_bytes = explicit_neighbor_bytes;
    req.longest_superbatch = found;
    let Some(_) = found else {
        return Ok(None);
    };
    let mut p = plan(store, req, ws)?;
    p.superbatch_fit = fits(growth, p.superbatch, p.feature_cache_rows);
    Ok(p.superbatch_fit.is_some().then_some(p))
}

/// Bytes a feature cache of `rows` rows of `row_bytes` over `num_nodes`
/// nodes takes under `cache`, besides its address table, as each cache
/// reports it: a Belady or static cache's slots
/// ([`FeatureCache::slot_bytes`]), plus for `ginex` what its superbatches
/// in flight keep per row ([`SUPERBATCH_BYTES_PER_CACHE_ROW`]; under
/// [`Pipeline::Full`] also its staged init's chunks and, where it
/// [`prepares_two_ahead`], [`PREPARED_AHEAD_BYTES_PER_CACHE_ROW`]); a
/// dynamic cache's rows and policy state ([`DynamicKind::cache_bytes`]).
///
/// [`DynamicKind::cache_bytes`]: crate::cache::DynamicKind::cache_bytes
pub fn feature_cache_bytes(cache: &CacheConfig, rows: u64, num_nodes: u64, row_bytes: u64) -> u64 {
    match cache {
        CacheConfig::Dynamic(kind) => kind.cache_bytes(rows, num_nodes, row_bytes),
        CacheConfig::Ginex(_) => {
            let staged = staged_init(cache) && rows > 0;
            let staged_buffers = if staged {
                crate::exec::staged_init::buffer_bytes(rows, row_bytes)
            } else {
                0
            };
            let prepared_ahead = if staged && prepares_two_ahead(row_bytes) {
                rows * PREPARED_AHEAD_BYTES_PER_CACHE_ROW
            } else {
                0
            };
            FeatureCache::slot_bytes(rows, row_bytes)
                + rows * SUPERBATCH_BYTES_PER_CACHE_ROW
                + staged_buffers
                + prepared_ahead
        }
        _ => FeatureCache::slot_bytes(rows, row_bytes),
    }
}

/// Whether `cache` reads its superbatches' inits in stages beside the
/// batches (`ginex` under [`Pipeline::Full`]): its init chunks are cut
/// from inits no larger than the cache, so the plan prices them with the
/// cache's rows ([`staged_init::buffer_bytes`]) instead of a fixed 32 MiB.
///
/// [`staged_init::buffer_bytes`]: crate::exec::staged_init::buffer_bytes
fn staged_init(cache: &CacheConfig) -> bool {
    cache.ginex().is_some_and(|g| g.pipeline == Pipeline::Full)
}

/// The most feature-cache rows (at most `num_nodes`) whose
/// [`feature_cache_bytes`] fit `budget`.
pub fn feature_cache_rows_within(
    cache: &CacheConfig,
    budget: u64,
    num_nodes: u64,
    row_bytes: u64,
) -> u64 {
    match cache {
        CacheConfig::Dynamic(kind) => kind.rows_within(budget, num_nodes, row_bytes),
        _ => {
            // The price grows with the rows, and is linear but for the
            // staged init's chunks: the most rows that fit, by bisection.
            let fits = |rows: u64| feature_cache_bytes(cache, rows, num_nodes, row_bytes) <= budget;
            let (mut lo, mut hi) = (0u64, num_nodes);
            while lo < hi {
                let mid = lo + (hi - lo).div_ceil(2);
                if fits(mid) {
                    lo = mid;
                } else {
                    hi = mid - 1;
                }
            }
            lo
        }
    }
    .min(num_nodes)
}

mod memory_plan;
pub use memory_plan::MemoryPlan;

#[cfg(test)]
mod tests;
