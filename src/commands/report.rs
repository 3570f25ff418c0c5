//! `queuebench report DIR`: summary.json, summary.csv, charts and report.html again from a run's files.

use crate::error::{Access, Error, ExitCode, Result};
use crate::model::summary::RunSummary;
use crate::report;
use crate::report::timeseries::Timeseries;
use std::path::Path;

/// `queuebench report DIR`: summary.json, summary.csv, charts and report.html again from a run's files.
pub fn rebuild_report(dir: &Path) -> Result<ExitCode> {
    let read =
        |name: &str| std::fs::read_to_string(dir.join(name)).map_err(|e| Error::path(Access::Read, dir.join(name), e));
    let summary: RunSummary = serde_json::from_str(&read("summary.json")?).map_err(|e| Error::Input {
        path: dir.join("summary.json"),
        reason: format!("not a queuebench summary: {e}"),
    })?;
    let harness = Timeseries::read(&dir.join("timeseries.csv"))?;
    // A folder from before samples.csv (or whose sampler was off) has no database series.
    let samples = dir.join("samples.csv");
    let database = if samples.exists() { Timeseries::read(&samples)? } else { Timeseries::default() };
    report::rebuild(dir, &summary, (&harness, &database), &read("scenario.toml").unwrap_or_default())?;
    println!("rebuilt {}", dir.join("report.html").display());
    Ok(ExitCode::Passed)
}
