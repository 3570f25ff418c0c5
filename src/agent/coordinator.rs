//! The coordinator's side of a run across agents: the plan into the control tables, the
//! agents spawned (`--spawn-agents`) or awaited (`--agents`), the barrier, the side tasks
//! while the agents run the workers, and their evidence merged into one output.

use super::clock;
use super::control::{self, Seen, failed};
use super::kill;
use super::merge::{self, Roll};
use super::netfault::{self, Net};
use super::spawn::Spawned;
use super::state::AgentState;
use crate::adapter::keys::Interner;
use crate::db::Database;
use crate::error::{Error, Result};
use crate::model::summary::AgentOutcome;
use crate::options::AgentsOptions;
use crate::run::{Part, RunContext, RunOutput, Side, Waiting};
use crate::scenario::Plan;
use crate::scenario::faults::Fault;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How long the agents have to upload their evidence once told to stop.
const UPLOAD_WAIT: Duration = Duration::from_secs(120);
/// An agent silent this long (and no partition planned) is called missing.
const DEAD_AFTER: Duration = Duration::from_secs(10);
/// How often the coordinator asks whether a missing agent left the run unable to progress.
const STUCK_EVERY: Duration = Duration::from_secs(2);

/// The run across agents this coordinator leads: its plan, its database, and who takes part.
pub(crate) struct Coordinated<'a> {
    pub plan: &'a Plan,
    pub db: &'a Database,
    /// The run's id, which agents join by (`queuebench agent --run RUN_ID`).
    pub run_id: &'a str,
    /// The numbering of the queue's job ids.
    pub ids: Arc<Interner>,
    pub opts: &'a AgentsOptions,
}

/// Runs the plan with its workers in agents; the output holds their merged evidence.
pub(crate) async fn run(c: Coordinated<'_>, interrupt: &CancellationToken) -> Result<RunOutput> {
    let Coordinated { plan, db, run_id, opts, .. } = c;
    refuse_unfit(plan, opts, &c.ids, run_id)?;
    let client = db.connect().await?;
    control::create(&client, run_id, opts.count, &super::bundle::of(plan, run_id, opts.count)?).await?;
    let net = match opts.netns {
        true => Some(Arc::new(Net::up(plan, &db.worker_config(), opts.count).await?)),
        false => None,
    };
    let routes = net.as_deref().map(|n| (&n.hosts, n.forwarders.as_slice()));
    let mut spawned = match opts.spawn {
        true => Some(Spawned::start(db, run_id, opts, routes)?),
        false => None,
    };
    let joined = wait_joined(&client, opts, run_id, spawned.as_mut(), interrupt).await?;
    let own_clock = clock::measure(&client, 10).await.map_err(|e| failed("measuring the clock offset", &e))?;
    let watch = Watch::new(plan, opts.count, joined);
    let fired = Arc::new(Mutex::new(Fired::default()));
    let lead = Lead {
        watch: &watch,
        own_clock,
        wait: opts.wait,
        net: net.clone(),
        pids: spawned.as_ref().map(|s| s.pids()).unwrap_or_default(),
        fired: fired.clone(),
        run_id,
    };
    let part = coordinator_part(plan, db, lead);
    let context = RunContext { progress: false, ids: c.ids };
    let output = crate::run::run_part(&super::plan_for_coordinator(plan), db, interrupt, context, part).await;
    let _ = control::done(&client).await;
    let fired = std::mem::take(&mut *fired.lock().unwrap());
    if let Some(s) = spawned.as_mut() {
        s.finish(&fired.killed.iter().map(|k| k.agent).collect::<Vec<_>>()).await;
    }
    let mut output = output?;
    let roll = Roll {
        wanted: opts.count,
        seen: watch.seen.lock().unwrap().clone(),
        start_at_us: watch.start_at_us.load(Ordering::Relaxed),
    };
    merge::merge(plan, &client, &roll, &mut output).await?;
    let stuck = watch.stuck.lock().unwrap().take();
    add_fired(plan, opts, fired, stuck, &mut output);
    drop(net);
    Ok(output)
}

/// What agents cannot run, and a queue whose ids agents cannot number: a clear error before
/// anything starts.
fn refuse_unfit(plan: &Plan, opts: &AgentsOptions, ids: &Interner, run_id: &str) -> Result<()> {
    check_plan(plan, opts)?;
    if ids.numbered_any() {
        return Err(Error::Agents {
            run: run_id.into(),
            reason: format!(
                "the queue of {} has ids that are not integers; agents number jobs by their integer ids",
                plan.source.path.display()
            ),
        });
    }
    Ok(())
}

