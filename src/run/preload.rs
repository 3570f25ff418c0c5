//! The preload: `jobs.preload` jobs before the workers start, by the adapter's set-based
//! statement (the built-in table's `INSERT … SELECT … generate_series`, one statement: all or
//! nothing) or, for an adapter without one, its enqueue one job at a time, 500 to a
//! transaction. Then `VACUUM ANALYZE`.
//!
//! [`preload_resuming`] survives a terminated backend or a lost connection the way workers
//! do: it reconnects within `run.reconnect_timeout`, counts the rows already committed in the
//! queue's table, puts the schema's sequences back to where they stood plus one value per
//! committed job (a failed `INSERT` consumed values: without this the built-in table's ids
//! would no longer be `1..=n`, which `verify/lost.rs` counts on), and enqueues only the rest,
//! so no job is enqueued twice. What is not covered: a lost acknowledgement of the `COMMIT`
//! of a one-at-a-time chunk whose keys are uuids or text (those 500 jobs are in the table
//! but got no number at preload time), and an adapter whose sequences do not advance by one
//! per job (their ids keep a gap).

use super::connection_lost;
use super::steps;
use super::values::{Enqueue, Values};
use crate::adapter::Step;
use crate::adapter::keys::{Interner, Key};
use crate::db::{Database, error_text, schema, sql};
use crate::error::{Error, Result};
use crate::scenario::Plan;
use std::time::{Duration, Instant};
use tokio_postgres::Client;

/// How often a preload may lose its connection before the run gives up.
const MAX_RETRIES: u32 = 20;
/// Jobs per transaction when the adapter has no set-based preload.
const CHUNK: u64 = 500;

