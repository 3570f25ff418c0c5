//! One job's story, from the evidence: who claimed it when (each claim's round trip and lease
//! window), each execution, each write and whether it landed, the faults that touched it, what
//! the harness's reaper did to it, and
//! the cause of what went wrong in one line each — the same rules as the checkers
//! (`exactly_once`, `stale`, `lost`), told for one job. `queuebench explain` prints it;
//! report.html draws the same events as a swimlane.

use super::claims::{ClaimSpan, race_tolerance, spans};
use super::rerun::{Why, landed_completions, unknown_of, why};
use super::stale::{after_reaper, landed_after};
use super::time::secs;
use crate::collect::{Event, EventKind, FaultEvent, ReapAction, ReapEvent};
use crate::model::records::{JobRow, Status};
use crate::model::rerun::Rerun;
use std::time::Duration;

/// A moment of the story: its time (µs after the start) and what happened.
pub(crate) type Line = (u64, String);

#[derive(Debug, Default, PartialEq)]
pub(crate) struct Story {
    pub lines: Vec<Line>,
    /// What went wrong, one line each ("ran exactly once" when nothing did).
    pub causes: Vec<String>,
}

/// `events`: the job's journal (any order); `faults`, `reaps`: the run's; `row`: the job in the
/// final table (None: gone, or no table); `deleted_ok`: the queue removes what it finishes.
/// `clock_us`: the agents' clock error bound (`claims::race_tolerance`).
pub(crate) fn story(
    events: &[Event],
    (faults, reaps): (&[FaultEvent], &[ReapEvent]),
    row: Option<&JobRow>,
    (lease, hold, clock_us): (Duration, bool, u64),
) -> Story {
    let mut evs = events.to_vec();
    evs.sort_by_key(|e| (e.t_us, e.kind));
    let job = evs.first().map(|e| e.job).or(row.map(|r| r.id));
    let claims = spans(&evs, lease, hold);
    let mut lines: Vec<Line> = evs.iter().flat_map(|e| event_lines(e, &claims)).collect();
    // A completion sent again after its answer was lost says so.
    for (line, e) in lines.iter_mut().filter(|(_, l)| l.contains(" completes it: ")).zip(
        evs.iter().filter(|e| matches!(e.kind, EventKind::Accepted | EventKind::Rejected | EventKind::CompleteUnknown)),
    ) {
        if e.kind != EventKind::CompleteUnknown && unknown_of(&evs, (e.worker, e.claim), e.t_us).is_some() {
            line.1 = line.1.replacen(" completes it: ", " sends its completion again: ", 1);
        }
    }
    for f in faults.iter().filter(|f| f.job.is_some() && f.job == job) {
        let who = f.worker.map(|w| format!("w{w}")).unwrap_or_else(|| "the injector".into());
        lines.push((f.t_us, format!("fault: {} ({who})", f.kind)));
    }
    let mut reaps: Vec<ReapEvent> = reaps.iter().filter(|r| Some(r.job) == job).copied().collect();
    reaps.sort_by_key(|r| r.t_us);
    lines.extend(reaps.iter().map(reap_line));
    lines.sort_by_key(|l| l.0);
    let mut causes = causes(&evs, &claims, row, (race_tolerance(lease, clock_us), hold));
    let reaped = reaper_writes(&evs, &reaps, clock_us);
    if !reaped.is_empty() {
        // The count of runs stands only when nothing went wrong.
        let plain = |c: &String| c == "never executed" || (c.starts_with("ran ") && !c.starts_with("ran again"));
        if causes.len() == 1 && plain(&causes[0]) {
            causes.clear();
        }
        causes.extend(reaped);
    }
    Story { lines, causes }
}

/// What the reaper did to the job, at the time its reclaim returned.
fn reap_line(r: &ReapEvent) -> Line {
    let what = match r.action {
        ReapAction::Requeued => "gives the job back to the queue",
        ReapAction::Failed => "fails the job",
        ReapAction::Reclaimed => "takes the job back",
    };
    (r.t_us, format!("the reaper {what} (its reclaim sent at t={})", secs(r.sent_us())))
}