/// What the coordinator leads its part of the run with.
struct Lead<'a> {
    watch: &'a Watch,
    /// The coordinator's clock against the server's.
    own_clock: clock::Clock,
    /// `--agent-wait`: how long the barrier waits for the joined agents.
    wait: Duration,
    /// The agents' network namespaces (`--netns`).
    net: Option<Arc<Net>>,
    /// The spawned agents' process ids (`kill_agent`).
    pids: Vec<Option<u32>>,
    /// Where the faults on agents put what they did.
    fired: Arc<Mutex<Fired>>,
    run_id: &'a str,
}

/// The coordinator's part of the run: no worker slot of its own, the side tasks, the barrier,
/// and, beside the agents' workers, following them and the faults on agents (network, kills).
fn coordinator_part(plan: &Plan, db: &Database, lead: Lead<'_>) -> Part {
    let Lead { watch, own_clock, wait, net, pids, fired: fired_in, run_id } = lead;
    let (follow, config) = (watch.clone(), db.worker_config());
    let network: Vec<Fault> = netfault::of(plan).cloned().collect();
    let kills: Vec<Fault> = kill::of(plan).cloned().collect();
    let run = run_id.to_string();
    let remote = move |stop: CancellationToken| -> Waiting<()> {
        Box::pin(async move {
            // The faults end with the run's stop, or once every agent is done.
            let (start, faults_stop) = (Instant::now(), stop.child_token());
            let following = async {
                follow.follow(config, stop).await;
                faults_stop.cancel();
            };
            let shaped = async {
                match &net {
                    Some(net) => net.inject(&network, start, &faults_stop).await,
                    None => (Vec::new(), Vec::new()),
                }
            };
            let killing = kill::inject(&kills, &pids, &run, start, &faults_stop);
            let ((), (shaped, spans), (killed_events, killed)) = tokio::join!(following, shaped, killing);
            let mut fired = fired_in.lock().unwrap();
            fired.events.extend(shaped.into_iter().chain(killed_events));
            fired.spans.extend(spans);
            fired.killed.extend(killed);
        })
    };
    Part {
        // No worker slot of its own: the agents run them all.
        #[allow(clippy::reversed_empty_ranges)]
        slots: 1..=0,
        side: true,
        next_identity: 0,
        barrier: Some(Box::pin(barrier(db.worker_config(), own_clock, watch.clone(), wait))),
        producers_done: Some(watch.producers_done.clone()),
        remote: Some(Box::new(remote)),
    }
}

/// What the coordinator's faults did, into the output: why a missing agent's run could not
/// progress (`stuck`), which agents were killed, the fault events, and the network spans with
/// the workers each hit (its agent's slots and the identities its respawned workers take).
fn add_fired(plan: &Plan, opts: &AgentsOptions, fired: Fired, stuck: Option<String>, output: &mut RunOutput) {
    let Fired { events, mut spans, killed } = fired;
    if let Some(why) = stuck {
        for a in output.agents.iter_mut().filter(|a| a.state == AgentOutcome::Missing) {
            a.note = format!("{}; {why}", a.note);
        }
    }
    for k in &killed {
        for a in output.agents.iter_mut().filter(|a| a.agent == k.agent) {
            a.note = if a.note.is_empty() { k.note() } else { format!("{}; {}", k.note(), a.note) };
        }
    }
    output.faults.extend(events);
    output.faults.sort_by_key(|f| f.t_us);
    for s in &mut spans {
        let slots = super::slots(plan.workers.count, opts.count, s.agent);
        let base = super::identity_base(plan.workers.count, s.agent);
        s.workers = vec![(*slots.start(), *slots.end()), (base, base + super::IDENTITY_SPAN - 1)];
    }
    output.network = spans;
}

/// What the coordinator's faults did: their events, the network spans (for the swimlanes) and
/// the agents it killed.
#[derive(Default)]
struct Fired {
    events: Vec<crate::collect::FaultEvent>,
    spans: Vec<crate::model::records::NetworkSpan>,
    killed: Vec<kill::Killed>,
}

