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

use crate::adapter::keys::Interner;
use crate::collect::{Arrival, Event, FaultEvent, Samples, WorkerStats};
use crate::db::Database;
use crate::error::{Error, Result, SessionFailure, Sql};
use crate::model::protocol::Reclaim;
use crate::model::records::{PgSample, ProbeSample};
use crate::scenario::plan::Wakeup;
use crate::scenario::{Plan, Stop};
use conn::Conn;
use faults::FaultState;
use futures_util::future::join_all;
use reaper::ReaperStats;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use worker::{Progress, Shared, Worker};

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

/// Which share of a run this process runs (docs/agents.md): all of it (a local run), an
/// agent's workers, or a coordinator's side tasks while agents run the workers.
pub struct Part {
    /// The worker slots run here (empty for a coordinator).
    pub slots: std::ops::RangeInclusive<u32>,
    /// The reaper, sampler, producers, horizon actors, live expectations and the faults that
    /// act on the server (lock holds, cancels, restarts) run here.
    pub side: bool,
    /// The first identity a respawned worker takes.
    pub next_identity: u32,
    /// Awaited once every connection is open: it returns the instant the clock starts (a
    /// barrier shared with other processes). None: now.
    pub barrier: Option<Waiting<Result<Instant>>>,
    /// Set from outside when the producers (elsewhere) are done; None: from the plan.
    pub producers_done: Option<Arc<AtomicBool>>,
    /// Called with the run's stop token once the clock starts and awaited beside the workers:
    /// the run lasts until it is done too (the agents' workers).
    pub remote: Option<Box<dyn FnOnce(CancellationToken) -> Waiting<()> + Send>>,
}

impl Part {
    /// Every worker and every side task, starting now: a local run.
    pub fn whole(plan: &Plan) -> Part {
        Part {
            slots: 1..=plan.workers.count,
            side: true,
            next_identity: plan.workers.count + 1,
            barrier: None,
            producers_done: None,
            remote: None,
        }
    }
}

/// Runs the plan's workers against `db`. `interrupt` is cancelled by Ctrl-C/SIGTERM.
/// `ids` numbers the queue's own job ids (the preload has filled it when ids are not integers).
pub async fn run(
    plan: &Plan,
    db: &Database,
    interrupt: &CancellationToken,
    show_progress: bool,
    ids: Arc<Interner>,
) -> Result<RunOutput> {
    run_part(plan, db, interrupt, (show_progress, ids), Part::whole(plan)).await
}

