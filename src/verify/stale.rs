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
//!
//! The harness's reaper supersedes a claim too: a completion or failure sent after a reclaim
//! returned the job (gave it back or failed it), by a claim that came back before that
//! reclaim was sent, is stale (`after_reaper`). A claim of the same worker since carries a new
//! claim number, so its writes are not. A reclaim without `RETURNING` names no job; the
//! detail says how many jobs went unjudged that way.

use super::examples;
use super::time::secs;
use crate::collect::{Event, EventKind, ReapEvent};
use crate::model::check::Check;
use crate::model::summary::{CheckResult, Completions, Stale};
use crate::model::words::count;

/// The reaper's journal, by job, and the jobs it reclaimed without naming them.
pub(super) struct Reaps {
    by_job: Vec<ReapEvent>,
    unjournaled: u64,
    /// The agents' clock error bound, µs: the reaper's clock is the coordinator's.
    clock_us: u64,
}

impl Reaps {
    pub(super) fn of(reaps: &[ReapEvent], unjournaled: u64, clock_us: u64) -> Reaps {
        let mut by_job = reaps.to_vec();
        by_job.sort_by_key(|r| (r.job, r.t_us));
        Reaps { by_job, unjournaled, clock_us }
    }

    /// The job's reclaims, by time.
    pub(super) fn job(&self, job: i64) -> &[ReapEvent] {
        let from = self.by_job.partition_point(|r| r.job < job);
        let to = self.by_job.partition_point(|r| r.job <= job);
        &self.by_job[from..to]
    }
}

/// The first reclaim of the job that surely came between the writer's claim and its write `w`:
/// sent after the claim came back, returned before the write was sent, each by more than the
/// clocks' error bound `clock_us`. None without one, or when the journal has no claim of the
/// writer's to judge by.
pub(crate) fn after_reaper<'a>(
    events: &[Event],
    reaps: &'a [ReapEvent],
    w: &Event,
    clock_us: u64,
) -> Option<&'a ReapEvent> {
    let own = events.iter().find(|e| e.kind == EventKind::Claimed && (e.worker, e.claim) == (w.worker, w.claim))?;
    reaps.iter().find(|r| r.sent_us() >= own.t_us + clock_us && r.t_us + clock_us <= w.t_us)
}

/// The writes the reaper superseded: landed and refused, with the first that landed.
#[derive(Default)]
struct ByReaper {
    completions: u64,
    failures: u64,
    refused: u64,
    first: Option<(Event, ReapEvent)>,
}

