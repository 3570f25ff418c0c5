//! What became of the jobs: the counts every check reads (jobs, executions, claims, faults,
//! durability, the reaper …).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Jobs {
    pub enqueued: u64,
    /// Jobs in status `done` at the end.
    pub completed: u64,
    /// Jobs not `done` at the end (queued, running, failed, dead).
    pub unfinished: u64,
    /// Jobs marked done without any recorded execution, or that disappeared.
    pub lost: u64,
    /// Jobs left `running` at the end.
    pub stuck_running: u64,
    pub queued: u64,
    /// Jobs that used up max_attempts.
    pub dead: u64,
    pub cancelled: u64,
    /// Jobs claimed more than once (attempts > 1): failures, reclaims, races.
    pub retried: u64,
    /// Jobs with more attempts than max_attempts (a reclaim that ignored the budget).
    pub attempts_exceeded: u64,
    /// `done` jobs per class ("default" = preloaded).
    pub completed_by_class: BTreeMap<String, u64>,
    /// Enqueues a deduplicating adapter answered with no row (its key was taken): not jobs,
    /// so not in `enqueued`.
    pub deduplicated: u64,
}

/// The oldest ready age per class from the Postgres time series (open model only).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Starvation {
    /// `run.starvation_threshold` in seconds.
    pub threshold_s: f64,
    /// The class whose oldest ready job waited longest, and that wait.
    pub worst_class: String,
    pub worst_age_s: f64,
    /// Per class: the largest oldest-ready age any sample saw.
    pub max_oldest_ready_age_s: BTreeMap<String, f64>,
    /// Per class: least-squares growth of the oldest ready age over the last third
    /// of the load phases, in seconds per second (1 = the class's head does not move).
    pub growth_s_per_s: BTreeMap<String, f64>,
    /// Classes past the threshold or growing steadily.
    pub starving: Vec<String>,
}

/// How far completions strayed from enqueue (id) order, over all classes.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Fifo {
    /// Jobs with an accepted completion (each counted at its first).
    pub completions: u64,
    /// Neighbours in completion order whose ids are in the opposite order.
    pub inverted_pairs: u64,
    /// The largest |position in completion order − position in id order|.
    pub worst_displacement: u64,
}

/// Stale failures and heartbeats (stale completions are in `completions`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Stale {
    pub fails_accepted: u64,
    pub fails_rejected: u64,
    pub fail_stale_accepted: u64,
    pub fail_stale_rejected: u64,
    pub heartbeats_accepted: u64,
    pub heartbeats_rejected: u64,
    pub heartbeat_stale_accepted: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Ownership {
    /// Jobs that two workers believed they owned at the same moment (a belief runs from the
    /// claim's return to its completion, failure or release).
    pub overlapping_jobs: u64,
    /// Claims that handed a job out over another holder's lease: sent before that lease ended,
    /// returned after that holder's claim did.
    pub claims_during_lease: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Faults {
    pub injected: u64,
    /// Faults fired, by kind (every kind, 0 for those that did not fire).
    pub by_kind: BTreeMap<crate::model::fault::FaultKind, u64>,
    /// Faults that hit a job whose next accepted completion came later.
    pub recovered: u64,
    /// Faults that hit a job never completed afterwards (it may be dead).
    pub unrecovered: u64,
    pub recovery_ms_max: f64,
    pub recovery_ms_mean: f64,
    #[serde(skip)]
    pub recovery_ms_total: f64,
}

/// The server going away mid-run and the workers finding it again.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Outage {
    /// Times the server the run reaches went away: a `postgres_restart` stopped it or a
    /// `failover` killed the primary.
    pub server_restarts: u64,
    /// Time the server was down, from the stop signal to accepting connections again (to the end
    /// of the run if never), ms.
    pub server_down_ms: f64,
    /// Connections the workers re-opened after losing one (a restart, a killed backend, a crash).
    pub worker_reconnects: u64,
    /// Connection attempts made while reconnecting, failed ones included.
    pub reconnect_attempts: u64,
    /// The longest time one worker went without a connection, ms.
    pub longest_worker_outage_ms: f64,
    /// From the first lost worker connection to the last restored one, s after the start (0 if none).
    pub window_start_s: f64,
    pub window_end_s: f64,
    /// `run.reconnect_timeout`, s.
    pub reconnect_timeout_s: f64,
}