/// `run`, for one part of the run (`Part`).
pub async fn run_part(
    plan: &Plan,
    db: &Database,
    interrupt: &CancellationToken,
    (show_progress, ids): (bool, Arc<Interner>),
    part: Part,
) -> Result<RunOutput> {
    // The side tasks' (sampler, reaper, faults, probes): bounded statements.
    let config = db.side_config();
    let pooled = db.pooled_config();
    let channel = (plan.workers.idle.wakeup == Wakeup::Listen).then(|| db.schema.clone());
    let probe = match &channel {
        Some(ch) => Some(
            idle::probe_rollback(&pooled, &format!("{ch}_probe"), Duration::from_millis(200))
                .await
                .map_err(|failure| Error::Probe { target: db.target.clone(), failure: Box::new(failure) })?,
        ),
        None => None,
    };
    let shared_plan = Arc::new(plan.clone());
    let clients = open_clients(&shared_plan, db, &pooled, channel.as_deref(), &part.slots).await?;
    if part.side && plan.load.is_open() {
        producer::preflight(plan, &pooled).await.map_err(|failure| Error::Strategy {
            strategy: plan.adapter.name.clone(),
            target: db.target.clone(),
            failure: Box::new(failure),
        })?;
    }
    let stop = interrupt.child_token();
    let start = match part.barrier {
        Some(barrier) => barrier.await?,
        None => Instant::now(),
    };
    let timer = Timer::start(plan, &stop);
    // When the stop token fires (it fires only when the workers are told to stop).
    let stopped_at = Arc::new(AtomicU64::new(u64::MAX));
    let stop_watch = {
        let (stop, at) = (stop.clone(), stopped_at.clone());
        tokio::spawn(async move {
            stop.cancelled().await;
            at.store(start.elapsed().as_micros() as u64, Ordering::Relaxed);
        })
    };
    let shared = Arc::new(Shared {
        plan: shared_plan,
        config: config.clone(),
        harness: db.harness_config(),
        pooled,
        faults: Arc::new(FaultState::new(plan, start, ids.clone())),
        next_identity: Arc::new(AtomicU32::new(part.next_identity)),
        stop: stop.clone(),
        producers_done: part.producers_done.unwrap_or_else(|| Arc::new(AtomicBool::new(!plan.load.is_open()))),
        progress: Arc::new(Progress::default()),
        live: live::Live::for_plan(plan).filter(|_| part.side).map(Arc::new),
        channel,
        lost: Arc::new(OnceLock::new()),
        ids,
    });
    let watcher = shared.live.clone().map(|l| {
        let (sh, stop) = (shared.clone(), stop.clone());
        tokio::spawn(async move { live::watch(&l, &sh.plan, &sh.progress.errors, start, &stop).await })
    });
    // Extensions (pgstattuple) are created only in a cluster of our own.
    let actors = {
        let extensions = db.kind.owned().then(|| db.harness_config());
        let (sh, stop, config) = (shared.clone(), stop.clone(), config.clone());
        let side = part.side;
        tokio::spawn(async move {
            if side {
                horizon::actors(&sh.plan, &config, start, extensions.as_ref(), &stop).await
            } else {
                Default::default()
            }
        })
    };
    // The lanes (the direct workers' threads) live until the run is over.
    let (_lanes, tasks) = spawn_workers(clients, &shared, part.slots.clone());
    let first_slot = *part.slots.start();
    // The reaper, the injector, the sampler and the probe stop when the workers are done.
    let side_stop = stop.child_token();
    let side = spawn_side_tasks(&shared, db.servers(), (start, show_progress, part.side), &side_stop);
    // URL mode: a restart or failover queuebench did not cause is seen from the server's identity.
    let watch = (db.kind == crate::db::Kind::Url && part.side)
        .then(|| tokio::spawn(identity::watch(config.clone(), start, shared.faults.clone(), side_stop.clone())));
    let remote = part.remote.map(|follow| follow(stop.clone()));
    let remote = async {
        if let Some(remote) = remote {
            remote.await;
        }
    };
    // Once the run stops (or its workers are done), what is still waiting on the server is
    // cancelled, then terminated, then given up on (`cancel`): every wait below is bounded.
    let mut abort: Vec<_> = tasks.iter().map(|t| t.abort_handle()).collect();
    abort.extend([actors.abort_handle(), side.abort_handle()]);
    let backends = cancel::Backends::of(db);
    let ending = async {
        let (finished, ()) = tokio::join!(join_all(tasks), remote);
        let duration = start.elapsed();
        // Blockers and vacuum steps finish their schedule even when the workers are done early.
        let horizon = actors.await;
        side_stop.cancel();
        (finished, duration, horizon, side.await)
    };
    let give_up = || abort.iter().for_each(tokio::task::AbortHandle::abort);
    let (finished, duration, horizon, side) =
        cancel::bounded(ending, side_stop.cancelled(), (&backends, &shared.faults.pids, "the run"), give_up).await;
    let mut workers = gather(finished, first_slot)?;
    let stopped_us = stop.is_cancelled().then(|| {
        let at = stopped_at.load(Ordering::Relaxed);
        if at == u64::MAX { duration.as_micros() as u64 } else { at }
    });
    stop_watch.abort();
    let aborted = match watcher {
        Some(w) => {
            w.abort();
            w.await.ok().flatten()
        }
        None => None,
    };
    let mut horizon = given_up(horizon, "a horizon blocker or vacuum step panicked")?;
    timer.task.abort();
    let (reaper, injected, samples, produced, probes) =
        given_up(side, "the reaper, injector, sampler or a producer panicked")?;
    horizon.probes = probes;
    if let Some(watch) = watch {
        watch.await.map_err(|e| Error::machine("the server watch panicked", e))?;
    }
    workers.faults.extend(injected);
    workers.faults.sort_by_key(|f| f.t_us);
    // The producers' enqueue errors join the workers' tally, where `unexpected_errors` judges them.
    for (code, (n, first)) in &produced.failures {
        workers.stats.record_errors(crate::model::errors::Statement::Enqueue, code, first, *n);
    }
    Ok(RunOutput {
        stats: workers.stats,
        latency: workers.latency,
        journal: workers.journal,
        faults: workers.faults,
        effects_unwritten: 0,
        reaper,
        arrivals: produced.arrivals,
        unsent: produced.unsent,
        producer_errors: produced.errors,
        deduplicated: produced.deduplicated,
        unique_keys: produced.unique_keys,
        samples,
        horizon,
        duration,
        stopped_us,
        interrupted: interrupt.is_cancelled(),
        timed_out: timer.fired.load(Ordering::Relaxed),
        failures: workers.failures,
        probe,
        aborted,
        database_lost: shared.lost.get().cloned(),
        ids: shared.ids.clone(),
        restarts: shared.faults.restarts.lock().unwrap().clone(),
        failovers: shared.faults.failovers.lock().unwrap().clone(),
        agents: Vec::new(),
        merge_s: 0.0,
        merge_peak_rss_mib: 0.0,
        network: Vec::new(),
    })
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

/// Stops the run at `run.stop` when it is a duration, else at `run.timeout` (then `fired`
/// says the run timed out).
struct Timer {
    task: tokio::task::JoinHandle<()>,
    fired: Arc<AtomicBool>,
}

impl Timer {
    fn start(plan: &Plan, stop: &CancellationToken) -> Timer {
        let fired = Arc::new(AtomicBool::new(false));
        let (after, is_timeout) = match plan.run.stop {
            Stop::After(d) => (d.min(plan.run.timeout), d > plan.run.timeout),
            _ => (plan.run.timeout, true),
        };
        let (stop, flag) = (stop.clone(), fired.clone());
        let task = tokio::spawn(async move {
            tokio::time::sleep(after).await;
            flag.store(is_timeout, Ordering::Relaxed);
            stop.cancel();
        });
        Timer { task, fired }
    }
}

type SideOutput = (ReaperStats, Vec<FaultEvent>, Vec<PgSample>, producer::ProducerOutput, Vec<ProbeSample>);

/// The tasks beside the workers: reaper, fault injector, sampler, producers, claim-plan probe.
/// `side` false (an agent): only the injector runs, for the faults on this part's workers.
fn spawn_side_tasks(
    shared: &Arc<Shared>,
    servers: Option<crate::db::ephemeral::Servers>,
    (start, show_progress, side): (Instant, bool, bool),
    side_stop: &CancellationToken,
) -> tokio::task::JoinHandle<SideOutput> {
    let (sh, side_stop) = (shared.clone(), side_stop.clone());
    tokio::spawn(async move {
        let config = &sh.config;
        let inject = faults::inject(&sh.plan, &sh.faults, &sh.harness, servers.as_ref(), &side_stop);
        if !side {
            return (ReaperStats::default(), inject.await, Vec::new(), Default::default(), Vec::new());
        }
        let reap = async {
            match sh.plan.lease.reclaim {
                Reclaim::Reaper => reaper::run(&sh.plan, config, (start, &sh.ids), &side_stop).await,
                _ => ReaperStats::default(),
            }
        };
        let opts = sampler::SamplerOptions { progress: show_progress };
        let sample = sampler::run(&sh.plan, config, start, &sh.progress, opts, &side_stop);
        let produce = async {
            let out = producer::run(&sh.plan, &sh.pooled, start, &sh.stop, &sh.ids).await;
            sh.producers_done.store(true, Ordering::Relaxed);
            out
        };
        let probe = horizon::probe(&sh.plan, config, start, &side_stop);
        tokio::join!(reap, inject, sample, produce, probe)
    })
}

/// What the workers recorded, merged.
struct Gathered {
    stats: WorkerStats,
    latency: Samples,
    journal: Vec<Event>,
    faults: Vec<FaultEvent>,
    failures: Vec<worker::WorkerFailure>,
}

/// A side task's output; its default when it was given up on (`cancel::bounded`).
fn given_up<T: Default>(joined: std::result::Result<T, tokio::task::JoinError>, panicked: &str) -> Result<T> {
    match joined {
        Err(e) if e.is_cancelled() => Ok(T::default()),
        joined => joined.map_err(|e| Error::machine(panicked, e)),
    }
}

/// `first`: the slot of the first task (a task given up on is named by its slot).
fn gather(finished: Vec<std::result::Result<Finished, tokio::task::JoinError>>, first: u32) -> Result<Gathered> {
    let mut g = Gathered {
        stats: WorkerStats::default(),
        latency: Samples::default(),
        journal: Vec::new(),
        faults: Vec::new(),
        failures: Vec::new(),
    };
    for (i, task) in finished.into_iter().enumerate() {
        let (mut stats, journal, faults, failure) = match task {
            Err(e) if e.is_cancelled() => {
                let worker = format!("w{}", first + i as u32);
                g.failures.push(worker::WorkerFailure::GivenUp { worker });
                continue;
            }
            task => task.map_err(|e| Error::machine("a worker task panicked", e))?,
        };
        g.stats += &stats;
        stats.take_samples(&mut g.latency);
        g.journal.extend(journal.into_vec());
        g.faults.extend(faults);
        g.failures.extend(failure);
    }
    // In the checkers' order, so they need no second copy of a long run's journal.
    g.journal.sort_unstable_by_key(Event::order);
    Ok(g)
}
