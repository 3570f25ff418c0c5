//! How fast and how steady: timings, throughput, latencies and wake-ups, the horizon and
//! vacuum, the probe, the producer and the phases.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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

/// The jobs table's dead tuples as the sampler saw them (`n_dead_tup` of
/// `pg_stat_user_tables`), over the whole run, blockers or not.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct DeadTuples {
    /// The samples these figures come from (0: none, and the figures are 0).
    pub samples: u64,
    /// The most seen.
    pub peak: i64,
    /// At the last sample.
    pub end: i64,
    /// The least-squares slope over the run, dead tuples per second.
    pub growth_per_s: f64,
    /// Autovacuum runs on the table during the run (`autovacuum_count`, last sample − first).
    pub autovacuums: i64,
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
