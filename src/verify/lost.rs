//! The final table state: lost jobs (neither finished, nor ready, nor held
//! by a live lease), jobs stuck running, dead jobs, and jobs that ran more
//! attempts than their budget.

use super::exactly_once::Executed;
use super::{Evidence, examples};
use crate::model::records::Status;
use crate::model::summary::{CheckResult, Jobs};

pub fn check(e: &Evidence, executed: &Executed) -> (Jobs, CheckResult, CheckResult) {
    let ran = |id: i64| executed.binary_search(&id).is_ok();
    let rows = e.final_jobs;
    let done_unexecuted: Vec<i64> =
        rows.iter().filter(|j| j.status == Status::Done && !ran(j.id)).map(|j| j.id).collect();
    let orphaned: Vec<i64> =
        rows.iter().filter(|j| j.status == Status::Running && j.lease_expired).map(|j| j.id).collect();
    let over: Vec<i64> = rows.iter().filter(|j| j.attempts > j.max_attempts).map(|j| j.id).collect();
    let vanished = e.enqueued.saturating_sub(rows.len() as u64);
    let count = |s: Status| rows.iter().filter(|j| j.status == s).count() as u64;
    let completed = count(Status::Done);
    let jobs = Jobs {
        enqueued: e.enqueued,
        completed,
        unfinished: e.enqueued.saturating_sub(completed),
        lost: done_unexecuted.len() as u64 + orphaned.len() as u64 + vanished,
        stuck_running: count(Status::Running),
        queued: count(Status::Queued),
        dead: count(Status::Dead),
        cancelled: count(Status::Cancelled),
        retried: rows.iter().filter(|j| j.attempts > 1).count() as u64,
        attempts_exceeded: over.len() as u64,
        completed_by_class: Default::default(),
    };
    let lost = CheckResult {
        name: "no_lost_jobs".into(),
        passed: jobs.lost == 0,
        violations: jobs.lost,
        detail: format!(
            "{} done without an execution, {} running with an expired lease and nobody to reclaim them, {} missing from the table",
            done_unexecuted.len(),
            orphaned.len(),
            vanished
        ),
        examples: examples(done_unexecuted.into_iter().chain(orphaned)),
    };
    let budget = CheckResult {
        name: "attempts_within_budget".into(),
        passed: over.is_empty(),
        violations: jobs.attempts_exceeded,
        detail: format!(
            "{} jobs ran more attempts than max_attempts; {} ended dead",
            jobs.attempts_exceeded, jobs.dead
        ),
        examples: examples(over),
    };
    (jobs, lost, budget)
}
