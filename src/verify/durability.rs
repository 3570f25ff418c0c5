//! Durability across a server restart (`postgres_restart`): every completion
//! the server acknowledged is still `done` in the final table, and every job
//! whose INSERT it acknowledged is still there. A queue that deletes what it finishes keeps
//! a completion by keeping the row gone: a job missing from the final table after an
//! acknowledged completion (or failure, or cancel) counts as kept, as `lost` counts it as
//! done; had the restart lost that commit, the row would be back, queued or running.
//!
//! *Acknowledged* means the worker saw the write return: in lease mode the
//! completion statement (it commits on its own), in hold-transaction mode the
//! round's COMMIT (a failed COMMIT is journaled as `Abandoned` for each job of
//! the round, so its completions do not count). A completion whose answer
//! died with the connection is not acknowledged; the worker sends it again on
//! a new connection, and if that finds nothing to do (0 rows: the first one
//! had committed) the job is counted in `unacknowledged_done`, not as a
//! duplicate and not as lost.
//!
//! With `fsync = off` or `synchronous_commit = off` a commit can be
//! acknowledged before it is on disk, so a restart cannot test durability: the
//! summary says so and no check is reported (rather than a pass).

use super::{Evidence, examples};
use crate::collect::{Event, EventKind};
use crate::model::records::Status;
use crate::model::summary::{CheckResult, Durability};
use std::collections::HashMap;

/// (summary numbers, the `durability` check when it was tested).
pub fn check(e: &Evidence, per_job: &[&[Event]]) -> (Durability, Option<CheckResult>) {
    if e.restarts.is_empty() {
        let note = "no server restart in this run".to_string();
        return (Durability { note, ..Default::default() }, None);
    }
    if let Some(why) = &e.durability_untestable {
        let note = format!("not tested: {why} lets the server acknowledge a commit before it is on disk");
        return (Durability { note, ..Default::default() }, None);
    }
    let status: HashMap<i64, Status> = e.final_jobs.iter().map(|j| (j.id, j.status)).collect();
    let mut d = Durability { tested: true, ..Default::default() };
    let mut lost = Vec::new();
    let mut finished_and_gone = Vec::new();
    let first_restart = e.restarts.iter().copied().min().unwrap_or(0);
    for events in per_job {
        let job = events[0].job;
        let row = status.get(&job);
        let done = row == Some(&Status::Done) || row.is_none();
        if row.is_none() && events.iter().any(|x| matches!(x.kind, EventKind::Accepted | EventKind::FailAccepted)) {
            finished_and_gone.push(job);
        }
        if let Some(t_us) = acknowledged(events) {
            d.acknowledged_completions += 1;
            if t_us < first_restart {
                d.acknowledged_before_restart += 1;
            }
            if !done {
                lost.push(job);
            }
        } else if done && ack_lost(events) {
            d.unacknowledged_done += 1;
        }
    }
    d.lost_completions = lost.len() as u64;
    finished_and_gone.sort_unstable();
    let cancelled = |j: &i64| e.faults.iter().any(|f| f.kind == "cancel" && f.job == Some(*j));
    let missing: Vec<i64> = e
        .arrivals
        .iter()
        .map(|a| a.job)
        .filter(|j| !status.contains_key(j) && finished_and_gone.binary_search(j).is_err() && !cancelled(j))
        .collect();
    d.acknowledged_enqueues = e.arrivals.len() as u64;
    d.lost_enqueues = missing.len() as u64;
    d.note = format!(
        "{}: {} acknowledged completions ({} before the first restart), {} of them not done afterwards; \
         {} acknowledged enqueues, {} missing",
        crate::model::words::count(e.restarts.len() as u64, "restart"),
        d.acknowledged_completions,
        d.acknowledged_before_restart,
        d.lost_completions,
        d.acknowledged_enqueues,
        d.lost_enqueues
    );
    let check = CheckResult {
        name: "durability".into(),
        passed: lost.is_empty() && missing.is_empty(),
        violations: d.lost_completions + d.lost_enqueues,
        detail: d.note.clone(),
        examples: examples(lost.into_iter().chain(missing)),
    };
    (d, Some(check))
}

