//! Golden files: every exporter's output for fixed summaries, compared with the files checked
//! in under `tests/golden/`. The exporters are pure functions of a summary (and, for the
//! swimlanes, of a saved history), so these tests need no database and take milliseconds.
//!
//! The inputs are real runs' `summary.json` files with the machine's traces replaced
//! (`tests/fixtures/golden/`, its README says how they were made). A change of any output's
//! shape or wording fails here with the first lines that differ; when the change is meant,
//! write the files again and review them in the diff:
//!
//! ```text
//! QUEUEBENCH_BLESS=1 cargo test --lib report::golden
//! ```
//!
//! Without `QUEUEBENCH_BLESS=1` nothing is written: a missing golden file fails too.

mod outline;

use super::charts::Chart;
use super::swimlane::{self, Swimlane};
use super::{ComparedRun, github, html, junit, summary_csv, terminal};
use crate::collect::history;
use crate::compare::{self, Comparison, Labels, Tolerances};
use crate::model::evidence::SavedEvidence;
use crate::model::summary::RunSummary;
use std::path::PathBuf;
use std::time::Duration;

fn repo(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// The fixture runs: a clean run, a run that passes because its scenario expects checks to fail,
/// a failed run with a fault and the reaper, and the clean run's baseline.
const NAIVE: &str = "naive-duplicates";
const PAUSE: &str = "gc-pause-unfenced";
const NEW: &str = "skip-locked-new";
const OLD: &str = "skip-locked-old";

fn fixture(name: &str) -> RunSummary {
    let path = repo(&format!("tests/fixtures/golden/{name}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: not a summary: {e}", path.display()))
}

/// `actual` against `tests/golden/<name>`; with `QUEUEBENCH_BLESS=1`, written there instead.
fn golden(name: &str, actual: &str) {
    let path = repo(&format!("tests/golden/{name}"));
    if std::env::var_os("QUEUEBENCH_BLESS").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        return;
    }
    let bless = "QUEUEBENCH_BLESS=1 cargo test --lib report::golden";
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}: no golden file; write it with `{bless}` and review it", path.display()));
    if expected != actual {
        panic!(
            "{} differs from the output:\n{}\nif the change is meant: `{bless}`, then review the diff",
            path.display(),
            diff(&expected, actual)
        );
    }
}

/// The first lines that differ, with two lines of context before them.
fn diff(expected: &str, actual: &str) -> String {
    let (e, a): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    let first = e.iter().zip(&a).position(|(x, y)| x != y).unwrap_or(e.len().min(a.len()));
    let mut out = format!("(expected {} lines, got {}; first difference at line {})\n", e.len(), a.len(), first + 1);
    for l in &e[first.saturating_sub(2)..first] {
        out.push_str(&format!("  {l}\n"));
    }
    for l in e.iter().skip(first).take(5) {
        out.push_str(&format!("- {l}\n"));
    }
    for l in a.iter().skip(first).take(5) {
        out.push_str(&format!("+ {l}\n"));
    }
    if expected.ends_with('\n') != actual.ends_with('\n') {
        out.push_str("(one ends with a newline, the other does not)\n");
    }
    out
}

/// The clean run against its baseline, as `--baseline` and `compare` make it.
fn comparison() -> Comparison {
    let labels = Labels { old: "baseline main", new: "this run" };
    compare::compare(&[fixture(OLD)], &[fixture(NEW)], &Tolerances::default(), labels)
}

/// report.html's example jobs of the paused run, from its saved history (as `queuebench report`
/// draws them).
fn pause_swimlanes(s: &RunSummary) -> Vec<Swimlane> {
    let file = |name: &str| std::fs::read(repo(&format!("tests/fixtures/golden/{PAUSE}/{name}"))).unwrap();
    let saved: SavedEvidence = serde_json::from_slice(&file("evidence.json")).unwrap();
    let h = history::read(&file("history.csv.gz"), &saved.classes).unwrap();
    let final_jobs = history::read_final_state(&file("final_state.csv.gz")).unwrap();
    let src = swimlane::Source {
        journal: &h.journal,
        faults: &h.faults,
        reaps: &h.reaps,
        final_jobs: &final_jobs,
        lease: Duration::from_micros(saved.lease_us),
        hold_transaction: saved.hold_transaction,
        clock_us: saved.boundary_us(),
        network: &saved.network,
    };
    swimlane::swimlanes(&s.checks, &src)
}

/// A stand-in chart: the outline shows where a chart goes and its caption, never its drawing.
fn chart() -> Chart {
    Chart { name: "claims".into(), caption: "Claims per second.".into(), svg: "<svg></svg>".into(), png: Vec::new() }
}

#[test]
fn terminal_summaries() {
    for name in [NAIVE, PAUSE, NEW] {
        let s = fixture(name);
        let text = format!("{}--- --quiet\n{}", terminal::render(&s), terminal::quiet(&s, &s.scenario));
        golden(&format!("terminal/{name}.txt"), &text);
    }
}

#[test]
fn summary_csv_of_every_run() {
    golden("summary.csv", &summary_csv(&[NAIVE, PAUSE, OLD, NEW].map(fixture)));
}

#[test]
fn junit_xml_with_a_baseline() {
    let runs = [NAIVE, PAUSE, NEW].map(fixture);
    let labelled: Vec<junit::LabelledRun> =
        runs.iter().map(|s| junit::LabelledRun { label: s.scenario.clone(), summary: s }).collect();
    golden("junit.xml", &junit::junit(&labelled, Some(&comparison())));
}

#[test]
fn compare_md_and_the_terminal_table() {
    let c = comparison();
    golden("compare.md", &compare::markdown(&c));
    golden("compare.txt", &compare::table(&c));
}

#[test]
fn github_step_summary_and_annotations() {
    let c = comparison();
    let (naive, pause, new) = (fixture(NAIVE), fixture(PAUSE), fixture(NEW));
    let mut text = String::new();
    for (runs, cmp) in [(vec![&naive], None), (vec![&pause], None), (vec![&new], Some(&c))] {
        text.push_str(&github::markdown(&runs, cmp));
        text.push_str("--- annotations\n");
        for line in github::annotations(&runs, cmp) {
            text.push_str(&line);
            text.push('\n');
        }
    }
    golden("github.md", &text);
}

#[test]
fn report_html_outlines() {
    for name in [NAIVE, PAUSE] {
        let s = fixture(name);
        let (lanes, scenario) = if name == PAUSE {
            let text = std::fs::read_to_string(repo(&format!("tests/fixtures/golden/{PAUSE}/scenario.toml"))).unwrap();
            (pause_swimlanes(&s), text)
        } else {
            (Vec::new(), String::new())
        };
        let page = html::report(&s, &[chart()], &lanes, &scenario);
        golden(&format!("report-{name}.outline"), &outline::outline(&page));
    }
}

#[test]
fn comparison_html_outline() {
    let runs: Vec<ComparedRun> = [NAIVE, PAUSE, NEW]
        .map(|name| ComparedRun { summary: fixture(name), report: format!("{name}/report.html") })
        .into();
    golden("comparison.outline", &outline::outline(&html::comparison(&runs, "", &[chart()])));
}
