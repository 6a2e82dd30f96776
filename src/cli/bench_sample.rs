//! `ginex bench sample`: neighbor-cache codecs (bytes per list, lists per
//! GiB, decode speed), cache hit ratios by budget, and sampling throughput
//! in memory vs from disk behind each cache budget, in one invocation.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use serde_json::json;

use crate::cli::bench::machine_description;
use crate::error::{Error, Result};
use crate::format::header::FileKind;
use crate::format::manifest::store_file_name;
use crate::format::ncache::Codec;
use crate::io::read::drop_from_page_cache;
use crate::sample::ncache::{build, NeighborCache};
use crate::sample::sampler::{parse_fanouts, EpochSampler};
use crate::sample::source::{InMemoryTopology, ListCache, NeighborSource, StoreSource};
use crate::store::gather::GatherOptions;
use crate::store::Store;

/// Arguments of `ginex bench sample`.
#[derive(Debug, Args)]
pub struct SampleBenchArgs {
    /// The store.
    pub store: PathBuf,
    /// Cache budgets as fractions of the indices size.
    #[arg(long, value_delimiter = ',', default_value = "0.1,0.25,0.5")]
    pub budgets: Vec<f64>,
    /// Fanout configurations, separated by `/`.
    #[arg(long, default_value = "10,10,10/25,10")]
    pub fanouts: String,
    /// Seeds per batch.
    #[arg(long, default_value_t = 1000)]
    pub batch_size: usize,
    /// Batches sampled per configuration.
    #[arg(long, default_value_t = 10)]
    pub batches: u64,
    /// One JSON object per measurement instead of tables.
    #[arg(long)]
    pub json: bool,
}

struct Measured {
    seconds: f64,
    seeds: u64,
    edges: u64,
    hit_ratio: Option<f64>,
}

fn sample_run(
    source: &dyn NeighborSource,
    train: &[u64],
    fanouts: &[i64],
    batch_size: usize,
    batches: u64,
) -> Result<Measured> {
    let sampler = EpochSampler::new(source, train, batch_size, fanouts.to_vec(), 0, 0)?;
    let started = Instant::now();
    let (mut seeds, mut edges) = (0u64, 0u64);
    for b in 0..batches.min(sampler.num_batches()) {
        let batch = sampler.sample(b)?;
        seeds += batch.num_seeds as u64;
        edges += batch.num_edges() as u64;
    }
    Ok(Measured {
        seconds: started.elapsed().as_secs_f64(),
        seeds,
        edges,
        hit_ratio: None,
    })
}

