//! `ginex bench outofcore`: every feature-cache policy runs a whole epoch
//! (or one training epoch with `--train`) as its own child process inside a
//! memory cgroup of M bytes, page cache included and dropped before each
//! run; the table reports process wall time, ratios to ginex, misses and
//! bytes read, the cgroup's peak and OOM kills, with the stage breakdown the
//! child's own report gives.
//!
//! The orchestration (`run_outofcore_bench`) spawns and measures; everything
//! it prints or writes is assembled by the pure functions of
//! [`super::outofcore_report`], which its unit tests check.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use clap::Args;
use serde::Serialize;
use serde_json::Value;

use super::outofcore_report::{
    bar_plot, baseline, floor_cost_seconds, io_seconds, metrics_from_report, opt, page_floor_table,
    stage_table, summarize, summary_json, sweep_plots, sweep_table, table, Exit, PolicySummary,
    RunRecord, SweepPoint,
};
use crate::cgroup::MemoryCgroup;
use crate::machine::{drop_caches, load_average, machine_description};
use crate::report::sorted_json;
use ginex::internals::cache::Policy;
use ginex::internals::error::{Error, Result};
use ginex::internals::exec::curves::{sample_link_trace, sample_trace, TraceSpec};
use ginex::internals::exec::page_floor::{page_floor, PageFloor};
use ginex::internals::sample::link::LinkTask;
use ginex::internals::sample::source::InMemoryTopology;
use ginex::internals::size::parse_bytes;
use ginex::internals::store::read_cost::ReadCostModel;
use ginex::internals::store::Store;

/// The policies a `--train` benchmark compares by default (an epoch
/// benchmark compares every policy, `Policy::ALL`).
pub const TRAIN_POLICIES: &str = "ginex,mmap";

/// Arguments of `ginex bench outofcore`.
///
/// Example: ginex bench outofcore STORE --memory 3GiB --rounds 2 --json ooc.json --plot ooc.svg -- --fanouts 10,10,10
#[derive(Debug, Clone, Args)]
pub struct OutOfCoreBenchArgs {
    /// The store.
    pub store: PathBuf,
    /// Memory cap of every run's cgroup, page cache included (e.g. 3GiB).
    #[arg(long, required_unless_present = "ratios", conflicts_with = "ratios")]
    pub memory: Option<String>,
    /// Instead of one --memory: one cap per ratio, the store's feature
    /// bytes over the ratio (2,3,5,8: features 2x … 8x the cap), every
    /// policy at each; prints wall time and pages against the page floor
    /// per ratio, and with --plot draws both against the ratio
    /// (PLOT and PLOT-pages.svg).
    #[arg(long, value_delimiter = ',')]
    pub ratios: Option<Vec<f64>>,
    /// Policies to compare [default: every policy of `ginex epoch --policy`,
    /// in its order; with --train: ginex,mmap]; `POLICY@SAMPLER` runs the policy with
    /// that `--sampler` (ginex,ginex@labor-*: neighbor against LABOR
    /// sampling in one invocation).
    #[arg(long, value_delimiter = ',')]
    pub policies: Option<Vec<String>>,
    /// Rounds; each round runs every policy once (ABAB order).
    #[arg(long, default_value_t = 1)]
    pub rounds: u32,
    /// Write every run and the summary as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write an SVG bar plot of wall time per policy here.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Run `ginex train STORE --epochs 1` instead of `ginex epoch` and
    /// report seeds/s (needs a binary built with the `train` feature).
    #[arg(long)]
    pub train: bool,
    /// The children's task: `link` runs link-prediction epochs (link
    /// batches with --neg negatives per positive edge), the same as
    /// `-- --task link`.
    #[arg(long, value_parser = ["node", "link"])]
    pub task: Option<String>,
    /// Negatives per positive edge of --task link (as `-- --neg K`).
    #[arg(long)]
    pub neg: Option<usize>,
    /// Extra arguments for every child (`ginex epoch` / `ginex train`),
    /// after `--`.
    #[arg(last = true)]
    pub extra: Vec<String>,
}

