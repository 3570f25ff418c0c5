//! Process clients (`client = "…"`, `docs/clients.md`): a real queue library's workers as
//! child processes (`clients/<name>/run work`, contract in `clients/CONTRACT.md`). The preload
//! goes through the client's `enqueue.sql`; the run ends when every job has an effect row (or
//! the library's queue holds nothing left to do) or at the timeout, with SIGTERM; the evidence
//! is the effects table, the event lines and the process faults, turned into the journal the
//! checkers read (`journal.rs`). The final state is read by the paired adapter's observer
//! query, as for SQL workers.

pub(crate) mod child;
pub(crate) mod fleet;
pub(crate) mod journal;

use super::RunOutput;
use crate::adapter::keys::Interner;
use crate::db::Database;
use crate::error::{Error, Result};
use crate::scenario::client::ClientPlan;
use crate::scenario::{Plan, Stop};
use child::Env;
use fleet::{Fleet, now_ms};
use journal::{Effect, key_of};
use rand::SeedableRng;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_postgres::Client;
use tokio_util::sync::CancellationToken;

/// The queue every client uses (the contract's `QUEUEBENCH_QUEUE` default; setup creates it).
pub(crate) const QUEUE: &str = "queuebench";
/// With nothing recorded this long (or by the timeout, if sooner), the client is broken.
const STARTUP_LIMIT: Duration = Duration::from_secs(30);

fn db_error(action: &str, e: &tokio_postgres::Error) -> Error {
    Error::Database { action: action.into(), target: None, sql: crate::db::sql(e), hint: None }
}

/// Enqueues `jobs.preload` jobs through the client's `enqueue.sql` (payload `{"n", "work_ms"}`,
/// `work_ms` drawn from the scenario's work model with its seed), 500 to a transaction.
pub(crate) async fn preload(
    client: &Client,
    plan: &Plan,
    c: &ClientPlan,
    schema: &str,
    ids: &Interner,
) -> Result<Duration> {
    let started = Instant::now();
    let what = format!("enqueueing through {}", c.dir.join("enqueue.sql").display());
    // `{schema}` stands where a name goes (`{schema}.job`, `SET search_path TO {schema}`).
    let quoted = crate::quote::ident(schema);
    for s in &c.enqueue.session {
        client.batch_execute(&s.replace("{schema}", &quoted)).await.map_err(|e| db_error(&what, &e))?;
    }
    let sql = c.enqueue.statement.replace("{schema}", &quoted);
    let types = [tokio_postgres::types::Type::TEXT, tokio_postgres::types::Type::TEXT];
    let stmt = client.prepare_typed(&sql, &types).await.map_err(|e| db_error(&what, &e))?;
    let mut rng = rand::rngs::StdRng::seed_from_u64(plan.seed);
    let n = plan.jobs.preload;
    for chunk in (1..=n).step_by(500) {
        client.batch_execute("BEGIN").await.map_err(|e| db_error(&what, &e))?;
        for k in chunk..(chunk + 500).min(n + 1) {
            let work_ms = super::work::sample(&plan.workers.work, &mut rng).as_secs_f64() * 1000.0;
            let payload = serde_json::json!({ "n": k, "work_ms": work_ms }).to_string();
            let row = client.query_one(&stmt, &[&QUEUE, &payload]).await.map_err(|e| db_error(&what, &e))?;
            let id: String = row.try_get(0).map_err(|e| db_error(&what, &e))?;
            ids.surrogate(&key_of(&id));
        }
        client.batch_execute("COMMIT").await.map_err(|e| db_error(&what, &e))?;
    }
    Ok(started.elapsed())
}

