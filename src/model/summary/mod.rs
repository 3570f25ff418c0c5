//! The one summary model every exporter reads. Its JSON form is
//! `summary.json`; `schema_version` changes whenever a field is renamed or
//! removed (adding fields does not). Exporters never recompute statistics.

mod outcome;
mod target;
mod timing;

pub use outcome::*;
pub use target::*;
pub use timing::*;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RunSummary {
    pub schema_version: u32,
    pub queuebench_version: String,
    pub run_id: String,
    pub scenario: String,
    pub description: String,
    pub started_at: String,
    pub seed: u64,
    pub strategy: String,
    /// The adapter file the queue came from (`adapters/river.toml`); empty for queuebench's own table.
    pub adapter: String,
    /// The version of the queue's design the adapter follows (its `design`).
    pub adapter_design: String,
    pub mode: String,
    pub fencing: String,
    pub workers: u32,
    pub batch: u32,
    pub work: String,
    pub stop: String,
    /// `run.time_scale` (0 in summaries written before it existed: unscaled).
    /// Times and rates are in the scenario's units; see `report::scale`.
    pub time_scale: f64,
    pub database: DatabaseInfo,
    /// True when Ctrl-C, SIGTERM or the run timeout stopped the workers early.
    pub interrupted: bool,
    pub timed_out: bool,
    /// The database was lost mid-run (no worker could reconnect within
    /// `run.reconnect_timeout`): the numbers cover the run up to then, and the checks that
    /// need the final table were not run. Exit code 3.
    pub partial: bool,
    /// Why the report is partial (empty when it is not).
    pub partial_reason: String,
    pub outage: Outage,
    pub durability: Durability,
    pub jobs: Jobs,
    pub executions: Executions,
    pub completions: Completions,
    pub stale: Stale,
    pub ownership: Ownership,
    pub starvation: Starvation,
    pub fifo: Fifo,
    pub faults: Faults,
    pub reaper: Reaper,
    pub claims: Claims,
    pub errors: Errors,
    pub effects: Effects,
    pub throughput: Throughput,
    pub latency_ms: Latencies,
    pub producer: Producer,
    pub horizon: Horizon,
    pub dead_tuples: DeadTuples,
    /// Named VACUUM (VERBOSE) steps.
    pub vacuum: BTreeMap<String, VacuumNumbers>,
    pub probe: Probe,
    pub wakeup: WakeupStats,
    pub phases: Vec<PhaseInfo>,
    /// Per-phase numbers by phase name (`[[run.phases]]`; warm-up phases included here).
    pub by_phase: BTreeMap<String, PhaseNumbers>,
    pub environment: Environment,
    /// What makes this run comparable with another (`compare` checks it); None in summaries
    /// written before it existed.
    pub fingerprint: Option<super::fingerprint::Fingerprint>,
    /// Agents of a run across processes or hosts (`--agents`, `--spawn-agents`;
    /// docs/agents.md), one entry per agent the run planned for; empty for a local run.
    pub agents: Vec<AgentFigures>,
    /// How long the harness's own stages took (the benchmark suite reads these).
    pub timings: Timings,
    pub checks: Vec<CheckResult>,
    pub expectations: Vec<ExpectationResult>,
    /// The abort-on-fail expectation that stopped the run early (`"executions.duplicate == 0"`), if any.
    pub aborted_by: Option<String>,
    /// The run finished, every expectation held and every check no expectation names passed
    /// (`gate::judge`).
    pub passed: bool,
    /// The violated checks that no expectation names (`checks.<name>`): the checks that failed
    /// the run. Empty when every check held or the scenario's expectations judge them.
    pub failed_checks: Vec<super::check::Check>,
    /// Files of the run folder that could not be written (`file: reason`); empty when all were.
    /// summary.json is written first, so the verdict survives a full disk.
    pub not_written: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CheckResult {
    pub name: super::check::Check,
    pub passed: bool,
    /// How many jobs or events break the invariant (0 when it holds).
    pub violations: u64,
    pub detail: String,
    /// A few job ids that show the problem.
    pub examples: Vec<i64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ExpectationResult {
    pub name: String,
    pub expression: String,
    /// None: the metric was never measured (a final table that was not read, a latency with
    /// no sample); the expectation is then not judged (and does not pass).
    pub actual: Option<f64>,
    pub passed: bool,
}

impl ExpectationResult {
    /// Was it judged? Not when its metric was never measured.
    pub fn judged(&self) -> bool {
        self.actual.is_some()
    }

    /// The actual value as every report prints it: the number, or that it is unknown.
    pub fn actual_shown(&self) -> String {
        self.actual.map_or_else(|| "unknown: not measured, not judged".into(), |a| format!("{a}"))
    }
}

/// What became of an agent of a run across agents (summary.json's `agents[].state`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentOutcome {
    /// Its evidence was uploaded and merged.
    Finished,
    /// It joined, then died or stopped answering: its evidence is missing.
    Missing,
    /// It never joined.
    #[default]
    Absent,
}

impl AgentOutcome {
    /// Every outcome, in the order the docs list them.
    pub const ALL: [AgentOutcome; 3] = [AgentOutcome::Finished, AgentOutcome::Missing, AgentOutcome::Absent];

    /// Its name in summary.json and the reports.
    pub fn name(self) -> &'static str {
        match self {
            AgentOutcome::Finished => "finished",
            AgentOutcome::Missing => "missing",
            AgentOutcome::Absent => "absent",
        }
    }
}

impl std::fmt::Display for AgentOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One agent of a run across processes or hosts: its share and what it measured.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct AgentFigures {
    /// 1-based, in the order the agents joined.
    pub agent: u32,
    /// `--name`, else the host name and process id.
    pub name: String,
    /// What became of it: `finished`, `missing` or `absent`.
    pub state: AgentOutcome,
    /// The worker slots it ran (`first..=last`); its respawned workers took identities from
    /// `identity_base` up.
    pub workers: u32,
    pub first_worker: u32,
    pub last_worker: u32,
    pub identity_base: u32,
    /// Jobs it completed (accepted completions in its part of the history) and per second of the run.
    pub jobs: u64,
    pub jobs_per_sec: f64,
    pub claims: u64,
    pub claim_p99_ms: Option<f64>,
    pub errors: u64,
    /// Its clock minus the server's (µs) at the start and at the end, each with its error
    /// bound (half the tightest round trip); the history is aligned to the server's clock.
    pub clock_offset_us: i64,
    pub clock_bound_us: u64,
    pub clock_offset_end_us: Option<i64>,
    pub clock_bound_end_us: Option<u64>,
    /// Executions of a missing agent recovered from the effects ledger (its claims and
    /// completions are unknown); 0 otherwise.
    pub recovered_executions: u64,
    /// Bytes of evidence it uploaded (gzipped).
    pub evidence_bytes: u64,
    /// Why it is missing or absent; empty when it finished.
    pub note: String,
}

#[cfg(test)]
mod tests {
    use super::AgentOutcome;

    #[test]
    fn an_agents_outcome_is_written_and_read_by_its_name() {
        for o in AgentOutcome::ALL {
            assert_eq!(serde_json::to_value(o).unwrap(), o.name());
            assert_eq!(serde_json::from_value::<AgentOutcome>(o.name().into()).unwrap(), o);
        }
    }
}
