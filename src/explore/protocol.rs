//! The actors and their protocol, as a state machine the search steps through: each worker
//! session claims (the adapter's select step first, if it has one), then holds its job (which
//! it executes as the claim commits), heartbeats, and completes or fails it; a reaper session
//! runs the reclaim. Every step runs in a transaction of its own, one statement per schedule
//! step and its `COMMIT` as one more (so a schedule can put another session between a
//! statement and its commit, as an autocommit statement's own commit can be). Beside them,
//! the faults: `Tick` moves the virtual clock past the lease, `Crash` closes a session's
//! connection. A pause is a session not being scheduled.
//!
//! The model only decides: which steps are enabled, what text a step sends, and what its
//! outcome means (the journal the checkers read). `search` sends the text.

use super::session::{Outcome, Rows};
use crate::adapter::keys::{Interner, Key};
use crate::adapter::{Accepted, Step};
use crate::collect::{Event, EventKind, FaultEvent, FaultKind};
use crate::model::protocol::{Mode, Reclaim};
use crate::run::literal::{Clock, literal};
use crate::run::values::{Claimed, Values};
use crate::scenario::Plan;
use std::time::{Duration, SystemTime};

/// Which step of the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StepKind {
    Select,
    Claim,
    Heartbeat,
    Complete,
    Fail,
    Reclaim,
    Cancel,
    Enqueue,
}

/// One schedule step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// `BEGIN` and the step's first statement.
    Start(usize, StepKind),
    /// The step's next statement.
    Next(usize),
    Commit(usize),
    /// The virtual clock moves past the lease.
    Tick,
    /// The session's connection closes mid-transaction.
    Crash(usize),
}

impl Op {
    pub fn actor(self) -> Option<usize> {
        match self {
            Op::Start(a, _) | Op::Next(a) | Op::Commit(a) | Op::Crash(a) => Some(a),
            Op::Tick => None,
        }
    }
}

/// Where an actor is in its protocol.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Phase {
    Idle,
    /// In a step: statements sent so far, the first one's verdict for a write.
    Running {
        kind: StepKind,
        sent: usize,
        accepted: Option<bool>,
    },
    /// Holding a job; `in_tx`: the claim's transaction is still open (hold-transaction mode).
    Holding {
        in_tx: bool,
    },
    Crashed,
}

#[derive(Debug, Clone)]
pub struct Actor {
    pub name: String,
    pub reaper: bool,
    /// Cancels the first preloaded job, once (`--cancel`).
    pub canceller: bool,
    /// Enqueues one job during the schedule (`--producer`).
    pub producer: bool,
    pub phase: Phase,
    pub job: Option<Claimed>,
    /// The claim's rows, until its commit.
    got: Vec<Claimed>,
    /// The select step's ids, for the claim's `:ids`.
    selected: Vec<i64>,
    /// The previous statement's columns (`:prev.COLUMN`), by the next statement's names.
    carried: Vec<Vec<String>>,
    /// `gen_random_uuid()` calls this session has sent (each becomes a fixed uuid: `uuids`).
    draws: u32,
    claims: u32,
    beats: u32,
    /// The model's change count when this actor's last claim (or reclaim) found nothing: it
    /// tries again only after something changed.
    stamp: Option<u64>,
    /// Waiting on a lock: the step, and its record.
    pub waiting: Option<(Op, usize)>,
}

/// The search's bounds on faults.
#[derive(Debug, Clone, Copy)]
pub struct Faults {
    pub ticks: u32,
    pub crashes: u32,
    pub heartbeats: u32,
    pub fail: bool,
}

/// A step as it happened, for the printed counterexample.
#[derive(Debug, Clone)]
pub struct Record {
    pub op: Op,
    pub actor: String,
    /// The text sent (None for a tick).
    pub sql: Option<String>,
    pub result: String,
    /// Seconds on the virtual clock.
    pub at_secs: f64,
    /// The step it returned after, when it waited on a lock.
    pub waited_until: Option<usize>,
}

