//! `run --pg-version 14,16`: each scenario once per PostgreSQL major, every major found on the
//! machine before any run, and one table comparing them (docs/postgres-versions.md).

use crate::compare::versions::VersionGroup;
use crate::error::Result;
use crate::options::{RunCommand, Target};
use crate::report::ComparedRun;
use crate::scenario::Plan;
use std::path::PathBuf;

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

/// The order of the runs: `(plan, repeat)`. With several majors and `--repeat`, rounds: every
/// plan's first repeat, then every plan's second, … (14, 16, 14, 16, …), so that a change in the
/// machine's load over the batch falls on every major alike; otherwise each plan's repeats in a
/// block, as a single scenario runs.
pub(super) fn schedule(plans: usize, majors: usize, repeat: u32) -> Vec<(usize, u32)> {
    let repeats = 1..=repeat.max(1);
    if majors > 1 {
        repeats.flat_map(|k| (0..plans).map(move |i| (i, k))).collect()
    } else {
        (0..plans).flat_map(|i| repeats.clone().map(move |k| (i, k))).collect()
    }
}

/// The version matrix of the batch's runs (`compare::versions`), each scenario compared with
/// its own tolerances. Empty without `--pg-version`.
pub(super) fn matrix(runs: &[ComparedRun], plans: &[Plan], cmd: &RunCommand) -> Vec<VersionGroup> {
    if cmd.pg_versions.is_empty() {
        return Vec::new();
    }
    let summaries: Vec<_> = runs.iter().map(|r| r.summary.clone()).collect();
    crate::compare::versions::groups(&summaries, |scenario| {
        plans.iter().find(|p| p.name == scenario).map(|p| &p.tolerances)
    })
}

/// Prints the matrix's Markdown (written as versions.md beside comparison.html).
pub(super) fn print(groups: &[VersionGroup]) {
    if !groups.is_empty() {
        println!("\n{}", crate::report::versions::markdown(groups));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_majors_with_repeats_alternate_round_by_round() {
        assert_eq!(schedule(2, 2, 3), vec![(0, 1), (1, 1), (0, 2), (1, 2), (0, 3), (1, 3)]);
        // One major (or none): each plan's repeats in a block, as before.
        assert_eq!(schedule(2, 0, 2), vec![(0, 1), (0, 2), (1, 1), (1, 2)]);
        assert_eq!(schedule(1, 1, 2), vec![(0, 1), (0, 2)]);
    }
}
