//! `ginex bench changeset`: the cost of exact Belady changesets on real
//! sampled traces, against the sampling time of the same superbatch, and
//! the miss ratio of the k-hop approximation.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use rayon::prelude::*;
use serde::Serialize;

use crate::args::Fanouts;
use crate::machine::machine_description;
use crate::report::sorted_json;
use ginex::internals::cache::belady::compute_changesets;
use ginex::internals::error::{Error, Result};
use ginex::internals::sample::sampler::EpochSampler;
use ginex::internals::sample::source::InMemoryTopology;
use ginex::internals::store::Store;

/// Arguments of `ginex bench changeset`.
#[derive(Debug, Args)]
pub struct ChangesetBenchArgs {
    /// The store (its training split provides the seeds).
    pub store: PathBuf,
    /// Seeds per batch.
    #[arg(long, default_value_t = 1000)]
    pub batch_size: usize,
    /// Fanouts, as `ginex epoch --fanouts` takes them (10,10,10, or per
    /// relation on a typed store: cites=10:5,writes=5:5).
    #[arg(long, default_value = "10,10,10", value_parser = crate::args::fanouts, allow_hyphen_values = true)]
    pub fanouts: Fanouts,
    /// Superbatch sizes in batches (capped at the epoch's batch count).
    #[arg(long, value_delimiter = ',', default_value = "100,1000,5000")]
    pub superbatches: Vec<u64>,
    /// Cache capacities as fractions of the node count.
    #[arg(long, value_delimiter = ',', default_value = "0.05,0.1,0.2")]
    pub capacities: Vec<f64>,
    /// k values of the k-hop approximation.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16")]
    pub ks: Vec<usize>,
    /// Run seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// One JSON object per measurement instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// `ginex bench changeset`: plan (the store, its sampler), then per
/// superbatch the trace sampled and every cache size and k replayed,
/// reported as measured.
pub fn run_changeset_bench(args: &ChangesetBenchArgs, out: &mut dyn Write) -> Result<()> {
    let store = Store::open(&args.store)?;
    let fanouts = args.fanouts.clone();
    let train = store
        .splits()?
        .map(|s| s.train)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| Error::invalid_argument("the store has no training nodes"))?;
    let topo = InMemoryTopology::load(&store)?;
    let sampler = EpochSampler::new(
        &topo,
        &train,
        args.batch_size,
        fanouts.resolve(store.schema())?,
        args.seed,
        0,
    )?;
    let w = |e: std::io::Error| Error::io("write", "<stdout>", e);
    if !args.json {
        report_changeset_header(args, &store, train.len(), sampler.num_batches(), out)?;
    }
    let mut done = std::collections::BTreeSet::new();
    for &s in &args.superbatches {
        let s = s.min(sampler.num_batches());
        if !done.insert(s) {
            continue;
        }
        let SuperbatchTrace {
            trace,
            sample_secs,
            accesses,
            distinct,
            est_mib,
        } = SuperbatchTrace::sample(&sampler, s)?;
        for &frac in &args.capacities {
            let capacity = (store.num_nodes() as f64 * frac) as usize;
            let mut ratios = Vec::new();
            let mut exact_secs = 0.0;
            for &k in &args.ks {
                let started = Instant::now();
                let cs = compute_changesets(&trace, capacity, k);
                let secs = started.elapsed().as_secs_f64();
                if k == 1 {
                    exact_secs = secs;
                }
                let ratio = cs.total_misses() as f64 / accesses.max(1) as f64;
                ratios.push((k, ratio, secs));
                if args.json {
                    let v = sorted_json(&ChangesetPoint {
                        superbatch: s,
                        capacity_fraction: frac,
                        capacity_rows: capacity,
                        k,
                        accesses,
                        distinct,
                        misses: cs.total_misses(),
                        miss_ratio: ratio,
                        changeset_seconds: secs,
                        sample_seconds: sample_secs,
                        changeset_over_sample: secs / sample_secs,
                        accesses_per_s: accesses as f64 / secs,
                        estimated_mib: est_mib,
                    });
                    writeln!(out, "{v}").map_err(w)?;
                }
            }
            if !args.json {
                let by_k: Vec<String> = ratios
                    .iter()
                    .map(|(k, r, _)| format!("k{k}={r:.3}"))
                    .collect();
                writeln!(
                    out,
                    "  {:>6} {:>5.0}% {:>12} {:>10.2} {:>10.3} {:>8.1}% {:>13.0} {:>10.1}  {}",
                    s,
                    frac * 100.0,
                    accesses,
                    sample_secs,
                    exact_secs,
                    100.0 * exact_secs / sample_secs,
                    accesses as f64 / exact_secs.max(1e-9),
                    est_mib,
                    by_k.join(" ")
                )
                .map_err(w)?;
            }
        }
    }
    Ok(())
}

