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

use crate::adapter::Step;
use crate::adapter::keys::{Interner, Key};
use crate::collect::{Event, FaultEvent};
use crate::model::protocol::{Mode, Reclaim};
use crate::run::literal::{Clock, literal};
use crate::run::values::{Claimed, Values};
use crate::scenario::Plan;
use std::time::{Duration, SystemTime};

mod ack;
mod inside;
mod outcome;
mod text;

use text::{read_only, uuids};

/// Which step of the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum StepKind {
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
pub(super) enum Op {
    /// `BEGIN` and the step's first statement.
    Start(usize, StepKind),
    /// The step's next statement.
    Next(usize),
    Commit(usize),
    /// The virtual clock moves past the lease.
    Tick,
    /// The session's connection closes mid-transaction.
    Crash(usize),
    /// The session's next statement (a step's first, `Some(kind)`, or its next, `None`), sent
    /// with a pause inside: it stops after its snapshot, before its first lock (`pause`).
    Paused(usize, Option<StepKind>),
    /// The paused statement runs on.
    Resume(usize),
    /// The completion's COMMIT lands and its answer is lost (`ack_lost`): the session's
    /// connection closes, it connects again and holds the job as before, its outcome unknown.
    AckLost(usize),
}

impl Op {
    pub(super) fn actor(self) -> Option<usize> {
        match self {
            Op::Start(a, _)
            | Op::Next(a)
            | Op::Commit(a)
            | Op::Crash(a)
            | Op::Paused(a, _)
            | Op::Resume(a)
            | Op::AckLost(a) => Some(a),
            Op::Tick => None,
        }
    }
}

/// Where an actor is in its protocol.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Phase {
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

/// What an actor does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    /// Claims, works, heartbeats, completes or fails.
    Worker,
    /// Runs the reclaim after each tick.
    Reaper,
    /// Cancels the first preloaded job, once (`--cancel`).
    Canceller,
    /// Enqueues one job during the schedule, once (`--producer`).
    Producer,
}

impl Role {
    /// The one step a canceller or a producer sends, once.
    fn once(self) -> Option<StepKind> {
        match self {
            Role::Canceller => Some(StepKind::Cancel),
            Role::Producer => Some(StepKind::Enqueue),
            Role::Worker | Role::Reaper => None,
        }
    }
}

#[derive(Debug, Clone)]
pub(super) struct Actor {
    pub name: String,
    pub role: Role,
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
    /// The token the heartbeat in flight handed back, taken as its commit lands.
    renewed: Option<Key>,
    /// The model's change count when this actor's last claim (or reclaim) found nothing: it
    /// tries again only after something changed.
    stamp: Option<u64>,
    /// Waiting on a lock: the step, and its record.
    pub waiting: Option<(Op, usize)>,
}

/// The search's bounds on faults.
#[derive(Debug, Clone, Copy)]
pub(super) struct Faults {
    pub ticks: u32,
    pub crashes: u32,
    pub heartbeats: u32,
    pub fail: bool,
    /// Statements may also pause inside, after their snapshot and before their first lock.
    pub inside: bool,
    /// Completions whose answer may be lost in one schedule (`ack_lost`).
    pub acks_lost: u32,
}

/// A step as it happened, for the printed counterexample.
#[derive(Debug, Clone)]
pub(super) struct Record {
    pub op: Op,
    pub actor: String,
    /// The text sent (None for a tick).
    pub sql: Option<String>,
    pub result: String,
    /// Seconds on the virtual clock.
    pub at_secs: f64,
    /// The step it returned after, when it waited on a lock.
    pub waited_until: Option<usize>,
    /// A step of the schedule (`schedule`'s words): false for the gate's own lines that a
    /// paused statement brings with it (its gate closing, and opening when it never paused).
    pub step: bool,
}

pub(super) struct Model<'p> {
    pub plan: &'p Plan,
    pub actors: Vec<Actor>,
    pub ticks: u32,
    crashes: u32,
    /// Completions whose answer was lost so far (`ack_lost`).
    acks: u32,
    changes: u64,
    /// Virtual time passed beyond the ticks while the schedule was left to itself (`pass_time`).
    skipped_us: u64,
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
    /// The job ids are text (`Cast::text_ids`).
    text_ids: bool,
    /// Each claimed job's exclusion key (`[result] exclusion_key`), for `mutual_exclusion`.
    pub exclusion_keys: Vec<(i64, String)>,
    /// The claims the server refused, by SQLSTATE (a unique violation: two holders of one key).
    pub claim_errors: Vec<crate::model::errors::ErrorCount>,
}

/// Who takes part: the worker sessions, a reaper, a canceller (the job's key).
#[derive(Debug, Clone)]
pub(super) struct Cast {
    pub workers: usize,
    pub reaper: bool,
    pub cancel: Option<Key>,
    pub producer: bool,
    /// The queue keeps its job ids as text (the observer's `id` column is text): a claim's id
    /// stays text even when it reads as a number.
    pub text_ids: bool,
}

const WORKERS: [&str; 3] = ["A", "B", "C"];

