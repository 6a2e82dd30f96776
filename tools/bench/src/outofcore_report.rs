//! What `ginex bench outofcore` prints and writes, as pure functions of
//! the runs: the child's report read into [`Metrics`], one [`RunRecord`]
//! per child, the per-policy [`PolicySummary`], the tables, the JSON and
//! the SVG bar plot. The JSON documents' shapes are in
//! [`outofcore_json`](super::outofcore_json).

use std::collections::BTreeMap;

use serde_json::Value;

use ginex::internals::exec::page_floor::PageFloor;
use ginex::internals::store::read_cost::ReadCostModel;

use super::outofcore_json::{ReportKeys, RunJson};

use crate::svg::{line_chart, policy_color, Anchor, Series, Svg};

/// How a child process ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Exit {
    /// Exit status 0.
    Ok,
    /// A non-zero exit status.
    Code(i32),
    /// Killed by a signal (9 = SIGKILL, what the OOM killer sends).
    Signal(i32),
}

impl Exit {
    /// From a waited-for process's status.
    pub fn from_status(s: std::process::ExitStatus) -> Exit {
        use std::os::unix::process::ExitStatusExt;
        match (s.code(), s.signal()) {
            (Some(0), _) => Exit::Ok,
            (Some(c), _) => Exit::Code(c),
            (None, Some(sig)) => Exit::Signal(sig),
            (None, None) => Exit::Code(-1),
        }
    }

    /// `ok`, `exit 1`, `signal 9`.
    pub fn describe(&self) -> String {
        match self {
            Exit::Ok => "ok".into(),
            Exit::Code(c) => format!("exit {c}"),
            Exit::Signal(s) => format!("signal {s}"),
        }
    }
}

/// What a child's report says about its run (serialized into the
/// benchmark's per-run JSON, its stages as `seconds`, by name).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Metrics {
    /// Feature-cache hits.
    pub hits: Option<u64>,
    /// Feature-cache misses (rows read from disk).
    pub misses: Option<u64>,
    /// The optimum of ginex's schedule (sum over batches), when reported.
    pub optimal_misses: Option<u64>,
    /// Bytes the gather engine read.
    pub bytes_read: Option<u64>,
    /// Feature reads the gather engine issued.
    pub feature_reads: Option<u64>,
    /// Distinct feature pages the gather engine needed (summed over its
    /// gathers: what the page floor is compared with).
    pub pages_read: Option<u64>,
    /// Rows of the feature cache the run planned.
    pub feature_cache_rows: Option<u64>,
    /// Training throughput (`--train`).
    pub seeds_per_s: Option<f64>,
    /// The child's peak RSS (`VmHWM`), when its report gives it.
    pub peak_rss_bytes: Option<u64>,
    /// Stage seconds in the report's order (see [`STAGE_ORDER`]).
    #[serde(rename = "seconds", serialize_with = "stages_by_name")]
    pub stages: Vec<(String, f64)>,
}

/// Stages as a map by name (the last of a repeated name).
fn stages_by_name<S: serde::Serializer>(stages: &[(String, f64)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(stage_map(stages))
}

/// Stages in the order tables show them; unknown stages follow, sorted.
pub const STAGE_ORDER: [&str; 11] = [
    "neighbor_cache_build",
    "sample",
    "reuse_prior",
    "changeset",
    "load_runs",
    "cache_init",
    "gather",
    "cache_update",
    "transfer",
    "compute",
    "total",
];

/// Reads the counters and stage times out of a `ginex epoch --report`
/// JSON, or out of the first epoch of a `ginex train --report` JSON.
/// Missing fields stay `None`, so reports that grow or shrink still parse.
pub fn metrics_from_report(v: &Value, train: bool) -> Metrics {
    let top = ReportKeys::of(v);
    let epoch = if train {
        let first = top.epochs.as_ref().and_then(|e| e.first());
        ReportKeys::of(first.unwrap_or(&Value::Null))
    } else {
        ReportKeys::of(v)
    };
    let (hits, misses) = match &epoch.feature_cache {
        Some(fc) => {
            let fc = ReportKeys::of(fc);
            (fc.hits, fc.misses)
        }
        None => (epoch.hits, epoch.misses),
    };
    // The optimum of ginex's schedule, init reads included (`optimal_total`);
    // reports without it give the per-batch optimum only.
    let optimal_misses = match epoch.optimal_total.or(epoch.optimal_misses) {
        Some(Value::Array(a)) if !a.is_empty() => Some(a.iter().filter_map(Value::as_u64).sum()),
        Some(Value::Number(n)) => n.as_u64(),
        _ => None,
    };
    let mut stages: Vec<(String, f64)> = epoch
        .seconds
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(k, v)| Some((k, v.as_f64()?)))
        .collect();
    stages.sort_by(|a, b| stage_rank(&a.0).cmp(&stage_rank(&b.0)).then(a.0.cmp(&b.0)));
    Metrics {
        hits,
        misses,
        optimal_misses,
        bytes_read: epoch.bytes_read,
        feature_reads: epoch.feature_reads,
        pages_read: epoch.pages_read,
        feature_cache_rows: top
            .parameters
            .and_then(|p| ReportKeys::of(&p).feature_cache_rows),
        seeds_per_s: epoch.seeds_per_s,
        peak_rss_bytes: top.peak_rss_bytes,
        stages,
    }
}

