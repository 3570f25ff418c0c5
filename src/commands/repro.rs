//! `queuebench repro SCENARIO`: a strategy's race as a deterministic interleaving of two
//! database connections, A and B, against a fresh schema with one waiting job:
//!
//! - a one-statement claim: A opens a transaction and claims; B claims (and waits, if A's row
//!   lock is in its way); A commits; B's claim returns. A lock-free claim hands B the job A
//!   holds (naive); `FOR UPDATE` makes B wait and then skip it; `SKIP LOCKED` skips it at once;
//! - a select-then-claim strategy: A selects, B selects, A claims, B claims;
//! - `--fencing`: A claims, pauses past its lease, the job is reclaimed, B claims it, A's late
//!   completion is sent — against each fencing mode of queuebench's own table (an adapter's own
//!   completion otherwise).
//!
//! It prints every step, the psql script that does the same by hand in two windows, and exits 1
//! when the job was handed out twice (or the scenario's fencing let a stale completion land),
//! 0 when the strategy withstood it. `--repeat N` plays it N times on the same schema.

use crate::adapter::Statement;
use crate::adapter::builtin;
use crate::adapter::keys::{Interner, Key};
use crate::db::Database;
use crate::db::schema;
use crate::error::{Error, ExitCode, Result};
use crate::model::protocol::{Fencing, Reclaim};
use crate::options::{DatabaseOptions, Target};
use crate::pipeline;
use crate::run::conn::{Conn, prepare_step};
use crate::run::steps;
use crate::run::values::{Claimed, Values};
use crate::scenario::{self, Plan};
use std::path::Path;
use std::time::Duration;

pub(crate) async fn repro(
    file: &Path,
    sets: &[String],
    fencing: bool,
    target: &Target,
    repeat: u32,
) -> Result<ExitCode> {
    let mut plan = scenario::plan_from_file(file, sets, Some(0))?;
    plan.jobs.preload = 1;
    plan.workers.batch = 1;
    let schema_name = format!("queuebench_repro_{:08x}", rand::random::<u32>());
    let opts = DatabaseOptions::new(target.clone(), Some(schema_name), false, false)?;
    let db = pipeline::open_database(&plan, &opts, "").await?;
    let result = play(&plan, &db, fencing, repeat.max(1)).await;
    let teardown = db.teardown().await;
    let code = result?;
    teardown?;
    println!(
        "\nBy hand: make a schema with the scenario's table and one waiting job,\n  \
         queuebench prepare {} --set jobs.preload=1 --set workers.batch=1 --database-url URL --schema qb_repro\n\
         then open two psql windows, run `SET search_path = qb_repro;` in each, and paste the lines of\n\
         window A and window B above in their order.",
        file.display()
    );
    Ok(code)
}

async fn play(plan: &Plan, db: &Database, fencing: bool, repeat: u32) -> Result<ExitCode> {
    let setup = pipeline::setup_of(plan);
    let client = schema::install(db, setup.as_setup(), &plan.adapter.table, &[]).await?;
    let ids = Interner::default();
    let mut bad = 0;
    for round in 1..=repeat {
        crate::run::preload::preload(&client, plan, &ids).await?;
        let verbose = round == 1;
        let hit = if fencing {
            fencing_rounds(plan, db, &client, &ids, verbose).await?
        } else {
            claim_race(plan, db, verbose).await?
        };
        bad += u32::from(hit);
    }
    let what = if fencing { "a stale completion landed" } else { "the job was handed out twice" };
    println!("\n{}: {what} in {bad} of {repeat} interleaving(s)", plan.adapter.name);
    Ok(if bad > 0 { ExitCode::ExpectationFailed } else { ExitCode::Passed })
}

async fn open(plan: &Plan, db: &Database) -> Result<Conn> {
    Conn::open(&db.worker_config(), &plan.adapter, None).await.map_err(|failure| Error::Strategy {
        strategy: plan.adapter.name.clone(),
        target: db.target.clone(),
        failure: Box::new(failure),
    })
}

fn sql_err(what: &str, e: tokio_postgres::Error) -> Error {
    Error::Database { action: what.into(), target: None, sql: crate::db::sql(&e), hint: None }
}

fn values<'a>(plan: &'a Plan, worker: &'a str) -> Values<'a> {
    let mut v = Values::new(plan);
    v.worker = worker;
    v.pool = worker;
    v
}

/// The ids a claim returned, as the queue keeps them.
fn keys(rows: &[tokio_postgres::Row], plan: &Plan, conn: &Conn) -> Vec<Key> {
    let _ = plan;
    rows.iter().filter_map(|r| r.try_get::<_, Key>(conn.columns.id).ok()).collect()
}

