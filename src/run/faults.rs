//! Faults at run time: per-job decisions inside the workers (crash or pause
//! at a point), pause gates per worker, and the injector tasks for faults
//! that fire at a time or a rate (group pauses, killed backends, lock holds).
//! Every random choice comes from a generator seeded from the scenario seed.

use super::values::{Claimed, Values};
use crate::adapter::keys::Interner;
use crate::collect::FaultEvent;
use crate::collect::FaultKind;
use crate::db::Endpoint;
use crate::db::ephemeral::{Postmaster, Servers};
use crate::model::records::{FailoverRecord, Status};
use crate::scenario::Plan;
use crate::scenario::faults::{AfterLoss, Fault, Kind, Lose, Point, Trigger};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_postgres::Client;
use tokio_util::sync::CancellationToken;

/// Shared by all workers and the injector; only atomics, touched once per job at most.
pub(crate) struct FaultState {
    pub start: Instant,
    faults: Vec<Fault>,
    fired: Vec<AtomicU64>,
    /// Per worker slot: paused until this many µs after the start.
    paused_until: Vec<AtomicU64>,
    /// Per worker slot: the backend pid of its current connection (0 = none).
    pub pids: Vec<AtomicI32>,
    /// Server restarts (`postgres_restart`), as they happened.
    pub restarts: Mutex<Vec<Restart>>,
    /// Failovers (`failover`), as they happened; each is also a restart above.
    pub failovers: Mutex<Vec<FailoverRecord>>,
    /// The queue's job ids by their journal numbers (a cancel binds the queue's own id).
    pub ids: Arc<Interner>,
    /// Whether an `ack_lost` fault is planned (without one a completion looks no further).
    acks_lost: bool,
}

/// One `postgres_restart`: when the server process was gone (after it exited) and when it
/// was started again (None: it never was).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Restart {
    pub down_us: u64,
    pub up_us: Option<u64>,
}

impl FaultState {
    pub(crate) fn new(plan: &Plan, start: Instant, ids: Arc<Interner>) -> FaultState {
        let n = plan.workers.count as usize + 1;
        FaultState {
            start,
            faults: plan.faults.clone(),
            // By the fault's index in the scenario: a part of a run (an agent) keeps only some.
            fired: (0..plan.faults.iter().map(|f| f.index + 1).max().unwrap_or(0)).map(|_| AtomicU64::new(0)).collect(),
            paused_until: (0..n).map(|_| AtomicU64::new(0)).collect(),
            pids: (0..n).map(|_| AtomicI32::new(0)).collect(),
            restarts: Mutex::new(Vec::new()),
            failovers: Mutex::new(Vec::new()),
            ids,
            acks_lost: plan.faults.iter().any(|f| matches!(f.kind, Kind::AckLost { .. })),
        }
    }

    fn now_us(&self) -> u64 {
        self.start.elapsed().as_micros() as u64
    }

    /// Counts a firing unless the fault's limit is reached.
    fn fire(&self, f: &Fault) -> bool {
        let n = self.fired[f.index].fetch_add(1, Ordering::Relaxed);
        let fires = f.limit.is_none_or(|limit| n < limit);
        if fires {
            tracing::info!(
                fault = f.index + 1,
                kind = f.kind.name(),
                firing = n + 1,
                at_s = self.start.elapsed().as_secs_f64(),
                workers = ?f.workers,
                "fault fired"
            );
        }
        fires
    }

    /// The per-job fault (if any) that hits `slot` at `point` on its `nth` job.
    pub(crate) fn at_point(&self, slot: u32, point: Point, nth: u64, rng: &mut StdRng) -> Option<&Kind> {
        self.faults.iter().find_map(|f| {
            let here = match &f.kind {
                Kind::Crash { point: p, .. } => *p == point,
                Kind::Pause { point: Some(p), .. } => *p == point,
                _ => false,
            };
            if !here || !f.workers.contains(&slot) {
                return None;
            }
            let hit = match f.trigger {
                Trigger::Probability(p) => rng.random::<f64>() < p,
                Trigger::Every(n) => nth.is_multiple_of(n),
                _ => false,
            };
            (hit && self.fire(f)).then_some(&f.kind)
        })
    }

