//! `completion_idempotent`: a completion sent again must leave a finished job finished. A
//! worker whose completion lost its answer (`ack_lost`: the journal's `CompleteUnknown`) cannot
//! tell whether it landed, so it sends it once more, as real clients do: a correct queue's
//! completion either lands then or finds the job already done and changes nothing. The check
//! fails for a job that a claim handed out again after such a completion sent again was
//! answered:
//!
//! - it was **accepted**, and the claim came after it (`rerun::completed_before`, the rule of
//!   `run_after_completion`, which leaves these to this check): the completion sent again put
//!   the finished job back (a toggle, a "not running, so reschedule" branch);
//! - it was **refused** while its claim's lease still ran (heartbeats count, with the clock
//!   allowance of the race rule) and no other claim of the job was sent between that claim and
//!   the refusal's answer: the first completion had landed (nothing else takes a job from a
//!   live lease), yet the job came back.
//!
//! A completion that never landed, left to the lease or refused after the lease ran out, brings
//! the job back as at-least-once does: `exactly_once` counts that run, under its own cause.
//! Reported only when a completion lost its answer.

use super::claims::{ClaimSpan, Held, race_tolerance, spans_held};
use super::examples;
use super::rerun::{completed_before, landed_completions, unknown_of};
use super::time::secs;
use crate::collect::{Event, EventKind};
use crate::model::check::Check;
use crate::model::summary::CheckResult;
use crate::model::words::{count, count_as};
use std::time::Duration;

pub(super) fn check(
    per_job: &[&[Event]],
    lease: Duration,
    held: Held,
    (clock_us, outages): (u64, &[(u64, u64)]),
) -> Option<CheckResult> {
    let tolerance = race_tolerance(lease, clock_us);
    let mut lost_answers = 0u64;
    let (mut jobs, mut first) = (Vec::new(), None::<String>);
    for events in per_job {
        let unknown = events.iter().filter(|e| e.kind == EventKind::CompleteUnknown).count();
        if unknown == 0 {
            continue;
        }
        lost_answers += unknown as u64;
        let claims = spans_held(events, lease, held);
        let landed = landed_completions(events, held == Held::Transaction);
        let again = claims.iter().find_map(|c| {
            if let Some(done) = completed_before(&claims, c, &landed, (tolerance, outages))
                && unknown_of(events, (done.worker, done.claim), done.sent_us).is_some()
            {
                return Some(format!(
                    "w{}'s completion lost its answer; sent again, it was accepted (answered t={}), then w{}'s claim (sent t={}) returned the job",
                    done.worker,
                    secs(done.answered_us),
                    c.worker,
                    secs(c.sent_us)
                ));
            }
            refused_then_claimed(events, &claims, c, tolerance)
        });
        if let Some(why) = again {
            jobs.push(events[0].job);
            first.get_or_insert_with(|| format!("job {}: {why}", events[0].job));
        }
    }
    if lost_answers == 0 {
        return None;
    }
    let n = jobs.len() as u64;
    Some(CheckResult {
        name: Check::CompletionIdempotent,
        passed: n == 0,
        violations: n,
        detail: match first {
            None => format!(
                "no job came back after a completion sent again ({} lost {})",
                count(lost_answers, "completion"),
                if lost_answers == 1 { "its answer" } else { "their answers" }
            ),
            Some(first) => format!(
                "{} handed out again after a completion sent again (its first answer lost) was accepted, or was \
                 refused while its lease still ran: sent twice, the completion put a finished job back ({} lost \
                 their answers); the first: {first}",
                count_as(n, "job was", "jobs were"),
                count(lost_answers, "completion")
            ),
        },
        examples: examples(jobs),
    })
}

