//! `ginex sample` (one batch as JSON) and `ginex inspect` (one superbatch's
//! runtime files and its optimal-cache statistics as JSON).

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use serde::Serialize;

use crate::epoch::SamplingArgs;
use crate::sorted_json;
use ginex::internals::error::{Error, Result};
use ginex::internals::inspect::superbatch::{inspect_superbatch, SuperbatchSpec};
use ginex::internals::sample::neighbor_cache::NeighborCache;
use ginex::internals::sample::sampler::EpochSampler;
use ginex::internals::sample::source::{InMemoryTopology, ListCache, NeighborSource, StoreSource};
use ginex::internals::store::gather::GatherOptions;
use ginex::internals::store::Store;

/// Where `sample` and `inspect` read the neighbor lists from (default:
/// the topology loaded into memory).
#[derive(Debug, Args)]
pub struct ListSourceArgs {
    /// Read neighbor lists from disk (batched, checksummed) instead of
    /// loading the topology into memory.
    #[arg(long)]
    pub from_disk: bool,
    /// Serve lists from this neighbor cache (built by `ginex cache build`
    /// for this store) before the disk; implies --from-disk.
    #[arg(long)]
    pub ncache: Option<PathBuf>,
}

/// `ginex sample`: one batch as JSON.
#[derive(Debug, Args)]
pub struct SampleArgs {
    #[command(flatten)]
    /// Sampling flags.
    pub sampling: SamplingArgs,
    #[command(flatten)]
    /// Where the lists come from.
    pub lists: ListSourceArgs,
    /// Epoch (seeds are reshuffled per epoch from the run seed).
    #[arg(long, default_value_t = 0)]
    pub epoch: u64,
    /// Which batch of the epoch.
    #[arg(long, default_value_t = 0)]
    pub batch: u64,
}

/// `ginex inspect`: write one superbatch's runtime files.
#[derive(Debug, Args)]
pub struct InspectArgs {
    #[command(flatten)]
    /// Sampling flags.
    pub sampling: SamplingArgs,
    #[command(flatten)]
    /// Where the lists come from.
    pub lists: ListSourceArgs,
    /// Epoch (seeds are reshuffled per epoch from the run seed).
    #[arg(long, default_value_t = 0)]
    pub epoch: u64,
    /// Batches per superbatch (at least 1).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    pub superbatch: u64,
    /// Which superbatch of the epoch.
    #[arg(long, default_value_t = 0)]
    pub index: u64,
    /// Where the epoch's superbatches start, as `ginex epoch
    /// --first-superbatch`: short (16 batches, doubling up to
    /// --superbatch) or full (every one --superbatch batches).
    #[arg(long, default_value = "short", value_parser = crate::args::first_superbatch)]
    pub first_superbatch: ginex::internals::exec::config::FirstSuperbatch,
    /// Feature cache size in bytes (rows = bytes / row bytes), the unit of
    /// `ginex epoch` and `ginex train`.
    #[arg(long, value_parser = crate::args::bytes, required_unless_present = "feature_cache_rows")]
    pub feature_cache_bytes: Option<u64>,
    /// Feature cache size in rows, instead of --feature-cache-bytes.
    #[arg(long, conflicts_with = "feature_cache_bytes")]
    pub feature_cache_rows: Option<usize>,
    /// Sampling worker threads (default: number of cores).
    #[arg(long, value_parser = crate::args::at_least_one)]
    pub workers: Option<usize>,
    /// k of the k-hop approximation: the cache changes every k batches.
    #[arg(long, default_value_t = 1, value_parser = crate::args::at_least_one)]
    pub changeset_every: usize,
    /// Run directory (created if missing). Refused, before anything is
    /// written, if it already holds this superbatch's files; nothing in it
    /// is replaced or removed (on failure only the files this run created).
    #[arg(long)]
    pub out: PathBuf,
    /// Print per-batch miss counts too.
    #[arg(long)]
    pub per_batch: bool,
}

