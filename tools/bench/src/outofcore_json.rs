//! The JSON of `ginex bench outofcore`: what it reads from a child's
//! report ([`ReportKeys`], leniently: reports grow and shrink) and the
//! documents it writes per run ([`RunJson`]) and per policy
//! ([`PolicySummary`](super::outofcore_report::PolicySummary)'s serde form).

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// The keys of a report (or of a training report's epoch) that
/// [`metrics_from_report`](super::outofcore_report::metrics_from_report)
/// reads. Every key is lenient: missing or of
/// another type, it is `None`, so reports that grow or shrink still parse.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ReportKeys {
    /// A training report's epochs (the first is read).
    #[serde(deserialize_with = "lenient")]
    pub(crate) epochs: Option<Vec<Value>>,
    /// A training epoch's cache counters (`hits`, `misses`); an epoch
    /// report has them at the top level.
    #[serde(deserialize_with = "present")]
    pub(crate) feature_cache: Option<Value>,
    #[serde(deserialize_with = "lenient")]
    pub(crate) hits: Option<u64>,
    #[serde(deserialize_with = "lenient")]
    pub(crate) misses: Option<u64>,
    /// The optimum of ginex's schedule, init reads included; `null` for
    /// other policies.
    #[serde(deserialize_with = "present")]
    pub(crate) optimal_total: Option<Value>,
    /// The per-batch optimum (reports without `optimal_total`).
    #[serde(deserialize_with = "present")]
    pub(crate) optimal_misses: Option<Value>,
    #[serde(deserialize_with = "lenient")]
    pub(crate) bytes_read: Option<u64>,
    #[serde(deserialize_with = "lenient")]
    pub(crate) feature_reads: Option<u64>,
    #[serde(deserialize_with = "lenient")]
    pub(crate) pages_read: Option<u64>,
    /// An epoch report's parameters (its `feature_cache_rows` is read).
    #[serde(deserialize_with = "present")]
    pub(crate) parameters: Option<Value>,
    #[serde(deserialize_with = "lenient")]
    pub(crate) feature_cache_rows: Option<u64>,
    #[serde(deserialize_with = "lenient")]
    pub(crate) seeds_per_s: Option<f64>,
    #[serde(deserialize_with = "lenient")]
    pub(crate) peak_rss_bytes: Option<u64>,
    /// Stage seconds by name (entries that are not numbers are skipped).
    #[serde(deserialize_with = "lenient")]
    pub(crate) seconds: Option<serde_json::Map<String, Value>>,
}

impl ReportKeys {
    /// The keys of `v`; all `None` when `v` is not an object.
    pub(crate) fn of(v: &Value) -> ReportKeys {
        // Checked first: serde would take an array as the fields in order.
        if !v.is_object() {
            return ReportKeys::default();
        }
        ReportKeys::deserialize(v).unwrap_or_default()
    }
}

/// A value of type `T`, or `None` when the report holds another type
/// there (the key's absence is `#[serde(default)]`).
fn lenient<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    Ok(serde_json::from_value(Value::deserialize(d)?).ok())
}

/// The value of a key that is there, `null` included (`Some(Null)`: an
/// `Option` would take `null` for a missing key).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// One run of the benchmark's JSON: what [`RunRecord::to_json`] writes.
///
/// [`RunRecord::to_json`]: super::outofcore_report::RunRecord::to_json
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunJson<'a> {
    /// [`RunRecord::round`](super::outofcore_report::RunRecord::round).
    pub round: u32,
    /// [`RunRecord::policy`](super::outofcore_report::RunRecord::policy).
    pub policy: &'a str,
    /// [`RunRecord::wall_s`](super::outofcore_report::RunRecord::wall_s).
    pub wall_seconds: f64,
    /// [`Exit::describe`](super::outofcore_report::Exit::describe).
    pub exit: String,
    /// [`RunRecord::peak_bytes`](super::outofcore_report::RunRecord::peak_bytes).
    pub cgroup_peak_bytes: Option<u64>,
    /// [`RunRecord::oom_kills`](super::outofcore_report::RunRecord::oom_kills).
    pub oom_kills: Option<u64>,
    /// [`RunRecord::disk_read_bytes`](super::outofcore_report::RunRecord::disk_read_bytes).
    pub disk_read_bytes: Option<u64>,
    /// What the child's report said (its stages as `seconds`, by name).
    #[serde(flatten)]
    pub metrics: &'a super::outofcore_report::Metrics,
}

/// Wall seconds over a policy's successful runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct WallSeconds {
    /// Fastest.
    pub min: f64,
    /// Median.
    pub median: f64,
    /// Slowest.
    pub max: f64,
}