pub struct Model<'p> {
    pub plan: &'p Plan,
    pub actors: Vec<Actor>,
    pub ticks: u32,
    crashes: u32,
    changes: u64,
    pub journal: Vec<Event>,
    pub faults: Vec<FaultEvent>,
    pub records: Vec<Record>,
    pub ids: Interner,
    seq: u64,
    base: SystemTime,
    bounds: Faults,
    /// The job the canceller cancels.
    target: Option<Claimed>,
    /// Jobs the producer enqueued.
    pub produced: u64,
    /// What the producer's enqueue binds (`:payload`, `:n`).
    payload: serde_json::Value,
}

/// Who takes part: the worker sessions, a reaper, a canceller (the job's key).
#[derive(Debug, Clone)]
pub struct Cast {
    pub workers: usize,
    pub reaper: bool,
    pub cancel: Option<Key>,
    pub producer: bool,
}

const WORKERS: [&str; 3] = ["A", "B", "C"];

impl<'p> Model<'p> {
    pub fn new(plan: &'p Plan, cast: &Cast, base: SystemTime, bounds: Faults) -> Model<'p> {
        let actor = |name: &str, reaper: bool, canceller: bool| Actor {
            name: name.into(),
            reaper,
            canceller,
            producer: false,
            phase: Phase::Idle,
            job: None,
            got: Vec::new(),
            selected: Vec::new(),
            carried: Vec::new(),
            draws: 0,
            claims: 0,
            beats: 0,
            stamp: if reaper { Some(0) } else { None },
            waiting: None,
        };
        let mut actors: Vec<Actor> = WORKERS.iter().take(cast.workers).map(|n| actor(n, false, false)).collect();
        if cast.reaper {
            actors.push(actor("R", true, false));
        }
        let target = cast.cancel.clone().map(|key| Claimed {
            id: 0,
            key,
            attempt: -1,
            attempt_key: Key::Int(-1),
            token: None,
            tag: 0,
            seq: 0,
            class: 0,
        });
        if target.is_some() {
            actors.push(actor("X", false, true));
        }
        if cast.producer {
            let mut p = actor("P", false, false);
            p.producer = true;
            actors.push(p);
        }
        Model {
            plan,
            actors,
            ticks: 0,
            crashes: 0,
            changes: 1,
            journal: Vec::new(),
            faults: Vec::new(),
            records: Vec::new(),
            ids: Interner::default(),
            seq: 0,
            base,
            bounds,
            target,
            produced: 0,
            payload: serde_json::json!({ "n": plan.jobs.preload + 1 }),
        }
    }

    /// Whether a reaper session is worth having: the adapter reclaims in a step of its own.
    pub fn has_reaper(plan: &Plan) -> bool {
        plan.adapter.reclaim.is_some() && plan.lease.reclaim != Reclaim::Inline
    }

    fn hold_tx(&self) -> bool {
        self.plan.workers.mode == Mode::HoldTransaction
    }

    /// The lease plus a second: how far one tick moves the clock.
    pub fn tick_len(&self) -> Duration {
        self.plan.lease.duration + Duration::from_secs(1)
    }

    /// The virtual clock, µs since the schedule's start.
    fn epoch_us(&self) -> u64 {
        self.tick_len().as_micros() as u64 * u64::from(self.ticks)
    }

    /// The virtual clock as the SQL reads it: the ticks past the lease, and a millisecond
    /// more for each change committed before (a write, a tick, a crash). Time moves forward
    /// between a write and the next read of it, as real time always does (a job requeued with
    /// `start_after = now()` is due to a claim that asks `start_after < now()`), while steps
    /// that change nothing (a read, an empty claim) leave the clock where it was, so two orders
    /// of them still write the same times and meet.
    pub fn now(&self) -> SystemTime {
        self.base + Duration::from_micros(self.epoch_us() + self.changes * 1000)
    }

    /// A step of one plain read (no row lock, no write): it runs in autocommit, as one
    /// schedule step, since its commit commutes with every other step.
    fn autocommit(&self, kind: StepKind) -> bool {
        self.step(kind).is_some_and(|s| s.is_single() && read_only(&s.statements[0].text))
    }

    fn step(&self, kind: StepKind) -> Option<&'p Step> {
        let a = &self.plan.adapter;
        match kind {
            StepKind::Select => a.select.as_ref(),
            StepKind::Claim => Some(&a.claim),
            StepKind::Heartbeat => a.heartbeat.as_ref(),
            StepKind::Complete => Some(&a.complete),
            StepKind::Fail => a.fail.as_ref(),
            StepKind::Reclaim => a.reclaim.as_ref(),
            StepKind::Cancel => a.cancel.as_ref(),
            StepKind::Enqueue => Some(&a.enqueue),
        }
    }