impl<'p> Model<'p> {
    pub(super) fn new(plan: &'p Plan, cast: &Cast, base: SystemTime, bounds: Faults) -> Model<'p> {
        let actor = |name: &str, role: Role| Actor {
            name: name.into(),
            role,
            phase: Phase::Idle,
            job: None,
            got: Vec::new(),
            selected: Vec::new(),
            carried: Vec::new(),
            draws: 0,
            claims: 0,
            beats: 0,
            renewed: None,
            stamp: if role == Role::Reaper { Some(0) } else { None },
            waiting: None,
        };
        let mut actors: Vec<Actor> = WORKERS.iter().take(cast.workers).map(|n| actor(n, Role::Worker)).collect();
        if cast.reaper {
            actors.push(actor("R", Role::Reaper));
        }
        let target = cast.cancel.clone().map(|key| Claimed::bare(0, key));
        if target.is_some() {
            actors.push(actor("X", Role::Canceller));
        }
        if cast.producer {
            actors.push(actor("P", Role::Producer));
        }
        Model {
            plan,
            actors,
            ticks: 0,
            crashes: 0,
            acks: 0,
            changes: 1,
            skipped_us: 0,
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
            exclusion_keys: Vec::new(),
            claim_errors: Vec::new(),
            text_ids: cast.text_ids,
        }
    }

    /// Whether a reaper session is worth having: the adapter reclaims in a step of its own.
    pub(super) fn has_reaper(plan: &Plan) -> bool {
        plan.adapter.reclaim.is_some() && plan.lease.reclaim != Reclaim::Inline
    }

    /// Actor `a` is in its claim (or its select step).
    pub(super) fn claiming(&self, a: usize) -> bool {
        matches!(self.actors[a].phase, Phase::Running { kind: StepKind::Claim | StepKind::Select, .. })
    }

    fn hold_tx(&self) -> bool {
        self.plan.workers.mode == Mode::HoldTransaction
    }

    /// The lease plus a second: how far one tick moves the clock.
    pub(super) fn tick_len(&self) -> Duration {
        self.plan.lease.duration + Duration::from_secs(1)
    }

    /// The virtual clock, µs since the schedule's start (ticks and time passed; the
    /// journal's own times add a µs per event on top).
    pub(super) fn epoch_us(&self) -> u64 {
        self.tick_len().as_micros() as u64 * u64::from(self.ticks) + self.skipped_us
    }

    /// The virtual clock as the SQL reads it: the ticks past the lease, and a millisecond
    /// more for each change committed before (a write, a tick, a crash). Time moves forward
    /// between a write and the next read of it, as real time always does (a job requeued with
    /// `start_after = now()` is due to a claim that asks `start_after < now()`), while steps
    /// that change nothing (a read, an empty claim) leave the clock where it was, so two orders
    /// of them still write the same times and meet.
    pub(super) fn now(&self) -> SystemTime {
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
    pub(super) fn enabled(&self) -> Vec<Op> {
        let mut ops = Vec::new();
        for (i, a) in self.actors.iter().enumerate() {
            if a.waiting.is_some() {
                continue;
            }
            let fresh = a.stamp.is_none_or(|s| self.changes > s);
            match &a.phase {
                Phase::Crashed => {}
                Phase::Idle if a.role.once().is_some() => {
                    if let Some(kind) = a.role.once().filter(|_| a.claims == 0) {
                        ops.push(Op::Start(i, kind));
                    }
                }
                Phase::Idle if a.role == Role::Reaper => {
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
                if a.role == Role::Worker && busy {
                    ops.push(Op::Crash(i));
                }
            }
        }
        self.with_acks_lost(self.with_pauses(ops))
    }

    /// The steps a session takes when the schedule is left to itself: its protocol, with no
    /// fault, heartbeat or failure (a worker completes what it holds), and no tick (time
    /// passes only when nobody can step: `pass_time`).
    pub(super) fn settling(&self) -> Vec<Op> {
        let own = |op: &Op| match op {
            Op::Start(_, kind) => !matches!(kind, StepKind::Heartbeat | StepKind::Fail),
            Op::Next(_) | Op::Commit(_) | Op::Resume(_) => true,
            Op::Tick | Op::Crash(_) | Op::Paused(..) | Op::AckLost(_) => false,
        };
        self.enabled().into_iter().filter(own).collect()
    }

    /// The text a statement step sends (`BEGIN` first for a step's first statement).
    pub(super) fn sql(&self, op: Op) -> Option<String> {
        let (i, kind, index) = match op {
            Op::Start(i, kind) => (i, kind, 0),
            Op::Next(i) => match &self.actors[i].phase {
                Phase::Running { kind, sent, .. } => (i, *kind, *sent),
                _ => return None,
            },
            Op::Commit(_) | Op::AckLost(_) => return Some("COMMIT".into()),
            Op::Paused(..) => return self.paused_sql(op),
            Op::Tick | Op::Crash(_) | Op::Resume(_) => return None,
        };
        let actor = &self.actors[i];
        let s = &self.step(kind)?.statements[index];
        let mut v = Values::new(self.plan).at(self.now());
        v.worker = &actor.name;
        // The group the worker of this slot belongs to (`:pool`), as in a run (w1 = slot 1).
        let slot = i as u32 + 1;
        v.pool = self.plan.workers.group_of(slot).unwrap_or("");
        v.ids = &actor.selected;
        v.job = if actor.role == Role::Canceller { self.target.as_ref() } else { actor.job.as_ref() };
        v.error = "explore";
        if actor.role == Role::Producer {
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

    /// What two schedules must share to count as the same state (besides the tables): each
    /// actor's place, job and carried values, the clock, the faults used, and the journal
    /// without its times inside a tick.
    pub(super) fn key(&self) -> String {
        let mut out = format!("t{} c{} a{}\n", self.ticks, self.crashes, self.acks);
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
