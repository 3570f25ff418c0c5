//! What the search reached, beside what it found: which conflicting steps of two sessions it
//! played in which order, and which abstract job states it saw.
//!
//! - **Conflicting pairs.** Two steps of different sessions conflict when they touched the
//!   same job (the journal's events: a claim, a heartbeat, a completion, a failure, a crash
//!   that let the job go) or when one waited on the other's lock (the step it returned after).
//!   Each is counted in the order it happened: `claim → complete` and `complete → claim` are
//!   two entries.
//! - **Abstract job states**: each job's status, how many sessions believe they hold it, whether
//!   their claim is the job's latest (`current`) or an older one (`stale`: a lease ran out and
//!   someone claimed it since), and its attempt count.
//!
//! Every judged state is noted (each schedule's end in the search, each step in `--replay`
//! and `--random`); the counts are how many judged states showed the entry.

use crate::collect::EventKind;
use crate::explore::protocol::{Model, Op};
use crate::model::records::JobRow;
use std::collections::{BTreeMap, BTreeSet};

/// An ordered pair of steps: the first, the one after it, and how they conflicted.
pub(crate) type Pair = (&'static str, &'static str, &'static str);
/// A job's abstract state: status, holders, fence, attempt.
pub(crate) type JobState = (String, usize, String, i32);

#[derive(Debug, Clone, Default)]
pub(crate) struct Coverage {
    pub pairs: BTreeMap<Pair, u64>,
    pub job_states: BTreeMap<JobState, u64>,
}

fn event_step(kind: EventKind) -> Option<&'static str> {
    match kind {
        EventKind::Claimed => Some("claim"),
        EventKind::HeartbeatOk | EventKind::HeartbeatRejected => Some("heartbeat"),
        EventKind::Accepted | EventKind::Rejected | EventKind::CompleteUnknown => Some("complete"),
        EventKind::FailAccepted | EventKind::FailRejected => Some("fail"),
        EventKind::Abandoned => Some("crash"),
        EventKind::Executed => None,
    }
}

impl Coverage {
    /// Notes one judged state: its history's conflicting pairs and its jobs' abstract states.
    pub(crate) fn note(&mut self, m: &Model<'_>, rows: &[JobRow]) {
        let mut seen: BTreeSet<Pair> = BTreeSet::new();
        let mut events: Vec<_> = m.journal.iter().filter_map(|e| event_step(e.kind).map(|s| (e, s))).collect();
        events.sort_by_key(|(e, _)| e.t_us);
        for (i, (a, sa)) in events.iter().enumerate() {
            for (b, sb) in &events[i + 1..] {
                if a.job == b.job && a.worker != b.worker {
                    seen.insert((sa, sb, "same job"));
                }
            }
        }
        seen.extend(waits(m));
        for p in seen {
            *self.pairs.entry(p).or_default() += 1;
        }
        for s in job_states(m, rows) {
            *self.job_states.entry(s).or_default() += 1;
        }
    }

    /// A short summary, for the last words.
    pub(crate) fn summary(&self) -> String {
        let pairs: Vec<String> = self.pairs.keys().map(|(a, b, how)| format!("{a} → {b} ({how})")).collect();
        let states: Vec<String> = self.job_states.keys().map(shown).collect();
        format!(
            "coverage: {} ordered pairs of conflicting steps: {}; {} abstract job states (status/holders/fence/attempt): {}",
            pairs.len(),
            if pairs.is_empty() { "none".into() } else { pairs.join(", ") },
            states.len(),
            states.join(", ")
        )
    }

    /// For explore.json.
    pub(crate) fn json(&self) -> serde_json::Value {
        let pairs: Vec<serde_json::Value> = self
            .pairs
            .iter()
            .map(|((a, b, how), n)| serde_json::json!({ "first": a, "then": b, "how": how, "states": n }))
            .collect();
        let states: Vec<serde_json::Value> = self
            .job_states
            .iter()
            .map(|((status, holders, fence, attempt), n)| {
                serde_json::json!({ "status": status, "holders": holders, "fence": fence, "attempt": attempt, "states": n })
            })
            .collect();
        serde_json::json!({ "pairs": pairs, "job_states": states })
    }
}

fn shown((status, holders, fence, attempt): &JobState) -> String {
    format!("{status}/{holders}/{fence}/{attempt}")
}

/// The step each record belongs to: its step's word (a statement or commit of a step, paused
/// or not, a completion's COMMIT whose answer was lost), `crash`, or None (the clock, and the
/// gate's lines: a paused statement let go by its own gate is no conflict of two sessions).
fn record_steps(m: &Model<'_>) -> Vec<Option<&'static str>> {
    let mut current: BTreeMap<usize, &'static str> = BTreeMap::new();
    m.records
        .iter()
        .map(|r| match r.op {
            Op::Start(a, kind) | Op::Paused(a, Some(kind)) => {
                let w = super::schedule::kind_word(kind);
                current.insert(a, w);
                Some(w)
            }
            Op::Next(a) | Op::Commit(a) | Op::Paused(a, None) | Op::AckLost(a) => current.get(&a).copied(),
            Op::Crash(_) => Some("crash"),
            Op::Tick | Op::Resume(_) => None,
        })
        .collect()
}

/// Lock waits: the step that let the waiter go (the step it returned after), then the waiter's.
fn waits(m: &Model<'_>) -> Vec<Pair> {
    let steps = record_steps(m);
    let mut out = Vec::new();
    for (i, r) in m.records.iter().enumerate() {
        let Some(k) = r.waited_until else { continue };
        let other = m.records.get(k).filter(|o| o.actor != r.actor);
        if let (Some(Some(first)), Some(Some(then)), Some(_)) = (steps.get(k), steps.get(i), other) {
            out.push((*first, *then, "waited"));
        }
    }
    out
}

/// Each job's abstract state: its status, the sessions that believe they hold it, whether each
/// holder's claim is the job's latest (by worker and token), its attempts.
fn job_states(m: &Model<'_>, rows: &[JobRow]) -> Vec<JobState> {
    rows.iter()
        .map(|r| {
            let latest = m
                .journal
                .iter()
                .filter(|e| e.job == r.id && e.kind == EventKind::Claimed)
                .max_by_key(|e| e.t_us)
                .map(|e| (e.worker, e.token));
            let mut fences: Vec<&str> = m
                .actors
                .iter()
                .enumerate()
                .filter_map(|(a, actor)| actor.job.as_ref().filter(|j| j.id == r.id).map(|j| (a, j)))
                .map(|(a, j)| if latest == Some((a as u32 + 1, j.tag)) { "current" } else { "stale" })
                .collect();
            fences.sort_unstable();
            let fence = if fences.is_empty() { "none".to_string() } else { fences.join("+") };
            (format!("{:?}", r.status).to_lowercase(), fences.len(), fence, r.attempts)
        })
        .collect()
}