    /// The steps enabled now, in a fixed order.
    pub fn enabled(&self) -> Vec<Op> {
        let mut ops = Vec::new();
        for (i, a) in self.actors.iter().enumerate() {
            if a.waiting.is_some() {
                continue;
            }
            let fresh = a.stamp.is_none_or(|s| self.changes > s);
            match &a.phase {
                Phase::Crashed => {}
                Phase::Idle if a.canceller || a.producer => {
                    if a.claims == 0 {
                        ops.push(Op::Start(i, if a.producer { StepKind::Enqueue } else { StepKind::Cancel }));
                    }
                }
                Phase::Idle if a.reaper => {
                    // A reclaim takes back what a lease let go: worth a run after each tick.
                    if a.stamp.is_none_or(|s| u64::from(self.ticks) > s) {
                        ops.push(Op::Start(i, StepKind::Reclaim));
                    }
                }
                Phase::Idle => {
                    if self.plan.adapter.select.is_some() && a.selected.is_empty() {
                        if fresh {
                            ops.push(Op::Start(i, StepKind::Select));
                        }
                    } else if fresh || !a.selected.is_empty() {
                        ops.push(Op::Start(i, StepKind::Claim));
                    }
                }
                Phase::Running { kind, sent, .. } => {
                    let total = self.step(*kind).map_or(0, |s| s.statements.len());
                    if *sent < total {
                        ops.push(Op::Next(i));
                    } else {
                        ops.push(Op::Commit(i));
                    }
                }
                Phase::Holding { in_tx } => {
                    if !in_tx && self.plan.adapter.heartbeat.is_some() && a.beats < self.bounds.heartbeats {
                        ops.push(Op::Start(i, StepKind::Heartbeat));
                    }
                    ops.push(Op::Start(i, StepKind::Complete));
                    if self.bounds.fail && self.plan.adapter.fail.is_some() {
                        ops.push(Op::Start(i, StepKind::Fail));
                    }
                }
            }
        }
        // The clock moves while someone holds a job, and not inside a claim's transaction: the
        // checkers measure a lease from the claim's return, and a lease that ran out before its
        // claim returned is no lease at all (a pause right after the commit is the same fault).
        let holding = self.actors.iter().any(|a| a.job.is_some());
        let claiming = self.actors.iter().any(|a| matches!(a.phase, Phase::Running { kind: StepKind::Claim, .. }));
        if holding && !claiming && self.ticks < self.bounds.ticks {
            ops.push(Op::Tick);
        }
        if self.crashes < self.bounds.crashes {
            for (i, a) in self.actors.iter().enumerate() {
                let busy = matches!(a.phase, Phase::Running { .. } | Phase::Holding { .. });
                if !a.reaper && !a.canceller && !a.producer && busy {
                    ops.push(Op::Crash(i));
                }
            }
        }
        ops
    }

