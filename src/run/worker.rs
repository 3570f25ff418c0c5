//! One simulated worker: its own connection, its prepared statements, its
//! own journal and counters. claim → work → record the side effect →
//! complete, in lease mode (claim commits at once, completion is a second
//! transaction) or hold-transaction mode (all in one transaction).
//!
//! The hot path allocates only what the driver needs per statement; the
//! journal is a Vec that grows, and effects go to the `effects` table in
//! batches from the same connection, outside any claim transaction.

use crate::collect::{Event, EventKind, WorkerStats};
use crate::run::work;
use crate::scenario::raw::Mode;
use crate::scenario::{Plan, Stop};
use crate::strategy::{Param, Strategy};
use rand::SeedableRng;
use rand::rngs::StdRng;
use std::time::{Duration, Instant};
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, Statement};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// Effects are written in batches of this many executions.
const EFFECT_BATCH: usize = 64;

pub const EFFECTS_INSERT: &str = "INSERT INTO effects (job_id, worker, attempt) \
     SELECT j, $2::int4, a FROM unnest($1::int8[], $3::int4[]) AS u(j, a)";

/// Is anything left to do? (for `stop = "drained"`)
pub const REMAINING: &str =
    "SELECT EXISTS (SELECT 1 FROM jobs WHERE status IN ('queued', 'running'))";

/// A worker's prepared statements and where the claim's columns are.
pub struct Prepared {
    select: Option<Statement>,
    claim: Statement,
    complete: Statement,
    effects: Statement,
    remaining: Statement,
    col_attempt: Option<usize>,
    col_token: Option<usize>,
}

/// A job as the claim returned it.
#[derive(Debug, Clone, Copy)]
struct Claimed {
    id: i64,
    attempt: i32,
    token: Option<Uuid>,
}

/// Prepares every statement once; a failure names the statement and the SQLSTATE.
pub async fn prepare(client: &Client, strategy: &Strategy) -> Result<Prepared, String> {
    let prep = |text: &'static str, sql: String| async move {
        client
            .prepare(&sql)
            .await
            .map_err(|e| format!("{text}: {}\n  SQL: {sql}", crate::db::error_text(&e)))
    };
    let select = match &strategy.select {
        Some(s) => Some(prep("the strategy's select statement", s.sql.clone()).await?),
        None => None,
    };
    let claim = prep("the strategy's claim statement", strategy.claim.sql.clone()).await?;
    let complete = prep(
        "the strategy's complete statement",
        strategy.complete.sql.clone(),
    )
    .await?;
    let effects = prep("the effects insert", EFFECTS_INSERT.into()).await?;
    let remaining = prep("the drained check", REMAINING.into()).await?;
    let col = |name: &str, ty: Type| -> Result<Option<usize>, String> {
        match claim.columns().iter().position(|c| c.name() == name) {
            Some(i) if *claim.columns()[i].type_() == ty => Ok(Some(i)),
            Some(i) => Err(format!(
                "the claim returns `{name}` as {}, expected {ty}",
                claim.columns()[i].type_()
            )),
            None => Ok(None),
        }
    };
    if col("id", Type::INT8)?.is_none() {
        return Err("the claim statement must return a bigint column `id` (e.g. RETURNING id, attempts, claim_token)".into());
    }
    if let Some(s) = &select
        && !s
            .columns()
            .first()
            .is_some_and(|c| *c.type_() == Type::INT8)
    {
        return Err("the select statement must return a bigint `id` first".into());
    }
    let col_attempt = col("attempts", Type::INT4)?;
    let col_token = col("claim_token", Type::UUID)?;
    for (param, have, column) in [
        (Param::Attempt, col_attempt, "attempts"),
        (Param::Token, col_token, "claim_token"),
    ] {
        if strategy.complete.params.contains(&param) && have.is_none() {
            return Err(format!(
                "the complete statement uses {param}, so the claim must return `{column}`"
            ));
        }
    }
    Ok(Prepared {
        select,
        claim,
        complete,
        effects,
        remaining,
        col_attempt,
        col_token,
    })
}

/// Everything a worker needs; it owns all of it.
pub struct Worker {
    pub id: u32,
    name: String,
    client: Client,
    stmts: Prepared,
    start: Instant,
    stop: CancellationToken,
    rng: StdRng,
    batch: i64,
    lease_secs: f64,
    mode: Mode,
    work: crate::scenario::WorkModel,
    max_claims: Option<u64>,
    drained_stop: bool,
    idle_backoff: Duration,
    complete_params: Vec<Param>,
    claim_params: Vec<Param>,
    select_params: Vec<Param>,
    effects_table: bool,
    pub stats: WorkerStats,
    pub journal: Vec<Event>,
    effects_pending: (Vec<i64>, Vec<i32>),
}

