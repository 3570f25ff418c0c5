//! `run --pg-version 14,15,16`: the runs of each scenario grouped by PostgreSQL major, each
//! group's spread of the figures that differ between servers (jobs/s, claim p99, dead tuples)
//! and of every check's verdict, and, with repeats, every major against the first with the
//! baseline comparison's statistics (median, min–max, the rank test). The figures only:
//! `report::versions` writes them as Markdown, CSV and HTML.

use super::stats::Spread;
use super::{Labels, Row, Tolerances, Verdict, compare};
use crate::model::summary::RunSummary;
use crate::model::tolerance::{P99_RISE, Rule};

/// The metrics each major is compared on, with their column titles.
pub(crate) const COMPARED: [(&str, &str); 4] = [
    ("throughput.jobs_per_sec", "jobs/s"),
    ("latency_ms.claim.p99", "claim p99 ms"),
    ("dead_tuples.peak", "dead tuples peak"),
    ("dead_tuples.growth_per_s", "dead tuples growth/s"),
];

/// One scenario on one major, over its repeats.
#[derive(Debug, Clone)]
pub(crate) struct VersionGroup {
    pub scenario: String,
    pub major: Option<u32>,
    /// What the first run's server said it was (`14.23`).
    pub server_version: String,
    pub runs: usize,
    pub passed: usize,
    /// Each of [`COMPARED`]'s spread over the runs (None: not measured, e.g. no claims).
    pub figures: Vec<Option<Spread>>,
    /// Every check any run of the scenario ran, and in how many of this group's runs it failed.
    pub checks: Vec<(String, usize)>,
    /// The expectations that failed in some run, with how many.
    pub expectations: Vec<(String, usize)>,
    /// Against the scenario's first major, when either side has more than one run: the
    /// comparison's row for each of [`COMPARED`] (None: the first major itself, or no repeats).
    pub against_first: Option<Vec<Option<Row>>>,
}

impl VersionGroup {
    pub(crate) fn verdict(&self) -> String {
        if self.passed == self.runs {
            return "PASSED".into();
        }
        let failed: Vec<String> = self
            .checks
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(c, _)| c.clone())
            .chain(self.expectations.iter().map(|(e, _)| format!("`{e}`")))
            .collect();
        let runs =
            if self.runs > 1 { format!("{} of {} runs: ", self.runs - self.passed, self.runs) } else { String::new() };
        format!("FAILED ({runs}{})", failed.join(", "))
    }
}

/// A verdict of the comparison in the words of a version matrix.
pub(crate) fn word(v: Verdict) -> &'static str {
    match v {
        Verdict::Ok => "no clear change",
        Verdict::Better => "better",
        Verdict::Regressed => "worse",
        Verdict::Missing => "not measured",
    }
}

