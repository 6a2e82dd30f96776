//! `ginex bench curves`: the policy lab. Samples a trace once (or reads
//! one), replays it through every policy at every cache size with no
//! feature I/O (`ginex::internals::exec::curves`), and prints a miss-ratio table on
//! stderr, a JSON document on stdout (`--json`) and an SVG plot.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use serde::Serialize;

use crate::args::Fanouts;
use crate::machine::machine_description;
use crate::report::sorted_json;
use crate::svg::{line_chart, Series};
use ginex::internals::cache::belady::{PageGroups, ReusePrior};
use ginex::internals::error::{Error, Result};
use ginex::internals::exec::config::FirstSuperbatch;
use ginex::internals::exec::curves::{
    curves, distinct_ids, offsets_path, sample_trace, CurvePoint, CurvePolicy, ReplayConfig,
    StaticRanks, Trace, TraceSpec,
};
use ginex::internals::exec::page_floor::{page_floor, PageFloor};
use ginex::internals::sample::source::InMemoryTopology;
use ginex::internals::store::Store;

/// Arguments of `ginex bench curves`.
#[derive(Debug, Args)]
pub struct CurvesBenchArgs {
    /// The store.
    pub store: PathBuf,
    /// Cache sizes as fractions of the rows.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "0.01,0.02,0.05,0.1,0.2,0.3,0.5"
    )]
    pub sizes: Vec<f64>,
    /// Policies: ginex (exact Belady), ginex-kK (k-hop), or any other of
    /// `ginex epoch --policy` that keeps a feature cache (not mmap, none).
    #[arg(long, value_delimiter = ',', default_value = default_policies())]
    pub policies: Vec<String>,
    /// Seeds per batch.
    #[arg(long, default_value_t = 1000)]
    pub batch_size: usize,
    /// Fanouts, as `ginex epoch --fanouts` takes them (10,10,10, or per
    /// relation on a typed store: cites=10:5,writes=5:5).
    #[arg(long, default_value = "10,10,10", value_parser = crate::args::fanouts, allow_hyphen_values = true)]
    pub fanouts: Fanouts,
    /// Run seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// First epoch of the trace.
    #[arg(long, default_value_t = 0)]
    pub epoch: u64,
    /// Epochs in the trace (replayed as one continuous run).
    #[arg(long, default_value_t = 1)]
    pub epochs: u64,
    /// Stop the trace after this many batches.
    #[arg(long)]
    pub batches: Option<u64>,
    /// Batches per superbatch for ginex (0 = the whole trace: the exact
    /// Belady optimum; `ginex epoch` uses 100).
    #[arg(long, default_value_t = 0)]
    pub superbatch: usize,
    /// Where ginex's superbatches start, as `ginex epoch
    /// --first-superbatch`: short (16 batches, doubling up to
    /// --superbatch) or full. Nothing changes under --superbatch 0.
    #[arg(long, default_value = "short", value_parser = crate::args::first_superbatch)]
    pub first_superbatch: FirstSuperbatch,
    /// Replay ginex without the out-degree reuse prior (superbatch-local
    /// Belady, as `ginex epoch --no-reuse-prior`).
    #[arg(long)]
    pub no_reuse_prior: bool,
    /// Replay ginex admitting rows only, without page companions (as
    /// `ginex epoch --no-page-companions`).
    #[arg(long)]
    pub no_page_companions: bool,
    /// Pre-sampling epochs of presc.
    #[arg(long, default_value_t = 1)]
    pub presc_rounds: u64,
    /// Sampling and replay threads (default: every core).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Write the trace: ids to FILE.npy, batch offsets to FILE.offsets.npy.
    #[arg(long, value_name = "FILE.npy")]
    pub trace_out: Option<PathBuf>,
    /// Replay this trace (FILE.npy + FILE.offsets.npy) instead of sampling.
    #[arg(long, value_name = "FILE.npy", conflicts_with = "trace_out")]
    pub trace_in: Option<PathBuf>,
    /// Where to write the SVG plot.
    #[arg(long, default_value = "curves.svg")]
    pub plot: PathBuf,
    /// A JSON document on stdout (the table still goes to stderr).
    #[arg(long)]
    pub json: bool,
}