/// What agents cannot run: a clear error (exit 2) before anything starts.
pub(crate) fn check_plan(plan: &Plan, opts: &AgentsOptions) -> Result<()> {
    let flag = if opts.spawn { "--spawn-agents" } else { "--agents" };
    let refuse = |reason: String| Err(Error::Flag { flag: flag.into(), reason });
    if opts.count == 0 {
        return refuse("needs at least 1 agent".into());
    }
    if plan.client.is_some() {
        return refuse(format!(
            "{}: a client scenario runs its own worker processes; agents run queuebench's workers",
            plan.source.path.display()
        ));
    }
    if !(opts.spawn && opts.netns) {
        check_network(plan)?;
    }
    kill::check(plan, opts)?;
    if plan.workers.count < opts.count {
        return refuse(format!(
            "{} agents for {} workers: each agent needs at least one (lower the count or raise workers.count)",
            opts.count, plan.workers.count
        ));
    }
    Ok(())
}

/// A plan with faults on agents needs agents: a clear error (exit 2) for a local run.
pub(crate) fn check_local(plan: &Plan) -> Result<()> {
    check_network(plan)?;
    match kill::of(plan).next() {
        None => Ok(()),
        Some(f) => Err(Error::ScenarioFile {
            file: plan.source.path.clone(),
            sets: Vec::new(),
            reason: format!(
                "faults[{}] (kind = \"kill_agent\") SIGKILLs an agent process: run it with --spawn-agents N \
                 (docs/agents.md)",
                f.index
            ),
        }),
    }
}

/// A plan with network faults needs agents in network namespaces: a clear error (exit 2)
/// for a local run or agents without `--netns`.
fn check_network(plan: &Plan) -> Result<()> {
    match netfault::of(plan).next() {
        None => Ok(()),
        Some(f) => Err(Error::ScenarioFile {
            file: plan.source.path.clone(),
            sets: Vec::new(),
            reason: format!(
                "faults[{}] (kind = \"{}\") acts on the network between agents and the server: run it with \
                 --spawn-agents N --netns (as root; docs/agents.md)",
                f.index,
                f.kind.name()
            ),
        }),
    }
}

