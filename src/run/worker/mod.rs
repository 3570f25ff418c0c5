//! One simulated worker: claim → work (with heartbeats) → record the side effect → complete
//! or fail, in lease mode (claim commits at once, completion is a second transaction) or
//! hold-transaction mode (all in one transaction). Faults interrupt it at named points; a
//! crash drops the connection and respawns.
//!
//! The round is written once, here and in `job.rs`, over a [`Transport`]: the worker's own
//! connection ([`direct::Direct`], the fast path) or a shared sqlx pool (`run::pool::Pooled`).
//! The transport encodes and sends; the round decides what a result or an error means.
//!
//! Every job the worker lets go of without finishing is journaled as
//! `Abandoned`, so the checkers can tell who believed it owned what, when.

use super::faults::FaultState;
use super::idle::{self, Backoff, Woken};
use super::values::Claimed;
use crate::adapter::keys::Interner;
use crate::collect::spill::Spill;
use crate::collect::{Event, EventKind, FaultEvent, Latency, WorkerStats};
use crate::db::Endpoint;
use crate::error::SessionFailure;
use crate::model::errors::Statement;
use crate::model::protocol::Mode;
use crate::scenario::{Plan, Stop};
use rand::SeedableRng;
use rand::rngs::StdRng;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use transport::{Ctx, Effects, Halt, Transport};

pub(crate) mod direct;
mod job;
pub(crate) mod transport;

/// Effects are written in batches of this many executions.
const EFFECT_BATCH: usize = 64;

/// Counters the live progress line reads; bumped once per claim and per completion.
#[derive(Debug, Default)]
pub(crate) struct Progress {
    pub claims: AtomicU64,
    pub completed: AtomicU64,
    pub errors: AtomicU64,
}