/// `PolicySummary::wall`'s (min, median, max) as a [`WallSeconds`] object.
pub(crate) fn wall_seconds<S: serde::Serializer>(
    wall: &Option<(f64, f64, f64)>,
    s: S,
) -> Result<S::Ok, S::Error> {
    wall.map(|(min, median, max)| WallSeconds { min, median, max })
        .serialize(s)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::outofcore_report::{
        metrics_from_report, summary_json, Exit, Metrics, PolicySummary, RunRecord,
    };
    use super::*;

    fn stages() -> Vec<(String, f64)> {
        vec![("sample".into(), 0.5), ("gather".into(), 1.25)]
    }

    #[test]
    fn a_runs_json_has_the_keys_json_wrote() {
        let r = RunRecord {
            round: 2,
            policy: "ginex".into(),
            wall_s: 12.5,
            exit: Exit::Signal(9),
            peak_bytes: Some(700 << 20),
            oom_kills: Some(1),
            disk_read_bytes: None,
            metrics: Metrics {
                hits: Some(10),
                misses: Some(4),
                optimal_misses: None,
                bytes_read: Some(4096),
                feature_reads: Some(3),
                pages_read: Some(2),
                feature_cache_rows: Some(77),
                seeds_per_s: Some(1234.5),
                peak_rss_bytes: Some(1 << 30),
                stages: stages(),
            },
        };
        let want = json!({
            "round": 2, "policy": "ginex", "wall_seconds": 12.5,
            "exit": "signal 9", "cgroup_peak_bytes": 700u64 << 20, "oom_kills": 1,
            "disk_read_bytes": null, "peak_rss_bytes": 1u64 << 30,
            "hits": 10, "misses": 4, "optimal_misses": null, "bytes_read": 4096, "feature_reads": 3,
            "pages_read": 2, "feature_cache_rows": 77,
            "seeds_per_s": 1234.5,
            "seconds": {"sample": 0.5, "gather": 1.25},
        });
        assert_eq!(r.to_json(), want);
    }

    #[test]
    fn a_summarys_json_has_the_keys_json_wrote() {
        let mut p = PolicySummary {
            policy: "lru".into(),
            runs: 3,
            ok_runs: 2,
            wall: Some((1.0, 2.0, 4.0)),
            ratio: Some(1.5),
            misses: Some(100),
            oom_kills: 1,
            failures: vec!["signal 9".into()],
            stages: stages(),
            ..PolicySummary::default()
        };
        let want = json!({
            "policy": "lru", "runs": 3, "ok_runs": 2,
            "wall_seconds": {"min": 1.0, "median": 2.0, "max": 4.0},
            "ratio_to_baseline": 1.5, "misses": 100, "optimal_misses": null,
            "bytes_read": null, "feature_reads": null, "disk_read_bytes": null, "peak_rss_bytes": null,
            "pages_read": null, "feature_cache_rows": null,
            "seeds_per_s": null, "cgroup_peak_bytes": null,
            "oom_kills": 1, "failures": ["signal 9"],
            "seconds": {"sample": 0.5, "gather": 1.25},
        });
        assert_eq!(summary_json(&p), want);
        p.wall = None;
        assert!(summary_json(&p)["wall_seconds"].is_null());
    }

    /// What `ginex epoch` writes, `bench outofcore` reads back.
    #[test]
    fn an_epoch_report_reads_back_as_its_metrics() {
        use ginex::internals::exec::epoch::{BatchStat, EpochReport};
        let r = EpochReport {
            batches: vec![
                BatchStat {
                    batch: 0,
                    hits: 4,
                    misses: 6,
                    checksum: 1,
                },
                BatchStat {
                    batch: 1,
                    hits: 5,
                    misses: 1,
                    checksum: 2,
                },
            ],
            optimal_misses: vec![3, 1],
            init_reads: 2,
            optimal_init_reads: 2,
            pages_read: 11,
            feature_reads: 9,
            bytes_read: 45_056,
            gather: std::time::Duration::from_millis(250),
            ..EpochReport::default()
        };
        let mut doc = r.to_json();
        doc["parameters"] = json!({"feature_cache_rows": 64});
        doc["peak_rss_bytes"] = json!(1 << 20);
        let m = metrics_from_report(&doc, false);
        assert_eq!((m.hits, m.misses), (Some(r.hits()), Some(r.misses())));
        assert_eq!(m.optimal_misses, Some(r.optimal_total()));
        assert_eq!(
            (m.pages_read, m.feature_reads, m.bytes_read),
            (Some(11), Some(9), Some(45_056))
        );
        assert_eq!(
            (m.feature_cache_rows, m.peak_rss_bytes),
            (Some(64), Some(1 << 20))
        );
        let gather = m.stages.iter().find(|(k, _)| k == "gather");
        assert_eq!(gather, Some(&("gather".to_string(), 0.25)));
    }

    #[test]
    fn report_keys_of_another_type_read_as_missing() {
        let report = json!({"hits": "many", "misses": -1, "bytes_read": 1.5,
            "pages_read": 9, "parameters": [77], "peak_rss_bytes": 5,
            "optimal_total": null, "optimal_misses": [1, 2],
            "seconds": {"sample": "slow", "gather": 2.0}});
        let m = metrics_from_report(&report, false);
        assert_eq!((m.hits, m.misses, m.bytes_read), (None, None, None));
        assert_eq!((m.pages_read, m.peak_rss_bytes), (Some(9), Some(5)));
        // `parameters` is not an object; a null `optimal_total` is "no optimum".
        assert_eq!((m.feature_cache_rows, m.optimal_misses), (None, None));
        assert_eq!(m.stages, [("gather".to_string(), 2.0)]);
        // A training report's epochs that are not a list, or a first epoch
        // whose cache counters are not an object.
        let m = metrics_from_report(&json!({"epochs": {"0": {"seeds_per_s": 1.0}}}), true);
        assert_eq!(m, Metrics::default());
        let m = metrics_from_report(
            &json!({"epochs": [{"feature_cache": [5, 6], "hits": 1}], "peak_rss_bytes": 8}),
            true,
        );
        assert_eq!((m.hits, m.peak_rss_bytes), (None, Some(8)));
        assert_eq!(ReportKeys::of(&json!([1, 2, 3])).epochs, None);
    }
}
