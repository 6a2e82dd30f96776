//! `ginex bench sample`: neighbor-cache codecs (bytes per list, lists per
//! GiB, decode speed), cache hit ratios by budget, and sampling throughput
//! in memory vs from disk behind each cache budget, in one invocation.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use clap::Args;
use serde::Serialize;

use crate::machine::machine_description;
use crate::report::sorted_json;
use ginex::internals::error::{Error, Result};
use ginex::internals::format::header::FileKind;
use ginex::internals::format::neighbor_cache::Codec;
use ginex::internals::io::read::drop_from_page_cache;
use ginex::internals::sample::fanouts::{Fanouts, ResolvedFanouts};
use ginex::internals::sample::neighbor_cache::{build, encoded_size, NeighborCache};
use ginex::internals::sample::sampler::EpochSampler;
use ginex::internals::sample::source::{InMemoryTopology, ListCache, NeighborSource, StoreSource};
use ginex::internals::store::gather::GatherOptions;
use ginex::internals::store::Store;

/// Arguments of `ginex bench sample`.
#[derive(Debug, Args)]
pub struct SampleBenchArgs {
    /// The store.
    pub store: PathBuf,
    /// Cache budgets as fractions of the indices size.
    #[arg(long, value_delimiter = ',', default_value = "0.1,0.25,0.5")]
    pub budgets: Vec<f64>,
    /// Fanout configurations, separated by `/`, each as `ginex epoch
    /// --fanouts` takes them (per relation too: cites=10:5,writes=5:5).
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
    fanouts: &ResolvedFanouts,
    batch_size: usize,
    batches: u64,
) -> Result<Measured> {
    let sampler = EpochSampler::new(source, train, batch_size, fanouts.clone(), 0, 0)?;
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

/// In-memory lists, counting how many a neighbor cache would have served.
struct Counting<'a> {
    topo: &'a InMemoryTopology,
    cache: &'a NeighborCache<'a>,
    hits: AtomicU64,
    lookups: AtomicU64,
}

impl NeighborSource for Counting<'_> {
    fn num_nodes(&self) -> u64 {
        self.topo.num_nodes()
    }
    fn with_lists(&self, nodes: &[u64], visit: &mut dyn FnMut(usize, &[u64])) -> Result<()> {
        // Empty lists are known from indptr: neither hits nor lookups.
        let nonempty = nodes
            .iter()
            .filter(|&&v| !self.topo.list(v).is_empty())
            .count();
        let hits = nodes.iter().filter(|&&v| self.cache.contains(v)).count();
        self.hits.fetch_add(hits as u64, Ordering::Relaxed);
        self.lookups.fetch_add(nonempty as u64, Ordering::Relaxed);
        self.topo.with_lists(nodes, visit)
    }
}

/// `ginex bench sample`: plan (the store, its training nodes, a scratch
/// directory), then each table measured and reported in turn.
pub fn run_sample_bench(args: &SampleBenchArgs, out: &mut dyn Write) -> Result<()> {
    let plan = SamplePlan::of(args)?;
    plan.report_header(args, out)?;
    let codecs = plan.measure_codecs(args)?;
    codecs.report(args, out)?;
    let hits = plan.measure_hit_ratios(args)?;
    report_hit_ratios(args, &hits, out)?;
    plan.sampling(args, out)?;
    let scratch = &plan.scratch;
    std::fs::remove_dir_all(scratch).map_err(|e| Error::io("remove directory", scratch, e))?;
    Ok(())
}

/// Bytes in MiB.
fn mib(b: u64) -> f64 {
    b as f64 / (1 << 20) as f64
}

/// What `ginex bench sample` runs on: the store, its training nodes, its
/// topology in memory, and a scratch directory for the caches it builds.
struct SamplePlan {
    store: Store,
    train: Vec<u64>,
    topo: InMemoryTopology,
    indices_path: PathBuf,
    indices_bytes: u64,
    scratch: PathBuf,
}

/// The codec table: each codec built for the middle budget, and its bytes
/// for one common set of lists.
struct CodecTable {
    mid: f64,
    mid_budget: u64,
    reference_lists: usize,
    reference_ids: u64,
    /// Codec, lists and ids held, bytes per common list, decoded ids/s.
    rows: Vec<(Codec, u64, u64, f64, f64)>,
}

/// The hit-ratio table: per budget (fraction, bytes), one ratio per
/// [`HIT_CODECS`] entry.
struct HitRatios {
    rows: Vec<(f64, u64, Vec<f64>)>,
}