pub(super) fn check(per_job: &[&[Event]], reaps: &Reaps) -> (Completions, Stale, CheckResult) {
    let mut c = Completions::default();
    let mut s = Stale::default();
    let mut r = ByReaper::default();
    let mut bad = Vec::new();
    for events in per_job {
        let mut owner: Option<(u32, u32, i32)> = None; // (worker, claim, attempt) of the newest claim
        let job_reaps = reaps.job(events[0].job);
        for ev in events.iter() {
            let mut superseded = owner.is_some_and(|(w, k, _)| (w, k) != (ev.worker, ev.claim));
            if !superseded
                && is_write(ev.kind)
                && let Some(reap) = after_reaper(events, job_reaps, ev, reaps.clock_us)
            {
                superseded = true;
                r.count(ev, reap);
            }
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
    let check = result(&c, &s, r.words(reaps.unjournaled), bad);
    (c, s, check)
}

/// The check's verdict, with the counts and `reaper`'s words in its detail.
fn result(c: &Completions, s: &Stale, reaper: String, bad: Vec<i64>) -> CheckResult {
    let total = c.stale_accepted + s.fail_stale_accepted + s.heartbeat_stale_accepted;
    let detail = format!(
        "stale writes that landed: {} completions, {} failures, {} heartbeats; rejected by the fence: {} completions, {} failures{reaper}",
        c.stale_accepted, s.fail_stale_accepted, s.heartbeat_stale_accepted, c.stale_rejected, s.fail_stale_rejected,
    );
    CheckResult {
        name: Check::StaleCompletionsAccepted,
        passed: total == 0,
        violations: total,
        detail,
        examples: examples(bad),
    }
}

/// A completion or failure (what the reaper can supersede).
fn is_write(kind: EventKind) -> bool {
    matches!(kind, EventKind::Accepted | EventKind::Rejected | EventKind::FailAccepted | EventKind::FailRejected)
}

impl ByReaper {
    fn count(&mut self, w: &Event, reap: &ReapEvent) {
        match w.kind {
            EventKind::Accepted => self.completions += 1,
            EventKind::FailAccepted => self.failures += 1,
            _ => self.refused += 1,
        }
        if matches!(w.kind, EventKind::Accepted | EventKind::FailAccepted) && self.first.is_none() {
            self.first = Some((*w, *reap));
        }
    }

    /// The detail's words on the reaper ("" when it superseded nothing and named every job).
    fn words(&self, unjournaled: u64) -> String {
        let mut out = String::new();
        if self.completions + self.failures + self.refused > 0 {
            out += &format!(
                "; after the reaper took the job back: {} and {} landed, {} refused",
                count(self.completions, "completion"),
                count(self.failures, "failure"),
                self.refused
            );
        }
        if let Some((w, reap)) = &self.first {
            out += &format!(" (first: job {}, {})", w.job, landed_after(w, reap));
        }
        if unjournaled > 0 {
            out += &format!(
                "; the reaper took back {} with a reclaim that returns no job ids (no RETURNING): writes after those \
                 are not judged against the reaper",
                count(unjournaled, "job")
            );
        }
        out
    }
}

/// "w1's completion sent at t=… accepted after the reaper failed it at t=…": a write the
/// reaper superseded, in words (the check's detail and `explain`).
pub(crate) fn landed_after(w: &Event, reap: &ReapEvent) -> String {
    let what = if w.kind == EventKind::FailAccepted { "failure" } else { "completion" };
    format!(
        "w{}'s {what} sent at t={} accepted after the reaper {} at t={}",
        w.worker,
        secs(w.t_us),
        reap.action.did(),
        secs(reap.t_us)
    )
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::ReapAction;
    use crate::model::records::{JobRow, Status};
    use crate::verify::{Evidence, verify};
    use EventKind::*;
    use std::time::Duration;

    fn ev(t_us: u64, worker: u32, claim: u32, kind: EventKind) -> Event {
        Event { t_us, job: 5, attempt: -1, worker, claim, kind, dur_us: 1_000, token: 0 }
    }

    fn reap(t_us: u64, action: ReapAction) -> ReapEvent {
        ReapEvent { t_us, job: 5, action, dur_us: 2_000 }
    }

    /// (stale_completions_accepted, completions_refused_unexplained) of a journal and reaps.
    fn judged(journal: &[Event], reaps: &[ReapEvent], unjournaled: u64) -> (CheckResult, CheckResult) {
        let rows = [JobRow { id: 5, status: Status::Done, attempts: 1, max_attempts: 1, lease_expired: false }];
        let bare = Evidence::bare(journal, &rows, 1, Duration::from_secs(3));
        let v = verify(&Evidence { reaps, reaps_unjournaled: unjournaled, ..bare });
        let of = |c: Check| v.checks.iter().find(|x| x.name == c).cloned().expect("run");
        (of(Check::StaleCompletionsAccepted), of(Check::CompletionsRefusedUnexplained))
    }

    /// w1 claims at 0.1 s, works, is paused; the reaper fails the job at 3.2 s; w1's write is
    /// sent at 4.5 s.
    fn paused(write: EventKind) -> Vec<Event> {
        vec![ev(100_000, 1, 1, Claimed), ev(600_000, 1, 1, Executed), ev(4_500_000, 1, 1, write)]
    }

    #[test]
    fn a_completion_accepted_after_the_reaper_failed_the_job_is_stale_and_names_the_reaper() {
        let (stale, refused) = judged(&paused(Accepted), &[reap(3_200_000, ReapAction::Failed)], 0);
        assert!(!stale.passed && stale.violations == 1, "{stale:?}");
        assert_eq!(stale.examples, [5]);
        assert!(
            stale.detail.contains("w1's completion sent at t=4.500 s accepted after the reaper failed it at t=3.200 s"),
            "{}",
            stale.detail
        );
        assert!(refused.passed);
        let (stale, _) = judged(&paused(FailAccepted), &[reap(3_200_000, ReapAction::Requeued)], 0);
        assert!(!stale.passed, "a failure too: {stale:?}");
        assert!(stale.detail.contains("w1's failure sent at t=4.500 s accepted after the reaper gave it back"));
    }

    #[test]
    fn a_fenced_completion_refused_after_the_reaper_passes_and_is_explained() {
        let (stale, refused) = judged(&paused(Rejected), &[reap(3_200_000, ReapAction::Failed)], 0);
        assert!(stale.passed, "{stale:?}");
        assert!(stale.detail.contains("1 refused"), "{}", stale.detail);
        assert!(refused.passed, "{refused:?}");
        // Without the lease run out (a long lease), only the reaper explains the refusal.
        let rows = [JobRow { id: 5, status: Status::Dead, attempts: 1, max_attempts: 1, lease_expired: false }];
        let journal = paused(Rejected);
        let reaps = [reap(3_200_000, ReapAction::Failed)];
        let bare = Evidence::bare(&journal, &rows, 1, Duration::from_secs(60));
        let v = verify(&Evidence { reaps: &reaps, ..bare.clone() });
        let refused = |v: &crate::verify::Verification| {
            v.checks.iter().find(|c| c.name == Check::CompletionsRefusedUnexplained).unwrap().passed
        };
        assert!(refused(&v), "the reaper explains it");
        assert!(!refused(&verify(&bare)), "nothing else does");
    }

    #[test]
    fn a_claim_of_the_same_worker_after_the_reaper_makes_its_completion_current() {
        let journal = [
            ev(100_000, 1, 1, Claimed),
            ev(3_500_000, 1, 2, Claimed),
            ev(3_600_000, 1, 2, Executed),
            ev(3_700_000, 1, 2, Accepted),
        ];
        let (stale, _) = judged(&journal, &[reap(3_200_000, ReapAction::Requeued)], 0);
        assert!(stale.passed, "{stale:?}");
    }

    #[test]
    fn a_reclaim_that_may_have_come_before_the_claim_or_after_the_write_is_not_counted() {
        // Sent (at 0.08 s) before the claim came back at 0.1 s: it may have acted first.
        let (stale, _) = judged(&paused(Accepted), &[reap(82_000, ReapAction::Requeued)], 0);
        assert!(stale.passed, "{stale:?}");
        // Returned after the write was sent.
        let (stale, _) = judged(&paused(Accepted), &[reap(4_500_100, ReapAction::Failed)], 0);
        assert!(stale.passed, "{stale:?}");
    }

    #[test]
    fn a_reaper_that_names_no_job_is_said_to_be_unjudged() {
        let (stale, _) = judged(&paused(Accepted), &[], 3);
        assert!(stale.passed);
        assert!(stale.detail.contains("took back 3 jobs with a reclaim that returns no job ids"), "{}", stale.detail);
        let (stale, _) = judged(&paused(Accepted), &[], 0);
        assert!(!stale.detail.contains("reaper"), "{}", stale.detail);
    }
}
