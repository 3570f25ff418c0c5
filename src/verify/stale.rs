//! Stale writes: a worker completing, failing or extending a job after
//! another claim superseded its own. With fencing the write is rejected
//! (0 rows); without, it lands on a job someone else now owns.
//!
//! A write is stale when, among the job's claims that came back before the
//! write was sent, the newest (by attempt number, the database's own order;
//! by time when the strategy returns none) is another claim.
//!
//! A write still in flight when another claim of the job came back (sent before that claim
//! returned, answered after: a partition, a slow network) is stale too when its answer says
//! the server saw it after that claim:
//! - a rejected completion or failure: the fence turned it away, and that claim is what
//!   superseded it;
//! - an accepted completion, when that other claim is surely the job's last (every other
//!   claim came back before it was sent) and its own completion or failure was rejected:
//!   nothing but this completion can have ended the job under it, so the completion landed
//!   after the claim, on a job someone else held. (A claim that does not lock rows can return
//!   a job already done; then its own completion is accepted, as it is under a fence that
//!   proves the order, `token` or `attempts`, and nothing is counted.)
//!
//! An accepted failure or heartbeat in flight is not counted (a failure may requeue the job
//! for that very claim; a heartbeat ends nothing), nor are claims that came back after the
//! write's answer: a lower bound.

use super::examples;
use crate::collect::{Event, EventKind};
use crate::model::check::Check;
use crate::model::summary::{CheckResult, Completions, Stale};

pub(super) fn check(per_job: &[&[Event]]) -> (Completions, Stale, CheckResult) {
    let mut c = Completions::default();
    let mut s = Stale::default();
    let mut bad = Vec::new();
    for events in per_job {
        let mut owner: Option<(u32, u32, i32)> = None; // (worker, claim, attempt) of the newest claim
        for ev in events.iter() {
            let superseded = owner.is_some_and(|(w, k, _)| (w, k) != (ev.worker, ev.claim));
            let stale = superseded
                || match ev.kind {
                    EventKind::Rejected | EventKind::FailRejected => claimed_in_flight(events, ev, false),
                    EventKind::Accepted => claimed_in_flight(events, ev, true),
                    _ => false,
                };
            let mut accepted_stale = false;
            match ev.kind {
                EventKind::Claimed => {
                    if owner.is_none_or(|(_, _, a)| ev.attempt < 0 || ev.attempt >= a) {
                        owner = Some((ev.worker, ev.claim, ev.attempt));
                    }
                }
                EventKind::Accepted => {
                    c.accepted += 1;
                    c.stale_accepted += u64::from(stale);
                    accepted_stale = stale;
                }
                EventKind::Rejected => {
                    c.rejected += 1;
                    c.stale_rejected += u64::from(stale);
                }
                EventKind::FailAccepted => {
                    s.fails_accepted += 1;
                    s.fail_stale_accepted += u64::from(superseded);
                    accepted_stale = superseded;
                }
                EventKind::FailRejected => {
                    s.fails_rejected += 1;
                    s.fail_stale_rejected += u64::from(stale);
                }
                EventKind::HeartbeatOk => {
                    s.heartbeats_accepted += 1;
                    s.heartbeat_stale_accepted += u64::from(superseded);
                    accepted_stale = stale;
                }
                EventKind::HeartbeatRejected => s.heartbeats_rejected += 1,
                EventKind::Executed | EventKind::Abandoned | EventKind::CompleteUnknown => {}
            }
            if accepted_stale {
                bad.push(ev.job);
            }
        }
    }
    bad.dedup();
    let total = c.stale_accepted + s.fail_stale_accepted + s.heartbeat_stale_accepted;
    let check = CheckResult {
        name: Check::StaleCompletionsAccepted,
        passed: total == 0,
        violations: total,
        detail: format!(
            "stale writes that landed: {} completions, {} failures, {} heartbeats; rejected by the fence: {} completions, {} failures",
            c.stale_accepted,
            s.fail_stale_accepted,
            s.heartbeat_stale_accepted,
            c.stale_rejected,
            s.fail_stale_rejected
        ),
        examples: examples(bad),
    };
    (c, s, check)
}

/// Did another claim of the job come back while `w` was in flight (after it was sent, no
/// later than its answer)? With `turned_away`, only a claim that was surely the job's last
/// counts (every other claim came back before it was sent), and only if its own completion or
/// failure was then rejected. A claim's `t_us` is its return (it was sent `dur_us` before); a
/// write's answer comes `dur_us` after it was sent.
fn claimed_in_flight(events: &[Event], w: &Event, turned_away: bool) -> bool {
    let answered = w.t_us + u64::from(w.dur_us);
    let later = events.partition_point(|e| e.t_us <= w.t_us);
    let surely_last = |c: &Event| {
        let sent = c.t_us.saturating_sub(u64::from(c.dur_us));
        events
            .iter()
            .filter(|o| o.kind == EventKind::Claimed && (o.worker, o.claim) != (c.worker, c.claim))
            .all(|o| o.t_us < sent)
    };
    let turned = |c: &Event| {
        events.iter().any(|r| {
            (r.worker, r.claim) == (c.worker, c.claim)
                && matches!(r.kind, EventKind::Rejected | EventKind::FailRejected)
        })
    };
    events[later..].iter().take_while(|e| e.t_us <= answered).any(|c| {
        c.kind == EventKind::Claimed
            && (c.worker, c.claim) != (w.worker, w.claim)
            && (!turned_away || (surely_last(c) && turned(c)))
    })
}
