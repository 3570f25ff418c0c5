//! The validated, typed scenario: `Plan`, grouped like the scenario file's
//! sections (`[jobs]`, `[workers]`, `[lease]`, `[run]`, `[postgres]` …). Every
//! later stage reads only this; `validate` builds it from the raw file, once.

use super::faults::{Fault, JobType};
use super::horizon::{Blocker, VacuumStep};
use super::load::Source;
use super::units::format_duration;
use crate::adapter::Adapter;
use crate::model::expect::Expectation;
use crate::model::protocol::{Fencing, Mode, Reclaim};
use crate::model::tolerance::Tolerances;
use std::collections::HashMap;
use std::time::Duration;

/// The validated, typed scenario. Later stages read only this.
#[derive(Debug, Clone)]
pub struct Plan {
    pub name: String,
    pub description: String,
    pub seed: u64,
    pub source: Source,
    /// `run.time_scale`: every duration below is already multiplied by it
    /// (`scale.rs`); reports divide measured times by it again.
    pub time_scale: f64,
    pub jobs: JobSettings,
    pub workers: WorkerSettings,
    /// The queue: a built-in strategy over queuebench's table, or an adapter.
    pub adapter: Adapter,
    /// `setup_command`: creates the adapter's schema instead of its `setup` SQL (absolute paths).
    pub setup_command: Option<Vec<String>>,
    /// `client`: real worker processes instead of SQL workers (`client.rs`).
    pub client: Option<super::client::ClientPlan>,
    pub lease: LeaseSettings,
    pub retry: Retry,
    pub faults: Vec<Fault>,
    /// `[[jobs.classes]]` and `[[run.phases]]`: the open-model producers.
    pub load: LoadModel,
    pub blockers: Vec<Blocker>,
    pub vacuum: Vec<VacuumStep>,
    pub run: RunSettings,
    pub postgres: PostgresSettings,
    pub expectations: Vec<Expectation>,
    /// `[baseline.tolerance]` on top of the defaults.
    pub tolerances: Tolerances,
}

/// `[jobs]`: the preloaded jobs and their types.
#[derive(Debug, Clone)]
pub struct JobSettings {
    pub preload: u64,
    pub max_attempts: i32,
    /// `[[jobs.types]]`.
    pub types: Vec<JobType>,
    /// Job id → index into `types`.
    pub type_of: HashMap<i64, u16>,
    /// `jobs.unique_keys`: a producer's k-th arrival binds `:unique_key` = k mod N; None: every
    /// job its own key (its sequence number `:n`).
    pub unique_keys: Option<u32>,
}

/// `[workers]`: how many, how they claim, how long they work, how they wait.
#[derive(Debug, Clone)]
pub struct WorkerSettings {
    pub count: u32,
    pub batch: u32,
    pub mode: Mode,
    pub work: WorkModel,
    pub max_claims: Option<u64>,
    pub idle: Idle,
    /// The values of the priority claims' parameters.
    pub ordering: ClaimOrder,
    /// `[[workers.groups]]`: (name, worker slots).
    pub groups: Vec<(String, Vec<u32>)>,
    /// `workers.pool`: the workers share an sqlx pool (None: a connection per worker).
    pub pool: Option<PoolSettings>,
}

impl WorkerSettings {
    /// The `[[workers.groups]]` entry worker slot `slot` belongs to (w1 = slot 1): its `:pool`.
    pub fn group_of(&self, slot: u32) -> Option<&str> {
        self.groups.iter().find(|(_, ids)| ids.contains(&slot)).map(|(name, _)| name.as_str())
    }
}

/// The pool's size and how long a step waits for one of its connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolSettings {
    pub size: u32,
    pub acquire_timeout: Duration,
}

/// `[lease]`: the lease protocol.
#[derive(Debug, Clone, Copy)]
pub struct LeaseSettings {
    pub duration: Duration,
    pub fencing: Fencing,
    pub heartbeat: Option<Duration>,
    pub reclaim: Reclaim,
    pub reaper_interval: Duration,
}

/// `[run]`: when the run stops and what it measures besides the workers.
#[derive(Debug, Clone)]
pub struct RunSettings {
    pub stop: Stop,
    pub timeout: Duration,
    /// How long the workers wait for a lost server to come back before the run ends (exit 3).
    pub reconnect_timeout: Duration,
    pub effects_table: bool,
    /// Write `history.csv.gz` and `final_state.csv.gz` (docs/history.md).
    pub history: bool,
    /// None: `run.sample_interval = "off"` (no Postgres time series; the progress line still runs).
    pub sample_interval: Option<Duration>,
    /// The harness's own time series (`timeseries.csv`), whole seconds.
    pub series_interval: Duration,
    pub plan_probe: Option<Duration>,
    /// A class whose oldest ready job waits longer than this is starving.
    pub starvation_threshold: Duration,
    /// `run.expected_errors`: SQLSTATEs `unexpected_errors` leaves alone.
    pub expected_errors: Vec<String>,
}

