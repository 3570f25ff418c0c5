//! `queuebench report DIR`: summary.json, summary.csv, charts and report.html again from a run's files.

use crate::collect::history;
use crate::error::{Error, ExitCode, Result};
use crate::files;
use crate::model::evidence::SavedEvidence;
use crate::model::summary::RunSummary;
use crate::report;
use crate::report::swimlane::{self, Swimlane};
use crate::report::timeseries::Timeseries;
use std::path::Path;
use std::time::Duration;

/// `queuebench report DIR`: summary.json, summary.csv, charts and report.html again from a run's files.
pub(crate) fn rebuild_report(dir: &Path) -> Result<ExitCode> {
    // The folder is read as untrusted input: every file bounded in size, a regular file inside
    // the folder, never read through a link (docs/safety.md): report.html is made to be shared.
    files::refuse_special_inputs(dir)?;
    let summary: RunSummary =
        serde_json::from_slice(&files::read_in_folder(dir, "summary.json", files::Kind::Summary)?).map_err(|e| {
            Error::Input {
                path: dir.join("summary.json"),
                reason: format!("not a queuebench summary: {}", crate::error::filter(&e.to_string())),
            }
        })?;
    let harness = Timeseries::read_in(dir, "timeseries.csv")?;
    // A folder from before samples.csv (or whose sampler was off) has no database series.
    let there = |name: &str| std::fs::symlink_metadata(dir.join(name)).is_ok();
    let database = if there("samples.csv") { Timeseries::read_in(dir, "samples.csv")? } else { Timeseries::default() };
    let scenario = if there("scenario.toml") {
        let bytes = files::read_in_folder(dir, "scenario.toml", files::Kind::Scenario)?;
        String::from_utf8(bytes)
            .map_err(|e| Error::Input { path: dir.join("scenario.toml"), reason: format!("not UTF-8 text: {e}") })?
    } else {
        String::new()
    };
    let lanes = swimlanes(dir, &summary);
    report::rebuild(dir, &summary, (&harness, &database), &lanes, &scenario)?;
    println!("rebuilt {}", dir.join("report.html").display());
    Ok(ExitCode::Passed)
}

/// report.html's example jobs from the run's history, when it kept one (none otherwise: the
/// rest of the report does not need it).
fn swimlanes(dir: &Path, summary: &RunSummary) -> Vec<Swimlane> {
    let Ok(saved) = files::read_in_folder(dir, "evidence.json", files::Kind::Summary) else { return Vec::new() };
    let Ok(saved) = serde_json::from_slice::<SavedEvidence>(&saved) else { return Vec::new() };
    let Ok(gz) = files::read_in_folder(dir, "history.csv.gz", files::Kind::History) else { return Vec::new() };
    let Ok(h) = history::read(&gz, &saved.classes) else { return Vec::new() };
    let state = files::read_in_folder(dir, "final_state.csv.gz", files::Kind::History).ok();
    let final_jobs = state.and_then(|gz| history::read_final_state(&gz).ok()).unwrap_or_default();
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
    swimlane::swimlanes(&summary.checks, &src)
}
