//! One epoch of data preparation, exactly as training runs it, for any
//! policy: sample, (inspect and precompute changesets,) gather each batch's
//! feature rows through the policy's cache, hand them to a consumer.

use std::time::{Duration, Instant};

use crate::cache::dynamic::RowGather;
use crate::cache::feature_cache::FeatureCache;
use crate::cache::static_policy::{top_out_degree, top_presampled_by};
use crate::error::{Error, Result};
use crate::exec::config::CacheConfig;
pub use crate::exec::config::EpochConfig;
use crate::exec::mmap::MmapStore;
use crate::exec::pipeline::{run_ginex, GinexRun};
pub use crate::exec::report::{BatchStat, EpochBatch, EpochReport, Timeline};
use crate::exec::rows::GatherRows;
use crate::exec::run_dir::RunDir;
use crate::exec::sampler::{link_epoch, make_sampler, neighbor_cache_pick};
use crate::format::neighbor_cache::Codec;
use crate::io::cpu_time::{self, ProcessCpu, Role};
use crate::sample::neighbor_cache_reuse::{open_or_build_picked, NcacheOrigin};
use crate::sample::sampler::EpochSampler;
use crate::sample::source::NeighborSource;
use crate::sample::source::{ListCache, StoreSource};
use crate::store::gather::GatherOptions;
use crate::store::Store;

/// Runs one epoch of `config` on `store`, calling `consume` for every batch.
pub fn run_epoch(
    store: &Store,
    config: &EpochConfig,
    consume: &mut dyn FnMut(&EpochBatch<'_>) -> Result<()>,
) -> Result<EpochReport> {
    // The train split only where it is used (the epoch's seeds, or the
    // `presc` policy's presampling): a run over given nodes (predict,
    // evaluation) does not hold it beside them.
    let uses_train = config.link.is_none()
        && (config.seed_nodes.is_none() || matches!(config.cache, CacheConfig::Presc { .. }));
    let train = if uses_train {
        store.splits()?.map(|s| s.train).unwrap_or_default()
    } else {
        Vec::new()
    };
    if let Some(link) = &config.link {
        let row_bytes = store.layout().row_bytes() as u64;
        link.check_negatives((config.batch_size, store.num_edges()), row_bytes, None)?;
    }
    if config.link.is_none() && config.seed_nodes.is_none() && train.is_empty() {
        return Err(Error::invalid_argument(format!(
            "{} has no training nodes (no splits file or an empty train split)",
            store.dir().display()
        )));
    }
    crate::io::heap::map_large_allocations();
    let device = crate::io::device_busy::DeviceBusy::start(
        &store.path_of(crate::format::header::FileKind::FeaturePages),
    );
    let started = Instant::now();
    let cpu = (
        ProcessCpu::now(),
        cpu_time::ledger(),
        cpu_time::thread_cpu(),
    );
    let mut report = EpochReport::default();
    report.timeline.startup_cpu = cpu.0.total();
    let mut first_batch = None;
    let consume = &mut |b: &EpochBatch<'_>| {
        first_batch.get_or_insert_with(Instant::now);
        consume(b)
    };
    let result = run_epoch_inner(store, config, &train, &mut report, consume);
    cpu_time::charge(Role::Executor, cpu_time::thread_cpu().saturating_sub(cpu.2));
    let t = &mut report.timeline;
    let spent = ProcessCpu::now().since(&cpu.0);
    (t.cpu_user, t.cpu_system) = (spent.user, spent.system);
    let ledger = cpu_time::ledger();
    for (k, slot) in t.role_cpu.iter_mut().enumerate() {
        *slot = Duration::from_nanos(ledger[k].saturating_sub(cpu.1[k]));
    }
    t.first_read = t
        .first_read_at
        .map(|at| at.saturating_duration_since(started));
    t.first_batch = first_batch.map(|at| at.saturating_duration_since(started));
    report.wall = started.elapsed();
    report.timeline.device_busy = device.and_then(|d| d.elapsed());
    result.map(|()| report)
}