    /// The text a statement step sends (`BEGIN` first for a step's first statement).
    pub fn sql(&self, op: Op) -> Option<String> {
        let (i, kind, index) = match op {
            Op::Start(i, kind) => (i, kind, 0),
            Op::Next(i) => match &self.actors[i].phase {
                Phase::Running { kind, sent, .. } => (i, *kind, *sent),
                _ => return None,
            },
            Op::Commit(_) => return Some("COMMIT".into()),
            Op::Tick | Op::Crash(_) => return None,
        };
        let actor = &self.actors[i];
        let s = &self.step(kind)?.statements[index];
        let mut v = Values::new(self.plan).at(self.now());
        v.worker = &actor.name;
        // The group the worker of this slot belongs to (`:pool`), as in a run.
        let slot = i as u32;
        v.pool = self.plan.workers.groups.iter().find(|(_, ids)| ids.contains(&slot)).map_or("", |(name, _)| name);
        v.ids = &actor.selected;
        v.job = if actor.canceller { self.target.as_ref() } else { actor.job.as_ref() };
        v.error = "explore";
        if actor.producer {
            v.enqueue.payload = Some(self.payload.clone());
            v.enqueue.n = self.plan.jobs.preload as i64 + 1;
            v.enqueue.count = 1;
            v.enqueue.class = "default";
        }
        let text = uuids(&literal(s, &v, &actor.carried, Clock::Virtual), i, actor.draws);
        let in_tx = matches!(self.actors[i].phase, Phase::Holding { in_tx: true });
        let begin = index == 0 && !in_tx && !self.autocommit(kind);
        Some(if begin { format!("BEGIN;\n{text}") } else { text })
    }

    /// The random uuids the statement `op` sends draws.
    fn step_draws(&self, op: Op) -> u32 {
        let (kind, index) = match (op, &op.actor().map(|a| &self.actors[a].phase)) {
            (Op::Start(_, kind), _) => (kind, 0),
            (Op::Next(_), Some(Phase::Running { kind, sent, .. })) => (*kind, *sent),
            _ => return 0,
        };
        self.step(kind).map_or(0, |s| s.statements[index].text.to_ascii_lowercase().matches(RANDOM_UUID).count() as u32)
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.epoch_us() + self.seq
    }

    fn event(&mut self, a: usize, job: &Claimed, kind: EventKind) {
        let t_us = self.next_seq();
        self.journal.push(Event {
            t_us,
            job: job.id,
            attempt: job.attempt,
            worker: a as u32 + 1,
            claim: self.actors[a].claims,
            kind,
            dur_us: 0,
            token: job.tag,
        });
    }

    /// A statement step's text was sent as record `index`, and it waits on a lock.
    pub fn blocked(&mut self, op: Op, index: usize) {
        self.records[index].result = "waits on a lock".into();
        if let Some(a) = op.actor() {
            self.actors[a].waiting = Some((op, index));
        }
    }

    fn record(&mut self, op: Op, sql: Option<String>, result: String) -> usize {
        let actor = op.actor().map_or("clock".to_string(), |a| self.actors[a].name.clone());
        let at_secs = self.epoch_us() as f64 / 1e6;
        self.records.push(Record { op, actor, sql, result, at_secs, waited_until: None });
        self.records.len() - 1
    }

    /// Applies a step that needs no statement (a tick, a crash once the session is gone).
    pub fn apply_fault(&mut self, op: Op) {
        match op {
            Op::Tick => {
                self.ticks += 1;
                self.changes += 1;
                let secs = self.epoch_us() as f64 / 1e6;
                self.record(op, None, format!("the lease runs out: the clock moves to {secs:.0} s"));
                let t_us = self.next_seq();
                self.faults.push(FaultEvent { t_us, kind: FaultKind::Pause, worker: None, job: None });
            }
            Op::Crash(a) => {
                self.record(op, None, "the connection closes; the server rolls its transaction back".into());
                self.crashes += 1;
                self.changes += 1;
                let held: Vec<Claimed> =
                    self.actors[a].job.take().into_iter().chain(self.actors[a].got.drain(..)).collect();
                let t_us = self.next_seq();
                self.faults.push(FaultEvent {
                    t_us,
                    kind: FaultKind::Crash,
                    worker: Some(a as u32 + 1),
                    job: held.first().map(|j| j.id),
                });
                // A job the session held (a claim committed, or returned in hold-transaction
                // mode) is let go; a claim not yet committed is rolled back with the rest.
                if let Some(j) = held
                    .first()
                    .filter(|_| !matches!(self.actors[a].phase, Phase::Running { kind: StepKind::Claim, .. }))
                {
                    self.event(a, &j.clone(), EventKind::Abandoned);
                }
                let actor = &mut self.actors[a];
                actor.phase = Phase::Crashed;
                actor.waiting = None;
            }
            _ => {}
        }
    }

