//! The one summary model every exporter reads. Its JSON form is
//! `summary.json`; `schema_version` changes whenever a field is renamed or
//! removed (adding fields does not). Exporters never recompute statistics.

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
pub struct DatabaseInfo {
    /// `ephemeral` or `url`.
    pub kind: String,
    /// Host, port, user and database; never a password.
    pub target: String,
    /// URL mode: the URL with its password replaced by `***`; empty for an ephemeral cluster.
    pub url: String,
    pub schema: String,
    pub server_version: String,
    /// Scenario settings passed to the ephemeral cluster.
    pub settings_applied: BTreeMap<String, String>,
    /// In URL mode: each scenario setting and the server's actual value (not changed).
    pub settings_reported: BTreeMap<String, SettingReport>,
    /// Whether the run's connections used TLS, and with which sslmode (docs/production-postgres.md).
    pub tls: TlsInfo,
    /// The pooler the workers and producers went through (`[postgres.pgbouncer]`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pooler: Option<PoolerInfo>,
}

/// A pooler between the workers and the server (docs/production-postgres.md).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct PoolerInfo {
    /// `pgbouncer`.
    pub kind: String,
    /// `session`, `transaction` or `statement`.
    pub pool_mode: String,
    /// Server connections in the pool.
    pub pool_size: u32,
    /// The workers keep no named prepared statements (transaction and statement pooling).
    pub unnamed_statements: bool,
}

impl PoolerInfo {
    /// `, through pgbouncer (transaction pooling, 8 server connections)`, for the database line.
    pub fn shown(pooler: &Option<PoolerInfo>) -> String {
        match pooler {
            Some(p) if p.pool_size == 0 => format!(", through a pooler of your own ({} pooling)", p.pool_mode),
            Some(p) => format!(", through {} ({} pooling, {} server connections)", p.kind, p.pool_mode, p.pool_size),
            None => String::new(),
        }
    }
}

/// The TLS of the run's connections: the settings, and what the server reports for the setup
/// connection (`pg_stat_ssl`). Never a key or a certificate's content.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct TlsInfo {
    /// The connections were encrypted (the server's `pg_stat_ssl.ssl` for the setup connection).
    pub used: bool,
    /// libpq's sslmode the run connected with (`disable` … `verify-full`; `require` with a root
    /// certificate file reads `verify-ca`, as it behaves).
    pub sslmode: String,
    /// What the client checked of the server's certificate: `none`, `chain`, `chain and host name`.
    pub checks: String,
    /// The root certificate file the chain was checked against (a path; empty when not checked).
    pub root_cert: String,
    /// A client certificate was presented (its path; empty without one).
    pub client_cert: String,
    /// The protocol and cipher the server reports (`TLSv1.3`, `TLS_AES_256_GCM_SHA384`); empty without TLS.
    pub version: String,
    pub cipher: String,
}

impl TlsInfo {
    /// `TLS TLSv1.3 verify-full` or `no TLS (sslmode prefer)`, for the terminal's database line.
    pub fn shown(&self) -> String {
        if self.used {
            format!("TLS {} {}", self.version, self.sslmode)
        } else {
            format!("no TLS (sslmode {})", if self.sslmode.is_empty() { "prefer" } else { &self.sslmode })
        }
    }
}

