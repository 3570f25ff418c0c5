//! Expectations (`[expect]` in a scenario) and the verdict they give.
//!
//! An expectation compares one numeric field of the summary, named by its
//! dotted path (`executions.duplicate`, `latency_ms.claim.p99`), with a
//! number. A path that is not a metric is an error when the scenario is
//! validated, never a silent pass.

use crate::error::ExitCode;
use crate::report::summary::{ExpectationResult, RunSummary};
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
    fn holds(self, actual: f64, expected: f64) -> bool {
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
    pub metric: String,
    pub op: Op,
    pub value: f64,
    /// The expression as written (`"> 0"`).
    pub expr: String,
}

/// Parses `"> 0"`, `"== 10000"`, `"<= 2.5"` for `metric`, checking it is one of `names`
/// (from `RunSummary::metric_names` for the scenario's classes and vacuum steps).
pub fn parse_expectation(metric: &str, expr: &str, names: &[String]) -> Result<Expectation, String> {
    if !names.iter().any(|n| n == metric) {
        let near = names
            .iter()
            .min_by_key(|n| strsim::levenshtein(n, metric))
            .map(|n| format!(" (did you mean `{n}`?)"))
            .unwrap_or_default();
        return Err(format!(
            "`{metric}` is not a summary metric{near}; the metrics are listed in the README under \"summary.json\""
        ));
    }
    let e = expr.trim();
    let (op, rest) = [("==", Op::Eq), ("!=", Op::Ne), ("<=", Op::Le), (">=", Op::Ge), ("<", Op::Lt), (">", Op::Gt)]
        .into_iter()
        .find_map(|(tok, op)| e.strip_prefix(tok).map(|r| (op, r)))
        .ok_or_else(|| format!("`{expr}` must start with ==, !=, <, <=, > or >=, e.g. \"> 0\""))?;
    let value: f64 =
        rest.trim().replace('_', "").parse().map_err(|_| format!("`{expr}`: `{}` is not a number", rest.trim()))?;
    if !value.is_finite() {
        return Err(format!("`{expr}`: the number must be finite"));
    }
    Ok(Expectation { metric: metric.to_string(), op, value, expr: e.to_string() })
}

/// Evaluates every expectation against the summary's own numbers.
pub fn evaluate(expectations: &[Expectation], summary: &RunSummary) -> Vec<ExpectationResult> {
    let metrics = summary.metrics();
    expectations
        .iter()
        .map(|e| {
            let actual = metrics.get(&e.metric).copied();
            ExpectationResult {
                name: e.metric.clone(),
                expression: e.expr.clone(),
                actual,
                passed: actual.is_some_and(|a| e.op.holds(a, e.value)),
            }
        })
        .collect()
}

/// The exit code a finished run earns.
pub fn verdict(summary: &RunSummary) -> ExitCode {
    if summary.interrupted {
        ExitCode::Interrupted
    } else if summary.partial {
        ExitCode::Infrastructure
    } else if summary.passed {
        ExitCode::Passed
    } else {
        ExitCode::ExpectationFailed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        RunSummary::metric_names(&[], &[])
    }

    #[test]
    fn parses_operators() {
        for (expr, op, v) in
            [("> 0", Op::Gt, 0.0), ("==10_000", Op::Eq, 10000.0), ("<= 2.5", Op::Le, 2.5), ("!= 1", Op::Ne, 1.0)]
        {
            let e = parse_expectation("jobs.lost", expr, &names()).unwrap();
            assert_eq!((e.op, e.value), (op, v), "{expr}");
        }
    }

    #[test]
    fn rejects_bad_expressions_and_metrics() {
        assert!(parse_expectation("jobs.lost", "about 0", &names()).unwrap_err().contains("must start with"));
        assert!(parse_expectation("jobs.lost", "> zero", &names()).unwrap_err().contains("not a number"));
        assert!(parse_expectation("jobs.lost", "> inf", &names()).is_err());
        assert!(parse_expectation("jobs.lots", "== 0", &names()).unwrap_err().contains("did you mean `jobs.lost`"));
    }

    #[test]
    fn evaluates_against_a_summary() {
        let mut s = RunSummary::default();
        s.executions.duplicate = 3;
        let exps = vec![
            parse_expectation("executions.duplicate", "> 0", &names()).unwrap(),
            parse_expectation("jobs.lost", "> 0", &names()).unwrap(),
        ];
        let r = evaluate(&exps, &s);
        assert!(r[0].passed && !r[1].passed);
        assert_eq!(r[0].actual, Some(3.0));
    }
}