/// Runs the client's worker processes until drained, the timeout or Ctrl-C.
pub(crate) async fn run(
    plan: &Plan,
    db: &Database,
    interrupt: &CancellationToken,
    ids: Arc<Interner>,
) -> Result<RunOutput> {
    let c = plan.client.as_ref().expect("a client plan");
    let side = db.connect().await?;
    let url = db.run_url();
    let env = Env { url: &url, schema: &db.schema, queue: QUEUE };
    let (start, start_ms) = (Instant::now(), now_ms());
    let mut fleet = Fleet::start(c, env, plan.workers.count)?;
    // The Postgres sampler runs beside the library's workers as beside queuebench's own: the
    // depth (the paired adapter's `observe.depth`), dead tuples, the horizon, the waits. So does
    // the claim-plan probe (`run.plan_probe`), with the paired adapter's claim: its transcription
    // of the library's claim, on the library's own tables — not the statement the library's
    // workers send, which queuebench does not see (the report says so).
    let (sampler_stop, progress) = (CancellationToken::new(), super::worker::Progress::default());
    let config = db.side_config();
    let opts = super::sampler::SamplerOptions { progress: false };
    let sampling = super::sampler::run(plan, &config, start, &progress, opts, &sampler_stop);
    let probing = super::horizon::probe(plan, &config, start, &sampler_stop);
    let driving = async {
        let outcome = drive(plan, &mut fleet, &side, interrupt, &ids).await;
        sampler_stop.cancel();
        outcome
    };
    let (outcome, samples, probes) = tokio::join!(driving, sampling, probing);
    fleet.stop().await;
    // A killed process's statement runs on in the server until it ends (pg_sleep, a lock
    // wait): its backend is terminated, so none is left for the teardown to wait on.
    let backends = super::cancel::Backends::of(db).with_clients();
    backends.end(super::cancel::How::Terminate, &[], "after the client's workers stopped").await;
    let timed_out = outcome?;
    let duration = start.elapsed();
    let effects = read_effects(&side).await?;
    let events: Vec<child::ClientEvent> = fleet.events.iter().flat_map(|e| e.lock().unwrap().clone()).collect();
    // The library's table as the paired adapter reads it (again, for the checkers, after this):
    // an `end` line it contradicts is a completion that did not land.
    let finals = match super::observe::final_state(&side, plan, &ids).await {
        Ok(rows) => rows,
        Err(e) => {
            eprintln!("warning: reading the library's table for the journal: {e}");
            Vec::new()
        }
    };
    let (journal, stats) = journal::build(start_ms, &events, &effects, &fleet.killed, &ids, &finals);
    Ok(RunOutput {
        stats,
        latency: Default::default(),
        journal,
        faults: std::mem::take(&mut fleet.faults),
        effects_unwritten: 0,
        reaper: Default::default(),
        arrivals: Vec::new(),
        unsent: 0,
        producer_errors: 0,
        deduplicated: 0,
        unique_keys: Vec::new(),
        samples,
        horizon: super::horizon::HorizonOutput { probes, ..Default::default() },
        duration,
        stopped_us: (timed_out || interrupt.is_cancelled()).then_some(duration.as_micros() as u64),
        interrupted: interrupt.is_cancelled(),
        timed_out,
        failures: Vec::new(),
        probe: None,
        aborted: None,
        database_lost: None,
        ids,
        restarts: Vec::new(),
        failovers: Vec::new(),
        agents: Vec::new(),
        merge_s: 0.0,
        merge_peak_rss_mib: 0.0,
        network: Vec::new(),
    })
}

/// The loop: every 100 ms restarts, resumes and faults; every 250 ms the drained check.
/// Returns whether the timeout ended the run.
async fn drive(
    plan: &Plan,
    fleet: &mut Fleet<'_>,
    side: &Client,
    interrupt: &CancellationToken,
    ids: &Interner,
) -> Result<bool> {
    let c = plan.client.as_ref().expect("a client plan");
    let start = Instant::now();
    let startup = STARTUP_LIMIT.min(plan.run.timeout);
    let job_of = |j: &str| ids.surrogate(&key_of(j));
    let mut executed = 0u64;
    let mut last_check = Instant::now() - Duration::from_secs(1);
    loop {
        if interrupt.is_cancelled() {
            return Ok(false);
        }
        if last_check.elapsed() >= Duration::from_millis(250) {
            last_check = Instant::now();
            let (ran, remaining) = progress(side, plan).await?;
            executed = ran;
            if plan.run.stop == Stop::Drained && (ran >= plan.jobs.preload || remaining == 0) {
                return Ok(false);
            }
        }
        if executed == 0 && start.elapsed() >= startup {
            return Err(Error::Machine {
                action: format!("running the client's worker `{}`", child::shown(c)),
                cause: format!(
                    "no job recorded an execution in {} s (no row in queuebench_effects): the worker runs but \
                     does not take jobs from queue `{QUEUE}` or does not write its effect rows (clients/CONTRACT.md, \
                     \"The job handler\")",
                    startup.as_secs()
                ),
            });
        }
        // `run.stop` counts from the first execution, as the faults' times do (Fleet::ready).
        if let Stop::After(d) = plan.run.stop
            && fleet.ready.is_some_and(|r| r.elapsed() >= d)
        {
            return Ok(false);
        }
        if start.elapsed() >= plan.run.timeout {
            return Ok(true);
        }
        fleet.tend(executed > 0, job_of)?;
        fleet.inject(side, job_of).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Distinct jobs with an effect row, and the library's own count of jobs left to do.
async fn progress(side: &Client, plan: &Plan) -> Result<(u64, i64)> {
    let what = "checking progress (queuebench_effects, observe.remaining)";
    let row = side
        .query_one("SELECT count(DISTINCT job_id) FROM queuebench_effects", &[])
        .await
        .map_err(|e| db_error(what, &e))?;
    let ran = row.get::<_, i64>(0) as u64;
    let remaining = &plan.adapter.observe.remaining;
    let left = match side.query_one(remaining.sql.as_str(), &[]).await {
        Ok(r) => match r.try_get::<_, i64>(0) {
            Ok(n) => n,
            Err(_) => i64::from(r.try_get::<_, bool>(0).unwrap_or(true)),
        },
        Err(_) => 1,
    };
    Ok((ran, left))
}

async fn read_effects(side: &Client) -> Result<Vec<Effect>> {
    let sql = "SELECT job_id, worker, attempt, (extract(epoch FROM at) * 1000)::float8 FROM queuebench_effects \
               ORDER BY at";
    let rows = side.query(sql, &[]).await.map_err(|e| db_error("reading queuebench_effects", &e))?;
    Ok(rows
        .iter()
        .map(|r| Effect {
            job_id: r.get::<_, Option<String>>(0).unwrap_or_default(),
            worker: r.get::<_, Option<String>>(1).unwrap_or_default(),
            attempt: r.get(2),
            at_ms: r.get(3),
        })
        .collect())
}
