//! The search: breadth first over schedules, depth 1, 2, … up to the bound, so the first
//! counterexample found is a shortest one (the deepening the issue of shortest answers asks for,
//! a level at a time). Each schedule is played on the real server from the same state (the
//! sessions rolled back, the schema's snapshot restored), a state's path replayed to reach it.
//! With reduction, a state reached before (the same tables, actors, clock and journal, by
//! another order of steps that commute) is not expanded again.

use super::protocol::{Cast, Faults, Model, Op, Record};
use super::session::{Sent, Sessions};
use super::snapshot::Snapshot;
use super::verdict::{Violation, judge, judge_settled};
use crate::error::Result;
use crate::scenario::Plan;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

#[derive(Debug, Clone, Copy)]
pub(super) struct Bounds {
    pub depth: usize,
    pub time: Duration,
    pub reduce: bool,
    pub faults: Faults,
    /// Leave each new state to itself and judge the liveness checks (`settle`).
    pub liveness: bool,
}

mod ack;
pub(super) mod coverage;
mod inside;
mod pct;
pub(super) mod schedule;
pub(super) mod settle;
pub(super) mod single;

#[derive(Debug, Default, Clone)]
pub(super) struct Stats {
    /// Schedules run and judged (a state's path and one more step).
    pub schedules: u64,
    /// States not explored again (reduction).
    pub pruned: u64,
    /// Steps sent, replays included.
    pub steps: u64,
    pub resets: u64,
    pub reset_time: Duration,
    /// Reading the job table and the state's name, and judging.
    pub judge_time: Duration,
    /// Replaying a state's path (its steps, after the reset).
    pub replay_time: Duration,
    pub exec_time: Duration,
    /// The deepest level finished.
    pub depth_done: usize,
    pub timed_out: bool,
    /// Distinct states expanded.
    pub states: u64,
    /// Schedules the explored ones stand for (without reduction, as many would run).
    pub covered: f64,
    /// Every reachable state was expanded before the depth bound.
    pub exhausted: bool,
    /// Some schedule's claim handed a job out (none: the search tested nothing).
    pub claimed: bool,
    /// States left to themselves (liveness), the steps that took, and the time.
    pub settled: u64,
    pub settle_steps: u64,
    pub settle_time: Duration,
    /// The first error the server gave a claim (or its select step): the statement and the error.
    pub claim_error: Option<(String, String)>,
}

/// A counterexample: the steps as they ran, what they broke, and the evidence the checkers read.
pub(super) struct Found {
    pub records: Vec<Record>,
    pub violations: Vec<Violation>,
    pub depth: usize,
    pub journal: Vec<crate::collect::Event>,
    pub faults: Vec<crate::collect::FaultEvent>,
    pub final_jobs: Vec<crate::model::records::JobRow>,
    /// The record where the schedule was left to itself (a liveness counterexample).
    pub settled_from: Option<usize>,
    /// The schedule as a string (`schedule`), for `--replay`.
    pub schedule: String,
}

pub(super) struct Search<'a> {
    pub plan: &'a Plan,
    pub sessions: Sessions,
    pub snapshot: Snapshot,
    pub bounds: Bounds,
    pub cast: Cast,
    pub base: SystemTime,
    pub stats: Stats,
    /// Every state reached so far, by name (reduction).
    visited: HashSet<u64>,
    deadline: Instant,
    started: Instant,
    last_progress: Instant,
    /// Checks set aside: `--ignore`, and with `all` every check found so far.
    pub ignore: Vec<crate::model::check::Check>,
    /// Go on after a counterexample, for the shortest one of each check.
    pub all: bool,
    /// The counterexamples, in the order found (so by length).
    pub found: Vec<Found>,
    /// How often a progress line goes to stderr (None: never).
    pub progress_every: Option<Duration>,
    /// `observe.state` prepared on the monitor (`settle::observe`).
    observe: Option<tokio_postgres::Statement>,
    /// While a path is replayed: how each of its steps went the first time.
    known: Option<Arc<Vec<Was>>>,
    /// The pairs of conflicting steps and the abstract job states reached.
    pub coverage: coverage::Coverage,
    /// What `--random` played.
    pub random: Option<single::Random>,
}

