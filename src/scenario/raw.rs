//! The scenario file exactly as written: a serde mirror of the TOML, with
//! `deny_unknown_fields` everywhere so a typo is an error, and no I/O or
//! validation. `plan.rs` turns this into a `Plan`.

use crate::adapter::builtin::RawStrategy;
pub(crate) use crate::model::protocol::{Fencing, Mode, Reclaim};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

mod expect;
pub(crate) use expect::{RawBaseline, RawExpect};

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawScenario {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub seed: Option<u64>,
    /// The queue under test: a shipped adapter's name or an adapter file relative to the
    /// scenario (`docs/adapters.md`); exclusive with `workers.strategy`.
    pub adapter: Option<String>,
    /// A command that creates the adapter's schema instead of its `setup` SQL (the real
    /// library's migrations), relative to the scenario's folder.
    pub setup_command: Option<Vec<String>>,
    /// A real queue library's worker processes instead of SQL workers: a folder under
    /// `clients/` (by name) or a path relative to the scenario (`docs/clients.md`).
    pub client: Option<String>,
    #[serde(default)]
    pub jobs: RawJobs,
    #[serde(default)]
    pub workers: RawWorkers,
    #[serde(default)]
    pub lease: RawLease,
    #[serde(default)]
    pub run: RawRun,
    #[serde(default)]
    pub retry: RawRetry,
    #[serde(default)]
    pub faults: Vec<RawFault>,
    /// Sessions that hold back the xmin horizon (seed 001, seed 004).
    #[serde(default)]
    pub blockers: Vec<RawBlocker>,
    /// Explicit VACUUM (VERBOSE) steps, each with a name for its numbers.
    #[serde(default)]
    pub vacuum: Vec<RawVacuum>,
    #[serde(default)]
    pub postgres: RawPostgres,
    #[serde(default)]
    pub strategies: BTreeMap<String, RawStrategy>,
    /// `"metric" = "op number"` or `"metric" = { expr = "op number", abort = true }`.
    #[serde(default)]
    pub expect: BTreeMap<String, RawExpect>,
    #[serde(default)]
    pub baseline: RawBaseline,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawJobs {
    #[serde(default)]
    pub preload: i64,
    #[serde(default = "default_max_attempts")]
    pub max_attempts: i64,
    /// Jobs that behave differently (fail, or crash their worker).
    #[serde(default)]
    pub types: Vec<RawJobType>,
    /// Open-model producers, one per class.
    #[serde(default)]
    pub classes: Vec<RawClass>,
    /// constant | poisson
    #[serde(default = "default_arrivals")]
    pub arrivals: String,
    /// Enqueue each job in the same transaction as a business row (seed 004).
    #[serde(default)]
    pub business_row: bool,
    /// How many unique keys the producers' enqueues share (`:unique_key`): a producer's
    /// k-th arrival has key k mod N. Left out: every job its own key.
    pub unique_keys: Option<i64>,
}

fn default_arrivals() -> String {
    "constant".into()
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawClass {
    pub name: String,
    #[serde(default)]
    pub priority: i64,
    /// Arrivals per second (before the phase's multiplier).
    pub rate: f64,
    #[serde(default)]
    pub payload_bytes: i64,
    /// This class's work model (default: workers.work).
    pub work: Option<toml::Value>,
}

impl Default for RawJobs {
    fn default() -> Self {
        RawJobs {
            preload: 0,
            max_attempts: default_max_attempts(),
            types: Vec::new(),
            classes: Vec::new(),
            arrivals: default_arrivals(),
            business_row: false,
            unique_keys: None,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawJobType {
    pub name: String,
    /// How many of the preloaded jobs are of this type (spread evenly over the ids).
    pub count: i64,
    /// Chance that one execution fails with `fail_code` (the job is retried).
    #[serde(default)]
    pub fail_probability: f64,
    #[serde(default = "default_fail_code")]
    pub fail_code: String,
    /// Always crashes its worker mid-work.
    #[serde(default)]
    pub poison: bool,
}

fn default_fail_code() -> String {
    "TIMEOUT".into()
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRetry {
    #[serde(default = "default_retry_base")]
    pub base: String,
    #[serde(default = "default_retry_cap")]
    pub cap: String,
    #[serde(default = "yes")]
    pub jitter: bool,
}

impl Default for RawRetry {
    fn default() -> Self {
        RawRetry { base: default_retry_base(), cap: default_retry_cap(), jitter: true }
    }
}

fn default_retry_base() -> String {
    "100ms".into()
}
fn default_retry_cap() -> String {
    "10s".into()
}

/// One injected fault. Which fields apply depends on `kind`; `plan` checks them.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFault {
    /// crash | pause | kill_backend | lock_hold | cancel | postgres_restart | failover | partition | latency | loss | ack_lost
    pub kind: String,
    /// crash / pause: after_claim | mid_work | after_effect | before_complete
    pub point: Option<String>,
    /// Fires on each job with this chance (crash, pause).
    pub probability: Option<f64>,
    /// Fires on every Nth job of a worker (crash, pause).
    pub every: Option<i64>,
    /// Fires once at this time after the start (pause of a group, kill_backend, lock_hold).
    pub at: Option<String>,
    /// Fires this many times per second (kill_backend).
    pub rate: Option<f64>,
    /// Fires at most this many times in all.
    pub limit: Option<i64>,
    /// Which workers: "all" (default), a worker name ("w1") or a group name.
    pub workers: Option<String>,
    /// pause / lock_hold: how long.
    pub duration: Option<String>,
    /// crash: delay before the worker comes back.
    pub respawn_after: Option<String>,
    /// crash: "same" (default) or "new" worker identity after the respawn.
    pub identity: Option<String>,
    /// lock_hold: lock this many of the oldest queued rows (default: the whole table).
    /// cancel: cancel this many of the newest queued jobs (default 1).
    pub rows: Option<i64>,
    /// postgres_restart: "immediate" (default, a crash: SIGQUIT) or "fast" (SIGINT, a clean shutdown).
    pub mode: Option<String>,
    /// failover: freeze the standby's WAL receiver (SIGSTOP) this long before the primary dies.
    pub hold: Option<String>,
    /// Process clients: fire again this often (crash, pause, kill_backend).
    pub interval: Option<String>,
    /// Network faults (partition, latency, loss): the agents they hit, by number (default: all).
    pub agents: Option<Vec<i64>>,
    /// latency: added each way.
    pub delay: Option<String>,
    /// latency: ± this much, uniform.
    pub jitter: Option<String>,
    /// loss: the share of packets dropped each way, in percent.
    pub percent: Option<f64>,
    /// ack_lost: "answer" (default: the server ran the completion, its answer is lost) or
    /// "request" (the completion never reached the server).
    pub lose: Option<String>,
    /// ack_lost: "resend" (default: send the completion once more) or "lease" (let the job go).
    pub then: Option<String>,
}

fn default_max_attempts() -> i64 {
    5
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawWorkers {
    #[serde(default = "one")]
    pub count: i64,
    #[serde(default = "default_strategy")]
    pub strategy: String,
    #[serde(default = "one")]
    pub batch: i64,
    #[serde(default)]
    pub mode: Mode,
    /// `"5ms"`, `{ p50 = "8ms", p99 = "70ms" }` or `{ min = "1ms", max = "5ms" }`.
    #[serde(default = "default_work")]
    pub work: toml::Value,
    pub max_claims: Option<i64>,
    /// Sleep after an empty claim: `"5ms"` or a schedule `["100ms", "250ms", "2s"]`.
    #[serde(default = "default_idle_backoff")]
    pub idle_backoff: toml::Value,
    /// Full jitter on each backoff step: a uniform draw in [0, step].
    #[serde(default)]
    pub idle_jitter: bool,
    /// How an idle worker learns of new work: poll | listen.
    #[serde(default = "default_wakeup")]
    pub wakeup: String,
    /// With wakeup = "listen": claim anyway this often without a notification.
    #[serde(default = "default_fallback_poll")]
    pub fallback_poll: String,
    /// Worker groups, like processes on different machines; counts add up to `count`.
    #[serde(default)]
    pub groups: Vec<RawGroup>,
    /// priority-aging: one point of priority per this much time ready (`:aging_step_secs`).
    #[serde(default = "default_aging_step")]
    pub aging_step: String,
    /// priority-aging: the most priority aging adds (`:aging_cap`).
    #[serde(default = "default_aging_cap")]
    pub aging_cap: i64,
    /// deadline-first: jobs ready longer than this go first (`:deadline_secs`).
    #[serde(default = "default_deadline")]
    pub deadline: String,
    /// priority-quota: jobs per claim for each class, `{ high = 5, normal = 3 }`.
    #[serde(default)]
    pub quotas: BTreeMap<String, i64>,
    /// Process clients: handlers per worker process (`QUEUEBENCH_CONCURRENCY`).
    pub concurrency: Option<i64>,
    /// Process clients: a deliberately broken mode (`QUEUEBENCH_CLIENT_BUG`: twice, ack-first).
    pub client_bug: Option<String>,
    /// Process clients: the library's polling interval (`QUEUEBENCH_POLL_MS`), e.g. "500ms".
    pub poll: Option<String>,
    /// The sqlx client: the workers share one `sqlx::PgPool` of this size (`docs/pool.md`).
    pub pool: Option<RawPool>,
}

/// `workers.pool = { size = 4, acquire_timeout = "2s" }`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPool {
    pub size: i64,
    #[serde(default = "default_acquire_timeout")]
    pub acquire_timeout: String,
}

fn default_acquire_timeout() -> String {
    "30s".into()
}

fn default_aging_step() -> String {
    "1s".into()
}
fn default_aging_cap() -> i64 {
    20
}
fn default_deadline() -> String {
    "10s".into()
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawGroup {
    pub name: String,
    pub count: i64,
}

impl Default for RawWorkers {
    fn default() -> Self {
        RawWorkers {
            count: 1,
            strategy: default_strategy(),
            batch: 1,
            mode: Mode::default(),
            work: default_work(),
            max_claims: None,
            idle_backoff: default_idle_backoff(),
            idle_jitter: false,
            wakeup: default_wakeup(),
            fallback_poll: default_fallback_poll(),
            groups: Vec::new(),
            aging_step: default_aging_step(),
            aging_cap: default_aging_cap(),
            deadline: default_deadline(),
            quotas: BTreeMap::new(),
            concurrency: None,
            client_bug: None,
            poll: None,
            pool: None,
        }
    }
}

fn one() -> i64 {
    1
}
fn default_strategy() -> String {
    "skip-locked".into()
}
fn default_work() -> toml::Value {
    toml::Value::String("0ms".into())
}
fn default_idle_backoff() -> toml::Value {
    toml::Value::String("5ms".into())
}
fn default_wakeup() -> String {
    "poll".into()
}
fn default_fallback_poll() -> String {
    "2s".into()
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLease {
    #[serde(default = "default_lease")]
    pub duration: String,
    #[serde(default)]
    pub fencing: Fencing,
    /// Extend the lease this often while working ("off" or a duration shorter than the lease).
    #[serde(default = "off")]
    pub heartbeat: String,
    /// How expired leases come back: off | reaper | inline.
    #[serde(default)]
    pub reclaim: Reclaim,
    #[serde(default = "default_reaper_interval")]
    pub reaper_interval: String,
}

impl Default for RawLease {
    fn default() -> Self {
        RawLease {
            duration: default_lease(),
            fencing: Fencing::default(),
            heartbeat: off(),
            reclaim: Reclaim::default(),
            reaper_interval: default_reaper_interval(),
        }
    }
}

fn off() -> String {
    "off".into()
}
fn default_reaper_interval() -> String {
    "1s".into()
}

fn default_lease() -> String {
    "90s".into()
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRun {
    #[serde(default = "default_stop")]
    pub stop: String,
    #[serde(default = "default_timeout")]
    pub timeout: String,
    #[serde(default = "yes")]
    pub effects_table: bool,
    /// Keep the history (`history.csv.gz`, `final_state.csv.gz`) in the run folder.
    #[serde(default = "yes")]
    pub history: bool,
    /// How often the Postgres time series is sampled.
    #[serde(default = "default_sample_interval")]
    pub sample_interval: String,
    /// The harness's own time series (`timeseries.csv`): whole seconds.
    #[serde(default = "default_series_interval")]
    pub series_interval: String,
    /// Run the claim under EXPLAIN (ANALYZE, BUFFERS) this often ("off" or a duration).
    #[serde(default = "off")]
    pub plan_probe: String,
    /// Load phases for the producers (warm-up, steady, overload, recovery).
    #[serde(default)]
    pub phases: Vec<RawPhase>,
    /// A class whose oldest ready job waits longer than this is starving.
    #[serde(default = "default_starvation_threshold")]
    pub starvation_threshold: String,
    /// Multiplies every duration of the time model (work, lease, heartbeat,
    /// backoff, phases, faults, blockers) and divides rates; reports show the
    /// scenario's own time units. See `scale.rs`.
    #[serde(default = "one_f")]
    pub time_scale: f64,
    /// How long the harness waits for a lost server to come back before it ends the run (exit 3).
    #[serde(default = "default_reconnect_timeout")]
    pub reconnect_timeout: String,
    /// SQLSTATEs the queue's statements may end with, not judged by `unexpected_errors`
    /// (e.g. "40001" under SERIALIZABLE, "55P03" with NOWAIT).
    #[serde(default)]
    pub expected_errors: Vec<String>,
}

fn default_reconnect_timeout() -> String {
    "30s".into()
}

fn default_starvation_threshold() -> String {
    "10s".into()
}

fn default_sample_interval() -> String {
    "1s".into()
}

fn default_series_interval() -> String {
    "1s".into()
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPhase {
    pub name: String,
    pub duration: String,
    /// Multiplies every class's rate.
    #[serde(default = "one_f")]
    pub rate: f64,
    /// Left out of the summary's latencies, kept in the time series.
    #[serde(default)]
    pub warmup: bool,
}

fn one_f() -> f64 {
    1.0
}

impl Default for RawRun {
    fn default() -> Self {
        RawRun {
            stop: default_stop(),
            timeout: default_timeout(),
            effects_table: true,
            history: true,
            sample_interval: default_sample_interval(),
            series_interval: default_series_interval(),
            plan_probe: off(),
            phases: Vec::new(),
            starvation_threshold: default_starvation_threshold(),
            time_scale: 1.0,
            reconnect_timeout: default_reconnect_timeout(),
            expected_errors: Vec::new(),
        }
    }
}

fn default_stop() -> String {
    "drained".into()
}
fn default_timeout() -> String {
    "10m".into()
}
fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPostgres {
    #[serde(default)]
    pub settings: BTreeMap<String, toml::Value>,
    /// Storage parameters of the jobs table (per-table autovacuum settings).
    #[serde(default)]
    pub table_settings: BTreeMap<String, toml::Value>,
    /// The ephemeral cluster serves TLS and the run connects with verify-full (as `--tls`).
    #[serde(default)]
    pub tls: bool,
    /// A streaming standby beside the ephemeral cluster: "async" or "sync"
    /// (`synchronous_standby_names`); a `failover` fault promotes it.
    pub standby: Option<String>,
    /// queuebench starts PgBouncer in front of its ephemeral cluster; workers and producers
    /// connect through it.
    #[serde(default)]
    pub pgbouncer: Option<RawPgBouncer>,
    /// The scenario's SQL runs as the ephemeral cluster's superuser, not as the run role
    /// (docs/safety.md, "Who runs what"): the named way out of least privilege.
    #[serde(default)]
    pub superuser_sql: bool,
    /// The PostgreSQL major of the ephemeral cluster (`16` or `"16"`; as `--pg-version`).
    #[serde(default)]
    pub version: Option<toml::Value>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPgBouncer {
    /// session | transaction | statement
    pub pool_mode: String,
    /// Server connections in the pool (default: one per worker).
    #[serde(default)]
    pub pool_size: Option<i64>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawBlocker {
    /// idle_in_transaction | repeatable_read | long_query
    pub kind: String,
    /// When it starts, after the run starts.
    #[serde(default = "zero")]
    pub at: String,
    pub duration: String,
    /// repeatable_read: how many reader sessions.
    #[serde(default = "one")]
    pub sessions: i64,
    /// repeatable_read: time between scans of the jobs table.
    #[serde(default = "default_scan_every")]
    pub scan_every: String,
}

fn zero() -> String {
    "0ms".into()
}
fn default_scan_every() -> String {
    "200ms".into()
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawVacuum {
    pub name: String,
    pub at: String,
    /// Count dead tuples exactly with pgstattuple first (it reads every page and
    /// prunes what it can, so it changes what the VACUUM then finds).
    #[serde(default)]
    pub pgstattuple: bool,
    /// VACUUM's INDEX_CLEANUP option: auto (the server decides; it may skip the
    /// indexes when few heap pages have dead items), on, off.
    #[serde(default = "auto")]
    pub index_cleanup: String,
}

fn auto() -> String {
    "auto".into()
}