fn stage_rank(name: &str) -> usize {
    STAGE_ORDER
        .iter()
        .position(|s| *s == name)
        .unwrap_or(STAGE_ORDER.len())
}

/// One child process: a policy in a round.
#[derive(Debug, Clone)]
pub struct RunRecord {
    /// Round, from 1.
    pub round: u32,
    /// Policy name.
    pub policy: String,
    /// Process wall time, spawn to exit.
    pub wall_s: f64,
    /// How it ended.
    pub exit: Exit,
    /// The cgroup's peak usage, page cache included.
    pub peak_bytes: Option<u64>,
    /// OOM kills inside the cgroup.
    pub oom_kills: Option<u64>,
    /// Bytes the child read from the block device (`read_bytes` of
    /// `/proc/PID/io`, read while it is a zombie): counts mmap page faults
    /// and readahead, which the report's own counters cannot see.
    pub disk_read_bytes: Option<u64>,
    /// From the child's report (empty when it wrote none).
    pub metrics: Metrics,
}

impl RunRecord {
    /// JSON form ([`RunJson`] as a [`Value`]).
    pub fn to_json(&self) -> Value {
        let m = &self.metrics;
        let doc = RunJson {
            round: self.round,
            policy: &self.policy,
            wall_seconds: self.wall_s,
            exit: self.exit.describe(),
            cgroup_peak_bytes: self.peak_bytes,
            oom_kills: self.oom_kills,
            disk_read_bytes: self.disk_read_bytes,
            metrics: m,
        };
        // Numbers, strings and options: serializing cannot fail (a
        // non-finite time is written as null, as `json!` did).
        serde_json::to_value(doc).unwrap_or_default()
    }
}

/// Stage seconds by name (the last of a repeated name).
fn stage_map(stages: &[(String, f64)]) -> BTreeMap<&str, f64> {
    stages.iter().map(|(k, v)| (k.as_str(), *v)).collect()
}

/// Per-policy summary over its rounds (serialized as the benchmark's
/// per-policy JSON).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct PolicySummary {
    /// Policy name.
    pub policy: String,
    /// Runs, and runs that exited 0.
    pub runs: usize,
    /// Runs that exited 0 (the ones the times and counters come from).
    pub ok_runs: usize,
    /// Wall seconds over successful runs: min, median, max.
    #[serde(
        rename = "wall_seconds",
        serialize_with = "super::outofcore_json::wall_seconds"
    )]
    pub wall: Option<(f64, f64, f64)>,
    /// Median wall time over the baseline's median wall time.
    #[serde(rename = "ratio_to_baseline")]
    pub ratio: Option<f64>,
    /// Median misses.
    pub misses: Option<u64>,
    /// Median optimal misses (ginex).
    pub optimal_misses: Option<u64>,
    /// Median bytes read.
    pub bytes_read: Option<u64>,
    /// Median feature reads issued.
    pub feature_reads: Option<u64>,
    /// Median distinct feature pages needed.
    pub pages_read: Option<u64>,
    /// Median feature-cache rows planned.
    pub feature_cache_rows: Option<u64>,
    /// Median bytes read from the block device by the child process.
    pub disk_read_bytes: Option<u64>,
    /// Highest peak RSS of the child over all runs.
    pub peak_rss_bytes: Option<u64>,
    /// Median seeds/s (`--train`).
    pub seeds_per_s: Option<f64>,
    /// Highest cgroup peak over all runs.
    #[serde(rename = "cgroup_peak_bytes")]
    pub peak_bytes: Option<u64>,
    /// OOM kills over all runs.
    pub oom_kills: u64,
    /// How the runs that failed ended.
    pub failures: Vec<String>,
    /// Median stage seconds.
    #[serde(rename = "seconds", serialize_with = "stages_by_name")]
    pub stages: Vec<(String, f64)>,
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

fn median_u64(v: impl Iterator<Item = Option<u64>>) -> Option<u64> {
    median(v.flatten().map(|x| x as f64).collect()).map(|m| m.round() as u64)
}

