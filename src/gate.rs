//! The gate: the verdict a finished run earns from its checks and its expectations
//! (`[expect]`, `--expect`; parsed in `model::expect`). The baseline
//! comparison is in `crate::compare`.

use crate::model::check::Check;
use crate::model::expect::Expectation;

use crate::error::ExitCode;
use crate::model::summary::{CheckResult, ExpectationResult, RunSummary};

/// Evaluates every expectation against the summary's own numbers.
pub(crate) fn evaluate(expectations: &[Expectation], summary: &RunSummary) -> Vec<ExpectationResult> {
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

/// A run's verdict: whether it passed, and the checks that failed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Judgement {
    pub passed: bool,
    /// Violated checks that no expectation names, in the summary's order.
    pub failed_checks: Vec<Check>,
}

/// The rule, and its only home. A run passes when it finished (not interrupted, timed out,
/// partial or aborted), its producers sent every arrival they planned (an arrival left unsent
/// is load the queue was never asked to take), every expectation holds, and every check that
/// no expectation names passed. An expectation on `checks.<name>` replaces that check's default: the check is then
/// judged by the expectation alone (`"checks.exactly_once" = "> 0"` makes duplicates the
/// expected outcome). Selectors do not apply to checks, so the name is matched as written.
pub(crate) fn judge(s: &RunSummary) -> Judgement {
    let failed_checks = failed_checks(&s.checks, &s.expectations);
    let finished = !s.interrupted && !s.timed_out && !s.partial && s.aborted_by.is_none() && s.producer.unsent == 0;
    let passed = finished && s.expectations.iter().all(|e| e.passed) && failed_checks.is_empty();
    Judgement { passed, failed_checks }
}

/// The checks that fail the run: violated, and named by no expectation.
fn failed_checks(checks: &[CheckResult], expectations: &[ExpectationResult]) -> Vec<Check> {
    checks.iter().filter(|c| !c.passed && gating(c.name, expectations).next().is_none()).map(|c| c.name).collect()
}

/// The expectations that name check `check` (`checks.<name>`), which judge it instead of its default.
pub(crate) fn gating(check: Check, expectations: &[ExpectationResult]) -> impl Iterator<Item = &ExpectationResult> {
    expectations.iter().filter(move |e| e.name.strip_prefix("checks.") == Some(check.name()))
}

/// The checks the scenario excused: violated, and judged instead by expectations that all held
/// (naive-duplicates' `"checks.exactly_once" = "> 0"`). A run that passes with such checks
/// passes because its scenario says so, and every verdict of it says which (`expected_note`).
pub(crate) fn expected_failures(s: &RunSummary) -> Vec<Check> {
    s.checks
        .iter()
        .filter(|c| !c.passed)
        .filter(|c| {
            let mut named = gating(c.name, &s.expectations).peekable();
            named.peek().is_some() && named.all(|e| e.passed)
        })
        .map(|c| c.name)
        .collect()
}

/// `3 checks failed as the scenario expects: exactly_once, ownership_overlap, …` (every name);
/// None for no check. What the verdict of a passing run adds, in every output.
pub(crate) fn expected_note(checks: &[Check]) -> Option<String> {
    expected_note_as(checks, |c| c.name().to_string())
}

/// `expected_note` with each check's name written by `name` (Markdown's code spans).
pub(crate) fn expected_note_as(checks: &[Check], name: impl Fn(Check) -> String) -> Option<String> {
    if checks.is_empty() {
        return None;
    }
    let names: Vec<String> = checks.iter().map(|&c| name(c)).collect();
    Some(format!(
        "{} failed as the scenario expects: {}",
        crate::model::words::count(checks.len() as u64, "check"),
        names.join(", ")
    ))
}

/// The verdict of a passing run with its expected failures: `PASSED (1 check failed as the
/// scenario expects: exactly_once)`, or `word` alone when there are none.
pub(crate) fn passed_words(word: &str, s: &RunSummary) -> String {
    match expected_note(&expected_failures(s)) {
        Some(note) if s.passed => format!("{word} ({note})"),
        _ => word.to_string(),
    }
}