fn with_source<T>(
    store: &Store,
    a: &ListSourceArgs,
    f: impl FnOnce(&dyn NeighborSource) -> Result<T>,
) -> Result<T> {
    if let Some(path) = &a.ncache {
        let cache = NeighborCache::open(path, store)?;
        let src = StoreSource::new(
            store,
            Some(&cache as &dyn ListCache),
            &GatherOptions::default(),
        )?;
        f(&src)
    } else if a.from_disk {
        let src = StoreSource::new(store, None, &GatherOptions::default())?;
        f(&src)
    } else {
        let topo = InMemoryTopology::load(store)?;
        f(&topo)
    }
}

fn train_nodes(store: &Store) -> Result<Vec<u64>> {
    match store.splits()? {
        Some(s) if !s.train.is_empty() => Ok(s.train),
        _ => Err(Error::invalid_argument(format!(
            "{} has no training nodes (no splits file or an empty train split)",
            store.dir().display()
        ))),
    }
}

/// The sampler of epoch `epoch` over `train` with the flags of `a`, its
/// fanouts bound to `store`.
fn epoch_sampler<'a>(
    src: &'a dyn NeighborSource,
    store: &Store,
    train: &[u64],
    a: &SamplingArgs,
    epoch: u64,
) -> Result<EpochSampler<'a>> {
    let fanouts = a
        .fanouts
        .resolve(store.schema())?
        .with_sampler(a.sampler_config()?)?;
    EpochSampler::new(src, train, a.batch_size, fanouts, a.seed, epoch)
}

/// Runs `ginex sample`.
pub fn run_sample(args: &SampleArgs, out: &mut dyn Write) -> Result<()> {
    let a = &args.sampling;
    let store = Store::open(&a.store)?;
    let fanouts = a.fanouts.clone();
    let train = train_nodes(&store)?;
    let node_ids = ginex::NodeIds::of(&store)?;
    let v = with_source(&store, &args.lists, |src| {
        let sampler = epoch_sampler(src, &store, &train, a, args.epoch)?;
        if args.batch >= sampler.num_batches() {
            return Err(Error::invalid_argument(format!(
                "--batch {} but the epoch has {} batches",
                args.batch,
                sampler.num_batches()
            )));
        }
        let b = sampler.sample(args.batch)?;
        let doc = SampleDoc {
            epoch: args.epoch,
            batch: args.batch,
            seed: a.seed,
            fanouts: &fanouts,
            num_seeds: b.num_seeds,
            ids: node_ids.originals(&b.ids),
            hops: b
                .hops
                .iter()
                .map(|h| HopDoc {
                    num_dst: h.num_dst,
                    num_src: h.num_src,
                    src: &h.src,
                    dst: &h.dst,
                })
                .collect(),
            hop_order: "input layer first; the last hop's targets are the seeds",
        };
        Ok(sorted_json(&doc))
    })?;
    writeln!(out, "{v}").map_err(|e| Error::io("write", "<stdout>", e))
}