/// `[postgres]`: server settings and the jobs table's storage parameters.
#[derive(Debug, Clone, Default)]
pub struct PostgresSettings {
    /// `[postgres.settings]`: passed to an ephemeral cluster, reported in URL mode.
    pub settings: Vec<(String, String)>,
    /// `[postgres.table_settings]`: ALTER TABLE jobs SET (...).
    pub table_settings: Vec<(String, String)>,
    /// `[postgres] tls`: the ephemeral cluster serves TLS (as `--tls`; a URL's sslmode decides
    /// for a server of one's own).
    pub tls: bool,
    /// `[postgres] standby`: the ephemeral cluster has a streaming standby, replicating this way.
    pub standby: Option<crate::model::records::Replication>,
    /// `[postgres.pgbouncer]`: PgBouncer in front of the ephemeral cluster.
    pub pgbouncer: Option<crate::model::pooler::PgBouncer>,
    /// `[postgres] superuser_sql`: in an ephemeral cluster the scenario's SQL runs as the
    /// superuser instead of the run role (docs/safety.md, "Who runs what").
    pub superuser_sql: bool,
    /// `[postgres] version` (or `--pg-version`): the ephemeral cluster's PostgreSQL major.
    pub version: Option<u32>,
}

/// Backoff before a failed or reclaimed job runs again: min(cap, base × 2^(attempt-1)),
/// then, with jitter, a uniform draw in [0, that] ("full jitter").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Retry {
    pub base: Duration,
    pub cap: Duration,
    pub jitter: bool,
}

/// What `priority-aging` and `deadline-first` (or a custom claim using the
/// same parameters) order by, besides priority and age.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClaimOrder {
    /// `:aging_step_secs`: one point of priority per step ready.
    pub aging_step: Duration,
    /// `:aging_cap`: the most priority aging adds.
    pub aging_cap: i64,
    /// `:deadline_secs`: jobs ready longer than this go first.
    pub deadline: Duration,
}

impl Plan {
    pub fn job_type(&self, id: i64) -> Option<&JobType> {
        self.jobs.type_of.get(&id).map(|&i| &self.jobs.types[i as usize])
    }

    /// Does a `failover` fault kill the primary and promote the standby mid-run?
    pub fn fails_over(&self) -> bool {
        self.faults.iter().any(|f| matches!(f.kind, super::faults::Kind::Failover { .. }))
    }

    /// Does a `kill_backend` fault terminate workers' server processes?
    pub fn kills_backends(&self) -> bool {
        self.faults.iter().any(|f| matches!(f.kind, super::faults::Kind::KillBackend))
    }

    /// Does a `postgres_restart` fault stop the server mid-run?
    pub fn restarts_server(&self) -> bool {
        self.faults.iter().any(|f| matches!(f.kind, super::faults::Kind::PostgresRestart { .. }))
    }

    /// Why a restart cannot test durability (a commit may be acknowledged before it is on disk), if so.
    pub fn durability_untestable(&self) -> Option<String> {
        durability_off(self.postgres.settings.iter().map(|(k, v)| (k, v)))
    }

    /// The same, also from the settings the server reported (`server`: a `--database-url`
    /// server's own fsync and synchronous_commit, which the scenario does not set).
    pub fn durability_untestable_on(&self, server: &std::collections::BTreeMap<String, String>) -> Option<String> {
        self.durability_untestable().or_else(|| durability_off(server.iter()))
    }
}

/// `fsync` or `synchronous_commit` off among `settings`, as `name = value`.
fn durability_off<'a>(mut settings: impl Iterator<Item = (&'a String, &'a String)>) -> Option<String> {
    settings
        .find(|(k, v)| {
            matches!(k.as_str(), "fsync" | "synchronous_commit")
                && matches!(v.to_ascii_lowercase().as_str(), "off" | "false" | "0" | "no")
        })
        .map(|(k, v)| format!("{k} = {v}"))
}

/// How a worker waits after a claim that returned nothing (`run::idle` follows it).
#[derive(Debug, Clone, PartialEq)]
pub struct Idle {
    /// Sleep after the 1st, 2nd, … empty claim in a row; the last step repeats; work resets it.
    pub backoff: Vec<Duration>,
    /// Full jitter: each sleep is a uniform draw in [0, step].
    pub jitter: bool,
    pub wakeup: Wakeup,
    /// With `Wakeup::Listen`: the longest wait without a notification.
    pub fallback_poll: Duration,
}

