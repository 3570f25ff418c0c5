//! Liveness: the queue kept finishing its work. The safety checks pass a queue that silently
//! stops: completions that never land, jobs left `running` by a holder that is gone, a run
//! that executed nothing, faults nobody recovered from. These checks read the same evidence
//! (the journal, the final table, the fault log, the lease) and reuse the other checkers'
//! notions: a claim's lease and its end come from `claims::spans`, the clock allowance at a
//! computed lease end from `claims::race_tolerance`, a fault's recovery from `recovery`.
//!
//! - `completions_refused_unexplained`: a completion or failure refused (0 rows) for the job's
//!   own holder, with nothing to explain it: no other claim of the job came back after the
//!   holder's claim was sent and was sent before the refusal's answer, no other holder's
//!   completion or failure landed meanwhile, the holder's lease had not run out (heartbeats
//!   included, `race_tolerance` allowed), the job was not cancelled, and no lost connection
//!   (a killed backend on that worker, a server restart, a network fault) fell between the
//!   claim and the answer (a completion whose answer was lost is sent again and finds the job
//!   already done). A queue whose complete statement matches nothing fails here.
//! - `jobs_left_abandoned`: jobs `running` in the final table whose newest holder let go
//!   before the run stopped (a crash, a lost connection, a refused completion, failure or
//!   heartbeat), or that no claim in the journal holds: only the lease brings them back, if
//!   anything reclaims them at all. Let-gos at or after the run was told to stop (a `run.stop`
//!   duration, the timeout, Ctrl-C, an abort) are the run ending, not the queue.
//! - `progress`: ready work was not executed. Fails when nothing was executed at all while
//!   jobs were enqueued, or when no execution came for longer than [`stall_threshold`] while a
//!   job was waiting for its first claim (from its enqueue, or the start for a preloaded job, to
//!   its first claim, execution, completion or cancel; to the end of the run for a job still
//!   `queued`). Retries waiting out a backoff and jobs waiting for a lease to run out do not
//!   count as ready: those are the other checks' business.
//! - `faults_recovered`: faults that hit a job (crash, pause, poison, a killed process …)
//!   whose job never came back: no completion of it accepted after the fault, no failure of its
//!   own accepted at all (a job whose own failures spent its budget too is not the fault's
//!   doing), and not `done` at the end. Faults within [`recovery_grace`] of a stop by the clock are left out (the
//!   job had no time to come back). Reported when a fault hit a job.
//! - `dead_after_one_fault`: jobs that ended `dead` after a single fault and no failure of
//!   their own: one crash used up the retry budget (or the reaper gave up at once). Reported
//!   when a fault hit a job.

mod after_fault;
mod progress;
#[cfg(test)]
mod tests;

use super::claims::{ClaimSpan, race_tolerance, spans};
use super::{Evidence, examples};
use crate::collect::{Event, EventKind, FaultKind};
use crate::model::check::Check;
use crate::model::records::Status;
use crate::model::summary::CheckResult;
use crate::model::words::{count, count_as};
use after_fault::{dead_after_one_fault, faults_recovered};
use progress::progress;
use std::time::Duration;

/// The shortest stall `progress` reports, whatever the lease and the work.
pub(super) const STALL_MIN: Duration = Duration::from_secs(10);
/// A stall must also outlast this many leases …
pub(super) const STALL_LEASES: u64 = 3;
/// … and this many times the longest piece of work executed in the run.
pub(super) const STALL_WORKS: u64 = 3;

/// How long `progress` allows without an execution while work waits: the largest of 10 s,
/// 3 leases and 3 × the longest work the run executed. Loose on purpose: a loaded 2-core
/// machine, a pause, a lock held for a second or a server restart must not fail a correct
/// queue; a queue that stops does not come back within it either.
pub(super) fn stall_threshold(lease: Duration, longest_work_us: u64) -> u64 {
    (STALL_MIN.as_micros() as u64).max(STALL_LEASES * lease.as_micros() as u64).max(STALL_WORKS * longest_work_us)
}

/// A fault later than this before a stop by the clock is not judged: twice the lease and a second.
pub(super) fn recovery_grace(lease: Duration) -> u64 {
    2 * lease.as_micros() as u64 + 1_000_000
}

