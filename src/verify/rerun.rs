//! The cause of each execution after a job's first (`model::rerun::Rerun`), decided once for
//! `exactly_once`, `run_after_completion` and `explain`:
//!
//! 1. **race**: the claim was sent while another claim's lease still ran, and that claim was
//!    sent while this one's ran (`claims::ClaimSpan::holds_at`, either way round);
//! 2. **after_completion**: a completion of the job had been accepted, and its answer was
//!    back, before the claim was sent (in hold-transaction mode, a completion whose round then
//!    rolled back did not land) — **after_ack_unknown** instead when that completion was one
//!    its worker sent again after the answer to its first was lost (the one sent again put the
//!    finished job back: a completion that is not idempotent);
//! 3. **retry**: the previous claim's failure was accepted before the claim was sent (the
//!    previous claim in the database's order: by attempt number when the claim returns one,
//!    else by the time the claims came back);
//! 4. **after_ack_unknown**: the previous holder sent its completion and lost the answer
//!    (`CompleteUnknown`) before the claim was sent: the completion never landed and the lease
//!    brought the job back, or the one sent again was refused and the job came back anyway;
//! 5. **after_crash**: the previous holder let go without finishing (a crash, a lost
//!    connection) before the claim was sent;
//! 6. **lease_expired**: otherwise: the previous holder lived, and its lease had run out.

use super::claims::ClaimSpan;
use crate::collect::{Event, EventKind};
use crate::model::rerun::Rerun;

/// One execution's cause, with the claim it is told against.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Why {
    pub cause: Rerun,
    /// The claim this execution's claim raced, or the one before it (None: no earlier claim).
    pub other: Option<ClaimSpan>,
    /// The accepted completion it came after.
    pub completion: Option<Landed>,
    /// The completion whose answer was lost that it came after (`Rerun::AfterAckUnknown`).
    pub unknown: Option<Event>,
}

/// An accepted completion that landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Landed {
    pub worker: u32,
    pub claim: u32,
    pub sent_us: u64,
    pub answered_us: u64,
}

/// A job's accepted completions that landed, in the order they were sent.
/// In hold-transaction mode a completion is part of its round's transaction: when the same
/// claim then let go without finishing, the transaction rolled back and the completion with it.
pub(crate) fn landed_completions(events: &[Event], hold_transaction: bool) -> Vec<Landed> {
    let rolled_back = |e: &Event| {
        hold_transaction
            && events.iter().any(|a| {
                a.kind == EventKind::Abandoned && (a.worker, a.claim) == (e.worker, e.claim) && a.t_us >= e.t_us
            })
    };
    let mut out: Vec<Landed> = events
        .iter()
        .filter(|e| e.kind == EventKind::Accepted && !rolled_back(e))
        .map(|e| Landed {
            worker: e.worker,
            claim: e.claim,
            sent_us: e.t_us,
            answered_us: e.t_us + u64::from(e.dur_us),
        })
        .collect();
    out.sort_by_key(|c| c.sent_us);
    out
}

/// The landed completion claim `c` came after, if any: one answered before `c` was sent, or one
/// still in flight when `c` was sent whose own claim's lease had not run out (so no correct
/// queue could hand the job out then: it was held, then done). A completion in flight on a
/// lease that had run out may have landed on `c`'s claim instead: a stale completion, which
/// `stale_completions_accepted` judges. A completion sent before the server came back from a
/// restart or failover (`outages`: when it went down, when it was back) that `c` was sent after
/// the start of may be one the server lost: `durability` judges that, not this.
pub(crate) fn completed_before(
    claims: &[ClaimSpan],
    c: &ClaimSpan,
    landed: &[Landed],
    (tolerance, outages): (u64, &[(u64, u64)]),
) -> Option<Landed> {
    let lost_since = |d: &Landed| outages.iter().any(|&(down, up)| d.sent_us <= up && down <= c.sent_us);
    landed.iter().rev().copied().filter(|d| !lost_since(d)).find(|d| {
        let held = || {
            claims
                .iter()
                .any(|o| (o.worker, o.claim) == (d.worker, d.claim) && c.sent_us + tolerance < o.lease_until_us)
        };
        (d.worker, d.claim) != (c.worker, c.claim) && d.sent_us <= c.sent_us && (d.answered_us <= c.sent_us || held())
    })
}

