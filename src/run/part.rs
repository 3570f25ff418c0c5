//! One part of a run (docs/agents.md): all of it, an agent's workers, or a coordinator's side
//! tasks while agents run the workers. [`run_part`] reads as its steps: connect every worker
//! before the clock starts, meet at the barrier, share the run's state, start the tasks, wait
//! for them (every wait bounded), and gather what they recorded.

use super::worker::{self, Finished, Progress, Shared};
use super::{
    Clients, RunOutput, Waiting, cancel, faults, horizon, identity, idle, live, open_clients, producer, reaper,
    sampler, spawn_workers,
};
use crate::adapter::keys::Interner;
use crate::collect::{Event, FaultEvent, Samples, WorkerStats};
use crate::db::{Database, Endpoint};
use crate::error::{Error, Result};
use crate::model::protocol::Reclaim;
use crate::model::records::{PgSample, ProbeSample};
use crate::scenario::plan::Wakeup;
use crate::scenario::{Plan, Stop};
use faults::FaultState;
use futures_util::future::join_all;
use reaper::ReaperStats;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use tokio::task::{JoinError, JoinHandle};
use tokio_util::sync::CancellationToken;

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

/// What a part of a run is told beside its plan, database and interrupt.
pub struct RunContext {
    /// Progress lines on the terminal.
    pub progress: bool,
    /// The numbering of the queue's own job ids (the preload has filled it when ids are not
    /// integers).
    pub ids: Arc<Interner>,
}