/// Completions and failures that landed after the reaper took the job back from their claim
/// (the `stale` checker's rule), when no other claim superseded them first.
fn reaper_writes(evs: &[Event], reaps: &[ReapEvent], clock_us: u64) -> Vec<String> {
    let mut owner: Option<&Event> = None;
    let mut out = Vec::new();
    for e in evs {
        match e.kind {
            EventKind::Claimed if owner.is_none_or(|o| e.attempt < 0 || e.attempt >= o.attempt) => owner = Some(e),
            EventKind::Accepted | EventKind::FailAccepted
                if owner.is_none_or(|o| (o.worker, o.claim) == (e.worker, e.claim)) =>
            {
                if let Some(r) = after_reaper(evs, reaps, e, clock_us) {
                    let what = if e.kind == EventKind::Accepted { "completion" } else { "failure" };
                    out.push(format!(
                        "stale {what} landed: {} (w{} had not claimed the job again since)",
                        landed_after(e, r),
                        e.worker
                    ));
                }
            }
            _ => {}
        }
    }
    out
}

fn event_lines(e: &Event, claims: &[ClaimSpan]) -> Vec<Line> {
    let w = format!("w{}", e.worker);
    let took = |d: u32| format!("{:.1} ms", f64::from(d) / 1000.0);
    let at = |t: u64| format!("t={}", secs(t));
    match e.kind {
        EventKind::Claimed => {
            let span = claims.iter().find(|c| (c.worker, c.claim) == (e.worker, e.claim));
            // A claim handed back (completed, failed) ends there, before its lease would have.
            let lease = span
                .map(|s| match s.handed_back {
                    true => format!(", held until {} (handed back)", at(s.lease_end_us)),
                    false => format!(", lease until {}", at(s.lease_end_us)),
                })
                .unwrap_or_default();
            let token = if e.token == 0 { String::new() } else { format!(", token {:08x}…", e.token >> 32) };
            let mut out = Vec::new();
            if e.dur_us > 0 {
                out.push((e.t_us - u64::from(e.dur_us), format!("{w} sends its claim")));
            }
            // A queue without an attempt column has none to show (the journal keeps -1).
            let attempt = if e.attempt >= 0 { format!(": attempt {}", e.attempt) } else { String::new() };
            out.push((e.t_us, format!("{w}'s claim returns the job{attempt}{token}{lease}")));
            out
        }
        EventKind::Executed => {
            let start = e.t_us - u64::from(e.dur_us);
            vec![
                (start, format!("{w} starts the work")),
                (e.t_us, format!("{w} executes it (the side effect, after {} of work)", took(e.dur_us))),
            ]
        }
        EventKind::Accepted => vec![(e.t_us, format!("{w} completes it: accepted ({})", took(e.dur_us)))],
        EventKind::Rejected => {
            vec![(e.t_us, format!("{w} completes it: rejected, changed nothing ({})", took(e.dur_us)))]
        }
        EventKind::FailAccepted => vec![(e.t_us, format!("{w} records a failure: accepted"))],
        EventKind::FailRejected => vec![(e.t_us, format!("{w} records a failure: rejected"))],
        EventKind::HeartbeatOk => vec![(e.t_us, format!("{w} extends the lease (heartbeat accepted)"))],
        EventKind::HeartbeatRejected => {
            vec![(e.t_us, format!("{w}'s heartbeat is rejected: the job is no longer its"))]
        }
        EventKind::Abandoned => vec![(e.t_us, format!("{w} lets go of the job without finishing it"))],
        EventKind::CompleteUnknown => vec![(
            e.t_us,
            format!("{w} completes it: the answer is lost (connection cut after {}), outcome unknown", took(e.dur_us)),
        )],
    }
}

/// Seconds with milliseconds, as the story prints times.
fn causes(evs: &[Event], claims: &[ClaimSpan], row: Option<&JobRow>, (tolerance, hold): (u64, bool)) -> Vec<String> {
    let mut out = Vec::new();
    let runs: Vec<&Event> = evs.iter().filter(|e| e.kind == EventKind::Executed).collect();
    let landed = landed_completions(evs, hold);
    for run in runs.iter().skip(1) {
        let Some(c) = claims.iter().find(|c| (c.worker, c.claim) == (run.worker, run.claim)) else { continue };
        out.push(rerun_words(c, &why(evs, claims, c, &landed, (tolerance, &[])), tolerance));
    }
    out.extend(stale_writes(evs));
    out.extend(lost(evs, row));
    if out.is_empty() {
        out.push(match runs.len() {
            0 => "never executed".to_string(),
            1 => "ran exactly once".to_string(),
            n => format!("ran {n} times"),
        });
    }
    out
}