/// What the runner hands every worker.
pub(crate) struct Shared {
    pub plan: Arc<Plan>,
    /// Direct to the server, with the run's search_path, as the role the scenario's SQL runs
    /// as: the reaper, sampler, probes.
    pub config: Endpoint,
    /// The same as the target's own user (the ephemeral cluster's superuser): the faults
    /// (`Database::harness_config`).
    pub harness: Endpoint,
    /// What workers and producers connect with: through the run's pooler when there is one
    /// (`Database::pooled_config`), else the same as `config`.
    pub pooled: Endpoint,
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

/// What a worker keeps whatever carries its statements.
struct Core {
    /// The worker's place (w1 = slot 1): fault targets and pause gates follow it across respawns.
    slot: u32,
    /// The identity in the journal; a respawn with `identity = "new"` takes a fresh one.
    id: u32,
    name: String,
    sh: Arc<Shared>,
    rng: StdRng,
    backoff: Backoff,
    seq: u32,
    nth_job: u64,
    stats: WorkerStats,
    /// Spilled to disk as it grows (see `collect::spill`).
    journal: Spill<Event>,
    faults: Vec<FaultEvent>,
    effects: Effects,
}

/// A worker: its round over the transport `T`.
pub(crate) struct Worker<T: Transport> {
    core: Core,
    t: T,
}

/// What a worker hands back: its counters, journal, faults, and why it stopped early, if it did.
pub(crate) type Finished = (WorkerStats, Spill<Event>, Vec<FaultEvent>, Option<WorkerFailure>);

/// Why a worker stopped early (reported, not fatal to the run).
#[derive(Debug, Clone, thiserror::Error)]
pub enum WorkerFailure {
    /// The run stopped while the worker was reconnecting.
    #[error("worker {worker}: stopped while reconnecting")]
    StoppedReconnecting { worker: String },
    /// No connection within `run.reconnect_timeout`: the database is lost and the run stops.
    #[error("worker {worker} could not reconnect for {seconds:.1} s (run.reconnect_timeout): {last}")]
    Unreachable { worker: String, seconds: f64, last: SessionFailure },
    /// Still not back 6 s after the run stopped, with its backend terminated (`run::cancel`):
    /// its record (journal, counters) is lost.
    #[error("worker {worker} did not stop within 6 s of the run's stop, its backend terminated: its record is lost")]
    GivenUp { worker: String },
    /// A step needed a capability its transport does not declare (`model::transport`).
    #[error("worker {worker}: the {transport} transport cannot {} (capability `{}`)", capability.what(), capability.name())]
    Lacks { worker: String, transport: &'static str, capability: crate::model::transport::Capability },
}

impl<T: Transport> Worker<T> {
    pub(crate) fn new(slot: u32, t: T, sh: Arc<Shared>) -> Worker<T> {
        // The transport validation judged the plan against is the one it runs over.
        debug_assert_eq!(T::KIND, crate::scenario::needs::transport(&sh.plan), "the plan's transport");
        let plan_idle = sh.plan.workers.idle.clone();
        let seed = sh.plan.seed.wrapping_add(u64::from(slot)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let core = Core {
            slot,
            id: slot,
            name: format!("w{slot}"),
            sh,
            rng: StdRng::seed_from_u64(seed),
            backoff: Backoff::new(&plan_idle),
            seq: 0,
            nth_job: 0,
            stats: WorkerStats::default(),
            journal: Spill::new(),
            faults: Vec::new(),
            effects: Effects::default(),
        };
        Worker { core, t }
    }

    /// The transport and what it may touch of the worker, borrowed apart.
    fn split(&mut self) -> (&mut T, Ctx<'_>) {
        let c = &mut self.core;
        let cx = Ctx { sh: &c.sh, id: c.id, name: &c.name, slot: c.slot, stats: &mut c.stats };
        (&mut self.t, cx)
    }

    fn now_us(&self) -> u64 {
        self.core.sh.faults.start.elapsed().as_micros() as u64
    }

    /// One clock read as both an Instant and µs since the start (the hot path reads the clock
    /// once per moment instead of twice).
    fn clock(&self) -> (Instant, u64) {
        let now = Instant::now();
        (now, now.saturating_duration_since(self.core.sh.faults.start).as_micros() as u64)
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
        let (attempt, worker, claim, token) = (job.attempt, self.core.id, job.seq, job.tag);
        let e = Event { t_us, job: job.id, attempt, worker, claim, kind, dur_us, token };
        if let Some(live) = &self.core.sh.live {
            live.observe(&e, witness);
        }
        self.core.journal.push(e);
    }

    fn log(&mut self, job: &Claimed, kind: EventKind) {
        self.log_at(self.now_us(), job, kind);
    }

    fn hold(&self) -> bool {
        self.core.sh.plan.workers.mode == Mode::HoldTransaction
    }

    /// Runs until the stop condition, the cancel token or a connection that cannot be restored.
    pub(crate) async fn run(mut self) -> Finished {
        let failure = self.run_loop().await.err();
        if self.core.sh.plan.run.effects_table && self.t.is_open() {
            let mut effects = std::mem::take(&mut self.core.effects);
            let (t, mut cx) = self.split();
            let _ = t.flush_effects(&mut cx, &mut effects, true).await;
        }
        let c = self.core;
        (c.stats, c.journal, c.faults, failure)
    }

    async fn run_loop(&mut self) -> Result<(), WorkerFailure> {
        let plan = self.core.sh.plan.clone();
        loop {
            if self.core.sh.stop.is_cancelled() || plan.workers.max_claims.is_some_and(|m| self.core.stats.claims >= m)
            {
                return Ok(());
            }
            self.core.sh.faults.gate(self.core.slot, &self.core.sh.stop).await;
            let result = match self.round().await {
                Ok(true) if plan.run.effects_table && self.core.effects.ids.len() >= EFFECT_BATCH => {
                    self.core.backoff.reset();
                    self.flush_effects().await
                }
                Ok(true) => {
                    self.core.backoff.reset();
                    Ok(())
                }
                Ok(false) => {
                    if plan.run.stop == Stop::Drained
                        && self.core.sh.producers_done.load(Ordering::Relaxed)
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
                Err(Halt::Lacks(capability)) => {
                    let why =
                        WorkerFailure::Lacks { worker: self.core.name.clone(), transport: T::KIND.name(), capability };
                    tracing::error!("{why}");
                    return Err(why);
                }
            }
        }
    }

    /// After a statement error: counted, then what the transport does about it.
    async fn recover(&mut self, e: &T::Error) -> Result<(), WorkerFailure> {
        let hold = self.hold();
        let (t, mut cx) = self.split();
        t.recover(&mut cx, e, hold).await
    }

    async fn flush_effects(&mut self) -> Result<(), Halt<T::Error>> {
        let mut effects = std::mem::take(&mut self.core.effects);
        self.core.stats.at = Statement::Effects;
        let (t, mut cx) = self.split();
        let flushed = t.flush_effects(&mut cx, &mut effects, false).await;
        self.core.effects = effects;
        flushed
    }

    /// A crash: the connection goes without a word; the worker comes back after a delay.
    async fn respawn(&mut self, after: Duration, new_identity: bool) -> Result<(), WorkerFailure> {
        let (t, mut cx) = self.split();
        t.crash(&mut cx);
        tokio::select! {
            _ = tokio::time::sleep(after) => {}
            _ = self.core.sh.stop.cancelled() => return Ok(()),
        }
        if new_identity {
            self.core.id = self.core.sh.next_identity.fetch_add(1, Ordering::Relaxed);
            self.core.name = format!("w{}", self.core.id);
        }
        let (t, mut cx) = self.split();
        t.reopen(&mut cx).await
    }

    /// After an empty claim: the backoff step, or a notification / the fallback poll (see `idle`).
    async fn idle(&mut self) {
        let c = &mut self.core;
        let rx = self.t.wakeups();
        if let Woken::Notified(n) =
            idle::wait(&c.sh.plan.workers.idle, &mut c.backoff, &mut c.rng, rx, &c.sh.stop).await
        {
            c.stats.notifications += n;
        }
    }

    /// `stop = "drained"`: is anything left? On an error, assume so.
    async fn anything_left(&mut self) -> Result<bool, WorkerFailure> {
        let now = self.now_us();
        self.core.stats.drained_checks += 1;
        self.core.stats.second(now).drained_checks += 1;
        self.core.stats.at = Statement::Other;
        let (t, mut cx) = self.split();
        let v = cx.values(None, 0.0, "");
        match t.anything_left(&mut cx, &v).await {
            Ok(left) => Ok(left),
            Err(Halt::Db(e)) => {
                self.recover(&e).await?;
                Ok(true)
            }
            Err(_) => Ok(true),
        }
    }

    /// One claim and the jobs it returned. Ok(false) when the claim was empty.
    async fn round(&mut self) -> Result<bool, Halt<T::Error>> {
        let hold = self.hold();
        let (tx_start, tx_start_us) = self.clock();
        if hold {
            self.core.stats.at = Statement::Other;
            let (t, mut cx) = self.split();
            t.begin(&mut cx).await?;
        }
        self.core.stats.at = Statement::Claim;
        let (t, mut cx) = self.split();
        let v = cx.values(None, 0.0, "");
        let claim = t.claim(&mut cx, v, hold).await?;
        let (mut jobs, t0_us, claim_us) = (claim.jobs, claim.t0_us, claim.took_us);
        let t1_us = t0_us + claim_us;
        let c = &mut self.core;
        c.stats.record(Latency::Claim, t0_us, claim_us);
        if let Some(live) = &c.sh.live {
            live.record_claim(claim_us);
        }
        c.stats.claims += 1;
        c.stats.second(t0_us).claims += 1;
        c.sh.progress.claims.fetch_add(1, Ordering::Relaxed);
        if !hold {
            c.stats.record(Latency::ClaimTx, t0_us, claim_us);
        }
        if jobs.is_empty() {
            c.stats.empty_claims += 1;
            c.stats.second(t0_us).empty_claims += 1;
            if hold {
                self.core.stats.at = Statement::Commit;
                let (t, mut cx) = self.split();
                t.commit(&mut cx).await?;
            }
            return Ok(false);
        }
        c.stats.claimed_jobs += jobs.len() as u64;
        for job in &mut jobs {
            c.seq += 1;
            job.seq = c.seq;
        }
        for job in &mut jobs {
            self.log_witnessed(t1_us, claim_us, job, EventKind::Claimed, None);
            // The key moves to the worker's tally: nothing after the claim reads it.
            if let Some(key) = job.exclusion.take() {
                self.core.stats.exclusion_keys.push((job.id, key));
            }
        }
        for k in 0..jobs.len() {
            if let Err(h) = self.process(&mut jobs[k]).await {
                for j in &jobs[k..] {
                    self.log(j, EventKind::Abandoned);
                }
                return Err(h);
            }
        }
        if hold {
            self.core.stats.at = Statement::Commit;
            let (t, mut cx) = self.split();
            if let Err(h) = t.commit(&mut cx).await {
                // Not acknowledged: the round's completions may not have happened.
                for job in &jobs {
                    self.log(job, EventKind::Abandoned);
                }
                return Err(h);
            }
            self.core.stats.record(Latency::ClaimTx, tx_start_us, tx_start.elapsed().as_micros() as u64);
        }
        Ok(true)
    }
}

/// SQLSTATE, or `io` when the connection itself failed.
pub(crate) fn error_code(e: &tokio_postgres::Error) -> String {
    e.code().map_or_else(|| "io".to_string(), |c| c.code().to_string())
}
