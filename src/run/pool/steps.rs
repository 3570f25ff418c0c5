//! A pooled worker's round: claim → work (with heartbeats) → side effect → complete or fail,
//! each step on a connection taken from the pool and given back at once.

use super::{Cut, PoolWorker};
use crate::adapter::keys::Key;
use crate::collect::{EventKind, Latency};
use crate::db::statements::EFFECTS_INSERT;
use crate::run::values::Claimed;
use crate::run::work;
use rand::RngExt;
use sqlx::Row;
use sqlx::postgres::PgRow;
use std::sync::atomic::Ordering;
use std::time::Duration;

impl PoolWorker {
    /// One claim and the jobs it returned. Ok(false) when the claim was empty.
    pub(super) async fn round(&mut self) -> Result<bool, Cut> {
        let jobs = self.claim().await?;
        if jobs.is_empty() {
            return Ok(false);
        }
        for (k, job) in jobs.iter().enumerate() {
            if let Err(c) = self.process(job).await {
                for j in &jobs[k..] {
                    let t = self.clock().1;
                    self.log(t, 0, j, EventKind::Abandoned, None);
                }
                return Err(c);
            }
        }
        Ok(true)
    }

    async fn claim(&mut self) -> Result<Vec<Claimed>, Cut> {
        let plan = self.sh.plan.clone();
        let mut ids: Vec<i64> = Vec::new();
        let mut select_us = 0;
        if let Some(select) = &plan.adapter.select {
            let args = self.args(select.first(), None, &[], 0.0, "");
            let (rows, took, _) = self.fetch(select.first(), args).await?;
            ids = rows.iter().filter_map(|r| r.try_get::<i64, _>(0).ok()).collect();
            if ids.is_empty() {
                self.count_claim(took, self.clock().1, 0);
                return Ok(Vec::new());
            }
            select_us = took;
        }
        let st = plan.adapter.claim.first();
        let args = self.args(st, None, &ids, 0.0, "");
        let (rows, took, t0_us) = self.fetch(st, args).await?;
        let claim_us = select_us + took;
        let t1_us = self.clock().1;
        let mut jobs = Vec::with_capacity(rows.len());
        for r in &rows {
            match self.job(r) {
                Ok(j) => jobs.push(j),
                Err(e) => return Err(self.note(&e)),
            }
        }
        self.count_claim(claim_us, t0_us, jobs.len());
        for job in &jobs {
            self.log(t1_us, claim_us, job, EventKind::Claimed, None);
        }
        Ok(jobs)
    }

    fn count_claim(&mut self, claim_us: u64, t0_us: u64, jobs: usize) {
        self.stats.record(Latency::Claim, t0_us, claim_us);
        self.stats.record(Latency::ClaimTx, t0_us, claim_us);
        if let Some(live) = &self.sh.live {
            live.record_claim(claim_us);
        }
        self.stats.claims += 1;
        self.stats.second(t0_us).claims += 1;
        self.sh.progress.claims.fetch_add(1, Ordering::Relaxed);
        if jobs == 0 {
            self.stats.empty_claims += 1;
            self.stats.second(t0_us).empty_claims += 1;
        }
        self.stats.claimed_jobs += jobs as u64;
    }

    /// A claimed row as a job, by the adapter's column names.
    fn job(&mut self, r: &PgRow) -> Result<Claimed, sqlx::Error> {
        let plan = self.sh.plan.clone();
        let cols = &plan.adapter.columns;
        let id: i64 = r.try_get(cols.id.as_str())?;
        let attempt: Option<i32> = cols.attempt.as_deref().map(|c| r.try_get(c)).transpose()?;
        let token: Option<uuid::Uuid> = cols.token.as_deref().map(|c| r.try_get(c)).transpose()?.flatten();
        let class: Option<String> = cols.class.as_deref().and_then(|c| r.try_get(c).ok()).flatten();
        let token = token.map(Key::Uuid);
        self.seq += 1;
        Ok(Claimed {
            tag: token.as_ref().map_or(0, Key::tag),
            id,
            key: Key::Int(id),
            attempt: attempt.unwrap_or(-1),
            attempt_key: Key::Int(attempt.map_or(-1, i64::from)),
            token,
            seq: self.seq,
            class: class.and_then(|q| plan.load.classes.iter().position(|c| c.name == q)).map_or(0, |c| c as u16 + 1),
        })
    }

    /// One job: work, side effect, then complete or fail. Err = the job was let go.
    async fn process(&mut self, job: &Claimed) -> Result<(), Cut> {
        let plan = self.sh.plan.clone();
        let model = match job.class {
            0 => &plan.workers.work,
            c => plan.load.classes[c as usize - 1].work.as_ref().unwrap_or(&plan.workers.work),
        };
        let d = work::sample(model, &mut self.rng);
        let (w0, w0_us) = self.clock();
        if !self.work(job, d).await? {
            return Ok(());
        }
        let (w1, w1_us) = self.clock();
        let worked = w1.duration_since(w0).as_micros() as u64;
        self.stats.record(Latency::Work, w0_us, worked);
        self.log(w1_us, worked, job, EventKind::Executed, None);
        self.stats.second(w1_us).executions += 1;
        if plan.run.effects_table {
            self.effects.0.push(job.id);
            self.effects.1.push(job.attempt);
        }
        if let Some(k) = plan.job_type(job.id)
            && k.fail_probability > 0.0
            && self.rng.random::<f64>() < k.fail_probability
        {
            return self.finish(job, Some(&k.fail_code)).await;
        }
        self.finish(job, None).await
    }