fn shown(k: &[Key]) -> String {
    if k.is_empty() {
        "nothing".into()
    } else {
        format!("job {}", k.iter().map(Key::show).collect::<Vec<_>>().join(", "))
    }
}

/// A and B claim at once; true when both got the same job.
async fn claim_race(plan: &Plan, db: &Database, verbose: bool) -> Result<bool> {
    let (a, b) = (open(plan, db).await?, open(plan, db).await?);
    let mut script = Vec::new();
    let (got_a, got_b) = match (&a.select, &b.select) {
        (Some(_), Some(_)) => select_then_claim(plan, (&a, &b), &mut script, verbose).await?,
        _ => one_statement(plan, (&a, &b), &mut script, verbose).await?,
    };
    let twice = got_a.iter().any(|k| got_b.contains(k));
    if verbose {
        print_script(
            &script,
            if twice { "B's claim returns the job A holds: handed out twice." } else { "B does not get A's job." },
        );
        println!(
            "{}",
            if twice {
                "→ DUPLICATE: both connections hold the same job"
            } else {
                "→ withstood: B did not get A's job"
            }
        );
    }
    Ok(twice)
}

/// The steps of a race, as psql would send them: (connection, statement).
type Script = Vec<(&'static str, String)>;

fn say(verbose: bool, line: String) {
    if verbose {
        println!("{line}");
    }
}

/// A select-then-claim strategy: A selects, B selects, A claims, B claims.
async fn select_then_claim(
    plan: &Plan,
    (a, b): (&Conn, &Conn),
    script: &mut Script,
    verbose: bool,
) -> Result<(Vec<Key>, Vec<Key>)> {
    let (mut va, mut vb) = (values(plan, "A"), values(plan, "B"));
    let (sa, sb) = (a.select.as_ref().expect("matched"), b.select.as_ref().expect("matched"));
    let rows_a = steps::rows(&a.client, sa, &va, false).await.map_err(|e| sql_err("A's select", e))?;
    let rows_b = steps::rows(&b.client, sb, &vb, false).await.map_err(|e| sql_err("B's select", e))?;
    let ids_a: Vec<i64> = rows_a.iter().map(|r| r.get(0)).collect();
    let ids_b: Vec<i64> = rows_b.iter().map(|r| r.get(0)).collect();
    say(verbose, format!("A selects: {ids_a:?}\nB selects: {ids_b:?}"));
    script.extend(lines("A", &sa.step.statements, plan, &[], Tx::Own));
    script.extend(lines("B", &sb.step.statements, plan, &[], Tx::Own));
    va.ids = &ids_a;
    vb.ids = &ids_b;
    let rows = steps::rows(&a.client, &a.claim, &va, false).await.map_err(|e| sql_err("A's claim", e))?;
    let ka = keys(&rows, plan, a);
    say(verbose, format!("A claims the ids it selected: {}", shown(&ka)));
    let rows = steps::rows(&b.client, &b.claim, &vb, false).await.map_err(|e| sql_err("B's claim", e))?;
    let kb = keys(&rows, plan, b);
    say(verbose, format!("B claims the ids it selected: {}", shown(&kb)));
    script.extend(lines("A", &a.claim.step.statements, plan, &ids_a, Tx::Own));
    script.extend(lines("B", &b.claim.step.statements, plan, &ids_b, Tx::Own));
    Ok((ka, kb))
}

/// A one-statement claim: A opens a transaction and claims; B claims (and waits, if A's row
/// lock is in its way); A commits; B's claim returns.
async fn one_statement(
    plan: &Plan,
    (a, b): (&Conn, &Conn),
    script: &mut Script,
    verbose: bool,
) -> Result<(Vec<Key>, Vec<Key>)> {
    let (va, vb) = (values(plan, "A"), values(plan, "B"));
    a.client.batch_execute("BEGIN").await.map_err(|e| sql_err("A's BEGIN", e))?;
    let rows = steps::rows(&a.client, &a.claim, &va, true).await.map_err(|e| sql_err("A's claim", e))?;
    let ka = keys(&rows, plan, a);
    say(verbose, format!("A (in an open transaction) claims: {}", shown(&ka)));
    let a_lines = lines("A", &a.claim.step.statements, plan, &[], Tx::Opened);
    script.extend_from_slice(&a_lines[..a_lines.len() - 1]);
    let b_claim = steps::rows(&b.client, &b.claim, &vb, false);
    tokio::pin!(b_claim);
    let waited = tokio::select! {
        r = &mut b_claim => Some(r),
        _ = tokio::time::sleep(Duration::from_millis(300)) => None,
    };
    // B's claim of several statements is one transaction, as the run sends it; its COMMIT
    // comes once its last statement returns, after A's.
    let b_commit = b.claim.step.statements.len() > 1;
    let b_lines = lines("B", &b.claim.step.statements, plan, &[], Tx::Opened);
    let begun = &b_lines[..b_lines.len() - 1];
    script.extend_from_slice(if b_commit { begun } else { &begun[1..] });
    if waited.is_none() {
        say(verbose, "B claims: it waits (A's row lock is in its way)".into());
    }
    a.client.batch_execute("COMMIT").await.map_err(|e| sql_err("A's COMMIT", e))?;
    say(verbose, "A commits".into());
    script.push(("A", "COMMIT".into()));
    if b_commit {
        script.push(("B", "COMMIT".into()));
    }
    let rows_b = match waited {
        Some(r) => r,
        None => b_claim.await,
    }
    .map_err(|e| sql_err("B's claim", e))?;
    let kb = keys(&rows_b, plan, b);
    say(verbose, format!("B's claim returns: {}", shown(&kb)));
    Ok((ka, kb))
}

/// How a step's statements go into the by-hand script.
#[derive(Clone, Copy)]
enum Tx {
    /// In a transaction of their own when there are several (one statement: autocommit), as
    /// the run sends a step: a claim that hands a value from one statement to the next (a
    /// transaction-local `set_config`, a lock) needs it.
    Own,
    /// Always between BEGIN and COMMIT: the caller places the COMMIT (A's open transaction).
    Opened,
}

/// A step's statements for one window, with their values written in, in its transaction.
fn lines(who: &'static str, statements: &[Statement], plan: &Plan, ids: &[i64], tx: Tx) -> Script {
    let body = statements.iter().map(|s| (who, literal(s, plan, who, ids)));
    match tx {
        Tx::Own if statements.len() == 1 => body.collect(),
        Tx::Own | Tx::Opened => std::iter::once((who, "BEGIN".to_string()))
            .chain(body)
            .chain(std::iter::once((who, "COMMIT".to_string())))
            .collect(),
    }
}

fn print_script(script: &[(&str, String)], end: &str) {
    println!("\n-- The same by hand: two psql windows in one schema (see \"By hand\" below).");
    let mut last = "";
    for (who, sql) in script {
        if *who != last {
            println!("-- window {who}");
            last = who;
        }
        println!("{};", sql.trim().trim_end_matches(';'));
    }
    println!("-- {end}");
}

/// A statement with its values written in, for psql (`:now` is the server's `now()`).
fn literal(s: &Statement, plan: &Plan, worker: &str, ids: &[i64]) -> String {
    let mut v = values(plan, worker);
    v.ids = ids;
    crate::run::literal::literal(s, &v, &[], crate::run::literal::Clock::Server)
}

/// The stale-completion interleaving against each fencing mode (queuebench's own table), or
/// the adapter's own completion; true when the scenario's own fencing let it land.
async fn fencing_rounds(
    plan: &Plan,
    db: &Database,
    client: &tokio_postgres::Client,
    ids: &Interner,
    verbose: bool,
) -> Result<bool> {
    let modes: Vec<Option<Fencing>> = if plan.adapter.own_table() {
        vec![Some(Fencing::None), Some(Fencing::Status), Some(Fencing::Attempts), Some(Fencing::Token)]
    } else {
        vec![None]
    };
    let mut own = false;
    for (i, mode) in modes.iter().enumerate() {
        if i > 0 {
            crate::run::preload::preload(client, plan, ids).await?;
        }
        let mut p = plan.clone();
        p.lease.duration = Duration::from_millis(200);
        if let Some(f) = mode {
            p.lease.fencing = *f;
            let name = &plan.adapter.name;
            let custom = std::collections::BTreeMap::new();
            if plan.adapter.builtin() {
                p.adapter = builtin::resolve(name, &custom, *f, &[])
                    .map_err(|e| Error::Flag { flag: "--fencing".into(), reason: e.to_string() })?;
            }
        }
        let late = stale_completion(&p, db, verbose && i == 0).await?;
        let landed = late == Late::Landed;
        let label = mode.map_or("the adapter's own".to_string(), |f| format!("{f:?}").to_lowercase());
        let what = match late {
            Late::Landed => "LANDED (a stale write)",
            Late::Rejected => "was rejected",
            Late::NotReclaimed => "was never needed: the job did not come back to B while A held it",
        };
        println!("  fencing {label:<9}: A's late completion {what}");
        if mode.is_none() || *mode == Some(plan.lease.fencing) {
            own |= landed;
        }
    }
    Ok(own)
}

/// What became of A's late completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Late {
    Landed,
    Rejected,
    /// The job never came back to B (the queue keeps it for A: a lock held by A's connection).
    NotReclaimed,
}