/// A `--policies` entry's policy and its sampler (`ginex@labor-*`).
pub fn policy_and_sampler(entry: &str) -> (&str, Option<&str>) {
    match entry.split_once('@') {
        Some((p, s)) => (p.trim(), Some(s.trim())),
        None => (entry.trim(), None),
    }
}

/// The rounds in run order: round 1 runs every policy, then round 2, …
/// (ABAB, so slow drifts of the machine spread over all policies).
pub fn run_order(policies: &[String], rounds: u32) -> Vec<(u32, String)> {
    (1..=rounds)
        .flat_map(|r| policies.iter().map(move |p| (r, p.clone())))
        .collect()
}

/// The state letter of a `/proc/PID/stat` text (`Z` = exited, not yet
/// waited for); the command name may hold spaces and parentheses.
pub fn proc_state(stat: &str) -> Option<char> {
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .next()?
        .chars()
        .next()
}

/// Waits for `child` to exit and returns its status, the wall time from
/// `start` to its exit, and `read_bytes` of its `/proc/PID/io`, read while
/// it is a zombie (before it is reaped, so the numbers are final).
fn wait_measured(
    child: &mut std::process::Child,
    start: Instant,
) -> std::io::Result<(std::process::ExitStatus, f64, Option<u64>)> {
    let proc_dir = PathBuf::from(format!("/proc/{}", child.id()));
    loop {
        let state = std::fs::read_to_string(proc_dir.join("stat"))
            .ok()
            .and_then(|s| proc_state(&s));
        match state {
            Some('Z' | 'X') => break,
            Some(_) => {}
            // No /proc: time the plain wait.
            None => return Ok((child.wait()?, start.elapsed().as_secs_f64(), None)),
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let wall = start.elapsed().as_secs_f64();
    let read = std::fs::read_to_string(proc_dir.join("io"))
        .ok()
        .and_then(|t| crate::cgroup::keyed_counter(&t, "read_bytes:"));
    Ok((child.wait()?, wall, read))
}

/// Whether a `--help` text offers `flag` (`--memory`, not `--memory-x`).
pub fn help_has_flag(help: &str, flag: &str) -> bool {
    help.split_whitespace().any(|t| {
        let t = t.trim_end_matches(',');
        t == flag || t.strip_prefix(flag).is_some_and(|r| r.starts_with('='))
    })
}

/// Whether a clap `--help` text lists subcommand `name` under `Commands:`.
pub fn help_has_subcommand(help: &str, name: &str) -> bool {
    help.lines()
        .skip_while(|l| l.trim() != "Commands:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .any(|l| !l.starts_with("   ") && l.split_whitespace().next() == Some(name))
}

/// Whether the argument list sets `flag` (`--flag v` or `--flag=v`).
pub fn sets_flag(args: &[String], flag: &str) -> bool {
    args.iter()
        .any(|a| a == flag || a.strip_prefix(flag).is_some_and(|r| r.starts_with('=')))
}

/// The memory-budget arguments for a child, and a note saying what was
/// done: `--memory M` when the child supports it and the extra arguments
/// do not set it; otherwise explicit cache sizes (feature cache 50 %,
/// neighbor cache 8 % of M) for the ones the extra arguments leave unset.
pub fn budget_args(
    memory: u64,
    memory_text: &str,
    child_supports_memory: bool,
    extra: &[String],
) -> (Vec<String>, String) {
    if sets_flag(extra, "--memory") {
        return (Vec::new(), "--memory as given after --".into());
    }
    if child_supports_memory {
        return (
            vec!["--memory".into(), memory_text.into()],
            format!("passed to the child as --memory {memory_text}"),
        );
    }
    let mut args = Vec::new();
    let mut said = Vec::new();
    for (flag, share) in [("--feature-cache-bytes", 50), ("--neighbor-cache-bytes", 8)] {
        if sets_flag(extra, flag) {
            said.push(format!("{flag} as given after --"));
        } else {
            let bytes = (u128::from(memory) * share / 100) as u64;
            args.push(flag.into());
            args.push(bytes.to_string());
            said.push(format!("{flag} {bytes} ({share} % of M)"));
        }
    }
    (
        args,
        format!(
            "the child has no --memory; passing explicit cache sizes: {}",
            said.join(", ")
        ),
    )
}

/// A directory removed (with everything in it) when dropped.
struct WorkDir(PathBuf);

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn help_text(exe: &Path, args: &[&str]) -> Result<String> {
    let o = Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::io("run", exe, e))?;
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// The last `n` lines of a file (a child's log), indented.
fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| format!("    {l}\n"))
        .collect()
}

/// Features over the memory cap, with enough digits to read on a tiny store.
pub fn times_text(x: f64) -> String {
    if x >= 0.1 {
        format!("{x:.2}x")
    } else {
        format!("{x:.4}x")
    }
}

fn fmt_load() -> String {
    load_average().map_or_else(
        || "unknown".into(),
        |l| format!("{:.2} {:.2} {:.2}", l[0], l[1], l[2]),
    )
}

/// The children's extra arguments: the bench's own `--task` and `--neg`
/// (as `--task T --neg K`), then those after `--`. A flag given in both
/// places, or `--neg` without link epochs, is refused.
pub fn child_extra(
    task: Option<&str>,
    neg: Option<usize>,
    extra: &[String],
) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for (flag, value) in [
        ("--task", task.map(String::from)),
        ("--neg", neg.map(|k| k.to_string())),
    ] {
        if let Some(v) = value {
            if sets_flag(extra, flag) {
                return Err(Error::invalid_argument(format!(
                    "{flag} is given both to the bench and after --: give it once"
                )));
            }
            out.extend([flag.to_string(), v]);
        }
    }
    let link = task == Some("link") || (task.is_none() && sets_flag(extra, "--task"));
    if let (Some(k), false) = (neg, link) {
        return Err(Error::invalid_argument(format!(
            "--neg {k} is for link epochs: add --task link"
        )));
    }
    out.extend(extra.iter().cloned());
    Ok(out)
}