    /// The `ack_lost` fault (if any) that cuts `slot`'s completion of its `nth` job: what is lost
    /// and what the worker does next. Free when no such fault is planned.
    pub(crate) fn ack_lost(&self, slot: u32, nth: u64, rng: &mut StdRng) -> Option<(Lose, AfterLoss)> {
        if !self.acks_lost {
            return None;
        }
        self.faults.iter().find_map(|f| {
            let Kind::AckLost { lose, then } = f.kind else { return None };
            if !f.workers.contains(&slot) {
                return None;
            }
            let hit = match f.trigger {
                Trigger::Probability(p) => rng.random::<f64>() < p,
                Trigger::Every(n) => nth.is_multiple_of(n),
                _ => false,
            };
            (hit && self.fire(f)).then_some((lose, then))
        })
    }

    /// Freezes `slot` for `d` from now.
    pub(crate) fn pause(&self, slot: u32, d: Duration) {
        let until = self.now_us() + d.as_micros() as u64;
        self.paused_until[slot as usize].fetch_max(until, Ordering::Relaxed);
    }

    /// Waits while `slot` is paused (a stop-the-world pause: nothing of the worker runs).
    pub(crate) async fn gate(&self, slot: u32, stop: &CancellationToken) {
        loop {
            let until = self.paused_until[slot as usize].load(Ordering::Relaxed);
            if until == 0 {
                return; // never paused: no clock read on the hot path
            }
            let now = self.now_us();
            if until <= now {
                return;
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_micros(until - now)) => {}
                _ = stop.cancelled() => return,
            }
        }
    }
}

/// Runs the faults that fire at a time or a rate until `stop`; returns what fired.
/// `servers` are the ephemeral cluster's (`postgres_restart` and `failover` need them).
pub(crate) async fn inject(
    plan: &Plan,
    state: &FaultState,
    config: &Endpoint,
    servers: Option<&Servers>,
    stop: &CancellationToken,
) -> Vec<FaultEvent> {
    let tasks = state.faults.iter().filter(|f| !f.per_job()).map(|f| one(plan, state, f, config, servers, stop));
    futures_util::future::join_all(tasks).await.into_iter().flatten().collect()
}

async fn one(
    plan: &Plan,
    state: &FaultState,
    f: &Fault,
    config: &Endpoint,
    servers: Option<&Servers>,
    stop: &CancellationToken,
) -> Vec<FaultEvent> {
    let mut rng = StdRng::seed_from_u64(plan.seed ^ (0xFA17 + f.index as u64));
    let mut events = Vec::new();
    let Some(mut side) = super::Side::connect(config, &format!("fault #{}", f.index + 1)).await else { return events };
    let mut next = match f.trigger {
        Trigger::At(t) => t,
        Trigger::Rate(r) => exp_interval(r, &mut rng),
        _ => return events,
    };
    loop {
        let now = state.start.elapsed();
        if next > now {
            tokio::select! {
                _ = tokio::time::sleep(next - now) => {}
                _ = stop.cancelled() => return events,
            }
        }
        if !state.fire(f) {
            return events;
        }
        match &f.kind {
            Kind::PostgresRestart { immediate, down } => {
                let server = servers.map(|s| &*s.primary);
                events.extend(restart(state, server, config, *immediate, *down, stop).await);
                return events;
            }
            Kind::Failover { hold } => {
                if let Some(f) = super::failover::run(state.start, servers, config, *hold, stop).await {
                    let up_us = (f.up_us != u64::MAX).then_some(f.up_us);
                    state.restarts.lock().unwrap().push(Restart { down_us: f.down_us, up_us });
                    state.failovers.lock().unwrap().push(f);
                    events.push(FaultEvent { t_us: f.down_us, kind: FaultKind::Failover, worker: None, job: None });
                }
                return events;
            }
            Kind::Pause { duration, .. } => {
                for &slot in &f.workers {
                    state.pause(slot, *duration);
                }
                events.push(FaultEvent { t_us: state.now_us(), kind: FaultKind::Pause, worker: None, job: None });
            }
            _ => match side.client().await {
                Some((admin, _)) => events.extend(on_database(plan, state, f, admin, &mut rng, stop).await),
                None => {
                    eprintln!("warning: fault #{} ({}) skipped: the server is unreachable", f.index + 1, f.kind.name())
                }
            },
        }
        match f.trigger {
            Trigger::Rate(r) => next += exp_interval(r, &mut rng),
            _ => return events,
        }
    }
}