/// One execution's cause in words (`rerun::why`'s verdict, told with its workers and times).
fn rerun_words(c: &ClaimSpan, why: &Why, tolerance: u64) -> String {
    let (w, sent) = (c.worker, secs(c.sent_us));
    match (why.cause, why.other, why.completion) {
        (Rerun::Race, Some(o), _) => format!(
            "racing claim: w{w}'s claim (sent t={sent}, returned t={}) handed out the job while w{}'s lease ran until t={}",
            secs(c.start_us),
            o.worker,
            secs(o.lease_end_us)
        ),
        (Rerun::AfterCompletion, _, Some(d)) => format!(
            "run after its completion: w{}'s completion was accepted (sent t={}, answered t={}), and w{w}'s claim (sent t={sent}) returned the finished job again",
            d.worker,
            secs(d.sent_us),
            secs(d.answered_us)
        ),
        (Rerun::AfterAckUnknown, _, _) => ack_unknown_words(c, why),
        (Rerun::Retry, Some(o), _) => format!(
            "a retry: w{}'s failure was accepted and the queue scheduled the job again; w{w}'s claim at t={sent} ran it (no duplicate)",
            o.worker
        ),
        (Rerun::AfterCrash, Some(o), _) => format!(
            "after a crash: w{} let go of the job without finishing it (a crash or a lost connection) at t={}, and w{w}'s claim at t={sent} took it (at-least-once, no race)",
            o.worker,
            secs(o.released_us.unwrap_or(o.lease_end_us))
        ),
        (Rerun::LeaseExpired, Some(o), _) if o.lease_end_us <= c.sent_us => format!(
            "after lease expiry: w{}'s lease ran out at t={} before w{w}'s claim at t={sent} (at-least-once, no race)",
            o.worker,
            secs(o.lease_end_us)
        ),
        (Rerun::LeaseExpired, Some(o), _) => format!(
            "after lease expiry: w{}'s lease ran out at t={}, {} ms after w{w}'s claim was sent at t={sent}: within \
             the {} ms the clocks and the lease's resolution leave open, so not counted as a race \
             (at-least-once)",
            o.worker,
            secs(o.lease_end_us),
            (o.lease_end_us - c.sent_us).div_ceil(1000),
            tolerance.div_ceil(1000)
        ),
        _ => format!("ran again by w{w} (claim at t={})", secs(c.start_us)),
    }
}

/// `Rerun::AfterAckUnknown` in words: whose completion lost its answer, what came of it, and
/// the claim that ran the job again.
fn ack_unknown_words(c: &ClaimSpan, why: &Why) -> String {
    let (w, sent) = (c.worker, secs(c.sent_us));
    let lost = why.unknown.map_or_else(
        || "a completion's answer was lost".to_string(),
        |u| format!("w{}'s completion (sent t={}) lost its answer", u.worker, secs(u.t_us)),
    );
    let then = match why.completion {
        Some(d) => format!(
            "; sent again, it was accepted (answered t={}), and w{w}'s claim (sent t={sent}) returned the job again: \
             the completion sent again put a finished job back (not idempotent)",
            secs(d.answered_us)
        ),
        None => format!(
            ", and w{w}'s claim at t={sent} took the job again (the completion had not landed and the lease ran \
             out: at-least-once; or it had, and the queue gave the finished job back)"
        ),
    };
    format!("{}: {lost}{then}", Rerun::AfterAckUnknown.words())
}

