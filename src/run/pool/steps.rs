//! The pooled transport: each step on a connection taken from the pool and given back at once;
//! the wait for it is the `acquire` latency. The round's values are encoded for sqlx by one
//! exhaustive match ([`encode`]).

use super::{ACQUIRE_TIMEOUT, OPEN_TIMEOUT, acquire_within};
use crate::adapter::keys::Key;
use crate::adapter::params::Constant;
use crate::adapter::{Accepted, Statement};
use crate::collect::Latency;
use crate::db::statements::{self, EFFECTS_INSERT};

/// The effects insert written again in place of itself (`statements::effects_again`).
static EFFECTS_AGAIN: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| statements::effects_again(true));
use crate::model::transport::{Capability, TransportKind};
use crate::run::values::{Claimed, Value, Values};
use crate::run::worker::WorkerFailure;
use crate::run::worker::transport::{Claim, Ctx, Effects, Halt, Sent, Transport, Write};
use sqlx::postgres::{PgArguments, PgRow};
use sqlx::{Arguments, AssertSqlSafe, PgPool, Row};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Why a pooled step did not land (already counted).
#[derive(Debug)]
pub(crate) struct Cut {
    /// The acquire timed out (else the statement failed).
    timed_out: bool,
}

/// A worker's view of the shared pool.
pub(crate) struct Pooled {
    pool: PgPool,
    /// sqlx's `persistent`: false through a transaction or statement pooler (the unnamed
    /// statement; sqlx still parses it in a round trip of its own before binding it).
    persistent: bool,
}

impl Pooled {
    pub(crate) fn new(pool: PgPool, persistent: bool) -> Pooled {
        Pooled { pool, persistent }
    }

    /// Counts a failed acquire or statement under its code.
    fn note(cx: &mut Ctx<'_>, e: &sqlx::Error) -> Halt<Cut> {
        let code = match e {
            sqlx::Error::PoolTimedOut => ACQUIRE_TIMEOUT.to_string(),
            sqlx::Error::Database(d) => d.code().map_or_else(|| "db".to_string(), |c| c.to_string()),
            _ => "io".to_string(),
        };
        tracing::debug!(worker = %cx.name, error = %e, "pooled step failed");
        cx.stats.record_error(&code, &e.to_string());
        cx.sh.progress.errors.fetch_add(1, Ordering::Relaxed);
        Halt::Db(Cut { timed_out: matches!(e, sqlx::Error::PoolTimedOut) })
    }

    /// `workers.pool.acquire_timeout`.
    fn acquire_limit(cx: &Ctx<'_>) -> Duration {
        cx.sh.plan.workers.pool.map_or(OPEN_TIMEOUT, |p| p.acquire_timeout)
    }

    /// A connection from the pool; the wait is recorded as `acquire` (timeouts included).
    async fn acquire(&self, cx: &mut Ctx<'_>) -> Result<sqlx::pool::PoolConnection<sqlx::Postgres>, Halt<Cut>> {
        let t = Instant::now();
        let got = tokio::select! {
            got = acquire_within(&self.pool, Self::acquire_limit(cx)) => got,
            _ = cx.sh.stop.cancelled() => return Err(Halt::Stopped),
        };
        cx.stats.record(Latency::Acquire, cx.since_start(t), t.elapsed().as_micros() as u64);
        got.map_err(|e| Self::note(cx, &e))
    }

    /// Runs `st` on a pooled connection: its rows, when it was sent and its time (µs).
    async fn fetch(
        &self,
        cx: &mut Ctx<'_>,
        st: &Statement,
        v: &Values<'_>,
    ) -> Result<(Vec<PgRow>, u64, u64), Halt<Cut>> {
        let args = args(cx, st, v)?;
        let mut conn = self.acquire(cx).await?;
        let t = Instant::now();
        let rows = sqlx::query_with(AssertSqlSafe(st.sql.as_str()), args)
            .persistent(self.persistent)
            .fetch_all(&mut *conn)
            .await;
        let took = t.elapsed().as_micros() as u64;
        drop(conn);
        rows.map(|r| (r, cx.since_start(t), took)).map_err(|e| Self::note(cx, &e))
    }

    /// A claimed row as a job, by the adapter's column names.
    fn job(cx: &Ctx<'_>, r: &PgRow) -> Result<Claimed, sqlx::Error> {
        let plan = &cx.sh.plan;
        let cols = &plan.adapter.columns;
        let id: i64 = r.try_get(cols.id.as_str())?;
        let attempt: Option<i32> = cols.attempt.as_deref().map(|c| r.try_get(c)).transpose()?;
        let token: Option<uuid::Uuid> = cols.token.as_deref().map(|c| r.try_get(c)).transpose()?.flatten();
        let class: Option<String> = cols.class.as_deref().and_then(|c| r.try_get(c).ok()).flatten();
        // The exclusion key as text, whatever its type (text or an integer).
        let exclusion = cols.exclusion_key.as_deref().and_then(|c| {
            r.try_get::<Option<String>, _>(c)
                .ok()
                .flatten()
                .or_else(|| r.try_get::<Option<i64>, _>(c).ok().flatten().map(|i| i.to_string()))
        });
        let token = token.map(Key::Uuid);
        Ok(Claimed {
            tag: token.as_ref().map_or(0, Key::tag),
            id,
            key: Key::Int(id),
            attempt: attempt.unwrap_or(-1),
            attempt_key: Key::Int(attempt.map_or(-1, i64::from)),
            token,
            seq: 0,
            class: class.and_then(|q| plan.load.classes.iter().position(|c| c.name == q)).map_or(0, |c| c as u16 + 1),
            exclusion,
        })
    }
}