impl<'a> Search<'a> {
    pub(super) fn new(
        plan: &'a Plan,
        sessions: Sessions,
        snapshot: Snapshot,
        bounds: Bounds,
        cast: Cast,
    ) -> Search<'a> {
        let started = Instant::now();
        let deadline = started + bounds.time;
        let base = super::virtual_start(SystemTime::now());
        let (stats, visited) = (Stats::default(), HashSet::new());
        let (ignore, all, found, last_progress) = (Vec::new(), false, Vec::new(), started);
        Search {
            plan,
            sessions,
            snapshot,
            bounds,
            cast,
            base,
            stats,
            visited,
            deadline,
            started,
            last_progress,
            ignore,
            all,
            found,
            progress_every: Some(Duration::from_secs(10)),
            observe: None,
            known: None,
            coverage: coverage::Coverage::default(),
            random: None,
        }
    }

    /// Breadth first, a level per depth: every state at depth k is reached by a shortest
    /// schedule, each new state is judged as it is reached, so the first counterexample is a
    /// shortest one. With reduction, a state reached before (at this depth or a smaller one)
    /// is not expanded again; the schedules it stands for are counted. The counterexamples go
    /// to `found`: the first one, or with `all` the first (so a shortest) one of each check.
    pub(super) async fn run(&mut self) -> Result<()> {
        let start = self.fresh().await?;
        let first = self.key(&start).await?;
        self.visited.insert(first);
        if self.left_to_itself(start, 0).await? {
            return Ok(());
        }
        let mut frontier: Vec<Node> = vec![Node { path: Vec::new(), paths: 1.0, was: Arc::new(Vec::new()) }];
        for depth in 1..=self.bounds.depth {
            let mut next: Vec<Node> = Vec::new();
            let mut at: HashMap<u64, usize> = HashMap::new();
            for Node { path, paths, was } in &frontier {
                let model = self.replay_known(path, was).await?;
                let ops = model.enabled();
                let mut first = Some(model);
                for op in ops {
                    if Instant::now() > self.deadline {
                        self.stats.timed_out = true;
                        return Ok(());
                    }
                    self.progress(depth);
                    let mut m = match first.take() {
                        Some(m) => m,
                        None => self.replay_known(path, was).await?,
                    };
                    self.exec(&mut m, op).await?;
                    self.stats.schedules += 1;
                    self.stats.covered += paths;
                    self.stats.claimed |= m.journal.iter().any(|e| e.kind == crate::collect::EventKind::Claimed);
                    let t = Instant::now();
                    let (rows, key) = self.read(&m).await?;
                    self.coverage.note(&m, &rows);
                    let violations = self.unexcused(judge(&m, &rows));
                    self.stats.judge_time += t.elapsed();
                    if !violations.is_empty() {
                        let f = found(&m, violations, depth, rows, None);
                        if self.record(f) {
                            return Ok(());
                        }
                    }
                    if let Some(key) = key
                        && self.met(key, &mut at, &mut next, *paths)
                    {
                        continue;
                    }
                    let m_was = was_of(&m);
                    if self.left_to_itself(m, depth).await? {
                        return Ok(());
                    }
                    let mut longer = path.clone();
                    longer.push(op);
                    next.push(Node { path: longer, paths: *paths, was: Arc::new(m_was) });
                }
            }
            self.stats.depth_done = depth;
            self.stats.states += next.len() as u64;
            if next.is_empty() {
                self.stats.exhausted = true;
                break;
            }
            frontier = next;
        }
        Ok(())
    }

    /// Reduction: whether `m`'s state was met before (at this level: the schedules it stands
    /// for are added to the first; at a smaller one: nothing to add). A new one is noted at
    /// the index in `next` it is about to take.
    fn met(&mut self, key: u64, at: &mut HashMap<u64, usize>, next: &mut [Node], paths: f64) -> bool {
        if let Some(&i) = at.get(&key) {
            next[i].paths += paths;
            self.stats.pruned += 1;
            return true;
        }
        if !self.visited.insert(key) {
            self.stats.pruned += 1;
            return true;
        }
        at.insert(key, next.len());
        false
    }

    /// The violations not set aside: `--ignore`d checks, and with `--all` the checks already found.
    /// What stays beside them goes only with a check of its own.
    fn unexcused(&self, mut v: Vec<Violation>) -> Vec<Violation> {
        v.retain(|v| !self.ignore.contains(&v.check));
        if v.iter().all(|v| v.beside) {
            v.clear();
        }
        v
    }

    /// Keeps a counterexample; true when the search stops here (without `all`). With `all`,
    /// its checks are set aside from now on, so the next one found breaks another.
    fn record(&mut self, f: Found) -> bool {
        self.ignore.extend(f.violations.iter().filter(|v| !v.beside).map(|v| v.check));
        self.found.push(f);
        !self.all
    }

    /// A line on stderr every `progress_every` (ten seconds by default): how far the search
    /// got. One whole line each time, no cursor games, so a terminal and a CI log read the same.
    fn progress(&mut self, depth: usize) {
        if self.progress_every.is_none_or(|every| self.last_progress.elapsed() < every) {
            return;
        }
        self.last_progress = Instant::now();
        let secs = self.started.elapsed().as_secs_f64();
        let s = &self.stats;
        eprintln!(
            "explore: {secs:.1} s, depth {depth}, {} schedules run, {} distinct states, {:.0} schedules/s",
            s.schedules,
            s.states,
            s.schedules as f64 / secs.max(1e-9)
        );
    }

    /// A new state left to itself, and judged with the liveness checks (`settle`).
    async fn left_to_itself(&mut self, mut m: Model<'a>, depth: usize) -> Result<bool> {
        if !self.bounds.liveness {
            return Ok(false);
        }
        let t = Instant::now();
        let settled = self.settle(&mut m).await?;
        self.stats.settled += 1;
        self.stats.settle_steps += settled.steps as u64;
        self.stats.settle_time += t.elapsed();
        self.stats.claimed |= m.journal.iter().any(|e| e.kind == crate::collect::EventKind::Claimed);
        let violations = self.unexcused(judge_settled(&m, &settled));
        if violations.is_empty() {
            return Ok(false);
        }
        let from = Some(settled.from);
        Ok(self.record(found(&m, violations, depth, settled.rows, from)))
    }

    /// A state's name: the model's own part and every table's rows.
    async fn key(&mut self, m: &Model<'a>) -> Result<u64> {
        let state = self.snapshot.state(self.sessions.monitor()).await?;
        Ok(state_key(m, &state, self.sessions.backends()))
    }

    /// The sessions rolled back, the snapshot restored, the model at its start.
    async fn fresh(&mut self) -> Result<Model<'a>> {
        let started = Instant::now();
        self.sessions.quiesce().await?;
        self.snapshot.restore(self.sessions.monitor()).await?;
        self.stats.resets += 1;
        self.stats.reset_time += started.elapsed();
        Ok(Model::new(self.plan, &self.cast, self.base, self.bounds.faults))
    }

    /// A state's path played again from the start, each statement known to return or wait
    /// as it did the first time (`was`): no question about locks is asked for a step known to
    /// return, nor for a waiter before the step it is known to return after.
    async fn replay_known(&mut self, prefix: &[Op], was: &Arc<Vec<Was>>) -> Result<Model<'a>> {
        let mut model = self.fresh().await?;
        let t = Instant::now();
        self.known = Some(was.clone());
        let mut r = Ok(());
        for op in prefix {
            r = self.exec(&mut model, *op).await;
            if r.is_err() {
                break;
            }
        }
        self.known = None;
        self.stats.replay_time += t.elapsed();
        r.map(|()| model)
    }

    /// One step on the server, then every session that waited on a lock and is free now.
    async fn exec(&mut self, model: &mut Model<'a>, op: Op) -> Result<()> {
        let t = Instant::now();
        let r = self.exec_step(model, op).await;
        self.stats.exec_time += t.elapsed();
        r
    }

    async fn exec_step(&mut self, model: &mut Model<'a>, op: Op) -> Result<()> {
        self.stats.steps += 1;
        match op {
            Op::Tick => model.apply_fault(op),
            Op::Crash(a) => {
                self.sessions.crash(a).await?;
                model.apply_fault(op);
            }
            Op::Resume(a) => self.resume(model, a).await?,
            Op::AckLost(a) => self.lose_ack(model, a).await?,
            Op::Start(a, _) | Op::Next(a) | Op::Commit(a) | Op::Paused(a, _) => {
                let paused = self.close_gate(model, op).await?;
                let sql = model.sql(op).expect("a statement step has text");
                let index = model.sent(op, sql.clone());
                let claiming = model.claiming(a);
                let sent = match self.was(index) {
                    Some(Was::Returned) => self.sessions.send_known(a, sql.clone()).await?,
                    _ => self.sessions.send(a, sql.clone()).await?,
                };
                match sent {
                    Sent::Done(out) => {
                        if let (Err(e), true, None) = (&out, claiming, &self.stats.claim_error) {
                            self.stats.claim_error = Some((sql, e.to_string()));
                        }
                        model.outcome(op, &out, index);
                        if out.is_err() {
                            self.rollback(a).await?;
                        }
                        if paused {
                            self.open_gate(model, a, false).await?;
                        }
                    }
                    Sent::Blocked => model.blocked(op, index),
                }
            }
        }
        self.settle_waiting(model).await
    }

    /// How the step of record `index` went the first time, while a path is replayed.
    fn was(&self, index: usize) -> Option<Was> {
        self.known.as_ref().and_then(|k| k.get(index)).copied()
    }

    async fn rollback(&mut self, a: usize) -> Result<()> {
        match self.sessions.send(a, "ROLLBACK".into()).await? {
            Sent::Done(_) => Ok(()),
            Sent::Blocked => unreachable!("a ROLLBACK takes no lock"),
        }
    }

    /// Sessions whose statement waited: each returns once its blocker is gone. When nothing
    /// else can move, wait longer, for the server's deadlock detector.
    async fn settle_waiting(&mut self, model: &mut Model<'a>) -> Result<()> {
        loop {
            let mut moved = false;
            let stuck = model.enabled().is_empty();
            for a in 0..model.actors.len() {
                let Some((_, w)) = model.actors[a].waiting.filter(|_| self.sessions.is_pending(a)) else { continue };
                let now = model.records.len() - 1;
                let sent = match self.was(w) {
                    Some(Was::Waited(Some(k))) if k == now => self.sessions.settle_known(a).await?,
                    Some(Was::Waited(Some(k))) if k > now => continue,
                    Some(Was::Waited(None)) => continue,
                    _ => {
                        let patience = if stuck { Duration::from_millis(500) } else { Duration::ZERO };
                        self.sessions.settle(a, patience).await?
                    }
                };
                if let Sent::Done(out) = sent {
                    model.settled(a, &out);
                    if out.is_err() {
                        self.rollback(a).await?;
                    }
                    moved = true;
                }
            }
            if !moved {
                return Ok(());
            }
        }
    }
}

