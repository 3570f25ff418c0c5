//! A process client's evidence as the checkers' journal: each `start` event line is a claim,
//! `end` an accepted completion, `error` an accepted failure (the library retries per its own
//! policy), each effect row an execution (matched to the claim of the same worker and job
//! that started last before it), and a process SIGKILLed with jobs in its hands abandons them.
//! An event line says the handler returned, not that the library's own write landed: when the
//! library's table still holds the job (queued or running) after its last claim's `end` (or
//! running after its `error`), that write did not land (it died with its connection), and the
//! claim ends abandoned instead (`settle`).
//! Times are Unix epoch milliseconds (the worker's clock and the server's `clock_timestamp()`,
//! on the same machine), made relative to the run's start.

use super::child::ClientEvent;
use crate::adapter::keys::{Interner, Key};
use crate::collect::{Event, EventKind, Latency, WorkerStats};
use crate::model::records::{JobRow, Status};
use std::collections::HashMap;

/// One `queuebench_effects` row.
#[derive(Debug, Clone)]
pub(crate) struct Effect {
    pub job_id: String,
    pub worker: String,
    pub attempt: Option<i32>,
    pub at_ms: f64,
}

/// A SIGKILL: worker identity and epoch milliseconds.
pub(crate) struct Killed {
    pub identity: u32,
    pub at_ms: f64,
}

/// The key a job id given as text stands for: an integer, a uuid, or the text itself (the
/// observer query returns the id in its own column type).
pub(crate) fn key_of(text: &str) -> Key {
    if let Ok(i) = text.parse::<i64>() {
        return Key::Int(i);
    }
    match uuid::Uuid::parse_str(text) {
        Ok(u) => Key::Uuid(u),
        Err(_) => Key::Text(text.to_string()),
    }
}

/// `p7` → 7 (0 for a name not made by queuebench).
pub(crate) fn identity(worker: &str) -> u32 {
    worker.strip_prefix('p').and_then(|n| n.parse().ok()).unwrap_or(0)
}

/// A claim: its number, when it started (µs), still open.
type Claim = (u32, u64, bool);

struct Builder<'a> {
    start_ms: f64,
    ids: &'a Interner,
    journal: Vec<Event>,
    /// (worker, job) → its claims: (claim number, start time µs, still open).
    claims: HashMap<(u32, i64), Vec<Claim>>,
    next_claim: HashMap<u32, u32>,
}

impl Builder<'_> {
    fn t_us(&self, ms: f64) -> u64 {
        ((ms - self.start_ms) * 1000.0).max(0.0) as u64
    }

    fn push(&mut self, t_us: u64, job: i64, worker: u32, claim: u32, kind: EventKind, dur_us: u32) {
        self.journal.push(Event { t_us, job, attempt: -1, worker, claim, kind, dur_us, token: 0 });
    }

    fn event(&mut self, e: &ClientEvent, stats: &mut WorkerStats) {
        let (job, worker, t) = (self.ids.surrogate(&key_of(&e.job)), identity(&e.worker), self.t_us(e.t));
        if e.ev == "start" {
            let n = self.next_claim.entry(worker).or_insert(0);
            *n += 1;
            let claim = *n;
            self.claims.entry((worker, job)).or_default().push((claim, t, true));
            self.push(t, job, worker, claim, EventKind::Claimed, 0);
            stats.claims += 1;
            stats.claimed_jobs += 1;
            stats.second(t).claims += 1;
            return;
        }
        let kind = if e.ev == "end" { EventKind::Accepted } else { EventKind::FailAccepted };
        let open = self.claims.get_mut(&(worker, job)).and_then(|c| c.iter_mut().rev().find(|c| c.2));
        let Some(c) = open else { return };
        c.2 = false;
        let (claim, started) = (c.0, c.1);
        self.push(t, job, worker, claim, kind, 0);
        stats.record(Latency::Work, t, t.saturating_sub(started));
        if kind == EventKind::Accepted {
            stats.second(t).completions += 1;
        }
    }

    fn effect(&mut self, e: &Effect, stats: &mut WorkerStats) {
        let (job, worker, t) = (self.ids.surrogate(&key_of(&e.job_id)), identity(&e.worker), self.t_us(e.at_ms));
        // The claim that started last before the effect (a little slack for the two clocks).
        let claim = self
            .claims
            .get(&(worker, job))
            .and_then(|c| c.iter().rev().find(|c| c.1 <= t + 5_000).or(c.first()))
            .map_or(0, |c| c.0);
        self.journal.push(Event {
            t_us: t,
            job,
            attempt: e.attempt.unwrap_or(-1),
            worker,
            claim,
            kind: EventKind::Executed,
            dur_us: 0,
            token: 0,
        });
        stats.second(t).executions += 1;
    }

    fn killed(&mut self, k: &Killed) {
        let t = self.t_us(k.at_ms);
        let open: Vec<(i64, u32)> = self
            .claims
            .iter()
            .filter(|((w, _), _)| *w == k.identity)
            .flat_map(|((_, job), c)| c.iter().filter(|c| c.2 && c.1 <= t).map(move |c| (*job, c.0)))
            .collect();
        for (job, claim) in open {
            self.push(t, job, k.identity, claim, EventKind::Abandoned, 0);
        }
    }
}