    /// Records a statement step as sent with its text; returns its record's index.
    pub fn sent(&mut self, op: Op, sql: String) -> usize {
        let a = op.actor().expect("a statement step has an actor");
        self.actors[a].draws += self.step_draws(op);
        let index = self.record(op, Some(sql), String::new());
        let actor = &mut self.actors[a];
        match op {
            Op::Start(_, kind) => {
                actor.phase = Phase::Running { kind, sent: 1, accepted: None };
                actor.carried.clear();
                if kind == StepKind::Heartbeat {
                    actor.beats += 1;
                }
                if matches!(kind, StepKind::Cancel | StepKind::Enqueue) {
                    actor.claims += 1;
                }
            }
            Op::Next(_) => {
                if let Phase::Running { sent, .. } = &mut actor.phase {
                    *sent += 1;
                }
            }
            _ => {}
        }
        index
    }

    /// A statement step's outcome, as it returned at once (`index`: its record).
    pub fn outcome(&mut self, op: Op, out: &Outcome, index: usize) {
        self.finish(op, out, index, false);
    }

    /// The outcome of actor `a`'s step that waited on a lock.
    pub fn settled(&mut self, a: usize, out: &Outcome) {
        if let Some((op, index)) = self.actors[a].waiting.take() {
            self.finish(op, out, index, true);
        }
    }

    fn finish(&mut self, op: Op, out: &Outcome, index: usize, waited: bool) {
        let a = op.actor().expect("a statement step has an actor");
        let result = match out {
            Ok(rows) => {
                let said = self.returned(op, rows);
                match (op, &self.actors[a].phase) {
                    (Op::Start(_, kind), Phase::Running { accepted, .. }) if self.autocommit(kind) => {
                        let accepted = *accepted;
                        self.committed(a, kind, accepted);
                        format!("{said} (autocommit)")
                    }
                    _ => said,
                }
            }
            Err(e) => {
                self.failed(a);
                format!("ERROR: {e} (rolled back)")
            }
        };
        let after = self.records.len() - 1;
        let r = &mut self.records[index];
        if waited {
            r.result = format!("returns after step {}: {result}", after + 1);
            r.waited_until = Some(after);
        } else {
            r.result = result;
        }
    }

    /// A step's statement failed: its transaction is gone (the session rolls back).
    fn failed(&mut self, a: usize) {
        let phase = self.actors[a].phase.clone();
        let kind = match phase {
            Phase::Running { kind, .. } => kind,
            _ => return,
        };
        let actor = &mut self.actors[a];
        actor.got.clear();
        actor.carried.clear();
        match kind {
            StepKind::Select | StepKind::Claim | StepKind::Reclaim | StepKind::Cancel | StepKind::Enqueue => {
                actor.phase = Phase::Idle;
                actor.selected.clear();
                actor.stamp = Some(if actor.reaper { u64::from(self.ticks) } else { self.changes });
            }
            StepKind::Heartbeat | StepKind::Complete | StepKind::Fail => {
                // The write did not land; in hold-transaction mode the claim went with it.
                if let Some(job) = self.actors[a].job.clone() {
                    let what = match kind {
                        StepKind::Complete => EventKind::Rejected,
                        StepKind::Fail => EventKind::FailRejected,
                        _ => EventKind::HeartbeatRejected,
                    };
                    self.event(a, &job, what);
                    self.event(a, &job, EventKind::Abandoned);
                }
                let actor = &mut self.actors[a];
                actor.job = None;
                actor.phase = Phase::Idle;
            }
        }
    }

