//! Records the run produces and later stages read: the Postgres time series,
//! the horizon blockers' spans, VACUUM results, claim-plan probe samples and
//! the final table state. Plain data; the runner fills them, the checkers and
//! exporters read them.

use serde::{Deserialize, Serialize};

/// One row of the final table state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobRow {
    pub id: i64,
    pub status: Status,
    pub attempts: i32,
    pub max_attempts: i32,
    /// `locked_until` has passed (meaningful for running jobs).
    pub lease_expired: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Queued,
    Running,
    Done,
    Failed,
    Dead,
    Cancelled,
}

impl Status {
    /// Every status, in the order messages list them.
    pub const ALL: [Status; 6] =
        [Status::Queued, Status::Running, Status::Done, Status::Failed, Status::Dead, Status::Cancelled];

    /// The name an observer query gives it (and the history's final state).
    pub fn name(self) -> &'static str {
        match self {
            Status::Queued => "queued",
            Status::Running => "running",
            Status::Done => "done",
            Status::Failed => "failed",
            Status::Dead => "dead",
            Status::Cancelled => "cancelled",
        }
    }

    /// One of the six names an observer query maps a queue's states onto.
    pub fn parse_known(s: &str) -> Option<Status> {
        Some(match s {
            "queued" => Status::Queued,
            "running" => Status::Running,
            "done" => Status::Done,
            "failed" => Status::Failed,
            "dead" => Status::Dead,
            "cancelled" => Status::Cancelled,
            _ => return None,
        })
    }
}

/// One row of the Postgres side of the time series.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PgSample {
    pub t_ms: u64,
    pub queued: i64,
    pub running: i64,
    pub done: i64,
    pub dead: i64,
    /// Per class, in plan order with "default" first: (queued, oldest ready age in s).
    pub per_class: Vec<(i64, f64)>,
    pub n_live_tup: i64,
    pub n_dead_tup: i64,
    pub vacuum_count: i64,
    pub autovacuum_count: i64,
    pub table_bytes: i64,
    pub index_bytes: i64,
    pub oldest_xact_s: f64,
    pub xmin_age: i64,
    pub waits: String,
    /// The sample's own round trips: its cost to the run.
    pub took_ms: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlockerSpan {
    pub kind: String,
    pub start_us: u64,
    pub end_us: u64,
}

/// A network fault on one agent's path (`partition`, `latency`, `loss`): from when it took
/// effect to when it was lifted (µs after the start), and the worker identities it hit (the
/// agent's slots, and the range its respawned workers take), as inclusive ranges.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetworkSpan {
    pub kind: String,
    pub agent: u32,
    pub start_us: u64,
    pub end_us: u64,
    pub workers: Vec<(u32, u32)>,
}

impl NetworkSpan {
    pub fn hits(&self, worker: u32) -> bool {
        self.workers.iter().any(|(lo, hi)| (*lo..=*hi).contains(&worker))
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct VacuumResult {
    pub name: String,
    pub t_us: u64,
    pub removed: i64,
    pub remain: i64,
    pub not_removable: i64,
    /// Exact dead tuples from pgstattuple just before the VACUUM, when available.
    pub pgstattuple_dead: Option<i64>,
    /// The `n_dead_tup` estimate at the same moment.
    pub n_dead_tup: i64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ProbeSample {
    pub t_ms: u64,
    /// Shared buffers hit + read by one claim.
    pub buffers: i64,
    pub buffers_read: i64,
    pub exec_ms: f64,
    /// The probe's own round trips (BEGIN, EXPLAIN ANALYZE, ROLLBACK): its cost to the run.
    pub took_ms: f64,
}

/// How the ephemeral cluster's streaming standby follows the primary (`[postgres] standby`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Replication {
    /// The primary acknowledges a commit once it is on its own disk; the standby may lag.
    #[default]
    Async,
    /// `synchronous_standby_names = '*'`, `synchronous_commit = on`: a commit is acknowledged
    /// only once the standby has flushed its WAL.
    Sync,
}

impl Replication {
    pub fn name(self) -> &'static str {
        match self {
            Replication::Async => "async",
            Replication::Sync => "sync",
        }
    }
}

/// One `failover` fault as it happened: the primary killed, the standby promoted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct FailoverRecord {
    /// µs after the start: when the primary was SIGKILLed.
    pub down_us: u64,
    /// µs after the start: when the promoted standby accepted a read-write connection
    /// (`u64::MAX`: never).
    pub up_us: u64,
    pub replication: Replication,
    /// How long the standby's WAL receiver was held (SIGSTOP) before the primary died, µs.
    pub hold_us: u64,
    /// WAL the primary had written that the standby had not received, at the moment the
    /// primary was killed (primary's `pg_current_wal_lsn()` − standby's `pg_last_wal_receive_lsn()`).
    pub lag_bytes: u64,
    /// WAL the primary had written that the promoted standby never had: the primary's last
    /// LSN − the standby's receive LSN once its WAL receiver had read everything left in
    /// its socket. Commits in this span that were acknowledged are lost.
    pub wal_lost_bytes: u64,
    /// URL mode: seen from a change of the server's identity (`run::identity`), not caused by
    /// queuebench; the replication, hold and WAL figures are then unknown (0).
    pub observed: bool,
}