/// Runs `ginex inspect`.
pub fn run_inspect(args: &InspectArgs, out: &mut dyn Write) -> Result<()> {
    let a = &args.sampling;
    let store = Store::open(&a.store)?;
    let train = train_nodes(&store)?;
    let workers = args.workers.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let capacity = match (args.feature_cache_rows, args.feature_cache_bytes) {
        (Some(rows), _) => rows,
        (None, bytes) => {
            (bytes.unwrap_or(0) / store.layout().row_bytes() as u64).min(store.num_nodes()) as usize
        }
    };
    let v = with_source(&store, &args.lists, |src| {
        let sampler = epoch_sampler(src, &store, &train, a, args.epoch)?;
        // Cut where `ginex epoch` cuts the epoch.
        let bounds = args
            .first_superbatch
            .bounds(sampler.num_batches(), args.superbatch);
        let Some(batches) = bounds.get(args.index as usize).cloned() else {
            return Err(Error::invalid_argument(format!(
                "--index {}: the epoch's {} batches make {} superbatches of up to {} batches (first {})",
                args.index,
                sampler.num_batches(),
                bounds.len(),
                args.superbatch,
                args.first_superbatch.name(),
            )));
        };
        let first = batches.start;
        let (fanouts, relation_fanouts) = sampler.fanouts.stamp();
        let spec = SuperbatchSpec {
            index: args.index,
            first_batch: first,
            num_batches: batches.end - first,
            workers,
            lockstep: ginex::internals::exec::config::Lockstep::Rounds,
            capacity,
            every: args.changeset_every,
            page_companions: None,
            run: ginex::internals::inspect::superbatch::RunParams {
                store_id: ginex::internals::sample::neighbor_cache::store_identity(&store),
                seed: a.seed,
                epoch: args.epoch,
                seed_order: 0,
                batch_size: a.batch_size as u64,
                fanouts,
                relation_fanouts,
                sampler: sampler.fanouts.sampler_stamp(),
                carry_over: false,
                // A lone superbatch from an empty cache: no prior is used.
                reuse_prior: false,
                link: None,
            },
        };
        // Created only now, after the arguments are checked; removed again
        // (when still empty) if this run created it and fails.
        let created = args.out.symlink_metadata().is_err();
        std::fs::create_dir_all(&args.out)
            .map_err(|e| Error::io("create directory", &args.out, e))?;
        let r = inspect_superbatch(&sampler, &spec, &args.out);
        if r.is_err() && created {
            let _ = std::fs::remove_dir(&args.out);
        }
        let r = r.map_err(|e| match e {
            Error::AlreadyExists { path } => Error::invalid_argument(format!(
                "--out {} already holds {} (superbatch {} of an earlier run?); refused before writing anything, and nothing was removed: choose another --out or remove the file",
                args.out.display(),
                path.display(),
                args.index
            )),
            e => e,
        })?;
        let cs = &r.changesets;
        Ok(sorted_json(&InspectDoc {
            superbatch: args.index,
            first_batch: first,
            batches: spec.num_batches,
            feature_cache_rows: spec.capacity,
            changeset_every: spec.every,
            workers,
            accesses: cs.total_accesses(),
            misses: cs.total_misses(),
            miss_ratio: cs.total_misses() as f64 / cs.total_accesses().max(1) as f64,
            init: cs.init.len(),
            sample_seconds: r.sample_time.as_secs_f64(),
            changeset_seconds: r.changeset_time.as_secs_f64(),
            samples_file: &r.files.samples,
            changes_file: &r.files.changes,
            per_batch_misses: args.per_batch.then_some(&cs.misses),
        }))
    })?;
    writeln!(out, "{v}").map_err(|e| Error::io("write", "<stdout>", e))
}

/// The line `ginex sample` prints: one batch, ids as the user knows them.
#[derive(Serialize)]
struct SampleDoc<'a> {
    epoch: u64,
    batch: u64,
    seed: u64,
    fanouts: &'a ginex::internals::sample::fanouts::Fanouts,
    num_seeds: usize,
    ids: Vec<u64>,
    hops: Vec<HopDoc<'a>>,
    hop_order: &'static str,
}

/// One hop of [`SampleDoc`], in local indices into its `ids`.
#[derive(Serialize)]
struct HopDoc<'a> {
    num_dst: usize,
    num_src: usize,
    src: &'a [u32],
    dst: &'a [u32],
}

/// The line `ginex inspect` prints for its superbatch.
#[derive(Serialize)]
struct InspectDoc<'a> {
    superbatch: u64,
    first_batch: u64,
    batches: u64,
    feature_cache_rows: usize,
    changeset_every: usize,
    workers: usize,
    accesses: u64,
    misses: u64,
    miss_ratio: f64,
    init: usize,
    sample_seconds: f64,
    changeset_seconds: f64,
    samples_file: &'a std::path::Path,
    changes_file: &'a std::path::Path,
    #[serde(skip_serializing_if = "Option::is_none")]
    per_batch_misses: Option<&'a Vec<u64>>,
}