/// The completion of claim `(worker, claim)` sent at or before `t_us` whose answer its worker
/// lost (`CompleteUnknown`), if any.
pub(crate) fn unknown_of(events: &[Event], (worker, claim): (u32, u32), t_us: u64) -> Option<Event> {
    events
        .iter()
        .copied()
        .find(|e| e.kind == EventKind::CompleteUnknown && (e.worker, e.claim) == (worker, claim) && e.t_us <= t_us)
}

/// Why the execution under claim `c` happened again. `claims`: the job's claims in the
/// database's order (`claims::spans_held`); `landed`: [`landed_completions`].
pub(crate) fn why(
    events: &[Event],
    claims: &[ClaimSpan],
    c: &ClaimSpan,
    landed: &[Landed],
    bounds: (u64, &[(u64, u64)]),
) -> Why {
    let tolerance = bounds.0;
    let me = |o: &ClaimSpan| (o.worker, o.claim) == (c.worker, c.claim);
    if let Some(o) =
        claims.iter().find(|o| !me(o) && o.holds_at(c.sent_us, tolerance) && c.holds_at(o.sent_us, tolerance))
    {
        return Why { cause: Rerun::Race, other: Some(*o), completion: None, unknown: None };
    }
    // The claim before this one in the database's order.
    let at = claims.iter().position(me).unwrap_or(claims.len());
    let before = at.checked_sub(1).map(|i| claims[i]);
    if let Some(done) = completed_before(claims, c, landed, bounds) {
        // The completion sent again after its first's answer was lost put the job back.
        let unknown = unknown_of(events, (done.worker, done.claim), done.sent_us);
        let cause = if unknown.is_some() { Rerun::AfterAckUnknown } else { Rerun::AfterCompletion };
        return Why { cause, other: before, completion: Some(done), unknown };
    }
    let Some(o) = before else {
        return Why { cause: Rerun::LeaseExpired, other: None, completion: None, unknown: None };
    };
    let by_o = |kind: EventKind| {
        events.iter().any(|e| e.kind == kind && (e.worker, e.claim) == (o.worker, o.claim) && e.t_us <= c.sent_us)
    };
    let unknown = unknown_of(events, (o.worker, o.claim), c.sent_us);
    let cause = if by_o(EventKind::FailAccepted) {
        Rerun::Retry
    } else if unknown.is_some() {
        Rerun::AfterAckUnknown
    } else if by_o(EventKind::Abandoned) {
        Rerun::AfterCrash
    } else {
        Rerun::LeaseExpired
    };
    Why { cause, other: Some(o), completion: None, unknown: unknown.filter(|_| cause == Rerun::AfterAckUnknown) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::EventKind::*;
    use crate::verify::claims::{Held, spans_held};
    use std::time::Duration;

    fn ev(t_us: u64, worker: u32, claim: u32, kind: EventKind) -> Event {
        Event { t_us, job: 1, attempt: claim as i32, worker, claim, kind, dur_us: 0, token: 0 }
    }

    fn second_cause(events: &[Event], hold: bool) -> Rerun {
        let held = if hold { Held::Transaction } else { Held::Lease };
        let claims = spans_held(events, Duration::from_secs(1), held);
        let landed = landed_completions(events, hold);
        why(events, &claims, &claims[1], &landed, (0, &[])).cause
    }

    #[test]
    fn each_cause_from_what_came_before_the_claim() {
        let race = [ev(0, 1, 1, Claimed), ev(10, 2, 2, Claimed)];
        assert_eq!(second_cause(&race, false), Rerun::Race);
        let retry = [ev(0, 1, 1, Claimed), ev(5, 1, 1, FailAccepted), ev(10, 2, 2, Claimed)];
        assert_eq!(second_cause(&retry, false), Rerun::Retry);
        let done = [ev(0, 1, 1, Claimed), ev(5, 1, 1, Accepted), ev(10, 2, 2, Claimed)];
        assert_eq!(second_cause(&done, false), Rerun::AfterCompletion);
        let crash = [ev(0, 1, 1, Claimed), ev(5, 1, 1, Abandoned), ev(2_000_000, 2, 2, Claimed)];
        assert_eq!(second_cause(&crash, false), Rerun::AfterCrash);
        let expired = [ev(0, 1, 1, Claimed), ev(2_000_000, 2, 2, Claimed), ev(2_500_000, 1, 1, Rejected)];
        assert_eq!(second_cause(&expired, false), Rerun::LeaseExpired);
        // A hold-transaction round that rolled back after its completion: that completion did
        // not land, the job went back with the rollback.
        let rolled = [ev(0, 1, 1, Claimed), ev(5, 1, 1, Accepted), ev(6, 1, 1, Abandoned), ev(10, 2, 2, Claimed)];
        assert_eq!(second_cause(&rolled, true), Rerun::AfterCrash);
    }

    #[test]
    fn a_run_after_a_completion_whose_answer_was_lost_has_a_cause_of_its_own() {
        // Left to the lease: the completion never landed, the holder let go, the lease ran out.
        let left =
            [ev(0, 1, 1, Claimed), ev(5, 1, 1, CompleteUnknown), ev(6, 1, 1, Abandoned), ev(2_000_000, 2, 2, Claimed)];
        assert_eq!(second_cause(&left, false), Rerun::AfterAckUnknown);
        // Sent again and accepted, then handed out again: the resend put the finished job back.
        let resent = [ev(0, 1, 1, Claimed), ev(5, 1, 1, CompleteUnknown), ev(9, 1, 1, Accepted), ev(20, 2, 2, Claimed)];
        assert_eq!(second_cause(&resent, false), Rerun::AfterAckUnknown);
        // Sent again and refused (the first had landed), then handed out again.
        let refused =
            [ev(0, 1, 1, Claimed), ev(5, 1, 1, CompleteUnknown), ev(9, 1, 1, Rejected), ev(20, 2, 2, Claimed)];
        assert_eq!(second_cause(&refused, false), Rerun::AfterAckUnknown);
        // A lost answer of another claim, or one after the claim was sent, changes nothing.
        let other = [ev(0, 1, 1, Claimed), ev(5, 1, 1, Accepted), ev(10, 2, 2, Claimed), ev(15, 2, 2, CompleteUnknown)];
        assert_eq!(second_cause(&other, false), Rerun::AfterCompletion);
        // A racing claim is a race whatever the holder's completion met afterwards.
        let race = [ev(0, 1, 1, Claimed), ev(5, 2, 2, Claimed), ev(9, 1, 1, CompleteUnknown)];
        assert_eq!(second_cause(&race, false), Rerun::Race);
        assert!(Rerun::AfterAckUnknown.is_duplicate());
    }

    #[test]
    fn a_claim_sent_while_the_completion_was_in_flight_depends_on_the_lease() {
        // w1's completion was sent at 5 and answered at 25; w2's claim was sent at 10, inside
        // w1's lease: held, then done, so no correct queue hands it out.
        let mut evs = [ev(0, 1, 1, Claimed), ev(5, 1, 1, Accepted), ev(30, 2, 2, Claimed)];
        evs[1].dur_us = 20;
        evs[2].dur_us = 20;
        assert_eq!(second_cause(&evs, false), Rerun::AfterCompletion);
        // The same after w1's 1 s lease ran out: the reclaim may have come first, and w1's
        // completion then landed on w2's claim (a stale completion, judged elsewhere).
        let mut late = [ev(0, 1, 1, Claimed), ev(1_500_000, 1, 1, Accepted), ev(1_500_030, 2, 2, Claimed)];
        late[1].dur_us = 20;
        late[2].dur_us = 20;
        assert_eq!(second_cause(&late, false), Rerun::LeaseExpired);
    }
}
