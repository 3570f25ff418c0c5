//! The sqlx client (`workers.pool`): the workers share one `sqlx::PgPool` of `size`
//! connections, as a Rust service runs its queue. Every step (claim, heartbeat, complete,
//! fail, the effects insert, the drained check) first takes a connection from the pool — the
//! wait is the `acquire` latency, its own histogram — runs the adapter's statement for the
//! step, bound from the same values as the direct worker's, and gives the connection back.
//!
//! An acquire that times out (`acquire_timeout`) is counted as an error `acquire_timeout`
//! and the step is retried: a claim simply claims again; a completion or failure is sent
//! again once a connection comes (the job's lease then decides whether it still lands); a
//! heartbeat counts as a failed one (two in a row and the job is let go, as on the direct
//! path). The journal gets the same events as the direct worker's, so every checker works.
//!
//! What it runs is checked by `scenario::pool::fits`: the built-in table, lease mode, one
//! statement per step. The bridge binds bigint, double, text, bigint[] and the job's keys
//! (bigint, uuid or text); `:now`, the adapter constants and the producer's parameters are
//! not bound here.

use super::idle::{self, Backoff};
use super::values::Claimed;
use super::worker::{Shared, WorkerFailure};
use crate::adapter::keys::Key;
use crate::adapter::{Param, Statement};
use crate::collect::spill::Spill;
use crate::collect::{Event, EventKind, FaultEvent, Latency, WorkerStats};
use crate::scenario::Stop;
use crate::scenario::plan::PoolSettings;
use rand::SeedableRng;
use rand::rngs::StdRng;
use sqlx::postgres::{PgArguments, PgConnectOptions, PgPoolOptions, PgRow};
use sqlx::{Arguments, AssertSqlSafe, ConnectOptions, PgPool};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// The error code an acquire timeout is counted under (`errors.acquire_timeout`).
pub const ACQUIRE_TIMEOUT: &str = "acquire_timeout";

/// How long opening the pool's connections may take.
const OPEN_TIMEOUT: Duration = Duration::from_secs(30);

/// A connection from the pool within `limit`; past it, `PoolTimedOut` as sqlx says it.
pub(crate) async fn acquire_within(
    pool: &PgPool,
    limit: Duration,
) -> Result<sqlx::pool::PoolConnection<sqlx::Postgres>, sqlx::Error> {
    match tokio::time::timeout(limit, pool.acquire()).await {
        Ok(got) => got,
        Err(_) => Err(sqlx::Error::PoolTimedOut),
    }
}

/// Opens the pool and all its connections before the clock starts.
pub async fn open(config: &crate::db::Endpoint, settings: PoolSettings) -> Result<PgPool, sqlx::Error> {
    let pool = PgPoolOptions::new()
        .max_connections(settings.size)
        .min_connections(settings.size)
        // The pool's own limit covers opening it (a 1 ms acquire_timeout could never open a
        // connection); a worker's wait is bounded by `acquire_timeout` in `Pooled::acquire`.
        .acquire_timeout(OPEN_TIMEOUT.max(settings.acquire_timeout))
        .test_before_acquire(false)
        .connect_with(connect_options(config))
        .await?;
    let warm: Vec<_> = futures_util::future::join_all((0..settings.size).map(|_| pool.acquire())).await;
    for c in warm {
        c?;
    }
    Ok(pool)
}

/// The same server, user, database and options (the run's search_path) as the direct workers.
fn connect_options(config: &crate::db::Endpoint) -> PgConnectOptions {
    let mut o = PgConnectOptions::new_without_pgpass();
    match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(h)) => o = o.host(h),
        Some(tokio_postgres::config::Host::Unix(p)) => o = o.socket(p),
        None => {}
    }
    if let Some(port) = config.get_ports().first() {
        o = o.port(*port);
    }
    if let Some(u) = config.get_user() {
        o = o.username(u);
    }
    if let Some(p) = config.get_password() {
        o = o.password(&String::from_utf8_lossy(p));
    }
    if let Some(d) = config.get_dbname() {
        o = o.database(d);
    }
    if let Some(a) = config.get_application_name() {
        o = o.application_name(a);
    }
    let text = config.get_options().unwrap_or("");
    let pairs: Vec<(String, String)> = text
        .split_whitespace()
        .filter(|t| *t != "-c")
        .filter_map(|t| t.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
        .collect();
    tls_options(o.options(pairs), config).disable_statement_logging()
}