/// Why a worker stopped early (reported, not fatal to the run).
pub type WorkerFailure = String;

impl Worker {
    pub fn new(
        id: u32,
        client: Client,
        stmts: Prepared,
        plan: &Plan,
        start: Instant,
        stop: CancellationToken,
    ) -> Worker {
        Worker {
            id,
            name: format!("w{id}"),
            client,
            stmts,
            start,
            stop,
            rng: StdRng::seed_from_u64(
                plan.seed
                    .wrapping_add(u64::from(id))
                    .wrapping_mul(0x9E37_79B9_7F4A_7C15),
            ),
            batch: i64::from(plan.batch),
            lease_secs: plan.lease.as_secs_f64(),
            mode: plan.mode,
            work: plan.work,
            max_claims: plan.max_claims,
            drained_stop: plan.stop == Stop::Drained,
            idle_backoff: plan.idle_backoff,
            complete_params: plan.strategy.complete.params.clone(),
            claim_params: plan.strategy.claim.params.clone(),
            select_params: plan
                .strategy
                .select
                .as_ref()
                .map(|s| s.params.clone())
                .unwrap_or_default(),
            effects_table: plan.effects_table,
            stats: WorkerStats::default(),
            journal: Vec::with_capacity(1024),
            effects_pending: (
                Vec::with_capacity(EFFECT_BATCH),
                Vec::with_capacity(EFFECT_BATCH),
            ),
        }
    }

    fn now_us(&self) -> u64 {
        self.start.elapsed().as_micros() as u64
    }

    fn log(&mut self, job: &Claimed, kind: EventKind) {
        let t_us = self.now_us();
        self.journal.push(Event {
            t_us,
            job: job.id,
            attempt: job.attempt,
            worker: self.id,
            kind,
        });
    }

    /// Runs until the stop condition, the cancel token or a lost connection.
    pub async fn run(mut self) -> (Self, Option<WorkerFailure>) {
        let failure = self.run_loop().await.err();
        if self.effects_table && !self.client.is_closed() {
            let _ = self.flush_effects().await;
        }
        (self, failure)
    }

    async fn run_loop(&mut self) -> Result<(), WorkerFailure> {
        let hold = self.mode == Mode::HoldTransaction;
        loop {
            if self.stop.is_cancelled() || self.max_claims.is_some_and(|m| self.stats.claims >= m) {
                return Ok(());
            }
            if hold {
                self.client
                    .batch_execute("BEGIN")
                    .await
                    .map_err(|e| self.fail(&e))?;
            }
            match self.round().await {
                Ok(true) => {}
                Ok(false) => {
                    if hold {
                        self.client
                            .batch_execute("COMMIT")
                            .await
                            .map_err(|e| self.fail(&e))?;
                    }
                    if self.drained_stop && !self.anything_left().await? {
                        return Ok(());
                    }
                    self.idle().await;
                    continue;
                }
                Err(e) => {
                    self.stats.record_error(&error_code(&e));
                    if self.client.is_closed() {
                        return Err(format!(
                            "worker {}: connection lost: {}",
                            self.name,
                            crate::db::error_text(&e)
                        ));
                    }
                    if hold {
                        let _ = self.client.batch_execute("ROLLBACK").await;
                    }
                    continue;
                }
            }
            if hold && let Err(e) = self.client.batch_execute("COMMIT").await {
                self.stats.record_error(&error_code(&e));
                if self.client.is_closed() {
                    return Err(format!("worker {}: connection lost at COMMIT", self.name));
                }
            }
            if self.effects_table && self.effects_pending.0.len() >= EFFECT_BATCH {
                self.flush_effects().await.map_err(|e| self.fail(&e))?;
            }
        }
    }

    fn fail(&mut self, e: &tokio_postgres::Error) -> WorkerFailure {
        self.stats.record_error(&error_code(e));
        format!("worker {}: {}", self.name, crate::db::error_text(e))
    }

    async fn idle(&self) {
        tokio::select! {
            _ = tokio::time::sleep(self.idle_backoff) => {}
            _ = self.stop.cancelled() => {}
        }
    }

    async fn anything_left(&mut self) -> Result<bool, WorkerFailure> {
        match self.client.query_one(&self.stmts.remaining, &[]).await {
            Ok(row) => Ok(row.get(0)),
            Err(e) => Err(self.fail(&e)),
        }
    }

