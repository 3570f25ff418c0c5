//! GitHub Actions: a Markdown summary appended to `$GITHUB_STEP_SUMMARY`
//! (with `--github`, or automatically when `GITHUB_ACTIONS=true` and the
//! variable is set) and `::error` annotations for what failed.

use crate::compare::stats::num;
use crate::compare::{Comparison, markdown as compare_markdown};
use crate::error::{Access, Error, Result};
use crate::gate;
use crate::model::summary::RunSummary;
use std::io::Write;

/// Should the run write the GitHub summary? `--github`, or running inside GitHub Actions.
pub(crate) fn enabled(flag: bool) -> bool {
    detect(flag, std::env::var("GITHUB_ACTIONS").ok().as_deref(), std::env::var_os("GITHUB_STEP_SUMMARY").is_some())
}

fn detect(flag: bool, actions: Option<&str>, has_summary: bool) -> bool {
    flag || (actions == Some("true") && has_summary)
}

/// The Markdown for one scenario's runs and comparison.
pub(crate) fn markdown(runs: &[&RunSummary], comparison: Option<&Comparison>) -> String {
    let Some(first) = runs.first() else { return String::new() };
    let passed = runs.iter().all(|r| r.passed) && !comparison.is_some_and(|c| c.regressed);
    let verdict = match expected(runs) {
        Some(note) if passed => format!("✅ passed ({note})"),
        _ if passed => "✅ passed".to_string(),
        _ => "❌ FAILED".to_string(),
    };
    let mut out = format!(
        "### queuebench: `{}` {verdict}\n\n{} · strategy `{}` · {}\n\n",
        first.scenario,
        crate::model::words::count(runs.len() as u64, "run"),
        first.strategy,
        crate::model::words::count(first.workers, "worker")
    );
    for (i, r) in runs.iter().enumerate() {
        if let Some(a) = &r.aborted_by {
            out.push_str(&format!("- run {}: **aborted** by `{a}`\n", i + 1));
        }
        for name in &r.failed_checks {
            let detail = r.checks.iter().find(|c| c.name == *name).map_or("", |c| c.detail.as_str());
            out.push_str(&format!(
                "- run {}: check `{name}` **FAILED**: {detail} (name `checks.{name}` in `[expect]` if the scenario expects it)\n",
                i + 1
            ));
        }
    }
    if runs.iter().any(|r| r.aborted_by.is_some() || !r.failed_checks.is_empty()) {
        out.push('\n');
    }
    if !first.expectations.is_empty() {
        out.push_str("| expectation | actual | verdict |\n|---|---:|---|\n");
        for (k, e) in first.expectations.iter().enumerate() {
            let actual: Vec<String> =
                runs.iter().map(|r| r.expectations.get(k).and_then(|e| e.actual).map_or("–".into(), num)).collect();
            let ok = runs.iter().all(|r| r.expectations.get(k).is_some_and(|e| e.passed));
            out.push_str(&format!(
                "| `{} {}` | {} | {} |\n",
                e.name,
                e.expression,
                actual.join(", "),
                if ok { "ok" } else { "**FAILED**" }
            ));
        }
        out.push('\n');
    }
    if let Some(c) = comparison {
        out.push_str(&compare_markdown(c));
    }
    out.push('\n');
    out
}

/// The checks that failed as the scenario expects in any of `runs`, in the first order seen, as
/// the verdict's note (names in code spans).
fn expected(runs: &[&RunSummary]) -> Option<String> {
    let mut all = Vec::new();
    for c in runs.iter().flat_map(|r| gate::expected_failures(r)) {
        if !all.contains(&c) {
            all.push(c);
        }
    }
    gate::expected_note_as(&all, |c| format!("`{c}`"))
}

/// Appends to `$GITHUB_STEP_SUMMARY`, or prints to stdout when it is not set.
pub(crate) fn append(text: &str) -> Result<()> {
    match std::env::var_os("GITHUB_STEP_SUMMARY") {
        Some(path) => {
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(|e| Error::io(Access::OpenStepSummary, &path, e))?;
            f.write_all(text.as_bytes()).map_err(|e| Error::io(Access::WriteStepSummary, &path, e))
        }
        None => {
            print!("{text}");
            Ok(())
        }
    }
}

