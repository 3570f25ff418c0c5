//! What a step's outcome means for the model: a statement sent, waiting on a lock, returned
//! or failed; a commit and what it leaves the actor holding; the faults that need no statement;
//! and the journal the checkers read, event by event.

use super::text::{RANDOM_UUID, judge, shown, text_key};
use super::{Model, Op, Phase, Record, Role, StepKind};
use crate::adapter::keys::Key;
use crate::collect::{Event, EventKind, FaultEvent, FaultKind};
use crate::explore::session::{Outcome, Rows};
use crate::run::values::Claimed;

impl<'p> Model<'p> {
    /// The random uuids the statement `op` sends draws.
    fn step_draws(&self, op: Op) -> u32 {
        let op = op.plain();
        let (kind, index) = match (op, &op.actor().map(|a| &self.actors[a].phase)) {
            (Op::Start(_, kind), _) => (kind, 0),
            (Op::Next(_), Some(Phase::Running { kind, sent, .. })) => (*kind, *sent),
            _ => return 0,
        };
        self.step(kind).map_or(0, |s| s.statements[index].text.to_ascii_lowercase().matches(RANDOM_UUID).count() as u32)
    }

    pub(super) fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.epoch_us() + self.seq
    }

    pub(super) fn event(&mut self, a: usize, job: &Claimed, kind: EventKind) {
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
    pub(crate) fn blocked(&mut self, op: Op, index: usize) {
        self.records[index].result = "waits on a lock".into();
        if let Some(a) = op.actor() {
            self.actors[a].waiting = Some((op, index));
        }
    }

    fn record(&mut self, op: Op, sql: Option<String>, result: String) -> usize {
        let actor = op.actor().map_or("clock".to_string(), |a| self.actors[a].name.clone());
        let at_secs = self.epoch_us() as f64 / 1e6;
        self.records.push(Record { op, actor, sql, result, at_secs, waited_until: None, step: true });
        self.records.len() - 1
    }

    /// Applies a step that needs no statement (a tick, a crash once the session is gone).
    pub(crate) fn apply_fault(&mut self, op: Op) {
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
                // A job the session held (a claim committed, or returned in hold-transaction
                // mode) is let go; a claim not yet committed is rolled back with the rest, and
                // the crash did not hit its job.
                let claiming = matches!(self.actors[a].phase, Phase::Running { kind: StepKind::Claim, .. });
                let hit = held.first().filter(|_| !claiming).cloned();
                let t_us = self.next_seq();
                let job = hit.as_ref().map(|j| j.id);
                self.faults.push(FaultEvent { t_us, kind: FaultKind::Crash, worker: Some(a as u32 + 1), job });
                if let Some(j) = hit {
                    self.event(a, &j, EventKind::Abandoned);
                }
                let actor = &mut self.actors[a];
                actor.phase = Phase::Crashed;
                actor.waiting = None;
            }
            _ => {}
        }
    }

    /// Left to itself, nobody can step: the clock moves on `leases` ticks' worth (a lease and
    /// a second each), so leases run out and backoffs come due. The reaper may run again, and
    /// every session tries its claim again. Time passing is no fault: no fault event.
    pub(crate) fn pass_time(&mut self, leases: u64) {
        self.ticks += 1;
        self.changes += 1;
        self.skipped_us += self.tick_len().as_micros() as u64 * leases.saturating_sub(1);
        let secs = self.epoch_us() as f64 / 1e6;
        let what = if leases == 1 { "a lease".to_string() } else { format!("{leases} leases") };
        self.record(Op::Tick, None, format!("time passes ({what}): the clock moves to {secs:.0} s"));
    }

    /// Records a statement step as sent with its text; returns its record's index.
    pub(crate) fn sent(&mut self, op: Op, sql: String) -> usize {
        let a = op.actor().expect("a statement step has an actor");
        self.actors[a].draws += self.step_draws(op);
        let index = self.record(op, Some(sql), String::new());
        let actor = &mut self.actors[a];
        match op.plain() {
            Op::Start(_, kind) => {
                actor.phase = Phase::Running { kind, sent: 1, accepted: None };
                actor.carried.clear();
                actor.renewed = None;
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
    pub(crate) fn outcome(&mut self, op: Op, out: &Outcome, index: usize) {
        self.finish(op.plain(), out, index, false);
    }

    /// The outcome of actor `a`'s step that waited on a lock.
    pub(crate) fn settled(&mut self, a: usize, out: &Outcome) {
        if let Some((op, index)) = self.actors[a].waiting.take() {
            self.finish(op.plain(), out, index, true);
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
                if matches!(self.actors[a].phase, Phase::Running { kind: StepKind::Claim, .. }) {
                    self.claim_error(&e.0);
                }
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

    /// A claim the server refused, counted by its SQLSTATE (the text ends `(SQLSTATE 23505)`).
    fn claim_error(&mut self, text: &str) {
        let Some(code) = text.rsplit_once("(SQLSTATE ").and_then(|(_, c)| c.strip_suffix(')')) else { return };
        match self.claim_errors.iter_mut().find(|c| c.code == code) {
            Some(c) => c.count += 1,
            None => self.claim_errors.push(crate::model::errors::ErrorCount {
                statement: crate::model::errors::Statement::Claim,
                code: code.to_string(),
                count: 1,
                first: text.to_string(),
            }),
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
        actor.renewed = None;
        match kind {
            StepKind::Select | StepKind::Claim | StepKind::Reclaim | StepKind::Cancel | StepKind::Enqueue => {
                actor.phase = Phase::Idle;
                actor.selected.clear();
                actor.stamp = Some(if actor.role == Role::Reaper { u64::from(self.ticks) } else { self.changes });
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
            if ok && kind == StepKind::Heartbeat {
                self.renew(a, rows);
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

    /// A heartbeat that landed and handed back a new token (the `[result] token` column, as a
    /// run reads it): later heartbeats and the completion bind the newest one, as in a run.
    fn renew(&mut self, a: usize, rows: &Rows) {
        let Some(column) = self.plan.adapter.columns.token.as_ref() else { return };
        let Some(token) = rows.column(column).and_then(|c| c.into_iter().next().flatten()) else { return };
        self.actors[a].renewed = Some(text_key(&token));
    }

    /// The claim's rows as jobs.
    fn claimed(&mut self, a: usize, rows: &Rows) -> Vec<Claimed> {
        let cols = &self.plan.adapter.columns;
        let Some(ids) = rows.column(&cols.id) else { return Vec::new() };
        let attempts = cols.attempt.as_ref().and_then(|c| rows.column(c));
        let tokens = cols.token.as_ref().and_then(|c| rows.column(c));
        let keys = cols.exclusion_key.as_ref().and_then(|c| rows.column(c));
        let mut out = Vec::new();
        for (k, id) in ids.into_iter().enumerate() {
            let Some(id) = id else { continue };
            // An id the queue keeps as text stays text, even when it reads as a number: the
            // observer reads it so, and the completion binds it so.
            let key = if self.text_ids { Key::Text(id.clone()) } else { text_key(&id) };
            let attempt = attempts.as_ref().and_then(|c| c[k].clone());
            let token = tokens.as_ref().and_then(|c| c[k].clone()).map(|t| text_key(&t));
            self.actors[a].claims += 1;
            let surrogate = self.ids.surrogate(&key);
            if let Some(k) = keys.as_ref().and_then(|c| c[k].clone()) {
                self.exclusion_keys.push((surrogate, k));
            }
            out.push(Claimed {
                id: self.ids.surrogate(&key),
                key,
                attempt: attempt.as_deref().and_then(|t| t.parse().ok()).unwrap_or(-1),
                attempt_key: attempt.map_or(Key::Int(-1), |t| text_key(&t)),
                tag: token.as_ref().map_or(0, Key::tag),
                token,
                seq: self.actors[a].claims,
                class: 0,
                exclusion: None,
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
            StepKind::Heartbeat | StepKind::Complete | StepKind::Fail => self.wrote(a, kind, accepted),
        }
    }

    /// A heartbeat, completion or failure committed: whether its write landed, in the journal.
    fn wrote(&mut self, a: usize, kind: StepKind, accepted: Option<bool>) -> String {
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
        let renewed = self.actors[a].renewed.take();
        if kind == StepKind::Heartbeat && ok {
            let actor = &mut self.actors[a];
            if let (Some(job), Some(key)) = (actor.job.as_mut(), renewed) {
                job.tag = key.tag();
                job.token = Some(key);
            }
            actor.phase = Phase::Holding { in_tx: false };
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