/// The codecs of the hit-ratio table.
const HIT_CODECS: [Codec; 3] = [Codec::Raw, Codec::ZstdList, Codec::BlockBitpack];

impl SamplePlan {
    /// Opens the store, loads its topology and makes the scratch
    /// directory.
    fn of(args: &SampleBenchArgs) -> Result<Self> {
        let store = Store::open(&args.store)?;
        let train = store
            .splits()?
            .map(|s| s.train)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| Error::invalid_argument("the store has no training nodes"))?;
        let topo = InMemoryTopology::load(&store)?;
        let indices_path = store.path_of(FileKind::Indices);
        let indices_bytes = store.num_edges() * store.index_width().bytes() as u64;
        let scratch = tempfile_dir(&args.store)?;
        Ok(SamplePlan {
            store,
            train,
            topo,
            indices_path,
            indices_bytes,
            scratch,
        })
    }

    /// The header lines (none with `--json`).
    fn report_header(&self, args: &SampleBenchArgs, out: &mut dyn Write) -> Result<()> {
        if args.json {
            return Ok(());
        }
        let (store, w) = (&self.store, |e| Error::io("write", "<stdout>", e));
        writeln!(out, "bench sample: {}", args.store.display()).map_err(w)?;
        writeln!(out, "  machine: {}", machine_description()).map_err(w)?;
        writeln!(
            out,
            "  dataset: {} nodes, {} edges, indices {:.1} MiB; batch {} seeds, {} batches per run, seed 0, epoch 0",
            store.num_nodes(),
            store.num_edges(),
            mib(self.indices_bytes),
            args.batch_size,
            args.batches
        )
        .map_err(w)?;
        Ok(())
    }

    /// Table 1, codecs at the middle budget: what each holds when built for the
    /// budget, and what each needs for one common set of lists (the lists
    /// zstd-list holds at that budget), which gives bytes per list and
    /// lists per GiB on equal terms.
    fn measure_codecs(&self, args: &SampleBenchArgs) -> Result<CodecTable> {
        let (store, topo, scratch) = (&self.store, &self.topo, &self.scratch);
        let mid = args
            .budgets
            .get(args.budgets.len() / 2)
            .copied()
            .unwrap_or(0.25);
        let mid_budget = (self.indices_bytes as f64 * mid) as u64;
        let zpath = scratch.join("codec-reference");
        build(store, mid_budget, Codec::ZstdList, &zpath)?;
        let reference = NeighborCache::open(&zpath, store)?.cached_nodes();
        std::fs::remove_file(&zpath).map_err(|e| Error::io("remove", &zpath, e))?;
        let ref_ids: u64 = reference.iter().map(|&v| topo.list(v).len() as u64).sum();
        let mut rows = Vec::new();
        for codec in Codec::ALL {
            let path = scratch.join(format!("codec-{}", codec.name()));
            let r = build(store, mid_budget, codec, &path)?;
            let cache = NeighborCache::open(&path, store)?;
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
            let common = encoded_size(
                codec,
                store.index_width(),
                reference.iter().map(|&v| topo.list(v)),
            )?;
            let per_list = common as f64 / reference.len().max(1) as f64;
            rows.push((codec, r.lists, r.ids, per_list, decode));
            std::fs::remove_file(&path).map_err(|e| Error::io("remove", &path, e))?;
        }
        Ok(CodecTable {
            mid,
            mid_budget,
            reference_lists: reference.len(),
            reference_ids: ref_ids,
            rows,
        })
    }

    /// Table 2, hit ratio by codec and budget (first fanout configuration,
    /// topology in memory, the cache only consulted for membership): what
    /// compression buys, as in Ginex++ Table 5.3.
    fn measure_hit_ratios(&self, args: &SampleBenchArgs) -> Result<HitRatios> {
        let (store, scratch) = (&self.store, &self.scratch);
        let first = Fanouts::parse(args.fanouts.split('/').next().unwrap_or("10,10,10"))?
            .resolve(store.schema())?;
        let mut rows = Vec::new();
        for &frac in &args.budgets {
            let budget = (self.indices_bytes as f64 * frac) as u64;
            let mut ratios = Vec::new();
            for codec in HIT_CODECS {
                let path = scratch.join(format!("hit-{}-{frac}", codec.name()));
                build(store, budget, codec, &path)?;
                let cache = NeighborCache::open(&path, store)?;
                let counting = Counting {
                    topo: &self.topo,
                    cache: &cache,
                    hits: AtomicU64::new(0),
                    lookups: AtomicU64::new(0),
                };
                sample_run(
                    &counting,
                    &self.train,
                    &first,
                    args.batch_size,
                    args.batches,
                )?;
                let ratio = counting.hits.load(Ordering::Relaxed) as f64
                    / counting.lookups.load(Ordering::Relaxed).max(1) as f64;
                ratios.push(ratio);
                std::fs::remove_file(&path).map_err(|e| Error::io("remove", &path, e))?;
            }
            rows.push((frac, budget, ratios));
        }
        Ok(HitRatios { rows })
    }

    /// Table 3, sampling throughput per fanout configuration, block-bitpack
    /// caches: each configuration measured, then reported.
    fn sampling(&self, args: &SampleBenchArgs, out: &mut dyn Write) -> Result<()> {
        let mut caches = Vec::new();
        for &frac in &args.budgets {
            let path = self.scratch.join(format!("budget-{frac}"));
            build(
                &self.store,
                (self.indices_bytes as f64 * frac) as u64,
                Codec::BlockBitpack,
                &path,
            )?;
            caches.push((frac, path));
        }
        for config in args.fanouts.split('/') {
            let rows = self.measure_sampling(args, config, &caches)?;
            report_sampling(args, config, &rows, out)?;
        }
        Ok(())
    }

    /// Sampling with `config` from memory, from disk, and from disk
    /// behind each cache.
    fn measure_sampling(
        &self,
        args: &SampleBenchArgs,
        config: &str,
        caches: &[(f64, PathBuf)],
    ) -> Result<Vec<(String, Measured)>> {
        let (store, train, indices_path) = (&self.store, &self.train, &self.indices_path);
        let opts = GatherOptions::default();
        let fanouts = Fanouts::parse(config)?.resolve(store.schema())?;
        let mut rows: Vec<(String, Measured)> = Vec::new();
        rows.push((
            "in memory".into(),
            sample_run(&self.topo, train, &fanouts, args.batch_size, args.batches)?,
        ));
        drop_from_page_cache(indices_path)?;
        let disk = StoreSource::new(store, None, &opts)?;
        rows.push((
            "disk, no cache".into(),
            sample_run(&disk, train, &fanouts, args.batch_size, args.batches)?,
        ));
        for (frac, path) in caches {
            let cache = NeighborCache::open(path, store)?;
            drop_from_page_cache(indices_path)?;
            let src = StoreSource::new(store, Some(&cache as &dyn ListCache), &opts)?;
            let mut m = sample_run(&src, train, &fanouts, args.batch_size, args.batches)?;
            let c = src.counters();
            m.hit_ratio = Some(c.cache_hits as f64 / (c.cache_hits + c.cache_misses).max(1) as f64);
            rows.push((format!("disk, cache {:.0}%", frac * 100.0), m));
        }
        Ok(rows)
    }
}

