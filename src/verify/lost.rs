//! The final table state: lost jobs (neither finished, nor ready, nor held
//! by a live lease), jobs stuck running, dead jobs, and jobs that ran more
//! attempts than their budget.
//!
//! A queue that deletes or archives what it finishes leaves no row: a job missing from the
//! table after an accepted completion is done (after an accepted failure dead, after an
//! accepted cancel cancelled); one missing without any of these is lost, as is a job done
//! (in the table or by its completion) that was never executed.

use super::exactly_once::Executed;
use super::{Evidence, examples};
use crate::collect::{Event, EventKind, FaultKind};
use crate::model::check::Check;
use crate::model::records::Status;
use crate::model::summary::{CheckResult, Jobs};

/// Jobs the table no longer holds, by what the journal and the faults say became of them:
/// each job once (an accepted completion before an accepted failure before a cancel).
#[derive(Debug, Default)]
struct Gone {
    done: u64,
    dead: u64,
    cancelled: u64,
    /// Completed and removed, but never executed.
    done_unexecuted: Vec<i64>,
    /// Every job counted above, sorted.
    ids: Vec<i64>,
}

fn gone(e: &Evidence, per_job: &[&[Event]], ran: &impl Fn(i64) -> bool) -> Gone {
    let present = |id: i64| e.final_jobs.binary_search_by_key(&id, |j| j.id).is_ok();
    let mut g = Gone::default();
    for events in per_job {
        let id = events[0].job;
        if present(id) {
            continue;
        }
        if events.iter().any(|ev| ev.kind == EventKind::Accepted) {
            g.done += 1;
            g.ids.push(id);
            if !ran(id) {
                g.done_unexecuted.push(id);
            }
        } else if events.iter().any(|ev| ev.kind == EventKind::FailAccepted) {
            g.dead += 1;
            g.ids.push(id);
        }
    }
    g.ids.sort_unstable();
    let mut cancelled: Vec<i64> = e
        .faults
        .iter()
        .filter(|f| f.kind == FaultKind::Cancel)
        .filter_map(|f| f.job)
        .filter(|id| !present(*id) && g.ids.binary_search(id).is_err())
        .collect();
    cancelled.sort_unstable();
    cancelled.dedup();
    g.cancelled = cancelled.len() as u64;
    g.ids.extend(cancelled);
    g.ids.sort_unstable();
    g
}

/// Enqueued jobs that neither the table nor the journal accounts for. Counted one by one over
/// the ids the run knows it enqueued (the preload's `1..=n`, each arrival's id), so a row the
/// run did not enqueue (an insert sent again after its answer was lost) hides nothing; and by
/// subtraction (`enqueued − jobs accounted for`), which also covers ids the harness never saw
/// (a queue's uuid for a preloaded job that vanished unclaimed). The larger of the two; the
/// ids found one by one are the examples.
fn vanished(e: &Evidence, gone: &Gone) -> (u64, Vec<i64>) {
    let accounted =
        |id: i64| e.final_jobs.binary_search_by_key(&id, |j| j.id).is_ok() || gone.ids.binary_search(&id).is_ok();
    let preloaded = e.enqueued.saturating_sub(e.arrivals.len() as u64) as i64;
    let mut ids: Vec<i64> =
        (1..=preloaded).chain(e.arrivals.iter().map(|a| a.job)).filter(|id| !accounted(*id)).collect();
    ids.sort_unstable();
    ids.dedup();
    let by_count = e.enqueued.saturating_sub(e.final_jobs.len() as u64 + gone.ids.len() as u64);
    ((ids.len() as u64).max(by_count), ids)
}

pub(super) fn check(e: &Evidence, per_job: &[&[Event]], executed: &Executed) -> (Jobs, CheckResult, CheckResult) {
    let ran = |id: i64| executed.binary_search(&id).is_ok();
    let rows = e.final_jobs;
    let gone = gone(e, per_job, &ran);
    let mut done_unexecuted: Vec<i64> =
        rows.iter().filter(|j| j.status == Status::Done && !ran(j.id)).map(|j| j.id).collect();
    done_unexecuted.extend(&gone.done_unexecuted);
    let orphaned: Vec<i64> =
        rows.iter().filter(|j| j.status == Status::Running && j.lease_expired).map(|j| j.id).collect();
    let over: Vec<i64> = rows.iter().filter(|j| j.attempts > j.max_attempts).map(|j| j.id).collect();
    let (vanished, vanished_ids) = vanished(e, &gone);
    let count = |s: Status| rows.iter().filter(|j| j.status == s).count() as u64;
    let completed = count(Status::Done) + gone.done;
    let jobs = Jobs {
        enqueued: e.enqueued,
        completed,
        unfinished: e.enqueued.saturating_sub(completed),
        lost: done_unexecuted.len() as u64 + orphaned.len() as u64 + vanished,
        stuck_running: count(Status::Running),
        queued: count(Status::Queued),
        dead: count(Status::Dead) + gone.dead,
        cancelled: count(Status::Cancelled) + gone.cancelled,
        retried: rows.iter().filter(|j| j.attempts > 1).count() as u64,
        attempts_exceeded: over.len() as u64,
        completed_by_class: Default::default(),
        deduplicated: 0,
    };
    let lost = CheckResult {
        name: Check::NoLostJobs,
        passed: jobs.lost == 0,
        violations: jobs.lost,
        detail: format!(
            "{} done without an execution, {} running with an expired lease and nobody to reclaim them, {} missing from the table",
            done_unexecuted.len(),
            orphaned.len(),
            vanished
        ),
        examples: examples(done_unexecuted.into_iter().chain(orphaned).chain(vanished_ids)),
    };
    let budget = CheckResult {
        name: Check::AttemptsWithinBudget,
        passed: over.is_empty(),
        violations: jobs.attempts_exceeded,
        detail: format!(
            "{} more attempts than max_attempts; {} dead",
            crate::model::words::count_as(jobs.attempts_exceeded, "job ran", "jobs ran"),
            crate::model::words::count_as(jobs.dead, "job ended", "jobs ended")
        ),
        examples: examples(over),
    };
    (jobs, lost, budget)
}