    /// One claim and the jobs it returned. Ok(false) when the claim was empty.
    async fn round(&mut self) -> Result<bool, tokio_postgres::Error> {
        let t0 = Instant::now();
        let jobs = self.claim().await?;
        self.stats
            .record_claim_latency(t0.elapsed().as_micros() as u64);
        self.stats.claims += 1;
        if jobs.is_empty() {
            self.stats.empty_claims += 1;
            return Ok(false);
        }
        self.stats.claimed_jobs += jobs.len() as u64;
        for job in &jobs {
            self.log(job, EventKind::Claimed);
        }
        for job in &jobs {
            let d = work::sample(&self.work, &mut self.rng);
            if !d.is_zero() {
                tokio::select! {
                    _ = work::sleep(d) => {}
                    // Interrupted mid-work: abandon the job like a stopped process would.
                    _ = self.stop.cancelled() => return Ok(true),
                }
            }
            self.log(job, EventKind::Executed);
            if self.effects_table {
                self.effects_pending.0.push(job.id);
                self.effects_pending.1.push(job.attempt);
            }
            let rows = self.complete(job).await?;
            self.log(
                job,
                if rows > 0 {
                    EventKind::Accepted
                } else {
                    EventKind::Rejected
                },
            );
        }
        Ok(true)
    }

    async fn claim(&mut self) -> Result<Vec<Claimed>, tokio_postgres::Error> {
        let ids: Vec<i64> = match &self.stmts.select {
            Some(select) => {
                let v = Values {
                    batch: self.batch,
                    lease_secs: self.lease_secs,
                    worker: &self.name,
                    ids: &[],
                    job: None,
                };
                let rows = self
                    .client
                    .query(select, &v.bind(&self.select_params))
                    .await?;
                let ids: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
                if ids.is_empty() {
                    return Ok(Vec::new());
                }
                ids
            }
            None => Vec::new(),
        };
        let v = Values {
            batch: self.batch,
            lease_secs: self.lease_secs,
            worker: &self.name,
            ids: &ids,
            job: None,
        };
        let rows = self
            .client
            .query(&self.stmts.claim, &v.bind(&self.claim_params))
            .await?;
        let (ca, ct) = (self.stmts.col_attempt, self.stmts.col_token);
        Ok(rows
            .iter()
            .map(|r| Claimed {
                id: r.get("id"),
                attempt: ca.map_or(-1, |i| r.get(i)),
                token: ct.and_then(|i| r.get::<_, Option<Uuid>>(i)),
            })
            .collect())
    }

    async fn complete(&mut self, job: &Claimed) -> Result<u64, tokio_postgres::Error> {
        let v = Values {
            batch: self.batch,
            lease_secs: self.lease_secs,
            worker: &self.name,
            ids: &[],
            job: Some(job),
        };
        self.client
            .execute(&self.stmts.complete, &v.bind(&self.complete_params))
            .await
    }

    async fn flush_effects(&mut self) -> Result<(), tokio_postgres::Error> {
        if self.effects_pending.0.is_empty() {
            return Ok(());
        }
        let worker = self.id as i32;
        let (ids, attempts) = &self.effects_pending;
        self.client
            .execute(&self.stmts.effects, &[ids, &worker, attempts])
            .await?;
        self.effects_pending.0.clear();
        self.effects_pending.1.clear();
        Ok(())
    }
}

/// The values a statement's named parameters draw from.
struct Values<'a> {
    batch: i64,
    lease_secs: f64,
    worker: &'a String,
    ids: &'a [i64],
    job: Option<&'a Claimed>,
}

static NO_UUID: Option<Uuid> = None;
static NO_ID: i64 = 0;
static NO_ATTEMPT: i32 = 0;

impl<'a> Values<'a> {
    fn bind(&'a self, params: &[Param]) -> Vec<&'a (dyn ToSql + Sync)> {
        params
            .iter()
            .map(|p| -> &'a (dyn ToSql + Sync) {
                match p {
                    Param::Batch => &self.batch,
                    Param::LeaseSecs => &self.lease_secs,
                    Param::Worker => self.worker,
                    Param::Ids => &self.ids,
                    Param::Id => self.job.map_or(&NO_ID, |j| &j.id),
                    Param::Attempt => self.job.map_or(&NO_ATTEMPT, |j| &j.attempt),
                    Param::Token => self.job.map_or(&NO_UUID, |j| &j.token),
                }
            })
            .collect()
    }
}

/// SQLSTATE, or `io` when the connection itself failed.
pub fn error_code(e: &tokio_postgres::Error) -> String {
    e.code()
        .map_or_else(|| "io".to_string(), |c| c.code().to_string())
}
