//! Abort-on-fail: which expectations can be judged while the run goes, and
//! the judgement. The counters come from `run::live` (kept only when an
//! abort expectation asks for them); here they are pure numbers.
//!
//! Live counts are lower bounds of the final ones (a duplicate, a stale or a
//! lost completion is counted when the worker sees it; the checkers see
//! more at the end), so a live failure is always a real one. A count only
//! grows, which is why an abort expectation must be an upper bound
//! (`==`, `<`, `<=`): `> 0` could not fail until the very end.

use super::expect::{Expectation, Op};
use crate::report::summary::Percentiles;

/// Claims the live claim-latency percentiles need before they are judged.
pub const MIN_LIVE_CLAIMS: u64 = 200;

/// The metrics an abort expectation may watch.
pub const LIVE_METRICS: &[&str] = &[
    "executions.duplicate",
    "executions.jobs_duplicated",
    "checks.exactly_once",
    "completions.stale_accepted",
    "checks.stale_completions_accepted",
    "jobs.lost",
    "checks.no_lost_jobs",
    "errors.total",
    "latency_ms.claim.p50",
    "latency_ms.claim.p90",
    "latency_ms.claim.p95",
    "latency_ms.claim.p99",
    "latency_ms.claim.p999",
    "latency_ms.claim.max",
];

pub fn check_abortable(metric: &str, op: Op) -> Result<(), String> {
    if !LIVE_METRICS.contains(&metric) {
        return Err(format!("`{metric}` cannot be watched live; these can: {}", LIVE_METRICS.join(", ")));
    }
    if !matches!(op, Op::Eq | Op::Lt | Op::Le) {
        return Err("abort needs an upper bound (==, < or <=): a live count only grows".into());
    }
    Ok(())
}

/// A snapshot of the live counters.
#[derive(Debug, Clone, Default)]
pub struct LiveValues {
    pub duplicates: u64,
    pub jobs_duplicated: u64,
    pub stale_accepted: u64,
    pub lost: u64,
    pub errors: u64,
    /// The claim latency so far (None when no abort expectation watches it).
    pub claim: Option<Percentiles>,
}

impl LiveValues {
    pub fn get(&self, metric: &str) -> Option<f64> {
        let n = |v: u64| Some(v as f64);
        match metric {
            "executions.duplicate" => n(self.duplicates),
            "executions.jobs_duplicated" | "checks.exactly_once" => n(self.jobs_duplicated),
            "completions.stale_accepted" | "checks.stale_completions_accepted" => n(self.stale_accepted),
            "jobs.lost" | "checks.no_lost_jobs" => n(self.lost),
            "errors.total" => n(self.errors),
            m => {
                let p = self.claim.as_ref().filter(|p| p.count >= MIN_LIVE_CLAIMS)?;
                match m.strip_prefix("latency_ms.claim.")? {
                    "p50" => Some(p.p50),
                    "p90" => Some(p.p90),
                    "p95" => Some(p.p95),
                    "p99" => Some(p.p99),
                    "p999" => Some(p.p999),
                    "max" => Some(p.max),
                    _ => None,
                }
            }
        }
    }

    /// The first abort expectation the snapshot breaks, as `label (live value V at T s)`.
    pub fn first_failure(&self, expectations: &[Expectation], t_s: f64) -> Option<String> {
        expectations.iter().filter(|e| e.abort).find_map(|e| {
            let v = self.get(&e.metric)?;
            (!e.op.holds(v, e.value)).then(|| format!("{} (live value {v} at {t_s:.1} s)", e.label()))
        })
    }
}

/// Does any abort expectation watch the claim latency?
pub fn watches_claims(expectations: &[Expectation]) -> bool {
    expectations.iter().any(|e| e.abort && e.metric.starts_with("latency_ms.claim."))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::expect::parse_expectation;
    use crate::report::summary::RunSummary;

    #[test]
    fn a_broken_abort_expectation_is_named_with_its_live_value() {
        let names = RunSummary::metric_names(&[], &[], &[]);
        let exps = vec![
            parse_expectation("executions.duplicate", "> 0", &names).unwrap(),
            parse_expectation("jobs.lost", "== 0, abort", &names).unwrap(),
            parse_expectation("latency_ms.claim.p99", "< 50, abort", &names).unwrap(),
        ];
        let mut v = LiveValues { duplicates: 3, ..Default::default() };
        assert_eq!(v.first_failure(&exps, 1.0), None, "only abort expectations are watched");
        v.claim = Some(Percentiles { count: 10, p99: 80.0, ..Default::default() });
        assert_eq!(v.first_failure(&exps, 1.0), None, "too few claims to judge a percentile");
        v.claim = Some(Percentiles { count: 500, p99: 80.0, ..Default::default() });
        assert_eq!(v.first_failure(&exps, 2.5).unwrap(), "latency_ms.claim.p99 < 50 (live value 80 at 2.5 s)");
        v.lost = 1;
        assert!(v.first_failure(&exps, 3.0).unwrap().starts_with("jobs.lost == 0"));
        assert!(watches_claims(&exps));
    }
}