/// `ginex bench outofcore`.
pub fn run_outofcore_bench(
    args: &OutOfCoreBenchArgs,
    out: &mut dyn Write,
    epoch_args: ChildEpochParser,
) -> Result<()> {
    let args = &OutOfCoreBenchArgs {
        extra: child_extra(args.task.as_deref(), args.neg, &args.extra)?,
        task: None,
        neg: None,
        ..args.clone()
    };
    let Some(ratios) = &args.ratios else {
        let label = args.memory.clone().unwrap_or_default();
        let Some(cap) = bench_cap(args, parse_bytes(&label)?, &label, out, epoch_args)? else {
            return Ok(());
        };
        if let Some(path) = &args.json {
            write_json(path, &cap.json)?;
        }
        if let Some(path) = &args.plot {
            crate::report::write_report(path, bar_plot(&cap.summaries, &cap.title, &cap.baseline))?;
            eprintln!("  plot: {}", path.display());
        }
        return Ok(());
    };
    if ratios.is_empty() || ratios.iter().any(|r| !(r.is_finite() && *r > 0.0)) {
        return Err(Error::invalid_argument(format!(
            "--ratios {ratios:?}: every ratio must be a positive number (features over the cap)"
        )));
    }
    let store = Store::open(&args.store)?;
    store.require_rows_are_ids("bench outofcore")?;
    let feature_bytes = store.feature_sections().row_bytes_stored();
    drop(store);
    let (mut points, mut results) = (Vec::new(), Vec::new());
    for &ratio in ratios {
        let memory = (feature_bytes as f64 / ratio) as u64;
        let label = format!("{}MiB", memory >> 20);
        eprintln!("\n== ratio {ratio}: --memory {label} ({memory} bytes) ==");
        let Some(cap) = bench_cap(args, memory, &label, out, epoch_args)? else {
            return Ok(());
        };
        results.push(sorted_json(&SweepCapDoc {
            ratio,
            result: &cap.json,
        }));
        points.push(SweepPoint {
            ratio,
            summaries: cap.summaries,
            bound: cap.floor.map(|(_, f)| f.row_bound),
        });
    }
    eprintln!("\nratio sweep (median wall s; pages / row-cache bound):");
    eprint!("{}", sweep_table(&points));
    if let Some(path) = &args.json {
        let v = sorted_json(&SweepDoc {
            bench: "outofcore",
            ratios,
            caps: &results,
        });
        write_json(path, &v)?;
    }
    if let Some(path) = &args.plot {
        let (walls, pages) = sweep_plots(&points);
        let pages_path = path.with_file_name(format!(
            "{}-pages.svg",
            path.file_stem().unwrap_or_default().to_string_lossy()
        ));
        crate::report::write_report(path, walls)?;
        crate::report::write_report(&pages_path, pages)?;
        eprintln!("  plots: {} {}", path.display(), pages_path.display());
    }
    Ok(())
}

