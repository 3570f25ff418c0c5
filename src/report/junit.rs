//! `junit.xml`: one test suite per run, one test case per expectation, per
//! checker and for the run itself (timed out, interrupted or aborted), and a
//! `baseline` suite with one case per compared metric. Failure messages
//! carry the actual value. JUnit failures match exit code 1 (`gate::judge`):
//! a violated checker that no expectation names is a failure; a checker that
//! an expectation names (`checks.<name>`) passes or fails with it, so a
//! scenario that expects a bug (`"checks.exactly_once" = "> 0"`) passes.

use crate::compare::stats::num;
use crate::compare::{Comparison, Verdict};
use crate::gate;
use crate::model::summary::RunSummary;
use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

fn failure(message: String, ty: &str) -> TestCaseStatus {
    let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
    s.set_message(message).set_type(ty);
    s
}

fn case(name: String, class: String, status: TestCaseStatus, out: Option<String>) -> TestCase {
    let mut c = TestCase::new(name, status);
    c.set_classname(class);
    if let Some(o) = out {
        c.set_system_out(o);
    }
    c
}

fn run_suite(label: &str, s: &RunSummary) -> TestSuite {
    let mut suite = TestSuite::new(label.to_string());
    let class = |part: &str| format!("queuebench.{}.{part}", s.scenario);
    let stopped = if let Some(a) = &s.aborted_by {
        Some(format!("aborted by {a}"))
    } else if s.interrupted {
        Some("interrupted (Ctrl-C / SIGTERM)".to_string())
    } else if s.timed_out {
        Some("hit run.timeout before its stop condition".to_string())
    } else {
        None
    };
    let status = match &stopped {
        Some(why) => failure(format!("the run did not finish: {why}"), "run"),
        None => TestCaseStatus::success(),
    };
    suite.add_test_case(case("run finished".into(), class("run"), status, None));
    for e in &s.expectations {
        let actual = e.actual.map_or("not in this run's summary".to_string(), num);
        let status = if e.passed {
            TestCaseStatus::success()
        } else {
            failure(format!("{} {}: actual {actual}", e.name, e.expression), "expectation")
        };
        let out = Some(format!("{} {} (actual {actual})", e.name, e.expression));
        suite.add_test_case(case(format!("expect {} {}", e.name, e.expression), class("expectations"), status, out));
    }
    for c in &s.checks {
        let examples = if c.examples.is_empty() { String::new() } else { format!("; example jobs {:?}", c.examples) };
        let mut text = format!("{}: {} violation(s): {}{examples}", c.name, c.violations, c.detail);
        let named: Vec<_> = gate::gating(c.name, &s.expectations).collect();
        if !c.passed && !named.is_empty() && named.iter().all(|e| e.passed) {
            let exprs: Vec<String> = named.iter().map(|e| format!("{} {}", e.name, e.expression)).collect();
            text.push_str(&format!("; failed as the scenario expects ({})", exprs.join(", ")));
        }
        let status = if named.is_empty() {
            if c.passed {
                TestCaseStatus::success()
            } else {
                let hint = format!("name \"checks.{}\" in [expect] if the scenario expects it", c.name);
                failure(format!("{text} ({hint})"), "check")
            }
        } else if let Some(e) = named.iter().find(|e| !e.passed) {
            failure(format!("{text}; the scenario expects checks.{} {}", c.name, e.expression), "check")
        } else {
            TestCaseStatus::success()
        };
        suite.add_test_case(case(format!("check {}", c.name), class("checks"), status, Some(text)));
    }
    suite
}

fn baseline_suite(c: &Comparison) -> TestSuite {
    let mut suite = TestSuite::new(format!("baseline: {} → {}", c.old_label, c.new_label));
    for r in &c.rows {
        let new = r.new.map_or("–".to_string(), |n| n.show());
        let change = r.change.map_or(String::new(), |x| format!(" ({:+.1}%)", x * 100.0));
        let text = format!("{}: old {} → new {new}{change}, allowed {}", r.metric, r.old.show(), r.allowed);
        let status = match r.verdict {
            Verdict::Regressed => failure(format!("regression: {text}"), "baseline"),
            Verdict::Missing => failure(format!("not measured in the new run: {text}"), "baseline"),
            _ => TestCaseStatus::success(),
        };
        suite.add_test_case(case(format!("baseline {}", r.metric), "queuebench.baseline".into(), status, Some(text)));
    }
    suite
}

/// One run of a junit.xml: its test suite's name ("smoke", or "smoke #2" among repeats) and
/// its summary.
pub(crate) struct LabelledRun<'a> {
    pub(crate) label: String,
    pub(crate) summary: &'a RunSummary,
}