/// The run's TLS in sqlx's terms (sqlx has the same six modes; libpq's `require` with a root
/// file is verify-ca). A Unix socket stays plain, as the direct connections do.
fn tls_options(o: PgConnectOptions, config: &crate::db::Endpoint) -> PgConnectOptions {
    use crate::db::tls::SslMode;
    use sqlx::postgres::PgSslMode;
    let tls = &config.tls;
    let unix = matches!(config.get_hosts().first(), Some(tokio_postgres::config::Host::Unix(_)));
    let mode = match tls.effective_mode() {
        _ if unix => PgSslMode::Disable,
        SslMode::Disable => PgSslMode::Disable,
        SslMode::Allow => PgSslMode::Allow,
        SslMode::Prefer => PgSslMode::Prefer,
        SslMode::Require => PgSslMode::Require,
        SslMode::VerifyCa => PgSslMode::VerifyCa,
        SslMode::VerifyFull => PgSslMode::VerifyFull,
    };
    let mut o = o.ssl_mode(mode);
    if let Some(root) = tls.root_path() {
        o = o.ssl_root_cert(root);
    }
    if let Some((cert, key)) = &tls.client {
        o = o.ssl_client_cert(cert).ssl_client_key(key);
    }
    o
}

/// Why a step did not land.
enum Cut {
    /// The run stopped.
    Stopped,
    /// The acquire timed out or the statement failed (already counted).
    Failed { timed_out: bool },
}

/// One simulated worker on the shared pool.
pub struct PoolWorker {
    slot: u32,
    name: String,
    group: String,
    sh: Arc<Shared>,
    pool: PgPool,
    rng: StdRng,
    backoff: Backoff,
    seq: u32,
    pub stats: WorkerStats,
    pub journal: Spill<Event>,
    effects: (Vec<i64>, Vec<i32>),
}