fn write_json(path: &Path, v: &Value) -> Result<()> {
    crate::report::write_report(path, serde_json::to_vec_pretty(v).unwrap_or_default())?;
    eprintln!("  json: {}", path.display());
    Ok(())
}

/// What one cap of the benchmark measured.
struct CapResult {
    summaries: Vec<PolicySummary>,
    baseline: String,
    title: String,
    /// The floor's cache rows and the floor.
    floor: Option<(u64, PageFloor)>,
    json: Value,
}

/// Every policy at one cap of `memory` bytes (`label` as the user wrote
/// it): the runs, the tables on stderr, one JSON line per policy on `out`;
/// None when the benchmark cannot run here (`--train` without training).
fn bench_cap(
    args: &OutOfCoreBenchArgs,
    memory: u64,
    label: &str,
    out: &mut dyn Write,
    epoch_args: ChildEpochParser,
) -> Result<Option<CapResult>> {
    let Some(plan) = CapPlan::of(args, memory, label)? else {
        return Ok(None);
    };
    plan.print_header(args);
    let runs = plan.run(args)?;
    plan.report(args, &runs, out, epoch_args).map(Some)
}

/// One cap's plan: the checked policy list, the child's command and
/// memory budget, the work directory (removed when the plan drops).
struct CapPlan {
    memory: u64,
    label: String,
    policies: Vec<String>,
    store: Store,
    exe: PathBuf,
    /// `epoch` or `train`.
    sub: &'static str,
    budget: Vec<String>,
    budget_note: String,
    work: WorkDir,
    feature_bytes: u64,
    load_start: Option<[f64; 3]>,
    base: String,
}

/// What the runs of one cap measured.
struct CapRuns {
    runs: Vec<RunRecord>,
    /// The cgroups' version and parent, as the report names them.
    cgroup_desc: String,
}

impl CapPlan {
    /// Checks the arguments, opens the store and asks the executable what
    /// it supports; None when `--train` cannot run here.
    fn of(args: &OutOfCoreBenchArgs, memory: u64, label: &str) -> Result<Option<Self>> {
        if args.rounds == 0 {
            return Err(Error::invalid_argument("--rounds must be at least 1"));
        }
        let policies: Vec<String> = match &args.policies {
            Some(p) => p.iter().map(|s| s.trim().to_string()).collect(),
            None if args.train => TRAIN_POLICIES.split(',').map(String::from).collect(),
            None => Policy::ALL.iter().map(|p| p.name().to_string()).collect(),
        };
        if policies.is_empty() {
            return Err(Error::invalid_argument("--policies is empty"));
        }
        for p in &policies {
            let (policy, sampler) = policy_and_sampler(p);
            Policy::parse(policy)?;
            if let Some(s) = sampler {
                ginex::internals::sample::labor::Sampler::parse(s)?;
            }
        }
        if policies.iter().any(|p| policy_and_sampler(p).1.is_some())
            && sets_flag(&args.extra, "--sampler")
        {
            return Err(Error::invalid_argument(
                "--sampler after -- and a POLICY@SAMPLER entry in --policies: give the sampler in one place",
            ));
        }
        let set_by_bench: &[&str] = if args.train {
            &["--policy", "--report", "--epochs"]
        } else {
            &["--policy", "--report"]
        };
        if let Some(f) = set_by_bench.iter().find(|f| sets_flag(&args.extra, f)) {
            return Err(Error::invalid_argument(format!(
                "{f} after -- is set by the benchmark itself; remove it"
            )));
        }
        let store = Store::open(&args.store)?;
        store.require_rows_are_ids("bench outofcore")?;
        let exe =
            std::env::current_exe().map_err(|e| Error::io("locate", "current executable", e))?;
        let sub = if args.train { "train" } else { "epoch" };
        if args.train && !help_has_subcommand(&help_text(&exe, &["--help"])?, "train") {
            eprintln!(
                "bench outofcore --train: skipped: {} was built without the `train` feature (cargo build --features train)",
                exe.display()
            );
            return Ok(None);
        }
        let supports_memory = help_has_flag(&help_text(&exe, &[sub, "--help"])?, "--memory");
        let (budget, budget_note) = budget_args(memory, label, supports_memory, &args.extra);

        let pid = std::process::id();
        let work = WorkDir(args.store.with_extension(format!("bench-outofcore-{pid}")));
        std::fs::create_dir(&work.0).map_err(|e| Error::io("mkdir", &work.0, e))?;
        let feature_bytes = store.feature_sections().row_bytes_stored();
        let load_start = load_average();
        let base = baseline(&policies).unwrap_or("ginex").to_string();
        Ok(Some(CapPlan {
            memory,
            label: label.to_string(),
            policies,
            store,
            exe,
            sub,
            budget,
            budget_note,
            work,
            feature_bytes,
            load_start,
            base,
        }))
    }

