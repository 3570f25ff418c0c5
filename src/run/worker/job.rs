//! One claimed job in a worker's hands: the fault points around it, the work with its
//! heartbeats (one schedule across the stretches the `mid_work` point splits it into), the side
//! effect, then the completion or failure. Written once for every transport.

use super::Worker;
use super::transport::{Halt, Transport, Write};
use crate::collect::{EventKind, FaultEvent, FaultKind, Latency};
use crate::model::errors::Statement;
use crate::run::values::Claimed;
use crate::run::work;
use crate::scenario::faults::{AfterLoss, Kind, Lose, Point};
use rand::RngExt;
use std::sync::atomic::Ordering;
use std::time::Duration;

impl<T: Transport> Worker<T> {
    /// One job: work, side effect, then complete or fail. Err = the job was let go.
    pub(super) async fn process(&mut self, job: &mut Claimed) -> Result<(), Halt<T::Error>> {
        self.core.nth_job += 1;
        self.point(Point::AfterClaim, job).await?;
        let plan = self.core.sh.plan.clone();
        // A job retried under a new id keeps its type (resolved per adapter: a lookup only for
        // a queue that re-inserts on failure).
        let logical = if plan.adapter.columns.successor.is_some() { self.core.sh.ids.root(job.id) } else { job.id };
        let kind = plan.job_type(logical);
        let model = match job.class {
            0 => &plan.workers.work,
            c => plan.load.classes[c as usize - 1].work.as_ref().unwrap_or(&plan.workers.work),
        };
        let d = work::sample(model, &mut self.core.rng);
        let (w0, w0_us) = self.clock();
        let mut beat = Beat::default();
        if !self.work(job, d / 2, &mut beat).await? {
            return Ok(());
        }
        if kind.is_some_and(|k| k.poison) {
            let t_us = self.now_us();
            self.core.faults.push(FaultEvent {
                t_us,
                kind: FaultKind::Poison,
                worker: Some(self.core.id),
                job: Some(job.id),
            });
            let new_identity = plan.adapter.drive.new_identity_after_crash == Some(true);
            return Err(Halt::Crash { respawn_after: Duration::from_millis(100), new_identity });
        }
        self.point(Point::MidWork, job).await?;
        if !self.work(job, d - d / 2, &mut beat).await? {
            return Ok(());
        }
        self.core.sh.faults.gate(self.core.slot, &self.core.sh.stop).await;
        let (w1, w1_us) = self.clock();
        let worked = w1.duration_since(w0).as_micros() as u64;
        self.core.stats.record(Latency::Work, w0_us, worked);
        self.log_witnessed(w1_us, worked, job, EventKind::Executed, None);
        self.core.stats.second(w1_us).executions += 1;
        if plan.run.effects_table {
            self.core.effects.push(job, !plan.adapter.own_table());
        }
        self.point(Point::AfterEffect, job).await?;
        if let Some(k) = kind
            && k.fail_probability > 0.0
            && self.core.rng.random::<f64>() < k.fail_probability
        {
            let backoff = self.backoff_secs(job);
            return self.finish(job, Write::Fail, backoff, &k.fail_code).await;
        }
        self.point(Point::BeforeComplete, job).await?;
        self.finish(job, Write::Complete, 0.0, "").await
    }

    /// Fires the per-job fault planned at `point`, if any.
    async fn point(&mut self, point: Point, job: &Claimed) -> Result<(), Halt<T::Error>> {
        let c = &mut self.core;
        let kind = c.sh.faults.at_point(c.slot, point, c.nth_job, &mut c.rng).cloned();
        let Some(kind) = kind else { return Ok(()) };
        let t_us = self.now_us();
        self.core.faults.push(FaultEvent { t_us, kind: kind.kind(), worker: Some(self.core.id), job: Some(job.id) });
        match kind {
            Kind::Crash { respawn_after, new_identity, .. } => Err(Halt::Crash { respawn_after, new_identity }),
            Kind::Pause { duration, .. } => {
                self.core.sh.faults.pause(self.core.slot, duration);
                self.core.sh.faults.gate(self.core.slot, &self.core.sh.stop).await;
                Ok(())
            }
            Kind::KillBackend
            | Kind::LockHold { .. }
            | Kind::Cancel { .. }
            | Kind::PostgresRestart { .. }
            | Kind::Failover { .. }
            | Kind::Network { .. }
            | Kind::KillAgent
            | Kind::AckLost { .. } => Ok(()),
        }
    }