/// `ginex bench sample`.
pub fn run_sample_bench(args: &SampleBenchArgs, out: &mut dyn Write) -> Result<()> {
    let store = Store::open(&args.store)?;
    let train = store
        .splits()?
        .map(|s| s.train)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| Error::invalid_argument("the store has no training nodes"))?;
    let topo = InMemoryTopology::load(&store)?;
    let indices_path = store.dir().join(store_file_name(FileKind::Indices));
    let indices_bytes = store.num_edges() * store.index_width().bytes() as u64;
    let scratch = tempfile_dir(&args.store)?;
    let w = |e: std::io::Error| Error::io("write", "<stdout>", e);
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    if !args.json {
        writeln!(out, "bench sample: {}", args.store.display()).map_err(w)?;
        writeln!(out, "  machine: {}", machine_description()).map_err(w)?;
        writeln!(
            out,
            "  dataset: {} nodes, {} edges, indices {:.1} MiB; batch {} seeds, {} batches per run, seed 0, epoch 0",
            store.num_nodes(),
            store.num_edges(),
            mib(indices_bytes),
            args.batch_size,
            args.batches
        )
        .map_err(w)?;
    }

    // 1. Codecs at the middle budget.
    let mid = args
        .budgets
        .get(args.budgets.len() / 2)
        .copied()
        .unwrap_or(0.25);
    let mid_budget = (indices_bytes as f64 * mid) as u64;
    if !args.json {
        writeln!(
            out,
            "\n  codecs at a budget of {:.0}% of indices ({:.1} MiB):",
            mid * 100.0,
            mib(mid_budget)
        )
        .map_err(w)?;
        writeln!(
            out,
            "  {:<14} {:>10} {:>12} {:>14} {:>14} {:>16}",
            "codec", "lists", "ids", "bytes/list", "lists/GiB", "decode ids/s"
        )
        .map_err(w)?;
    }
    let mut zstd_lists = 0;
    for codec in Codec::ALL {
        let path = scratch.join(format!("codec-{}", codec.name()));
        let r = build(&store, &topo, mid_budget, codec, &path)?;
        let cache = NeighborCache::open(&path, &store)?;
        let nodes = cache.cached_nodes();
        let mut buf = Vec::new();
        let started = Instant::now();
        let mut ids = 0u64;
        for &v in &nodes {
            buf.clear();
            cache.lookup(v, &mut buf)?;
            ids += buf.len() as u64;
        }
        let decode = ids as f64 / started.elapsed().as_secs_f64().max(1e-9);
        let per_list = (r.blob_bytes + 8 * r.lists) as f64 / r.lists.max(1) as f64;
        let per_gib = (1u64 << 30) as f64 / per_list;
        if codec == Codec::ZstdList {
            zstd_lists = r.lists;
        }
        if args.json {
            writeln!(out, "{}", json!({"table": "codec", "codec": codec.name(), "lists": r.lists, "ids": r.ids, "bytes_per_list": per_list, "lists_per_gib": per_gib, "decode_ids_per_s": decode})).map_err(w)?;
        } else {
            let vs = if zstd_lists > 0 && codec != Codec::ZstdList {
                format!("  ({:.2}x zstd-list)", r.lists as f64 / zstd_lists as f64)
            } else {
                String::new()
            };
            writeln!(
                out,
                "  {:<14} {:>10} {:>12} {:>14.1} {:>14.0} {:>16.0}{vs}",
                codec.name(),
                r.lists,
                r.ids,
                per_list,
                per_gib,
                decode
            )
            .map_err(w)?;
        }
        std::fs::remove_file(&path).map_err(|e| Error::io("remove", &path, e))?;
    }

    // 2. + 3. Hit ratios and sampling throughput per fanout configuration.
    let mut caches = Vec::new();
    for &frac in &args.budgets {
        let path = scratch.join(format!("budget-{frac}"));
        build(
            &store,
            &topo,
            (indices_bytes as f64 * frac) as u64,
            Codec::DeltaBitpack,
            &path,
        )?;
        caches.push((frac, path));
    }
    let opts = GatherOptions::default();
    for config in args.fanouts.split('/') {
        let fanouts = parse_fanouts(config)?;
        let mut rows: Vec<(String, Measured)> = Vec::new();
        rows.push((
            "in memory".into(),
            sample_run(&topo, &train, &fanouts, args.batch_size, args.batches)?,
        ));
        drop_from_page_cache(&indices_path)?;
        let disk = StoreSource::new(&store, None, &opts)?;
        rows.push((
            "disk, no cache".into(),
            sample_run(&disk, &train, &fanouts, args.batch_size, args.batches)?,
        ));
        for (frac, path) in &caches {
            let cache = NeighborCache::open(path, &store)?;
            drop_from_page_cache(&indices_path)?;
            let src = StoreSource::new(&store, Some(&cache as &dyn ListCache), &opts)?;
            let mut m = sample_run(&src, &train, &fanouts, args.batch_size, args.batches)?;
            let c = src.counters();
            m.hit_ratio = Some(c.cache_hits as f64 / (c.cache_hits + c.cache_misses).max(1) as f64);
            rows.push((format!("disk, cache {:.0}%", frac * 100.0), m));
        }
        let base = rows[0].1.seconds;
        if !args.json {
            writeln!(out, "\n  sampling, fanouts {config}:").map_err(w)?;
            writeln!(
                out,
                "  {:<20} {:>10} {:>14} {:>10} {:>12}",
                "source", "seeds/s", "edges/s", "hit ratio", "time vs mem"
            )
            .map_err(w)?;
        }
        for (name, m) in &rows {
            if args.json {
                writeln!(out, "{}", json!({"table": "sampling", "fanouts": config, "source": name, "seeds_per_s": m.seeds as f64 / m.seconds, "edges_per_s": m.edges as f64 / m.seconds, "hit_ratio": m.hit_ratio, "seconds": m.seconds})).map_err(w)?;
            } else {
                let hit = m
                    .hit_ratio
                    .map_or("-".to_string(), |h| format!("{:.1}%", 100.0 * h));
                writeln!(
                    out,
                    "  {:<20} {:>10.0} {:>14.0} {:>10} {:>11.2}x",
                    name,
                    m.seeds as f64 / m.seconds,
                    m.edges as f64 / m.seconds,
                    hit,
                    m.seconds / base
                )
                .map_err(w)?;
            }
        }
    }
    std::fs::remove_dir_all(&scratch).map_err(|e| Error::io("remove directory", &scratch, e))?;
    Ok(())
}

/// A scratch directory beside the store (same filesystem).
fn tempfile_dir(store: &std::path::Path) -> Result<PathBuf> {
    let parent = store
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let dir = parent.join(format!(".ginex-bench-sample-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| Error::io("create directory", &dir, e))?;
    Ok(dir)
}
