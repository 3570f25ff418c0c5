//! Abort-on-fail: which expectations can be judged while the run goes, and
//! the judgement. The counters come from `run::live` (kept only when an
//! abort expectation asks for them); here they are pure numbers.
//!
//! Live values are lower bounds of the final ones and only grow (a
//! duplicate, a stale or a lost completion is counted when the worker sees
//! it, the checkers see more at the end; the slowest claim so far can only
//! be beaten), so a live value past an upper bound is a real failure.
//! That is why an abort expectation must be an upper bound (`==`, `<`,
//! `<=`; `==` aborts only once the value passes it) on one of these: a
//! percentile can fall again as claims come in, so only `max` is watched.

use super::expect::{Expectation, Op};

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
    "latency_ms.claim.max",
];

pub fn check_abortable(metric: &str, op: Op) -> Result<(), String> {
    if !LIVE_METRICS.contains(&metric) {
        return Err(format!("`{metric}` cannot be watched live; these can: {}", LIVE_METRICS.join(", ")));
    }
    if !matches!(op, Op::Eq | Op::Lt | Op::Le) {
        return Err("abort needs an upper bound (==, < or <=): a live value only grows".into());
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
    /// The slowest claim so far in ms (None when no abort expectation watches it).
    pub claim_max: Option<f64>,
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
            "latency_ms.claim.max" => self.claim_max,
            _ => None,
        }
    }

    /// The first abort expectation the snapshot breaks, as `label (live value V at T s)`.
    pub fn first_failure(&self, expectations: &[Expectation], t_s: f64) -> Option<String> {
        expectations.iter().filter(|e| e.abort).find_map(|e| {
            let v = self.get(&e.metric)?;
            // A growing value breaks `== N` only once it passes N.
            let op = if e.op == Op::Eq { Op::Le } else { e.op };
            (!op.holds(v, e.value)).then(|| format!("{} (live value {v} at {t_s:.1} s)", e.label()))
        })
    }
}

/// Does any abort expectation watch the claim latency?
pub fn watches_claims(expectations: &[Expectation]) -> bool {
    expectations.iter().any(|e| e.abort && e.metric == "latency_ms.claim.max")
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
            parse_expectation("latency_ms.claim.max", "< 50, abort", &names).unwrap(),
            parse_expectation("errors.total", "== 2, abort", &names).unwrap(),
        ];
        let mut v = LiveValues { duplicates: 3, errors: 2, ..Default::default() };
        assert_eq!(v.first_failure(&exps, 1.0), None, "only abort expectations are watched; == 2 holds at 2");
        v.claim_max = Some(80.0);
        assert_eq!(v.first_failure(&exps, 2.5).unwrap(), "latency_ms.claim.max < 50 (live value 80 at 2.5 s)");
        v.claim_max = Some(10.0);
        v.errors = 1;
        assert_eq!(v.first_failure(&exps, 2.6), None, "== 2 is not broken while the count is still below 2");
        v.errors = 3;
        assert!(v.first_failure(&exps, 2.7).unwrap().starts_with("errors.total == 2"));
        v.errors = 0;
        v.lost = 1;
        assert!(v.first_failure(&exps, 3.0).unwrap().starts_with("jobs.lost == 0"));
        assert!(watches_claims(&exps));
    }

    #[test]
    fn every_live_metric_has_a_live_value() {
        let v = LiveValues { claim_max: Some(1.0), ..Default::default() };
        for m in LIVE_METRICS {
            assert!(v.get(m).is_some(), "{m} is accepted for abort but never read live");
        }
        assert!(check_abortable("latency_ms.claim.p99", Op::Lt).is_err(), "percentiles can fall again");
    }
}