/// Waits until every agent has joined, `--agent-wait` is over, or every spawned agent has
/// exited. None joined: no verdict is possible (exit 3).
async fn wait_joined(
    client: &tokio_postgres::Client,
    opts: &AgentsOptions,
    run_id: &str,
    mut spawned: Option<&mut Spawned>,
    interrupt: &CancellationToken,
) -> Result<usize> {
    let started = Instant::now();
    let deadline = started + opts.wait;
    if !opts.spawn {
        eprintln!(
            "waiting up to {:.0} s for {} agent(s): queuebench agent --database-url URL --run {run_id}",
            opts.wait.as_secs_f64(),
            opts.count
        );
    }
    loop {
        let seen = control::agents(client).await.map_err(|e| failed("reading the agents", &e))?;
        let all_gone = spawned.as_mut().is_some_and(|s| s.all_exited());
        if seen.len() >= opts.count as usize || Instant::now() >= deadline || all_gone || interrupt.is_cancelled() {
            // What ended the wait, in the time it really took (every spawned agent may have
            // failed long before --agent-wait was over).
            let (secs, wait) = (started.elapsed().as_secs_f64(), opts.wait.as_secs_f64());
            let waited = match (all_gone, interrupt.is_cancelled()) {
                (true, _) => {
                    format!(
                        "before the spawned agents exited ({secs:.1} s after they started; --agent-wait is {wait:.0} s)"
                    )
                }
                (_, true) => format!("before the interrupt ({secs:.1} s in)"),
                _ => format!("within {wait:.0} s (--agent-wait)"),
            };
            if seen.is_empty() {
                let tail = spawned.as_mut().map(|s| s.stderr_tail()).unwrap_or_default();
                return Err(Error::Agents {
                    run: run_id.into(),
                    reason: format!(
                        "no agent joined {waited}; start them with `queuebench agent --database-url URL --run \
                         {run_id}` (they need a path to the same PostgreSQL){tail}"
                    ),
                });
            }
            if seen.len() < opts.count as usize {
                eprintln!(
                    "warning: {} of {} agents joined {waited}; the run goes on without the rest (their workers \
                     do not run; the summary marks them absent)",
                    seen.len(),
                    opts.count,
                );
            }
            return Ok(seen.len());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// What the coordinator follows while the agents run.
#[derive(Clone)]
struct Watch {
    wanted: u32,
    joined: usize,
    producers_done: Arc<AtomicBool>,
    seen: Arc<Mutex<Vec<Seen>>>,
    start_at_us: Arc<AtomicI64>,
    dead_after: Duration,
    /// The plan, when a missing agent can leave the run unable to progress (`stuck::can_stick`).
    stick: Option<Arc<Plan>>,
    /// Why the coordinator stopped the run early, when it did.
    stuck: Arc<Mutex<Option<String>>>,
}

impl Watch {
    fn new(plan: &Plan, wanted: u32, joined: usize) -> Watch {
        Watch {
            wanted,
            joined,
            producers_done: Arc::new(AtomicBool::new(!plan.load.is_open())),
            seen: Arc::new(Mutex::new(Vec::new())),
            start_at_us: Arc::new(AtomicI64::new(0)),
            dead_after: DEAD_AFTER + super::silence_planned(plan),
            stick: super::stuck::can_stick(plan).then(|| Arc::new(plan.clone())),
            stuck: Arc::new(Mutex::new(None)),
        }
    }

    /// Until every joined agent has uploaded, failed, or gone silent: passes on that the
    /// producers are done, and tells the agents to stop when the run's clock (or Ctrl-C) says so.
    async fn follow(self, config: crate::db::Endpoint, stop: CancellationToken) {
        let Some(mut side) = Side::connect(&config, "the agents' watch").await else { return };
        let (mut told_done, mut stop_sent, mut last_look) = (false, None::<Instant>, Instant::now());
        loop {
            tokio::time::sleep(Duration::from_millis(250)).await;
            let Some((client, _)) = side.client().await else { continue };
            if !told_done && self.producers_done.load(Ordering::Relaxed) {
                told_done = control::producers_done(client).await.is_ok();
            }
            if stop.is_cancelled() && stop_sent.is_none() && control::stop(client).await.is_ok() {
                stop_sent = Some(Instant::now());
            }
            let Ok(seen) = control::agents(client).await else { continue };
            let silent = |s: &Seen| !s.state.over() && s.silent_s > self.dead_after.as_secs_f64();
            let settled = seen.iter().all(|s| s.state.over() || silent(s));
            if stop_sent.is_none() && told_done && last_look.elapsed() >= STUCK_EVERY {
                last_look = Instant::now();
                if self.stuck_now(client, &seen.iter().filter(|s| silent(s)).collect::<Vec<_>>()).await
                    && control::stop(client).await.is_ok()
                {
                    stop_sent = Some(Instant::now());
                }
            }
            let late = stop_sent.is_some_and(|t| t.elapsed() > UPLOAD_WAIT);
            *self.seen.lock().unwrap() = seen;
            if settled || late {
                if stop_sent.is_none() {
                    let _ = control::stop(client).await;
                }
                return;
            }
        }
    }
}

impl Watch {
    /// Whether the run cannot progress any more (`stuck::why`); says why once, and keeps it
    /// for the missing agents' notes.
    async fn stuck_now(&self, client: &tokio_postgres::Client, missing: &[&Seen]) -> bool {
        let Some(plan) = &self.stick else { return false };
        let Some(why) = super::stuck::why(client, plan, self.wanted, missing).await else { return false };
        tracing::warn!("{why}");
        *self.stuck.lock().unwrap() = Some(why);
        true
    }
}

/// The coordinator's barrier: waits (up to `wait`) for the joined agents to open their
/// connections, starts the run 1 s from now on the server's clock, and returns that instant.
async fn barrier(config: crate::db::Endpoint, own: clock::Clock, watch: Watch, wait: Duration) -> Result<Instant> {
    let client = crate::db::connect::open(&config, |_| {}).await.map_err(|e| Error::Database {
        action: "connecting for the start".into(),
        target: None,
        sql: crate::db::sql(&e),
        hint: None,
    })?;
    let client = client.0;
    let deadline = Instant::now() + wait;
    loop {
        let seen = control::agents(&client).await.map_err(|e| failed("reading the agents", &e))?;
        let ready = seen.iter().filter(|s| s.state != AgentState::Joined).count();
        if ready >= watch.joined || Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let at = control::start(&client, Duration::from_secs(1)).await.map_err(|e| failed("starting the agents", &e))?;
    watch.start_at_us.store(at, Ordering::Relaxed);
    let start = own.instant_of(at);
    tokio::time::sleep_until(start.into()).await;
    tracing::info!(joined = watch.joined, wanted = watch.wanted, "agents started together");
    Ok(start)
}