    /// Works for `d`, heartbeating if the scenario says so. Ok(false): the
    /// job is no longer ours (0-row heartbeat, or two failed heartbeats in a
    /// row), so the worker stops before its side effect. `beat` carries the
    /// heartbeat schedule from one stretch of the job's work to the next (the
    /// work is split around the `mid_work` fault point), so a job heartbeats
    /// every `lease.heartbeat` of work however it is split.
    async fn work(&mut self, job: &mut Claimed, d: Duration, beat: &mut Beat) -> Result<bool, Halt<T::Error>> {
        let Some(every) = self.core.sh.plan.lease.heartbeat else {
            self.sleep(d).await?;
            return Ok(true);
        };
        let mut left = d;
        loop {
            let due = every.saturating_sub(beat.worked);
            if left <= due {
                // The work ends before (or as) the next heartbeat falls due.
                self.sleep(left).await?;
                beat.worked += left;
                return Ok(true);
            }
            self.sleep(due).await?;
            left -= due;
            beat.worked = Duration::ZERO;
            self.core.sh.faults.gate(self.core.slot, &self.core.sh.stop).await;
            if !self.heartbeat(job, &mut beat.failures).await? {
                return Ok(false);
            }
        }
    }

    /// One heartbeat. Ok(false): the job is no longer ours.
    async fn heartbeat(&mut self, job: &mut Claimed, failures: &mut u32) -> Result<bool, Halt<T::Error>> {
        let hold = self.hold();
        self.core.stats.at = Statement::Heartbeat;
        let (t, mut cx) = self.split();
        let v = cx.values(Some(job), 0.0, "");
        let result = t.write(&mut cx, Write::Heartbeat, &v, hold).await;
        self.core.stats.heartbeats += 1;
        match result {
            Ok(sent) if !sent.accepted => {
                self.log_at(sent.t_us, job, EventKind::HeartbeatRejected);
                Ok(false)
            }
            Ok(sent) => {
                self.log_at(sent.t_us, job, EventKind::HeartbeatOk);
                if let Some(token) = sent.token {
                    // The heartbeat renewed the fence: later writes bind the newest token.
                    job.tag = token.tag();
                    job.token = Some(token);
                }
                *failures = 0;
                Ok(true)
            }
            Err(Halt::Db(e)) if !hold => {
                *failures += 1;
                self.recover(&e).await.map_err(|_| Halt::Stopped)?;
                if *failures >= 2 {
                    self.log(job, EventKind::Abandoned);
                    return Ok(false);
                }
                Ok(true)
            }
            Err(h) => Err(h),
        }
    }

    async fn sleep(&self, d: Duration) -> Result<(), Halt<T::Error>> {
        if d.is_zero() {
            return Ok(());
        }
        tokio::select! {
            _ = work::sleep(d) => Ok(()),
            // Interrupted mid-work: abandon the job like a stopped process would.
            _ = self.core.sh.stop.cancelled() => Err(Halt::Stopped),
        }
    }

    /// A failure's pause before the next attempt: capped exponential backoff, with full jitter.
    fn backoff_secs(&mut self, job: &Claimed) -> f64 {
        let r = self.core.sh.plan.retry;
        let n = job.attempt.max(1);
        let backoff = (r.base.as_secs_f64() * 2f64.powi(n - 1)).min(r.cap.as_secs_f64());
        if r.jitter { backoff * self.core.rng.random::<f64>() } else { backoff }
    }