/// `run`, for one part of the run (`Part`).
pub async fn run_part(
    plan: &Plan,
    db: &Database,
    interrupt: &CancellationToken,
    ctx: RunContext,
    mut part: Part,
) -> Result<RunOutput> {
    let shared_plan = Arc::new(plan.clone());
    let connected = connect(&shared_plan, db, &part).await?;
    let stop = interrupt.child_token();
    let start = match part.barrier.take() {
        Some(barrier) => barrier.await?,
        None => Instant::now(),
    };
    let timer = Timer::start(plan, &stop);
    let stopped_at = StopWatch::start(&stop, start);
    let shared = share(shared_plan, db, &connected, start, &stop, ctx.ids, &part);
    let tasks = start_tasks(&shared, db, connected.clients, start, &stop, ctx.progress, part);
    let ended = tasks.end(db, &shared, start).await;
    let mut workers = gather(ended.finished, ended.first_slot)?;
    let stopped_us = stopped_at.stopped_us(&stop, ended.duration);
    let aborted = match ended.watcher {
        Some(w) => {
            w.abort();
            w.await.ok().flatten()
        }
        None => None,
    };
    let mut horizon = given_up(ended.horizon, "a horizon blocker or vacuum step panicked")?;
    timer.task.abort();
    let side = given_up(ended.side, "the reaper, injector, sampler or a producer panicked")?;
    horizon.probes = side.probes;
    if let Some(watch) = ended.identity {
        watch.await.map_err(|e| Error::machine("the server watch panicked", e))?;
    }
    workers.faults.extend(side.injected);
    workers.faults.sort_by_key(|f| f.t_us);
    // The producers' enqueue errors join the workers' tally, where `unexpected_errors` judges them.
    for (code, (n, first)) in &side.produced.failures {
        workers.stats.record_errors(crate::model::errors::Statement::Enqueue, code, first, *n);
    }
    Ok(RunOutput {
        stats: workers.stats,
        latency: workers.latency,
        journal: workers.journal,
        faults: workers.faults,
        effects_unwritten: 0,
        reaper: side.reaper,
        arrivals: side.produced.arrivals,
        unsent: side.produced.unsent,
        producer_errors: side.produced.errors,
        deduplicated: side.produced.deduplicated,
        unique_keys: side.produced.unique_keys,
        samples: side.samples,
        horizon,
        duration: ended.duration,
        stopped_us,
        interrupted: interrupt.is_cancelled(),
        timed_out: timer.fired.load(Ordering::Relaxed),
        failures: workers.failures,
        probe: connected.probe,
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

/// What is open before the clock starts.
struct Connected {
    /// What workers and producers connect with (`Database::pooled_config`).
    pooled: Endpoint,
    /// The channel every connection LISTENs on (wakeup = "listen").
    channel: Option<String>,
    /// The rollback probe of a listen run.
    probe: Option<idle::Probe>,
    clients: Clients,
}

/// Every worker's connection (or the pool), the listen probe, and the producers' preflight.
async fn connect(plan: &Arc<Plan>, db: &Database, part: &Part) -> Result<Connected> {
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
    let clients = open_clients(plan, db, &pooled, channel.as_deref(), &part.slots).await?;
    if part.side && plan.load.is_open() {
        producer::preflight(plan, &pooled).await.map_err(|failure| Error::Strategy {
            strategy: plan.adapter.name.clone(),
            target: db.target.clone(),
            failure: Box::new(failure),
        })?;
    }
    Ok(Connected { pooled, channel, probe, clients })
}

/// When the stop token fired (it fires only when the workers are told to stop), µs after the start.
struct StopWatch {
    at: Arc<AtomicU64>,
    task: JoinHandle<()>,
}

impl StopWatch {
    fn start(stop: &CancellationToken, start: Instant) -> StopWatch {
        let at = Arc::new(AtomicU64::new(u64::MAX));
        let (stop, at_in) = (stop.clone(), at.clone());
        let task = tokio::spawn(async move {
            stop.cancelled().await;
            at_in.store(start.elapsed().as_micros() as u64, Ordering::Relaxed);
        });
        StopWatch { at, task }
    }

    /// When the workers were told to stop; None when they stopped on their own.
    fn stopped_us(self, stop: &CancellationToken, duration: Duration) -> Option<u64> {
        let stopped = stop.is_cancelled().then(|| {
            let at = self.at.load(Ordering::Relaxed);
            if at == u64::MAX { duration.as_micros() as u64 } else { at }
        });
        self.task.abort();
        stopped
    }
}

/// The state every task of the run shares, from the clock's start.
fn share(
    plan: Arc<Plan>,
    db: &Database,
    connected: &Connected,
    start: Instant,
    stop: &CancellationToken,
    ids: Arc<Interner>,
    part: &Part,
) -> Arc<Shared> {
    let producers_done = part.producers_done.clone();
    Arc::new(Shared {
        faults: Arc::new(FaultState::new(&plan, start, ids.clone())),
        producers_done: producers_done.unwrap_or_else(|| Arc::new(AtomicBool::new(!plan.load.is_open()))),
        live: live::Live::for_plan(&plan).filter(|_| part.side).map(Arc::new),
        plan,
        // The side tasks' (sampler, reaper, faults, probes): bounded statements.
        config: db.side_config(),
        harness: db.harness_config(),
        pooled: connected.pooled.clone(),
        next_identity: Arc::new(AtomicU32::new(part.next_identity)),
        stop: stop.clone(),
        progress: Arc::new(Progress::default()),
        channel: connected.channel.clone(),
        lost: Arc::new(OnceLock::new()),
        ids,
    })
}

/// Every task of the run, started.
struct Tasks {
    /// The direct workers' threads: they live until the run is over.
    lanes: Option<super::lanes::Lanes>,
    workers: Vec<JoinHandle<Finished>>,
    first_slot: u32,
    /// The live expectations' watch: the abort-on-fail expectation that stopped the run.
    watcher: Option<JoinHandle<Option<String>>>,
    /// The horizon blockers and vacuum steps.
    actors: JoinHandle<horizon::HorizonOutput>,
    side: JoinHandle<SideOutput>,
    /// Stops the side tasks once the workers are done.
    side_stop: CancellationToken,
    /// URL mode: the server's identity watched for restarts and failovers.
    identity: Option<JoinHandle<()>>,
    /// The agents' workers (a coordinator): the run lasts until they are done too.
    remote: Option<Waiting<()>>,
}

/// What the tasks returned once they ended, or were given up on.
struct Ended {
    /// The direct workers' threads, kept until the run's output is gathered.
    _lanes: Option<super::lanes::Lanes>,
    finished: Vec<std::result::Result<Finished, JoinError>>,
    first_slot: u32,
    duration: Duration,
    watcher: Option<JoinHandle<Option<String>>>,
    horizon: std::result::Result<horizon::HorizonOutput, JoinError>,
    side: std::result::Result<SideOutput, JoinError>,
    identity: Option<JoinHandle<()>>,
}

/// The workers, the live watch, the horizon actors, the side tasks, the server watch and the
/// remote part, from `start`.
fn start_tasks(
    shared: &Arc<Shared>,
    db: &Database,
    clients: Clients,
    start: Instant,
    stop: &CancellationToken,
    progress: bool,
    part: Part,
) -> Tasks {
    let watcher = shared.live.clone().map(|l| {
        let (sh, stop) = (shared.clone(), stop.clone());
        tokio::spawn(async move { live::watch(&l, &sh.plan, &sh.progress.errors, start, &stop).await })
    });
    // Extensions (pgstattuple) are created only in a cluster of our own.
    let actors = {
        let extensions = db.kind.owned().then(|| db.harness_config());
        let (sh, stop) = (shared.clone(), stop.clone());
        let side = part.side;
        tokio::spawn(async move {
            if side {
                horizon::actors(&sh.plan, &sh.config, start, extensions.as_ref(), &stop).await
            } else {
                Default::default()
            }
        })
    };
    let (lanes, workers) = spawn_workers(clients, shared, part.slots.clone());
    // The reaper, the injector, the sampler and the probe stop when the workers are done.
    let side_stop = stop.child_token();
    let how = SideTasks { start, progress, side: part.side };
    let side = spawn_side_tasks(shared, db.servers(), how, &side_stop);
    // URL mode: a restart or failover queuebench did not cause is seen from the server's identity.
    let identity = (db.kind == crate::db::Kind::Url && part.side)
        .then(|| tokio::spawn(identity::watch(shared.config.clone(), start, shared.faults.clone(), side_stop.clone())));
    Tasks {
        lanes,
        workers,
        first_slot: *part.slots.start(),
        watcher,
        actors,
        side,
        side_stop,
        identity,
        remote: part.remote.map(|follow| follow(stop.clone())),
    }
}

impl Tasks {
    /// Waits for the workers (and the remote part), then the horizon actors, then stops the
    /// side tasks and waits for them. Once the run stops (or its workers are done), what is
    /// still waiting on the server is cancelled, then terminated, then given up on (`cancel`):
    /// every wait here is bounded.
    async fn end(self, db: &Database, shared: &Shared, start: Instant) -> Ended {
        let Tasks { lanes, workers, first_slot, watcher, actors, side, side_stop, identity, remote } = self;
        let mut abort: Vec<_> = workers.iter().map(|t| t.abort_handle()).collect();
        abort.extend([actors.abort_handle(), side.abort_handle()]);
        let backends = cancel::Backends::of(db);
        let remote = async {
            if let Some(remote) = remote {
                remote.await;
            }
        };
        let ending = async {
            let (finished, ()) = tokio::join!(join_all(workers), remote);
            let duration = start.elapsed();
            // Blockers and vacuum steps finish their schedule even when the workers are done early.
            let horizon = actors.await;
            side_stop.cancel();
            (finished, duration, horizon, side.await)
        };
        let give_up = || abort.iter().for_each(tokio::task::AbortHandle::abort);
        let stopped = side_stop.cancelled();
        let pids = &shared.faults.pids[..];
        let (finished, duration, horizon, side) =
            cancel::bounded(ending, stopped, &backends, pids, "the run", give_up).await;
        Ended { _lanes: lanes, finished, first_slot, duration, watcher, horizon, side, identity }
    }
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

/// What the tasks beside the workers returned.
#[derive(Default)]
struct SideOutput {
    reaper: ReaperStats,
    injected: Vec<FaultEvent>,
    samples: Vec<PgSample>,
    produced: producer::ProducerOutput,
    probes: Vec<ProbeSample>,
}

/// How the tasks beside the workers run: from `start`, with progress lines on the terminal or
/// not, and all of them (`side`) or, for an agent, only the injector (for the faults on this
/// part's workers).
struct SideTasks {
    start: Instant,
    progress: bool,
    side: bool,
}

/// The tasks beside the workers: reaper, fault injector, sampler, producers, claim-plan probe.
fn spawn_side_tasks(
    shared: &Arc<Shared>,
    servers: Option<crate::db::ephemeral::Servers>,
    how: SideTasks,
    side_stop: &CancellationToken,
) -> tokio::task::JoinHandle<SideOutput> {
    let (sh, side_stop) = (shared.clone(), side_stop.clone());
    let SideTasks { start, progress, side } = how;
    tokio::spawn(async move {
        let config = &sh.config;
        let inject = faults::inject(&sh.plan, &sh.faults, &sh.harness, servers.as_ref(), &side_stop);
        if !side {
            return SideOutput { injected: inject.await, ..SideOutput::default() };
        }
        let reap = async {
            match sh.plan.lease.reclaim {
                Reclaim::Reaper => reaper::run(&sh.plan, config, start, &sh.ids, &side_stop).await,
                _ => ReaperStats::default(),
            }
        };
        let opts = sampler::SamplerOptions { progress };
        let sample = sampler::run(&sh.plan, config, start, &sh.progress, opts, &side_stop);
        let produce = async {
            let out = producer::run(&sh.plan, &sh.pooled, start, &sh.stop, &sh.ids).await;
            sh.producers_done.store(true, Ordering::Relaxed);
            out
        };
        let probe = horizon::probe(&sh.plan, config, start, &side_stop);
        let (reaper, injected, samples, produced, probes) = tokio::join!(reap, inject, sample, produce, probe);
        SideOutput { reaper, injected, samples, produced, probes }
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