/// Writes that landed after another claim superseded their own (the `stale` checker's rule).
fn stale_writes(evs: &[Event]) -> Vec<String> {
    let mut out = Vec::new();
    let mut owner: Option<&Event> = None;
    for e in evs {
        match e.kind {
            EventKind::Claimed if owner.is_none_or(|o| e.attempt < 0 || e.attempt >= o.attempt) => owner = Some(e),
            EventKind::Accepted | EventKind::FailAccepted | EventKind::HeartbeatOk => {
                if let Some(o) = owner.filter(|o| (o.worker, o.claim) != (e.worker, e.claim)) {
                    let what = match e.kind {
                        EventKind::Accepted => "completion",
                        EventKind::FailAccepted => "failure",
                        _ => "heartbeat",
                    };
                    out.push(format!(
                        "stale {what} landed: w{}'s {what} at t={} (attempt {}) after w{} re-claimed at t={} (attempt {})",
                        e.worker,
                        secs(e.t_us),
                        e.attempt,
                        o.worker,
                        secs(o.t_us),
                        o.attempt
                    ));
                }
            }
            _ => {}
        }
    }
    out
}

fn lost(evs: &[Event], row: Option<&JobRow>) -> Option<String> {
    let executed = evs.iter().any(|e| e.kind == EventKind::Executed);
    let accepted = evs.iter().any(|e| matches!(e.kind, EventKind::Accepted | EventKind::FailAccepted));
    match row {
        Some(r) if r.status == Status::Done && !executed => Some("lost: marked done without an execution".into()),
        Some(r) if r.status == Status::Running && r.lease_expired => {
            Some("lost: left running with an expired lease, and nobody reclaimed it".into())
        }
        None if !accepted => Some("lost: gone from the table without an accepted completion".into()),
        None if !executed => Some("lost: completed and removed without an execution".into()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::EventKind::*;

    fn ev(t_us: u64, worker: u32, attempt: i32, kind: EventKind, dur_us: u32) -> Event {
        Event { t_us, job: 464, attempt, worker, claim: 1, kind, dur_us, token: 0 }
    }

    #[test]
    fn a_racing_claim_is_told_with_both_workers_and_the_lease() {
        let evs = [
            ev(1_000, 3, 1, Claimed, 400),
            ev(1_100, 3, 1, Executed, 50),
            ev(1_200, 3, 1, Accepted, 100),
            ev(1_500, 5, 1, Claimed, 1_200),
            ev(1_600, 5, 1, Executed, 50),
            ev(1_700, 5, 1, Rejected, 100),
        ];
        let row = JobRow { id: 464, status: Status::Done, attempts: 1, max_attempts: 5, lease_expired: false };
        let s = story(&evs, (&[], &[]), Some(&row), (Duration::from_secs(90), false, 0));
        assert_eq!(s.causes.len(), 1, "{:?}", s.causes);
        assert!(
            s.causes[0].starts_with("racing claim: w5's claim (sent t=0.000 s, returned t=0.002 s)"),
            "{}",
            s.causes[0]
        );
        assert!(s.causes[0].contains("while w3's lease ran until t=0.001 s"), "{}", s.causes[0]);
        assert!(s.lines.iter().any(|(_, l)| l == "w5 sends its claim"));
        assert!(s.lines.windows(2).all(|w| w[0].0 <= w[1].0), "in time order");
    }

    #[test]
    fn a_claim_just_inside_the_tolerance_is_told_as_such_and_no_attempt_is_shown_as_none() {
        // w1's 1 s lease runs to t=1.000 s; w2's claim is sent at t=0.995 s, inside the 50 ms
        // the checkers leave open: counted after lease expiry, and said to be 5 ms early.
        let evs = [
            Event { claim: 1, ..ev(0, 1, -1, Claimed, 0) },
            Event { claim: 1, ..ev(10, 1, -1, Executed, 0) },
            Event { claim: 2, ..ev(996_000, 2, -1, Claimed, 1_000) },
            Event { claim: 2, ..ev(996_100, 2, -1, Executed, 0) },
            Event { claim: 2, ..ev(996_200, 2, -1, Accepted, 100) },
        ];
        let s = story(&evs, (&[], &[]), None, (Duration::from_secs(1), false, 0));
        assert_eq!(s.causes.len(), 1, "{:?}", s.causes);
        assert!(
            s.causes[0].contains("ran out at t=1.000 s, 5 ms after w2's claim was sent at t=0.995 s"),
            "{}",
            s.causes[0]
        );
        assert!(s.causes[0].contains("within the 50 ms"), "{}", s.causes[0]);
        assert!(s.lines.iter().all(|(_, l)| !l.contains("attempt")), "no attempt column, none shown: {:?}", s.lines);
        assert!(
            s.lines.iter().any(|(_, l)| l.contains("w1's claim returns the job, lease until t=1.000 s")),
            "{:?}",
            s.lines
        );
        assert!(s.lines.iter().any(|(_, l)| l.contains("held until t=0.996 s (handed back)")), "{:?}", s.lines);
    }

    #[test]
    fn a_run_after_a_lost_answer_is_told_with_the_completion_sent_again() {
        let evs = [
            Event { claim: 1, ..ev(1_000, 1, 1, Claimed, 0) },
            Event { claim: 1, ..ev(2_000, 1, 1, Executed, 500) },
            Event { claim: 1, ..ev(3_000, 1, 1, CompleteUnknown, 400) },
            Event { claim: 1, ..ev(9_000, 1, 1, Accepted, 1_000) },
            Event { claim: 2, ..ev(20_000, 2, 2, Claimed, 1_000) },
            Event { claim: 2, ..ev(21_000, 2, 2, Executed, 500) },
            Event { claim: 2, ..ev(22_000, 2, 2, Accepted, 500) },
        ];
        let s = story(&evs, (&[], &[]), None, (Duration::from_secs(5), false, 0));
        assert_eq!(s.causes.len(), 1, "{:?}", s.causes);
        assert!(
            s.causes[0]
                .starts_with("after an acknowledgement whose outcome was unknown: w1's completion (sent t=0.003 s)"),
            "{}",
            s.causes[0]
        );
        assert!(s.causes[0].contains("not idempotent"), "{}", s.causes[0]);
        let said = |text: &str| s.lines.iter().any(|(_, l)| l.contains(text));
        assert!(said("w1 completes it: the answer is lost"), "{:?}", s.lines);
        assert!(said("w1 sends its completion again: accepted"), "{:?}", s.lines);
        assert!(said("w2 completes it: accepted"), "{:?}", s.lines);
    }

    #[test]
    fn a_clean_job_ran_exactly_once_and_a_vanished_one_is_lost() {
        let evs = [ev(1, 1, 1, Claimed, 0), ev(2, 1, 1, Executed, 0), ev(3, 1, 1, Accepted, 0)];
        let row = JobRow { id: 464, status: Status::Done, attempts: 1, max_attempts: 5, lease_expired: false };
        assert_eq!(
            story(&evs, (&[], &[]), Some(&row), (Duration::from_secs(1), false, 0)).causes,
            ["ran exactly once"]
        );
        let s = story(&evs[..2], (&[], &[]), None, (Duration::from_secs(1), false, 0));
        assert_eq!(s.causes, ["lost: gone from the table without an accepted completion"]);
    }

    #[test]
    fn the_reaper_is_told_and_a_completion_after_it_names_it() {
        let evs = [ev(100_000, 1, -1, Claimed, 0), ev(600_000, 1, -1, Executed, 0), ev(4_500_000, 1, -1, Accepted, 0)];
        let reaps = [
            ReapEvent { t_us: 3_200_000, job: 464, action: ReapAction::Failed, dur_us: 2_000 },
            ReapEvent { t_us: 3_200_000, job: 465, action: ReapAction::Requeued, dur_us: 2_000 },
        ];
        let row = JobRow { id: 464, status: Status::Done, attempts: 1, max_attempts: 1, lease_expired: false };
        let s = story(&evs, (&[], &reaps), Some(&row), (Duration::from_secs(3), false, 0));
        let told: Vec<&str> = s.lines.iter().map(|(_, l)| l.as_str()).collect();
        assert!(told.contains(&"the reaper fails the job (its reclaim sent at t=3.198 s)"), "{told:?}");
        assert_eq!(told.iter().filter(|l| l.contains("reaper")).count(), 1, "only this job's: {told:?}");
        assert_eq!(
            s.causes,
            ["stale completion landed: w1's completion sent at t=4.500 s accepted after the reaper failed it at \
              t=3.200 s (w1 had not claimed the job again since)"]
        );
    }
}