/// The XML text for `runs` and an optional baseline comparison.
pub(crate) fn junit(runs: &[LabelledRun<'_>], comparison: Option<&Comparison>) -> String {
    let mut report = Report::new("queuebench");
    for run in runs {
        report.add_test_suite(run_suite(&run.label, run.summary));
    }
    if let Some(c) = comparison {
        report.add_test_suite(baseline_suite(c));
    }
    report.to_string().expect("JUnit XML serialises")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{Labels, Tolerances, compare};
    use crate::model::check::Check;
    use crate::model::summary::{CheckResult, ExpectationResult};

    fn summary() -> RunSummary {
        let mut s = RunSummary { scenario: "smoke".into(), ..Default::default() };
        s.expectations = vec![
            ExpectationResult {
                name: "executions.duplicate".into(),
                expression: "== 0".into(),
                actual: Some(37.0),
                passed: false,
            },
            ExpectationResult { name: "jobs.lost".into(), expression: "== 0".into(), actual: Some(0.0), passed: true },
        ];
        s.checks = vec![
            CheckResult {
                name: Check::ExactlyOnce,
                passed: false,
                violations: 12,
                detail: "12 jobs ran twice".into(),
                examples: vec![4, 9],
            },
            CheckResult { name: Check::NoLostJobs, passed: true, ..Default::default() },
        ];
        s
    }

    #[test]
    fn junit_parses_back_with_the_actual_values_in_the_failures() {
        let s = summary();
        let mut better = s.clone();
        better.throughput.jobs_per_sec = 1000.0;
        let mut worse = s.clone();
        worse.throughput.jobs_per_sec = 500.0;
        let cmp =
            compare(&[better], &[worse], &Tolerances::default(), Labels { old: "baseline main", new: "this run" });
        let xml = junit(&[LabelledRun { label: "smoke".into(), summary: &s }], Some(&cmp));
        let doc = roxmltree::Document::parse(&xml).expect("junit.xml is well-formed XML");
        let root = doc.root_element();
        assert_eq!(root.tag_name().name(), "testsuites");
        let suites: Vec<_> = root.children().filter(|n| n.has_tag_name("testsuite")).collect();
        assert_eq!(suites.len(), 2);
        let cases: Vec<_> = suites[0].children().filter(|n| n.has_tag_name("testcase")).collect();
        assert_eq!(cases.len(), 1 + 2 + 2, "run + two expectations + two checks");
        let failure_of = |name: &str| {
            let c = doc.descendants().find(|n| n.has_tag_name("testcase") && n.attribute("name") == Some(name));
            let c = c.unwrap_or_else(|| panic!("no testcase {name} in\n{xml}"));
            c.children().find(|n| n.has_tag_name("failure")).and_then(|f| f.attribute("message")).map(String::from)
        };
        assert_eq!(
            failure_of("expect executions.duplicate == 0").as_deref(),
            Some("executions.duplicate == 0: actual 37")
        );
        assert_eq!(failure_of("expect jobs.lost == 0"), None);
        assert_eq!(failure_of("run finished"), None);
        // No expectation names exactly_once: its violation fails the run, and says how to expect it.
        let msg = failure_of("check exactly_once").expect("a violated check that no expectation names fails");
        assert!(msg.starts_with("exactly_once: 12 violation(s): 12 jobs ran twice; example jobs [4, 9]"), "{msg}");
        assert!(msg.ends_with("(name \"checks.exactly_once\" in [expect] if the scenario expects it)"), "{msg}");
        assert_eq!(failure_of("check no_lost_jobs"), None);
        assert!(!xml.contains("<skipped"), "nothing is skipped");
        let msg = failure_of("baseline throughput.jobs_per_sec").expect("the throughput drop is a failure");
        assert!(msg.contains("old 1000 → new 500") && msg.contains("-50.0%"), "{msg}");
        assert_eq!(suites[0].attribute("failures"), Some("2"));
    }

    #[test]
    fn gated_checks_and_aborted_runs_fail() {
        let mut s = summary();
        s.expectations.push(ExpectationResult {
            name: "checks.exactly_once".into(),
            expression: "== 0".into(),
            actual: Some(12.0),
            passed: false,
        });
        s.aborted_by = Some("executions.duplicate == 0, abort (live value 3 at 0.4 s)".into());
        let xml = junit(&[LabelledRun { label: "smoke".into(), summary: &s }], None);
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let failed: Vec<&str> = doc
            .descendants()
            .filter(|n| n.has_tag_name("testcase") && n.children().any(|c| c.has_tag_name("failure")))
            .filter_map(|n| n.attribute("name"))
            .collect();
        assert!(failed.contains(&"check exactly_once") && failed.contains(&"run finished"), "{failed:?}");
        assert!(xml.contains("aborted by executions.duplicate == 0"));
    }

    /// (name, failure message) of every test case of `xml`.
    fn cases(xml: &str) -> Vec<(String, Option<String>)> {
        let doc = roxmltree::Document::parse(xml).unwrap();
        let failure = |n: roxmltree::Node| {
            n.children().find(|c| c.has_tag_name("failure")).and_then(|f| f.attribute("message")).map(String::from)
        };
        doc.descendants()
            .filter(|n| n.has_tag_name("testcase"))
            .map(|n| (n.attribute("name").unwrap_or_default().to_string(), failure(n)))
            .collect()
    }

    #[test]
    fn a_check_an_expectation_names_passes_or_fails_with_it() {
        let mut s = summary();
        s.expectations = vec![ExpectationResult {
            name: "checks.exactly_once".into(),
            expression: "> 0".into(),
            actual: Some(12.0),
            passed: true,
        }];
        let all = cases(&junit(&[LabelledRun { label: "smoke".into(), summary: &s }], None));
        assert!(all.iter().all(|(_, f)| f.is_none()), "the scenario expects the duplicates: {all:?}");
        assert!(all.iter().any(|(n, _)| n == "check exactly_once"));

        // The same expectation on a run without duplicates: the check held, but not as expected.
        s.checks[0] = CheckResult { name: Check::ExactlyOnce, passed: true, ..Default::default() };
        s.expectations[0].actual = Some(0.0);
        s.expectations[0].passed = false;
        let all = cases(&junit(&[LabelledRun { label: "smoke".into(), summary: &s }], None));
        let failed: Vec<_> = all.iter().filter_map(|(n, f)| Some((n.as_str(), f.as_deref()?))).collect();
        assert_eq!(
            failed,
            [
                ("expect checks.exactly_once > 0", "checks.exactly_once > 0: actual 0"),
                ("check exactly_once", "exactly_once: 0 violation(s): ; the scenario expects checks.exactly_once > 0"),
            ]
        );
    }
}