/// Why an attempt stopped: a statement failed (maybe the connection), or something else.
enum Failure {
    Db(&'static str, tokio_postgres::Error),
    Other(Error),
}

impl Failure {
    fn into_error(self) -> Error {
        match self {
            Failure::Db(what, e) => failed(what, &e),
            Failure::Other(e) => e,
        }
    }
}

fn failed(what: &str, e: &tokio_postgres::Error) -> Error {
    Error::Database { action: what.to_string(), target: None, sql: sql(e), hint: None }
}

/// One attempt, no retry (`queuebench repro` between its rounds); returns the inserts' time.
pub(crate) async fn preload(client: &Client, plan: &Plan, ids: &Interner) -> Result<Duration> {
    let started = Instant::now();
    attempt(client, plan, ids, 0).await.map_err(Failure::into_error)?;
    let took = started.elapsed();
    schema::vacuum_analyze(client, &plan.adapter.table).await?;
    Ok(took)
}

/// The run's preload: resumes after a lost connection (see the module docs). Returns the
/// connection to go on with (a new one after a reconnect) and the inserts' time.
pub(crate) async fn preload_resuming(
    db: &Database,
    mut client: Client,
    plan: &Plan,
    ids: &Interner,
) -> Result<(Client, Duration)> {
    let started = Instant::now();
    let n = plan.jobs.preload;
    let sequences = if n > 0 { Sequences::read(&client).await? } else { Sequences::default() };
    let (mut done, mut retries) = (0, 0);
    while done < n {
        let e = match attempt(&client, plan, ids, done).await {
            Ok(()) => break,
            Err(Failure::Db(_, e)) if connection_lost(&e, &client) && retries < MAX_RETRIES => e,
            Err(f) => return Err(f.into_error()),
        };
        retries += 1;
        client = reconnect(db, plan.run.reconnect_timeout, &e).await?;
        done = count_rows(&client, &plan.adapter.table).await?;
        sequences.restore(&client, done).await?;
        eprintln!(
            "note: the preload lost its connection ({}); reconnected: {done} of {n} jobs were in, enqueuing the \
             other {} (never a job twice)",
            error_text(&e),
            n.saturating_sub(done)
        );
    }
    let took = started.elapsed();
    schema::vacuum_analyze(&client, &plan.adapter.table).await?;
    Ok((client, took))
}

/// Jobs `done + 1 ..= n`.
async fn attempt(client: &Client, plan: &Plan, ids: &Interner, done: u64) -> std::result::Result<(), Failure> {
    let n = plan.jobs.preload;
    if done >= n {
        return Ok(());
    }
    match &plan.adapter.preload {
        Some(step) => {
            let mut v = Values::new(plan);
            v.enqueue.count = (n - done) as i64;
            run_step(client, step, &v).await.map_err(|e| Failure::Db("preloading jobs (the preload statement)", e))
        }
        None => enqueue_each(client, plan, ids, done + 1..=n, &[]).await,
    }
}

/// `n` jobs through the queue's enqueue step, one at a time, job k of class `classes[(k - 1) %
/// len]` (a class name and its priority; the default class when empty): for a search that
/// needs jobs of the classes its claim takes (`explore`).
pub(crate) async fn enqueue_classes(
    client: &Client,
    plan: &Plan,
    ids: &Interner,
    n: u64,
    classes: &[(String, i32)],
) -> Result<()> {
    enqueue_each(client, plan, ids, 1..=n, classes).await.map_err(Failure::into_error)
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

/// An adapter without a set-based preload: its enqueue, one job at a time, 500 to a
/// transaction; a chunk's keys get their numbers once its COMMIT succeeded.
async fn enqueue_each(
    client: &Client,
    plan: &Plan,
    ids: &Interner,
    jobs: std::ops::RangeInclusive<u64>,
    classes: &[(String, i32)],
) -> std::result::Result<(), Failure> {
    const WHAT: &str = "preloading jobs (the enqueue statement, one job at a time)";
    let prepared = crate::run::conn::prepare_step(client, &plan.adapter.enqueue)
        .await
        .map_err(|f| Failure::Other(Error::Machine { action: WHAT.into(), cause: f.to_string() }))?;
    let (first, last) = (*jobs.start(), *jobs.end());
    for chunk_start in (first..=last).step_by(CHUNK as usize) {
        client.batch_execute("BEGIN").await.map_err(|e| Failure::Db(WHAT, e))?;
        let mut keys = Vec::new();
        for k in chunk_start..(chunk_start + CHUNK).min(last + 1) {
            let mut v = Values::new(plan);
            let (class, priority) = match classes {
                [] => (crate::scenario::plan::DEFAULT_CLASS, 0),
                _ => {
                    let (name, priority) = &classes[(k as usize - 1) % classes.len()];
                    (name.as_str(), *priority)
                }
            };
            let n = k as i64;
            let payload = Some(serde_json::json!({ "n": k }));
            v.enqueue = Enqueue { payload, n, count: 0, class, priority, unique_key: n };
            let rows = steps::rows(client, &prepared, &v, true).await.map_err(|e| Failure::Db(WHAT, e))?;
            keys.extend(rows.first().and_then(|r| r.try_get::<_, Key>(0).ok()));
        }
        client.batch_execute("COMMIT").await.map_err(|e| Failure::Db(WHAT, e))?;
        for key in &keys {
            ids.surrogate(key);
        }
    }
    Ok(())
}

/// A new setup connection within `timeout` (the server may be restarting).
async fn reconnect(db: &Database, timeout: Duration, lost: &tokio_postgres::Error) -> Result<Client> {
    let deadline = Instant::now() + timeout;
    loop {
        match db.connect().await {
            Ok(c) => return Ok(c),
            Err(e) if Instant::now() >= deadline => {
                return Err(Error::Machine {
                    action: format!(
                        "reconnecting after the preload lost its connection ({}) for {:.1} s (run.reconnect_timeout)",
                        error_text(lost),
                        timeout.as_secs_f64()
                    ),
                    cause: e.to_string(),
                });
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

async fn count_rows(client: &Client, table: &str) -> Result<u64> {
    let q = format!("SELECT count(*) FROM {}", crate::quote::ident(table));
    let row = client.query_one(&q, &[]).await.map_err(|e| failed("counting the jobs the preload left", &e))?;
    Ok(row.get::<_, i64>(0) as u64)
}

/// The run's schema's sequences as the preload found them: (name, last value, start).
#[derive(Default)]
struct Sequences(Vec<(String, Option<i64>, i64)>);

impl Sequences {
    async fn read(client: &Client) -> Result<Sequences> {
        let rows = client
            .query(
                "SELECT format('%I.%I', schemaname, sequencename), last_value, start_value \
                 FROM pg_sequences WHERE schemaname = current_schema()",
                &[],
            )
            .await
            .map_err(|e| failed("reading the schema's sequences before the preload", &e))?;
        Ok(Sequences(rows.iter().map(|r| (r.get(0), r.get(1), r.get(2))).collect()))
    }

    /// Each sequence where it stood plus `done` (one value per committed job).
    async fn restore(&self, client: &Client, done: u64) -> Result<()> {
        for (name, last, start) in &self.0 {
            let target = last.unwrap_or(start - 1) + done as i64;
            let (value, called) = if target < *start { (*start, false) } else { (target, true) };
            client
                .execute("SELECT setval($1::text::regclass, $2, $3)", &[name, &value, &called])
                .await
                .map_err(|e| failed(&format!("putting sequence {name} back after a lost preload"), &e))?;
        }
        Ok(())
    }
}
