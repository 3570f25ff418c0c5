//! `queuebench explore FILE`: every interleaving of a queue's SQL, statement by statement, on a
//! real PostgreSQL, up to a bound, and the shortest schedule that breaks a property the run's
//! checkers judge (exactly once, stale completions, ownership, attempts).
//!
//! - `protocol`: the actors (2–3 workers, a reaper) and the faults (the virtual clock past the
//!   lease, a crash) as a state machine: what is enabled, what text a step sends;
//! - `session`: one connection per actor, each statement on a task of its own so a lock wait
//!   is part of the schedule (`pg_blocking_pids`), and the reset between schedules;
//! - `search`: iterative deepening with replay, and the reduction of equal states;
//! - `verdict`: a schedule's journal judged by `verify`;
//! - `script`: the counterexample as numbered steps and as a psql script, one window a session.

mod protocol;
mod script;
mod search;
mod session;
mod snapshot;
mod verdict;

use crate::db::schema;
use crate::error::{Error, ExitCode, Result};
use crate::options::{DatabaseOptions, Target};
use crate::pipeline;
use crate::scenario::{self, Plan};
use protocol::{Cast, Faults, Model};
use search::{Bounds, Search};
use session::Sessions;
use snapshot::Snapshot;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// 2100-01-01 00:00:00 UTC, where the virtual clock starts: past any real instant, so the
/// preload's jobs are due however long the search runs, and a printed script replays by hand
/// on another day.
const VIRTUAL_START: u64 = 4_102_444_800;

/// What `explore` searches, from its command line.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub sessions: usize,
    pub jobs: u32,
    pub depth: usize,
    pub time: Duration,
    pub reduce: bool,
    /// Leave each new state to itself and judge the liveness checks.
    pub liveness: bool,
    pub reaper: bool,
    pub ticks: u32,
    pub crashes: u32,
    pub heartbeats: u32,
    pub fail: bool,
    /// A canceller session cancels the first job (the adapter's cancel step).
    pub cancel: bool,
    /// A producer session enqueues one more job during the schedule.
    pub producer: bool,
    pub out: Option<PathBuf>,
}

pub(crate) async fn explore(file: &Path, sets: &[String], target: &Target, o: &Options) -> Result<ExitCode> {
    if !(2..=3).contains(&o.sessions) {
        return Err(Error::Flag { flag: "--sessions".into(), reason: "takes 2 or 3 worker sessions".into() });
    }
    if !(1..=2).contains(&o.jobs) {
        return Err(Error::Flag { flag: "--jobs".into(), reason: "takes 1 or 2 jobs".into() });
    }
    if let Some(out) = &o.out {
        pipeline::check_output_folder(out, false)?;
    }
    let mut plan = scenario::plan_from_file(file, sets, Some(0))?;
    if o.cancel && plan.adapter.cancel.is_none() {
        return Err(Error::Flag {
            flag: "--cancel".into(),
            reason: "the queue has no cancel step (a [cancel] in the adapter, or a built-in strategy)".into(),
        });
    }
    plan.jobs.preload = u64::from(o.jobs);
    plan.workers.batch = 1;
    let schema_name = format!("queuebench_explore_{:08x}", rand::random::<u32>());
    let opts = DatabaseOptions::new(target.clone(), Some(schema_name), false, false)?;
    let db = pipeline::open_database(&plan, &opts, "").await?;
    let result = search_on(&plan, &db, o).await;
    let teardown = db.teardown().await;
    let code = result?;
    teardown?;
    Ok(code)
}

