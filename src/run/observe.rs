//! Reading the queue through its adapter: the preload (the adapter's set-based statement, or
//! its enqueue one job at a time), and the final state the checkers read (`observe.state`,
//! mapped onto queued / running / done / failed / dead / cancelled, ids onto the journal's
//! numbers).

use super::steps;
use super::values::{Enqueue, Values};
use crate::adapter::Step;
use crate::adapter::keys::{Interner, Key};
use crate::db::{schema, sql};
use crate::error::{Error, Result};
use crate::model::records::{JobRow, Status};
use crate::scenario::Plan;
use futures_util::TryStreamExt;
use std::time::{Duration, Instant};
use tokio_postgres::{Client, Row};

fn failed(what: &str, e: &tokio_postgres::Error) -> Error {
    Error::Database { action: what.to_string(), target: None, sql: sql(e), hint: None }
}

/// Enqueues `jobs.preload` jobs, then `VACUUM ANALYZE`; returns how long the inserts took.
pub async fn preload(client: &Client, plan: &Plan, ids: &Interner) -> Result<Duration> {
    let started = Instant::now();
    let n = plan.jobs.preload;
    if n > 0 {
        let a = &plan.adapter;
        match &a.preload {
            Some(step) => {
                let mut v = Values::new(plan);
                v.enqueue.count = n as i64;
                run_step(client, step, &v).await.map_err(|e| failed("preloading jobs (the preload statement)", &e))?;
            }
            None => enqueue_each(client, plan, ids, n).await?,
        }
    }
    let took = started.elapsed();
    schema::vacuum_analyze(client, &plan.adapter.table).await?;
    Ok(took)
}

/// Every statement of a step, in one transaction when there are several.
async fn run_step(client: &Client, step: &Step, v: &Values<'_>) -> std::result::Result<(), tokio_postgres::Error> {
    if step.statements.len() > 1 {
        client.batch_execute("BEGIN").await?;
    }
    for s in &step.statements {
        client.execute_raw(&client.prepare(&s.sql).await?, v.bind(&s.params)).await?;
    }
    if step.statements.len() > 1 {
        client.batch_execute("COMMIT").await?;
    }
    Ok(())
}

/// An adapter without a set-based preload: its enqueue, one job at a time, 500 to a transaction.
async fn enqueue_each(client: &Client, plan: &Plan, ids: &Interner, n: u64) -> Result<()> {
    let step = &plan.adapter.enqueue;
    let what = "preloading jobs (the enqueue statement, one job at a time)";
    let prepared = crate::run::conn::prepare_step(client, step)
        .await
        .map_err(|f| Error::Machine { action: what.into(), cause: f.to_string() })?;
    for chunk_start in (1..=n).step_by(500) {
        client.batch_execute("BEGIN").await.map_err(|e| failed(what, &e))?;
        for k in chunk_start..(chunk_start + 500).min(n + 1) {
            let mut v = Values::new(plan);
            v.enqueue = Enqueue {
                payload: Some(serde_json::json!({ "n": k })),
                n: k as i64,
                count: 0,
                class: crate::scenario::plan::DEFAULT_CLASS,
                priority: 0,
            };
            let rows = steps::rows(client, &prepared, &v, true).await.map_err(|e| failed(what, &e))?;
            if let Some(key) = rows.first().and_then(|r| r.try_get::<_, Key>(0).ok()) {
                ids.surrogate(&key);
            }
        }
        client.batch_execute("COMMIT").await.map_err(|e| failed(what, &e))?;
    }
    Ok(())
}

/// The final table state, by the adapter's `observe.state`.
pub async fn final_state(client: &Client, plan: &Plan, ids: &Interner) -> Result<Vec<JobRow>> {
    let what = "reading the final job table (observe.state)";
    let st = &plan.adapter.observe.state;
    let prepared = client.prepare(&st.sql).await.map_err(|e| failed(what, &e))?;
    let v = Values::new(plan);
    let rows: Vec<Row> = client
        .query_raw(&prepared, v.bind(&st.params))
        .await
        .map_err(|e| failed(what, &e))?
        .try_collect()
        .await
        .map_err(|e| failed(what, &e))?;
    let column = |name: &str| prepared.columns().iter().position(|c| c.name() == name);
    let (Some(id), Some(status)) = (column("id"), column("status")) else {
        return Err(Error::Machine {
            action: what.into(),
            cause: "observe.state must return the columns `id` and `status` (and optionally attempts, max_attempts, \
                    lease_expired)"
                .into(),
        });
    };
    let (attempts, max_attempts, expired) = (column("attempts"), column("max_attempts"), column("lease_expired"));
    let int = |r: &Row, c: Option<usize>| -> Option<i32> {
        c.and_then(|c| r.try_get::<_, Option<Key>>(c).ok().flatten()).and_then(|k| k.as_int()).map(|i| i as i32)
    };
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        let key: Key = r.try_get(id).map_err(|e| failed(what, &e))?;
        let text: String = r.try_get(status).map_err(|e| failed(what, &e))?;
        let status = Status::parse_known(&text).ok_or_else(|| Error::Machine {
            action: what.into(),
            cause: format!(
                "status `{text}` (job {}); accepted: queued, running, done, failed, dead, cancelled",
                key.show()
            ),
        })?;
        out.push(JobRow {
            id: ids.surrogate(&key),
            status,
            attempts: int(r, attempts).unwrap_or(0),
            max_attempts: int(r, max_attempts).unwrap_or(i32::MAX),
            lease_expired: expired.and_then(|c| r.try_get::<_, Option<bool>>(c).ok().flatten()).unwrap_or(false),
        });
    }
    out.sort_unstable_by_key(|j| j.id);
    Ok(out)
}
