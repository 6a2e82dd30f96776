//! `ginex bench sampler`: neighbor sampling against layer-neighbor
//! sampling (LABOR) on the same batches: distinct vertices per batch (the
//! feature rows a batch needs), edges, and sampling time, each sampler in
//! the same invocation, ratios to neighbor sampling.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use clap::Args;

use crate::machine::{load_average, machine_description};
use ginex::internals::error::{Error, Result};
use ginex::internals::sample::fanouts::Fanouts;
use ginex::internals::sample::labor::{Sampler, SamplerConfig};
use ginex::internals::sample::sampler::EpochSampler;
use ginex::internals::sample::source::InMemoryTopology;
use ginex::internals::store::Store;

/// Arguments of `ginex bench sampler`.
///
/// Example: ginex bench sampler STORE --fanouts 10,10,10 --batch-size 1000 --batches 20
#[derive(Debug, Args)]
pub struct SamplerBenchArgs {
    /// The store.
    pub store: PathBuf,
    /// Samplers to compare, the first the baseline.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "neighbor,labor-0,labor-1,labor-*"
    )]
    pub samplers: Vec<String>,
    /// Fanouts, as `ginex epoch --fanouts` takes them.
    #[arg(long, default_value = "10,10,10", value_parser = crate::args::fanouts, allow_hyphen_values = true)]
    pub fanouts: Fanouts,
    /// Seeds per batch.
    #[arg(long, default_value_t = 1000)]
    pub batch_size: usize,
    /// Batches sampled per sampler (the epoch's first).
    #[arg(long, default_value_t = 20)]
    pub batches: u64,
    /// LABOR samplers also run with this `--batch-dependency` (1: not).
    #[arg(long, default_value_t = 1)]
    pub batch_dependency: u64,
    /// Run seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

struct Row {
    name: String,
    vertices: f64,
    edges: f64,
    seconds: f64,
}

/// `ginex bench sampler`.
pub fn run_sampler_bench(args: &SamplerBenchArgs, out: &mut dyn Write) -> Result<()> {
    let mut configs: Vec<SamplerConfig> = Vec::new();
    for s in &args.samplers {
        let sampler = Sampler::parse(s)?;
        configs.push(sampler.into());
        if sampler.is_labor() && args.batch_dependency > 1 {
            configs.push(SamplerConfig {
                sampler,
                layer_dependency: false,
                batch_dependency: args.batch_dependency,
            });
        }
    }
    if configs.is_empty() {
        return Err(Error::invalid_argument("--samplers is empty"));
    }
    let store = Store::open(&args.store)?;
    let train = store
        .splits()?
        .map(|s| s.train)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| Error::invalid_argument("the store has no training nodes"))?;
    let load_start = load_average();
    let loaded = Instant::now();
    let topo = InMemoryTopology::load(&store)?;
    let load_s = loaded.elapsed().as_secs_f64();
    let resolved = args.fanouts.resolve(store.schema())?;
    let mut rows = Vec::new();
    for config in configs {
        let fanouts = resolved.clone().with_sampler(config)?;
        let sampler = EpochSampler::new(&topo, &train, args.batch_size, fanouts, args.seed, 0)?;
        let n = args.batches.min(sampler.num_batches()).max(1);
        let started = Instant::now();
        let batches = sampler.sample_round(0..n)?;
        let seconds = started.elapsed().as_secs_f64();
        let per = |f: &dyn Fn(&ginex::internals::sample::sampler::SampledBatch) -> usize| {
            batches.iter().map(f).sum::<usize>() as f64 / batches.len() as f64
        };
        let mut name = config.sampler.to_string();
        if config.batch_dependency > 1 {
            name.push_str(&format!(" (batch dependency {})", config.batch_dependency));
        }
        rows.push(Row {
            name,
            vertices: per(&|b| b.ids.len()),
            edges: per(&|b| b.num_edges()),
            seconds: seconds / n as f64,
        });
    }
    let w = |e: std::io::Error| Error::io("write", "<stdout>", e);
    let load = |l: Option<[f64; 3]>| {
        l.map_or_else(
            || "unknown".to_string(),
            |l| format!("{:.2} {:.2} {:.2}", l[0], l[1], l[2]),
        )
    };
    writeln!(out, "bench sampler: {}", args.store.display()).map_err(w)?;
    writeln!(out, "  machine: {}", machine_description()).map_err(w)?;
    writeln!(
        out,
        "  store: {} nodes, {} edges; topology loaded in memory in {load_s:.1} s",
        store.num_nodes(),
        store.num_edges()
    )
    .map_err(w)?;
    writeln!(
        out,
        "  parameters: fanouts {}, batch size {}, the epoch's first {} batches, seed {}, lockstep on {} threads",
        args.fanouts,
        args.batch_size,
        args.batches,
        args.seed,
        rayon::current_num_threads()
    )
    .map_err(w)?;
    writeln!(
        out,
        "  load average: {} at start, {} at end",
        load(load_start),
        load(load_average())
    )
    .map_err(w)?;
    writeln!(
        out,
        "  {:<34} {:>14} {:>9} {:>14} {:>12}",
        "sampler", "vertices/batch", "fewer", "edges/batch", "ms/batch"
    )
    .map_err(w)?;
    let base = rows[0].vertices;
    for r in &rows {
        writeln!(
            out,
            "  {:<34} {:>14.0} {:>8.2}x {:>14.0} {:>12.1}",
            r.name,
            r.vertices,
            base / r.vertices.max(1.0),
            r.edges,
            r.seconds * 1000.0
        )
        .map_err(w)?;
    }
    Ok(())
}