/// The lab's line-up ([`CurvePolicy::DEFAULT`]) as `--policies` takes it.
fn default_policies() -> &'static str {
    static NAMES: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        let names: Vec<String> = CurvePolicy::DEFAULT.iter().map(|p| p.name()).collect();
        names.join(",")
    });
    NAMES.as_str()
}

/// `ginex bench curves`: the table goes to stderr.
pub fn run_curves_bench(args: &CurvesBenchArgs, out: &mut dyn Write) -> Result<()> {
    run_curves_bench_to(args, out, &mut std::io::stderr())
}

/// `ginex bench curves` with the table written to `table`: plan, run,
/// report.
pub fn run_curves_bench_to(
    args: &CurvesBenchArgs,
    out: &mut dyn Write,
    table: &mut dyn Write,
) -> Result<()> {
    let plan = CurvesPlan::of(args)?;
    let run = CurvesRun::replay(args, &plan)?;
    run.report(args, &plan, out, table)
}

/// What `ginex bench curves` measures: the store, the policies, the trace
/// to sample.
struct CurvesPlan {
    started: Instant,
    store: Store,
    policies: Vec<CurvePolicy>,
    threads: usize,
    spec: TraceSpec,
}

impl CurvesPlan {
    /// Opens the store and checks the arguments.
    fn of(args: &CurvesBenchArgs) -> Result<Self> {
        let started = Instant::now();
        let store = Store::open(&args.store)?;
        let policies: Vec<CurvePolicy> = args
            .policies
            .iter()
            .map(|p| CurvePolicy::parse(p))
            .collect::<Result<_>>()?;
        if let Some(f) = args.sizes.iter().find(|f| !(0.0..=1.0).contains(*f)) {
            return Err(Error::invalid_argument(format!(
                "--sizes: {f} is not a fraction of the rows in [0, 1]"
            )));
        }
        let threads = args.threads.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        });
        let spec = TraceSpec {
            batch_size: args.batch_size,
            fanouts: args.fanouts.clone(),
            seed: args.seed,
            epoch: args.epoch,
            epochs: args.epochs.max(1),
            max_batches: args.batches,
            workers: threads,
        };
        Ok(CurvesPlan {
            started,
            store,
            policies,
            threads,
            spec,
        })
    }
}

/// What `ginex bench curves` measured: the trace, every policy's point at
/// every size, the page floors, and the time each step took.
struct CurvesRun {
    trace: Trace,
    source: String,
    trace_secs: f64,
    ranks_secs: f64,
    replay_secs: f64,
    config: ReplayConfig,
    points: Vec<CurvePoint>,
    distinct: u64,
    floors: Vec<(f64, u64, PageFloor)>,
}