/// A claims, pauses past its 200 ms lease, the job comes back (the reclaim, or a claim that
/// takes expired leases), B claims it, A completes late.
async fn stale_completion(plan: &Plan, db: &Database, verbose: bool) -> Result<Late> {
    let (a, b) = (open(plan, db).await?, open(plan, db).await?);
    let (va, vb) = (values(plan, "A"), values(plan, "B"));
    let rows = steps::rows(&a.client, &a.claim, &va, false).await.map_err(|e| sql_err("A's claim", e))?;
    let Some(first) = rows.first() else { return Ok(Late::NotReclaimed) };
    let cols = a.columns;
    let key: Key = first.try_get(cols.id).map_err(|e| sql_err("reading A's claim", e))?;
    let attempt: Option<Key> =
        cols.attempt.map(|c| first.try_get(c)).transpose().map_err(|e| sql_err("reading A's claim", e))?;
    let token: Option<Key> = cols.token.and_then(|c| first.try_get::<_, Option<Key>>(c).ok().flatten());
    let job = Claimed {
        id: key.as_int().unwrap_or(1),
        key: key.clone(),
        attempt: attempt.as_ref().and_then(Key::as_int).map_or(-1, |a| a as i32),
        attempt_key: attempt.unwrap_or(Key::Int(-1)),
        tag: token.as_ref().map_or(0, Key::tag),
        token,
        seq: 1,
        class: 0,
        exclusion: None,
    };
    if verbose {
        println!("A claims {}; its lease is 200 ms; A pauses for 300 ms", key.show());
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The job comes back: by the reclaim (a reaper pass, again every 100 ms, as a queue's
    // maintenance would run) or by a claim that takes expired leases; B tries for up to 3 s
    // (a queue may hold a reclaimed job back for a retry backoff).
    let reclaim = match (&plan.adapter.reclaim, plan.lease.reclaim != Reclaim::Inline) {
        (Some(r), true) => Some(
            prepare_step(&b.client, r)
                .await
                .map_err(|f| Error::Machine { action: "preparing the reclaim".into(), cause: f.to_string() })?,
        ),
        _ => None,
    };
    let mut kb = Vec::new();
    for _ in 0..30 {
        if let Some(r) = &reclaim {
            steps::counted(&b.client, r, &vb, false).await.map_err(|e| sql_err("the reclaim", e))?;
        }
        kb = keys(&steps::rows(&b.client, &b.claim, &vb, false).await.map_err(|e| sql_err("B's claim", e))?, plan, &b);
        if !kb.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    if verbose {
        if reclaim.is_some() {
            println!("the reaper reclaims expired leases");
        }
        println!("B claims: {}", shown(&kb));
    }
    if !kb.contains(&key) {
        if verbose {
            println!("→ the job did not come back to B: no stale completion to send");
        }
        return Ok(Late::NotReclaimed);
    }
    let mut v = values(plan, "A");
    v.job = Some(&job);
    let landed =
        steps::write(&a.client, &a.complete, &v, false).await.map_err(|e| sql_err("A's late completion", e))?;
    if verbose {
        println!(
            "A wakes and completes: {}",
            if landed { "accepted — a stale completion landed on B's job" } else { "rejected by the fence" }
        );
    }
    Ok(if landed { Late::Landed } else { Late::Rejected })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/skip-locked.toml");
        scenario::plan_from_file(&f, &[], Some(0)).unwrap()
    }

    #[test]
    fn a_step_of_several_statements_is_one_transaction_in_the_script_and_one_statement_is_not() {
        let plan = plan();
        let one = plan.adapter.claim.statements.clone();
        let shown: Vec<String> = lines("B", &one, &plan, &[], Tx::Own).into_iter().map(|l| l.1).collect();
        assert_eq!(shown.len(), 1, "autocommit, as the run sends it: {shown:?}");
        let two: Vec<Statement> = one.iter().chain(one.iter()).cloned().collect();
        let shown: Vec<String> = lines("B", &two, &plan, &[], Tx::Own).into_iter().map(|l| l.1).collect();
        assert_eq!(shown.len(), 4, "{shown:?}");
        assert_eq!((shown[0].as_str(), shown[3].as_str()), ("BEGIN", "COMMIT"));
        assert!(shown[1].contains("'B'"), "the worker's name is written in: {}", shown[1]);
    }
}