/// `::error` workflow commands, one per failed expectation, failed check, abort and regression;
/// a `::warning` when the baseline's fingerprint differs.
pub(crate) fn annotations(runs: &[&RunSummary], comparison: Option<&Comparison>) -> Vec<String> {
    let mut out = Vec::new();
    for r in runs {
        let title = format!("queuebench {}", r.scenario);
        if let Some(a) = &r.aborted_by {
            out.push(format!("::error title={title}::aborted by {a}"));
        }
        for e in r.expectations.iter().filter(|e| !e.passed) {
            let actual = e.actual.map_or_else(|| e.actual_shown(), num);
            out.push(format!("::error title={title}::expectation {} {} failed: actual {actual}", e.name, e.expression));
        }
        for name in &r.failed_checks {
            out.push(format!("::error title={title}::{}", super::terminal::check_failure(r, *name)));
        }
    }
    if let Some(c) = comparison {
        let differences = c.fingerprint.differences();
        if !differences.is_empty() {
            let list: Vec<String> = differences.iter().map(ToString::to_string).collect();
            out.push(format!(
                "::warning title=queuebench baseline::the baseline was made on a different kind of machine or run: {}",
                list.join("; ")
            ));
        }
        for r in c.regressions() {
            out.push(format!(
                "::error title=queuebench baseline::{} {}: {} → {} (allowed {})",
                r.metric,
                r.verdict.word().to_lowercase(),
                r.old.show(),
                r.new.map_or("–".into(), |n| n.show()),
                r.allowed
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::check::Check;
    use crate::model::summary::{CheckResult, ExpectationResult};

    #[test]
    fn detection_needs_both_variables_or_the_flag() {
        assert!(detect(true, None, false));
        assert!(detect(false, Some("true"), true));
        assert!(!detect(false, Some("true"), false));
        assert!(!detect(false, Some("false"), true));
        assert!(!detect(false, None, true));
    }

    #[test]
    fn markdown_and_annotations_name_the_failure_with_its_value() {
        let mut s = RunSummary { scenario: "smoke".into(), strategy: "naive".into(), workers: 8, ..Default::default() };
        s.expectations = vec![ExpectationResult {
            name: "executions.duplicate".into(),
            expression: "== 0".into(),
            actual: Some(37.0),
            passed: false,
        }];
        let md = markdown(&[&s], None);
        assert!(md.starts_with("### queuebench: `smoke` ❌ FAILED"), "{md}");
        assert!(md.contains("| `executions.duplicate == 0` | 37 | **FAILED** |"), "{md}");
        let a = annotations(&[&s], None);
        assert_eq!(a, ["::error title=queuebench smoke::expectation executions.duplicate == 0 failed: actual 37"]);
    }

    #[test]
    fn markdown_and_annotations_name_a_check_that_failed_the_run() {
        let mut s = RunSummary { scenario: "smoke".into(), strategy: "naive".into(), workers: 4, ..Default::default() };
        s.checks = vec![
            CheckResult {
                name: Check::ExactlyOnce,
                passed: false,
                violations: 12,
                detail: "12 of 40 executed jobs ran more than once".into(),
                examples: vec![4],
            },
            CheckResult {
                name: Check::OwnershipOverlap,
                passed: false,
                violations: 2,
                detail: "2 jobs had two workers".into(),
                examples: vec![],
            },
        ];
        // ownership_overlap is named by an expectation (and holds by it); exactly_once is not.
        s.expectations = vec![ExpectationResult {
            name: "checks.ownership_overlap".into(),
            expression: ">= 0".into(),
            actual: Some(2.0),
            passed: true,
        }];
        s.failed_checks = vec![Check::ExactlyOnce];
        let md = markdown(&[&s], None);
        assert!(md.starts_with("### queuebench: `smoke` ❌ FAILED"), "{md}");
        assert!(
            md.contains(
                "- run 1: check `exactly_once` **FAILED**: 12 of 40 executed jobs ran more than once \
                 (name `checks.exactly_once` in `[expect]` if the scenario expects it)"
            ),
            "{md}"
        );
        assert!(!md.contains("check `ownership_overlap`"), "{md}");
        assert!(md.contains("| `checks.ownership_overlap >= 0` | 2 | ok |"), "{md}");
        let a = annotations(&[&s], None);
        assert_eq!(
            a,
            ["::error title=queuebench smoke::check exactly_once failed: 12 of 40 executed jobs ran more than once \
              (name \"checks.exactly_once\" in [expect] if the scenario expects it)"]
        );
    }
}
