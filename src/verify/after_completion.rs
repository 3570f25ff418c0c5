//! Run after its completion was accepted: a job that a claim handed out again once a
//! completion of it had landed (`rerun::completed_before`). A correct queue never gives a
//! finished job back: a rescuer that overwrote the completion (it read the job as stuck, then
//! updated it by id alone), a lock taken on a snapshot older than the lock, or a claim that
//! ignores the status can. The detail names who completed the job, which claim returned it
//! again, and when. A completion its worker sent again after the answer to its first was lost
//! is `completion_idempotent`'s to judge.

use super::claims::{Held, race_tolerance, spans_held};
use super::examples;
use super::rerun::{completed_before, landed_completions, unknown_of};
use super::time::secs;
use crate::collect::Event;
use crate::model::check::Check;
use crate::model::summary::CheckResult;
use crate::model::words::{count, count_as};
use std::time::Duration;

pub(super) fn check(
    per_job: &[&[Event]],
    lease: Duration,
    held: Held,
    (clock_us, outages): (u64, &[(u64, u64)]),
) -> CheckResult {
    let tolerance = race_tolerance(lease, clock_us);
    let mut jobs = Vec::new();
    let mut claims_after = 0u64;
    let mut first: Option<String> = None;
    for events in per_job {
        let landed = landed_completions(events, held == Held::Transaction);
        if landed.is_empty() {
            continue;
        }
        let claims = spans_held(events, lease, held);
        let mut hit = false;
        for c in &claims {
            let Some(done) = completed_before(&claims, c, &landed, (tolerance, outages)) else { continue };
            // A completion sent again after its first's answer was lost: `completion_idempotent`'s.
            if unknown_of(events, (done.worker, done.claim), done.sent_us).is_some() {
                continue;
            }
            claims_after += 1;
            hit = true;
            first.get_or_insert_with(|| {
                format!(
                    "job {}: w{}'s completion was accepted (sent t={}, answered t={}), then w{}'s claim (sent t={}) returned it again",
                    events[0].job,
                    done.worker,
                    secs(done.sent_us),
                    secs(done.answered_us),
                    c.worker,
                    secs(c.sent_us)
                )
            });
        }
        if hit {
            jobs.push(events[0].job);
        }
    }
    let n = jobs.len() as u64;
    CheckResult {
        name: Check::RunAfterCompletion,
        passed: n == 0,
        violations: n,
        detail: match first {
            None => "no job was handed out again after a completion of it was accepted".into(),
            Some(first) => format!(
                "{} handed out again after a completion of it was accepted ({} in all; a statement gave the finished job back to the queue, or the claim took it as it was); the first: {first}",
                count_as(n, "job was", "jobs were"),
                count(claims_after, "claim")
            ),
        },
        examples: examples(jobs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::EventKind::{self, *};

    fn ev(t_us: u64, worker: u32, claim: u32, kind: EventKind) -> Event {
        Event { t_us, job: 5, attempt: claim as i32, worker, claim, kind, dur_us: 0, token: 0 }
    }

    #[test]
    fn a_claim_after_an_accepted_completion_fails_and_a_retry_does_not() {
        let rescued = [ev(0, 1, 1, Claimed), ev(5, 1, 1, Executed), ev(6, 1, 1, Accepted), ev(90, 2, 2, Claimed)];
        let r = check(&[&rescued], Duration::from_secs(1), Held::Lease, (0, &[]));
        assert!(!r.passed && r.violations == 1, "{r:?}");
        assert!(
            r.detail.contains("w1's completion was accepted") && r.detail.contains("then w2's claim"),
            "{}",
            r.detail
        );
        let retried = [ev(0, 1, 1, Claimed), ev(5, 1, 1, Executed), ev(6, 1, 1, FailAccepted), ev(90, 2, 2, Claimed)];
        assert!(check(&[&retried], Duration::from_secs(1), Held::Lease, (0, &[])).passed);
        let once = [ev(0, 1, 1, Claimed), ev(5, 1, 1, Executed), ev(6, 1, 1, Accepted)];
        assert!(check(&[&once], Duration::from_secs(1), Held::Lease, (0, &[])).passed);
    }
}