/// The faults that act through a database session: a killed backend, held locks, cancelled jobs.
async fn on_database(
    plan: &Plan,
    state: &FaultState,
    f: &Fault,
    admin: &tokio_postgres::Client,
    rng: &mut StdRng,
    stop: &CancellationToken,
) -> Vec<FaultEvent> {
    let t_us = state.now_us();
    let mut events = Vec::new();
    match &f.kind {
        Kind::KillBackend => {
            let slot = f.workers[rng.random_range(0..f.workers.len())];
            let pid = state.pids[slot as usize].load(Ordering::Relaxed);
            if pid != 0 && admin.execute("SELECT pg_terminate_backend($1)", &[&pid]).await.is_ok() {
                events.push(FaultEvent { t_us, kind: FaultKind::KillBackend, worker: Some(slot), job: None });
            }
        }
        Kind::LockHold { duration, rows } => {
            if let Some(job) = hold_locks(admin, &plan.adapter.table, *rows, *duration, stop).await {
                events.push(FaultEvent { t_us, kind: FaultKind::LockHold, worker: None, job });
            }
        }
        Kind::Cancel { rows } => {
            for id in cancel_candidates(plan, state, admin, *rows).await {
                let t_us = state.now_us();
                if cancel(plan, &state.ids, admin, id).await {
                    events.push(FaultEvent { t_us, kind: FaultKind::Cancel, worker: None, job: Some(id) });
                }
            }
        }
        Kind::Crash { .. }
        | Kind::Pause { .. }
        | Kind::PostgresRestart { .. }
        | Kind::Failover { .. }
        | Kind::Network { .. }
        | Kind::KillAgent
        | Kind::AckLost { .. } => {}
    }
    events
}

/// The newest `rows` waiting jobs: from queuebench's own table by its columns, from an
/// adapter's queue by its `observe.state` (the highest numbers among the queued).
async fn cancel_candidates(plan: &Plan, state: &FaultState, admin: &Client, rows: i64) -> Vec<i64> {
    if plan.adapter.own_table() {
        let pick = "SELECT id FROM jobs WHERE status = 'queued' ORDER BY run_at DESC LIMIT $1";
        return admin.query(pick, &[&rows]).await.map(|r| r.iter().map(|r| r.get(0)).collect()).unwrap_or_default();
    }
    let Ok(jobs) = super::observe::final_state(admin, plan, &state.ids).await else { return Vec::new() };
    let mut queued: Vec<i64> = jobs.iter().filter(|j| j.status == Status::Queued).map(|j| j.id).collect();
    queued.sort_unstable_by(|a, b| b.cmp(a));
    queued.truncate(rows.max(0) as usize);
    queued
}

/// One cancel through the queue's own statement: did it land?
async fn cancel(plan: &Plan, ids: &Interner, admin: &Client, id: i64) -> bool {
    let step = plan.adapter.cancel.as_ref().expect("validated: a cancel fault needs the adapter's cancel");
    let Ok(prepared) = super::conn::prepare_step(admin, step).await else { return false };
    let key = ids.key(id);
    let job = Claimed::bare(id, key.clone());
    let mut v = Values::new(plan);
    v.job = Some(&job);
    super::steps::write(admin, &prepared, &v, false).await.unwrap_or(false)
}