    /// The cap's header on stderr: machine, store, parameters, budget.
    fn print_header(&self, args: &OutOfCoreBenchArgs) {
        let (store, memory, sub) = (&self.store, self.memory, self.sub);
        eprintln!("bench outofcore: {}", args.store.display());
        eprintln!(
            "  machine: {}; load average {}",
            machine_description(),
            fmt_load()
        );
        eprintln!(
            "  store: {} nodes, {} edges, dim {} {}, features {:.1} MiB = {} the memory cap",
            store.num_nodes(),
            store.num_edges(),
            store.feature_dim(),
            store.dtype().name(),
            mib(self.feature_bytes),
            times_text(self.feature_bytes as f64 / memory.max(1) as f64)
        );
        eprintln!(
            "  parameters: memory cap {} ({} bytes, page cache included) per run, {} round(s) in ABAB order, policies {}, child `ginex {sub} STORE --policy P{}{}{}`; page cache dropped before each run",
            self.label,
            memory,
            args.rounds,
            self.policies.join(","),
            if args.train { " --epochs 1" } else { "" },
            self.budget.iter().map(|a| format!(" {a}")).collect::<String>(),
            args.extra.iter().map(|a| format!(" {a}")).collect::<String>(),
        );
        eprintln!("  memory budget: {}", self.budget_note);
    }

    /// Every policy, every round, in ABAB order: each a child process in a
    /// fresh memory cgroup after the page cache is dropped.
    fn run(&self, args: &OutOfCoreBenchArgs) -> Result<CapRuns> {
        let pid = std::process::id();
        let mut runs: Vec<RunRecord> = Vec::new();
        let mut cgroup_desc = String::new();
        let order = run_order(&self.policies, args.rounds);
        for (i, (round, policy)) in order.iter().enumerate() {
            let cg = MemoryCgroup::create(&format!("ginex-bench-{pid}-{i}"), self.memory)?;
            if cgroup_desc.is_empty() {
                cgroup_desc = format!("{} ({})", cg.version().name(), cg.dir().display());
                eprintln!(
                    "  cgroup {} per run, limit {} bytes",
                    cgroup_desc, self.memory
                );
            }
            runs.push(self.run_child(args, cg, *round, policy)?);
        }
        Ok(CapRuns { runs, cgroup_desc })
    }

