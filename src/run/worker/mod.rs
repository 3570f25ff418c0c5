//! One simulated worker: its own connection, its own journal and counters.
//! claim → work (with heartbeats) → record the side effect → complete or
//! fail, in lease mode (claim commits at once, completion is a second
//! transaction) or hold-transaction mode (all in one transaction). Faults
//! interrupt it at named points; a crash drops the connection and respawns.
//!
//! Every job the worker lets go of without finishing is journaled as
//! `Abandoned`, so the checkers can tell who believed it owned what, when.

use super::conn::Conn;
use super::faults::FaultState;
use super::idle::{self, Backoff, Woken};
use super::steps;
use super::values::{Claimed, Values};
use crate::adapter::keys::{Interner, Key};
use crate::collect::spill::Spill;
use crate::collect::{Event, EventKind, FaultEvent, Latency, WorkerStats};
use crate::db::Endpoint;
use crate::error::SessionFailure;
use crate::model::protocol::Mode;
use crate::scenario::{Plan, Stop};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

mod job;

/// Effects are written in batches of this many executions.
const EFFECT_BATCH: usize = 64;

/// Why a round stopped short.
enum Halt {
    Db(tokio_postgres::Error),
    Crash { respawn_after: Duration, new_identity: bool },
    Stopped,
}

impl From<tokio_postgres::Error> for Halt {
    fn from(e: tokio_postgres::Error) -> Self {
        Halt::Db(e)
    }
}

/// Counters the live progress line reads; bumped once per claim and per completion.
#[derive(Debug, Default)]
pub struct Progress {
    pub claims: AtomicU64,
    pub completed: AtomicU64,
    pub errors: AtomicU64,
}

/// What the runner hands every worker.
pub struct Shared {
    pub plan: Arc<Plan>,
    pub config: Endpoint,
    pub faults: Arc<FaultState>,
    pub next_identity: Arc<AtomicU32>,
    pub stop: CancellationToken,
    /// Set once the producers have sent their last arrival (true without producers).
    pub producers_done: Arc<AtomicBool>,
    pub progress: Arc<Progress>,
    /// Live counters for abort-on-fail expectations (None without any).
    pub live: Option<Arc<super::live::Live>>,
    /// Numbers for the queue's own ids (uuid or text ids get one the first time they are seen).
    pub ids: Arc<Interner>,
    /// The channel every connection LISTENs on (wakeup = "listen").
    pub channel: Option<String>,
    /// Set (once) when a worker could not reconnect within `run.reconnect_timeout`: the
    /// database is lost, the run stops and its report is partial.
    pub lost: Arc<OnceLock<String>>,
}

pub struct Worker {
    /// The worker's place (w1 = slot 1): fault targets and pause gates follow it across respawns.
    slot: u32,
    /// The identity in the journal; a respawn with `identity = "new"` takes a fresh one.
    pub id: u32,
    name: String,
    sh: Arc<Shared>,
    conn: Option<Conn>,
    rng: StdRng,
    backoff: Backoff,
    seq: u32,
    nth_job: u64,
    pub stats: WorkerStats,
    /// Spilled to disk as it grows (see `collect::spill`).
    pub journal: Spill<Event>,
    pub faults: Vec<FaultEvent>,
    effects_pending: Effects,
}

/// Why a worker stopped early (reported, not fatal to the run).
#[derive(Debug, Clone, thiserror::Error)]
pub enum WorkerFailure {
    /// The run stopped while the worker was reconnecting.
    #[error("worker {worker}: stopped while reconnecting")]
    StoppedReconnecting { worker: String },
    /// No connection within `run.reconnect_timeout`: the database is lost and the run stops.
    #[error("worker {worker} could not reconnect for {seconds:.1} s (run.reconnect_timeout): {last}")]
    Unreachable { worker: String, seconds: f64, last: SessionFailure },
}