/// The header lines and the table's column names.
fn report_changeset_header(
    args: &ChangesetBenchArgs,
    store: &Store,
    train_len: usize,
    num_batches: u64,
    out: &mut dyn Write,
) -> Result<()> {
    let fanouts = &args.fanouts;
    let w = |e: std::io::Error| Error::io("write", "<stdout>", e);
    writeln!(out, "bench changeset: {}", args.store.display()).map_err(w)?;
    writeln!(out, "  machine: {}", machine_description()).map_err(w)?;
    writeln!(
        out,
        "  dataset: {} nodes, {} edges, {} training seeds = {} batches of {}; fanouts {}; sampling on {} threads, changesets on one core",
        store.num_nodes(),
        store.num_edges(),
        train_len,
        num_batches,
        args.batch_size,
        crate::args::show_fanouts(fanouts),
        rayon::current_num_threads()
    )
    .map_err(w)?;
    writeln!(
        out,
        "  {:>6} {:>6} {:>12} {:>10} {:>10} {:>9} {:>13} {:>10}  miss ratio by k",
        "S", "cap", "accesses", "sample s", "belady s", "belady/", "accesses/s", "est. MiB"
    )
    .map_err(w)?;
    Ok(())
}

/// The first `s` batches of an epoch, sampled in parallel, and their size.
struct SuperbatchTrace {
    trace: Vec<Vec<u64>>,
    sample_secs: f64,
    accesses: u64,
    distinct: u64,
    /// The changeset computation's estimated memory.
    est_mib: f64,
}

impl SuperbatchTrace {
    /// Samples batches `0..s`.
    fn sample(sampler: &EpochSampler, s: u64) -> Result<Self> {
        let started = Instant::now();
        let trace: Vec<Vec<u64>> = (0..s)
            .into_par_iter()
            .map(|b| sampler.sample(b).map(|x| x.ids))
            .collect::<Result<_>>()?;
        let sample_secs = started.elapsed().as_secs_f64();
        let accesses: u64 = trace.iter().map(|t| t.len() as u64).sum();
        let distinct = {
            let mut all: Vec<u64> = trace.iter().flatten().copied().collect();
            all.sort_unstable();
            all.dedup();
            all.len() as u64
        };
        // iters (4 B / access) + cursor/start/next/flags (~17 B / distinct) +
        // dense map (~16 B / distinct) + bucket heads (4 B / batch).
        let est_mib = (accesses * 4 + distinct * 33 + s * 4) as f64 / (1 << 20) as f64;
        Ok(SuperbatchTrace {
            trace,
            sample_secs,
            accesses,
            distinct,
            est_mib,
        })
    }
}

/// One `--json` line of `ginex bench changeset`: a superbatch, a cache
/// size and a k.
#[derive(Serialize)]
struct ChangesetPoint {
    superbatch: u64,
    capacity_fraction: f64,
    capacity_rows: usize,
    k: usize,
    accesses: u64,
    distinct: u64,
    misses: u64,
    miss_ratio: f64,
    changeset_seconds: f64,
    sample_seconds: f64,
    changeset_over_sample: f64,
    accesses_per_s: f64,
    estimated_mib: f64,
}