/// Claim `c` came after a completion that lost its answer and, sent again, was refused while
/// its claim's lease still ran with no other claim sent meanwhile: the first had landed.
fn refused_then_claimed(events: &[Event], claims: &[ClaimSpan], c: &ClaimSpan, tolerance: u64) -> Option<String> {
    claims.iter().filter(|h| (h.worker, h.claim) != (c.worker, c.claim)).find_map(|h| {
        let mine = |e: &&Event| (e.worker, e.claim) == (h.worker, h.claim);
        let u = events.iter().filter(mine).find(|e| e.kind == EventKind::CompleteUnknown)?;
        let r = events.iter().filter(mine).find(|e| e.t_us >= u.t_us && e.kind == EventKind::Rejected)?;
        let answer = r.t_us + u64::from(r.dur_us);
        let live = answer + tolerance < h.lease_until_us;
        let competing =
            claims.iter().any(|o| (o.worker, o.claim) != (h.worker, h.claim) && o.sent_us >= h.sent_us && o.sent_us <= answer);
        (live && !competing && c.sent_us > answer).then(|| {
            format!(
                "w{}'s completion lost its answer; sent again, it was refused (answered t={}, its lease ran until t={}), then w{}'s claim (sent t={}) returned the job",
                h.worker,
                secs(answer),
                secs(h.lease_until_us),
                c.worker,
                secs(c.sent_us)
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::EventKind::{self, *};

    fn ev(t_us: u64, worker: u32, claim: u32, kind: EventKind) -> Event {
        Event { t_us, job: 7, attempt: claim as i32, worker, claim, kind, dur_us: 0, token: 0 }
    }

    fn judge(events: &[Event]) -> Option<CheckResult> {
        check(&[events], Duration::from_secs(1), Held::Lease, (0, &[]))
    }

    #[test]
    fn a_completion_sent_again_that_puts_the_job_back_fails() {
        let toggled = [
            ev(0, 1, 1, Claimed),
            ev(2, 1, 1, Executed),
            ev(5, 1, 1, CompleteUnknown),
            ev(9, 1, 1, Accepted),
            ev(20, 2, 2, Claimed),
            ev(22, 2, 2, Executed),
        ];
        let r = judge(&toggled).unwrap();
        assert!(!r.passed && r.violations == 1 && r.examples == [7], "{r:?}");
        assert!(
            r.detail.contains("sent again, it was accepted") && r.detail.contains("then w2's claim"),
            "{}",
            r.detail
        );
        // Refused (the first had landed) while the lease ran, then handed out anyway.
        let requeued =
            [ev(0, 1, 1, Claimed), ev(5, 1, 1, CompleteUnknown), ev(9, 1, 1, Rejected), ev(20, 2, 2, Claimed)];
        let r = judge(&requeued).unwrap();
        assert!(!r.passed && r.detail.contains("it was refused"), "{r:?}");
    }

    #[test]
    fn a_correct_queue_passes_whatever_became_of_the_first_completion() {
        // Landed first: the one sent again is refused, nothing comes back.
        let landed = [ev(0, 1, 1, Claimed), ev(5, 1, 1, CompleteUnknown), ev(9, 1, 1, Rejected)];
        assert!(judge(&landed).unwrap().passed);
        // Never landed: the one sent again lands.
        let resent = [ev(0, 1, 1, Claimed), ev(5, 1, 1, CompleteUnknown), ev(9, 1, 1, Accepted)];
        assert!(judge(&resent).unwrap().passed);
        // Left to the lease, which ran out: the job comes back (at-least-once, not this check's).
        let leased =
            [ev(0, 1, 1, Claimed), ev(5, 1, 1, CompleteUnknown), ev(6, 1, 1, Abandoned), ev(2_000_000, 2, 2, Claimed)];
        assert!(judge(&leased).unwrap().passed);
        // Sent again after the lease ran out, refused: the reaper may have taken it back.
        let late = [
            ev(0, 1, 1, Claimed),
            ev(5, 1, 1, CompleteUnknown),
            ev(1_500_000, 1, 1, Rejected),
            ev(1_600_000, 2, 2, Claimed),
        ];
        assert!(judge(&late).unwrap().passed);
        // No lost answer: nothing to report.
        assert!(judge(&[ev(0, 1, 1, Claimed), ev(5, 1, 1, Accepted)]).is_none());
    }
}