impl CurvesRun {
    /// Samples (or reads) the trace, computes the static selections and
    /// replays the trace through every policy at every size.
    fn replay(args: &CurvesBenchArgs, plan: &CurvesPlan) -> Result<Self> {
        let (store, policies, spec) = (&plan.store, &plan.policies, &plan.spec);
        let needs_topo = args.trace_in.is_none()
            || policies.contains(&CurvePolicy::Degree)
            || policies.contains(&CurvePolicy::Presc);
        let topo = if needs_topo {
            Some(InMemoryTopology::load(store)?)
        } else {
            None
        };

        let started = Instant::now();
        let (trace, source) = match (&args.trace_in, &topo) {
            (Some(path), _) => {
                let t = Trace::read_npy(path)?;
                t.validate(store.num_nodes(), path)?;
                (t, format!("read from {}", path.display()))
            }
            (None, Some(topo)) => (
                sample_trace(store, topo, spec)?,
                format!(
                    "sampled: epochs {}..{} of {} seeds per batch, fanouts {}, seed {}, {} threads",
                    spec.epoch,
                    spec.epoch + spec.epochs,
                    spec.batch_size,
                    crate::args::show_fanouts(&spec.fanouts),
                    spec.seed,
                    plan.threads
                ),
            ),
            (None, None) => return Err(Error::internal("no topology")),
        };
        let trace_secs = started.elapsed().as_secs_f64();
        if let Some(path) = &args.trace_out {
            trace.write_npy(path)?;
        }

        let started = Instant::now();
        let max_rows = args
            .sizes
            .iter()
            .map(|f| (store.num_nodes() as f64 * f) as usize)
            .max()
            .unwrap_or(0);
        let ranks = match &topo {
            Some(topo) => {
                StaticRanks::compute(store, topo, spec, args.presc_rounds, max_rows, policies)?
            }
            None => StaticRanks::default(),
        };
        drop(topo);
        let ranks_secs = started.elapsed().as_secs_f64();

        let uses_ginex = policies
            .iter()
            .any(|p| matches!(p, CurvePolicy::Ginex { .. }));
        let prior = if uses_ginex && !args.no_reuse_prior {
            ReusePrior::of_store(store)?
        } else {
            ReusePrior::none()
        };
        let config = ReplayConfig {
            num_nodes: store.num_nodes(),
            superbatch: args.superbatch,
            first_superbatch: args.first_superbatch,
            prior,
            page_companions: PageGroups::of_sections(store.feature_sections())
                .filter(|_| !args.no_page_companions),
        };
        let started = Instant::now();
        let points = curves(&trace, policies, &args.sizes, &config, &ranks, plan.threads)?;
        let replay_secs = started.elapsed().as_secs_f64();
        let distinct = distinct_ids(&trace, store.num_nodes());
        let floors = page_floors(store, &trace, &args.sizes);
        Ok(CurvesRun {
            trace,
            source,
            trace_secs,
            ranks_secs,
            replay_secs,
            config,
            points,
            distinct,
            floors,
        })
    }

    /// Belady's (ginex every batch) miss ratio at `fraction`, if replayed.
    fn belady(&self, fraction: f64) -> Option<f64> {
        self.points
            .iter()
            .find(|p| p.policy == CurvePolicy::Ginex { every: 1 } && p.fraction == fraction)
            .map(|p| p.miss_ratio)
    }

    /// The table on `table`, the plot, and with `--json` the document on
    /// `out`.
    fn report(
        &self,
        args: &CurvesBenchArgs,
        plan: &CurvesPlan,
        out: &mut dyn Write,
        table: &mut dyn Write,
    ) -> Result<()> {
        let w = |e: std::io::Error| Error::io("write", "<stderr>", e);
        self.write_table(args, plan, table)?;
        let series: Vec<Series> = plan
            .policies
            .iter()
            .map(|p| Series {
                name: p.name(),
                points: self
                    .points
                    .iter()
                    .filter(|q| q.policy == *p)
                    .map(|q| (q.fraction, q.miss_ratio))
                    .collect(),
            })
            .collect();
        crate::report::write_report(
            &args.plot,
            line_chart(
                &series,
                "feature cache size (% of rows)",
                "miss ratio (init rows counted)",
                None,
            ),
        )?;
        writeln!(table, "  plot: {}", args.plot.display()).map_err(w)?;

        if args.json {
            let v = self.json(args, plan);
            writeln!(out, "{v}").map_err(|e| Error::io("write", "<stdout>", e))?;
        }
        Ok(())
    }