    /// The child's arguments for `policy` in `round`, writing its report
    /// to `report`.
    fn child_args(&self, args: &OutOfCoreBenchArgs, policy: &str, report: &Path) -> Vec<String> {
        let mut child_args: Vec<String> = vec![self.sub.into(), args.store.display().to_string()];
        let (name, sampler) = policy_and_sampler(policy);
        child_args.extend(["--policy".into(), name.to_string()]);
        if let Some(s) = sampler {
            child_args.extend(["--sampler".into(), s.to_string()]);
        }
        child_args.extend(["--report".into(), report.display().to_string()]);
        if args.train {
            child_args.extend(["--epochs".into(), "1".into()]);
            if !sets_flag(&args.extra, "--eval-every") {
                child_args.extend(["--eval-every".into(), "0".into()]);
            }
        }
        if !sets_flag(&args.extra, "--run-dir") {
            child_args.extend([
                "--run-dir".into(),
                self.work.0.join("runs").display().to_string(),
            ]);
        }
        child_args.extend(self.budget.iter().cloned());
        child_args.extend(args.extra.iter().cloned());
        child_args
    }

    /// One child run of `policy` in cgroup `cg`, measured; an error when
    /// it fails other than by the memory cap.
    fn run_child(
        &self,
        args: &OutOfCoreBenchArgs,
        cg: MemoryCgroup,
        round: u32,
        policy: &str,
    ) -> Result<RunRecord> {
        let (exe, work) = (&self.exe, &self.work);
        let file = policy.replace('*', "star").replace('@', "-");
        let report = work.0.join(format!("r{round}-{file}.json"));
        let log = work.0.join(format!("r{round}-{file}.log"));
        let child_args = self.child_args(args, policy, &report);
        let log_file = std::fs::File::create(&log).map_err(|e| Error::io("create", &log, e))?;
        let log_err = log_file
            .try_clone()
            .map_err(|e| Error::io("open", &log, e))?;
        let mut cmd = cg.command(exe, &child_args);
        cmd.stdin(Stdio::null()).stdout(log_file).stderr(log_err);
        drop_caches()?;
        let t = Instant::now();
        let (status, wall_s, disk_read_bytes) = cmd
            .spawn()
            .and_then(|mut child| wait_measured(&mut child, t))
            .map_err(|e| Error::io("run", exe, e))?;
        let exit = Exit::from_status(status);
        let peak_bytes = cg.peak_bytes()?;
        let oom_kills = cg.oom_kills()?;
        drop(cg);
        let metrics = std::fs::read(&report)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .map(|v| metrics_from_report(&v, args.train))
            .unwrap_or_default();
        eprintln!(
            "  round {round} {policy:<7} {wall_s:>9.2} s  {}  disk read {} MB  cgroup peak {} MiB  OOM kills {}",
            exit.describe(),
            disk_read_bytes.map_or_else(|| "-".into(), |b| format!("{:.1}", b as f64 / 1e6)),
            peak_bytes.map_or_else(|| "-".into(), |b| format!("{:.1}", mib(b))),
            opt(oom_kills)
        );
        let killed = oom_kills.unwrap_or(0) > 0 || exit == Exit::Signal(9);
        if exit != Exit::Ok && !killed {
            return Err(Error::io(
                "run",
                exe,
                std::io::Error::other(format!(
                    "`ginex {}` ({policy}, round {round}) failed with {}; its last output:\n{}",
                    child_args.join(" "),
                    exit.describe(),
                    tail(&log, 15)
                )),
            ));
        }
        let _ = std::fs::remove_file(&report);
        Ok(RunRecord {
            round,
            policy: policy.to_string(),
            wall_s,
            exit,
            peak_bytes,
            oom_kills,
            disk_read_bytes,
            metrics,
        })
    }

    /// The cap's tables on stderr, one JSON line per policy on `out`, and
    /// its result (the document, the plot's summaries).
    fn report(
        &self,
        args: &OutOfCoreBenchArgs,
        runs: &CapRuns,
        out: &mut dyn Write,
        epoch_args: ChildEpochParser,
    ) -> Result<CapResult> {
        let summaries = summarize(&runs.runs, &self.policies);
        eprintln!(
            "  per policy, over {} round(s); wall = child process spawn to exit; misses, MB read (gather engine) and RSS from the child's report; disk MB = the child's read_bytes in /proc/PID/io (mmap faults and readahead included); peak = cgroup peak (page cache included):",
            args.rounds
        );
        eprint!("{}", table(&summaries, &self.base, args.train));
        eprintln!("  stage seconds (the child's own report, median):");
        eprint!("{}", stage_table(&summaries));
        let floor = self.page_floor(args, &summaries, epoch_args)?;
        eprintln!("  load average after: {}", fmt_load());
        let w = |e: std::io::Error| Error::io("write", "<stdout>", e);
        for s in &summaries {
            writeln!(out, "{}", summary_json(s)).map_err(w)?;
        }
        let json = self.json(args, runs, &summaries, floor);
        let title = format!(
            "ginex {}, {} nodes, features {} a memory cap of {}",
            self.sub,
            self.store.num_nodes(),
            times_text(self.feature_bytes as f64 / self.memory.max(1) as f64),
            self.label,
        );
        Ok(CapResult {
            summaries,
            baseline: self.base.clone(),
            title,
            floor,
            json,
        })
    }

