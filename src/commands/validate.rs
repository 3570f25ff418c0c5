//! `queuebench validate FILE…`: scenario files checked without running them. A scenario with
//! SQL of its own (a `[strategies]` claim, an adapter) is also proved against a server: its
//! setup runs in a scratch schema (an ephemeral cluster, or `--database-url`) and every
//! statement is prepared there, so a syntax error, an unknown column or a claim that lacks a
//! column the other statements bind is exit 2 before any run. The setup and the statements run
//! in one transaction that is rolled back, so what the setup writes, in the scratch schema or
//! outside it, does not stay; the schema is dropped after. Inside that transaction the
//! statements then run once with real values (`cycle`: enqueue, claim, heartbeat, complete,
//! fail, reclaim, cancel, the observer queries), which refuses an observer status no checker
//! knows and warns about a claim that takes no lock.

mod cycle;

use crate::db::schema;
use crate::error::{Error, ExitCode, Result};
use crate::options::{DatabaseOptions, Target};
use crate::run::conn::{claim_columns, prepare_step};
use crate::scenario::{self, Plan};
use crate::{pipeline, run};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// `limit`: how long proving one file's SQL may take (`--timeout`); `interrupt`: a signal, which
/// ends the proof the same way and then validate (exit 130).
pub(crate) async fn validate(
    files: &[PathBuf],
    sets: &[String],
    target: &Target,
    limit: Duration,
    interrupt: &CancellationToken,
) -> Result<ExitCode> {
    let mut worst = ExitCode::Passed;
    for f in files {
        let checked = match scenario::plan_from_file(f, sets, Some(0)) {
            Ok(p) => fits(&p, target).await.map(|()| p),
            Err(e) => Err(e),
        };
        let checked = match checked {
            Ok(p) if p.adapter.builtin() => Ok((p, None)),
            Ok(p) => prove(&p, target, limit, interrupt).await.map(|c| (p, Some(c))),
            Err(e) => Err(e),
        };
        if interrupt.is_cancelled() {
            return Ok(ExitCode::Interrupted);
        }
        match checked {
            Ok((p, cycle)) => {
                for w in cycle.iter().flat_map(|c| &c.warnings) {
                    eprintln!("warning: {}: {w}", f.display());
                }
                let what = if p.adapter.own_table() { "strategy" } else { "adapter" };
                let proved = match cycle {
                    Some(c) => format!(", its SQL prepared and run once: {}", c.ran.join(", ")),
                    None => String::new(),
                };
                println!(
                    "{}: ok ({} · {} · {what} {}{proved})",
                    f.display(),
                    p.name,
                    crate::model::words::count(p.workers.count, "worker"),
                    p.adapter.name
                );
                let clocked = crate::run::literal::clocked_statements(&p.adapter);
                if !clocked.is_empty() {
                    println!(
                        "  the server's clock is read by: {} (explore writes its virtual clock in their place)",
                        clocked.join("; ")
                    );
                }
            }
            Err(e) => {
                eprintln!("error: {e}");
                worst = worst.worst(e.exit_code());
            }
        }
    }
    Ok(worst)
}

/// What a run checks before it starts: the target can take the plan's faults, the machine its
/// open files and memory, and (with --database-url) the server its connections.
async fn fits(plan: &Plan, target: &Target) -> Result<()> {
    pipeline::check_target(plan, target)?;
    pipeline::check_limits(plan)?;
    pipeline::check_free_connections(plan, target).await
}

/// Runs the plan's setup in a scratch schema, prepares every statement there and runs the
/// smoke cycle.
async fn prove(plan: &Plan, target: &Target, limit: Duration, interrupt: &CancellationToken) -> Result<cycle::Cycle> {
    let schema = format!("queuebench_validate_{:08x}", rand::random::<u32>());
    let opts = DatabaseOptions::new(target.clone(), Some(schema), false, false)?;
    let db = pipeline::open_database(plan, &opts, "").await?;
    let result = prove_within(plan, &db, limit, interrupt).await;
    let teardown = db.teardown().await;
    let cycle = result?;
    teardown.map(|()| cycle)
}

