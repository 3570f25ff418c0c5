//! Ownership overlap: two workers both believed they owned a job at the same moment. A
//! worker's belief runs from its claim's return to the moment it let go: its completion or
//! failure was sent, it abandoned the job, or a heartbeat was rejected. Beside it, the claims
//! that handed the job out over another holder's lease: sent before that lease ended, and
//! returned after that holder's claim did. With zero work a worker may let go before the next
//! claim returns, so beliefs never overlap, yet every such claim handed out a job that was
//! leased to someone else while it was in flight (the queue's claim ignored the lease, or
//! waited on the holder's row lock and took the row anyway).

use super::claims::{Held, spans, spans_held};
use super::examples;
use crate::collect::Event;
use crate::model::check::Check;
use crate::model::summary::{CheckResult, Ownership};
use std::time::Duration;

pub(super) fn check(per_job: &[&[Event]], lease: Duration, held: Held) -> (Ownership, CheckResult) {
    let mut jobs = Vec::new();
    let mut during_lease = 0;
    for events in per_job {
        let leases = spans_held(events, lease, held);
        during_lease += leases
            .iter()
            .filter(|c| {
                leases.iter().any(|o| {
                    (o.worker, o.claim) != (c.worker, c.claim) && o.start_us <= c.start_us && c.sent_us < o.lease_end_us
                })
            })
            .count() as u64;
        let mut claims = spans(events, Duration::ZERO, false);
        claims.sort_by_key(|c| c.start_us);
        let overlaps = claims.windows(2).any(|w| w[0].released_us.is_none_or(|r| r > w[1].start_us));
        if overlaps {
            jobs.push(events[0].job);
        }
    }
    let o = Ownership { overlapping_jobs: jobs.len() as u64, claims_during_lease: during_lease };
    let check = CheckResult {
        name: Check::OwnershipOverlap,
        passed: jobs.is_empty(),
        violations: o.overlapping_jobs,
        detail: format!(
            "{} two workers believing they owned the job at once (a belief runs from the claim's return to \
             the completion, failure or release); {} a job out over another holder's lease (sent before that \
             lease ended, returned after that holder's claim)",
            crate::model::words::count_as(o.overlapping_jobs, "job had", "jobs had"),
            crate::model::words::count_as(o.claims_during_lease, "claim handed", "claims handed")
        ),
        examples: examples(jobs),
    };
    (o, check)
}
