//! Expectations: `"metric" = "op number"` in `[expect]`, or `--expect 'metric op number'`.
//!
//! A metric is a summary field by its dotted path (`latency_ms.claim.p99`), a checker by
//! `checks.<name>` (its violation count), and may select a class or a phase with braces after
//! the per-class or per-phase field: `latency_ms.queue_wait{class=low}.p95` is the flat
//! `latency_ms.queue_wait.low.p95`; `throughput.jobs_per_sec{phase=overload}` is
//! `by_phase.overload.throughput.jobs_per_sec`; both together select a class inside a phase.
//! A metric that is not in the summary is an error naming the nearest ones, never a silent pass.
//! `, abort` after the expression (or `{ expr = "== 0", abort = true }`) watches it while the
//! run goes and stops the run the moment it fails (judged on live counters: `LiveValues` below).

use crate::error::{Error, Invalid};
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Op {
    #[serde(rename = "==")]
    Eq,
    #[serde(rename = "!=")]
    Ne,
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = ">=")]
    Ge,
}

impl Op {
    pub fn holds(self, actual: f64, expected: f64) -> bool {
        match self {
            Op::Eq => actual == expected,
            Op::Ne => actual != expected,
            Op::Lt => actual < expected,
            Op::Le => actual <= expected,
            Op::Gt => actual > expected,
            Op::Ge => actual >= expected,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Expectation {
    /// The metric as written (`latency_ms.queue_wait{class=low}.p95`).
    pub name: String,
    /// Its flat path in the summary's metrics (`latency_ms.queue_wait.low.p95`).
    pub metric: String,
    pub op: Op,
    pub value: f64,
    /// The comparison as written (`"> 0"`), without `, abort`.
    pub expr: String,
    /// Stop the run as soon as the live value breaks it.
    pub abort: bool,
}

impl Expectation {
    /// `name expr` as shown in reports (`executions.duplicate == 0`).
    pub fn label(&self) -> String {
        format!("{} {}", self.name, self.expr)
    }
}

/// The flat metric path of a name with `{class=…,phase=…}` selectors.
pub(crate) fn resolve(name: &str) -> Result<String, Invalid> {
    let Some(open) = name.find('{') else { return Ok(name.to_string()) };
    let close =
        name[open..].find('}').map(|i| open + i).ok_or_else(|| Invalid::new(format!("`{name}`: `{{` without `}}`")))?;
    let (base, inner, rest) = (&name[..open], &name[open + 1..close], &name[close + 1..]);
    if base.is_empty() || (!rest.is_empty() && !rest.starts_with('.')) || rest.contains(['{', '}']) {
        return Err(Invalid::new(format!(
            "`{name}`: write selectors right after a field, e.g. latency_ms.queue_wait{{class=low}}.p95"
        )));
    }
    let (mut class, mut phase) = (None, None);
    for part in inner.split(',') {
        let (k, v) = part.split_once('=').map(|(k, v)| (k.trim(), v.trim())).unwrap_or((part.trim(), ""));
        let slot = match k {
            "class" => &mut class,
            "phase" => &mut phase,
            _ => {
                return Err(Invalid::new(format!(
                    "`{name}`: unknown selector `{k}`; accepted: class=NAME, phase=NAME"
                )));
            }
        };
        if v.is_empty() || slot.is_some() {
            return Err(Invalid::new(format!("`{name}`: `{k}` needs one value, e.g. {k}=NAME")));
        }
        *slot = Some(v);
    }
    let mut flat = String::new();
    if let Some(p) = phase {
        flat.push_str(&format!("by_phase.{p}."));
    }
    flat.push_str(base);
    if let Some(c) = class {
        flat.push_str(&format!(".{c}"));
    }
    flat.push_str(rest);
    Ok(flat)
}

/// Parses `"> 0"`, `"== 10000"`, `"<= 2.5, abort"` for `name`, checking that it names one of
/// `names` (from `RunSummary::metric_names` for the scenario's classes, phases and vacuum steps).
pub(crate) fn parse_expectation(name: &str, expr: &str, names: &[String]) -> Result<Expectation, Invalid> {
    let (expr, abort) = match expr.trim().strip_suffix("abort").map(str::trim_end) {
        Some(e) if e.ends_with(',') => (e.trim_end_matches(',').trim(), true),
        _ => (expr.trim(), false),
    };
    build(name, expr, abort, names)
}

/// `--expect 'latency_ms.claim.p99 < 100'` (optionally `, abort` at the end).
pub(crate) fn parse_cli(text: &str, names: &[String]) -> Result<Expectation, Error> {
    let mut depth = 0;
    let split = text.char_indices().find(|&(_, c)| {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            _ => {}
        }
        depth == 0 && matches!(c, '<' | '>' | '=' | '!')
    });
    let Some((i, _)) = split else {
        return Err(Error::Flag {
            flag: "--expect".into(),
            reason: format!("`{text}`: write METRIC OP NUMBER, e.g. --expect 'latency_ms.claim.p99 < 100'"),
        });
    };
    parse_expectation(text[..i].trim(), &text[i..], names).map_err(|invalid| Error::FlagValue {
        flag: "--expect".into(),
        value: None,
        invalid,
    })
}

fn build(name: &str, expr: &str, abort: bool, names: &[String]) -> Result<Expectation, Invalid> {
    let metric = resolve(name)?;
    if !names.contains(&metric) {
        return Err(unknown_metric(name, &metric, names));
    }
    let (op, rest) = [("==", Op::Eq), ("!=", Op::Ne), ("<=", Op::Le), (">=", Op::Ge), ("<", Op::Lt), (">", Op::Gt)]
        .into_iter()
        .find_map(|(tok, op)| expr.strip_prefix(tok).map(|r| (op, r)))
        .ok_or_else(|| Invalid::new(format!("`{expr}` must start with ==, !=, <, <=, > or >=, e.g. \"> 0\"")))?;
    let value: f64 = rest
        .trim()
        .replace('_', "")
        .parse()
        .map_err(|_| Invalid::new(format!("`{expr}`: `{}` is not a number", rest.trim())))?;
    if !value.is_finite() {
        return Err(Invalid::new(format!("`{expr}`: the number must be finite")));
    }
    if abort {
        check_abortable(&metric, op).map_err(|e| e.within(format_args!("`{name}` with abort")))?;
    }
    Ok(Expectation { name: name.to_string(), metric, op, value, expr: expr.to_string(), abort })
}

/// "`name` is not a summary metric (did you mean …?)" with the three nearest names.
pub(crate) fn unknown_metric(name: &str, metric: &str, names: &[String]) -> Invalid {
    let mut near: Vec<&String> = names.iter().collect();
    near.sort_by_key(|n| strsim::levenshtein(n, metric));
    let near: Vec<String> = near.iter().take(3).map(|n| format!("`{n}`")).collect();
    let shown = if name == metric { format!("`{name}`") } else { format!("`{name}` (= `{metric}`)") };
    Invalid::new(format!(
        "{shown} is not a summary metric (did you mean {}?); the metrics are listed in the README under \"summary.json\"",
        near.join(", ")
    ))
}

// ---- Abort-on-fail: judged while the run goes ----
//
// Abort-on-fail: which expectations can be judged while the run goes, and
// the judgement. The counters come from `run::live` (kept only when an
// abort expectation asks for them); here they are pure numbers.
//
// Live values are lower bounds of the final ones and only grow (a
// duplicate, a stale or a lost completion is counted when the worker sees
// it, the checkers see more at the end; the slowest claim so far can only
// be beaten), so a live value past an upper bound is a real failure.
// That is why an abort expectation must be an upper bound (`==`, `<`,
// `<=`; `==` aborts only once the value passes it) on one of these: a
// percentile can fall again as claims come in, so only `max` is watched.
/// The metrics an abort expectation may watch.
pub(crate) const LIVE_METRICS: &[&str] = &[
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

pub(crate) fn check_abortable(metric: &str, op: Op) -> Result<(), Invalid> {
    if !LIVE_METRICS.contains(&metric) {
        return Err(Invalid::new(format!("`{metric}` cannot be watched live; these can: {}", LIVE_METRICS.join(", "))));
    }
    if !matches!(op, Op::Eq | Op::Lt | Op::Le) {
        return Err(Invalid::new("abort needs an upper bound (==, < or <=): a live value only grows"));
    }
    Ok(())
}

/// A snapshot of the live counters.
#[derive(Debug, Clone, Default)]
pub(crate) struct LiveValues {
    pub duplicates: u64,
    pub jobs_duplicated: u64,
    pub stale_accepted: u64,
    pub lost: u64,
    pub errors: u64,
    /// The slowest claim so far in ms (None when no abort expectation watches it).
    pub claim_max: Option<f64>,
}

impl LiveValues {
    pub(crate) fn get(&self, metric: &str) -> Option<f64> {
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
    pub(crate) fn first_failure(&self, expectations: &[Expectation], t_s: f64) -> Option<String> {
        expectations.iter().filter(|e| e.abort).find_map(|e| {
            let v = self.get(&e.metric)?;
            // A growing value breaks `== N` only once it passes N.
            let op = if e.op == Op::Eq { Op::Le } else { e.op };
            (!op.holds(v, e.value)).then(|| format!("{} (live value {v} at {t_s:.1} s)", e.label()))
        })
    }
}

/// Does any abort expectation watch the claim latency?
pub(crate) fn watches_claims(expectations: &[Expectation]) -> bool {
    expectations.iter().any(|e| e.abort && e.metric == "latency_ms.claim.max")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::summary::RunSummary;

    #[test]
    fn the_live_check_metrics_name_checks() {
        for m in LIVE_METRICS.iter().filter_map(|m| m.strip_prefix("checks.")) {
            assert!(crate::model::check::Check::parse(m).is_some(), "checks.{m} names no check");
        }
    }

    fn names() -> Vec<String> {
        RunSummary::metric_names(&["low", "high"], &[], &["steady", "overload"])
    }

    #[test]
    fn parses_operators() {
        for (expr, op, v) in
            [("> 0", Op::Gt, 0.0), ("==10_000", Op::Eq, 10000.0), ("<= 2.5", Op::Le, 2.5), ("!= 1", Op::Ne, 1.0)]
        {
            let e = parse_expectation("jobs.lost", expr, &names()).unwrap();
            assert_eq!((e.op, e.value, e.abort), (op, v, false), "{expr}");
        }
    }

    #[test]
    fn rejects_bad_expressions_and_metrics() {
        assert!(
            parse_expectation("jobs.lost", "about 0", &names()).unwrap_err().to_string().contains("must start with")
        );
        assert!(parse_expectation("jobs.lost", "> zero", &names()).unwrap_err().to_string().contains("not a number"));
        assert!(parse_expectation("jobs.lost", "> inf", &names()).is_err());
        assert!(
            parse_expectation("jobs.lots", "== 0", &names())
                .unwrap_err()
                .to_string()
                .contains("did you mean `jobs.lost`")
        );
    }

    #[test]
    fn selectors_name_the_flat_metrics() {
        let cases = [
            ("latency_ms.queue_wait{class=low}.p95", "latency_ms.queue_wait.low.p95"),
            ("throughput.jobs_per_sec{phase=overload}", "by_phase.overload.throughput.jobs_per_sec"),
            ("latency_ms.claim{phase=steady}.p99", "by_phase.steady.latency_ms.claim.p99"),
            ("latency_ms.queue_wait{class=low, phase=overload}.p95", "by_phase.overload.latency_ms.queue_wait.low.p95"),
            (
                "latency_ms.queue_wait{phase=overload,class=high}.p95",
                "by_phase.overload.latency_ms.queue_wait.high.p95",
            ),
            ("jobs.completed_by_class{class=low}", "jobs.completed_by_class.low"),
        ];
        for (name, flat) in cases {
            let e = parse_expectation(name, "< 2000", &names()).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(e.metric, flat);
            assert_eq!(e.name, name);
        }
        // The flat form still works.
        assert_eq!(parse_expectation("latency_ms.queue_wait.low.p95", "< 1", &names()).unwrap().metric, cases[0].1);
    }

    #[test]
    fn bad_selectors_are_errors_naming_the_fix() {
        let n = names();
        let err = |name: &str| parse_expectation(name, "< 1", &n).unwrap_err().reason;
        assert!(err("latency_ms.queue_wait{class=nobody}.p95").contains("did you mean"));
        assert!(err("latency_ms.queue_wait{colour=low}.p95").contains("unknown selector `colour`"));
        assert!(err("latency_ms.queue_wait{class=}.p95").contains("needs one value"));
        assert!(err("latency_ms.queue_wait{class=low,class=high}.p95").contains("needs one value"));
        assert!(err("latency_ms.queue_wait{class=low").contains("without"));
        assert!(err("latency_ms.queue_wait{class=low}p95").contains("right after a field"));
        assert!(err("throughput.jobs_per_sec{phase=warmup}").contains("did you mean"));
    }

    #[test]
    fn command_line_form_and_abort() {
        let e = parse_cli("latency_ms.claim.p99 < 100", &names()).unwrap();
        assert_eq!((e.metric.as_str(), e.op, e.value, e.abort), ("latency_ms.claim.p99", Op::Lt, 100.0, false));
        let e = parse_cli("latency_ms.queue_wait{class=low,phase=steady}.p95<=5", &names()).unwrap();
        assert_eq!(e.metric, "by_phase.steady.latency_ms.queue_wait.low.p95");
        let e = parse_cli("executions.duplicate == 0, abort", &names()).unwrap();
        assert!(e.abort && e.expr == "== 0");
        assert!(parse_cli("latency_ms.claim.p99", &names()).unwrap_err().to_string().contains("METRIC OP NUMBER"));
        assert!(
            parse_cli("latency_ms.clam.p99 < 1", &names()).unwrap_err().to_string().contains("latency_ms.claim.p99")
        );
        // Abort needs an upper bound on a metric that can be watched live.
        assert!(
            parse_cli("executions.duplicate > 0, abort", &names()).unwrap_err().to_string().contains("upper bound")
        );
        assert!(
            parse_cli("fifo.inverted_pairs == 0, abort", &names()).unwrap_err().to_string().contains("watched live")
        );
    }

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
