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

use super::claims::{ClaimSpan, race_tolerance, spans};
use super::{Evidence, examples, recovery};
use crate::collect::{Event, EventKind, FaultEvent, FaultKind};
use crate::model::check::Check;
use crate::model::records::Status;
use crate::model::summary::CheckResult;
use crate::model::words::{count, count_as};
use std::collections::HashMap;
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
fn cuts_connection(kind: FaultKind) -> bool {
    match kind {
        FaultKind::KillBackend | FaultKind::Partition | FaultKind::Latency | FaultKind::Loss => true,
        FaultKind::PostgresRestart | FaultKind::Failover => false,
        FaultKind::Crash | FaultKind::Pause | FaultKind::LockHold | FaultKind::Poison => false,
        FaultKind::Cancel | FaultKind::Exit | FaultKind::KillAgent => false,
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
    competing || finished_by_another || expired || cancelled || cut_off
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
            "{} and {} refused for the job's own holder with no competing claim, expired lease, cancel or lost \
             connection to explain it ({} of {} refused writes; {})",
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

/// One job's wait for its first claim: (ready, taken), µs.
type Wait = (u64, u64, i64);

/// Every job's wait for its first claim, as far as the evidence tells.
fn waits(e: &Evidence, per_job: &[&[Event]], end: u64) -> Vec<Wait> {
    let ready: HashMap<i64, u64> = e.arrivals.iter().map(|a| (a.job, a.sent_us + u64::from(a.enqueue_us))).collect();
    let mut cancelled: HashMap<i64, u64> = HashMap::new();
    for f in e.faults.iter().filter(|f| f.kind == FaultKind::Cancel) {
        if let Some(j) = f.job {
            let t = cancelled.entry(j).or_insert(f.t_us);
            *t = (*t).min(f.t_us);
        }
    }
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for events in per_job {
        let job = events[0].job;
        seen.insert(job);
        let taken = events
            .iter()
            .filter_map(|x| match x.kind {
                EventKind::Claimed => Some(x.t_us.saturating_sub(u64::from(x.dur_us))),
                EventKind::Executed => Some(x.t_us.saturating_sub(u64::from(x.dur_us))),
                EventKind::Accepted | EventKind::FailAccepted => Some(x.t_us),
                _ => None,
            })
            .chain(cancelled.get(&job).copied())
            .min()
            .unwrap_or(end);
        let at = ready.get(&job).copied().unwrap_or(0);
        if taken > at {
            out.push((at, taken, job));
        }
    }
    // Jobs the journal never saw: still waiting at the end when the table says `queued`.
    for row in e.final_jobs.iter().filter(|r| !seen.contains(&r.id) && r.status == Status::Queued) {
        let at = ready.get(&row.id).copied().unwrap_or(0);
        let taken = cancelled.get(&row.id).copied().unwrap_or(end);
        if taken > at {
            out.push((at, taken, row.id));
        }
    }
    out
}

/// `progress`.
fn progress(e: &Evidence, per_job: &[&[Event]]) -> CheckResult {
    let end = run_end(e);
    let mut runs: Vec<u64> = e.journal.iter().filter(|x| x.kind == EventKind::Executed).map(|x| x.t_us).collect();
    runs.sort_unstable();
    let longest_work = e.journal.iter().filter(|x| x.kind == EventKind::Executed).map(|x| x.dur_us).max();
    let threshold = stall_threshold(e.lease, u64::from(longest_work.unwrap_or(0)));
    let mut waits = waits(e, per_job, end);
    waits.sort_unstable();
    let name = Check::Progress;
    if runs.is_empty() {
        let waited: Vec<i64> = waits.iter().map(|w| w.2).collect();
        let n = u64::from(e.enqueued > 0 || !waited.is_empty());
        let detail = if n == 0 {
            "nothing was enqueued and nothing executed".to_string()
        } else {
            format!(
                "nothing was executed in {:.1} s while {} enqueued ({} waiting for a first claim)",
                secs(end),
                count_as(e.enqueued, "job was", "jobs were"),
                waited.len()
            )
        };
        return CheckResult { name, passed: n == 0, violations: n, detail, examples: examples(waited) };
    }
    // The stretches in which some job was waiting, merged; in each, the gaps between executions.
    let mut stalls: Vec<(u64, u64)> = Vec::new();
    let mut longest = (0u64, 0u64);
    let mut i = 0;
    while i < waits.len() {
        let (from, mut to) = (waits[i].0, waits[i].1);
        while i < waits.len() && waits[i].0 <= to {
            to = to.max(waits[i].1);
            i += 1;
        }
        let inside = runs.partition_point(|&t| t <= from)..runs.partition_point(|&t| t < to);
        let marks: Vec<u64> =
            std::iter::once(from).chain(runs[inside].iter().copied()).chain(std::iter::once(to)).collect();
        for w in marks.windows(2) {
            let gap = (w[0], w[1]);
            if gap.1 - gap.0 > longest.1 - longest.0 {
                longest = gap;
            }
            if gap.1 - gap.0 > threshold {
                stalls.push(gap);
            }
        }
    }
    let n = stalls.len() as u64;
    let worst = stalls.iter().max_by_key(|s| s.1 - s.0).copied().unwrap_or(longest);
    let during: Vec<i64> = if n == 0 {
        Vec::new()
    } else {
        waits.iter().filter(|w| w.0 <= worst.0 && w.1 >= worst.1).map(|w| w.2).collect()
    };
    let detail = format!(
        "{} without an execution longer than {:.1} s while work was ready (the largest of 10 s, {STALL_LEASES} leases, \
         {STALL_WORKS} × the longest work); the longest: {:.1} s, from {:.1} s to {:.1} s",
        count_as(n, "stretch", "stretches"),
        secs(threshold),
        secs(worst.1 - worst.0),
        secs(worst.0),
        secs(worst.1)
    );
    CheckResult { name, passed: n == 0, violations: n, detail, examples: examples(during) }
}

/// Faults that hit a job (a cancel is an operator's act, not a fault to recover from).
fn hits(faults: &[FaultEvent]) -> impl Iterator<Item = (&FaultEvent, i64)> {
    faults.iter().filter(|f| f.kind != FaultKind::Cancel).filter_map(|f| f.job.map(|j| (f, j)))
}

/// Did the job end `done`: a `done` row, or gone from the table after an accepted completion?
fn done_at_end(e: &Evidence, events: &[Event], job: i64) -> bool {
    match e.final_jobs.binary_search_by_key(&job, |r| r.id) {
        Ok(i) => e.final_jobs[i].status == Status::Done,
        Err(_) => events.iter().any(|x| x.kind == EventKind::Accepted),
    }
}

/// The job ended dead with its whole attempt budget spent: the queue judged it, as it should
/// when faults took every attempt (a job dead before its budget is spent is not excused here).
fn dead_with_budget_spent(e: &Evidence, job: i64) -> bool {
    e.final_jobs.binary_search_by_key(&job, |r| r.id).is_ok_and(|i| {
        let r = &e.final_jobs[i];
        r.status == Status::Dead && r.max_attempts > 0 && r.attempts >= r.max_attempts
    })
}

/// `faults_recovered`.
fn faults_recovered(e: &Evidence, per_job: &[&[Event]]) -> Option<CheckResult> {
    let total = hits(e.faults).count() as u64;
    if total == 0 {
        return None;
    }
    let grace = recovery_grace(e.lease);
    let too_late = |f: &FaultEvent| e.stopped_us.is_some_and(|s| f.t_us + grace > s);
    let (mut late, mut bad) = (0u64, Vec::new());
    for (f, job) in hits(e.faults) {
        let events = events_of(per_job, job);
        // Back and judged: a completion, or a failure of its own, accepted after the fault; or
        // it failed on its own at some point (its budget went on its failures too); or the
        // faults spent its whole budget and the queue marked it dead.
        let failed_too = events.iter().any(|x| x.kind == EventKind::FailAccepted);
        let judged = done_at_end(e, events, job) || dead_with_budget_spent(e, job);
        if recovery::recovered_after(f, events).is_some() || failed_too || judged {
            continue;
        }
        if too_late(f) {
            late += 1;
        } else {
            bad.push((f.kind, job));
        }
    }
    let n = bad.len() as u64;
    let mut kinds: Vec<&str> = bad.iter().map(|b| b.0.name()).collect();
    kinds.sort_unstable();
    kinds.dedup();
    let mut jobs: Vec<i64> = bad.iter().map(|b| b.1).collect();
    jobs.sort_unstable();
    jobs.dedup();
    Some(CheckResult {
        name: Check::FaultsRecovered,
        passed: n == 0,
        violations: n,
        detail: format!(
            "{} of {} that hit a job never saw it come back (no completion accepted afterwards, no failure of its own){} ({late} \
             too close to the run's stop to judge)",
            n,
            count(total, "fault"),
            if kinds.is_empty() {
                String::new()
            } else {
                format!(" ({}; {})", kinds.join(", "), count(jobs.len() as u64, "job"))
            }
        ),
        examples: examples(jobs),
    })
}

/// `dead_after_one_fault`.
fn dead_after_one_fault(e: &Evidence, per_job: &[&[Event]]) -> Option<CheckResult> {
    let mut faults_per_job: HashMap<i64, u32> = HashMap::new();
    for (_, job) in hits(e.faults) {
        *faults_per_job.entry(job).or_default() += 1;
    }
    if faults_per_job.is_empty() {
        return None;
    }
    let mut dead: Vec<i64> = faults_per_job
        .iter()
        .filter(|&(_, &n)| n == 1)
        .map(|(&job, _)| job)
        .filter(|&job| {
            let events = events_of(per_job, job);
            let has = |k: EventKind| events.iter().any(|x| x.kind == k);
            // (A queue that deletes its dead jobs shows them by an accepted failure: their own.)
            let is_dead =
                e.final_jobs.binary_search_by_key(&job, |r| r.id).is_ok_and(|i| e.final_jobs[i].status == Status::Dead);
            is_dead && !has(EventKind::FailAccepted)
        })
        .collect();
    dead.sort_unstable();
    let n = dead.len() as u64;
    Some(CheckResult {
        name: Check::DeadAfterOneFault,
        passed: n == 0,
        violations: n,
        detail: format!(
            "{} dead after a single fault and no failure of their own (a fault hit {})",
            count_as(n, "job ended", "jobs ended"),
            count(faults_per_job.len() as u64, "job")
        ),
        examples: examples(dead),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::EventKind::*;
    use crate::model::records::JobRow;
    use crate::verify::tests::{ev, evidence};

    const S: u64 = 1_000_000;

    fn row(id: i64, status: Status) -> JobRow {
        JobRow { id, status, attempts: 1, max_attempts: 5, lease_expired: false }
    }

    fn run(e: &Evidence) -> Vec<CheckResult> {
        let mut events = e.journal.to_vec();
        events.sort_unstable_by_key(Event::order);
        let per_job: Vec<&[Event]> = events.chunk_by(|a, b| a.job == b.job).collect();
        check(e, &per_job)
    }

    fn get<'a>(checks: &'a [CheckResult], name: &str) -> &'a CheckResult {
        checks.iter().find(|c| c.name.name() == name).unwrap_or_else(|| panic!("no {name}: {checks:?}"))
    }

    fn crash(t_us: u64, worker: u32, job: i64) -> FaultEvent {
        FaultEvent { t_us, kind: FaultKind::Crash, worker: Some(worker), job: Some(job) }
    }

    #[test]
    fn a_completion_that_never_lands_is_refused_and_leaves_the_job_abandoned() {
        // The adapter's complete matches nothing: 0 rows, inside the 1 s lease, nobody else around.
        let journal = [ev(0, 1, 1, 1, Claimed), ev(10, 1, 1, 1, Executed), ev(20, 1, 1, 1, Rejected)];
        let jobs = [row(1, Status::Running)];
        let checks = run(&evidence(&journal, &jobs, 1, None));
        let r = get(&checks, "completions_refused_unexplained");
        assert_eq!((r.passed, r.violations, r.examples.as_slice()), (false, 1, &[1][..]), "{}", r.detail);
        assert!(r.detail.starts_with("1 completion and 0 failures refused"), "{}", r.detail);
        let a = get(&checks, "jobs_left_abandoned");
        assert_eq!((a.passed, a.violations), (false, 1));
        assert!(a.detail.contains("1 after a refused completion or failure"), "{}", a.detail);
        assert!(a.detail.contains("leases run out 1.0–1.0 s after the run's end"), "{}", a.detail);
        assert!(get(&checks, "progress").passed, "it was executed");
        assert!(checks.iter().all(|c| c.name.name() != "faults_recovered"), "no fault hit a job");
    }

    #[test]
    fn a_refusal_explained_by_a_claim_an_expiry_a_cancel_or_a_lost_connection_is_not_counted() {
        let refused = |journal: &[Event], faults: &[FaultEvent]| {
            let jobs = [row(1, Status::Done)];
            let mut e = evidence(journal, &jobs, 1, None);
            e.faults = faults;
            get(&run(&e), "completions_refused_unexplained").violations
        };
        let mine = [ev(0, 1, 1, 1, Claimed), ev(10, 1, 1, 1, Executed), ev(20, 1, 1, 1, Rejected)];
        assert_eq!(refused(&mine, &[]), 1);
        // Another claim came back (at 15) after ours was sent and before our refusal's answer.
        let mut raced = mine.to_vec();
        raced.push(ev(15, 1, 2, 2, Claimed));
        assert_eq!(refused(&raced, &[]), 0);
        // Our lease (1 s) had run out before we completed.
        let late = [ev(0, 1, 1, 1, Claimed), ev(10, 1, 1, 1, Executed), ev(2 * S, 1, 1, 1, Rejected)];
        assert_eq!(refused(&late, &[]), 0);
        // The job was cancelled; or our backend was killed and the completion sent again.
        assert_eq!(refused(&mine, &[FaultEvent { t_us: 5, kind: FaultKind::Cancel, worker: None, job: Some(1) }]), 0);
        let kill = |worker| FaultEvent { t_us: 15, kind: FaultKind::KillBackend, worker: Some(worker), job: None };
        assert_eq!(refused(&mine, &[kill(1)]), 0);
        assert_eq!(refused(&mine, &[kill(2)]), 1, "another worker's backend");
        // A failure refused the same way counts too.
        let fail = [ev(0, 1, 1, 1, Claimed), ev(10, 1, 1, 1, Executed), ev(20, 1, 1, 1, FailRejected)];
        assert_eq!(refused(&fail, &[]), 1);
    }

    #[test]
    fn a_job_left_running_counts_only_when_its_holder_let_go_before_the_stop() {
        let journal = [ev(0, 1, 1, 1, Claimed), ev(5 * S, 1, 1, 1, Abandoned), ev(0, 2, 1, 2, Claimed)];
        let mut expired = row(1, Status::Running);
        expired.lease_expired = true;
        let jobs = [expired, row(2, Status::Running), row(3, Status::Running)];
        let mut e = evidence(&journal, &jobs, 3, None);
        e.end_us = 6 * S;
        // Job 1: crashed, lease run out; job 2: still held at the end; job 3: no claim in the journal.
        let a = run(&e).into_iter().find(|c| c.name.name() == "jobs_left_abandoned").unwrap();
        assert_eq!((a.violations, a.examples.as_slice()), (2, &[1, 3][..]), "{}", a.detail);
        assert!(a.detail.contains("1 abandoned: a crash") && a.detail.contains("1 with no claim"), "{}", a.detail);
        assert!(a.detail.contains("1 with a lease already run out"), "{}", a.detail);
        // The run was stopped by the clock at 5 s: job 1 let go because of it; job 3's holder is
        // unknown (a claim in flight at the stop).
        e.stopped_us = Some(5 * S);
        assert!(get(&run(&e), "jobs_left_abandoned").passed);
    }

    #[test]
    fn nothing_executed_at_all_is_no_progress() {
        let jobs = [row(1, Status::Queued), row(2, Status::Queued)];
        let mut e = evidence(&[], &jobs, 2, None);
        e.end_us = 7 * S;
        let p = get(&run(&e), "progress").clone();
        assert_eq!((p.passed, p.violations, p.examples.as_slice()), (false, 1, &[1, 2][..]), "{}", p.detail);
        assert!(p.detail.contains("nothing was executed in 7.0 s while 2 jobs were enqueued"), "{}", p.detail);
        let none = evidence(&[], &[], 0, None);
        assert!(get(&run(&none), "progress").passed);
    }

    #[test]
    fn a_stall_while_work_waited_is_no_progress_and_an_idle_gap_is_fine() {
        // Job 1 done at once; job 2 (preloaded, ready from 0) first claimed at 30 s.
        let journal = [
            ev(0, 1, 1, 1, Claimed),
            ev(10, 1, 1, 1, Executed),
            ev(20, 1, 1, 1, Accepted),
            ev(30 * S, 2, 1, 1, Claimed),
            ev(30 * S + 10, 2, 1, 1, Executed),
            ev(30 * S + 20, 2, 1, 1, Accepted),
        ];
        let jobs = [row(1, Status::Done), row(2, Status::Done)];
        let p = get(&run(&evidence(&journal, &jobs, 2, None)), "progress").clone();
        assert_eq!((p.passed, p.violations, p.examples.as_slice()), (false, 1, &[2][..]), "{}", p.detail);
        assert!(p.detail.contains("longer than 10.0 s") && p.detail.contains("the longest: 30.0 s"), "{}", p.detail);
        // The same gap with job 2 arriving (open model) at 29.9 s: nothing was waiting.
        let arrivals =
            [crate::collect::Arrival { job: 2, class: 1, intended_us: 0, sent_us: 29_900_000, enqueue_us: 10 }];
        let mut e = evidence(&journal, &jobs, 2, None);
        e.arrivals = &arrivals;
        assert!(get(&run(&e), "progress").passed);
        // Long work raises the threshold: 12 s jobs may leave 30 s without an execution.
        let mut long = journal;
        long[1].dur_us = 12_000_000;
        long[1].t_us = 12 * S;
        long[2].t_us = 12 * S + 10;
        assert!(get(&run(&evidence(&long, &jobs, 2, None)), "progress").passed);
    }

    #[test]
    fn unrecovered_faults_and_jobs_dead_after_one_fault() {
        // Job 1: crashed, retried, done. Job 2: crashed once, dead (the reaper gave up at once).
        // Job 3: poison, crashed three times, dead. Job 4: crashed right before the stop.
        let journal = [
            ev(0, 1, 1, 1, Claimed),
            ev(2 * S, 1, 2, 2, Claimed),
            ev(2 * S + 10, 1, 2, 2, Executed),
            ev(2 * S + 20, 1, 2, 2, Accepted),
            ev(0, 2, 1, 2, Claimed),
            ev(0, 3, 1, 3, Claimed),
            ev(2 * S, 3, 2, 3, Claimed),
            ev(4 * S, 3, 3, 3, Claimed),
            ev(9 * S, 4, 1, 1, Claimed),
            // Job 5: crashed, came back, failed for good on its own: recovered from the fault.
            ev(0, 5, 1, 1, Claimed),
            ev(2 * S, 5, 2, 2, Claimed),
            ev(2 * S + 10, 5, 2, 2, Executed),
            ev(2 * S + 20, 5, 2, 2, FailAccepted),
            // Job 6: crashed on each of its 3 attempts, then dead: the faults spent its budget
            // and the queue judged it (job 3 is dead with 4 of its 5 attempts left: counted).
            ev(0, 6, 1, 1, Claimed),
            ev(2 * S, 6, 2, 2, Claimed),
            ev(4 * S, 6, 3, 3, Claimed),
        ];
        let faults = [
            crash(1, 1, 1),
            crash(1, 2, 2),
            crash(1, 3, 3),
            crash(2 * S + 1, 3, 3),
            crash(4 * S + 1, 3, 3),
            crash(9 * S + 1, 1, 4),
            crash(1, 1, 5),
            crash(1, 1, 6),
            crash(2 * S + 1, 2, 6),
            crash(4 * S + 1, 3, 6),
        ];
        let jobs = [
            row(1, Status::Done),
            row(2, Status::Dead),
            row(3, Status::Dead),
            row(4, Status::Queued),
            row(5, Status::Dead),
            JobRow { id: 6, status: Status::Dead, attempts: 3, max_attempts: 3, lease_expired: false },
        ];
        let mut e = evidence(&journal, &jobs, 6, None);
        e.faults = &faults;
        let checks = run(&e);
        let f = get(&checks, "faults_recovered");
        assert_eq!((f.violations, f.examples.as_slice()), (5, &[2, 3, 4][..]), "{}", f.detail);
        let d = get(&checks, "dead_after_one_fault");
        assert_eq!((d.violations, d.examples.as_slice()), (1, &[2][..]), "{}", d.detail);
        // Stopped by the clock at 10 s: job 4's crash came too late to judge (grace 3 s).
        e.stopped_us = Some(10 * S);
        let f = run(&e).into_iter().find(|c| c.name.name() == "faults_recovered").unwrap();
        assert_eq!(f.violations, 4, "{}", f.detail);
        assert!(f.detail.contains("1 too close to the run's stop"), "{}", f.detail);
    }
}
