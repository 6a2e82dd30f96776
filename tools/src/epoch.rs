//! `ginex epoch`: one epoch of data preparation under a policy, measured.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use crate::args::Fanouts;
use crate::machine::{machine_description, peak_rss_bytes};
use ginex::error::{Error, Result};
use ginex::exec::epoch::{run_epoch, EpochConfig, EpochReport};
use ginex::exec::policy::Policy;
use ginex::store::Store;

/// Run one epoch of data preparation (sample, inspect, gather, cache
/// updates) without a model, and report stage times and cache counters.
///
/// Example: ginex epoch STORE --policy ginex --feature-cache-bytes 1GiB --neighbor-cache-bytes 256MiB
#[derive(Debug, Args)]
pub struct EpochArgs {
    /// The data path.
    #[command(flatten)]
    pub data: DataArgs,
    /// Epoch.
    #[arg(long, default_value_t = 0)]
    pub epoch: u64,
    /// Write the full report (per-batch counters included) as JSON here.
    #[arg(long)]
    pub report: Option<PathBuf>,
}

/// The data-path flags `ginex epoch` and `ginex train` share.
#[derive(Debug, Args)]
pub struct DataArgs {
    /// The store.
    pub store: PathBuf,
    /// Feature-cache policy: ginex, degree, presc, lru, mmap, none.
    #[arg(long, default_value = "ginex", value_parser = crate::args::policy)]
    pub policy: Policy,
    /// Feature-cache size (rows = bytes / row bytes).
    #[arg(long, default_value = "256MiB", value_parser = crate::args::bytes)]
    pub feature_cache_bytes: u64,
    /// Neighbor-cache size (0 = none); built before the epoch, timed apart.
    #[arg(long, default_value = "0", value_parser = crate::args::bytes)]
    pub neighbor_cache_bytes: u64,
    /// Seeds per batch.
    #[arg(long, default_value_t = 1000)]
    pub batch_size: usize,
    /// Fanouts (-1 = all neighbors).
    #[arg(long, default_value = "10,10,10", value_parser = crate::args::fanouts)]
    pub fanouts: Fanouts,
    /// Batches per superbatch (ginex).
    #[arg(long, default_value_t = 100)]
    pub superbatch: u64,
    /// k of the k-hop approximation (ginex).
    #[arg(long, default_value_t = 1)]
    pub changeset_every: usize,
    /// Pre-sampling epochs (presc).
    #[arg(long, default_value_t = 1)]
    pub presc_rounds: u64,
    /// Run seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Sampling workers (default: cores).
    #[arg(long)]
    pub workers: Option<usize>,
    /// Directory for runtime files (default: STORE.runs beside the store).
    #[arg(long)]
    pub run_dir: Option<PathBuf>,
    /// Keep runtime files after each superbatch.
    #[arg(long)]
    pub keep_runs: bool,
    /// Stop each pass after this many batches.
    #[arg(long)]
    pub max_batches: Option<u64>,
}

impl DataArgs {
    /// The epoch configuration for `store` (epoch 0).
    pub fn config(&self, store: &Store) -> Result<EpochConfig> {
        let row_bytes = store.layout().row_bytes() as u64;
        Ok(EpochConfig {
            policy: self.policy,
            feature_cache_rows: (self.feature_cache_bytes / row_bytes).min(store.num_nodes())
                as usize,
            neighbor_cache_bytes: self.neighbor_cache_bytes,
            batch_size: self.batch_size,
            fanouts: self.fanouts.clone(),
            superbatch: self.superbatch,
            changeset_every: self.changeset_every,
            seed: self.seed,
            epoch: 0,
            presc_rounds: self.presc_rounds,
            workers: self.workers.unwrap_or_else(|| {
                std::thread::available_parallelism()
                    .map(|n| n.get())
                    .unwrap_or(1)
            }),
            run_dir: self
                .run_dir
                .clone()
                .unwrap_or_else(|| self.store.with_extension("runs")),
            keep_runs: self.keep_runs,
            max_batches: self.max_batches,
            seed_nodes: None,
        })
    }
}

/// The report's JSON: parameters, machine, store, counters, stage times.
pub fn report_json(store: &Store, config: &EpochConfig, r: &EpochReport) -> serde_json::Value {
    let mut v = r.to_json();
    v["policy"] = json!(config.policy.name());
    v["parameters"] = json!({
        "feature_cache_rows": config.feature_cache_rows, "neighbor_cache_bytes": config.neighbor_cache_bytes,
        "batch_size": config.batch_size, "fanouts": config.fanouts, "superbatch": config.superbatch,
        "changeset_every": config.changeset_every, "seed": config.seed, "epoch": config.epoch,
        "presc_rounds": config.presc_rounds, "workers": config.workers,
    });
    v["store"] = json!({"path": store.dir(), "nodes": store.num_nodes(), "edges": store.num_edges(), "dim": store.feature_dim(), "dtype": store.dtype().name()});
    v["machine"] = json!(machine_description());
    v["peak_rss_bytes"] = json!(peak_rss_bytes());
    v
}

/// Runs `ginex epoch`: the human table goes to stderr, a summary line to `out`.
pub fn run(args: &EpochArgs, out: &mut dyn Write) -> Result<()> {
    let store = Store::open(&args.data.store)?;
    let mut config = args.data.config(&store)?;
    config.epoch = args.epoch;
    let r = run_epoch(&store, &config, &mut |_| Ok(()))?;
    let v = report_json(&store, &config, &r);
    if let Some(path) = &args.report {
        std::fs::write(path, serde_json::to_vec_pretty(&v).unwrap_or_default())
            .map_err(|e| Error::io("write", path, e))?;
    }
    let s = |d: std::time::Duration| d.as_secs_f64();
    eprintln!(
        "epoch {} of {} with policy {} ({} feature-cache rows)",
        config.epoch,
        store.dir().display(),
        config.policy.name(),
        config.feature_cache_rows
    );
    eprintln!("  {:<16} {:>9}", "stage", "seconds");
    for (name, d) in [
        ("sample", r.sample),
        ("changeset", r.changeset),
        ("load runs", r.load_runs),
        ("cache init", r.cache_init),
        ("gather", r.gather),
        ("cache update", r.cache_update),
        ("total", r.total()),
    ] {
        eprintln!("  {name:<16} {:>9.3}", s(d));
    }
    eprintln!(
        "  batches {}, hits {}, misses {}, miss ratio {:.4}, pages read {}, MB read {:.1}",
        r.batches.len(),
        r.hits(),
        r.misses(),
        r.miss_ratio(),
        r.pages_read,
        r.bytes_read as f64 / 1e6
    );
    writeln!(
        out,
        "{}",
        json!({"policy": config.policy.name(), "batches": r.batches.len(), "hits": r.hits(), "misses": r.misses(), "miss_ratio": r.miss_ratio(), "seconds": s(r.total())})
    )
    .map_err(|e| Error::io("write", "<stdout>", e))
}
