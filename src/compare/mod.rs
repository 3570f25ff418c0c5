//! Baseline comparison: two sets of runs of one scenario (a saved baseline
//! and the run just made, or any two summaries), metric by metric, with the
//! tolerances of `tolerance.rs`. Throughput and latency compare medians over
//! the repeats; correctness counters compare the worst repeat, so one
//! duplicate in any repeat fails. The result is a table (terminal,
//! compare.md, compare.json) and a verdict: exit 1 on any regression.

pub mod stats;
pub(crate) mod store;
pub(crate) mod versions;

use crate::model::check;
use crate::model::fingerprint::Check;
pub(crate) use crate::model::fingerprint::Labels;
use crate::model::summary::RunSummary;
pub(crate) use crate::model::tolerance::Tolerances;
use crate::model::tolerance::{Kind, LATENCY_SLACK_MS, Rule, kind};
use serde::Serialize;
use stats::{RANK_TEST_RUNS, SIGNIFICANT, Spread, num};
use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Verdict {
    Ok,
    Better,
    Regressed,
    /// In the old runs only: the new runs did not measure it (a phase that never ran, a class
    /// without jobs, a checker that is gone). Fails the comparison like a regression.
    Missing,
}

impl Verdict {
    /// Whether this row fails the comparison (exit 1).
    pub(crate) fn fails(self) -> bool {
        matches!(self, Verdict::Regressed | Verdict::Missing)
    }