/// Whether a fault of this kind cuts a worker's connection between a claim and its answer (an
/// answer may be lost and the statement sent again). A restart or a failover cuts them too:
/// judged by its outage (`restarts`), not by the moment it fired.
pub(super) fn cuts_connection(kind: FaultKind) -> bool {
    match kind {
        FaultKind::KillBackend | FaultKind::Partition | FaultKind::Latency | FaultKind::Loss => true,
        FaultKind::PostgresRestart | FaultKind::Failover => false,
        FaultKind::Crash | FaultKind::Pause | FaultKind::LockHold | FaultKind::Poison => false,
        FaultKind::Cancel | FaultKind::Exit | FaultKind::KillAgent => false,
        // The worker cuts its own connection, knowing it (no error comes of it); the completion
        // it sends again is judged by the lost answer (`CompleteUnknown`, `claims::spans_held`).
        FaultKind::AckLost => false,
    }
}

/// The five liveness checks (the last two only when a fault hit a job).
pub(super) fn check(e: &Evidence, per_job: &[&[Event]]) -> Vec<CheckResult> {
    let mut checks = vec![refused(e, per_job), abandoned(e, per_job), progress(e, per_job)];
    checks.extend(faults_recovered(e, per_job));
    checks.extend(dead_after_one_fault(e, per_job));
    checks
}

fn same(c: &ClaimSpan, ev: &Event) -> bool {
    (c.worker, c.claim) == (ev.worker, ev.claim)
}

/// The end of the run as the evidence knows it: the recorded duration, or the last event.
fn run_end(e: &Evidence) -> u64 {
    let last = e.journal.iter().map(|ev| ev.t_us + u64::from(ev.dur_us)).max().unwrap_or(0);
    e.end_us.max(last)
}

fn secs(us: u64) -> f64 {
    us as f64 / 1e6
}

/// Is the refused write `w` (of one job, whose events and claims these are) explained?
fn explained(e: &Evidence, events: &[Event], claims: &[ClaimSpan], w: &Event, tolerance: u64) -> bool {
    let answer = w.t_us + u64::from(w.dur_us);
    // A holder the journal does not know: nothing to judge by.
    let Some(own) = claims.iter().find(|c| same(c, w)) else { return true };
    // Another claim took the job over, or raced the holder's: it came back after the holder's
    // claim was sent, and was sent before the refusal's answer.
    let competing = claims.iter().any(|o| !same(o, w) && o.start_us >= own.sent_us && o.sent_us <= answer);
    // Another holder's completion or failure landed while the holder held the job.
    let finished_by_another = events.iter().any(|x| {
        matches!(x.kind, EventKind::Accepted | EventKind::FailAccepted)
            && (x.worker, x.claim) != (w.worker, w.claim)
            && x.t_us <= answer
            && x.t_us + u64::from(x.dur_us) >= own.sent_us
    });
    // The holder's lease had run out (or its own earlier completion or failure gave the job back).
    let expired = answer + tolerance >= own.lease_end_us;
    let cancelled = e.faults.iter().any(|f| f.kind == FaultKind::Cancel && f.job == Some(w.job) && f.t_us <= answer);
    // A restart cuts every connection open between the stop (its time) and the server's return:
    // a claim sent while the server was still going down was answered, its write's may not be.
    // Evidence from before the return was recorded knows only the stop.
    let restart_cut = |(i, &down): (usize, &u64)| match e.restarts_up.get(i) {
        Some(&up) => down <= answer && own.sent_us <= up,
        None => down >= own.sent_us && down <= answer,
    };
    let cut_off = e.faults.iter().any(|f| {
        cuts_connection(f.kind)
            && (f.kind != FaultKind::KillBackend || f.worker.is_none_or(|x| x == w.worker))
            && f.t_us >= own.sent_us
            && f.t_us <= answer
    }) || e.restarts.iter().enumerate().any(restart_cut);
    // The harness's reaper took the job back (gave it back or failed it) while the holder held it.
    let reaped = e.reaps.iter().any(|r| r.job == w.job && r.t_us >= own.start_us && r.sent_us() <= answer);
    competing || finished_by_another || expired || cancelled || cut_off || reaped
}