async fn search_on(plan: &Plan, db: &crate::db::Database, o: &Options) -> Result<ExitCode> {
    let setup = pipeline::setup_of(plan);
    let client = schema::install(db, setup.as_setup(), &plan.adapter.table, &[]).await?;
    let ids = crate::adapter::keys::Interner::default();
    let classes = classes_claimed(plan);
    if classes.is_empty() {
        crate::run::preload::preload(&client, plan, &ids).await?;
    } else {
        crate::run::preload::enqueue_classes(&client, plan, &ids, plan.jobs.preload, &classes).await?;
    }
    let reaper = o.reaper && Model::has_reaper(plan);
    let cancel = if o.cancel { Some(first_job(plan, &client).await?) } else { None };
    let actors = o.sessions + usize::from(reaper) + usize::from(cancel.is_some()) + usize::from(o.producer);
    let sessions = Sessions::open(db, plan.adapter.on_connect.as_deref(), actors).await?;
    let snapshot = Snapshot::take(sessions.monitor()).await?;
    let faults = Faults { ticks: o.ticks, crashes: o.crashes, heartbeats: o.heartbeats, fail: o.fail };
    let bounds = Bounds { depth: o.depth, time: o.time, reduce: o.reduce, faults, liveness: o.liveness };
    print_header(plan, o, reaper);
    let started = Instant::now();
    let cast = Cast { workers: o.sessions, reaper, cancel, producer: o.producer };
    let mut search = Search::new(plan, sessions, snapshot, bounds, cast);
    let found = search.run().await?;
    let took = started.elapsed();
    let s = &search.stats;
    let rate = s.schedules as f64 / took.as_secs_f64().max(1e-9);
    let per_reset = s.reset_time.as_secs_f64() * 1e3 / s.resets.max(1) as f64;
    let factor = s.covered / (s.schedules.max(1) as f64);
    let tally = format!(
        "{} schedules run, standing for at least {:.0} without reduction (×{factor:.1}); {} distinct states; {} steps sent, {:.1} s: \
         {rate:.0} schedules/s, reset {per_reset:.2} ms",
        s.schedules,
        s.covered,
        s.states,
        s.steps,
        took.as_secs_f64()
    );
    tracing::info!(
        reset = ?s.reset_time, steps = ?s.exec_time, judge = ?s.judge_time, key = ?s.key_time,
        "explore: where the time went"
    );
    match found {
        Some(f) => {
            let mut text = script::steps(&f, plan);
            let lane = script::swimlane(&f, plan);
            // The story's words for the job; "ran exactly once" is no cause of a cancelled job run.
            for cause in lane.iter().flat_map(|l| &l.causes).filter(|c| c.as_str() != "ran exactly once") {
                text.push_str(&format!("  cause: {cause}\n"));
            }
            let sql = script::psql(&f, plan);
            println!("{text}\n{sql}");
            println!("{tally}");
            if let Some(out) = &o.out {
                crate::files::write_new(out, "counterexample.txt", text.as_bytes())?;
                crate::files::write_new(out, "counterexample.sql", sql.as_bytes())?;
                if let Some(l) = &lane {
                    crate::files::write_new(out, "counterexample.svg", l.svg.as_bytes())?;
                }
                println!("written: {}/counterexample.txt, .sql and .svg (the job's swimlane)", out.display());
            }
            Ok(ExitCode::ExpectationFailed)
        }
        None if !s.claimed => {
            println!(
                "VACUOUS: no session claimed a job in any of {} schedules, so nothing was tested (are the \
                 preloaded jobs of a class or queue these sessions claim? explore preloads the default class): {tally}",
                s.schedules
            );
            Ok(ExitCode::ExpectationFailed)
        }
        None => {
            let reached = if s.exhausted {
                format!(
                    "at any depth within these bounds (every reachable state expanded by depth {}; more sessions, \
                     jobs, ticks or crashes reach more)",
                    s.depth_done
                )
            } else if s.timed_out {
                format!("up to depth {} (the time limit stopped depth {})", s.depth_done, s.depth_done + 1)
            } else {
                format!("up to depth {}", s.depth_done)
            };
            println!("no counterexample {reached}: {tally}");
            Ok(ExitCode::Passed)
        }
    }
}

fn print_header(plan: &Plan, o: &Options, reaper: bool) {
    let a = &plan.adapter;
    println!(
        "explore {}: {} worker sessions{}, {} job(s), depth ≤ {}, {} s; faults: {} clock tick(s) past the {:?} lease, {} crash(es)",
        a.name,
        o.sessions,
        helpers(reaper, o),
        o.jobs,
        o.depth,
        o.time.as_secs(),
        o.ticks,
        plan.lease.duration,
        o.crashes
    );
    let checks: Vec<&str> = verdict::CHECKS.iter().map(|c| c.name()).collect();
    println!("judged by: {}", checks.join(", "));
    let clocked = crate::run::literal::clocked_statements(a);
    if !clocked.is_empty() {
        println!(
            "virtual time: these statements read the server's clock, and explore writes the virtual clock in its place: {}",
            clocked.join("; ")
        );
    }
}

/// The classes explore's jobs take, where the scenario has classes (empty: the default class,
/// the usual preload). Pools claim only their own class (`:pool`): every job is of the class
/// of the first session's pool. Otherwise the jobs take the classes in turn, the first first.
fn classes_claimed(plan: &Plan) -> Vec<(String, i32)> {
    let classes = &plan.load.classes;
    match plan.workers.group_of(1).and_then(|p| classes.iter().find(|c| c.name == p)) {
        Some(c) => vec![(c.name.clone(), c.priority)],
        None => classes.iter().map(|c| (c.name.clone(), c.priority)).collect(),
    }
}

/// The key of the first job the preload left, as the queue keeps it (the observer's `id`).
async fn first_job(plan: &Plan, client: &tokio_postgres::Client) -> Result<crate::adapter::keys::Key> {
    let ids = crate::adapter::keys::Interner::default();
    let rows = crate::run::observe::final_state(client, plan, &ids).await?;
    let first = rows.iter().map(|r| r.id).min().ok_or_else(|| Error::Machine {
        action: "finding the job to cancel".into(),
        cause: "the preload left no job".into(),
    })?;
    Ok(ids.key(first))
}

/// The sessions beside the workers, as the header names them.
fn helpers(reaper: bool, o: &Options) -> String {
    let names: Vec<&str> = [(reaper, "a reaper"), (o.cancel, "a canceller"), (o.producer, "a producer")]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, n)| *n)
        .collect();
    match names.split_last() {
        None => String::new(),
        Some((last, [])) => format!(" and {last}"),
        Some((last, rest)) => format!(", {} and {last}", rest.join(", ")),
    }
}