/// The baseline of the ratios: ginex when it is compared, else the first
/// policy.
pub fn baseline(policies: &[String]) -> Option<&str> {
    policies
        .iter()
        .find(|p| *p == "ginex")
        .or(policies.first())
        .map(String::as_str)
}

/// Summarises the runs per policy (in `policies` order), with wall-time
/// ratios to the baseline's median.
pub fn summarize(runs: &[RunRecord], policies: &[String]) -> Vec<PolicySummary> {
    let mut out: Vec<PolicySummary> = policies
        .iter()
        .map(|p| {
            let all: Vec<&RunRecord> = runs.iter().filter(|r| &r.policy == p).collect();
            let ok: Vec<&RunRecord> = all.iter().copied().filter(|r| r.exit == Exit::Ok).collect();
            let walls: Vec<f64> = ok.iter().map(|r| r.wall_s).collect();
            let wall = median(walls.clone()).map(|m| {
                (
                    walls.iter().copied().fold(f64::INFINITY, f64::min),
                    m,
                    walls.iter().copied().fold(0.0, f64::max),
                )
            });
            let mut stage_names: Vec<String> = Vec::new();
            for r in &ok {
                for (k, _) in &r.metrics.stages {
                    if !stage_names.contains(k) {
                        stage_names.push(k.clone());
                    }
                }
            }
            let stages = stage_names
                .into_iter()
                .filter_map(|k| {
                    let vals = ok
                        .iter()
                        .filter_map(|r| r.metrics.stages.iter().find(|s| s.0 == k).map(|s| s.1))
                        .collect();
                    Some((k, median(vals)?))
                })
                .collect();
            PolicySummary {
                policy: p.clone(),
                runs: all.len(),
                ok_runs: ok.len(),
                wall,
                ratio: None,
                misses: median_u64(ok.iter().map(|r| r.metrics.misses)),
                optimal_misses: median_u64(ok.iter().map(|r| r.metrics.optimal_misses)),
                bytes_read: median_u64(ok.iter().map(|r| r.metrics.bytes_read)),
                feature_reads: median_u64(ok.iter().map(|r| r.metrics.feature_reads)),
                pages_read: median_u64(ok.iter().map(|r| r.metrics.pages_read)),
                feature_cache_rows: median_u64(ok.iter().map(|r| r.metrics.feature_cache_rows)),
                disk_read_bytes: median_u64(ok.iter().map(|r| r.disk_read_bytes)),
                peak_rss_bytes: all.iter().filter_map(|r| r.metrics.peak_rss_bytes).max(),
                seeds_per_s: median(ok.iter().filter_map(|r| r.metrics.seeds_per_s).collect()),
                peak_bytes: all.iter().filter_map(|r| r.peak_bytes).max(),
                oom_kills: all.iter().filter_map(|r| r.oom_kills).sum(),
                failures: all
                    .iter()
                    .filter(|r| r.exit != Exit::Ok)
                    .map(|r| format!("round {}: {}", r.round, r.exit.describe()))
                    .collect(),
                stages,
            }
        })
        .collect();
    let base = baseline(policies)
        .and_then(|b| out.iter().find(|s| s.policy == b))
        .and_then(|s| s.wall)
        .map(|w| w.1);
    for s in &mut out {
        s.ratio = match (s.wall, base) {
            (Some(w), Some(b)) if b > 0.0 => Some(w.1 / b),
            _ => None,
        };
    }
    out
}

/// `v`, or `-` when absent.
pub fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "-".into(), |v| v.to_string())
}