/// [`prove_in`], bounded: at `limit` (or a signal) the statement it waits on is cancelled, then
/// its backend terminated (`run::cancel`), and a proof cut short by the limit is this file's
/// failure (exit 2).
async fn prove_within(
    plan: &Plan,
    db: &crate::db::Database,
    limit: Duration,
    interrupt: &CancellationToken,
) -> Result<cycle::Cycle> {
    let (expired, dropped) = (AtomicBool::new(false), CancellationToken::new());
    let work = async {
        tokio::select! {
            proved = prove_in(plan, db) => Some(proved),
            () = dropped.cancelled() => None,
        }
    };
    let stopped = async {
        tokio::select! {
            () = tokio::time::sleep(limit) => expired.store(true, Ordering::Relaxed),
            () = interrupt.cancelled() => {}
        }
    };
    let backends = run::cancel::Backends::of(db);
    let who = "validate's proof";
    let proved = run::cancel::bounded(work, stopped, &backends, &[], who, || dropped.cancel()).await;
    match proved {
        Some(proved) if !expired.load(Ordering::Relaxed) => proved,
        _ => Err(Error::ScenarioFile {
            file: plan.source.path.clone(),
            sets: plan.source.overrides.clone(),
            reason: format!(
                "proving its SQL (setup, prepare, one smoke cycle) did not finish within {} (validate --timeout): \
                 a statement waited on the server that long (pg_sleep, a lock, a slow setup), and was cancelled. A \
                 claim that waits like this stalls every round of a run too; raise --timeout if the setup is slow",
                crate::scenario::units::format_duration(limit)
            ),
        }),
    }
}

/// The setup and every statement inside one transaction that is rolled back: what an adapter's
/// setup writes, in the scratch schema or outside it (a `public` table), is undone.
async fn prove_in(plan: &Plan, db: &crate::db::Database) -> Result<cycle::Cycle> {
    let setup = pipeline::setup_of(plan);
    let client = schema::create(db).await?;
    let (role, superuser) = crate::db::role::current(&client).await;
    // At the queue's isolation level (`[drive] isolation`), as its workers run.
    for begin in [plan.adapter.drive.isolation.begin_sql(), "SET LOCAL queuebench.validating = 'yes'"] {
        client.batch_execute(begin).await.map_err(|e| db_error(begin, &e))?;
    }
    let proved = match prove_statements(plan, db, &client, setup.as_setup()).await {
        Ok(steps) => cycle::run(plan, &client, &steps).await,
        Err(e) => Err(e),
    };
    let still_open = still_validating(&client).await;
    let _ = client.batch_execute("ROLLBACK").await;
    if proved.is_ok() && !still_open {
        return Err(setup_ended_transaction(plan));
    }
    proved.map(|mut cycle| {
        if superuser == Some(true) {
            cycle.warnings.push(format!(
                "role {role} is a superuser: the scenario's SQL ran with every privilege (COPY … TO PROGRAM \
                 included); use a role that owns only its schema (docs/safety.md, \"Who runs what\")"
            ));
        }
        cycle
    })
}

/// Whether the transaction validate opened is still the one it is in (a setup's `COMMIT` ends it).
async fn still_validating(client: &tokio_postgres::Client) -> bool {
    let open = client.query_one("SELECT current_setting('queuebench.validating', true)", &[]).await;
    matches!(&open, Ok(row) if row.get::<_, Option<String>>(0).as_deref() == Some("yes"))
}

fn setup_ended_transaction(plan: &Plan) -> Error {
    Error::ScenarioFile {
        file: plan.source.path.clone(),
        sets: plan.source.overrides.clone(),
        reason: "the adapter's setup ends the transaction validate runs it in (a COMMIT or ROLLBACK in its SQL): \
                 validate proves an adapter inside a transaction it rolls back, so that nothing it writes stays; \
                 what came before that COMMIT was committed. Take transaction control out of the setup"
            .into(),
    }
}

