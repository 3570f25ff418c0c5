//! Stale writes: a worker completing, failing or extending a job after
//! another claim superseded its own. With fencing the write is rejected
//! (0 rows); without, it lands on a job someone else now owns.
//!
//! A write is stale when, among the job's claims that came back before the
//! write was sent, the newest (by attempt number, the database's own order;
//! by time when the strategy returns none) is another claim. Claims that
//! came back after the write was sent are not counted: a lower bound.

use super::examples;
use crate::collect::{Event, EventKind};
use crate::model::summary::{CheckResult, Completions, Stale};

pub fn check(per_job: &[&[Event]]) -> (Completions, Stale, CheckResult) {
    let mut c = Completions::default();
    let mut s = Stale::default();
    let mut bad = Vec::new();
    for events in per_job {
        let mut owner: Option<(u32, u32, i32)> = None; // (worker, claim, attempt) of the newest claim
        for ev in events.iter() {
            let stale = owner.is_some_and(|(w, k, _)| (w, k) != (ev.worker, ev.claim));
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
                    s.fail_stale_accepted += u64::from(stale);
                    accepted_stale = stale;
                }
                EventKind::FailRejected => {
                    s.fails_rejected += 1;
                    s.fail_stale_rejected += u64::from(stale);
                }
                EventKind::HeartbeatOk => {
                    s.heartbeats_accepted += 1;
                    s.heartbeat_stale_accepted += u64::from(stale);
                    accepted_stale = stale;
                }
                EventKind::HeartbeatRejected => s.heartbeats_rejected += 1,
                EventKind::Executed | EventKind::Abandoned => {}
            }
            if accepted_stale {
                bad.push(ev.job);
            }
        }
    }
    bad.dedup();
    let total = c.stale_accepted + s.fail_stale_accepted + s.heartbeat_stale_accepted;
    let check = CheckResult {
        name: "stale_completions_accepted".into(),
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