impl Worker {
    pub fn new(slot: u32, conn: Conn, sh: Arc<Shared>) -> Worker {
        sh.faults.pids[slot as usize].store(conn.pid, Ordering::Relaxed);
        let plan_idle = sh.plan.workers.idle.clone();
        let seed = sh.plan.seed.wrapping_add(u64::from(slot)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        Worker {
            slot,
            id: slot,
            name: format!("w{slot}"),
            sh,
            conn: Some(conn),
            rng: StdRng::seed_from_u64(seed),
            backoff: Backoff::new(&plan_idle),
            seq: 0,
            nth_job: 0,
            stats: WorkerStats::default(),
            journal: Spill::new(),
            faults: Vec::new(),
            effects_pending: Effects::default(),
        }
    }

    fn now_us(&self) -> u64 {
        self.sh.faults.start.elapsed().as_micros() as u64
    }

    /// One clock read as both an Instant and µs since the start (the hot path reads the clock
    /// once per moment instead of twice).
    fn clock(&self) -> (Instant, u64) {
        let now = Instant::now();
        (now, now.saturating_duration_since(self.sh.faults.start).as_micros() as u64)
    }

    fn log_at(&mut self, t_us: u64, job: &Claimed, kind: EventKind) {
        self.log_witnessed(t_us, 0, job, kind, None);
    }

    /// `dur_us`: how long it took (see `Event`). `witness`: for a completion, the job's newest
    /// claim when it was sent (live staleness).
    fn log_witnessed(
        &mut self,
        t_us: u64,
        dur_us: u64,
        job: &Claimed,
        kind: EventKind,
        witness: Option<(i32, u32, u32)>,
    ) {
        let dur_us = dur_us.min(u64::from(u32::MAX)) as u32;
        let (attempt, worker, claim, token) = (job.attempt, self.id, job.seq, job.tag);
        let e = Event { t_us, job: job.id, attempt, worker, claim, kind, dur_us, token };
        if let Some(live) = &self.sh.live {
            live.observe(&e, witness);
        }
        self.journal.push(e);
    }

    fn log(&mut self, job: &Claimed, kind: EventKind) {
        self.log_at(self.now_us(), job, kind);
    }

    fn conn(&self) -> &Conn {
        self.conn.as_ref().expect("a worker between rounds is connected")
    }

    fn hold(&self) -> bool {
        self.sh.plan.workers.mode == Mode::HoldTransaction
    }

    /// Runs until the stop condition, the cancel token or a connection that cannot be restored.
    pub async fn run(mut self) -> (Self, Option<WorkerFailure>) {
        let failure = self.run_loop().await.err();
        if self.sh.plan.run.effects_table && self.conn.as_ref().is_some_and(|c| !c.client.is_closed()) {
            let _ = self.flush_effects().await;
        }
        (self, failure)
    }

    async fn run_loop(&mut self) -> Result<(), WorkerFailure> {
        let plan = self.sh.plan.clone();
        loop {
            if self.sh.stop.is_cancelled() || plan.workers.max_claims.is_some_and(|m| self.stats.claims >= m) {
                return Ok(());
            }
            self.sh.faults.gate(self.slot, &self.sh.stop).await;
            let result = match self.round().await {
                Ok(true) if plan.run.effects_table && self.effects_pending.ids.len() >= EFFECT_BATCH => {
                    self.backoff.reset();
                    self.flush_effects().await.map_err(Halt::Db)
                }
                Ok(true) => {
                    self.backoff.reset();
                    Ok(())
                }
                Ok(false) => {
                    if plan.run.stop == Stop::Drained
                        && self.sh.producers_done.load(Ordering::Relaxed)
                        && !self.anything_left().await?
                    {
                        return Ok(());
                    }
                    self.idle().await;
                    Ok(())
                }
                Err(h) => Err(h),
            };
            match result {
                Ok(()) => {}
                Err(Halt::Stopped) => return Ok(()),
                Err(Halt::Crash { respawn_after, new_identity }) => self.respawn(respawn_after, new_identity).await?,
                Err(Halt::Db(e)) => self.recover(&e).await?,
            }
        }
    }

    /// After a statement error: count it; reconnect if the connection is gone, else roll back.
    async fn recover(&mut self, e: &tokio_postgres::Error) -> Result<(), WorkerFailure> {
        self.stats.record_error(&error_code(e));
        self.sh.progress.errors.fetch_add(1, Ordering::Relaxed);
        if super::connection_lost(e, &self.conn().client) {
            tracing::warn!(worker = %self.name, error = %crate::db::error_text(e), "connection lost; reconnecting");
            return self.reconnect().await;
        }
        if self.hold() {
            let _ = steps::batch(&self.conn().client, "ROLLBACK").await;
        }
        Ok(())
    }

    /// Opens a new connection, retrying with a growing pause (20 ms to 500 ms) for up to
    /// `run.reconnect_timeout`. Past that the database is lost: the run stops (exit 3).
    async fn reconnect(&mut self) -> Result<(), WorkerFailure> {
        if let Some(old) = self.conn.take() {
            old.abort();
        }
        self.sh.faults.pids[self.slot as usize].store(0, Ordering::Relaxed);
        let (lost_at, began) = (self.now_us(), Instant::now());
        let timeout = self.sh.plan.run.reconnect_timeout;
        let mut pause = Duration::from_millis(20);
        loop {
            if self.sh.stop.is_cancelled() {
                return Err(WorkerFailure::StoppedReconnecting { worker: self.name.clone() });
            }
            self.stats.reconnect_attempts += 1;
            let last = match Conn::open(&self.sh.config, &self.sh.plan.adapter, self.sh.channel.as_deref()).await {
                Ok(c) => {
                    let after_ms = began.elapsed().as_millis() as u64;
                    tracing::info!(worker = %self.name, pid = c.pid, after_ms, "reconnected");
                    self.sh.faults.pids[self.slot as usize].store(c.pid, Ordering::Relaxed);
                    self.conn = Some(c);
                    self.stats.reconnects += 1;
                    self.stats.outages.push((lost_at, self.now_us()));
                    return Ok(());
                }
                Err(e) => e,
            };
            let left = timeout.saturating_sub(began.elapsed());
            if left.is_zero() {
                let why = WorkerFailure::Unreachable {
                    worker: self.name.clone(),
                    seconds: began.elapsed().as_secs_f64(),
                    last,
                };
                self.stats.outages.push((lost_at, self.now_us()));
                tracing::error!(worker = %self.name, "{why}");
                if self.sh.lost.set(why.to_string()).is_ok() {
                    self.sh.stop.cancel();
                }
                return Err(why);
            }
            tokio::select! {
                _ = tokio::time::sleep(pause.min(left)) => {}
                _ = self.sh.stop.cancelled() => {}
            }
            pause = (pause * 2).min(Duration::from_millis(500));
        }
    }

    /// A crash: the connection goes without a word; the worker comes back after a delay.
    async fn respawn(&mut self, after: Duration, new_identity: bool) -> Result<(), WorkerFailure> {
        if let Some(c) = self.conn.take() {
            c.abort();
        }
        self.sh.faults.pids[self.slot as usize].store(0, Ordering::Relaxed);
        tokio::select! {
            _ = tokio::time::sleep(after) => {}
            _ = self.sh.stop.cancelled() => return Ok(()),
        }
        if new_identity {
            self.id = self.sh.next_identity.fetch_add(1, Ordering::Relaxed);
            self.name = format!("w{}", self.id);
        }
        self.reconnect().await
    }

    /// After an empty claim: the backoff step, or a notification / the fallback poll (see `idle`).
    async fn idle(&mut self) {
        let rx = self.conn.as_mut().map(|c| &mut c.notifications);
        if let Woken::Notified(n) =
            idle::wait(&self.sh.plan.workers.idle, &mut self.backoff, &mut self.rng, rx, &self.sh.stop).await
        {
            self.stats.notifications += n;
        }
    }

    async fn anything_left(&mut self) -> Result<bool, WorkerFailure> {
        let now = self.now_us();
        self.stats.drained_checks += 1;
        self.stats.second(now).drained_checks += 1;
        let v = Values::new(&self.sh.plan);
        let params = &self.sh.plan.adapter.observe.remaining.params;
        match steps::first_row(&self.conn().client, &self.conn().remaining, v.bind(params)).await {
            Ok(row) => Ok(steps::truthy(row.as_ref())),
            Err(e) => {
                self.recover(&e).await?;
                Ok(true)
            }
        }
    }

    /// One claim and the jobs it returned. Ok(false) when the claim was empty.
    async fn round(&mut self) -> Result<bool, Halt> {
        let (tx_start, tx_start_us) = self.clock();
        let (t0, t0_us) = if self.hold() {
            steps::batch(&self.conn().client, "BEGIN").await?;
            self.clock()
        } else {
            (tx_start, tx_start_us)
        };
        let jobs = self.claim().await?;
        let (t1, t1_us) = self.clock();
        let claim_us = t1.duration_since(t0).as_micros() as u64;
        self.stats.record(Latency::Claim, t0_us, claim_us);
        if let Some(live) = &self.sh.live {
            live.record_claim(claim_us);
        }
        self.stats.claims += 1;
        self.stats.second(t0_us).claims += 1;
        self.sh.progress.claims.fetch_add(1, Ordering::Relaxed);
        if !self.hold() {
            self.stats.record(Latency::ClaimTx, t0_us, claim_us);
        }
        if jobs.is_empty() {
            self.stats.empty_claims += 1;
            self.stats.second(t0_us).empty_claims += 1;
            if self.hold() {
                steps::batch(&self.conn().client, "COMMIT").await?;
            }
            return Ok(false);
        }
        self.stats.claimed_jobs += jobs.len() as u64;
        for job in &jobs {
            self.log_witnessed(t1_us, claim_us, job, EventKind::Claimed, None);
        }
        for (k, job) in jobs.iter().enumerate() {
            if let Err(h) = self.process(job).await {
                for j in &jobs[k..] {
                    self.log(j, EventKind::Abandoned);
                }
                return Err(h);
            }
        }
        if self.hold() {
            if let Err(e) = steps::batch(&self.conn().client, "COMMIT").await {
                // Not acknowledged: the round's completions may not have happened.
                for job in &jobs {
                    self.log(job, EventKind::Abandoned);
                }
                return Err(Halt::Db(e));
            }
            self.stats.record(Latency::ClaimTx, tx_start_us, tx_start.elapsed().as_micros() as u64);
        }
        Ok(true)
    }

    async fn claim(&mut self) -> Result<Vec<Claimed>, tokio_postgres::Error> {
        let conn = self.conn();
        let ids: Vec<i64> = match &conn.select {
            Some(select) => {
                let v = self.values(None, 0.0, "");
                let rows = steps::rows(&conn.client, select, &v, self.hold()).await?;
                let ids: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
                if ids.is_empty() {
                    return Ok(Vec::new());
                }
                ids
            }
            None => Vec::new(),
        };
        let mut v = self.values(None, 0.0, "");
        v.ids = &ids;
        let rows = steps::rows(&conn.client, &conn.claim, &v, self.hold()).await?;
        let cols = conn.columns;
        let classes = &self.sh.plan.load.classes;
        let first = self.seq;
        self.seq += rows.len() as u32;
        let mut out = Vec::with_capacity(rows.len());
        for (i, r) in rows.iter().enumerate() {
            let key: Key = r.try_get(cols.id)?;
            let attempt_key: Option<Key> = cols.attempt.map(|c| r.try_get(c)).transpose()?;
            let attempt = attempt_key.as_ref().and_then(Key::as_int).map_or(-1, |a| a as i32);
            let token: Option<Key> = cols.token.map(|c| r.try_get::<_, Option<Key>>(c)).transpose()?.flatten();
            out.push(Claimed {
                tag: token.as_ref().map_or(0, Key::tag),
                id: self.sh.ids.surrogate(&key),
                key,
                attempt,
                attempt_key: attempt_key.unwrap_or(Key::Int(-1)),
                token,
                seq: first + i as u32 + 1,
                class: cols
                    .class
                    .and_then(|c| r.get::<_, Option<&str>>(c))
                    .and_then(|q| classes.iter().position(|c| c.name == q))
                    .map_or(0, |c| c as u16 + 1),
            });
        }
        Ok(out)
    }

    /// Completes the job. In lease mode a lost connection is restored and the completion retried once.
    async fn complete(&mut self, job: &Claimed) -> Result<(), Halt> {
        let kinds = (EventKind::Accepted, EventKind::Rejected);
        self.finish(job, false, 0.0, "", kinds).await
    }

    /// Records a failure: retry after a capped exponential backoff (with full jitter), or dead.
    async fn fail(&mut self, job: &Claimed, code: &str) -> Result<(), Halt> {
        let r = self.sh.plan.retry;
        let n = job.attempt.max(1) as u32;
        let raw = r.base.as_secs_f64() * 2f64.powi(n as i32 - 1);
        let mut backoff = raw.min(r.cap.as_secs_f64());
        if r.jitter {
            backoff *= self.rng.random::<f64>();
        }
        self.finish(job, true, backoff, code, (EventKind::FailAccepted, EventKind::FailRejected)).await
    }

    async fn finish(
        &mut self,
        job: &Claimed,
        fail: bool,
        backoff: f64,
        code: &str,
        kinds: (EventKind, EventKind),
    ) -> Result<(), Halt> {
        for retry in [false, true] {
            let (sent, t) = self.clock();
            let conn = self.conn();
            let step = if fail {
                conn.fail.as_ref().expect("validated: a failing job type needs the adapter's fail")
            } else {
                &conn.complete
            };
            let v = self.values(Some(job), backoff, code);
            let witness = self.sh.live.as_ref().filter(|_| !fail).and_then(|l| l.latest_claim(job.id));
            match steps::write(&conn.client, step, &v, self.hold()).await {
                Ok(accepted) => {
                    let took = sent.elapsed().as_micros() as u64;
                    self.stats.record(Latency::Complete, t, took);
                    self.log_witnessed(t, took, job, if accepted { kinds.0 } else { kinds.1 }, witness);
                    if accepted && !fail {
                        self.stats.second(t).completions += 1;
                        self.sh.progress.completed.fetch_add(1, Ordering::Relaxed);
                    }
                    return Ok(());
                }
                Err(e) if !retry && !self.hold() && super::connection_lost(&e, &conn.client) => {
                    self.recover(&e).await.map_err(|_| Halt::Stopped)?;
                }
                Err(e) => return Err(Halt::Db(e)),
            }
        }
        unreachable!("the loop returns on its second pass")
    }

    async fn flush_effects(&mut self) -> Result<(), tokio_postgres::Error> {
        if self.effects_pending.ids.is_empty() {
            return Ok(());
        }
        let conn = self.conn.as_ref().expect("connected");
        let e = &self.effects_pending;
        // The ids and attempts are the journal's numbers: one array each.
        tracing::trace!(worker = %self.name, ids = ?e.ids, attempts = ?e.attempts, "statement: the effects insert");
        if self.sh.plan.adapter.own_table() {
            let worker = self.id as i32;
            conn.client.execute(&conn.effects, &[&e.ids, &worker, &e.attempts]).await?;
        } else {
            conn.client.execute(&conn.effects, &[&e.keys, &e.ids, &self.name, &e.attempts]).await?;
        }
        self.effects_pending.clear();
        Ok(())
    }

    /// The name of the group this worker's slot belongs to (`:pool`); the
    /// slot, not the connection, decides, so a respawned worker keeps its pool.
    fn pool(&self) -> &str {
        self.sh.plan.workers.groups.iter().find(|(_, ids)| ids.contains(&self.slot)).map_or("", |(name, _)| name)
    }

    fn values<'a>(&'a self, job: Option<&'a Claimed>, backoff_secs: f64, error: &'a str) -> Values<'a> {
        let mut v = Values::new(&self.sh.plan);
        v.worker = &self.name;
        v.pool = self.pool();
        v.job = job;
        v.backoff_secs = backoff_secs;
        v.error = error;
        v
    }
}

/// Executions not yet in the effects table: the journal's numbers and attempts, and for an
/// adapter the queue's own ids as text.
#[derive(Debug, Default)]
struct Effects {
    ids: Vec<i64>,
    attempts: Vec<i32>,
    keys: Vec<String>,
}

impl Effects {
    fn push(&mut self, job: &Claimed, keys: bool) {
        self.ids.push(job.id);
        self.attempts.push(job.attempt);
        if keys {
            self.keys.push(job.key.show());
        }
    }

    fn clear(&mut self) {
        self.ids.clear();
        self.attempts.clear();
        self.keys.clear();
    }
}

/// SQLSTATE, or `io` when the connection itself failed.
pub fn error_code(e: &tokio_postgres::Error) -> String {
    e.code().map_or_else(|| "io".to_string(), |c| c.code().to_string())
}