    /// The table: header lines, miss ratios, page bounds, ratios to
    /// Belady.
    fn write_table(
        &self,
        args: &CurvesBenchArgs,
        plan: &CurvesPlan,
        table: &mut dyn Write,
    ) -> Result<()> {
        let (store, policies, threads) = (&plan.store, &plan.policies, plan.threads);
        let (trace, points, config, distinct) =
            (&self.trace, &self.points, &self.config, self.distinct);
        let (source, trace_secs, ranks_secs, replay_secs) = (
            &self.source,
            self.trace_secs,
            self.ranks_secs,
            self.replay_secs,
        );
        let w = |e: std::io::Error| Error::io("write", "<stderr>", e);
        writeln!(table, "bench curves: {}", args.store.display()).map_err(w)?;
        writeln!(table, "  machine: {}", machine_description()).map_err(w)?;
        writeln!(
            table,
            "  dataset: {} nodes, {} edges, dim {} {}",
            store.num_nodes(),
            store.num_edges(),
            store.feature_dim(),
            store.dtype().name()
        )
        .map_err(w)?;
        writeln!(
            table,
            "  trace: {} batches, {} accesses, {} distinct ids ({:.1}% of nodes); {source} in {trace_secs:.2} s{}",
            trace.num_batches(),
            trace.accesses(),
            distinct,
            100.0 * distinct as f64 / store.num_nodes().max(1) as f64,
            args.trace_out.as_ref().map_or(String::new(), |p| format!(
                "; written to {} + {}",
                p.display(),
                offsets_path(p).display()
            ))
        )
        .map_err(w)?;
        writeln!(
            table,
            "  replay: {} policies x {} sizes in {replay_secs:.2} s on {threads} threads ({:.0} M accesses/s replayed); static selections {ranks_secs:.2} s; ginex superbatch {}, reuse prior {}",
            policies.len(),
            args.sizes.len(),
            (trace.accesses() as f64 * points.len() as f64) / replay_secs.max(1e-9) / 1e6,
            if args.superbatch == 0 { "= whole trace".to_string() } else { format!("{} batches (first {})", args.superbatch, args.first_superbatch.name()) },
            if config.prior.is_some() { "out-degree" } else { "none" }
        )
        .map_err(w)?;
        let header: String = args
            .sizes
            .iter()
            .map(|f| format!(" {:>8}", format!("{}%", f * 100.0)))
            .collect();
        let names: Vec<String> = policies.iter().map(|p| p.name()).collect();
        let row = |p: CurvePolicy, cell: &dyn Fn(&CurvePoint) -> String| -> String {
            args.sizes
                .iter()
                .map(|&f| {
                    let c = points
                        .iter()
                        .find(|q| q.policy == p && q.fraction == f)
                        .map_or("-".to_string(), cell);
                    format!(" {c:>8}")
                })
                .collect()
        };
        writeln!(table, "  miss ratio (init rows counted as misses):").map_err(w)?;
        writeln!(table, "  {:<10}{header}", "policy").map_err(w)?;
        for (p, name) in policies.iter().zip(&names) {
            writeln!(
                table,
                "  {name:<10}{}",
                row(*p, &|q| format!("{:.4}", q.miss_ratio))
            )
            .map_err(w)?;
        }
        self.write_page_floors(table)?;
        if policies.contains(&CurvePolicy::Ginex { every: 1 }) {
            writeln!(
                table,
                "  miss ratio / ginex's ({}):",
                if config.page_companions.is_some() {
                    "Belady with page companions, as ginex epoch runs it"
                } else {
                    "exact Belady"
                }
            )
            .map_err(w)?;
            writeln!(table, "  {:<10}{header}", "policy").map_err(w)?;
            for (p, name) in policies.iter().zip(&names) {
                writeln!(
                    table,
                    "  {name:<10}{}",
                    row(*p, &|q| match self.belady(q.fraction) {
                        Some(b) if b > 0.0 => format!("{:.2}x", q.miss_ratio / b),
                        _ => "-".to_string(),
                    })
                )
                .map_err(w)?;
            }
        }
        Ok(())
    }

    /// The table's page lines: the row-cache bound and the page-cache
    /// optimum at each size.
    fn write_page_floors(&self, table: &mut dyn Write) -> Result<()> {
        let (floors, w) = (&self.floors, |e| Error::io("write", "<stderr>", e));
        writeln!(
            table,
            "  pages: the row-cache bound (no cache of this many rows reads fewer) and the page-cache optimum at the same bytes (a row cache can read fewer); {} pages touched by the batches, {} distinct:",
            floors.first().map_or(0, |f| f.2.pages_needed),
            floors.first().map_or(0, |f| f.2.distinct_pages)
        )
        .map_err(w)?;
        for (name, figure) in [
            (
                "bound",
                (|f: &PageFloor| f.row_bound) as fn(&PageFloor) -> u64,
            ),
            ("page opt", |f: &PageFloor| f.floor),
        ] {
            writeln!(
                table,
                "  {:<10}{}",
                name,
                floors
                    .iter()
                    .map(|(_, _, f)| format!(" {:>8}", figure(f)))
                    .collect::<String>()
            )
            .map_err(w)?;
        }
        Ok(())
    }