/// The parameters of `st`, encoded from the round's values. A value that needs a capability
/// the pool does not declare halts the round (validation refuses such a scenario:
/// `scenario::needs`); one sqlx fails to encode counts as the statement's error.
fn args(cx: &mut Ctx<'_>, st: &Statement, v: &Values<'_>) -> Result<PgArguments, Halt<Cut>> {
    let mut a = PgArguments::default();
    for p in &st.params {
        match encode(&mut a, v.resolve(*p)) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(Pooled::note(cx, &sqlx::Error::Encode(e))),
            Err(lacks) => return Err(Halt::Lacks(lacks)),
        }
    }
    Ok(a)
}

/// One value for sqlx (sqlx's own verdict inside), or the capability it needs that the pool
/// does not have.
fn encode(a: &mut PgArguments, value: Value<'_>) -> Result<Result<(), sqlx::error::BoxDynError>, Capability> {
    let added = match value {
        Value::Int(i) => a.add(i),
        Value::Int4(i) => a.add(i),
        Value::Float(f) => a.add(f),
        Value::Text(t) => a.add(t.to_string()),
        Value::Ids(ids) => a.add(ids.to_vec()),
        Value::Key(Some(Key::Int(i))) => a.add(*i),
        Value::Key(Some(Key::Uuid(u))) => a.add(*u),
        Value::Key(Some(Key::Text(t))) => a.add(t.clone()),
        // Another type's key is an adapter queue's; `:prev.COLUMN` a step of several statements.
        Value::Key(Some(Key::Raw(..))) => return Err(Capability::AdapterQueue),
        Value::Prev => return Err(Capability::CompoundSteps),
        // A missing key binds as a NULL uuid, as the token column is.
        Value::Key(None) => a.add(Option::<uuid::Uuid>::None),
        Value::Const(Constant::Text(t)) => a.add(t.clone()),
        Value::Const(Constant::Int(i)) => a.add(*i),
        Value::Const(Constant::Float(f)) => a.add(*f),
        Value::Const(Constant::Bool(b)) => a.add(*b),
        Value::Const(
            Constant::TextArray(_)
            | Constant::IntArray(_)
            | Constant::FloatArray(_)
            | Constant::BoolArray(_)
            | Constant::Duration(_),
        ) => return Err(Capability::ArrayConstants),
        Value::Json(_) => return Err(Capability::JsonValues),
        Value::Time(_) => return Err(Capability::TimeValues),
    };
    Ok(added)
}

impl Transport for Pooled {
    type Error = Cut;
    /// No transaction is held, nothing LISTENs, no backend is a worker's own
    /// (`TransportKind::Pool`'s declaration): `begin`, `commit` and `wakeups` are the trait's.
    const KIND: TransportKind = TransportKind::Pool;

    async fn claim(&mut self, cx: &mut Ctx<'_>, v: Values<'_>, _in_tx: bool) -> Result<Claim, Halt<Cut>> {
        let plan = cx.sh.plan.clone();
        let mut v = v; // a binding of its own, so its lifetime can shrink to the ids' below
        // One statement a step (else validation refused the scenario).
        if !plan.adapter.claim.is_single() || plan.adapter.select.as_ref().is_some_and(|s| !s.is_single()) {
            return Err(Halt::Lacks(Capability::CompoundSteps));
        }
        let mut ids: Vec<i64> = Vec::new();
        let mut select_us = 0;
        if let Some(select) = &plan.adapter.select {
            let (rows, t0_us, took) = self.fetch(cx, select.first(), &v).await?;
            ids = rows.iter().filter_map(|r| r.try_get::<i64, _>(0).ok()).collect();
            if ids.is_empty() {
                return Ok(Claim { jobs: Vec::new(), t0_us, took_us: took });
            }
            select_us = took;
        }
        v.ids = &ids;
        let (rows, t0_us, took) = self.fetch(cx, plan.adapter.claim.first(), &v).await?;
        let mut jobs = Vec::with_capacity(rows.len());
        for r in &rows {
            jobs.push(Self::job(cx, r).map_err(|e| Self::note(cx, &e))?);
        }
        Ok(Claim { jobs, t0_us, took_us: select_us + took })
    }