/// How an idle worker learns of new work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wakeup {
    /// Sleep the backoff schedule, then claim again.
    Poll,
    /// LISTEN on the run's channel; claim on a notification or after `fallback_poll`.
    Listen,
}

impl Wakeup {
    pub fn name(self) -> &'static str {
        match self {
            Wakeup::Poll => "poll",
            Wakeup::Listen => "listen",
        }
    }
}

impl Idle {
    pub fn describe(&self) -> String {
        let steps: Vec<String> = self.backoff.iter().map(|d| format_duration(*d)).collect();
        let jitter = if self.jitter { " with full jitter" } else { "" };
        match self.wakeup {
            Wakeup::Poll => format!("poll, backoff {}{jitter}", steps.join(" → ")),
            Wakeup::Listen => format!("listen, fallback poll {}", format_duration(self.fallback_poll)),
        }
    }
}

/// When the workers stop.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stop {
    /// When no job is queued or running any more.
    Drained,
    /// When every worker has made `max_claims` claim attempts (like `pgbench -t`).
    Claims,
    /// After a fixed time (like `pgbench -T`).
    After(Duration),
}

/// How long one execution of a job takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum WorkModel {
    Fixed(Duration),
    Uniform {
        min: Duration,
        max: Duration,
    },
    /// Lognormal with the given median and 99th percentile.
    LogNormal {
        p50: Duration,
        p99: Duration,
    },
    /// Hits three measured percentiles exactly: log-normal pieces joined at
    /// p50, p95 and p99 (the tails continue the outer pieces' slopes).
    Quantiles {
        p50: Duration,
        p95: Duration,
        p99: Duration,
    },
}

impl WorkModel {
    pub fn describe(&self) -> String {
        match self {
            WorkModel::Fixed(d) => format_duration(*d),
            WorkModel::Uniform { min, max } => format!("uniform {}..{}", format_duration(*min), format_duration(*max)),
            WorkModel::LogNormal { p50, p99 } => {
                format!("lognormal p50 {} p99 {}", format_duration(*p50), format_duration(*p99))
            }
            WorkModel::Quantiles { p50, p95, p99 } => {
                format!("p50 {} p95 {} p99 {}", format_duration(*p50), format_duration(*p95), format_duration(*p99))
            }
        }
    }
}

impl Stop {
    pub fn describe(&self) -> String {
        match self {
            Stop::Drained => "drained".into(),
            Stop::Claims => "claims".into(),
            Stop::After(d) => format_duration(*d),
        }
    }
}

/// The class of preloaded jobs (and their `queue` column).
pub(crate) const DEFAULT_CLASS: &str = "default";

#[derive(Debug, Clone, PartialEq)]
pub struct Class {
    pub name: String,
    pub priority: i32,
    /// Arrivals per second before the phase multiplier.
    pub rate: f64,
    pub payload_bytes: usize,
    pub work: Option<WorkModel>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    pub name: String,
    pub start: Duration,
    pub duration: Duration,
    pub rate: f64,
    pub warmup: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrivals {
    Constant,
    Poisson,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LoadModel {
    pub classes: Vec<Class>,
    pub phases: Vec<Phase>,
    pub arrivals: Arrivals,
    pub business_row: bool,
}

impl LoadModel {
    /// How long the producers run.
    pub fn duration(&self) -> Duration {
        self.phases.last().map_or(Duration::ZERO, |p| p.start + p.duration)
    }

    pub fn is_open(&self) -> bool {
        !self.classes.is_empty()
    }

    /// The phase at `t` after the start (None after the last one).
    pub fn phase_at(&self, t: Duration) -> Option<&Phase> {
        self.phases.iter().find(|p| t < p.start + p.duration)
    }

    /// The phase's name at `t`: "run" without phases, "drain" after the last one.
    pub fn phase_name(&self, t: Duration) -> &str {
        match self.phase_at(t) {
            Some(p) => &p.name,
            None if self.phases.is_empty() => "run",
            None => "drain",
        }
    }

    /// Every class name, "default" (preloaded) first, in declaration order.
    pub fn class_names(&self) -> impl Iterator<Item = &str> {
        std::iter::once(DEFAULT_CLASS).chain(self.classes.iter().map(|c| c.name.as_str()))
    }

    /// End of the warm-up phases at the start (latencies before it stay out of the summary).
    pub fn warmup_end(&self) -> Duration {
        self.phases.iter().take_while(|p| p.warmup).map(|p| p.duration).sum()
    }
}
