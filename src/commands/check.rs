//! `queuebench check RUN_DIR [--json]`: every checker again, offline, over the history, the
//! final table and the evidence the run saved (`history.csv.gz`, `final_state.csv.gz`,
//! `evidence.json`); prints the checks as the run did, says whether they agree with the
//! run's own, and exits by the same rule (0 passed, 1 failed, 3 partial, 130 interrupted).

use crate::collect::history;
use crate::error::{Error, ExitCode, Result};
use crate::gate;
use crate::model::evidence::SavedEvidence;
use crate::model::expect::parse_expectation;
use crate::model::summary::RunSummary;
use crate::report::{build, scale, terminal};
use crate::verify::{self, Evidence};
use std::path::Path;

pub(crate) fn check(dir: &Path, json: bool) -> Result<ExitCode> {
    let (run, rechecked) = recheck(dir)?;
    let agrees = same_verdicts(&run, &rechecked);
    if json {
        let out = serde_json::json!({
            "run": dir.display().to_string(),
            "passed": rechecked.passed,
            "failed_checks": rechecked.failed_checks,
            "checks": rechecked.checks,
            "expectations": rechecked.expectations,
            "agrees_with_run": agrees,
        });
        println!("{}", serde_json::to_string_pretty(&out).expect("serialises"));
    } else {
        let verdict = if rechecked.passed { "passed" } else { "FAILED" };
        println!("{} — {verdict} (checked again from {})", rechecked.scenario, dir.display());
        print!("{}", terminal::checks_and_expectations(&rechecked));
        if agrees {
            println!("  agrees with the run: the same checks, counts and verdict");
        } else {
            println!(
                "  DIFFERS from the run's own summary.json (its verdict: {})",
                if run.passed { "passed" } else { "FAILED" }
            );
        }
    }
    Ok(gate::verdict(&rechecked))
}

/// The run's summary, and the same summary with every check run again over the saved evidence.
pub(crate) fn recheck(dir: &Path) -> Result<(RunSummary, RunSummary)> {
    crate::files::refuse_special_inputs(dir)?;
    let run: RunSummary = parse(dir, "summary.json")?;
    let saved: SavedEvidence = parse(dir, "evidence.json")?;
    let history = history::read(&read(dir, "history.csv.gz")?, &saved.classes)
        .map_err(|e| bad(dir, "history.csv.gz", e.to_string()))?;
    let final_jobs = if saved.partial {
        Vec::new()
    } else {
        history::read_final_state(&read(dir, "final_state.csv.gz")?)
            .map_err(|e| bad(dir, "final_state.csv.gz", e.to_string()))?
    };
    let evidence = Evidence::new(&saved, verify::Events::of(&history), &final_jobs);
    let mut s = run.clone();
    build::apply_verification(&mut s, verify::verify_all(&evidence, saved.partial));
    scale::unscale_verification(&mut s, saved.time_scale);
    let names: Vec<String> = s.metrics().into_keys().chain(run.metric_paths()).collect();
    let expectations = run
        .expectations
        .iter()
        .map(|e| parse_expectation(&e.name, &e.expression, &names))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| bad(dir, "summary.json", e.to_string()))?;
    build::judge(&mut s, &expectations);
    Ok((run, s))
}

/// The same checks (names, verdicts, counts, examples) and the same verdict.
pub(crate) fn same_verdicts(a: &RunSummary, b: &RunSummary) -> bool {
    let key = |s: &RunSummary| {
        s.checks.iter().map(|c| (c.name, c.passed, c.violations, c.examples.clone())).collect::<Vec<_>>()
    };
    key(a) == key(b) && a.passed == b.passed && a.failed_checks == b.failed_checks
}

/// A file of the run folder, read as untrusted input: bounded in size, a regular file inside the
/// folder, never read through a link (docs/safety.md).
pub(crate) fn read(dir: &Path, name: &str) -> Result<Vec<u8>> {
    let path = dir.join(name);
    let gz = name.ends_with(".csv.gz");
    if gz && !path.exists() && dir.join("evidence.json").exists() {
        let reason = if kept_no_history(dir) {
            "this run kept no history: its scenario says `run.history = false` (docs/history.md)".to_string()
        } else {
            format!(
                "{name} is missing, though the run kept its history (its scenario does not set `run.history = \
                 false`): it was deleted or not copied with the folder; check, explain and report need the run \
                 folder as the run left it"
            )
        };
        return Err(Error::Input { path, reason });
    }
    crate::files::read_in_folder(dir, name, if gz { crate::files::Kind::History } else { crate::files::Kind::Summary })
}

/// Whether the run's saved scenario turned the history off (`[run] history = false`).
fn kept_no_history(dir: &Path) -> bool {
    let Ok(text) = crate::files::read_in_folder(dir, "scenario.toml", crate::files::Kind::Scenario) else {
        return false;
    };
    let text = String::from_utf8_lossy(&text);
    // A `--set run.history=…` is saved as a comment line after the text; the last one wins.
    let mut set = text.lines().rev().filter_map(|l| l.strip_prefix("# queuebench: --set ")).filter_map(|s| {
        let (k, v) = s.split_once('=')?;
        (k.trim() == "run.history").then(|| v.trim() == "false")
    });
    if let Some(off) = set.next() {
        return off;
    }
    let Ok(table) = text.parse::<toml::Table>() else { return false };
    table.get("run").and_then(|r| r.get("history")).and_then(|h| h.as_bool()) == Some(false)
}

fn parse<T: serde::de::DeserializeOwned>(dir: &Path, name: &str) -> Result<T> {
    serde_json::from_slice(&read(dir, name)?).map_err(|e| bad(dir, name, e.to_string()))
}

fn bad(dir: &Path, name: &str, reason: String) -> Error {
    let reason = crate::error::filter(&reason);
    Error::Input { path: dir.join(name), reason: format!("not what queuebench writes there: {reason}") }
}
