//! The serde mirror of an adapter file (`docs/adapters.md`): every key as written,
//! `deny_unknown_fields`, no I/O. `super::file` checks it and resolves it into an `Adapter`.

use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAdapter {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// The version of the queue's design the SQL follows.
    #[serde(default)]
    pub design: String,
    /// The queue's main table (sampler statistics, VACUUM steps, blockers, `LOCK TABLE`).
    pub table: String,
    /// The queue's own default lease or visibility timeout.
    pub lease: Option<String>,
    /// `lease` is the queue's only lease (the library has no setting for it): a scenario
    /// whose lease differs is refused.
    #[serde(default)]
    pub lease_fixed: bool,
    #[serde(default)]
    pub constants: BTreeMap<String, toml::Value>,
    /// Run once in the run's schema before the preload.
    #[serde(default)]
    pub setup: String,
    /// Run on every connection.
    pub on_connect: Option<String>,
    pub enqueue: RawStep,
    pub preload: Option<RawStep>,
    pub select: Option<RawStep>,
    pub claim: RawStep,
    pub complete: RawStep,
    pub fail: Option<RawStep>,
    pub heartbeat: Option<RawStep>,
    pub reclaim: Option<RawStep>,
    pub cancel: Option<RawStep>,
    pub result: RawResult,
    pub observe: RawObserve,
    /// How the queue must be driven (`[drive]`); left out: any mode, a lease in time.
    pub drive: Option<RawDrive>,
}

/// `[drive]`: what the queue's design promises and asks of whoever runs it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDrive {
    /// `lease` or `hold-transaction`.
    pub mode: Option<String>,
    /// `time` (the default) or `session` (advisory locks: held as long as the connection).
    pub lease: Option<String>,
    /// The precision the queue keeps its times to (`"1s"`).
    pub time_resolution: Option<String>,
    /// `same` or `new`: the worker's name after a crash and restart.
    pub identity_after_crash: Option<String>,
    /// SQLSTATEs the queue's statements may end with by design (`unexpected_errors`).
    #[serde(default)]
    pub expected_errors: Vec<String>,
    /// How many jobs sharing `[result] exclusion_key` may run at once (default 1).
    pub exclusion_limit: Option<u32>,
    /// The isolation level the workers' transactions run at: `read committed` (the server's
    /// default), `repeatable read` or `serializable`.
    pub isolation: Option<String>,
    /// What the reclaim does with the jobs it returns, when its rows carry no `status`:
    /// `retry` (gives them back to be run again) or `fail` (fails them for good).
    pub reclaim: Option<String>,
    /// The states (`observe.state`'s words) in which a job keeps its `[result] unique_key`
    /// taken (default: queued and running, a job not yet finished).
    pub unique_states: Option<Vec<String>>,
    /// A job keeps its key taken at most this long after its enqueue (Oban's `period`).
    pub unique_period: Option<String>,
}

/// A step: one statement, a list (one transaction), or a table with the acceptance rule.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(crate) enum RawStep {
    One(String),
    List(Vec<String>),
    Table(RawStepTable),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawStepTable {
    pub sql: OneOrMany,
    /// `rows` (default), `true` or `positive`.
    pub accepted: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(crate) enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl RawStep {
    /// The statements, in order, and the declared acceptance rule.
    pub(crate) fn parts(&self) -> (Vec<String>, Option<&str>) {
        match self {
            RawStep::One(s) => (vec![s.clone()], None),
            RawStep::List(l) => (l.clone(), None),
            RawStep::Table(t) => {
                let sql = match &t.sql {
                    OneOrMany::One(s) => vec![s.clone()],
                    OneOrMany::Many(l) => l.clone(),
                };
                (sql, t.accepted.as_deref())
            }
        }
    }
}

/// The claim's columns.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawResult {
    pub id: String,
    pub attempt: Option<String>,
    pub token: Option<String>,
    pub class: Option<String>,
    /// A statement of the fail step returns the job's new id in this column (a retry that
    /// re-inserts the job): the first of its statements that returns it.
    pub successor: Option<String>,
    /// A column the claim returns (a lock, a concurrency key, a queue's name): jobs that share
    /// its value must not run at once beyond `[drive] exclusion_limit` (`mutual_exclusion`).
    pub exclusion_key: Option<String>,
    /// A column the enqueue returns for a job it inserts: the key the enqueue dedupes on. An
    /// enqueue that returns no row was deduplicated (`unique_enqueue`).
    pub unique_key: Option<String>,
}

/// How the harness reads the queue's state.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawObserve {
    pub state: String,
    pub remaining: String,
    pub depth: Option<String>,
}