/// [`run_epoch`] past its timeline: the policy's epoch into `report`.
fn run_epoch_inner(
    store: &Store,
    config: &EpochConfig,
    train: &[u64],
    report: &mut EpochReport,
    consume: &mut dyn FnMut(&EpochBatch<'_>) -> Result<()>,
) -> Result<()> {
    if config.cache == CacheConfig::Mmap {
        let mapped = MmapStore::open(store)?;
        let link = link_epoch(&mapped, store, config)?;
        let sampler = make_sampler(&mapped, store, config, train, link.as_ref())?;
        run_per_batch(
            store,
            config,
            &sampler,
            Mode::Mmap(&mapped),
            report,
            consume,
        )?;
        return Ok(());
    }

    // Neighbor cache: opened where it was built before (offline), built
    // there first when missing.
    let ncache = if config.neighbor_cache_bytes > 0 {
        let (cache, _, origin) = open_or_build_picked(
            store,
            Codec::BlockBitpack,
            config.neighbor_cache_bytes,
            config.neighbor_cache.as_deref(),
            &neighbor_cache_pick(store, config, train)?,
        )?;
        if let NcacheOrigin::Built(took) = origin {
            report.neighbor_cache_build = took;
        }
        report.neighbor_cache_reused = origin == NcacheOrigin::Reused;
        Some(cache)
    } else {
        None
    };
    let options = GatherOptions {
        queue_depth: config.feature_queue_depth.max(1),
        merge_gap_pages: config.merge_gap_pages,
        sequential_reads: config.sequential_reads,
        read_cost: config.read_cost,
        activity: Some(Default::default()),
        ..GatherOptions::default()
    };
    // The list reads at their own depth; the feature reads (`rows`, the
    // staged init's reader) at the gathers'.
    let list_options = GatherOptions {
        queue_depth: config.list_queue_depth.max(1),
        ..options.clone()
    };
    let source = StoreSource::new(
        store,
        ncache.as_ref().map(|c| c as &dyn ListCache),
        &list_options,
    )?;
    let link = link_epoch(&source, store, config)?;
    let sampler = make_sampler(&source, store, config, train, link.as_ref())?;
    let rows = GatherRows::new(store, &options)?;
    let capacity = config.feature_cache_rows;
    let result = match &config.cache {
        CacheConfig::Ginex(ginex) => (|| {
            let run_dir = RunDir::create(&config.run_dir)?;
            let run = GinexRun {
                config,
                ginex,
                store,
                options: &options,
                sampler: &sampler,
                rows: &rows,
                dir: run_dir.path(),
            };
            run_ginex(&run, report, consume)?;
            if ginex.keep_runs {
                report.kept_runs = Some(run_dir.keep());
            }
            Ok(())
        })(),
        CacheConfig::Dynamic(kind) => {
            let mut cache =
                kind.row_cache(store.num_nodes(), capacity, store.layout().row_bytes())?;
            run_per_batch(
                store,
                config,
                &sampler,
                Mode::Dynamic(cache.as_mut(), &rows),
                report,
                consume,
            )
        }
        CacheConfig::Degree | CacheConfig::Presc { .. } | CacheConfig::None => {
            let started = Instant::now();
            let (selected, capacity) = match config.cache {
                CacheConfig::Degree => (top_out_degree(store, capacity)?, capacity),
                CacheConfig::Presc { rounds } => (
                    top_presampled_by(source.num_nodes(), rounds, capacity, &|e| {
                        let presample = EpochConfig {
                            epoch: e,
                            ..config.clone()
                        };
                        make_sampler(&source, store, &presample, train, link.as_ref())
                    })?,
                    capacity,
                ),
                _ => (Vec::new(), 0),
            };
            let mut cache =
                FeatureCache::new(store.num_nodes(), capacity, store.layout().row_bytes())?;
            report.init_reads = cache.init(&selected, &rows)?;
            report.cache_init = started.elapsed();
            run_per_batch(
                store,
                config,
                &sampler,
                Mode::Static(&mut cache, &rows),
                report,
                consume,
            )
        }
        CacheConfig::Mmap => Err(Error::internal(
            "the mmap policy runs before the cache policies",
        )),
    };
    // (`+=`: the ginex policy's staged init adds its reader's reads.)
    report.add_gather_stats(&rows.stats());
    let lists = source.read_stats();
    (report.list_reads, report.list_bytes_read) = (lists.list_reads, lists.bytes_read);
    report.list_reads_beside_gathers = lists.list_reads_beside_features;
    report.list_bytes_beside_gathers = lists.list_bytes_beside_features;
    if ncache.is_some() {
        let c = source.counters();
        report.neighbor_hit_ratio =
            Some(c.cache_hits as f64 / (c.cache_hits + c.cache_misses).max(1) as f64);
    }
    drop(ncache);
    result
}

enum Mode<'a, 'b> {
    Mmap(&'a MmapStore<'b>),
    Dynamic(&'a mut dyn RowGather, &'a GatherRows<'b>),
    Static(&'a mut FeatureCache, &'a GatherRows<'b>),
}

/// Sample-then-gather per batch (every policy but `ginex`).
fn run_per_batch(
    store: &Store,
    config: &EpochConfig,
    sampler: &EpochSampler<'_>,
    mut mode: Mode<'_, '_>,
    report: &mut EpochReport,
    consume: &mut dyn FnMut(&EpochBatch<'_>) -> Result<()>,
) -> Result<()> {
    let rb = store.layout().row_bytes();
    let batches = config
        .max_batches
        .map_or(sampler.num_batches(), |m| m.min(sampler.num_batches()));
    let mut out = Vec::new();
    for b in 0..batches {
        let started = Instant::now();
        let batch = sampler.sample(b)?;
        report.sample += started.elapsed();
        out.resize(batch.ids.len() * rb, 0);
        let started = Instant::now();
        let misses = match &mut mode {
            Mode::Mmap(m) => {
                m.gather(&batch.ids, &mut out)?;
                batch.ids.len() as u64
            }
            Mode::Dynamic(cache, rows) => cache.gather(&batch.ids, &mut out, *rows)?,
            Mode::Static(cache, rows) => cache.gather(&batch.ids, &mut out, *rows)?,
        };
        report.gather += started.elapsed();
        report.batches.push(BatchStat {
            batch: b,
            hits: batch.ids.len() as u64 - misses,
            misses,
            checksum: crate::format::crc32(&out),
        });
        consume(&EpochBatch {
            batch: b,
            ids: &batch.ids,
            num_seeds: batch.num_seeds,
            hops: &batch.hops,
            rows: &out,
            link: batch.link.as_ref(),
        })?;
        // The batch's small allocations (sampling, hops) are freed now; give
        // them back so that the heap does not keep the peak of every batch.
        crate::io::heap::release_free_memory();
    }
    Ok(())
}