/// The main table: one row per policy.
pub fn table(summaries: &[PolicySummary], baseline: &str, train: bool) -> String {
    let mib = |b: u64| format!("{:.1}", b as f64 / (1 << 20) as f64);
    let mut s = format!(
        "  {:<8} {:>26} {:>9} {:>12} {:>12} {:>10} {:>10} {:>10} {:>9} {:>9} {:>4}{} {}\n",
        "policy",
        "wall s (min/median/max)",
        format!("x {baseline}"),
        "misses",
        "opt misses",
        "reads",
        "MB read",
        "disk MB",
        "peak MiB",
        "RSS MiB",
        "OOM",
        if train {
            format!(" {:>9}", "seeds/s")
        } else {
            String::new()
        },
        "runs"
    );
    for p in summaries {
        let wall = p.wall.map_or_else(
            || "-".into(),
            |(a, m, b)| format!("{a:.2} / {m:.2} / {b:.2}"),
        );
        let runs = if p.failures.is_empty() {
            format!("{}/{} ok", p.ok_runs, p.runs)
        } else {
            format!("{}/{} ok ({})", p.ok_runs, p.runs, p.failures.join(", "))
        };
        s += &format!(
            "  {:<8} {:>26} {:>9} {:>12} {:>12} {:>10} {:>10} {:>10} {:>9} {:>9} {:>4}{} {}\n",
            p.policy,
            wall,
            p.ratio.map_or_else(|| "-".into(), |r| format!("{r:.2}x")),
            opt(p.misses),
            opt(p.optimal_misses),
            opt(p.feature_reads),
            p.bytes_read
                .map_or_else(|| "-".into(), |b| format!("{:.1}", b as f64 / 1e6)),
            p.disk_read_bytes
                .map_or_else(|| "-".into(), |b| format!("{:.1}", b as f64 / 1e6)),
            p.peak_bytes.map_or_else(|| "-".into(), mib),
            p.peak_rss_bytes.map_or_else(|| "-".into(), mib),
            p.oom_kills,
            if train {
                format!(
                    " {:>9}",
                    p.seeds_per_s
                        .map_or_else(|| "-".into(), |v| format!("{v:.0}"))
                )
            } else {
                String::new()
            },
            runs
        );
    }
    s
}

/// Pages each policy read against the row-cache bound (`f.row_bound`:
/// no row cache of `f.cache_rows` rows reads fewer), one row per policy,
/// with the page-cache optimum at the same bytes (`f.floor`) printed
/// beside it under its own name: a row policy may read fewer pages than
/// that one. A policy that counts no pages (mmap reads through the
/// kernel) shows `-`.
///
/// The last two columns set each policy's I/O time (its `cache_init` and
/// `gather` stages, median) against the bound's cost under the read-cost
/// model `cost`: every bound page one single-page random read.
pub fn page_floor_table(
    summaries: &[PolicySummary],
    f: &PageFloor,
    cost: &ReadCostModel,
) -> String {
    let bound = f.row_bound;
    let bound_s = floor_cost_seconds(bound, cost);
    let mut s = format!(
        "  row-cache bound: {bound} pages (no cache of {} rows reads fewer: the offline optimum of a {}-page cache over the epoch's trace); \
         its cost {bound_s:.2} s at {:.1} µs a page (--read-cost {cost})\n  \
         page-cache optimum at the same bytes: {} pages (a {}-page cache of whole pages; a row cache can read fewer)\n  \
         {:<8} {:>12} {:>12} {:>10} {:>8} {:>13}\n",
        f.cache_rows,
        f.row_bound_capacity_pages,
        cost.read_us(1),
        f.floor,
        f.capacity_pages,
        "policy", "cache rows", "pages", "x bound", "I/O s", "x bound cost"
    );
    for p in summaries {
        let io = io_seconds(p);
        s += &format!(
            "  {:<8} {:>12} {:>12} {:>10} {:>8} {:>13}\n",
            p.policy,
            opt(p.feature_cache_rows),
            opt(p.pages_read.filter(|&n| n > 0)),
            p.pages_read.filter(|&n| n > 0 && bound > 0).map_or_else(
                || "-".into(),
                |n| format!("{:.2}x", n as f64 / bound as f64)
            ),
            io.map_or("-".into(), |t| format!("{t:.2}")),
            io.filter(|_| bound_s > 0.0)
                .map_or("-".into(), |t| format!("{:.2}x", t / bound_s)),
        );
    }
    s
}

/// Seconds `floor` pages cost under `cost`: each page one single-page
/// random read.
pub fn floor_cost_seconds(floor: u64, cost: &ReadCostModel) -> f64 {
    floor as f64 * cost.read_us(1) / 1e6
}

/// A policy's I/O time: its `cache_init` and `gather` stages (median
/// seconds), when it reports them (`mmap` reads through page faults in
/// its gather stage too).
pub fn io_seconds(p: &PolicySummary) -> Option<f64> {
    let stage = |name: &str| p.stages.iter().find(|s| s.0 == name).map(|s| s.1);
    match (stage("cache_init"), stage("gather")) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
    }
}

/// One cap of a ratio sweep: the features-over-memory ratio, the
/// policies' summaries and the row-cache bound there.
#[derive(Debug, Clone)]
pub struct SweepPoint {
    /// Feature bytes over the cap.
    pub ratio: f64,
    /// Every policy at this cap.
    pub summaries: Vec<PolicySummary>,
    /// The row-cache bound at this cap, when computed.
    pub bound: Option<u64>,
}

