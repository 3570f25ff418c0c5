//! `queuebench agent`: joins a run through the database, runs its share of the workers
//! exactly as a local run does, and uploads its evidence. It needs a path to PostgreSQL and
//! nothing else: no port of its own, no path to the coordinator or to other agents.

use super::bundle::Bundle;
use super::clock::{self, Clock};
use super::control::{self, RunState, failed};
use super::evidence;
use super::state::AgentState;
use crate::adapter::keys::Interner;
use crate::db::Database;
use crate::error::{Error, Result};
use crate::run::{Part, RunContext, RunOutput};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio_postgres::Client;
use tokio_util::sync::CancellationToken;

/// `queuebench agent`, resolved.
#[derive(Debug, Clone)]
pub(crate) struct AgentOptions {
    pub url: String,
    /// A run id or schema; None: the newest run waiting for agents.
    pub run: Option<String>,
    pub name: Option<String>,
    /// `--index K`: join as agent K; None: the next free number.
    pub index: Option<u32>,
    /// How long to look for a run to join, and to wait for its start.
    pub wait: Duration,
}

/// What an agent reports at the end (`qb_agent.report`), beside its evidence.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Report {
    pub clock_start: Clock,
    pub clock_end: Option<Clock>,
    /// The run's length on this agent's clock, µs.
    pub duration_us: u64,
    pub interrupted: bool,
    pub timed_out: bool,
    pub database_lost: Option<String>,
    /// Worker failures, as text.
    pub failures: Vec<String>,
    pub evidence_bytes: u64,
}

/// How often an agent reports (its sign of life) and reads the run's state.
pub(crate) const REPORT_EVERY: Duration = Duration::from_millis(250);

/// Joins, runs, uploads. Ok when the evidence is uploaded.
pub(crate) async fn agent(opts: &AgentOptions, interrupt: &CancellationToken) -> Result<()> {
    let (schema, run_id) = find(opts).await?;
    let db = Database::open(Some(&opts.url), &[], schema, true, true).await?;
    let mut client = db.connect().await?;
    let name = opts.name.clone().unwrap_or_else(default_name);
    let k = control::join(&mut client, &name, opts.index)
        .await
        .map_err(|e| failed("joining the run", &e))?
        .map_err(|reason| Error::Agents { run: run_id.clone(), reason: reason.to_string() })?;
    eprintln!("agent {k} ({name}) joined run {run_id} on {}", db.shown());
    let outcome = member(&db, &client, k, &run_id, interrupt).await;
    if let Err(e) = &outcome {
        let _ = control::fail(&client, k, &e.to_string()).await;
    }
    outcome
}

async fn member(db: &Database, client: &Client, k: u32, run_id: &str, interrupt: &CancellationToken) -> Result<()> {
    let bundle: Bundle =
        serde_json::from_value(control::bundle(client).await.map_err(|e| failed("reading the plan", &e))?)
            .map_err(|e| Error::Agents { run: run_id.into(), reason: format!("its plan is unreadable here: {e}") })?;
    if bundle.version != crate::model::VERSION {
        eprintln!("warning: the coordinator runs queuebench {}, this agent {}", bundle.version, crate::model::VERSION);
    }
    let dir = tempfile::tempdir().map_err(|e| Error::machine("creating a folder for the plan", e))?;
    let plan = bundle.plan(dir.path())?;
    let mine = super::slots(plan.workers.count, bundle.agents, k);
    let clock_start = clock::measure(client, 10).await.map_err(|e| failed("measuring the clock offset", &e))?;
    eprintln!(
        "agent {k}: workers {}..={}, clock offset {} µs ± {} µs",
        mine.start(),
        mine.end(),
        clock_start.offset_us,
        clock_start.bound_us
    );
    let reporter = Reporter::start(db, k, interrupt).await?;
    let part = Part {
        slots: mine.clone(),
        side: false,
        next_identity: super::identity_base(plan.workers.count, k),
        barrier: Some(Box::pin(barrier(reporter.state.clone(), clock_start, run_id.to_string()))),
        producers_done: Some(reporter.producers_done.clone()),
        remote: None,
    };
    let ids = Arc::new(Interner::default());
    let output = crate::run::run_part(
        &super::plan_for_agent(&plan, &mine),
        db,
        &reporter.stop,
        RunContext { progress: false, ids },
        part,
    )
    .await;
    reporter.finish(AgentState::Finished).await;
    let mut output = output?;
    let clock_end = clock::measure(client, 10).await.ok();
    upload(client, k, &mut output, clock_start, clock_end, interrupt.is_cancelled()).await?;
    eprintln!("agent {k}: {} events uploaded", output.journal.len());
    Ok(())
}

