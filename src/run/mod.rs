//! The runner: connects and prepares every worker before the clock starts,
//! runs them as tasks beside the reaper and the fault injector, stops them
//! on the scenario's stop condition, the run timeout or Ctrl-C, and merges
//! what they recorded.

pub(crate) mod budget;
pub(crate) mod cancel;
pub(crate) mod conn;
pub(crate) mod failover;
pub(crate) mod faults;
pub(crate) mod horizon;
pub(crate) mod identity;
mod idle;
pub mod lanes;
pub(crate) mod literal;
pub(crate) mod live;
pub(crate) mod observe;
mod part;
pub(crate) mod pool;
pub(crate) mod preload;
pub(crate) mod process;
pub(crate) mod producer;
pub(crate) mod reaper;
pub(crate) mod sampler;
pub(crate) mod steps;
pub(crate) mod values;
pub(crate) mod work;
pub(crate) mod worker;

pub use part::{Part, RunContext, run_part};

use crate::adapter::keys::Interner;
use crate::collect::{Arrival, Event, FaultEvent, Samples, WorkerStats};
use crate::db::Database;
use crate::error::{Error, Result, SessionFailure, Sql};
use crate::model::records::PgSample;
use crate::scenario::Plan;
use conn::Conn;
use futures_util::future::join_all;
use reaper::ReaperStats;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use worker::{Shared, Worker};

/// The connection of a side task (reaper, sampler, injector, producer). It
/// connects once at the start (on failure a warning naming `who`, and the run
/// goes on without the task). If the server goes away mid-run, `client()`
/// reconnects on the next call, so the task carries on after a restart; it
/// warns once when the connection is lost and once when it is back.
pub struct Side {
    config: crate::db::Endpoint,
    who: String,
    client: Option<tokio_postgres::Client>,
    /// Bumped on every new connection, so a task knows to prepare its statements again.
    generation: u64,
    lost_since: Option<Instant>,
    next_try: Option<Instant>,
}

impl Side {
    pub async fn connect(config: &crate::db::Endpoint, who: &str) -> Option<Side> {
        let mut side = Side {
            config: config.clone(),
            who: who.into(),
            client: None,
            generation: 0,
            lost_since: None,
            next_try: None,
        };
        match side.open().await {
            Ok(()) => {
                tracing::debug!(who, server = %crate::db::password::display_url(config), "connected");
                Some(side)
            }
            Err(e) => {
                tracing::warn!(who, error = %e, "could not connect");
                eprintln!("warning: {who} could not connect: {e}");
                None
            }
        }
    }

    async fn open(&mut self) -> std::result::Result<(), Sql> {
        let (client, _task) = crate::db::connect::open(&self.config, |_| {}).await.map_err(|e| crate::db::sql(&e))?;
        self.client = Some(client);
        self.generation += 1;
        Ok(())
    }

    /// The connection and its generation, re-opened first if it was lost (at most one try
    /// per 100 ms); None while the server is unreachable.
    pub async fn client(&mut self) -> Option<(&tokio_postgres::Client, u64)> {
        if self.client.as_ref().is_some_and(|c| c.is_closed()) {
            self.client = None;
            self.lost_since = Some(Instant::now());
            tracing::warn!(who = %self.who, "connection lost; reconnecting");
            eprintln!("warning: {} lost its connection; reconnecting", self.who);
        }
        if self.client.is_none() && self.next_try.is_none_or(|t| Instant::now() >= t) {
            self.next_try = Some(Instant::now() + Duration::from_millis(100));
            if self.open().await.is_ok() {
                let after = self.lost_since.take().map_or(0.0, |t| t.elapsed().as_secs_f64());
                tracing::info!(who = %self.who, after_s = after, "reconnected");
                eprintln!("warning: {} reconnected after {after:.1} s", self.who);
            }
        }
        self.client.as_ref().map(|c| (c, self.generation))
    }
}

/// Did this error cut the connection: the server went away, is shutting down or
/// restarting (57P01-57P03), or the socket failed? Then reconnecting is the fix.
pub fn connection_lost(e: &tokio_postgres::Error, client: &tokio_postgres::Client) -> bool {
    client.is_closed()
        || e.is_closed()
        || e.code().is_some_and(|c| matches!(c.code(), "57P01" | "57P02" | "57P03") || c.code().starts_with("08"))
}

