//! `[drive]` of an adapter file (`docs/adapters.md`, "How it must be driven"): what the queue's
//! design asks of whoever runs it, resolved once. The scenario's validation refuses a run that
//! contradicts it (a lease-mode run of a queue whose row lock is the claim); the checkers read
//! the lease's kind and the time resolution when they tell a race from a lease expiry.

use super::raw::RawDrive;
use crate::error::Invalid;
use crate::model::protocol::Mode;
use crate::model::reap::ReapAction;
use std::time::Duration;

/// How a claim holds its job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LeaseKind {
    /// For `lease.duration` from the claim (moved by heartbeats): the default.
    #[default]
    Time,
    /// For as long as the claiming session lives (advisory locks): a crash ends it at once,
    /// a pause never does.
    Session,
}

/// The isolation level a queue's workers run their transactions at (`[drive] isolation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Isolation {
    /// The server's default: nothing is set.
    #[default]
    ReadCommitted,
    RepeatableRead,
    Serializable,
}

impl Isolation {
    pub const ACCEPTED: &'static str = "read committed, repeatable read, serializable";

    pub fn parse(text: &str) -> Option<Isolation> {
        match text.trim().to_ascii_lowercase().split_whitespace().collect::<Vec<_>>().join(" ").as_str() {
            "read committed" => Some(Isolation::ReadCommitted),
            "repeatable read" => Some(Isolation::RepeatableRead),
            "serializable" => Some(Isolation::Serializable),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Isolation::ReadCommitted => "read committed",
            Isolation::RepeatableRead => "repeatable read",
            Isolation::Serializable => "serializable",
        }
    }

    /// The `BEGIN` of a transaction at this level (validate's smoke cycle runs in one).
    pub fn begin_sql(self) -> &'static str {
        match self {
            Isolation::ReadCommitted => "BEGIN",
            Isolation::RepeatableRead => "BEGIN ISOLATION LEVEL REPEATABLE READ",
            Isolation::Serializable => "BEGIN ISOLATION LEVEL SERIALIZABLE",
        }
    }

    /// The statement a worker's connection runs once so that every transaction on it (a
    /// list's `BEGIN`, a hold-transaction round, a single statement's own) runs at this level;
    /// None for the server's default.
    pub fn session_sql(self) -> Option<&'static str> {
        match self {
            Isolation::ReadCommitted => None,
            Isolation::RepeatableRead => Some("SET default_transaction_isolation = 'repeatable read'"),
            Isolation::Serializable => Some("SET default_transaction_isolation = 'serializable'"),
        }
    }
}

/// What the adapter declared; the defaults leave every run as it was.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Drive {
    /// The only mode the queue may be run in (None: either).
    pub mode: Option<Mode>,
    pub lease: LeaseKind,
    /// The precision the queue keeps its times to (zero: exact).
    pub time_resolution: Duration,
    /// After a crash the worker comes back under a new name (Some(true)), the same one
    /// (Some(false)), or as the scenario's fault says (None).
    pub new_identity_after_crash: Option<bool>,
    /// `expected_errors`: SQLSTATEs the queue's statements end with by design.
    pub expected_errors: Vec<String>,
    /// `exclusion_limit`: how many jobs of one `[result] exclusion_key` may run at once.
    pub exclusion_limit: u32,
    /// `isolation`: the level the workers' transactions run at.
    pub isolation: Isolation,
    /// `reclaim`: what the reclaim does with the jobs it returns when its rows carry no
    /// `status` column (None: the rows say, or nobody does).
    pub reclaim: Option<ReapAction>,
    /// `unique_states`, `unique_period`: how long a job keeps its `[result] unique_key` taken.
    pub unique: UniqueRule,
}

/// The dedupe rule of an adapter with `[result] unique_key`: a job keeps its key taken while it
/// is queued or running, and also once done, dead or cancelled when the rule says so, and at
/// most `period` after its enqueue. An enqueue of a taken key must insert nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UniqueRule {
    pub done: bool,
    pub dead: bool,
    pub cancelled: bool,
    pub period: Option<Duration>,
}

impl UniqueRule {
    /// The states `unique_states` accepts.
    pub const STATES: &'static str = "queued, running, done, dead, cancelled";

