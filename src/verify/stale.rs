//! Stale completions: a worker completing a job after another worker had
//! claimed it again. With fencing the completion is rejected (0 rows);
//! without, it lands and marks done a job someone else is running.
//!
//! A completion is stale when, among the job's claims that returned before
//! the completion was sent, the newest belongs to another (worker, attempt).
//! "Newest" is the highest attempt number when the strategy returns one (the
//! database's own order; two tasks may record their clocks out of order) and
//! the latest clock otherwise. Claims that came back after the completion was
//! sent are not counted: the check is conservative.

use super::{EXAMPLES, Evidence};
use crate::collect::{Event, EventKind};
use crate::report::summary::{CheckResult, Completions};

pub fn check(e: &Evidence) -> (Completions, CheckResult) {
    let mut relevant: Vec<&Event> = e
        .journal
        .iter()
        .filter(|ev| ev.kind != EventKind::Executed)
        .collect();
    relevant.sort_unstable_by_key(|ev| (ev.job, ev.t_us, ev.kind));
    let mut c = Completions::default();
    let mut examples = Vec::new();
    let mut owner: Option<(i64, u32, i32)> = None; // (job, worker, attempt) of the latest claim
    for ev in relevant {
        if owner.is_some_and(|(job, _, _)| job != ev.job) {
            owner = None;
        }
        let stale = owner.is_some_and(|(_, w, a)| (w, a) != (ev.worker, ev.attempt));
        match ev.kind {
            EventKind::Claimed => {
                if owner.is_none_or(|(_, _, a)| ev.attempt < 0 || ev.attempt >= a) {
                    owner = Some((ev.job, ev.worker, ev.attempt));
                }
            }
            EventKind::Accepted => {
                c.accepted += 1;
                if stale {
                    c.stale_accepted += 1;
                    if examples.len() < EXAMPLES {
                        examples.push(ev.job);
                    }
                }
            }
            EventKind::Rejected => {
                c.rejected += 1;
                c.stale_rejected += u64::from(stale);
            }
            EventKind::Executed => {}
        }
    }
    let check = CheckResult {
        name: "stale_completions_accepted".into(),
        passed: c.stale_accepted == 0,
        violations: c.stale_accepted,
        detail: format!(
            "{} stale completions accepted, {} rejected by the fence",
            c.stale_accepted, c.stale_rejected
        ),
        examples,
    };
    (c, check)
}