    pub(crate) fn word(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Better => "better",
            Verdict::Regressed => "REGRESSED",
            Verdict::Missing => "MISSING",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Row {
    pub metric: String,
    pub kind: Kind,
    pub old: Spread,
    pub new: Option<Spread>,
    /// Relative change of the judged value (median, or max for counters); None when old is 0.
    pub change: Option<f64>,
    /// What was allowed, in words ("-30%", "+50%", "no rise").
    pub allowed: String,
    /// The rank test's p-value that the new runs are worse (`stats::p_worse`), when both sides
    /// have `RANK_TEST_RUNS` runs or more and the metric is a rate or a latency. A change past
    /// the tolerance with p above `SIGNIFICANT` is noise, not a regression.
    pub p: Option<f64>,
    pub verdict: Verdict,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Comparison {
    pub old_label: String,
    pub new_label: String,
    pub old_runs: usize,
    pub new_runs: usize,
    pub rows: Vec<Row>,
    pub regressed: bool,
    /// Whether the two sides are comparable runs, by their fingerprints (their first runs').
    pub fingerprint: Check,
    /// The checks that failed in the new runs as their scenario expects (`gate::expected_failures`):
    /// a row's "ok" says no worse than the baseline, not correct, and the table says so above it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub expected_failures: Vec<check::Check>,
}

impl Comparison {
    pub(crate) fn regressions(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(|r| r.verdict.fails())
    }
}

fn values(runs: &[RunSummary]) -> Vec<BTreeMap<String, f64>> {
    runs.iter().map(RunSummary::metrics).collect()
}

/// One metric's value in each run that has it.
fn runs_of(metrics: &[BTreeMap<String, f64>], metric: &str) -> Vec<f64> {
    metrics.iter().filter_map(|m| m.get(metric).copied()).collect()
}

/// Compares `new` runs with `old` runs of the same scenario.
pub(crate) fn compare(old: &[RunSummary], new: &[RunSummary], tol: &Tolerances, labels: Labels<'_>) -> Comparison {
    let (om, nm) = (values(old), values(new));
    let names: BTreeSet<&String> = om.iter().chain(&nm).flat_map(|m| m.keys()).collect();
    let mut rows = Vec::new();
    for metric in names {
        let Some(Rule::Relative(allowed)) = tol.rule(metric) else { continue };
        let (ov, nv) = (runs_of(&om, metric), runs_of(&nm, metric));
        let Some(o) = Spread::of(&ov) else { continue };
        let n = Spread::of(&nv);
        let k = kind(metric);
        if k != Kind::Counter && o.median == 0.0 && n.is_none_or(|n| n.median == 0.0) {
            continue; // a latency or rate neither side measured
        }
        let p = (k != Kind::Counter && ov.len() >= RANK_TEST_RUNS && nv.len() >= RANK_TEST_RUNS)
            .then(|| stats::p_worse(&ov, &nv, |o, n| if k == Kind::Higher { n < o } else { n > o }));
        rows.push(judge(metric, k, (o, n), allowed, p));
    }
    let regressed = rows.iter().any(|r| r.verdict.fails());
    let first = |runs: &[RunSummary]| runs.first().and_then(|r| r.fingerprint.clone());
    let fingerprint = Check::of(first(old).as_ref(), first(new).as_ref(), labels);
    let mut expected_failures = Vec::new();
    for c in new.iter().filter(|r| r.passed).flat_map(crate::gate::expected_failures) {
        if !expected_failures.contains(&c) {
            expected_failures.push(c);
        }
    }
    Comparison {
        expected_failures,
        old_label: labels.old.to_string(),
        new_label: labels.new.to_string(),
        old_runs: old.len(),
        new_runs: new.len(),
        rows,
        regressed,
        fingerprint,
    }
}

/// The verdict on one metric: worse than the tolerance allows (and, with enough runs, worse by
/// the rank test too) is a regression.
fn judge(metric: &str, k: Kind, (o, n): (Spread, Option<Spread>), allowed: f64, p: Option<f64>) -> Row {
    let pick = |s: &Spread| if k == Kind::Counter { s.max } else { s.median };
    let allowed_text = match (k, allowed) {
        (Kind::Counter, 0.0) => "no rise".to_string(),
        (Kind::Higher, a) => format!("-{}%", num(a * 100.0)),
        (_, a) => format!("+{}%", num(a * 100.0)),
    };
    let mut row = Row {
        metric: metric.to_string(),
        kind: k,
        old: o,
        new: n,
        change: None,
        allowed: allowed_text,
        p,
        verdict: Verdict::Ok,
    };
    let Some(n) = n else {
        row.verdict = Verdict::Missing;
        return row;
    };
    let (ov, nv) = (pick(&o), pick(&n));
    row.change = (ov != 0.0).then(|| (nv - ov) / ov.abs());
    // How much worse the new value is, as a fraction of the old (positive = worse).
    let worse = match k {
        Kind::Higher => ov - nv,
        Kind::Lower | Kind::Counter => nv - ov,
    };
    let limit = ov.abs() * allowed;
    let slack =
        if metric.starts_with("latency_ms.") || metric.contains(".latency_ms.") { LATENCY_SLACK_MS } else { 0.0 };
    // With enough runs a side, a move past the tolerance must also stand out of the runs'
    // spread: beyond it by the rank test, in that direction.
    let worse_by_rank = p.is_none_or(|p| p <= SIGNIFICANT);
    let better_by_rank = p.is_none_or(|p| 1.0 - p <= SIGNIFICANT);
    row.verdict = if worse > limit && worse > slack && worse_by_rank {
        Verdict::Regressed
    } else if -worse > limit.max(slack) && -worse > 0.0 && better_by_rank {
        Verdict::Better
    } else {
        Verdict::Ok
    };
    row
}

/// The comparison as a Markdown table (compare.md, the GitHub step summary).
pub(crate) fn markdown(c: &Comparison) -> String {
    let mut out = format!(
        "Baseline comparison: {} ({} run{}) → {} ({} run{}). Values: median (min–max) over runs; correctness counters are judged on their worst run.\n\n",
        c.old_label,
        c.old_runs,
        if c.old_runs == 1 { "" } else { "s" },
        c.new_label,
        c.new_runs,
        if c.new_runs == 1 { "" } else { "s" }
    );
    for line in c.fingerprint.lines() {
        // Indented lines are the differences: a list under the warning.
        match line.strip_prefix("  ") {
            Some(d) => out.push_str(&format!("- `{d}`\n")),
            None => out.push_str(&format!("**{line}**\n\n")),
        }
    }
    if !c.fingerprint.lines().is_empty() {
        out.push('\n');
    }
    if let Some(line) = expected_line(c, |k| format!("`{k}`")) {
        out.push_str(&format!("{line}\n\n"));
    }
    out.push_str("| metric | old | new | change | allowed | verdict |\n|---|---:|---:|---:|---:|---|\n");
    for r in &c.rows {
        let [metric, old, new, change, allowed, verdict] = cells(r);
        let v = if r.verdict.fails() { format!("**{verdict}**") } else { verdict };
        out.push_str(&format!("| `{metric}` | {old} | {new} | {change} | {allowed} | {v} |\n"));
    }
    out.push_str(&format!("\n{}\n", if c.regressed { "**Regression**: exit 1." } else { "No regression." }));
    out
}

/// `The new run passed; 2 checks failed as the scenario expects: …. "ok" below compares with
/// the baseline: it does not say those checks held.` None without such checks.
fn expected_line(c: &Comparison, name: impl Fn(check::Check) -> String) -> Option<String> {
    let note = crate::gate::expected_note_as(&c.expected_failures, name)?;
    Some(format!(
        "{} passed; {note}. \"ok\" below compares with the baseline: it does not say those checks held.",
        if c.new_runs == 1 { "The new run" } else { "The new runs" }
    ))
}

fn cells(r: &Row) -> [String; 6] {
    let change = match r.change {
        Some(c) => format!("{:+.1}%", c * 100.0),
        None if r.kind == Kind::Counter && r.new.is_some_and(|n| n.max != 0.0) => {
            format!("+{}", num(r.new.map_or(0.0, |n| n.max)))
        }
        None if r.new.is_some_and(|n| n.max != 0.0) => "new".into(),
        None => "–".into(),
    };
    [r.metric.clone(), r.old.show(), r.new.map_or("–".into(), |n| n.show()), change, r.allowed.clone(), verdict_cell(r)]
}

/// The verdict, and the rank test's p-value where it decided or could have: `ok (noise, p=0.35)`
/// for a move past the tolerance that the runs' spread explains.
fn verdict_cell(r: &Row) -> String {
    let past_tolerance = r.change.is_some_and(|c| match r.kind {
        Kind::Higher => -c > 0.0,
        _ => c > 0.0,
    });
    match (r.verdict, r.p) {
        (Verdict::Ok, Some(p)) if past_tolerance && p > SIGNIFICANT && beyond_allowed(r) => {
            format!("ok (noise, p={p:.2})")
        }
        (Verdict::Regressed, Some(p)) => format!("{} (p={p:.3})", r.verdict.word()),
        (v, _) => v.word().to_string(),
    }
}

/// Whether the judged change went past what the tolerance allows (before the rank test).
fn beyond_allowed(r: &Row) -> bool {
    let allowed: f64 = r.allowed.trim_start_matches(['+', '-']).trim_end_matches('%').parse().unwrap_or(f64::INFINITY);
    r.change.is_some_and(|c| c.abs() * 100.0 > allowed)
}

/// The comparison as an aligned terminal table.
pub(crate) fn table(c: &Comparison) -> String {
    let head = ["metric", "old", "new", "change", "allowed", "verdict"].map(String::from);
    let rows: Vec<[String; 6]> = std::iter::once(head).chain(c.rows.iter().map(cells)).collect();
    let width: Vec<usize> = (0..6).map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for line in c.fingerprint.lines() {
        out.push_str(&format!("  {line}\n"));
    }
    out.push_str(&format!("  baseline {} → {}\n", c.old_label, c.new_label));
    if let Some(line) = expected_line(c, |k| k.to_string()) {
        out.push_str(&format!("  {line}\n"));
    }
    for r in &rows {
        let line: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, cell)| {
                let pad = width[i] - cell.chars().count();
                if i == 0 || i == 5 {
                    format!("{cell}{}", " ".repeat(pad))
                } else {
                    format!("{}{cell}", " ".repeat(pad))
                }
            })
            .collect();
        out.push_str(&format!("  {}\n", line.join("  ").trim_end()));
    }
    out.push_str(&format!(
        "  {}\n",
        if c.regressed { "REGRESSION against the baseline" } else { "no regression against the baseline" }
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(jobs_per_sec: f64, claim_p99: f64, duplicates: u64) -> RunSummary {
        let mut s = RunSummary::default();
        s.throughput.jobs_per_sec = jobs_per_sec;
        s.latency_ms.claim.p99 = claim_p99;
        s.latency_ms.claim.count = 100;
        s.executions.duplicate = duplicates;
        s
    }

    fn verdict(c: &Comparison, metric: &str) -> Verdict {
        c.rows.iter().find(|r| r.metric == metric).unwrap_or_else(|| panic!("no row {metric}")).verdict
    }

    #[test]
    fn a_synthetic_regression_fails() {
        let t = Tolerances::default();
        let c = compare(&[run(1000.0, 10.0, 0)], &[run(650.0, 10.0, 0)], &t, Labels { old: "old", new: "new" });
        assert!(c.regressed);
        assert_eq!(verdict(&c, "throughput.jobs_per_sec"), Verdict::Regressed);
        let c = compare(&[run(1000.0, 10.0, 0)], &[run(750.0, 10.0, 0)], &t, Labels { old: "old", new: "new" });
        assert_eq!(verdict(&c, "throughput.jobs_per_sec"), Verdict::Ok, "a 25 % drop is within the measured noise");
        let c = compare(&[run(1000.0, 10.0, 0)], &[run(1000.0, 16.0, 0)], &t, Labels { old: "old", new: "new" });
        assert_eq!(verdict(&c, "latency_ms.claim.p99"), Verdict::Regressed);
        assert!(table(&c).contains("REGRESSED") && markdown(&c).contains("**REGRESSED**"));
    }

    #[test]
    fn noise_within_tolerance_passes() {
        let t = Tolerances::default();
        let old = [run(1000.0, 10.0, 0), run(1040.0, 11.0, 0), run(960.0, 9.0, 0)];
        let new = [run(930.0, 11.5, 0), run(980.0, 12.0, 0), run(700.0, 30.0, 0)];
        let c = compare(&old, &new, &t, Labels { old: "old", new: "new" });
        assert!(!c.regressed, "{}", table(&c));
        assert_eq!(verdict(&c, "throughput.jobs_per_sec"), Verdict::Ok, "median 930 vs 1000 is a 7% drop");
        let r = c.rows.iter().find(|r| r.metric == "throughput.jobs_per_sec").unwrap();
        assert_eq!((r.new.unwrap().min, r.new.unwrap().max), (700.0, 980.0), "min and max are shown too");
        // A sub-millisecond rise is never a regression even when it is +100 %.
        let c = compare(&[run(1000.0, 0.3, 0)], &[run(1000.0, 0.6, 0)], &t, Labels { old: "old", new: "new" });
        assert_eq!(verdict(&c, "latency_ms.claim.p99"), Verdict::Ok);
        assert_eq!(
            verdict(
                &compare(&[run(1000.0, 10.0, 0)], &[run(1400.0, 5.0, 0)], &t, Labels { old: "o", new: "n" }),
                "throughput.jobs_per_sec"
            ),
            Verdict::Better
        );
    }

    #[test]
    fn differing_fingerprints_are_listed_above_the_table() {
        use crate::model::fingerprint::Fingerprint;
        let t = Tolerances::default();
        let (mut a, mut b) = (run(1000.0, 10.0, 0), run(1000.0, 10.0, 0));
        let c = compare(std::slice::from_ref(&a), std::slice::from_ref(&b), &t, Labels { old: "old", new: "new" });
        assert!(table(&c).contains("warning: old has no fingerprint"), "{}", table(&c));
        a.fingerprint = Some(Fingerprint { workers: 8, cores: 2, ..Default::default() });
        b.fingerprint = Some(Fingerprint { workers: 8, cores: 2, ..Default::default() });
        let c = compare(std::slice::from_ref(&a), std::slice::from_ref(&b), &t, Labels { old: "old", new: "new" });
        assert!(c.fingerprint.differences().is_empty() && !table(&c).contains("warning"));
        b.fingerprint.as_mut().unwrap().workers = 16;
        let c = compare(&[a], &[b], &t, Labels { old: "old", new: "new" });
        let text = table(&c);
        assert!(
            text.starts_with(
                "  warning: not comparable: different runs (1 differences)\n    workers: 8 → 16\n  baseline old → new\n"
            ),
            "{text}"
        );
        assert!(
            markdown(&c)
                .contains("**warning: not comparable: different runs (1 differences)**\n\n- `workers: 8 → 16`\n"),
            "{}",
            markdown(&c)
        );
    }

    #[test]
    fn with_three_runs_a_side_a_change_must_stand_out_of_the_spread() {
        let t = Tolerances::default();
        // One build's noise (values like docs/gating.md's skip-locked-hold runs): the new
        // median p99 is +74 % on the old, past the +50 % tolerance, but the runs interleave.
        let old = [run(980.0, 2.7, 0), run(1000.0, 4.2, 0), run(1090.0, 7.5, 0)];
        let new = [run(1010.0, 3.1, 0), run(960.0, 7.3, 0), run(1050.0, 7.9, 0)];
        let c = compare(&old, &new, &t, Labels { old: "old", new: "new" });
        assert!(!c.regressed, "{}", table(&c));
        let r = c.rows.iter().find(|r| r.metric == "latency_ms.claim.p99").unwrap();
        assert!(r.change.unwrap() > 0.5 && r.p.unwrap() > 0.05, "{r:?}");
        assert!(table(&c).contains("ok (noise, p="), "{}", table(&c));
        // A real 2× slowdown: every new run worse than every old one.
        let slow = [run(490.0, 8.4, 0), run(505.0, 9.0, 0), run(520.0, 8.8, 0)];
        let old = [run(980.0, 4.2, 0), run(1000.0, 4.4, 0), run(1040.0, 4.0, 0)];
        let c = compare(&old, &slow, &t, Labels { old: "old", new: "new" });
        assert_eq!(verdict(&c, "throughput.jobs_per_sec"), Verdict::Regressed, "{}", table(&c));
        assert_eq!(verdict(&c, "latency_ms.claim.p99"), Verdict::Regressed, "{}", table(&c));
        assert!(table(&c).contains("REGRESSED (p=0.050)"), "{}", table(&c));
        // Separated but within the tolerance: no regression either (a 5 % drop).
        let close = [run(940.0, 4.5, 0), run(950.0, 4.6, 0), run(960.0, 4.7, 0)];
        assert!(!compare(&old, &close, &t, Labels { old: "old", new: "new" }).regressed);
        // One run a side: the tolerance alone judges, as before.
        let c = compare(&old[..1], &slow[..1], &t, Labels { old: "old", new: "new" });
        assert!(c.rows.iter().all(|r| r.p.is_none()) && c.regressed);
    }

    #[test]
    fn checks_that_failed_as_the_scenario_expects_are_named_above_the_table() {
        use crate::model::summary::{CheckResult, ExpectationResult};
        let mut naive = run(1000.0, 10.0, 491);
        naive.checks = vec![CheckResult { name: check::Check::ExactlyOnce, violations: 235, ..Default::default() }];
        naive.expectations = vec![ExpectationResult {
            name: "checks.exactly_once".into(),
            expression: "> 0".into(),
            actual: Some(235.0),
            passed: true,
        }];
        naive.passed = true;
        let t = Tolerances::default();
        let c =
            compare(std::slice::from_ref(&naive), std::slice::from_ref(&naive), &t, Labels { old: "old", new: "new" });
        assert_eq!(c.expected_failures, [check::Check::ExactlyOnce]);
        let line = "The new run passed; 1 check failed as the scenario expects: `exactly_once`. \"ok\" below compares \
                    with the baseline: it does not say those checks held.";
        assert!(markdown(&c).contains(line), "{}", markdown(&c));
        assert!(table(&c).contains("  The new run passed; 1 check failed as the scenario expects: exactly_once."));
        // A clean run: no such line.
        let clean = run(1000.0, 10.0, 0);
        let c =
            compare(std::slice::from_ref(&clean), std::slice::from_ref(&clean), &t, Labels { old: "old", new: "new" });
        assert!(c.expected_failures.is_empty() && !markdown(&c).contains("scenario expects"));
    }

    #[test]
    fn one_duplicate_in_any_repeat_fails() {
        let t = Tolerances::default();
        let old = [run(1000.0, 10.0, 0), run(1000.0, 10.0, 0), run(1000.0, 10.0, 0)];
        let new = [run(1000.0, 10.0, 0), run(1000.0, 10.0, 1), run(1000.0, 10.0, 0)];
        let c = compare(&old, &new, &t, Labels { old: "old", new: "new" });
        assert_eq!(verdict(&c, "executions.duplicate"), Verdict::Regressed, "the median is 0 but one repeat had one");
        assert!(c.regressed);
        // Turned off, it is not compared.
        let mut off = Tolerances::default();
        off.rules.insert("executions.duplicate".into(), Rule::Off);
        assert!(
            !compare(&old, &new, &off, Labels { old: "old", new: "new" })
                .rows
                .iter()
                .any(|r| r.metric == "executions.duplicate")
        );
    }
}