impl CodecTable {
    /// The codec table, or its `--json` lines.
    fn report(&self, args: &SampleBenchArgs, out: &mut dyn Write) -> Result<()> {
        let w = |e: std::io::Error| Error::io("write", "<stdout>", e);
        let (mid_budget, rows) = (self.mid_budget, &self.rows);
        if !args.json {
            writeln!(
                out,
                "\n  codecs at a budget of {:.0}% of indices ({:.1} MiB); common set = the {} lists ({} ids) zstd-list holds there:",
                self.mid * 100.0,
                mib(mid_budget),
                self.reference_lists,
                self.reference_ids
            )
            .map_err(w)?;
            writeln!(
                out,
                "  {:<14} {:>13} {:>12} {:>12} {:>12} {:>9} {:>14}",
                "codec",
                "lists held",
                "ids held",
                "bytes/list",
                "lists/GiB",
                "vs zstd",
                "decode ids/s"
            )
            .map_err(w)?;
        }
        let zstd_per_list = rows
            .iter()
            .find(|r| r.0 == Codec::ZstdList)
            .map_or(1.0, |r| r.3);
        for &(codec, lists, ids, per_list, decode) in rows {
            let per_gib = (1u64 << 30) as f64 / per_list;
            let vs = zstd_per_list / per_list;
            if args.json {
                let v = sorted_json(&CodecLine {
                    table: "codec",
                    codec: codec.name(),
                    budget_bytes: mid_budget,
                    lists_in_budget: lists,
                    ids_in_budget: ids,
                    common_lists: self.reference_lists,
                    bytes_per_list: per_list,
                    lists_per_gib: per_gib,
                    lists_vs_zstd_list: vs,
                    decode_ids_per_s: decode,
                });
                writeln!(out, "{v}").map_err(w)?;
            } else {
                writeln!(
                    out,
                    "  {:<14} {:>13} {:>12} {:>12.1} {:>12.0} {:>8.2}x {:>14.0}",
                    codec.name(),
                    lists,
                    ids,
                    per_list,
                    per_gib,
                    vs,
                    decode
                )
                .map_err(w)?;
            }
        }
        Ok(())
    }
}