/// The setup, then every statement prepared: the steps the cycle runs.
async fn prove_statements(
    plan: &Plan,
    db: &crate::db::Database,
    client: &tokio_postgres::Client,
    setup: schema::Setup<'_>,
) -> Result<cycle::Steps> {
    // A setup command (the library's own migrations) runs on connections of its own, outside
    // this transaction: it is given the scratch schema, which is dropped after.
    schema::run_setup(db, client, setup, &plan.adapter.table, &[]).await.map_err(|e| wrong(plan, e))?;
    let a = &plan.adapter;
    if let Some(init) = &a.on_connect {
        client.batch_execute(init).await.map_err(|e| wrong(plan, db_error("the adapter's on_connect", &e)))?;
    }
    // Preparing a statement takes its tables' locks (a `FOR UPDATE` anywhere: a RowShareLock)
    // until the transaction ends; inside a savepoint rolled back after, they are let go, so the
    // cycle's lock check sees only what the claim itself takes. The statements stay prepared.
    if !still_validating(client).await {
        return Err(setup_ended_transaction(plan));
    }
    let savepoint = "SAVEPOINT queuebench_prepare";
    client.batch_execute(savepoint).await.map_err(|e| wrong(plan, db_error(savepoint, &e)))?;
    let steps = prepare_all(plan, client).await?;
    let back = "ROLLBACK TO SAVEPOINT queuebench_prepare; RELEASE SAVEPOINT queuebench_prepare";
    client.batch_execute(back).await.map_err(|e| wrong(plan, db_error(back, &e)))?;
    Ok(steps)
}

/// Every statement of the adapter prepared on `client`: the steps the cycle runs.
async fn prepare_all(plan: &Plan, client: &tokio_postgres::Client) -> Result<cycle::Steps> {
    let a = &plan.adapter;
    let worker = |s: crate::error::SessionFailure| Error::ScenarioFile {
        file: plan.source.path.clone(),
        sets: plan.source.overrides.clone(),
        reason: s.to_string(),
    };
    let prepare = async |step: &crate::adapter::Step| prepare_step(client, step).await.map_err(worker);
    let optional = async |step: &Option<crate::adapter::Step>| match step {
        Some(s) => prepare(s).await.map(Some),
        None => Ok(None),
    };
    let select = optional(&a.select).await?;
    let claim = prepare(&a.claim).await?;
    let heartbeat = optional(&a.heartbeat).await?;
    let complete = prepare(&a.complete).await?;
    let fail = optional(&a.fail).await?;
    let reclaim = optional(&a.reclaim).await?;
    let cancel = optional(&a.cancel).await?;
    let enqueue = prepare(&a.enqueue).await?;
    run::producer::unique_key_returned(&enqueue, a).map_err(worker)?;
    let preload = optional(&a.preload).await?;
    for st in [&a.observe.state, &a.observe.remaining].into_iter().chain(&a.observe.depth) {
        client.prepare(&st.sql).await.map_err(|e| {
            let what = format!("preparing the observer query ({})\n  SQL: {}", cycle::first_words(&st.text), st.sql);
            wrong(plan, db_error(&what, &e))
        })?;
    }
    let columns = claim_columns(claim.last(), select.as_ref().map(run::conn::Prepared::last), a)
        .map_err(|e| worker(crate::error::SessionFailure::Statements(e)))?;
    // `[result] successor` is looked for in every statement of the fail step, as a run does.
    let fail_successor =
        fail.as_ref().map(|f| run::conn::successor_column(f, a)).transpose().map_err(worker)?.flatten();
    Ok(cycle::Steps {
        select,
        claim,
        complete,
        fail,
        heartbeat,
        reclaim,
        cancel,
        enqueue,
        preload,
        columns,
        fail_successor,
    })
}

/// The scenario's own SQL is wrong: exit 2, naming the scenario.
fn wrong(plan: &Plan, e: Error) -> Error {
    match e {
        Error::Database { .. } | Error::Machine { .. } => Error::ScenarioFile {
            file: plan.source.path.clone(),
            sets: plan.source.overrides.clone(),
            reason: e.to_string(),
        },
        other => other,
    }
}

fn db_error(action: &str, e: &tokio_postgres::Error) -> Error {
    Error::Database { action: action.to_string(), target: None, sql: crate::db::sql(e), hint: None }
}
