//! The checks every stage names: a checker's result (`checks[].name` in summary.json, junit.xml's
//! `check NAME`), the verdict's `failed_checks`, and `checks.<name>` in expectations. The names
//! are the serialized form; the checkers are in `verify/`, documented in docs/summary-json.md.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A check, by its name in summary.json (`exactly_once`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Check {
    VacuumCaughtUp,
    /// The default only so a `CheckResult` can be built field by field (`..Default::default()`).
    #[default]
    ExactlyOnce,
    NoLostJobs,
    StaleCompletionsAccepted,
    OwnershipOverlap,
    AttemptsWithinBudget,
    CompletionsRefusedUnexplained,
    JobsLeftAbandoned,
    Progress,
    FaultsRecovered,
    DeadAfterOneFault,
    CancelledJobsNotRun,
    EffectsLedgerAgrees,
    Starvation,
    Durability,
    RunAfterCompletion,
    UnexpectedErrors,
    MutualExclusion,
    CompletionIdempotent,
    UniqueEnqueue,
}

impl Check {
    /// Every check; `checks.<name>` of each is a metric an expectation may name.
    pub const ALL: [Check; 20] = [
        Check::VacuumCaughtUp,
        Check::ExactlyOnce,
        Check::NoLostJobs,
        Check::StaleCompletionsAccepted,
        Check::OwnershipOverlap,
        Check::AttemptsWithinBudget,
        Check::CompletionsRefusedUnexplained,
        Check::JobsLeftAbandoned,
        Check::Progress,
        Check::FaultsRecovered,
        Check::DeadAfterOneFault,
        Check::CancelledJobsNotRun,
        Check::EffectsLedgerAgrees,
        Check::Starvation,
        Check::Durability,
        Check::RunAfterCompletion,
        Check::UnexpectedErrors,
        Check::MutualExclusion,
        Check::CompletionIdempotent,
        Check::UniqueEnqueue,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Check::VacuumCaughtUp => "vacuum_caught_up",
            Check::ExactlyOnce => "exactly_once",
            Check::NoLostJobs => "no_lost_jobs",
            Check::StaleCompletionsAccepted => "stale_completions_accepted",
            Check::OwnershipOverlap => "ownership_overlap",
            Check::AttemptsWithinBudget => "attempts_within_budget",
            Check::CompletionsRefusedUnexplained => "completions_refused_unexplained",
            Check::JobsLeftAbandoned => "jobs_left_abandoned",
            Check::Progress => "progress",
            Check::FaultsRecovered => "faults_recovered",
            Check::DeadAfterOneFault => "dead_after_one_fault",
            Check::CancelledJobsNotRun => "cancelled_jobs_not_run",
            Check::EffectsLedgerAgrees => "effects_ledger_agrees",
            Check::Starvation => "starvation",
            Check::Durability => "durability",
            Check::RunAfterCompletion => "run_after_completion",
            Check::UnexpectedErrors => "unexpected_errors",
            Check::MutualExclusion => "mutual_exclusion",
            Check::CompletionIdempotent => "completion_idempotent",
            Check::UniqueEnqueue => "unique_enqueue",
        }
    }

    /// The check of this name; None for a name no check has.
    pub fn parse(name: &str) -> Option<Check> {
        Check::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Whether it reads the final table (left out when the database was lost mid-run).
    pub fn needs_final_table(self) -> bool {
        match self {
            Check::NoLostJobs
            | Check::AttemptsWithinBudget
            | Check::EffectsLedgerAgrees
            | Check::Durability
            | Check::JobsLeftAbandoned
            | Check::FaultsRecovered
            | Check::DeadAfterOneFault => true,
            Check::VacuumCaughtUp
            | Check::ExactlyOnce
            | Check::StaleCompletionsAccepted
            | Check::OwnershipOverlap
            | Check::CompletionsRefusedUnexplained
            | Check::Progress
            | Check::CancelledJobsNotRun
            | Check::Starvation
            | Check::RunAfterCompletion
            | Check::UnexpectedErrors
            | Check::MutualExclusion
            | Check::CompletionIdempotent
            | Check::UniqueEnqueue => false,
        }
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_check_round_trips_through_its_name_and_serde() {
        for c in Check::ALL {
            assert_eq!(Check::parse(c.name()), Some(c));
            assert_eq!(serde_json::to_string(&c).unwrap(), format!("\"{}\"", c.name()));
            assert_eq!(serde_json::from_str::<Check>(&format!("\"{c}\"")).unwrap(), c);
        }
        assert_eq!(Check::parse("exactly-once"), None);
        assert_eq!(format!("{:<14}|", Check::Progress), "progress      |", "Display pads");
    }

    #[test]
    fn the_summary_schema_lists_every_check_name() {
        let schema: serde_json::Value = serde_json::from_str(include_str!("../../schema/summary.schema.json")).unwrap();
        let names: Vec<&str> = Check::ALL.iter().map(|c| c.name()).collect();
        let listed = |v: &serde_json::Value| -> Vec<String> {
            v["enum"].as_array().unwrap().iter().map(|n| n.as_str().unwrap().to_string()).collect()
        };
        let props = &schema["properties"];
        assert_eq!(listed(&props["checks"]["items"]["properties"]["name"]), names);
        assert_eq!(listed(&props["failed_checks"]["items"]), names);
        let kinds: Vec<&str> = crate::model::fault::FaultKind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(listed(&props["faults"]["properties"]["by_kind"]["propertyNames"]), kinds);
    }

    #[test]
    fn every_check_is_documented_in_the_checks_table() {
        let page = include_str!("../../docs/summary-json.md");
        for c in Check::ALL {
            assert!(
                page.contains(&format!("| `{c}` |")),
                "docs/summary-json.md's table of checks has no row for `{c}`"
            );
        }
    }
}