/// The exit code a finished run earns.
pub(crate) fn verdict(summary: &RunSummary) -> ExitCode {
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

    /// A run cut short (a full disk: the database lost) printed `ok jobs.lost == 0` for a
    /// table it never read. Read from the final table, the value is unknown: not judged, shown
    /// as unknown, and the run does not pass (exit 3, with the reason).
    #[test]
    fn a_value_never_measured_is_unknown_and_not_judged() {
        let names = RunSummary::metric_names(&[], &[], &[]);
        let exps = vec![
            parse_expectation("jobs.lost", "== 0", &names).unwrap(),
            parse_expectation("jobs.enqueued", "> 0", &names).unwrap(),
            parse_expectation("latency_ms.claim.p99", "< 100", &names).unwrap(),
        ];
        let mut s =
            RunSummary { partial: true, partial_reason: "database lost: disk full".into(), ..Default::default() };
        s.jobs.enqueued = 10;
        s.expectations = evaluate(&exps, &s);
        let (lost, enqueued, p99) = (&s.expectations[0], &s.expectations[1], &s.expectations[2]);
        assert_eq!((lost.actual, lost.passed, lost.judged()), (None, false, false));
        assert_eq!((enqueued.actual, enqueued.passed), (Some(10.0), true), "counted as the jobs went in");
        assert_eq!((p99.actual, p99.judged()), (None, false), "no claim was timed");
        let shown = crate::report::terminal::checks_and_expectations(&s);
        assert!(shown.contains("--   jobs.lost == 0 (actual unknown: not measured, not judged)"), "{shown}");
        assert!(!shown.contains("ok   jobs.lost"), "{shown}");
        s.passed = judge(&s).passed;
        assert!(!s.passed);
        assert_eq!(verdict(&s), ExitCode::Infrastructure);
        let failures = crate::report::terminal::failures(&s);
        assert!(failures[0].contains("PARTIAL REPORT database lost: disk full"), "{failures:?}");
        assert!(failures.iter().any(|f| f.contains("expect jobs.lost == 0 (actual unknown")), "{failures:?}");
    }

    fn check(name: Check, violations: u64) -> CheckResult {
        CheckResult { name, passed: violations == 0, violations, ..Default::default() }
    }

    fn result(name: &str, expression: &str, passed: bool) -> ExpectationResult {
        ExpectationResult { name: name.into(), expression: expression.into(), actual: Some(0.0), passed }
    }

    #[test]
    fn a_violated_check_fails_the_run_unless_an_expectation_names_it() {
        let mut s = RunSummary {
            checks: vec![check(Check::ExactlyOnce, 12), check(Check::NoLostJobs, 0), check(Check::OwnershipOverlap, 3)],
            expectations: vec![result("executions.duplicate", "> 0", true)],
            ..Default::default()
        };
        let j = judge(&s);
        assert!(!j.passed);
        assert_eq!(j.failed_checks, [Check::ExactlyOnce, Check::OwnershipOverlap]);

        // Named checks are judged by their expectations: the run expects the duplicates.
        s.expectations.push(result("checks.exactly_once", "> 0", true));
        s.expectations.push(result("checks.ownership_overlap", ">= 0", true));
        assert_eq!(judge(&s), Judgement { passed: true, failed_checks: vec![] });

        // An expectation that names a check and fails still fails the run, on its own account.
        s.expectations[1].passed = false;
        assert_eq!(judge(&s), Judgement { passed: false, failed_checks: vec![] });

        // Only `checks.<name>` names a check; a metric with the check's name elsewhere does not.
        let s = RunSummary {
            checks: vec![check(Check::Starvation, 1)],
            expectations: vec![result("starvation.worst_age_s", "> 0", true)],
            ..Default::default()
        };
        assert_eq!(judge(&s).failed_checks, [Check::Starvation]);
    }

    #[test]
    fn a_run_that_did_not_finish_fails_whatever_its_checks_say() {
        let clean = RunSummary { checks: vec![check(Check::ExactlyOnce, 0)], ..Default::default() };
        assert!(judge(&clean).passed, "no expectations and every check held");
        for s in [
            RunSummary { interrupted: true, ..clean.clone() },
            RunSummary { timed_out: true, ..clean.clone() },
            RunSummary { partial: true, ..clean.clone() },
            RunSummary { aborted_by: Some("jobs.lost == 0".into()), ..clean.clone() },
        ] {
            assert_eq!(judge(&s), Judgement { passed: false, failed_checks: vec![] });
        }
    }

    #[test]
    fn a_pass_by_expected_failures_says_which_checks_failed() {
        let mut s = RunSummary {
            checks: vec![check(Check::ExactlyOnce, 12), check(Check::NoLostJobs, 0), check(Check::OwnershipOverlap, 3)],
            expectations: vec![
                result("checks.exactly_once", "> 0", true),
                result("checks.no_lost_jobs", "== 0", true),
                result("checks.ownership_overlap", ">= 0", true),
            ],
            ..Default::default()
        };
        s.passed = judge(&s).passed;
        assert_eq!(expected_failures(&s), [Check::ExactlyOnce, Check::OwnershipOverlap], "violated ones only");
        assert_eq!(
            passed_words("PASSED", &s),
            "PASSED (2 checks failed as the scenario expects: exactly_once, ownership_overlap)"
        );
        // An expectation on the check that failed: the check is no excused failure, and the run fails.
        s.expectations[2].passed = false;
        s.passed = judge(&s).passed;
        assert_eq!(expected_failures(&s), [Check::ExactlyOnce]);
        assert_eq!(passed_words("PASSED", &s), "PASSED", "a failed run's verdict is not a pass");
        // A check nobody named fails the run; nothing is excused.
        let s = RunSummary { checks: vec![check(Check::ExactlyOnce, 1)], ..Default::default() };
        assert!(expected_failures(&s).is_empty() && expected_note(&[]).is_none());
        assert_eq!(
            expected_note(&[Check::ExactlyOnce]).as_deref(),
            Some("1 check failed as the scenario expects: exactly_once")
        );
    }

    #[test]
    fn an_aborted_run_fails() {
        let s = RunSummary { passed: false, aborted_by: Some("jobs.lost == 0".into()), ..Default::default() };
        assert_eq!(verdict(&s), ExitCode::ExpectationFailed);
    }
}