    /// Completes the job or records its failure; an `ack_lost` fault may cut the completion's
    /// answer off first (then the completion is sent again, or the job left to its lease).
    async fn finish(&mut self, job: &Claimed, what: Write, backoff: f64, code: &str) -> Result<(), Halt<T::Error>> {
        if what == Write::Complete && !self.hold() {
            let c = &mut self.core;
            if let Some((lose, then)) = c.sh.faults.ack_lost(c.slot, c.nth_job, &mut c.rng) {
                self.lose_ack(job, lose).await?;
                if then == AfterLoss::Lease {
                    self.log(job, EventKind::Abandoned);
                    return Ok(());
                }
            }
        }
        self.send(job, what, backoff, code).await
    }

    /// `ack_lost`: the completion goes out (or not, when the request is lost) and the connection
    /// is cut before its answer is read, then opened again. The worker journals the completion
    /// as `CompleteUnknown`: whatever the server did, the round never hears of it.
    async fn lose_ack(&mut self, job: &Claimed, lose: Lose) -> Result<(), Halt<T::Error>> {
        let t_us = self.now_us();
        self.core.faults.push(FaultEvent {
            t_us,
            kind: FaultKind::AckLost,
            worker: Some(self.core.id),
            job: Some(job.id),
        });
        self.core.stats.at = Statement::Complete;
        let (t, mut cx) = self.split();
        if lose == Lose::Answer {
            let v = cx.values(Some(job), 0.0, "");
            // The server runs it (and commits); its answer, or its error, goes nowhere.
            let _ = t.write(&mut cx, Write::Complete, &v, false).await;
        }
        t.crash(&mut cx);
        let cut_us = self.now_us();
        self.log_witnessed(t_us, cut_us - t_us, job, EventKind::CompleteUnknown, None);
        let (t, mut cx) = self.split();
        t.reopen(&mut cx).await.map_err(|_| Halt::Stopped)
    }

    /// Sends the completion or failure. What the transport allows is sent again (a restored
    /// connection in lease mode, once; a pool's acquire timeout).
    async fn send(&mut self, job: &Claimed, what: Write, backoff: f64, code: &str) -> Result<(), Halt<T::Error>> {
        let hold = self.hold();
        let fail = what == Write::Fail;
        let kinds = if fail {
            (EventKind::FailAccepted, EventKind::FailRejected)
        } else {
            (EventKind::Accepted, EventKind::Rejected)
        };
        let mut resends = 0;
        loop {
            let witness = self.core.sh.live.as_ref().filter(|_| !fail).and_then(|l| l.latest_claim(job.id));
            self.core.stats.at = if fail { Statement::Fail } else { Statement::Complete };
            let (t, mut cx) = self.split();
            let v = cx.values(Some(job), backoff, code);
            match t.write(&mut cx, what, &v, hold).await {
                Ok(sent) => {
                    if let Some(new) = sent.token.filter(|k| fail && sent.accepted && *k != job.key) {
                        // Retried under a new id: the checkers follow the job to it.
                        let ids = &self.core.sh.ids;
                        ids.succeed(job.id, ids.surrogate(&new));
                    }
                    let (t, took) = (sent.t_us, sent.took_us);
                    self.core.stats.record(Latency::Complete, t, took);
                    self.log_witnessed(t, took, job, if sent.accepted { kinds.0 } else { kinds.1 }, witness);
                    if sent.accepted && !fail {
                        self.core.stats.second(t).completions += 1;
                        self.core.sh.progress.completed.fetch_add(1, Ordering::Relaxed);
                    }
                    return Ok(());
                }
                Err(Halt::Db(e)) if t.resend(&e, resends, hold) => {
                    resends += 1;
                    self.recover(&e).await.map_err(|_| Halt::Stopped)?;
                }
                Err(h) => return Err(h),
            }
        }
    }
}

/// A claim's heartbeat schedule across the stretches of its work: the work done since the
/// last heartbeat (or the claim), and the failed heartbeats in a row.
#[derive(Debug, Default)]
struct Beat {
    worked: Duration,
    failures: u32,
}