    /// The `--json` document.
    fn json(&self, args: &CurvesBenchArgs, plan: &CurvesPlan) -> serde_json::Value {
        let (store, trace, config) = (&plan.store, &self.trace, &self.config);
        sorted_json(&CurvesDoc {
            store: args.store.display().to_string(),
            machine: machine_description(),
            nodes: store.num_nodes(),
            trace: TraceDoc {
                source: &self.source,
                batches: trace.num_batches(),
                accesses: trace.accesses(),
                distinct_ids: self.distinct,
            },
            superbatch: args.superbatch,
            first_superbatch: args.first_superbatch,
            reuse_prior: config.prior.is_some(),
            page_companions: config.page_companions.is_some(),
            page_floor: self
                .floors
                .iter()
                .map(|(f, rows, p)| FloorDoc {
                    cache_fraction: *f,
                    cache_rows: *rows,
                    capacity_pages: p.capacity_pages,
                    pages_needed: p.pages_needed,
                    distinct_pages: p.distinct_pages,
                    floor: p.floor,
                    row_bound_capacity_pages: p.row_bound_capacity_pages,
                    row_bound: p.row_bound,
                })
                .collect(),
            threads: plan.threads,
            seconds: SecondsDoc {
                trace: self.trace_secs,
                static_selection: self.ranks_secs,
                replay: self.replay_secs,
                total: plan.started.elapsed().as_secs_f64(),
            },
            points: self
                .points
                .iter()
                .map(|p| PointDoc {
                    policy: p.policy.name(),
                    cache_fraction: p.fraction,
                    cache_rows: p.capacity,
                    init_misses: p.init_misses,
                    misses: p.misses,
                    miss_ratio: p.miss_ratio,
                    vs_belady: self
                        .belady(p.fraction)
                        .filter(|b| *b > 0.0)
                        .map(|b| p.miss_ratio / b),
                    seconds: p.seconds,
                })
                .collect(),
        })
    }
}

/// The page floor at each size: what an offline cache of whole pages with
/// the same bytes must read (rows are not pages: see
/// `ginex::internals::exec::page_floor`).
fn page_floors(store: &Store, trace: &Trace, sizes: &[f64]) -> Vec<(f64, u64, PageFloor)> {
    let layout = store.layout();
    sizes
        .iter()
        .map(|&f| {
            let rows = (store.num_nodes() as f64 * f) as u64;
            (
                f,
                rows,
                page_floor(
                    trace,
                    store.feature_sections(),
                    rows,
                    rows * layout.row_bytes() as u64,
                ),
            )
        })
        .collect()
}

/// The `--json` document of `ginex bench curves`.
#[derive(Serialize)]
struct CurvesDoc<'a> {
    store: String,
    machine: String,
    nodes: u64,
    trace: TraceDoc<'a>,
    superbatch: usize,
    first_superbatch: FirstSuperbatch,
    reuse_prior: bool,
    page_companions: bool,
    page_floor: Vec<FloorDoc>,
    threads: usize,
    seconds: SecondsDoc,
    points: Vec<PointDoc>,
}

/// Where the replayed trace came from and its size.
#[derive(Serialize)]
struct TraceDoc<'a> {
    source: &'a str,
    batches: usize,
    accesses: u64,
    distinct_ids: u64,
}

/// The page bounds at one cache size: the row-cache bound and the
/// page-cache optimum at the same bytes (`floor`; not a bound for row
/// caches).
#[derive(Serialize)]
struct FloorDoc {
    cache_fraction: f64,
    cache_rows: u64,
    capacity_pages: u64,
    pages_needed: u64,
    distinct_pages: u64,
    floor: u64,
    row_bound_capacity_pages: u64,
    row_bound: u64,
}

/// Where the bench's time went.
#[derive(Serialize)]
struct SecondsDoc {
    trace: f64,
    static_selection: f64,
    replay: f64,
    total: f64,
}

/// One policy at one cache size.
#[derive(Serialize)]
struct PointDoc {
    policy: String,
    cache_fraction: f64,
    cache_rows: usize,
    init_misses: u64,
    misses: u64,
    miss_ratio: f64,
    vs_belady: Option<f64>,
    seconds: f64,
}