/// When the server acknowledged a completion of this job (the first `Accepted` not
/// followed by an `Abandoned` of the same claim: a COMMIT that failed), if it did.
fn acknowledged(events: &[Event]) -> Option<u64> {
    let undone = |a: &Event| {
        events
            .iter()
            .any(|x| x.kind == EventKind::Abandoned && x.worker == a.worker && x.claim == a.claim && x.t_us >= a.t_us)
    };
    events.iter().find(|a| a.kind == EventKind::Accepted && !undone(a)).map(|a| a.t_us)
}

/// The job's last claim ended in a rejected completion and nobody's was accepted:
/// the completion was sent, its answer lost, and the retry found the job already done.
fn ack_lost(events: &[Event]) -> bool {
    let accepted = events.iter().any(|x| x.kind == EventKind::Accepted);
    !accepted && events.iter().rev().find(|x| x.kind.ends_ownership()).is_some_and(|x| x.kind == EventKind::Rejected)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::Arrival;
    use crate::collect::EventKind::*;
    use crate::model::records::JobRow;
    use crate::verify::tests::ev;

    fn row(id: i64, status: Status) -> JobRow {
        JobRow { id, status, attempts: 1, max_attempts: 5, lease_expired: false }
    }

    fn run(journal: &[Event], jobs: &[JobRow], arrivals: &[Arrival], restarts: u64, off: Option<&str>) -> Durability {
        let at = vec![3; restarts as usize];
        let mut events = journal.to_vec();
        events.sort_unstable_by_key(|ev| (ev.job, ev.t_us, ev.kind));
        let per_job: Vec<&[Event]> = events.chunk_by(|a, b| a.job == b.job).collect();
        let mut e = crate::verify::tests::evidence(journal, jobs, jobs.len() as u64, None);
        e.arrivals = arrivals;
        e.restarts = &at;
        e.durability_untestable = off.map(String::from);
        let (d, check) = check(&e, &per_job);
        assert_eq!(check.is_some(), d.tested);
        if let Some(c) = check {
            assert_eq!(c.passed, c.violations == 0);
        }
        d
    }

    #[test]
    fn an_acknowledged_completion_that_is_not_done_is_lost() {
        let journal =
            [ev(1, 1, 1, 1, Claimed), ev(2, 1, 1, 1, Accepted), ev(3, 2, 1, 1, Claimed), ev(4, 2, 1, 1, Accepted)];
        let d = run(&journal, &[row(1, Status::Done), row(2, Status::Queued)], &[], 1, None);
        assert!(d.tested);
        assert_eq!((d.acknowledged_completions, d.lost_completions), (2, 1));
        assert_eq!(d.acknowledged_before_restart, 1, "the restart was at 3 µs");
    }

    #[test]
    fn a_failed_commit_is_not_an_acknowledgement() {
        // Hold-transaction mode: the COMMIT failed, so the job is back in the queue, rightly.
        let journal = [ev(1, 1, 1, 1, Claimed), ev(2, 1, 1, 1, Accepted), ev(3, 1, 1, 1, Abandoned)];
        let d = run(&journal, &[row(1, Status::Queued)], &[], 1, None);
        assert_eq!((d.acknowledged_completions, d.lost_completions), (0, 0));
    }

    #[test]
    fn a_lost_ack_whose_retry_is_rejected_is_done_once() {
        let journal = [ev(1, 1, 1, 1, Claimed), ev(2, 1, 1, 1, Executed), ev(9, 1, 1, 1, Rejected)];
        let d = run(&journal, &[row(1, Status::Done)], &[], 1, None);
        assert_eq!((d.acknowledged_completions, d.unacknowledged_done, d.lost_completions), (0, 1, 0));
    }

    #[test]
    fn an_acknowledged_enqueue_missing_from_the_table_is_lost() {
        let a = |job| Arrival { job, class: 1, intended_us: 0, sent_us: 0, enqueue_us: 1 };
        let d = run(&[], &[row(1, Status::Queued)], &[a(1), a(2)], 1, None);
        assert_eq!((d.acknowledged_enqueues, d.lost_enqueues), (2, 1));
    }

    #[test]
    fn fsync_off_or_no_restart_is_not_tested() {
        let journal = [ev(1, 1, 1, 1, Claimed), ev(2, 1, 1, 1, Accepted)];
        let d = run(&journal, &[row(1, Status::Queued)], &[], 1, Some("fsync = off"));
        assert!(!d.tested && d.note.contains("fsync = off"), "{}", d.note);
        let d = run(&journal, &[row(1, Status::Queued)], &[], 0, None);
        assert!(!d.tested && d.note.contains("no server restart"));
    }
}