/// The journal (sorted as the checkers expect) and the harness-side counters. `finals` is the
/// library's table as the paired adapter reads it after the run (empty: not read).
pub(crate) fn build(
    start_ms: f64,
    events: &[ClientEvent],
    effects: &[Effect],
    killed: &[Killed],
    ids: &Interner,
    finals: &[JobRow],
) -> (Vec<Event>, WorkerStats) {
    let mut stats = WorkerStats::default();
    let mut b = Builder { start_ms, ids, journal: Vec::new(), claims: HashMap::new(), next_claim: HashMap::new() };
    let mut events: Vec<&ClientEvent> = events.iter().collect();
    events.sort_by(|a, b| a.t.total_cmp(&b.t));
    for e in events {
        b.event(e, &mut stats);
    }
    for k in killed {
        b.killed(k);
    }
    for e in effects {
        b.effect(e, &mut stats);
    }
    let mut journal = b.journal;
    journal.sort_unstable_by_key(Event::order);
    settle(&mut journal, &mut stats, finals);
    journal.sort_unstable_by_key(Event::order);
    (journal, stats)
}

/// Each job's last claim, ended by an `end` (or `error`) line that the library's table
/// contradicts, ends abandoned: the handler returned but the library's own completion (or
/// failure) did not land — procrastinate's and PgQueuer's finish writes die with a terminated
/// connection and leave the job `doing` / `picked`. Counted as a completion no longer.
fn settle(journal: &mut [Event], stats: &mut WorkerStats, finals: &[JobRow]) {
    let mut i = 0;
    while i < journal.len() {
        let job = journal[i].job;
        let end = i + journal[i..].iter().take_while(|e| e.job == job).count();
        let events = &mut journal[i..end];
        i = end;
        let Some(row) = finals.iter().find(|r| r.id == job) else { continue };
        let Some(last) = events.iter().filter(|e| e.kind == EventKind::Claimed).max_by_key(|e| e.t_us) else {
            continue;
        };
        let (worker, claim) = (last.worker, last.claim);
        let closing = events.iter_mut().find(|e| {
            (e.worker, e.claim) == (worker, claim) && matches!(e.kind, EventKind::Accepted | EventKind::FailAccepted)
        });
        let Some(e) = closing else { continue };
        let unlanded = match e.kind {
            EventKind::Accepted => matches!(row.status, Status::Queued | Status::Running),
            _ => row.status == Status::Running,
        };
        if unlanded {
            if e.kind == EventKind::Accepted {
                let s = stats.second(e.t_us);
                s.completions = s.completions.saturating_sub(1);
            }
            e.kind = EventKind::Abandoned;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(ev: &str, job: &str, worker: &str, t: f64) -> ClientEvent {
        ClientEvent { ev: ev.into(), job: job.into(), worker: worker.into(), t }
    }

    #[test]
    fn effects_join_the_claim_that_started_before_them() {
        let ids = Interner::default();
        let events = [ev("start", "5", "p1", 1010.0), ev("end", "5", "p1", 1020.0), ev("start", "5", "p2", 1100.0)];
        let effects = [
            Effect { job_id: "5".into(), worker: "p1".into(), attempt: Some(0), at_ms: 1015.0 },
            Effect { job_id: "5".into(), worker: "p2".into(), attempt: Some(1), at_ms: 1105.0 },
        ];
        let killed = [Killed { identity: 2, at_ms: 1110.0 }];
        let (journal, stats) = build(1000.0, &events, &effects, &killed, &ids, &[]);
        let kinds: Vec<(u32, u32, EventKind)> = journal.iter().map(|e| (e.worker, e.claim, e.kind)).collect();
        assert!(kinds.contains(&(1, 1, EventKind::Executed)));
        assert!(kinds.contains(&(2, 1, EventKind::Executed)));
        assert!(kinds.contains(&(2, 1, EventKind::Abandoned)));
        assert!(kinds.contains(&(1, 1, EventKind::Accepted)));
        assert_eq!(stats.claims, 2);
        assert_eq!(key_of("8b0a3c1e-0000-4000-8000-000000000001").show(), "8b0a3c1e-0000-4000-8000-000000000001");
    }

    fn row(id: i64, status: Status) -> JobRow {
        JobRow { id, status, attempts: 1, max_attempts: 1, lease_expired: false }
    }

    #[test]
    fn an_end_the_library_s_table_contradicts_is_abandoned_not_accepted() {
        let ids = Interner::default();
        // Job 1: ended, and the library says done. Job 2: ended, but the library still has it
        // running (its finish write died). Job 3: ended, back in the queue (a stalled-job
        // rescue). Job 4: failed, and the library retried it (queued): that failure landed.
        // Job 5: ended, then another claim took it and that claim ended too; done.
        let events = [
            ev("start", "1", "p1", 1000.0),
            ev("end", "1", "p1", 1010.0),
            ev("start", "2", "p1", 1000.0),
            ev("end", "2", "p1", 1020.0),
            ev("start", "3", "p2", 1000.0),
            ev("end", "3", "p2", 1030.0),
            ev("start", "4", "p2", 1000.0),
            ev("error", "4", "p2", 1040.0),
            ev("start", "5", "p1", 1000.0),
            ev("end", "5", "p1", 1010.0),
            ev("start", "5", "p2", 1100.0),
            ev("end", "5", "p2", 1110.0),
        ];
        let finals = [
            row(1, Status::Done),
            row(2, Status::Running),
            row(3, Status::Queued),
            row(4, Status::Queued),
            row(5, Status::Done),
        ];
        let (journal, stats) = build(1000.0, &events, &[], &[], &ids, &finals);
        let closing = |job: i64| -> Vec<EventKind> {
            journal.iter().filter(|e| e.job == job && e.kind != EventKind::Claimed).map(|e| e.kind).collect()
        };
        assert_eq!(closing(1), [EventKind::Accepted]);
        assert_eq!(closing(2), [EventKind::Abandoned]);
        assert_eq!(closing(3), [EventKind::Abandoned]);
        assert_eq!(closing(4), [EventKind::FailAccepted]);
        assert_eq!(closing(5), [EventKind::Accepted, EventKind::Accepted]);
        let completions: u32 = stats.per_second.iter().map(|s| s.completions).sum();
        assert_eq!(completions, 3, "jobs 1 and 5 (twice); not 2 or 3");
        // Without the library's table nothing is changed.
        let (plain, _) = build(1000.0, &events, &[], &[], &ids, &[]);
        assert_eq!(plain.iter().filter(|e| e.kind == EventKind::Abandoned).count(), 0);
    }
}