    fn returned(&mut self, op: Op, rows: &Rows) -> String {
        let a = op.actor().expect("an actor");
        let Phase::Running { kind, sent, accepted } = self.actors[a].phase.clone() else { return String::new() };
        if op == Op::Commit(a) {
            return self.committed(a, kind, accepted);
        }
        let step = self.step(kind).expect("a running step");
        let total = step.statements.len();
        let verdict = if sent == 1
            && matches!(kind, StepKind::Heartbeat | StepKind::Complete | StepKind::Fail | StepKind::Cancel)
        {
            let ok = judge(rows, step.accepted);
            if let Phase::Running { accepted, .. } = &mut self.actors[a].phase {
                *accepted = Some(ok);
            }
            Some(ok)
        } else {
            None
        };
        // The next statement's `:prev.COLUMN`s.
        if sent < total {
            let next = &step.statements[sent];
            self.actors[a].carried = next
                .carried
                .iter()
                .map(|c| rows.column(c).unwrap_or_default().into_iter().flatten().collect())
                .collect();
        }
        let last = sent == total;
        match kind {
            StepKind::Select if last => {
                let ids: Vec<i64> = rows.rows.iter().filter_map(|r| r.first()?.as_ref()?.parse().ok()).collect();
                let shown = format!("{ids:?}");
                self.actors[a].selected = ids;
                format!("selects {shown}")
            }
            StepKind::Claim if last => {
                let got = self.claimed(a, rows);
                let shown = shown(&got);
                if self.hold_tx() && !got.is_empty() {
                    // The claim's transaction stays open for the job: it is executed now.
                    self.actors[a].got = got;
                    self.take(a, true);
                    return format!("claims {shown} (its transaction stays open)");
                }
                self.actors[a].got = got;
                format!("claims {shown}")
            }
            _ => match verdict {
                Some(true) => "accepted".into(),
                Some(false) => "changes nothing".into(),
                None => format!("{} row(s)", rows.affected.max(rows.rows.len() as u64)),
            },
        }
    }

    /// The claim's rows as jobs.
    fn claimed(&mut self, a: usize, rows: &Rows) -> Vec<Claimed> {
        let cols = &self.plan.adapter.columns;
        let Some(ids) = rows.column(&cols.id) else { return Vec::new() };
        let attempts = cols.attempt.as_ref().and_then(|c| rows.column(c));
        let tokens = cols.token.as_ref().and_then(|c| rows.column(c));
        let mut out = Vec::new();
        for (k, id) in ids.into_iter().enumerate() {
            let Some(id) = id else { continue };
            let key = text_key(&id);
            let attempt = attempts.as_ref().and_then(|c| c[k].clone());
            let token = tokens.as_ref().and_then(|c| c[k].clone()).map(|t| text_key(&t));
            self.actors[a].claims += 1;
            out.push(Claimed {
                id: self.ids.surrogate(&key),
                key,
                attempt: attempt.as_deref().and_then(|t| t.parse().ok()).unwrap_or(-1),
                attempt_key: attempt.map_or(Key::Int(-1), |t| text_key(&t)),
                tag: token.as_ref().map_or(0, Key::tag),
                token,
                seq: self.actors[a].claims,
                class: 0,
            });
        }
        out
    }

    /// The actor takes the jobs its claim returned: claimed, then executed.
    fn take(&mut self, a: usize, in_tx: bool) {
        let got = std::mem::take(&mut self.actors[a].got);
        for j in &got {
            self.event(a, j, EventKind::Claimed);
            self.event(a, j, EventKind::Executed);
        }
        let actor = &mut self.actors[a];
        actor.job = got.into_iter().next();
        actor.beats = 0;
        actor.phase = if actor.job.is_some() { Phase::Holding { in_tx } } else { Phase::Idle };
    }