/// Everything the run produced, merged.
pub struct RunOutput {
    pub stats: WorkerStats,
    /// Every worker's latency samples (the time series and interval logs).
    pub latency: Samples,
    pub journal: Vec<Event>,
    pub faults: Vec<FaultEvent>,
    /// Executions known to be missing from the effects table (`verify::Evidence::effects_unwritten`).
    pub effects_unwritten: u64,
    pub reaper: ReaperStats,
    pub arrivals: Vec<Arrival>,
    pub unsent: u64,
    pub producer_errors: u64,
    /// Enqueues a deduplicating adapter answered with no row (`jobs.deduplicated`).
    pub deduplicated: u64,
    /// (job, its `[result] unique_key`), for a deduplicating adapter's produced jobs.
    pub unique_keys: Vec<(i64, String)>,
    pub samples: Vec<PgSample>,
    pub horizon: horizon::HorizonOutput,
    pub duration: Duration,
    /// When the workers were told to stop (a `run.stop` duration, the timeout, Ctrl-C, an
    /// abort), µs after the start; None when they stopped on their own.
    pub stopped_us: Option<u64>,
    pub interrupted: bool,
    pub timed_out: bool,
    pub failures: Vec<worker::WorkerFailure>,
    /// The rollback probe of a listen run (None when polling).
    pub probe: Option<idle::Probe>,
    /// The abort-on-fail expectation that stopped the run, with its live value.
    pub aborted: Option<String>,
    /// Why the run gave up on the database (a worker could not reconnect within
    /// `run.reconnect_timeout`); the report is then partial.
    pub database_lost: Option<String>,
    /// The numbering of the queue's job ids (the final state maps its ids through it).
    pub ids: Arc<Interner>,
    /// Server restarts by the `postgres_restart` fault.
    pub restarts: Vec<faults::Restart>,
    /// Failovers by the `failover` fault (each is also in `restarts`).
    pub failovers: Vec<crate::model::records::FailoverRecord>,
    /// A run across agents: one line per agent (empty for a local run).
    pub agents: Vec<crate::model::summary::AgentFigures>,
    /// Seconds spent merging the agents' evidence, and the peak resident memory (MiB) after it.
    pub merge_s: f64,
    pub merge_peak_rss_mib: f64,
    /// The network faults on agents' paths, each from on to off (empty for a local run).
    pub network: Vec<crate::model::records::NetworkSpan>,
}

/// A future the runner awaits: boxed, so a part of a run can carry one.
pub type Waiting<T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>>;

/// Runs the plan's workers against `db`. `interrupt` is cancelled by Ctrl-C/SIGTERM.
/// `ids` numbers the queue's own job ids (the preload has filled it when ids are not integers).
pub async fn run(
    plan: &Plan,
    db: &Database,
    interrupt: &CancellationToken,
    show_progress: bool,
    ids: Arc<Interner>,
) -> Result<RunOutput> {
    run_part(plan, db, interrupt, RunContext { progress: show_progress, ids }, Part::whole(plan)).await
}

/// How the workers reach the database: a connection each (the direct client, on the worker
/// threads) or one shared sqlx pool (`workers.pool`).
enum Clients {
    Direct(lanes::Lanes, Vec<Conn>),
    Pool(sqlx::PgPool),
}

async fn open_clients(
    plan: &Arc<Plan>,
    db: &Database,
    config: &crate::db::Endpoint,
    channel: Option<&str>,
    slots: &std::ops::RangeInclusive<u32>,
) -> Result<Clients> {
    let count = slots.clone().count() as u32;
    let Some(settings) = plan.workers.pool else {
        let (lanes, conns) = open_workers(plan, db, config, channel, count).await?;
        return Ok(Clients::Direct(lanes, conns));
    };
    let pool = pool::open(config, settings).await.map_err(|e| Error::Strategy {
        strategy: plan.adapter.name.clone(),
        target: db.target.clone(),
        failure: Box::new(SessionFailure::Panicked(format!("opening the sqlx pool: {e}"))),
    })?;
    Ok(Clients::Pool(pool))
}

use worker::Finished;

/// Every worker as a task: on its lane (direct), or on the runtime the pool lives on.
fn spawn_workers(
    clients: Clients,
    shared: &Arc<Shared>,
    slots: std::ops::RangeInclusive<u32>,
) -> (Option<lanes::Lanes>, Vec<tokio::task::JoinHandle<Finished>>) {
    let first = *slots.start();
    match clients {
        Clients::Direct(lanes, conns) => {
            let tasks = conns
                .into_iter()
                .enumerate()
                .map(|(i, c)| {
                    let slot = first + i as u32;
                    shared.faults.pids[slot as usize].store(c.pid, std::sync::atomic::Ordering::Relaxed);
                    lanes.spawn(i, Worker::new(slot, worker::direct::Direct::new(c), shared.clone()).run())
                })
                .collect();
            (Some(lanes), tasks)
        }
        Clients::Pool(p) => {
            let tasks = slots
                .map(|slot| {
                    tokio::spawn(
                        Worker::new(slot, pool::Pooled::new(p.clone(), !shared.pooled.unnamed()), shared.clone()).run(),
                    )
                })
                .collect();
            (None, tasks)
        }
    }
}

/// The worker threads, and every worker's connection opened (and its statements prepared) on
/// the thread the worker will run on, before the clock starts.
async fn open_workers(
    plan: &Arc<Plan>,
    db: &Database,
    config: &crate::db::Endpoint,
    channel: Option<&str>,
    count: u32,
) -> Result<(lanes::Lanes, Vec<Conn>)> {
    let lanes = lanes::Lanes::for_workers(count).map_err(|e| Error::machine("starting the worker threads", e))?;
    let conns = join_all((0..count as usize).map(|i| {
        let (config, plan, channel) = (config.clone(), plan.clone(), channel.map(String::from));
        lanes.spawn(i, async move { Conn::open(&config, &plan.adapter, channel.as_deref()).await })
    }))
    .await;
    let conns = conns
        .into_iter()
        .map(|c| c.unwrap_or_else(|e| Err(SessionFailure::Panicked(e.to_string()))))
        .collect::<std::result::Result<Vec<_>, SessionFailure>>()
        .map_err(|failure| Error::Strategy {
            strategy: plan.adapter.name.clone(),
            target: db.target.clone(),
            failure: Box::new(failure),
        })?;
    Ok((lanes, conns))
}