/// The hit-ratio table, or its `--json` lines.
fn report_hit_ratios(args: &SampleBenchArgs, hits: &HitRatios, out: &mut dyn Write) -> Result<()> {
    let w = |e: std::io::Error| Error::io("write", "<stdout>", e);
    if !args.json {
        writeln!(
            out,
            "\n  neighbor-cache hit ratio, fanouts {}:",
            args.fanouts.split('/').next().unwrap_or("")
        )
        .map_err(w)?;
        write!(out, "  {:<10}", "budget").map_err(w)?;
        for c in HIT_CODECS {
            write!(out, " {:>14}", c.name()).map_err(w)?;
        }
        writeln!(out).map_err(w)?;
    }
    for (frac, budget, ratios) in &hits.rows {
        if args.json {
            for (codec, ratio) in HIT_CODECS.iter().zip(ratios) {
                let v = sorted_json(&HitRatioLine {
                    table: "hit_ratio",
                    codec: codec.name(),
                    budget_fraction: *frac,
                    budget_bytes: *budget,
                    hit_ratio: *ratio,
                });
                writeln!(out, "{v}").map_err(w)?;
            }
        } else {
            write!(out, "  {:<10}", format!("{:.0}%", frac * 100.0)).map_err(w)?;
            for r in ratios {
                write!(out, " {:>13.1}%", 100.0 * r).map_err(w)?;
            }
            writeln!(out).map_err(w)?;
        }
    }
    Ok(())
}

/// The sampling table of one fanout configuration, or its `--json` lines.
fn report_sampling(
    args: &SampleBenchArgs,
    config: &str,
    rows: &[(String, Measured)],
    out: &mut dyn Write,
) -> Result<()> {
    let w = |e: std::io::Error| Error::io("write", "<stdout>", e);
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
    for (name, m) in rows {
        if args.json {
            let v = sorted_json(&SamplingLine {
                table: "sampling",
                fanouts: config,
                source: name,
                seeds_per_s: m.seeds as f64 / m.seconds,
                edges_per_s: m.edges as f64 / m.seconds,
                hit_ratio: m.hit_ratio,
                seconds: m.seconds,
            });
            writeln!(out, "{v}").map_err(w)?;
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
    Ok(())
}

/// A scratch directory beside the store (same filesystem).
fn tempfile_dir(store: &std::path::Path) -> Result<PathBuf> {
    let parent = store
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let dir = parent.join(format!(".ginex-bench-sample-{}", std::process::id()));
    // Created here (refused if it exists), so removing it at the end
    // removes only what this bench wrote.
    std::fs::create_dir(&dir).map_err(|e| Error::io("create directory", &dir, e))?;
    Ok(dir)
}

/// A `--json` line of the codec table.
#[derive(Serialize)]
struct CodecLine {
    table: &'static str,
    codec: &'static str,
    budget_bytes: u64,
    lists_in_budget: u64,
    ids_in_budget: u64,
    common_lists: usize,
    bytes_per_list: f64,
    lists_per_gib: f64,
    lists_vs_zstd_list: f64,
    decode_ids_per_s: f64,
}

/// A `--json` line of the hit-ratio table.
#[derive(Serialize)]
struct HitRatioLine {
    table: &'static str,
    codec: &'static str,
    budget_fraction: f64,
    budget_bytes: u64,
    hit_ratio: f64,
}

/// A `--json` line of the sampling table.
#[derive(Serialize)]
struct SamplingLine<'a> {
    table: &'static str,
    fanouts: &'a str,
    source: &'a str,
    seeds_per_s: f64,
    edges_per_s: f64,
    hit_ratio: Option<f64>,
    seconds: f64,
}