    fn committed(&mut self, a: usize, kind: StepKind, accepted: Option<bool>) -> String {
        self.actors[a].carried.clear();
        match kind {
            StepKind::Select => {
                self.actors[a].phase = Phase::Idle;
                if self.actors[a].selected.is_empty() {
                    self.actors[a].stamp = Some(self.changes);
                }
                "committed".into()
            }
            StepKind::Claim => {
                self.actors[a].selected.clear();
                if self.actors[a].got.is_empty() {
                    self.actors[a].phase = Phase::Idle;
                    self.actors[a].stamp = Some(self.changes);
                    return "committed (nothing claimed)".into();
                }
                self.changes += 1;
                self.take(a, false);
                "committed: the job is the session's, and it runs it".into()
            }
            StepKind::Enqueue => {
                self.actors[a].phase = Phase::Idle;
                self.changes += 1;
                self.produced += 1;
                "committed: one more job waits".into()
            }
            StepKind::Cancel => {
                self.actors[a].phase = Phase::Idle;
                if accepted != Some(true) {
                    return "committed (the cancel changed nothing: the job was no longer waiting)".into();
                }
                self.changes += 1;
                let key = self.target.as_ref().map(|t| t.key.clone()).expect("a canceller has a target");
                let job = self.ids.surrogate(&key);
                let t_us = self.next_seq();
                self.faults.push(FaultEvent { t_us, kind: FaultKind::Cancel, worker: None, job: Some(job) });
                "committed: the job is cancelled".into()
            }
            StepKind::Reclaim => {
                self.changes += 1;
                self.actors[a].phase = Phase::Idle;
                self.actors[a].stamp = Some(u64::from(self.ticks));
                "committed".into()
            }
            StepKind::Heartbeat | StepKind::Complete | StepKind::Fail => {
                self.changes += 1;
                let ok = accepted.unwrap_or(false);
                let job = self.actors[a].job.clone();
                let what = match (kind, ok) {
                    (StepKind::Heartbeat, true) => EventKind::HeartbeatOk,
                    (StepKind::Heartbeat, false) => EventKind::HeartbeatRejected,
                    (StepKind::Complete, true) => EventKind::Accepted,
                    (StepKind::Complete, false) => EventKind::Rejected,
                    (_, true) => EventKind::FailAccepted,
                    (_, false) => EventKind::FailRejected,
                };
                if let Some(j) = &job {
                    self.event(a, j, what);
                }
                if kind == StepKind::Heartbeat && ok {
                    self.actors[a].phase = Phase::Holding { in_tx: false };
                } else {
                    if kind == StepKind::Heartbeat
                        && let Some(j) = &job
                    {
                        self.event(a, j, EventKind::Abandoned);
                    }
                    let actor = &mut self.actors[a];
                    actor.job = None;
                    actor.phase = Phase::Idle;
                    actor.stamp = None;
                }
                format!("committed ({})", if ok { "the write landed" } else { "the write changed nothing" })
            }
        }
    }

    /// What two schedules must share to count as the same state (besides the tables): each
    /// actor's place, job and carried values, the clock, the faults used, and the journal
    /// without its times inside a tick.
    pub fn key(&self) -> String {
        let mut out = format!("t{} c{}\n", self.ticks, self.crashes);
        for a in &self.actors {
            let fresh = a.stamp.is_none_or(|s| self.changes > s);
            let job = a.job.as_ref().map(|j| (j.id, j.attempt, j.tag));
            let got: Vec<i64> = a.got.iter().map(|j| j.id).collect();
            let waiting = a.waiting.map(|(op, _)| op);
            out.push_str(&format!(
                "{} {:?} {job:?} {got:?} {:?} {:?} {} {} {fresh} {waiting:?}\n",
                a.name, a.phase, a.selected, a.carried, a.claims, a.beats
            ));
        }
        let tick = self.tick_len().as_micros() as u64;
        let mut events: Vec<String> = self
            .journal
            .iter()
            .map(|e| format!("{}:{}:{}:{:?}:{}", e.t_us / tick, e.worker, e.job, e.kind, e.claim))
            .collect();
        events.sort();
        out.push_str(&events.join(","));
        out
    }
}

const RANDOM_UUID: &str = "gen_random_uuid()";