    fn resolve(
        states: Option<&[String]>,
        period: Option<&str>,
        duration: impl Fn(&str) -> Result<Duration, Invalid>,
    ) -> Result<UniqueRule, Invalid> {
        let mut rule = UniqueRule::default();
        if let Some(states) = states {
            for s in states {
                match s.as_str() {
                    "queued" | "running" => {}
                    "done" => rule.done = true,
                    "dead" => rule.dead = true,
                    "cancelled" => rule.cancelled = true,
                    other => {
                        return Err(Invalid::at("unique_states", format!("`{other}`; accepted: {}", Self::STATES)));
                    }
                }
            }
            if !["queued", "running"].iter().all(|w| states.iter().any(|s| s == w)) {
                return Err(Invalid::at(
                    "unique_states",
                    "must include \"queued\" and \"running\": a job waiting or running keeps its key taken \
                     (a key taken only while the job waits is not expressible yet)",
                ));
            }
        }
        rule.period = match period {
            None => None,
            Some(text) => {
                let d = duration(text).map_err(|e| Invalid::at("unique_period", e.reason))?;
                if d.is_zero() {
                    return Err(Invalid::at("unique_period", "`0s`: above 0, e.g. \"60s\" (Oban's default period)"));
                }
                Some(d)
            }
        };
        Ok(rule)
    }
}

impl Drive {
    /// Checks and resolves `[drive]`; an error names its key and the accepted values.
    pub fn resolve(
        raw: Option<&RawDrive>,
        duration: impl Fn(&str) -> Result<Duration, Invalid>,
    ) -> Result<Drive, Invalid> {
        let Some(raw) = raw else { return Ok(Drive::default()) };
        let mode = match raw.mode.as_deref() {
            None => None,
            Some("lease") => Some(Mode::Lease),
            Some("hold-transaction") => Some(Mode::HoldTransaction),
            Some(other) => return Err(Invalid::at("mode", format!("`{other}`; accepted: lease, hold-transaction"))),
        };
        let lease = match raw.lease.as_deref() {
            None | Some("time") => LeaseKind::Time,
            Some("session") => LeaseKind::Session,
            Some(other) => return Err(Invalid::at("lease", format!("`{other}`; accepted: time, session"))),
        };
        let time_resolution = time_resolution(raw.time_resolution.as_deref(), &duration)?;
        let new_identity_after_crash = match raw.identity_after_crash.as_deref() {
            None => None,
            Some("same") => Some(false),
            Some("new") => Some(true),
            Some(other) => {
                return Err(Invalid::at("identity_after_crash", format!("`{other}`; accepted: same, new")));
            }
        };
        if let Some(bad) = raw.expected_errors.iter().find(|c| !crate::model::errors::is_sqlstate(c)) {
            return Err(Invalid::at(
                "expected_errors",
                format!(
                    "`{bad}` is no SQLSTATE: five digits or capital letters, e.g. \"40001\" (serialization_failure)"
                ),
            ));
        }
        let expected_errors = raw.expected_errors.clone();
        let exclusion_limit = match raw.exclusion_limit {
            Some(0) => {
                return Err(Invalid::at(
                    "exclusion_limit",
                    "`0`: at least 1 (how many jobs of one key may run at once)",
                ));
            }
            limit => limit.unwrap_or(1),
        };
        let isolation = match raw.isolation.as_deref() {
            None => Isolation::default(),
            Some(text) => Isolation::parse(text)
                .ok_or_else(|| Invalid::at("isolation", format!("`{text}`; accepted: {}", Isolation::ACCEPTED)))?,
        };
        let reclaim = match raw.reclaim.as_deref() {
            None => None,
            Some(text @ ("retry" | "fail")) => ReapAction::parse(text),
            Some(other) => return Err(Invalid::at("reclaim", format!("`{other}`; accepted: retry, fail"))),
        };
        let unique = UniqueRule::resolve(raw.unique_states.as_deref(), raw.unique_period.as_deref(), duration)?;
        Ok(Drive {
            mode,
            lease,
            time_resolution,
            new_identity_after_crash,
            expected_errors,
            exclusion_limit,
            isolation,
            reclaim,
            unique,
        })
    }

    /// The mode's name as a scenario writes it.
    pub fn mode_name(mode: Mode) -> &'static str {
        match mode {
            Mode::Lease => "lease",
            Mode::HoldTransaction => "hold-transaction",
        }
    }
}

/// `time_resolution`: zero when left out, else between 1us and 1h.
fn time_resolution(
    text: Option<&str>,
    duration: impl Fn(&str) -> Result<Duration, Invalid>,
) -> Result<Duration, Invalid> {
    let Some(text) = text else { return Ok(Duration::ZERO) };
    let d = duration(text).map_err(|e| Invalid::at("time_resolution", e.reason))?;
    if d.is_zero() || d > Duration::from_secs(3600) {
        return Err(Invalid::at(
            "time_resolution",
            format!("`{text}`: between 1us and 1h, e.g. \"1s\" for a queue that keeps whole seconds"),
        ));
    }
    Ok(d)
}