impl DatabaseInfo {
    /// How the terminal and report.html name the server: the redacted URL, else the target.
    pub fn shown(&self) -> &str {
        if self.url.is_empty() { &self.target } else { &self.url }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SettingReport {
    pub wanted: String,
    pub actual: String,
}

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
    pub by_kind: BTreeMap<super::fault::FaultKind, u64>,
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
    /// Executions beyond the first of each job.
    pub duplicate: u64,
    /// Duplicates whose claim came while the previous holder's lease still ran (the bug).
    pub duplicate_race: u64,
    /// Duplicates whose claim came after the previous lease expired (at-least-once).
    pub duplicate_lease_expired: u64,
    /// Distinct jobs executed at least once.
    pub distinct_jobs: u64,
    /// Jobs executed more than once.
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
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Effects {
    /// Executions in the harness's in-memory journal.
    pub journal: u64,
    /// Rows in the `effects` table (the second witness), when enabled.
    pub table_rows: Option<u64>,
}

/// Wall time of the harness's own stages, in seconds.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Timings {
    /// The preload INSERT (jobs.preload rows), without schema creation and VACUUM ANALYZE.
    pub preload_s: f64,
    /// The checkers and the wait/latency measures over the journal and the final table.
    pub verify_s: f64,
    /// The time-series sampler's own query round trips, summed over the run.
    pub sampler_s: f64,
    /// The claim-plan probe's own round trips (BEGIN, EXPLAIN ANALYZE, ROLLBACK), summed.
    pub probe_s: f64,
    /// Writing the history (`history.csv.gz`, `final_state.csv.gz`), after the run: 0 with
    /// `run.history = false`.
    pub history_s: f64,
    /// Merging the agents' uploaded evidence (download, decode, add, sort); 0 for a local run.
    pub merge_s: f64,
    /// The coordinator's peak resident memory (VmHWM) right after the merge, MiB: everything it
    /// held up to then, the merged evidence included; 0 for a local run.
    pub merge_peak_rss_mib: f64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Throughput {
    /// Executions per second of run time.
    pub jobs_per_sec: f64,
    /// Claim round trips per second (pgbench's tps for the same script).
    pub claims_per_sec: f64,
    pub duration_s: f64,
    /// A process client's most jobs/s its configuration allows (docs/clients.md, "Ceilings");
    /// absent when the configuration sets none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ceiling_jobs_per_sec: Option<f64>,
    /// How the ceiling follows from the configuration, in words; empty without one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub ceiling: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Latencies {
    /// The claim statement.
    pub claim: Percentiles,
    /// BEGIN to COMMIT in hold-transaction mode; the claim statement in lease mode.
    pub claim_tx: Percentiles,
    pub work: Percentiles,
    pub complete: Percentiles,
    /// Waiting for a pooled connection (`workers.pool`); count 0 with a connection per worker.
    pub acquire: Percentiles,
    /// Intended enqueue time to first claim, per class ("default" = preloaded).
    pub queue_wait: BTreeMap<String, Percentiles>,
    /// Intended enqueue time to accepted completion.
    pub end_to_end: Percentiles,
    /// Enqueue commit to first claim (open-model jobs): how fast idle workers notice work.
    pub pickup: Percentiles,
}

/// Idle behaviour: how workers wait for work and what the waiting costs.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct WakeupStats {
    /// `poll` or `listen`.
    pub mode: String,
    /// The policy in words, e.g. "poll, backoff 100ms → 250ms → 2s with full jitter".
    pub policy: String,
    /// Empty claims plus drained checks sent during idle seconds.
    pub idle_queries: u64,
    /// Seconds of the run in which no claim returned a job and no job was executed
    /// (the last, partial second counts by its fraction).
    pub idle_seconds: f64,
    /// idle_queries / idle_seconds, summed over all workers (0 without idle seconds).
    pub idle_queries_per_sec: f64,
    /// Notifications the workers consumed while idle (listen).
    pub notifications_received: u64,
    /// The rollback probe (listen runs): NOTIFYs sent in a rolled-back transaction that arrived.
    pub rolled_back_notify_delivered: Option<u64>,
    /// The rollback probe: the committed NOTIFY sent after it (1 = delivered).
    pub committed_notify_delivered: Option<u64>,
}

/// Horizon blockers and their effect on the jobs table.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Horizon {
    pub blockers: u64,
    /// Seconds the blockers held the horizon, summed.
    pub held_s: f64,
    /// The most dead tuples (n_dead_tup) seen while they held it.
    pub peak_dead_tuples: i64,
    pub peak_xmin_age: i64,
    /// Seconds after the last blocker ended until dead tuples were back under a tenth of the peak; -1 if never.
    pub catch_up_s: f64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct VacuumNumbers {
    pub at_s: f64,
    pub removed: i64,
    pub remain: i64,
    /// "are dead but not yet removable"
    pub not_removable: i64,
    /// Exact dead tuples from pgstattuple just before; -1 when pgstattuple is not available.
    pub pgstattuple_dead: i64,
    /// The n_dead_tup estimate at the same moment.
    pub n_dead_tup: i64,
    /// Buffers one claim touched at the last claim-plan probe before the step, and the first after (-1: no probe).
    pub probe_buffers_before: i64,
    pub probe_buffers_after: i64,
}

/// The claim-plan probe: the claim under EXPLAIN (ANALYZE, BUFFERS), rolled back.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Probe {
    pub samples: u64,
    pub buffers_first: i64,
    pub buffers_max: i64,
    pub buffers_last: i64,
    pub exec_ms_first: f64,
    pub exec_ms_max: f64,
    pub exec_ms_last: f64,
}

/// The open-model producers.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Producer {
    /// Arrivals the schedule planned (sent + unsent).
    pub planned: u64,
    pub sent: u64,
    /// Arrivals not sent before the load ended or the run stopped.
    pub unsent: u64,
    pub errors: u64,
    /// How late arrivals were sent after their intended time.
    pub lag_ms: Percentiles,
    /// How long one enqueue took (with jobs.business_row: the whole transaction).
    pub enqueue_ms: Percentiles,
    /// Jobs left out of the latencies because they were meant to arrive in a warm-up phase.
    pub excluded_warmup: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PhaseInfo {
    pub name: String,
    pub start_s: f64,
    pub duration_s: f64,
    pub rate: f64,
    pub warmup: bool,
}

/// One load phase's own numbers: what happened between its start and its end.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PhaseNumbers {
    pub start_s: f64,
    pub duration_s: f64,
    pub warmup: bool,
    pub executions: PhaseExecutions,
    pub throughput: PhaseThroughput,
    pub latency_ms: PhaseLatencies,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PhaseExecutions {
    /// Executions that started their side effect inside the phase.
    pub total: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PhaseThroughput {
    /// Executions per second of the phase.
    pub jobs_per_sec: f64,
    /// Claim round trips per second of the phase.
    pub claims_per_sec: f64,
}

/// Statements timed by when they were sent; waits by the job's intended enqueue time.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PhaseLatencies {
    pub claim: Percentiles,
    pub work: Percentiles,
    pub complete: Percentiles,
    pub queue_wait: BTreeMap<String, Percentiles>,
    pub end_to_end: Percentiles,
}

/// The machine and server, recorded once.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Environment {
    pub cores: u64,
    pub memory_gib: f64,
    pub os: String,
    /// Settings whose source is not the default (from pg_settings).
    pub pg_settings: BTreeMap<String, String>,
}

/// Milliseconds.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Percentiles {
    pub count: u64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
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
    pub actual: Option<f64>,
    pub passed: bool,
}

/// One agent of a run across processes or hosts: its share and what it measured.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct AgentFigures {
    /// 1-based, in the order the agents joined.
    pub agent: u32,
    /// `--name`, else the host name and process id.
    pub name: String,
    /// `joined`, `finished` (evidence merged), `missing` (it joined and died or stopped
    /// answering: its evidence is missing) or `absent` (it never joined).
    pub state: String,
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