/// Stops the ephemeral server (`immediate`: as a crash), leaves it down for `down`, starts it
/// again and waits until it accepts connections. One `postgres_restart` event when it was
/// signalled (none if there is no server of ours to restart); the down (signal) and up
/// (first connection accepted) times go to `state.restarts`. If the run stops while the
/// server is down, it stays down (teardown removes it).
async fn restart(
    state: &FaultState,
    server: Option<&Postmaster>,
    config: &Endpoint,
    immediate: bool,
    down: Duration,
    stop: &CancellationToken,
) -> Vec<FaultEvent> {
    let Some(server) = server else {
        eprintln!("warning: postgres_restart needs the ephemeral cluster; skipped");
        return Vec::new();
    };
    let t_us = state.now_us();
    if let Err(e) = server.stop(immediate).await {
        eprintln!("warning: postgres_restart: {e}");
        return Vec::new();
    }
    let events = vec![FaultEvent { t_us, kind: FaultKind::PostgresRestart, worker: None, job: None }];
    let slot = {
        let mut r = state.restarts.lock().unwrap();
        r.push(Restart { down_us: t_us, up_us: None });
        r.len() - 1
    };
    tokio::select! {
        _ = tokio::time::sleep(down) => {}
        _ = stop.cancelled() => return events,
    }
    if let Err(e) = server.start() {
        eprintln!("warning: postgres_restart: could not start the server again: {e}\n{}", server.log_tail());
        return events;
    }
    // Up means accepting connections again (crash recovery done), not just a process.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !stop.is_cancelled() && Instant::now() < deadline {
        if crate::db::connect::open(config, |_| {}).await.is_ok() {
            state.restarts.lock().unwrap()[slot].up_us = Some(state.now_us());
            break;
        }
        if !server.running() {
            eprintln!("warning: postgres_restart: the server exited during recovery:\n{}", server.log_tail());
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    events
}

/// Hold row locks (the `rows` oldest waiting jobs) or a table lock for `duration`, as a
/// competing session would. Returns `None` if nothing was locked (queue empty), else the
/// first job held. Rows are taken with SKIP LOCKED: a plain FOR UPDATE that met a row a worker
/// was claiming would wait, find it running, and walk on behind the workers without holding
/// the row they want next; SKIP LOCKED takes exactly the row every worker reaches next.
async fn hold_locks(
    admin: &tokio_postgres::Client,
    table: &str,
    rows: Option<i64>,
    duration: Duration,
    stop: &CancellationToken,
) -> Option<Option<i64>> {
    let held = match rows {
        Some(n) => {
            let lock = "SELECT id FROM jobs WHERE status = 'queued' AND run_at <= now() \
                        ORDER BY run_at LIMIT $1 FOR UPDATE SKIP LOCKED";
            match admin.batch_execute("BEGIN").await {
                Ok(()) => admin.query(lock, &[&n]).await.ok().and_then(|r| r.first().map(|r| Some(r.get::<_, i64>(0)))),
                Err(_) => None,
            }
        }
        None => {
            let lock = format!("BEGIN; LOCK TABLE {} IN EXCLUSIVE MODE", crate::quote::ident(table));
            admin.batch_execute(&lock).await.ok().map(|()| None)
        }
    };
    if held.is_some() {
        tokio::select! {
            _ = tokio::time::sleep(duration) => {}
            _ = stop.cancelled() => {}
        }
    }
    let _ = admin.batch_execute("ROLLBACK").await;
    held
}

/// Poisson arrivals: exponential gaps with mean 1/rate.
fn exp_interval(rate: f64, rng: &mut StdRng) -> Duration {
    Duration::from_secs_f64(-(1.0 - rng.random::<f64>()).ln() / rate)
}
