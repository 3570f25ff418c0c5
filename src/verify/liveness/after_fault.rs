//! `faults_recovered` and `dead_after_one_fault`: what became of the jobs a fault hit (the rules
//! are in the parent module's documentation).

use super::{events_of, recovery_grace};
use crate::collect::{Event, EventKind, FaultEvent, FaultKind};
use crate::model::check::Check;
use crate::model::records::Status;
use crate::model::summary::CheckResult;
use crate::model::words::{count, count_as};
use crate::verify::{Evidence, examples, recovery};
use std::collections::HashMap;

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
pub(super) fn faults_recovered(e: &Evidence, per_job: &[&[Event]]) -> Option<CheckResult> {
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
pub(super) fn dead_after_one_fault(e: &Evidence, per_job: &[&[Event]]) -> Option<CheckResult> {
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