/// Every `gen_random_uuid()` in `sql` as a fixed uuid: session `actor`'s draw `from`, `from + 1`,
/// … A token stays unique to its claim, and two schedules that reach the same state by steps
/// in another order write the same tokens, so the states meet (a random token would keep
/// every state apart).
fn uuids(sql: &str, actor: usize, from: u32) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut rest = sql;
    let mut draw = from;
    while let Some(i) = rest.to_ascii_lowercase().find(RANDOM_UUID) {
        out.push_str(&rest[..i]);
        draw += 1;
        out.push_str(&format!("'00000000-0000-4000-8000-{:04x}{draw:08x}'::uuid", actor + 1));
        rest = &rest[i + RANDOM_UUID.len()..];
    }
    out.push_str(rest);
    out
}

fn text_key(t: &str) -> Key {
    match t.parse::<i64>() {
        Ok(n) => Key::Int(n),
        Err(_) => match uuid::Uuid::parse_str(t) {
            Ok(u) => Key::Uuid(u),
            Err(_) => Key::Text(t.to_string()),
        },
    }
}

fn shown(jobs: &[Claimed]) -> String {
    if jobs.is_empty() {
        "nothing".into()
    } else {
        let keys: Vec<String> = jobs.iter().map(|j| j.key.show()).collect();
        format!("job {}", keys.join(", "))
    }
}

/// A write's verdict by its rule, from its text result.
fn judge(rows: &Rows, rule: Accepted) -> bool {
    let first = rows.rows.first().and_then(|r| r.first().cloned().flatten());
    match rule {
        Accepted::Rows => rows.affected > 0,
        Accepted::True => first.as_deref() == Some("t"),
        Accepted::Positive => first.and_then(|t| t.parse::<f64>().ok()).is_some_and(|n| n > 0.0),
    }
}

/// A plain read: one SELECT (or WITH … SELECT) with no locking clause, no write and no
/// advisory lock. Anything else is taken to write.
fn read_only(text: &str) -> bool {
    let code: String = text.lines().map(|l| l.split_once("--").map_or(l, |(c, _)| c)).collect::<Vec<_>>().join(" ");
    let lower = code.to_ascii_lowercase();
    let words: Vec<&str> =
        lower.split(|c: char| !c.is_ascii_alphanumeric() && c != '_').filter(|w| !w.is_empty()).collect();
    let starts = matches!(words.first(), Some(&"select") | Some(&"with"));
    let writes = ["insert", "update", "delete", "merge", "share", "nextval", "setval", "notify", "lock", "into"];
    starts
        && !words.iter().any(|w| writes.contains(w) || w.starts_with("pg_advisory") || w.starts_with("pg_try_advisory"))
}

#[cfg(test)]
mod tests {
    use super::read_only;

    #[test]
    fn random_uuids_are_fixed_per_session_and_draw() {
        let sql = "SET token = gen_random_uuid(), other = GEN_RANDOM_UUID()";
        let out = super::uuids(sql, 1, 4);
        assert_eq!(
            out,
            "SET token = '00000000-0000-4000-8000-000200000005'::uuid, other = '00000000-0000-4000-8000-000200000006'::uuid"
        );
        assert_ne!(super::uuids("gen_random_uuid()", 0, 0), super::uuids("gen_random_uuid()", 1, 0));
    }

    #[test]
    fn only_a_plain_select_is_read_only() {
        assert!(read_only("SELECT id FROM jobs WHERE status = 'queued' -- FOR UPDATE in a comment\nLIMIT 1"));
        assert!(!read_only("SELECT id FROM jobs FOR UPDATE SKIP LOCKED"));
        assert!(!read_only("SELECT id FROM jobs FOR SHARE"));
        assert!(!read_only("WITH x AS (UPDATE jobs SET a = 1 RETURNING id) SELECT id FROM x"));
        assert!(!read_only("SELECT pg_try_advisory_lock(id) FROM jobs"));
        assert!(!read_only("UPDATE jobs SET a = 1"));
    }
}