    async fn write(&mut self, cx: &mut Ctx<'_>, what: Write, v: &Values<'_>, _in_tx: bool) -> Result<Sent, Halt<Cut>> {
        let plan = cx.sh.plan.clone();
        let step = match what {
            Write::Complete => &plan.adapter.complete,
            Write::Fail => plan.adapter.fail.as_ref().expect("validated: a failing job type needs the adapter's fail"),
            Write::Heartbeat => plan.adapter.heartbeat.as_ref().expect("validated: lease.heartbeat needs a heartbeat"),
        };
        // Judged by its row count, one statement (else validation refused the scenario).
        if !step.is_single() || step.accepted != Accepted::Rows {
            return Err(Halt::Lacks(Capability::CompoundSteps));
        }
        let st = step.first();
        let args = args(cx, st, v)?;
        let mut conn = self.acquire(cx).await?;
        let t = Instant::now();
        let done = sqlx::query_with(AssertSqlSafe(st.sql.as_str()), args)
            .persistent(self.persistent)
            .execute(&mut *conn)
            .await;
        let took_us = t.elapsed().as_micros() as u64;
        drop(conn);
        let done = done.map_err(|e| Self::note(cx, &e))?;
        Ok(Sent { accepted: done.rows_affected() > 0, t_us: cx.since_start(t), took_us, token: None })
    }

    async fn anything_left(&mut self, cx: &mut Ctx<'_>, v: &Values<'_>) -> Result<bool, Halt<Cut>> {
        let plan = cx.sh.plan.clone();
        let (rows, _, _) = self.fetch(cx, &plan.adapter.observe.remaining, v).await?;
        Ok(rows
            .first()
            .is_some_and(|r| r.try_get::<bool, _>(0).unwrap_or_else(|_| r.try_get::<i64, _>(0).is_ok_and(|n| n > 0))))
    }

    /// The executions in one insert (kept for later on a failure). The last flush (`last`) is
    /// not cut short by the stop and waits out acquire timeouts (up to
    /// `run.reconnect_timeout`), so the run's last executions still get their witness.
    async fn flush_effects(&mut self, cx: &mut Ctx<'_>, e: &mut Effects, last: bool) -> Result<(), Halt<Cut>> {
        if e.ids.is_empty() {
            return Ok(());
        }
        let began = Instant::now();
        let got = loop {
            match acquire_within(&self.pool, Self::acquire_limit(cx)).await {
                Err(err @ sqlx::Error::PoolTimedOut) if last && began.elapsed() < cx.sh.plan.run.reconnect_timeout => {
                    let _ = Self::note(cx, &err);
                }
                other => break other,
            }
        };
        // A failed flush is counted and kept for the next one: the round goes on.
        let Ok(mut conn) = got.map_err(|err| Self::note(cx, &err)) else { return Ok(()) };
        let batch = e.name_batch(cx.id);
        let sql = if e.again { EFFECTS_AGAIN.as_str() } else { EFFECTS_INSERT };
        let q = sqlx::query(sql).bind(&e.ids).bind(cx.id as i32).bind(&e.attempts).bind(batch);
        let q = q.persistent(self.persistent && !e.again);
        match q.execute(&mut *conn).await {
            Ok(_) => e.clear(),
            Err(err) => {
                // It may have landed all the same: the next write replaces it.
                e.again = true;
                drop(conn);
                let _ = Self::note(cx, &err);
            }
        }
        Ok(())
    }

    /// A statement error (the server going away …): a moment's pause, so the worker does not
    /// spin on it; an acquire timeout needs none.
    async fn recover(&mut self, cx: &mut Ctx<'_>, e: &Cut, _hold: bool) -> Result<(), WorkerFailure> {
        if !e.timed_out {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(20)) => {}
                _ = cx.sh.stop.cancelled() => {}
            }
        }
        Ok(())
    }

    fn resend(&self, e: &Cut, _resends: u32, _hold: bool) -> bool {
        e.timed_out
    }

    /// The pool's connections are the pool's: a crashed worker lets its job go and closes none.
    fn crash(&mut self, _cx: &mut Ctx<'_>) {}

    async fn reopen(&mut self, _cx: &mut Ctx<'_>) -> Result<(), WorkerFailure> {
        Ok(())
    }

    fn is_open(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value the pool cannot bind is the capability it needs, never a panic.
    #[test]
    fn a_value_the_pool_cannot_bind_names_its_capability() {
        let mut a = PgArguments::default();
        let json = serde_json::json!({"a": 1});
        let ints = Constant::IntArray(vec![1]);
        let raw = Key::Raw(tokio_postgres::types::Type::NUMERIC, Vec::new());
        let cases = [
            (Value::Json(Some(&json)), Capability::JsonValues),
            (Value::Time(std::time::SystemTime::now()), Capability::TimeValues),
            (Value::Prev, Capability::CompoundSteps),
            (Value::Const(&ints), Capability::ArrayConstants),
            (Value::Key(Some(&raw)), Capability::AdapterQueue),
        ];
        for (value, capability) in cases {
            assert_eq!(encode(&mut a, value).err(), Some(capability));
            assert!(!TransportKind::Pool.can(capability), "{} is refused up front", capability.name());
        }
        assert!(matches!(encode(&mut a, Value::Int(1)), Ok(Ok(()))));
        assert!(matches!(encode(&mut a, Value::Key(None)), Ok(Ok(()))));
    }
}