/// The ratio sweep as a table: a row per policy, a column per ratio, each
/// cell `median wall s  pages/bound` (the row-cache bound).
pub fn sweep_table(points: &[SweepPoint]) -> String {
    let mut policies: Vec<&str> = Vec::new();
    for p in points {
        for s in &p.summaries {
            if !policies.contains(&s.policy.as_str()) {
                policies.push(&s.policy);
            }
        }
    }
    let mut s = format!("  {:<8}", "policy");
    for p in points {
        s += &format!(" {:>20}", format!("{}x: wall, pages/bound", p.ratio));
    }
    s.push('\n');
    for policy in policies {
        s += &format!("  {policy:<8}");
        for p in points {
            let summary = p.summaries.iter().find(|x| x.policy == policy);
            let wall = summary
                .and_then(|x| x.wall)
                .map_or_else(|| "-".into(), |w| format!("{:.2}", w.1));
            let pages = match (
                summary.and_then(|x| x.pages_read).filter(|&n| n > 0),
                p.bound,
            ) {
                (Some(n), Some(f)) if f > 0 => format!("{:.2}x", n as f64 / f as f64),
                _ => "-".into(),
            };
            s += &format!(" {:>20}", format!("{wall} s {pages}"));
        }
        s.push('\n');
    }
    s += &format!("  {:<8}", "bound");
    for p in points {
        s += &format!(" {:>20}", format!("{} pages", opt(p.bound)));
    }
    s.push('\n');
    s
}

/// Two line charts of a ratio sweep: median wall seconds per policy, and
/// millions of pages read per policy with the row-cache bound, against the
/// features-over-memory ratio.
pub fn sweep_plots(points: &[SweepPoint]) -> (String, String) {
    let mut walls: Vec<Series> = Vec::new();
    let mut pages: Vec<Series> = Vec::new();
    let add = |list: &mut Vec<Series>, name: &str, x: f64, y: Option<f64>| {
        let Some(y) = y else { return };
        match list.iter_mut().find(|s| s.name == name) {
            Some(s) => s.points.push((x, y)),
            None => list.push(Series {
                name: name.into(),
                points: vec![(x, y)],
            }),
        }
    };
    for p in points {
        for s in &p.summaries {
            add(&mut walls, &s.policy, p.ratio, s.wall.map(|w| w.1));
            add(
                &mut pages,
                &s.policy,
                p.ratio,
                s.pages_read.filter(|&n| n > 0).map(|n| n as f64 / 1e6),
            );
        }
        add(
            &mut pages,
            "row-cache bound",
            p.ratio,
            p.bound.map(|n| n as f64 / 1e6),
        );
    }
    (
        line_chart(
            &walls,
            "features / memory cap",
            "wall seconds (median)",
            None,
        ),
        line_chart(
            &pages,
            "features / memory cap",
            "feature pages read (millions)",
            None,
        ),
    )
}

/// The children's own stage breakdown (median seconds), one row per policy.
pub fn stage_table(summaries: &[PolicySummary]) -> String {
    let mut names: Vec<&str> = Vec::new();
    for p in summaries {
        for (k, _) in &p.stages {
            if !names.contains(&k.as_str()) {
                names.push(k);
            }
        }
    }
    names.sort_by(|a, b| stage_rank(a).cmp(&stage_rank(b)).then(a.cmp(b)));
    let width = |n: &str| n.len().max(8);
    let mut s = format!("  {:<8}", "policy");
    for n in &names {
        s += &format!(" {:>w$}", n, w = width(n));
    }
    s.push('\n');
    for p in summaries {
        s += &format!("  {:<8}", p.policy);
        for n in &names {
            let v = p.stages.iter().find(|x| x.0 == *n).map(|x| x.1);
            s += &format!(
                " {:>w$}",
                v.map_or_else(|| "-".into(), |v| format!("{v:.3}")),
                w = width(n)
            );
        }
        s.push('\n');
    }
    s
}

