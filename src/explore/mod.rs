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
//! - `answer`: the last words (what was searched, and no more), `--all`'s files, explore.json.

mod answer;
mod pause;
mod protocol;
mod script;
mod search;
mod session;
mod snapshot;
mod verdict;

use crate::db::schema;
use crate::error::{Error, ExitCode, Result};
use crate::model::check::Check;
use crate::options::{DatabaseOptions, Target};
use crate::pipeline;
use crate::scenario::{self, Plan};
use protocol::{Cast, Faults, Model};
use search::{Bounds, Search};
use session::Sessions;
use snapshot::Snapshot;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// Where the virtual clock starts: midnight UTC the day after tomorrow, so a day to two
/// ahead of the real clock. Past the preload's instants (its jobs are due however long the
/// search runs, and a column default of `now()` the producer's enqueue meets stays behind
/// the virtual clock), and near the present, so a queue that keeps times as integer epoch
/// seconds does not overflow. A printed script has its instants written in: it replays by
/// hand on any day.
fn virtual_start(now: SystemTime) -> SystemTime {
    const DAY: u64 = 86_400;
    let secs = now.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    SystemTime::UNIX_EPOCH + Duration::from_secs((secs / DAY + 2) * DAY)
}

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
    /// Statements that call a lock that never waits may also pause inside, after their
    /// snapshot and before that lock (`pause`); off: whole statements only.
    pub inside: bool,
    /// Completions whose answer may be lost in one schedule (`ack_lost`).
    pub acks_lost: u32,
    /// A canceller session cancels the first job (the adapter's cancel step).
    pub cancel: bool,
    /// A producer session enqueues one more job during the schedule.
    pub producer: bool,
    pub out: Option<PathBuf>,
    /// Go on after the first counterexample: the shortest one of each check broken.
    pub all: bool,
    /// Checks set aside (`--ignore`): a violation of one is no counterexample.
    pub ignore: Vec<String>,
    /// How often a progress line goes to stderr (None: never).
    pub progress: Option<Duration>,
    /// Play this schedule (a counterexample's printed string) and judge it, instead of searching.
    pub replay: Option<String>,
    /// Play this many random schedules (PCT) instead of searching breadth first.
    pub random: Option<u64>,
    /// The random schedules' seed (None: drawn, and printed).
    pub seed: Option<u64>,
    /// PCT's bug depth: the orderings a bug needs (`--pct-depth`).
    pub pct_depth: u32,
}

pub(crate) async fn explore(file: &Path, sets: &[String], target: &Target, o: &Options) -> Result<ExitCode> {
    if !(2..=3).contains(&o.sessions) {
        return Err(Error::Flag { flag: "--sessions".into(), reason: "takes 2 or 3 worker sessions".into() });
    }
    if o.replay.is_some() && o.random.is_some() {
        return Err(Error::Flag {
            flag: "--replay".into(),
            reason: "plays one schedule; --random draws others".into(),
        });
    }
    if !(1..=2).contains(&o.jobs) {
        return Err(Error::Flag { flag: "--jobs".into(), reason: "takes 1 or 2 jobs".into() });
    }
    let ignore = ignored(&o.ignore)?;
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
    let result = search_on(&plan, &db, o, ignore).await;
    let teardown = db.teardown().await;
    let code = result?;
    teardown?;
    Ok(code)
}

/// The `--ignore` names as checks; an unknown name is a usage error.
fn ignored(names: &[String]) -> Result<Vec<Check>> {
    names
        .iter()
        .map(|n| {
            let judged = || verdict::CHECKS.iter().map(|c| c.name()).collect::<Vec<_>>().join(", ");
            Check::parse(n).filter(|c| verdict::CHECKS.contains(c)).ok_or_else(|| Error::Flag {
                flag: "--ignore".into(),
                reason: format!("`{n}` is no check explore judges; these are: {}", judged()),
            })
        })
        .collect()
}

async fn search_on(plan: &Plan, db: &crate::db::Database, o: &Options, ignore: Vec<Check>) -> Result<ExitCode> {
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
    let mut sessions = Sessions::open(db, plan.adapter.on_connect.as_deref(), actors).await?;
    if o.inside && pause::any_point(&plan.adapter) {
        sessions.open_gates(&client).await?;
    }
    let snapshot = Snapshot::take(sessions.monitor()).await?;
    let inside = o.inside && pause::any_point(&plan.adapter);
    let faults = Faults {
        ticks: o.ticks,
        crashes: o.crashes,
        heartbeats: o.heartbeats,
        fail: o.fail,
        inside,
        acks_lost: o.acks_lost,
    };
    let bounds = Bounds { depth: o.depth, time: o.time, reduce: o.reduce, faults, liveness: o.liveness };
    print_header(plan, o, reaper);
    let started = Instant::now();
    let text_ids = text_ids(plan, &client).await?;
    let cast = Cast { workers: o.sessions, reaper, cancel, producer: o.producer, text_ids };
    let mut search = Search::new(plan, sessions, snapshot, bounds, cast);
    search.ignore = ignore;
    search.all = o.all;
    search.progress_every = o.progress;
    match (&o.replay, o.random) {
        (Some(text), _) => search.replay_schedule(text).await?,
        (None, Some(n)) => search.random(n, o.seed.unwrap_or_else(rand::random), o.pct_depth).await?,
        (None, None) => search.run().await?,
    }
    let took = started.elapsed();
    let s = &search.stats;
    tracing::info!(
        reset = ?s.reset_time, steps = ?s.exec_time, replay = ?s.replay_time, judge = ?s.judge_time,
        settle = ?s.settle_time,
        "explore: where the time went"
    );
    let searched = answer::Searched {
        plan,
        o,
        reaper,
        stats: s,
        took,
        coverage: &search.coverage,
        random: search.random.as_ref(),
    };
    answer::answer(&searched, &search.found)
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
    let checks: Vec<&str> = verdict::judged(plan).iter().map(|c| c.name()).collect();
    println!("judged by: {}", checks.join(", "));
    let excused = verdict::tolerated(plan);
    if !excused.is_empty() {
        println!("excused, as a run judges them (the scenario's [expect]): {}", excused.join(", "));
    }
    if !o.ignore.is_empty() {
        println!("set aside (--ignore): {}", o.ignore.join(", "));
    }
    if o.acks_lost > 0 {
        println!(
            "acknowledgements lost: up to {} completion(s) commit and lose their answer; the session connects again and sends it once more",
            o.acks_lost
        );
    }
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

/// Whether the queue keeps its job ids as text: the observer's `id` column's type.
async fn text_ids(plan: &Plan, client: &tokio_postgres::Client) -> Result<bool> {
    use tokio_postgres::types::Type;
    let st = client.prepare(&plan.adapter.observe.state.sql).await.map_err(|e| Error::Machine {
        action: "reading the type of the queue's job ids (observe.state)".into(),
        cause: crate::db::error_text(&e),
    })?;
    let id = st.columns().iter().find(|c| c.name() == "id");
    Ok(id.is_some_and(|c| matches!(*c.type_(), Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME)))
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