/// The agent's evidence into the control tables; then its report, state `uploaded`.
async fn upload(
    client: &Client,
    k: u32,
    o: &mut RunOutput,
    clock_start: Clock,
    clock_end: Option<Clock>,
    interrupted: bool,
) -> Result<()> {
    let parts = evidence::encode(&o.journal, &mut o.stats, &o.faults);
    let mut bytes = 0;
    for (name, data) in &parts {
        control::upload(client, k, name, data).await.map_err(|e| failed("uploading the evidence", &e))?;
        bytes += data.len() as u64;
    }
    let report = Report {
        clock_start,
        clock_end,
        duration_us: o.duration.as_micros() as u64,
        interrupted,
        timed_out: o.timed_out,
        database_lost: o.database_lost.clone(),
        failures: o.failures.iter().map(|f| f.to_string()).collect(),
        evidence_bytes: bytes,
    };
    let json = serde_json::to_value(&report).expect("the report serialises");
    control::report(client, k, AgentState::Uploaded, Some(&json)).await.map_err(|e| failed("reporting", &e))?;
    Ok(())
}

/// Finds the run to join, retrying until `wait` is over.
async fn find(opts: &AgentOptions) -> Result<(String, String)> {
    let looking = Database::open(Some(&opts.url), &[], String::new(), true, true).await?;
    let client = looking.connect_admin().await?;
    let deadline = Instant::now() + opts.wait;
    loop {
        match control::find_run(&client, opts.run.as_deref()).await.map_err(|e| failed("looking for the run", &e))? {
            Ok(found) => return Ok(found),
            Err(why) if Instant::now() >= deadline => {
                return Err(Error::Agents {
                    run: opts.run.clone().unwrap_or_else(|| "(any)".into()),
                    reason: format!(
                        "{why} after {:.0} s on {}; start the coordinator first (`queuebench run FILE \
                         --database-url URL --agents N`) or give --run RUN_ID",
                        opts.wait.as_secs_f64(),
                        looking.shown()
                    ),
                });
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
}

fn default_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    format!("{}:{}", host.trim(), std::process::id())
}

/// The barrier: reports `ready` (every connection is open), waits for the coordinator's start
/// time and returns it as an instant on this machine's clock.
async fn barrier(mut state: watch::Receiver<Option<RunState>>, clock: Clock, run_id: String) -> Result<Instant> {
    loop {
        let now = state.borrow_and_update().clone();
        match now {
            Some(RunState { start_at_us: Some(at), .. }) => {
                let start = clock.instant_of(at);
                tokio::time::sleep_until(start.into()).await;
                return Ok(start);
            }
            Some(RunState { state, .. }) if state == "done" || state == "stopping" => {
                return Err(Error::Agents {
                    run: run_id,
                    reason: format!("the run is {state} before this agent started"),
                });
            }
            _ => {}
        }
        if state.changed().await.is_err() {
            return Err(Error::Agents {
                run: run_id,
                reason: "lost touch with the control tables before the start".into(),
            });
        }
    }
}

/// The agent's reporting task: every `REPORT_EVERY` a sign of life with its state, reading the
/// run's state back. It stops the workers when the coordinator says stop (or on Ctrl-C) and
/// passes on when the producers are done.
struct Reporter {
    state: watch::Receiver<Option<RunState>>,
    producers_done: Arc<AtomicBool>,
    stop: CancellationToken,
    mine: watch::Sender<AgentState>,
    task: tokio::task::JoinHandle<()>,
}

impl Reporter {
    async fn start(db: &Database, k: u32, interrupt: &CancellationToken) -> Result<Reporter> {
        let who = format!("agent {k}'s control connection");
        let mut side = crate::run::Side::connect(&db.worker_config(), &who)
            .await
            .ok_or_else(|| Error::Agents { run: db.schema.clone(), reason: format!("{who} could not connect") })?;
        let (tx, rx) = watch::channel(None);
        let (mine, my_state) = watch::channel(AgentState::Ready);
        let (producers_done, stop) = (Arc::new(AtomicBool::new(false)), interrupt.child_token());
        let (done, stop2) = (producers_done.clone(), stop.clone());
        let task = tokio::spawn(async move {
            loop {
                let started = tx.borrow().as_ref().is_some_and(|s: &RunState| s.start_at_us.is_some());
                let me = match *my_state.borrow() {
                    AgentState::Ready if started => AgentState::Running,
                    other => other,
                };
                if let Some((client, _)) = side.client().await
                    && let Ok(run) = control::report(client, k, me, None).await
                {
                    done.fetch_or(run.producers_done, Ordering::Relaxed);
                    if matches!(run.state.as_str(), "stopping" | "done") {
                        stop2.cancel();
                    }
                    tx.send_replace(Some(run));
                }
                tokio::time::sleep(REPORT_EVERY).await;
            }
        });
        Ok(Reporter { state: rx, producers_done, stop, mine, task })
    }

    /// The workers are done: one last report in `state`, then the task ends.
    async fn finish(self, state: AgentState) {
        self.mine.send_replace(state);
        tokio::time::sleep(REPORT_EVERY + Duration::from_millis(50)).await;
        self.task.abort();
    }
}