    /// The page bounds at the largest feature cache any policy planned
    /// under the cap (the most generous, so the lowest bound: one that
    /// holds for every policy), printed; None for `--train` or when no
    /// policy kept a feature cache.
    fn page_floor(
        &self,
        args: &OutOfCoreBenchArgs,
        summaries: &[PolicySummary],
        epoch_args: ChildEpochParser,
    ) -> Result<Option<(u64, PageFloor)>> {
        let floor_rows = summaries.iter().filter_map(|s| s.feature_cache_rows).max();
        let (false, Some(rows)) = (args.train, floor_rows) else {
            return Ok(None);
        };
        let started = Instant::now();
        let cache_bytes = rows * self.store.layout().row_bytes() as u64;
        let f = epoch_page_floor(
            &self.store,
            epoch_args(&args.store, &args.extra)?,
            rows,
            cache_bytes,
        )?;
        eprint!(
            "{}",
            page_floor_table(summaries, &f, &ReadCostModel::default())
        );
        eprintln!(
            "    ({} rows of cache = {} pages; pages the epoch's batches touch {}, distinct {}; computed in {:.1} s, outside the cap)",
            rows,
            f.capacity_pages,
            f.pages_needed,
            f.distinct_pages,
            started.elapsed().as_secs_f64()
        );
        Ok(Some((rows, f)))
    }

    /// The cap's `--json` document.
    fn json(
        &self,
        args: &OutOfCoreBenchArgs,
        runs: &CapRuns,
        summaries: &[PolicySummary],
        floor: Option<(u64, PageFloor)>,
    ) -> Value {
        let (store, feature_bytes) = (&self.store, self.feature_bytes);
        let feature_bytes_over_memory = feature_bytes as f64 / self.memory.max(1) as f64;
        sorted_json(&CapDoc {
            bench: "outofcore",
            machine: machine_description(),
            load_average: LoadDoc {
                start: self.load_start,
                end: load_average(),
            },
            store: StoreDoc {
                path: &args.store,
                nodes: store.num_nodes(),
                edges: store.num_edges(),
                dim: store.feature_dim(),
                dtype: store.dtype().name(),
                feature_bytes,
                feature_bytes_over_memory,
            },
            parameters: ParametersDoc {
                memory_bytes: self.memory,
                memory: &self.label,
                rounds: args.rounds,
                policies: &self.policies,
                mode: self.sub,
                budget_args: &self.budget,
                budget_note: &self.budget_note,
                extra_args: &args.extra,
                cgroup: &runs.cgroup_desc,
                baseline: &self.base,
                page_cache_dropped: true,
            },
            runs: runs.runs.iter().map(RunRecord::to_json).collect(),
            summary: summaries.iter().map(summary_json).collect(),
            page_floor: floor.map(|(rows, f)| FloorDoc {
                cache_rows: rows,
                capacity_pages: f.capacity_pages,
                pages_needed: f.pages_needed,
                distinct_pages: f.distinct_pages,
                floor: f.floor,
                row_bound_capacity_pages: f.row_bound_capacity_pages,
                row_bound: f.row_bound,
                read_cost: ReadCostModel::default().to_arg(),
                row_bound_cost_seconds: floor_cost_seconds(f.row_bound, &ReadCostModel::default()),
                io_seconds: summaries
                    .iter()
                    .map(|s| (s.policy.clone(), io_seconds(s)))
                    .collect(),
            }),
        })
    }
}