/// `completions_refused_unexplained`.
fn refused(e: &Evidence, per_job: &[&[Event]]) -> CheckResult {
    let tolerance = race_tolerance(e.lease, e.clock_us);
    let (mut completions, mut failures, mut all) = (0u64, 0u64, 0u64);
    let mut jobs = Vec::new();
    for events in per_job {
        let writes = events.iter().filter(|x| matches!(x.kind, EventKind::Rejected | EventKind::FailRejected));
        let mut writes = writes.peekable();
        if writes.peek().is_none() {
            continue;
        }
        let claims = spans(events, e.lease, false);
        let mut bad = false;
        for w in writes {
            all += 1;
            if explained(e, events, &claims, w, tolerance) {
                continue;
            }
            bad = true;
            match w.kind {
                EventKind::Rejected => completions += 1,
                _ => failures += 1,
            }
        }
        if bad {
            jobs.push(events[0].job);
        }
    }
    let n = completions + failures;
    CheckResult {
        name: Check::CompletionsRefusedUnexplained,
        passed: n == 0,
        violations: n,
        detail: format!(
            "{} and {} refused for the job's own holder with no competing claim, expired lease, reaper, cancel or \
             lost connection to explain it ({} of {} refused writes; {})",
            count(completions, "completion"),
            count(failures, "failure"),
            n,
            all,
            count_as(jobs.len() as u64, "job", "jobs"),
        ),
        examples: examples(jobs),
    }
}

/// Each job's events, found by id.
fn events_of<'a>(per_job: &[&'a [Event]], job: i64) -> &'a [Event] {
    per_job.binary_search_by_key(&job, |events| events[0].job).map_or(&[], |i| per_job[i])
}

/// `jobs_left_abandoned`.
fn abandoned(e: &Evidence, per_job: &[&[Event]]) -> CheckResult {
    let before_stop = |t: u64| e.stopped_us.is_none_or(|s| t < s);
    let end = run_end(e);
    let (mut crashed, mut refused, mut heartbeat, mut finished, mut unknown) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let (mut expired, mut back) = (0u64, Vec::new());
    let mut jobs = Vec::new();
    for row in e.final_jobs.iter().filter(|r| r.status == Status::Running) {
        let events = events_of(per_job, row.id);
        let claims = spans(events, e.lease, false);
        let lease_end = match claims.last() {
            None if e.stopped_us.is_none() => {
                unknown += 1;
                None
            }
            None => continue,
            Some(h) => {
                let Some(r) = h.released_us.filter(|r| before_stop(*r)) else { continue };
                let how = events.iter().find(|x| same(h, x) && x.t_us == r && x.kind.ends_ownership());
                match how.map(|x| x.kind) {
                    Some(EventKind::Rejected | EventKind::FailRejected) => refused += 1,
                    Some(EventKind::HeartbeatRejected) => heartbeat += 1,
                    Some(EventKind::Accepted | EventKind::FailAccepted) => finished += 1,
                    _ => crashed += 1,
                }
                Some(h.lease_end_us)
            }
        };
        jobs.push(row.id);
        if row.lease_expired {
            expired += 1;
        } else if let Some(t) = lease_end {
            back.push(t);
        }
    }
    let n = jobs.len() as u64;
    let mut detail = format!(
        "{} left running by a holder that let go before the run stopped ({crashed} abandoned: a crash or a lost \
         connection; {refused} after a refused completion or failure; {heartbeat} after a refused heartbeat; \
         {finished} after a completion or failure that said it landed; {unknown} with no claim in the journal)",
        count(n, "job")
    );
    if n > 0 {
        detail.push_str(&format!("; {expired} with a lease already run out (nothing reclaimed them)"));
        if let (Some(lo), Some(hi)) = (back.iter().min(), back.iter().max()) {
            detail.push_str(&format!(
                "; the others' leases run out {:.1}–{:.1} s after the run's end ({:.1} s): only then can a reclaim \
                 bring them back",
                secs(lo.saturating_sub(end)),
                secs(hi.saturating_sub(end)),
                secs(end)
            ));
        }
    }
    CheckResult { name: Check::JobsLeftAbandoned, passed: n == 0, violations: n, detail, examples: examples(jobs) }
}
