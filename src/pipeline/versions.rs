//! `run --pg-version 14,16`: each scenario once per PostgreSQL major, every major found on the
//! machine before any run, and one table comparing them (docs/postgres-versions.md).

use crate::error::Result;
use crate::options::{RunCommand, Target};
use crate::report::ComparedRun;
use crate::scenario::Plan;
use std::path::{Path, PathBuf};

/// Each file with its `--set` overrides, once per `--pg-version` major when several are given.
pub(super) fn per_version(cmd: &RunCommand) -> Vec<(PathBuf, Vec<String>)> {
    let mut out = Vec::new();
    for f in &cmd.files {
        if cmd.pg_versions.is_empty() {
            out.push((f.clone(), cmd.sets.clone()));
        }
        for major in &cmd.pg_versions {
            let mut sets = cmd.sets.clone();
            sets.push(format!("postgres.version={major}"));
            out.push((f.clone(), sets));
        }
    }
    out
}

/// A run's folder under `--out`: the scenario's name, with `-pg<N>` when several majors run.
pub(super) fn folder_name(plan: &Plan, cmd: &RunCommand) -> String {
    match plan.postgres.version {
        Some(major) if !cmd.pg_versions.is_empty() => format!("{}-pg{major}", plan.name),
        _ => plan.name.clone(),
    }
}

/// Every major asked for is on this machine (an ephemeral cluster's binaries), before any run
/// starts: a missing one is exit 3 naming `queuebench postgres fetch N`, nothing is fetched.
pub(super) fn check_found(plans: &[Plan], cmd: &RunCommand) -> Result<()> {
    if cmd.run.database.target != Target::Ephemeral {
        return Ok(());
    }
    let mut majors: Vec<u32> = plans.iter().filter_map(|p| p.postgres.version).collect();
    majors.dedup();
    for major in majors {
        if let Some(pin) = crate::db::versions::PINS.iter().find(|p| p.major == major) {
            crate::db::versions::find(pin)?;
        }
    }
    Ok(())
}

/// The table of one scenario per major: jobs/s, claim p99 and the verdict, printed and
/// written as `versions.md` beside comparison.html.
pub(super) fn print_table(dir: &Path, runs: &[ComparedRun]) -> Result<()> {
    let text = table(runs);
    println!("\n{text}");
    crate::report::export::write_atomic(&dir.join("versions.md"), text.as_bytes())
}

fn table(runs: &[ComparedRun]) -> String {
    // One row per run; the claim's p99 is in milliseconds, as in the terminal's summary.
    let mut out = String::from("| scenario | PostgreSQL | jobs/s | claim p99 ms | verdict |\n|---|---|---|---|---|\n");
    for run in runs {
        let s = &run.summary;
        let mut failed: Vec<String> = s.failed_checks.iter().map(|c| c.name().to_string()).collect();
        failed.extend(s.expectations.iter().filter(|e| !e.passed).map(|e| format!("`{}`", e.expression)));
        let verdict = if s.passed { "PASSED".to_string() } else { format!("FAILED ({})", failed.join(", ")) };
        out.push_str(&format!(
            "| {} | {} | {:.0} | {:.2} | {verdict} |\n",
            s.scenario, s.database.server_version, s.throughput.jobs_per_sec, s.latency_ms.claim.p99
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::summary::{ExpectationResult, RunSummary};

    #[test]
    fn the_table_has_a_row_per_major_with_its_verdict() {
        let run = |version: &str, passed: bool| {
            let mut s = RunSummary { scenario: "skip-locked".into(), passed, ..Default::default() };
            s.database.server_version = version.into();
            s.throughput.jobs_per_sec = 812.4;
            s.latency_ms.claim.p99 = 12.345;
            if !passed {
                s.expectations.push(ExpectationResult {
                    name: "jobs.completed".into(),
                    expression: "jobs.completed == 10000".into(),
                    actual: Some(300.0),
                    passed: false,
                });
            }
            ComparedRun { summary: s, report: String::new() }
        };
        let t = table(&[run("14.23", true), run("16.13", false)]);
        assert!(t.contains("| skip-locked | 14.23 | 812 | 12.35 | PASSED |"), "{t}");
        assert!(t.contains("| 16.13 | 812 | 12.35 | FAILED (`jobs.completed == 10000`) |"), "{t}");
    }
}
