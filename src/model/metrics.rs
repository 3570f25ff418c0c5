//! Metric names: every numeric field of the summary by its dotted path, plus
//! `checks.<name>` (a checker's violation count). Expectations, baselines and CSV columns
//! all name metrics this way.

use super::check::Check;
use super::fault::FaultKind;
use super::summary::*;
use std::collections::BTreeMap;

impl RunSummary {
    /// Every numeric field by dotted path, plus `checks.<name>` (violations). The percentiles of a
    /// latency nothing was measured for (`count` 0: a phase that never ran, a class with no jobs)
    /// are left out rather than read as 0 ms, so an upper bound on them fails as missing and a
    /// baseline comparison does not judge them.
    pub fn metrics(&self) -> BTreeMap<String, f64> {
        let mut out = self.flat(true);
        if self.partial {
            // Counted from the final table, which a partial run never read: unknown, not 0.
            out.retain(|k, _| !FINAL_TABLE.iter().any(|p| k.starts_with(p)) || k == "jobs.enqueued");
        }
        out
    }

    /// Every metric path of this summary, measured or not (stable columns for CSV files).
    pub fn metric_paths(&self) -> Vec<String> {
        self.flat(false).into_keys().collect()
    }

    fn flat(&self, measured_only: bool) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        let value = serde_json::to_value(self).expect("summary serialises");
        flatten("", &value, measured_only, &mut out);
        for c in &self.checks {
            out.insert(format!("checks.{}", c.name), c.violations as f64);
        }
        out
    }

    /// The metric paths an expectation may name (known before any run).
    pub fn metric_names(classes: &[&str], vacuum_steps: &[&str], phases: &[&str]) -> Vec<String> {
        let mut s = RunSummary::default();
        for p in phases {
            let mut n = PhaseNumbers::default();
            for c in std::iter::once("default").chain(classes.iter().copied()) {
                n.latency_ms.queue_wait.insert(c.to_string(), Percentiles::default());
            }
            s.by_phase.insert(p.to_string(), n);
        }
        for v in vacuum_steps {
            s.vacuum.insert(v.to_string(), VacuumNumbers::default());
        }
        for c in std::iter::once("default").chain(classes.iter().copied()) {
            s.latency_ms.queue_wait.insert(c.to_string(), Percentiles::default());
            s.jobs.completed_by_class.insert(c.to_string(), 0);
            s.starvation.max_oldest_ready_age_s.insert(c.to_string(), 0.0);
            s.starvation.growth_s_per_s.insert(c.to_string(), 0.0);
        }
        s.effects.table_rows = Some(0);
        s.wakeup.rolled_back_notify_delivered = Some(0);
        s.wakeup.committed_notify_delivered = Some(0);
        for k in FaultKind::ALL {
            s.faults.by_kind.insert(k, 0);
        }
        s.checks = Check::ALL.iter().map(|&name| CheckResult { name, ..Default::default() }).collect();
        s.metric_paths()
    }
}

/// The metrics read from the table as the run left it (prefixes; `jobs.enqueued` is counted as
/// the jobs go in, not from the table).
const FINAL_TABLE: [&str; 3] = ["jobs.", "durability.", "effects.table_rows"];

fn flatten(prefix: &str, v: &serde_json::Value, measured_only: bool, out: &mut BTreeMap<String, f64>) {
    use serde_json::Value;
    let unmeasured = |map: &serde_json::Map<String, Value>| {
        measured_only && map.contains_key("p50") && map.get("count").and_then(Value::as_u64) == Some(0)
    };
    match v {
        Value::Number(n) => {
            if let Some(f) = n.as_f64() {
                out.insert(prefix.to_string(), f);
            }
        }
        Value::Object(map) if unmeasured(map) => {
            out.insert(format!("{prefix}.count"), 0.0);
        }
        Value::Object(map) => {
            for (k, v) in map {
                // Free-form maps are not metrics; neither are lists or the version.
                if matches!(
                    k.as_str(),
                    "by_code"
                        | "settings_applied"
                        | "settings_reported"
                        | "schema_version"
                        | "seed"
                        | "pg_settings"
                        | "phases"
                        | "fingerprint"
                ) {
                    continue;
                }
                let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                flatten(&key, v, measured_only, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_names_cover_the_documented_fields() {
        let names = RunSummary::metric_names(&[], &[], &[]);
        for n in [
            "jobs.lost",
            "executions.duplicate",
            "completions.rejected",
            "throughput.jobs_per_sec",
            "latency_ms.claim.p99",
            "latency_ms.queue_wait.default.p95",
            "producer.lag_ms.p99",
            "latency_ms.pickup.p50",
            "wakeup.idle_queries_per_sec",
            "wakeup.rolled_back_notify_delivered",
            "checks.exactly_once",
            "checks.starvation",
            "checks.durability",
            "durability.lost_completions",
            "outage.reconnect_attempts",
            "effects.table_rows",
            "jobs.completed_by_class.default",
            "starvation.max_oldest_ready_age_s.default",
            "fifo.inverted_pairs",
            "fifo.worst_displacement",
            "workers",
        ] {
            assert!(names.iter().any(|m| m == n), "{n} missing from {names:?}");
        }
        assert!(!names.iter().any(|m| m == "schema_version"));
    }

    #[test]
    fn unmeasured_percentiles_are_missing_not_zero() {
        let mut s = RunSummary::default();
        s.latency_ms.work = Percentiles { count: 3, p99: 7.0, ..Default::default() };
        let m = s.metrics();
        assert_eq!(m.get("latency_ms.work.p99"), Some(&7.0));
        assert_eq!(m.get("latency_ms.claim.count"), Some(&0.0));
        assert_eq!(m.get("latency_ms.claim.p99"), None, "nothing measured is not 0 ms");
    }
}