impl PoolWorker {
    pub fn new(slot: u32, pool: PgPool, sh: Arc<Shared>) -> PoolWorker {
        let seed = sh.plan.seed.wrapping_add(u64::from(slot)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let group =
            sh.plan.workers.groups.iter().find(|(_, ids)| ids.contains(&slot)).map_or("", |(n, _)| n).to_string();
        PoolWorker {
            slot,
            name: format!("w{slot}"),
            group,
            backoff: Backoff::new(&sh.plan.workers.idle),
            sh,
            pool,
            rng: StdRng::seed_from_u64(seed),
            seq: 0,
            stats: WorkerStats::default(),
            journal: Spill::new(),
            effects: (Vec::new(), Vec::new()),
        }
    }

    /// Runs until the stop condition or the cancel token; what it recorded goes back to the runner.
    pub async fn run(mut self) -> (WorkerStats, Spill<Event>, Vec<FaultEvent>, Option<WorkerFailure>) {
        let plan = self.sh.plan.clone();
        loop {
            if self.sh.stop.is_cancelled() || plan.workers.max_claims.is_some_and(|m| self.stats.claims >= m) {
                break;
            }
            match self.round().await {
                Ok(true) => {
                    self.backoff.reset();
                    if plan.run.effects_table && self.effects.0.len() >= 64 {
                        self.flush_effects(false).await;
                    }
                }
                Ok(false) => {
                    let drained = plan.run.stop == Stop::Drained && self.sh.producers_done.load(Ordering::Relaxed);
                    if drained && !self.anything_left().await {
                        break;
                    }
                    let idle = &plan.workers.idle;
                    idle::wait(idle, &mut self.backoff, &mut self.rng, None, &self.sh.stop).await;
                }
                Err(Cut::Stopped) => break,
                Err(Cut::Failed { timed_out }) => {
                    if !timed_out {
                        // A statement error (server going away …): do not spin on it.
                        self.pause(Duration::from_millis(20)).await;
                    }
                }
            }
        }
        if plan.run.effects_table {
            self.flush_effects(true).await;
        }
        (self.stats, self.journal, Vec::new(), None)
    }

    fn clock(&self) -> (Instant, u64) {
        let now = Instant::now();
        (now, now.saturating_duration_since(self.sh.faults.start).as_micros() as u64)
    }

    fn log(&mut self, t_us: u64, dur_us: u64, job: &Claimed, kind: EventKind, witness: Option<(i32, u32, u32)>) {
        let dur_us = dur_us.min(u64::from(u32::MAX)) as u32;
        let e = Event {
            t_us,
            job: job.id,
            attempt: job.attempt,
            worker: self.slot,
            claim: job.seq,
            kind,
            dur_us,
            token: job.tag,
        };
        if let Some(live) = &self.sh.live {
            live.observe(&e, witness);
        }
        self.journal.push(e);
    }

    /// Counts a failed acquire or statement under its code.
    fn note(&mut self, e: &sqlx::Error) -> Cut {
        let code = match e {
            sqlx::Error::PoolTimedOut => ACQUIRE_TIMEOUT.to_string(),
            sqlx::Error::Database(d) => d.code().map_or_else(|| "db".to_string(), |c| c.to_string()),
            _ => "io".to_string(),
        };
        tracing::debug!(worker = %self.name, error = %e, "pooled step failed");
        self.stats.record_error(&code);
        self.sh.progress.errors.fetch_add(1, Ordering::Relaxed);
        Cut::Failed { timed_out: matches!(e, sqlx::Error::PoolTimedOut) }
    }

    async fn pause(&self, d: Duration) {
        tokio::select! {
            _ = tokio::time::sleep(d) => {}
            _ = self.sh.stop.cancelled() => {}
        }
    }

    /// `workers.pool.acquire_timeout`.
    fn acquire_limit(&self) -> Duration {
        self.sh.plan.workers.pool.map_or(OPEN_TIMEOUT, |p| p.acquire_timeout)
    }

    /// A connection from the pool; the wait is recorded as `acquire` (timeouts included).
    async fn acquire(&mut self) -> Result<sqlx::pool::PoolConnection<sqlx::Postgres>, Cut> {
        let (t, t_us) = self.clock();
        let got = tokio::select! {
            got = acquire_within(&self.pool, self.acquire_limit()) => got,
            _ = self.sh.stop.cancelled() => return Err(Cut::Stopped),
        };
        self.stats.record(Latency::Acquire, t_us, t.elapsed().as_micros() as u64);
        got.map_err(|e| self.note(&e))
    }

    /// Runs `st` on a pooled connection: its rows, the statement's time (µs) and when it was sent.
    async fn fetch(&mut self, st: &Statement, args: PgArguments) -> Result<(Vec<PgRow>, u64, u64), Cut> {
        let mut conn = self.acquire().await?;
        let (t, t_us) = self.clock();
        let rows = sqlx::query_with(AssertSqlSafe(st.sql.as_str()), args).fetch_all(&mut *conn).await;
        let took = t.elapsed().as_micros() as u64;
        drop(conn);
        rows.map(|r| (r, took, t_us)).map_err(|e| self.note(&e))
    }

    /// Runs a write on a pooled connection: did it change a row, its time (µs), when it was sent.
    async fn execute(&mut self, st: &Statement, args: PgArguments) -> Result<(bool, u64, u64), Cut> {
        let mut conn = self.acquire().await?;
        let (t, t_us) = self.clock();
        let done = sqlx::query_with(AssertSqlSafe(st.sql.as_str()), args).execute(&mut *conn).await;
        let took = t.elapsed().as_micros() as u64;
        drop(conn);
        done.map(|r| (r.rows_affected() > 0, took, t_us)).map_err(|e| self.note(&e))
    }

    /// The parameters of `st`, bound from the plan, this worker and the job in hand.
    fn args(&self, st: &Statement, job: Option<&Claimed>, ids: &[i64], backoff: f64, error: &str) -> PgArguments {
        let mut a = PgArguments::default();
        let plan = &self.sh.plan;
        for p in &st.params {
            let bound = match *p {
                Param::Batch => a.add(i64::from(plan.workers.batch)),
                Param::LeaseSecs => a.add(plan.lease.duration.as_secs_f64()),
                Param::Worker => a.add(self.name.clone()),
                Param::Pool => a.add(self.group.clone()),
                Param::Ids => a.add(ids.to_vec()),
                Param::Id => add_key(&mut a, job.map(|j| &j.key)),
                Param::Attempt => add_key(&mut a, job.map(|j| &j.attempt_key)),
                Param::Token => add_key(&mut a, job.and_then(|j| j.token.as_ref())),
                Param::BackoffSecs => a.add(backoff),
                Param::Error => a.add(error.to_string()),
                Param::RetryBaseSecs => a.add(plan.retry.base.as_secs_f64()),
                Param::RetryCapSecs => a.add(plan.retry.cap.as_secs_f64()),
                Param::AgingStepSecs => a.add(plan.workers.ordering.aging_step.as_secs_f64()),
                Param::AgingCap => a.add(plan.workers.ordering.aging_cap),
                Param::DeadlineSecs => a.add(plan.workers.ordering.deadline.as_secs_f64()),
                Param::MaxAttempts => a.add(plan.jobs.max_attempts),
                // Refused up front by `scenario::pool::fits` (see the module's doc).
                _ => a.add(Option::<String>::None),
            };
            bound.expect("a number, text, array or key always encodes");
        }
        a
    }
}

/// A job's key in the type the queue keeps it in (a missing one as a NULL uuid, as the token).
fn add_key(a: &mut PgArguments, key: Option<&Key>) -> Result<(), sqlx::error::BoxDynError> {
    match key {
        Some(Key::Int(i)) => a.add(*i),
        Some(Key::Uuid(u)) => a.add(*u),
        Some(Key::Text(t)) => a.add(t.clone()),
        None => a.add(Option::<uuid::Uuid>::None),
    }
}

mod steps;