/// Bytes in MiB.
fn mib(b: u64) -> f64 {
    b as f64 / (1 << 20) as f64
}

/// What `bench outofcore` needs of the `ginex epoch` command line its
/// children run (`ginex epoch STORE EXTRA…`): its trace (batch size,
/// fanouts, seed, epoch, `--max-batches`) and its link task, if any.
#[derive(Debug, Clone)]
pub struct ChildEpoch {
    /// The batches the children sample.
    pub trace: TraceSpec,
    /// `--task link`'s negatives, if the children train on edges.
    pub link: Option<LinkTask>,
}

/// Parses a child's `ginex epoch STORE EXTRA…` arguments as `ginex epoch`
/// parses them. The CLI owns that parser (`ginex_cli::epoch::child_epoch`)
/// and passes it in: this crate cannot name the CLI's argument types, as
/// the CLI crate depends on it.
pub type ChildEpochParser = fn(store: &Path, extra: &[String]) -> Result<ChildEpoch>;

/// The page floor of the epoch the children run (`ginex epoch STORE
/// EXTRA…`, parsed as they parse it, so the trace has their batch size,
/// fanouts, seed, epoch and `--max-batches`) for a cache of `cache_bytes`.
fn epoch_page_floor(
    store: &Store,
    child: ChildEpoch,
    cache_rows: u64,
    cache_bytes: u64,
) -> Result<PageFloor> {
    let ChildEpoch { trace: spec, link } = child;
    let topo = InMemoryTopology::load(store)?;
    let trace = match link {
        Some(task) => sample_link_trace(store, &topo, &spec, task)?,
        None => sample_trace(store, &topo, &spec)?,
    };
    Ok(page_floor(
        &trace,
        store.feature_sections(),
        cache_rows,
        cache_bytes,
    ))
}

/// The `--json` document of one memory cap of `ginex bench outofcore`.
#[derive(Serialize)]
struct CapDoc<'a> {
    bench: &'static str,
    machine: String,
    load_average: LoadDoc,
    store: StoreDoc<'a>,
    parameters: ParametersDoc<'a>,
    runs: Vec<Value>,
    summary: Vec<Value>,
    page_floor: Option<FloorDoc>,
}

/// The load average when the bench started and ended.
#[derive(Serialize)]
struct LoadDoc {
    start: Option<[f64; 3]>,
    end: Option<[f64; 3]>,
}

/// The benchmarked store.
#[derive(Serialize)]
struct StoreDoc<'a> {
    path: &'a Path,
    nodes: u64,
    edges: u64,
    dim: u32,
    dtype: &'static str,
    feature_bytes: u64,
    feature_bytes_over_memory: f64,
}

/// How the runs were made.
#[derive(Serialize)]
struct ParametersDoc<'a> {
    memory_bytes: u64,
    memory: &'a str,
    rounds: u32,
    policies: &'a [String],
    mode: &'static str,
    budget_args: &'a [String],
    budget_note: &'a str,
    extra_args: &'a [String],
    cgroup: &'a str,
    baseline: &'a str,
    page_cache_dropped: bool,
}

/// The page bounds of the epoch's batches at the cache size of the cap:
/// the row-cache bound (no policy of `cache_rows` rows reads fewer pages)
/// and the page-cache optimum at the same bytes (`floor`, over
/// `capacity_pages` pages; not a bound for row caches).
#[derive(Serialize)]
struct FloorDoc {
    cache_rows: u64,
    capacity_pages: u64,
    pages_needed: u64,
    distinct_pages: u64,
    floor: u64,
    row_bound_capacity_pages: u64,
    row_bound: u64,
    read_cost: String,
    row_bound_cost_seconds: f64,
    io_seconds: std::collections::BTreeMap<String, Option<f64>>,
}

/// One cap of a `--ratios` sweep.
#[derive(Serialize)]
struct SweepCapDoc<'a> {
    ratio: f64,
    result: &'a Value,
}

/// The `--json` document of a `--ratios` sweep.
#[derive(Serialize)]
struct SweepDoc<'a> {
    bench: &'static str,
    ratios: &'a [f64],
    caps: &'a [Value],
}

#[cfg(test)]
mod tests;
