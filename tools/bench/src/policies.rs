//! `ginex bench policies`: miss ratio and data-preparation time of every
//! feature-cache policy at several cache sizes, on the same batches, in one
//! invocation; a table, JSON lines, and an SVG plot of miss ratio vs size.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use serde::Serialize;

use crate::args::Fanouts;
use crate::machine::machine_description;
use crate::report::sorted_json;
use crate::svg::{line_chart, Series};
use ginex::internals::cache::Policy;
use ginex::internals::error::{Error, Result};
use ginex::internals::exec::config::{CacheConfig, GinexOptions, DEFAULT_PRESC_ROUNDS};
use ginex::internals::exec::epoch::{run_epoch, EpochConfig};
use ginex::internals::format::header::FileKind;
use ginex::internals::io::read::drop_from_page_cache;
use ginex::internals::store::Store;

/// Arguments of `ginex bench policies`.
#[derive(Debug, Args)]
pub struct PoliciesBenchArgs {
    /// The store.
    pub store: PathBuf,
    /// Cache sizes as fractions of the rows.
    #[arg(long, value_delimiter = ',', default_value = "0.05,0.1,0.2,0.4")]
    pub sizes: Vec<f64>,
    /// Policies to compare [default: every policy].
    #[arg(long, value_delimiter = ',')]
    pub policies: Vec<String>,
    /// Seeds per batch.
    #[arg(long, default_value_t = 1000)]
    pub batch_size: usize,
    /// Fanouts, as `ginex epoch --fanouts` takes them (10,10,10, or per
    /// relation on a typed store: cites=10:5,writes=5:5).
    #[arg(long, default_value = "10,10,10", value_parser = crate::args::fanouts, allow_hyphen_values = true)]
    pub fanouts: Fanouts,
    /// Batches per run (the first batches of epoch 0).
    #[arg(long, default_value_t = 50)]
    pub batches: u64,
    /// Batches per superbatch (ginex).
    #[arg(long, default_value_t = 50)]
    pub superbatch: u64,
    /// Where to write the SVG plot.
    #[arg(long, default_value = "policies.svg")]
    pub plot: PathBuf,
    /// JSON lines instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// `ginex bench policies`.
pub fn run_policies_bench(args: &PoliciesBenchArgs, out: &mut dyn Write) -> Result<()> {
    let store = Store::open(&args.store)?;
    let policies: Vec<Policy> = if args.policies.is_empty() {
        Policy::ALL.to_vec()
    } else {
        args.policies
            .iter()
            .map(|p| Policy::parse(p))
            .collect::<Result<_>>()?
    };
    let fanouts = args.fanouts.clone();
    let run_dir = args
        .store
        .with_extension(format!("bench-runs-{}", std::process::id()));
    let w = |e: std::io::Error| Error::io("write", "<stdout>", e);
    if !args.json {
        writeln!(out, "bench policies: {}", args.store.display()).map_err(w)?;
        writeln!(out, "  machine: {}", machine_description()).map_err(w)?;
        writeln!(
            out,
            "  dataset: {} nodes, dim {} {}, features {:.1} MB; first {} batches of {} seeds, fanouts {}; superbatch {}; no neighbor cache; page cache dropped before each run",
            store.num_nodes(),
            store.feature_dim(),
            store.dtype().name(),
            store.num_nodes() as f64 * store.layout().row_bytes() as f64 / 1e6,
            args.batches,
            args.batch_size,
            crate::args::show_fanouts(&fanouts),
            args.superbatch
        )
        .map_err(w)?;
        writeln!(
            out,
            "  {:>6} {:<8} {:>11} {:>10} {:>10} {:>12}",
            "cache", "policy", "miss ratio", "seconds", "MB read", "time/ginex"
        )
        .map_err(w)?;
    }
    let mut points: Vec<(Policy, f64, f64)> = Vec::new();
    for &size in &args.sizes {
        let rows = (store.num_nodes() as f64 * size) as usize;
        let mut ginex_secs = None;
        for &policy in &policies {
            let ginex = GinexOptions {
                superbatch: args.superbatch,
                ..GinexOptions::default()
            };
            let config = EpochConfig {
                cache: CacheConfig::new(policy, ginex, DEFAULT_PRESC_ROUNDS),
                feature_cache_rows: rows,
                batch_size: args.batch_size,
                fanouts: fanouts.clone(),
                run_dir: run_dir.clone(),
                max_batches: Some(args.batches),
                ..EpochConfig::default()
            };
            // Every run starts from a cold page cache (mmap depends on it).
            for kind in [FileKind::FeaturePages, FileKind::Indices] {
                drop_from_page_cache(&store.path_of(kind))?;
            }
            let r = run_epoch(&store, &config, &mut |_| Ok(()))?;
            let secs = r.total().as_secs_f64();
            if policy == Policy::Ginex {
                ginex_secs = Some(secs);
            }
            points.push((policy, size, r.miss_ratio()));
            if args.json {
                let v = sorted_json(&PolicyLine {
                    cache_fraction: size,
                    cache_rows: rows,
                    policy: policy.name(),
                    miss_ratio: r.miss_ratio(),
                    seconds: secs,
                    bytes_read: r.bytes_read,
                    hits: r.hits(),
                    misses: r.misses(),
                });
                writeln!(out, "{v}").map_err(w)?;
            } else {
                let ratio =
                    ginex_secs.map_or("-".to_string(), |g| format!("{:.2}x", secs / g.max(1e-9)));
                writeln!(
                    out,
                    "  {:>5.0}% {:<8} {:>11.4} {:>10.2} {:>10.1} {:>12}",
                    size * 100.0,
                    policy.name(),
                    r.miss_ratio(),
                    secs,
                    r.bytes_read as f64 / 1e6,
                    ratio
                )
                .map_err(w)?;
            }
        }
    }
    // Each run removed its own directory; this removes the parent only
    // when it is empty (the runs' RunDir removes it when it created it).
    let _ = std::fs::remove_dir(&run_dir);
    crate::report::write_report(&args.plot, svg_plot(&points, &policies))?;
    if !args.json {
        writeln!(out, "  plot: {}", args.plot.display()).map_err(w)?;
    }
    Ok(())
}

/// Miss ratio (y, 0..1) against cache size (x), one line per policy.
fn svg_plot(points: &[(Policy, f64, f64)], policies: &[Policy]) -> String {
    let series: Vec<Series> = policies
        .iter()
        .map(|p| Series {
            name: p.name().to_string(),
            points: points
                .iter()
                .filter(|q| q.0 == *p)
                .map(|q| (q.1, q.2))
                .collect(),
        })
        .collect();
    line_chart(
        &series,
        "feature cache size (% of rows)",
        "miss ratio",
        Some(1.0),
    )
}

/// A `--json` line of `ginex bench policies`: one policy at one cache size.
#[derive(Serialize)]
struct PolicyLine {
    cache_fraction: f64,
    cache_rows: usize,
    policy: &'static str,
    miss_ratio: f64,
    seconds: f64,
    bytes_read: u64,
    hits: u64,
    misses: u64,
}
