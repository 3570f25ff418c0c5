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
    // The folder is read as untrusted input: every file bounded in size (docs/safety.md).
    let read = |name: &str| {
        let kind = if name.ends_with(".toml") { files::Kind::Scenario } else { files::Kind::Summary };
        files::read_text(&dir.join(name), kind)
    };
    let summary: RunSummary = serde_json::from_str(&read("summary.json")?).map_err(|e| Error::Input {
        path: dir.join("summary.json"),
        reason: format!("not a queuebench summary: {e}"),
    })?;
    let harness = Timeseries::read(&dir.join("timeseries.csv"))?;
    // A folder from before samples.csv (or whose sampler was off) has no database series.
    let samples = dir.join("samples.csv");
    let database = if samples.exists() { Timeseries::read(&samples)? } else { Timeseries::default() };
    let lanes = swimlanes(dir, &summary);
    report::rebuild(dir, &summary, (&harness, &database), &lanes, &read("scenario.toml").unwrap_or_default())?;
    println!("rebuilt {}", dir.join("report.html").display());
    Ok(ExitCode::Passed)
}

/// report.html's example jobs from the run's history, when it kept one (none otherwise: the
/// rest of the report does not need it).
fn swimlanes(dir: &Path, summary: &RunSummary) -> Vec<Swimlane> {
    let Ok(saved) = files::read(&dir.join("evidence.json"), files::Kind::Summary) else { return Vec::new() };
    let Ok(saved) = serde_json::from_slice::<SavedEvidence>(&saved) else { return Vec::new() };
    let Ok(gz) = files::read(&dir.join("history.csv.gz"), files::Kind::History) else { return Vec::new() };
    let Ok(h) = history::read(&gz, &saved.classes) else { return Vec::new() };
    let state = files::read(&dir.join("final_state.csv.gz"), files::Kind::History).ok();
    let final_jobs = state.and_then(|gz| history::read_final_state(&gz).ok()).unwrap_or_default();
    let src = swimlane::Source {
        journal: &h.journal,
        faults: &h.faults,
        final_jobs: &final_jobs,
        lease: Duration::from_micros(saved.lease_us),
        hold_transaction: saved.hold_transaction,
        clock_us: saved.boundary_us(),
        network: &saved.network,
    };
    swimlane::swimlanes(&summary.checks, &src)
}