/// Groups `runs` (in the order given) by scenario and major, the majors in the order they first
/// appear; `tolerances(scenario)` are the scenario's own, as its baseline comparison uses them.
/// An interrupted run is left out, as a baseline leaves it out: it stopped part-way, and its
/// figures are not the version's.
pub(crate) fn groups<'a>(
    runs: &[RunSummary],
    tolerances: impl Fn(&str) -> Option<&'a Tolerances>,
) -> Vec<VersionGroup> {
    let finished: Vec<RunSummary> = runs.iter().filter(|r| !r.interrupted).cloned().collect();
    let runs = &finished[..];
    let mut keys: Vec<(String, Option<u32>)> = Vec::new();
    for r in runs {
        let key = (r.scenario.clone(), r.database.server_major);
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    let mut out = Vec::new();
    for (scenario, major) in &keys {
        let of = |m: &Option<u32>| -> Vec<RunSummary> {
            runs.iter().filter(|r| &r.scenario == scenario && &r.database.server_major == m).cloned().collect()
        };
        let these = of(major);
        let all: Vec<&RunSummary> = runs.iter().filter(|r| &r.scenario == scenario).collect();
        let mut group = group(scenario, *major, &these, &all);
        let first = keys.iter().find(|(s, _)| s == scenario).map(|(_, m)| *m);
        let first_runs = of(&first.flatten());
        if first != Some(*major) && (these.len() > 1 || first_runs.len() > 1) {
            let mut tol = tolerances(scenario).cloned().unwrap_or_default();
            tol.rules.entry("dead_tuples.peak".into()).or_insert(Rule::Relative(P99_RISE));
            tol.rules.entry("dead_tuples.growth_per_s".into()).or_insert(Rule::Relative(P99_RISE));
            let (old, new) = (label(first.flatten()), label(*major));
            let c = compare(&first_runs, &these, &tol, Labels { old: &old, new: &new });
            group.against_first =
                Some(COMPARED.iter().map(|(m, _)| c.rows.iter().find(|r| r.metric == *m).cloned()).collect());
        }
        out.push(group);
    }
    out
}

fn label(major: Option<u32>) -> String {
    major.map_or("PostgreSQL ?".into(), |m| format!("PostgreSQL {m}"))
}

fn group(scenario: &str, major: Option<u32>, runs: &[RunSummary], all: &[&RunSummary]) -> VersionGroup {
    let metrics: Vec<_> = runs.iter().map(RunSummary::metrics).collect();
    let figures = COMPARED
        .iter()
        .map(|(m, _)| Spread::of(&metrics.iter().filter_map(|x| x.get(*m).copied()).collect::<Vec<_>>()))
        .collect();
    let mut checks: Vec<(String, usize)> = Vec::new();
    for c in all.iter().flat_map(|r| &r.checks) {
        let name = c.name.name().to_string();
        if !checks.iter().any(|(n, _)| *n == name) {
            let failed = runs.iter().filter(|r| r.checks.iter().any(|x| x.name == c.name && !x.passed)).count();
            checks.push((name, failed));
        }
    }
    let mut expectations: Vec<(String, usize)> = Vec::new();
    for e in runs.iter().flat_map(|r| &r.expectations).filter(|e| !e.passed) {
        // A scenario's `[expect]` keeps the metric in `name` and `== 2000` in `expression`.
        let text = if e.expression.starts_with(&e.name) {
            e.expression.clone()
        } else {
            format!("{} {}", e.name, e.expression)
        };
        match expectations.iter_mut().find(|(x, _)| *x == text) {
            Some((_, n)) => *n += 1,
            None => expectations.push((text, 1)),
        }
    }
    VersionGroup {
        scenario: scenario.to_string(),
        major,
        server_version: runs.first().map(|r| r.database.server_version.clone()).unwrap_or_default(),
        runs: runs.len(),
        passed: runs.iter().filter(|r| r.passed).count(),
        figures,
        checks,
        expectations,
        against_first: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::check::Check;
    use crate::model::summary::CheckResult;

    fn run(major: u32, jobs_per_sec: f64, duplicate_fails: bool) -> RunSummary {
        let mut s = RunSummary { scenario: "skip-locked".into(), passed: !duplicate_fails, ..Default::default() };
        s.database.server_major = Some(major);
        s.database.server_version = format!("{major}.1");
        s.throughput.jobs_per_sec = jobs_per_sec;
        s.latency_ms.claim.count = 10;
        s.latency_ms.claim.p99 = 2.0;
        s.dead_tuples.peak = 100;
        s.checks.push(CheckResult { name: Check::ExactlyOnce, passed: !duplicate_fails, ..Default::default() });
        s
    }

    #[test]
    fn an_interrupted_run_is_left_out_of_its_majors_figures() {
        let mut cut = run(18, 5.0, true);
        cut.interrupted = true;
        let runs = [run(14, 1000.0, false), run(18, 400.0, false), cut];
        let g = groups(&runs, |_| None);
        assert_eq!((g[1].major, g[1].runs, g[1].passed), (Some(18), 1, 1), "{g:?}");
        // Only interrupted runs of a major: that major has no group.
        let mut only = run(16, 5.0, false);
        only.interrupted = true;
        assert_eq!(groups(&[run(14, 1000.0, false), only], |_| None).len(), 1);
    }

    #[test]
    fn majors_are_grouped_with_their_spread_checks_and_the_first_as_reference() {
        let runs = [run(14, 1000.0, false), run(18, 400.0, true), run(14, 1100.0, false), run(18, 420.0, false)];
        let g = groups(&runs, |_| None);
        assert_eq!(g.len(), 2);
        assert_eq!((g[0].major, g[0].runs, g[0].passed), (Some(14), 2, 2));
        assert_eq!(g[0].figures[0].unwrap().median, 1050.0);
        assert!(g[0].against_first.is_none(), "the first major is the reference");
        assert_eq!(g[1].checks, vec![("exactly_once".to_string(), 1)]);
        assert_eq!(g[1].verdict(), "FAILED (1 of 2 runs: exactly_once)");
        let rows = g[1].against_first.as_ref().expect("repeats compare against the first major");
        let jobs = rows[0].as_ref().expect("jobs/s compared");
        // Two runs a side: the tolerance judges (the rank test needs three), and 60% fewer jobs/s is worse.
        assert_eq!((word(jobs.verdict), jobs.p), ("worse", None));
        assert!((jobs.change.unwrap() + 0.6).abs() < 0.01, "{:?}", jobs.change);
        assert_eq!(rows[2].as_ref().map(|r| word(r.verdict)), Some("no clear change"));
    }

    #[test]
    fn a_failed_expectation_is_named_with_its_metric() {
        let mut s = run(14, 10.0, false);
        s.passed = false;
        s.expectations.push(crate::model::summary::ExpectationResult {
            name: "jobs.completed".into(),
            expression: "== 2000".into(),
            actual: Some(1730.0),
            passed: false,
        });
        assert_eq!(groups(&[s], |_| None)[0].verdict(), "FAILED (`jobs.completed == 2000`)");
    }

    #[test]
    fn one_run_a_major_has_no_comparison() {
        let g = groups(&[run(14, 1000.0, false), run(18, 400.0, false)], |_| None);
        assert!(g.iter().all(|g| g.against_first.is_none()));
        assert_eq!(g[1].verdict(), "PASSED");
    }
}
