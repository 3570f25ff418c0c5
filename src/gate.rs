//! The gate: the verdict a finished run earns from its expectations
//! (`[expect]`, `--expect`; parsed in `model::expect`). The baseline
//! comparison is in `crate::compare`.

use crate::model::expect::Expectation;

use crate::error::ExitCode;
use crate::model::summary::{ExpectationResult, RunSummary};

/// Evaluates every expectation against the summary's own numbers.
pub fn evaluate(expectations: &[Expectation], summary: &RunSummary) -> Vec<ExpectationResult> {
    let metrics = summary.metrics();
    expectations
        .iter()
        .map(|e| {
            let actual = metrics.get(&e.metric).copied();
            ExpectationResult {
                name: e.name.clone(),
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
    use crate::model::expect::parse_expectation;

    #[test]
    fn evaluates_against_a_summary() {
        let names = RunSummary::metric_names(&[], &[], &[]);
        let mut s = RunSummary::default();
        s.executions.duplicate = 3;
        let exps = vec![
            parse_expectation("executions.duplicate", "> 0", &names).unwrap(),
            parse_expectation("jobs.lost", "> 0", &names).unwrap(),
        ];
        let r = evaluate(&exps, &s);
        assert!(r[0].passed && !r[1].passed);
        assert_eq!(r[0].actual, Some(3.0));
    }

    #[test]
    fn an_aborted_run_fails() {
        let s = RunSummary { passed: false, aborted_by: Some("jobs.lost == 0".into()), ..Default::default() };
        assert_eq!(verdict(&s), ExitCode::ExpectationFailed);
    }
}