    /// Works for `d`, heartbeating every `lease.heartbeat`. Ok(false): the job is no longer ours.
    async fn work(&mut self, job: &Claimed, d: Duration) -> Result<bool, Cut> {
        let Some(every) = self.sh.plan.lease.heartbeat else {
            self.sleep(d).await?;
            return Ok(true);
        };
        let (mut left, mut failures) = (d, 0u32);
        while left > every {
            self.sleep(every).await?;
            left -= every;
            let step = self.sh.plan.adapter.heartbeat.clone().expect("validated: lease.heartbeat needs a heartbeat");
            let args = self.args(step.first(), Some(job), &[], 0.0, "");
            self.stats.heartbeats += 1;
            match self.execute(step.first(), args).await {
                Ok((true, _, t)) => {
                    failures = 0;
                    self.log(t, 0, job, EventKind::HeartbeatOk, None);
                }
                Ok((false, _, t)) => {
                    self.log(t, 0, job, EventKind::HeartbeatRejected, None);
                    return Ok(false);
                }
                Err(Cut::Stopped) => return Err(Cut::Stopped),
                Err(Cut::Failed { .. }) => {
                    failures += 1;
                    if failures >= 2 {
                        let t = self.clock().1;
                        self.log(t, 0, job, EventKind::Abandoned, None);
                        return Ok(false);
                    }
                }
            }
        }
        self.sleep(left).await?;
        Ok(true)
    }

    async fn sleep(&self, d: Duration) -> Result<(), Cut> {
        if d.is_zero() {
            return Ok(());
        }
        tokio::select! {
            _ = work::sleep(d) => Ok(()),
            _ = self.sh.stop.cancelled() => Err(Cut::Stopped),
        }
    }

    /// Completes the job (`fail` = None) or records its failure with a capped exponential
    /// backoff. An acquire timeout sends it again once a connection comes.
    async fn finish(&mut self, job: &Claimed, fail: Option<&str>) -> Result<(), Cut> {
        let plan = self.sh.plan.clone();
        let (step, kinds, backoff) = match fail {
            None => (&plan.adapter.complete, (EventKind::Accepted, EventKind::Rejected), 0.0),
            Some(_) => {
                let step = plan.adapter.fail.as_ref().expect("validated: a failing job type needs the adapter's fail");
                (step, (EventKind::FailAccepted, EventKind::FailRejected), self.backoff_secs(job))
            }
        };
        loop {
            let witness = self.sh.live.as_ref().filter(|_| fail.is_none()).and_then(|l| l.latest_claim(job.id));
            let args = self.args(step.first(), Some(job), &[], backoff, fail.unwrap_or(""));
            match self.execute(step.first(), args).await {
                Ok((accepted, took, t)) => {
                    self.stats.record(Latency::Complete, t, took);
                    self.log(t, took, job, if accepted { kinds.0 } else { kinds.1 }, witness);
                    if accepted && fail.is_none() {
                        self.stats.second(t).completions += 1;
                        self.sh.progress.completed.fetch_add(1, Ordering::Relaxed);
                    }
                    return Ok(());
                }
                Err(Cut::Failed { timed_out: true }) => {}
                Err(c) => return Err(c),
            }
        }
    }

    fn backoff_secs(&mut self, job: &Claimed) -> f64 {
        let r = self.sh.plan.retry;
        let n = job.attempt.max(1);
        let raw = r.base.as_secs_f64() * 2f64.powi(n - 1);
        let backoff = raw.min(r.cap.as_secs_f64());
        if r.jitter { backoff * self.rng.random::<f64>() } else { backoff }
    }

    /// `stop = "drained"`: is anything left? On an error, assume so.
    pub(super) async fn anything_left(&mut self) -> bool {
        let now = self.clock().1;
        self.stats.drained_checks += 1;
        self.stats.second(now).drained_checks += 1;
        let plan = self.sh.plan.clone();
        let st = &plan.adapter.observe.remaining;
        let args = self.args(st, None, &[], 0.0, "");
        match self.fetch(st, args).await {
            Ok((rows, _, _)) => rows.first().is_some_and(|r| {
                r.try_get::<bool, _>(0).unwrap_or_else(|_| r.try_get::<i64, _>(0).is_ok_and(|n| n > 0))
            }),
            Err(_) => true,
        }
    }

    /// The executions not yet in the effects table, in one insert (kept for later on a failure).
    /// The last flush (`last`) is not cut short by the stop and waits out acquire timeouts (up
    /// to `run.reconnect_timeout`), so the run's last executions still get their witness.
    pub(super) async fn flush_effects(&mut self, last: bool) {
        if self.effects.0.is_empty() {
            return;
        }
        let began = std::time::Instant::now();
        let got = loop {
            match super::acquire_within(&self.pool, self.acquire_limit()).await {
                Err(e @ sqlx::Error::PoolTimedOut) if last && began.elapsed() < self.sh.plan.run.reconnect_timeout => {
                    self.note(&e);
                }
                other => break other,
            }
        };
        let mut conn = match got {
            Ok(c) => c,
            Err(e) => {
                self.note(&e);
                return;
            }
        };
        let q = sqlx::query(EFFECTS_INSERT).bind(&self.effects.0).bind(self.slot as i32).bind(&self.effects.1);
        match q.execute(&mut *conn).await {
            Ok(_) => {
                self.effects.0.clear();
                self.effects.1.clear();
            }
            Err(e) => {
                drop(conn);
                self.note(&e);
            }
        }
    }
}
