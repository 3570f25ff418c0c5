//! One claimed job in a worker's hands: the fault points around it, the work with its
//! heartbeats (one schedule across the stretches the `mid_work` point splits it into), the side
//! effect, then the completion or failure.

use super::{Halt, Worker};
use crate::collect::{EventKind, FaultEvent, Latency};
use crate::run::steps;
use crate::run::values::Claimed;
use crate::run::work;
use crate::scenario::faults::{Kind, Point};
use rand::RngExt;
use std::time::Duration;

impl Worker {
    /// One job: work, side effect, then complete or fail. Err = the job was let go.
    pub(super) async fn process(&mut self, job: &Claimed) -> Result<(), Halt> {
        self.nth_job += 1;
        self.point(Point::AfterClaim, job).await?;
        let plan = self.sh.plan.clone();
        let kind = plan.job_type(job.id);
        let model = match job.class {
            0 => &plan.workers.work,
            c => plan.load.classes[c as usize - 1].work.as_ref().unwrap_or(&plan.workers.work),
        };
        let d = work::sample(model, &mut self.rng);
        let (w0, w0_us) = self.clock();
        let mut beat = Beat::default();
        if !self.work(job, d / 2, &mut beat).await? {
            return Ok(());
        }
        if kind.is_some_and(|k| k.poison) {
            self.faults.push(FaultEvent {
                t_us: self.now_us(),
                kind: "poison",
                worker: Some(self.id),
                job: Some(job.id),
            });
            return Err(Halt::Crash { respawn_after: Duration::from_millis(100), new_identity: false });
        }
        self.point(Point::MidWork, job).await?;
        if !self.work(job, d - d / 2, &mut beat).await? {
            return Ok(());
        }
        self.sh.faults.gate(self.slot, &self.sh.stop).await;
        let (w1, w1_us) = self.clock();
        let worked = w1.duration_since(w0).as_micros() as u64;
        self.stats.record(Latency::Work, w0_us, worked);
        self.log_witnessed(w1_us, worked, job, EventKind::Executed, None);
        self.stats.second(w1_us).executions += 1;
        if plan.run.effects_table {
            self.effects_pending.push(job, !plan.adapter.own_table());
        }
        self.point(Point::AfterEffect, job).await?;
        if let Some(k) = kind
            && k.fail_probability > 0.0
            && self.rng.random::<f64>() < k.fail_probability
        {
            return self.fail(job, &k.fail_code).await;
        }
        self.point(Point::BeforeComplete, job).await?;
        self.complete(job).await
    }

    /// Fires the per-job fault planned at `point`, if any.
    async fn point(&mut self, point: Point, job: &Claimed) -> Result<(), Halt> {
        let kind = self.sh.faults.at_point(self.slot, point, self.nth_job, &mut self.rng).cloned();
        let Some(kind) = kind else { return Ok(()) };
        self.faults.push(FaultEvent {
            t_us: self.now_us(),
            kind: kind.name(),
            worker: Some(self.id),
            job: Some(job.id),
        });
        match kind {
            Kind::Crash { respawn_after, new_identity, .. } => Err(Halt::Crash { respawn_after, new_identity }),
            Kind::Pause { duration, .. } => {
                self.sh.faults.pause(self.slot, duration);
                self.sh.faults.gate(self.slot, &self.sh.stop).await;
                Ok(())
            }
            Kind::KillBackend
            | Kind::LockHold { .. }
            | Kind::Cancel { .. }
            | Kind::PostgresRestart { .. }
            | Kind::Network { .. } => Ok(()),
        }
    }

    /// Works for `d`, heartbeating if the scenario says so. Ok(false): the
    /// job is no longer ours (0-row heartbeat, or two failed heartbeats in a
    /// row), so the worker stops before its side effect. `beat` carries the
    /// heartbeat schedule from one stretch of the job's work to the next (the
    /// work is split around the `mid_work` fault point), so a job heartbeats
    /// every `lease.heartbeat` of work however it is split.
    async fn work(&mut self, job: &Claimed, d: Duration, beat: &mut Beat) -> Result<bool, Halt> {
        let Some(every) = self.sh.plan.lease.heartbeat else {
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
            self.sh.faults.gate(self.slot, &self.sh.stop).await;
            if !self.heartbeat(job, &mut beat.failures).await? {
                return Ok(false);
            }
        }
    }

    /// One heartbeat. Ok(false): the job is no longer ours.
    async fn heartbeat(&mut self, job: &Claimed, failures: &mut u32) -> Result<bool, Halt> {
        let t = self.now_us();
        let v = self.values(Some(job), 0.0, "");
        let conn = self.conn();
        let step = conn.heartbeat.as_ref().expect("validated: lease.heartbeat needs the adapter's heartbeat");
        let result = steps::write(&conn.client, step, &v, self.hold()).await;
        self.stats.heartbeats += 1;
        match result {
            Ok(false) => {
                self.log_at(t, job, EventKind::HeartbeatRejected);
                Ok(false)
            }
            Ok(true) => {
                self.log_at(t, job, EventKind::HeartbeatOk);
                *failures = 0;
                Ok(true)
            }
            Err(e) if self.hold() => Err(Halt::Db(e)),
            Err(e) => {
                *failures += 1;
                self.recover(&e).await.map_err(|_| Halt::Stopped)?;
                if *failures >= 2 {
                    self.log(job, EventKind::Abandoned);
                    return Ok(false);
                }
                Ok(true)
            }
        }
    }

    async fn sleep(&self, d: Duration) -> Result<(), Halt> {
        if d.is_zero() {
            return Ok(());
        }
        tokio::select! {
            _ = work::sleep(d) => Ok(()),
            // Interrupted mid-work: abandon the job like a stopped process would.
            _ = self.sh.stop.cancelled() => Err(Halt::Stopped),
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