/// A bar chart of median wall time per policy, with min–max whiskers and
/// the ratio to the baseline above each bar; policies with no successful
/// run get a cross instead of a bar.
pub fn bar_plot(summaries: &[PolicySummary], title: &str, baseline: &str) -> String {
    let (w, h, m) = (640.0, 400.0, 60.0);
    let top = summaries
        .iter()
        .filter_map(|p| p.wall.map(|x| x.2))
        .fold(0.0f64, f64::max)
        .max(1e-9)
        * 1.15;
    let y = |v: f64| h - m - v / top * (h - 2.0 * m);
    let slot = (w - 2.0 * m) / summaries.len().max(1) as f64;
    let mut s = Svg::new(w, h);
    s.axes(w, h, m);
    s.text(w / 2.0, 24.0, Anchor::Middle, None, title);
    for t in 0..=5 {
        let v = top * f64::from(t) / 5.0;
        s.text(m - 6.0, y(v) + 4.0, Anchor::End, None, &format!("{v:.1}"));
    }
    s.vertical_text(15.0, h / 2.0, "process wall time (s)");
    for (i, p) in summaries.iter().enumerate() {
        let c = policy_color(&p.policy);
        let cx = m + slot * (i as f64 + 0.5);
        let bw = slot * 0.6;
        match p.wall {
            Some((lo, med, hi)) => {
                s.rect(cx - bw / 2.0, y(med), bw, h - m - y(med), c);
                s.line(cx, y(lo), cx, y(hi), "black");
                s.line(cx - 6.0, y(hi), cx + 6.0, y(hi), "black");
                s.line(cx - 6.0, y(lo), cx + 6.0, y(lo), "black");
                let label = p
                    .ratio
                    .map_or_else(|| format!("{med:.1}s"), |r| format!("{r:.2}x {baseline}"));
                s.text(cx, y(hi) - 6.0, Anchor::Middle, None, &label);
            }
            None => {
                s.line(cx - 8.0, h - m - 16.0, cx + 8.0, h - m, c);
                s.line(cx - 8.0, h - m, cx + 8.0, h - m - 16.0, c);
                s.text(cx, h - m - 22.0, Anchor::Middle, Some(c), "failed");
            }
        }
        s.text(cx, h - m + 18.0, Anchor::Middle, None, &p.policy);
    }
    s.finish()
}