/// Did what the server acknowledged survive its restart? (only with `postgres_restart`)
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Durability {
    /// A restart happened with fsync and synchronous_commit on (else `note` says why not).
    pub tested: bool,
    pub note: String,
    /// Jobs whose completion the server acknowledged (the worker saw the statement or COMMIT return).
    pub acknowledged_completions: u64,
    /// Of those, acknowledged before the first restart (the ones the restart put to the test).
    pub acknowledged_before_restart: u64,
    /// Of those, jobs not `done` at the end: acknowledged work the server forgot.
    pub lost_completions: u64,
    /// Jobs `done` whose last completion was sent but never acknowledged (the ack died with the
    /// connection) and whose retry found nothing to do: the first commit had landed.
    pub unacknowledged_done: u64,
    /// Open-model jobs whose INSERT the server acknowledged.
    pub acknowledged_enqueues: u64,
    /// Of those, jobs missing from the table at the end.
    pub lost_enqueues: u64,
    /// Of the lost enqueues, those whose id the promoted standby handed out again to a later
    /// enqueue (the id sequence went back with the lost WAL).
    pub ids_reissued: u64,
    /// Executions of jobs after their acknowledged completion, which the server then lost:
    /// the work the loss made run again.
    pub reexecutions: u64,
    /// `failover` faults: the primary killed, the standby promoted.
    pub failovers: u64,
    /// How the standby replicated: "async", "sync" ("" without a failover).
    pub replication: String,
    /// WAL the primary had written that the standby had not received when the primary was
    /// killed, bytes (the sum over the failovers).
    pub lag_bytes_at_failure: u64,
    /// WAL the promoted standby never received, bytes (the sum over the failovers).
    pub wal_lost_bytes: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Reaper {
    pub runs: u64,
    pub reclaimed: u64,
    pub marked_dead: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Executions {
    pub total: u64,
    /// Executions beyond the first of each job, retries after an accepted failure left out:
    /// the sum of the `duplicate_*` causes.
    pub duplicate: u64,
    /// Duplicates whose claim came while the previous holder's lease still ran (the bug).
    pub duplicate_race: u64,
    /// Duplicates whose claim came after the previous lease ran out while its holder lived
    /// (at-least-once).
    pub duplicate_lease_expired: u64,
    /// Duplicates whose claim came after the previous holder let go without finishing (a
    /// crash, a lost connection; at-least-once).
    pub duplicate_after_crash: u64,
    /// Duplicates whose claim came after a completion of the job was accepted (the queue gave
    /// a finished job out again: `checks.run_after_completion`).
    pub duplicate_after_completion: u64,
    /// Duplicates whose claim came after a completion whose answer its worker lost (`ack_lost`):
    /// it never landed and the lease brought the job back, or the completion sent again put the
    /// finished job back (`checks.completion_idempotent`).
    pub duplicate_after_ack_unknown: u64,
    /// Executions after an accepted failure: retries, which are no duplicates.
    pub retries: u64,
    /// Distinct jobs executed at least once.
    pub distinct_jobs: u64,
    /// Jobs executed more than once, retries left out.
    pub jobs_duplicated: u64,
    pub max_per_job: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Completions {
    /// Completion statements that updated the job (1 row).
    pub accepted: u64,
    /// Completion statements that changed nothing (0 rows): the fence held.
    pub rejected: u64,
    /// Accepted completions sent after another worker had claimed the job again.
    pub stale_accepted: u64,
    /// Rejected completions sent after another worker had claimed the job again.
    pub stale_rejected: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Claims {
    /// Claim round trips (each may return up to `batch` jobs).
    pub total: u64,
    /// Claims that returned no job.
    pub empty: u64,
    /// Jobs returned by claims.
    pub jobs: u64,
    pub heartbeats: u64,
    /// Connections re-opened after a killed backend or a crash.
    pub reconnects: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Errors {
    pub total: u64,
    /// Errors by SQLSTATE (or `io` for a lost connection).
    pub by_code: BTreeMap<String, u64>,
    /// The same by the statement that failed and the code: `claim:40001`.
    pub by_statement: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Effects {
    /// Executions in the harness's in-memory journal.
    pub journal: u64,
    /// Rows in the `effects` table (the second witness), when enabled.
    pub table_rows: Option<u64>,
}