/// A state to expand: the path that reached it first, the schedules it stands for, and how
/// each of the path's steps went (`Was`), for its replays.
struct Node {
    path: Vec<Op>,
    paths: f64,
    was: Arc<Vec<Was>>,
}

/// How a step went when its schedule was first played: it returned at once, or it waited on a
/// lock and returned after the step of that index (None: still waiting at the path's end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Was {
    Returned,
    Waited(Option<usize>),
}

/// How each step of `m`'s schedule went, by its record.
fn was_of(m: &Model<'_>) -> Vec<Was> {
    m.records
        .iter()
        .map(|r| match (r.waited_until, r.result.as_str()) {
            (Some(k), _) => Was::Waited(Some(k)),
            (None, "waits on a lock") => Was::Waited(None),
            _ => Was::Returned,
        })
        .collect()
}

/// A state's name: the model's own part and every table's rows (`state`), a backend's pid
/// read as its session.
fn state_key(m: &Model<'_>, state: &str, backends: &[(i32, usize)]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    m.key().hash(&mut h);
    super::snapshot::label_backends(state, backends).hash(&mut h);
    h.finish()
}

fn found(
    m: &Model<'_>,
    violations: Vec<Violation>,
    depth: usize,
    rows: Vec<crate::model::records::JobRow>,
    settled_from: Option<usize>,
) -> Found {
    let names: Vec<String> = m.actors.iter().map(|a| a.name.clone()).collect();
    // One record per step, beside the gate's own lines a paused statement brings (`Record::step`).
    let ops: Vec<Op> =
        m.records[..settled_from.unwrap_or(m.records.len())].iter().filter(|r| r.step).map(|r| r.op).collect();
    Found {
        schedule: schedule::render(&ops, &names),
        records: m.records.clone(),
        violations,
        depth,
        journal: m.journal.clone(),
        faults: m.faults.clone(),
        final_jobs: rows,
        settled_from,
    }
}