/// The summary as JSON (one object per policy): [`PolicySummary`]'s serde form as a
/// [`Value`].
pub fn summary_json(p: &PolicySummary) -> Value {
    // Numbers, strings and options: serializing cannot fail (a non-finite
    // time is written as null, as `json!` did).
    serde_json::to_value(p).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(policy: &str, round: u32, wall_s: f64, exit: Exit, misses: u64) -> RunRecord {
        RunRecord {
            round,
            policy: policy.into(),
            wall_s,
            exit,
            peak_bytes: Some(700 << 20),
            oom_kills: Some(0),
            disk_read_bytes: Some(misses * 4096),
            metrics: Metrics {
                hits: Some(10),
                misses: Some(misses),
                optimal_misses: None,
                bytes_read: Some(misses * 1024),
                feature_reads: Some(misses / 4),
                pages_read: Some(misses / 2),
                feature_cache_rows: Some(1000),
                seeds_per_s: None,
                peak_rss_bytes: Some(100 << 20),
                stages: vec![("sample".into(), wall_s / 2.0), ("total".into(), wall_s)],
            },
        }
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_ratio_sweep_tabulates_and_plots_every_policy_at_every_ratio() {
        let at = |ratio: f64, ginex_wall: f64, floor: u64| SweepPoint {
            ratio,
            summaries: summarize(
                &[
                    record("ginex", 1, ginex_wall, Exit::Ok, 400),
                    record("lru", 1, 2.0 * ginex_wall, Exit::Ok, 800),
                ],
                &names(&["ginex", "lru"]),
            ),
            bound: Some(floor),
        };
        let points = vec![at(2.0, 10.0, 100), at(5.0, 30.0, 200)];
        let t = sweep_table(&points);
        let ginex = t
            .lines()
            .find(|l| l.trim_start().starts_with("ginex"))
            .unwrap();
        // 400 misses -> 200 pages (the test records' pages): 2x the floor
        // of 100, 1x the floor of 200.
        assert!(
            ginex.contains("10.00 s 2.00x") && ginex.contains("30.00 s 1.00x"),
            "{ginex}"
        );
        assert!(t.contains("100 pages") && t.contains("200 pages"), "{t}");
        let (walls, pages) = sweep_plots(&points);
        assert!(
            walls.contains(">ginex<") && walls.contains(">lru<"),
            "{walls}"
        );
        assert!(pages.contains(">row-cache bound<"), "{pages}");
    }

    #[test]
    fn pages_are_read_from_the_report_and_set_against_the_bound() {
        let report = serde_json::json!({"pages_read": 300, "misses": 1,
            "parameters": {"feature_cache_rows": 77}});
        let m = metrics_from_report(&report, false);
        assert_eq!((m.pages_read, m.feature_cache_rows), (Some(300), Some(77)));
        let runs = vec![
            record("ginex", 1, 10.0, Exit::Ok, 400),
            record("ginex", 2, 12.0, Exit::Ok, 600),
            record("lru", 1, 20.0, Exit::Signal(9), 0),
        ];
        let mut summaries = summarize(&runs, &names(&["ginex", "lru"]));
        // The median of 200 and 300 pages.
        assert_eq!(summaries[0].pages_read, Some(250));
        summaries[0].stages = vec![("cache_init".into(), 1.1), ("gather".into(), 2.2)];
        let model = ReadCostModel {
            us_per_read: 9000.0,
            us_per_page: 1000.0,
            us_per_page_sequential: 1.0,
        };
        let bounds = PageFloor {
            cache_rows: 77,
            capacity_pages: 19,
            pages_needed: 900,
            distinct_pages: 500,
            floor: 160,
            row_bound_capacity_pages: 77,
            row_bound: 100,
        };
        let t = page_floor_table(&summaries, &bounds, &model);
        assert!(t.contains("row-cache bound: 100 pages"), "{t}");
        assert!(t.contains("at the same bytes: 160 pages"), "{t}");
        // 100 pages at 10 ms each: 1 s.
        assert!(t.contains("its cost 1.00 s"), "{t}");
        let ginex = t
            .lines()
            .find(|l| l.trim_start().starts_with("ginex"))
            .unwrap();
        let cols: Vec<&str> = ginex.split_whitespace().collect();
        assert_eq!(cols[2..4], ["250", "2.50x"], "{ginex}");
        // The records' stages: cache_init + gather, median over two runs.
        // 1.1 + 2.2 s of I/O against the 1 s of the bound.
        assert_eq!(cols[4..], ["3.30", "3.30x"], "{ginex}");
        // No pages counted (mmap) or no successful run: no ratio.
        let mut mmap = summaries[0].clone();
        mmap.policy = "mmap".into();
        mmap.pages_read = Some(0);
        let t_mmap = page_floor_table(&[mmap], &bounds, &model);
        let row = t_mmap
            .lines()
            .find(|l| l.trim_start().starts_with("mmap"))
            .unwrap();
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cols[2..4], ["-", "-"], "{row}");
        let lru = t
            .lines()
            .find(|l| l.trim_start().starts_with("lru"))
            .unwrap();
        assert!(lru.trim_end().ends_with('-'), "{lru}");
        assert_eq!(summary_json(&summaries[0])["pages_read"], 250);
    }

    #[test]
    fn epoch_and_train_reports_give_their_metrics() {
        let epoch: Value = serde_json::from_str(
            r#"{"hits": 90, "misses": 10, "bytes_read": 40960, "optimal_misses": [3, 4],
                "seconds": {"total": 2.5, "gather": 1.0, "sample": 0.5, "zz_new": 0.1, "neighbor_cache_build": 3.0},
                "per_batch": []}"#,
        )
        .unwrap();
        let m = metrics_from_report(&epoch, false);
        assert_eq!(
            (m.hits, m.misses, m.bytes_read),
            (Some(90), Some(10), Some(40960))
        );
        assert_eq!(m.optimal_misses, Some(7));
        let order: Vec<&str> = m.stages.iter().map(|s| s.0.as_str()).collect();
        assert_eq!(
            order,
            [
                "neighbor_cache_build",
                "sample",
                "gather",
                "total",
                "zz_new"
            ]
        );
        // Policies other than ginex have no optimum.
        let m = metrics_from_report(&serde_json::json!({"optimal_misses": []}), false);
        assert_eq!(m.optimal_misses, None);
        let train: Value = serde_json::from_str(
            r#"{"epochs": [{"seeds_per_s": 1234.5, "feature_cache": {"hits": 5, "misses": 6},
                "seconds": {"compute": 1.0, "transfer": 0.5}}]}"#,
        )
        .unwrap();
        let m = metrics_from_report(&train, true);
        assert_eq!((m.hits, m.misses, m.bytes_read), (Some(5), Some(6), None));
        assert_eq!(m.seeds_per_s, Some(1234.5));
        assert_eq!(m.stages.len(), 2);
        assert_eq!(metrics_from_report(&Value::Null, true), Metrics::default());
    }

    #[test]
    fn summaries_take_medians_ratios_to_ginex_and_count_failures() {
        let mut oom = record("mmap", 2, 99.0, Exit::Signal(9), 0);
        oom.oom_kills = Some(1);
        oom.peak_bytes = Some(800 << 20);
        let runs = vec![
            record("lru", 1, 30.0, Exit::Ok, 500),
            record("ginex", 1, 10.0, Exit::Ok, 100),
            record("mmap", 1, 40.0, Exit::Ok, 900),
            record("lru", 2, 36.0, Exit::Ok, 520),
            record("ginex", 2, 14.0, Exit::Ok, 100),
            oom,
            record("lru", 3, 33.0, Exit::Ok, 510),
            record("ginex", 3, 12.0, Exit::Ok, 100),
        ];
        let s = summarize(&runs, &names(&["lru", "ginex", "mmap", "none"]));
        assert_eq!(s.len(), 4);
        let lru = &s[0];
        assert_eq!(lru.wall, Some((30.0, 33.0, 36.0)));
        assert_eq!(lru.ratio, Some(33.0 / 12.0));
        assert_eq!((lru.misses, lru.bytes_read), (Some(510), Some(510 * 1024)));
        assert_eq!(
            (lru.disk_read_bytes, lru.peak_rss_bytes),
            (Some(510 * 4096), Some(100 << 20))
        );
        assert_eq!(
            lru.stages,
            vec![("sample".into(), 16.5), ("total".into(), 33.0)]
        );
        assert_eq!(s[1].ratio, Some(1.0));
        let mmap = &s[2];
        assert_eq!((mmap.runs, mmap.ok_runs, mmap.oom_kills), (2, 1, 1));
        assert_eq!(mmap.wall, Some((40.0, 40.0, 40.0)));
        assert_eq!(mmap.peak_bytes, Some(800 << 20));
        assert_eq!(mmap.failures, ["round 2: signal 9"]);
        let none = &s[3];
        assert_eq!((none.runs, none.wall, none.ratio), (0, None, None));
        // Without ginex the first policy is the baseline.
        assert_eq!(baseline(&names(&["none", "lru"])), Some("none"));
        let s = summarize(&runs, &names(&["mmap", "lru"]));
        assert_eq!(s[0].ratio, Some(1.0));
        assert_eq!(s[1].ratio, Some(33.0 / 40.0));
    }

    #[test]
    fn tables_show_every_policy_and_column() {
        let runs = vec![
            record("ginex", 1, 10.0, Exit::Ok, 100),
            record("mmap", 1, 40.0, Exit::Ok, 900),
            record("none", 1, 5.0, Exit::Code(1), 0),
        ];
        let s = summarize(&runs, &names(&["ginex", "mmap", "none"]));
        let t = table(&s, "ginex", false);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 4, "{t}");
        for want in [
            "policy",
            "x ginex",
            "misses",
            "opt misses",
            "MB read",
            "disk MB",
            "peak MiB",
            "RSS MiB",
            "OOM",
        ] {
            assert!(lines[0].contains(want), "{want} missing: {t}");
        }
        assert!(!lines[0].contains("seeds/s"));
        assert!(
            lines[1].contains("10.00 / 10.00 / 10.00") && lines[1].contains("1.00x"),
            "{t}"
        );
        assert!(
            lines[2].contains("4.00x")
                && lines[2].contains(" 0.9 ")
                && lines[2].contains(" 3.7 ")
                && lines[2].contains("700.0")
                && lines[2].contains("100.0"),
            "{t}"
        );
        assert!(lines[3].contains("0/1 ok (round 1: exit 1)"), "{t}");
        assert!(table(&s, "ginex", true)
            .lines()
            .next()
            .unwrap()
            .contains("seeds/s"));
        let st = stage_table(&s);
        let lines: Vec<&str> = st.lines().collect();
        assert!(
            lines[0].contains("sample") && lines[0].contains("total"),
            "{st}"
        );
        assert!(
            lines[2].contains("20.000") && lines[2].contains("40.000"),
            "{st}"
        );
        assert!(
            lines[3].trim_start().starts_with("none") && lines[3].contains('-'),
            "{st}"
        );
    }

    #[test]
    fn the_plot_has_a_bar_per_successful_policy_and_marks_failures() {
        let runs = vec![
            record("ginex", 1, 10.0, Exit::Ok, 100),
            record("mmap", 1, 40.0, Exit::Ok, 900),
            record("none", 1, 5.0, Exit::Signal(9), 0),
        ];
        let s = summarize(&runs, &names(&["ginex", "mmap", "none"]));
        let svg = bar_plot(&s, "cap <1GiB>", "ginex");
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        // Background plus one bar per policy that finished.
        assert_eq!(svg.matches("<rect").count(), 3, "{svg}");
        assert!(
            svg.contains("4.00x ginex") && svg.contains("1.00x ginex"),
            "{svg}"
        );
        assert!(svg.contains(">failed<") && svg.contains(">none<"), "{svg}");
        assert!(svg.contains("cap &lt;1GiB&gt;"), "{svg}");
        // The tallest whisker stays inside the plot area.
        let mmap_bar_top: f64 = svg
            .lines()
            .filter(|l| l.starts_with("<rect x"))
            .filter_map(|l| l.split("y=\"").nth(1)?.split('"').next()?.parse().ok())
            .fold(f64::INFINITY, f64::min);
        assert!(mmap_bar_top > 60.0, "{svg}");
    }
}
