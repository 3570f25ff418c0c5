//! Durability across a server restart (`postgres_restart`) or a failover (`failover`): every completion
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
//! A failover (`failover`: the primary killed, the standby promoted) can forget what the old
//! primary acknowledged and the standby never received, and the new primary then goes on
//! from there: a job whose completion was forgotten is handed out again and usually ends
//! `done` after all, so "not done at the end" does not see it. Across a failover a completion
//! acknowledged before it is also lost when a claim of the job sent after it came back, and
//! the executions after the failover are the re-executions the loss caused. An enqueue is also
//! lost when its id came back from a later INSERT after the failover: the id sequence went back
//! with the lost WAL and the new primary gave the id to another job.
//!
//! With `fsync = off` or `synchronous_commit = off` a commit can be
//! acknowledged before it is on disk, so a restart cannot test durability: the
//! summary says so and no check is reported (rather than a pass).

use super::{Evidence, examples};
use crate::collect::{Event, EventKind, FaultKind};
use crate::model::check::Check;
use crate::model::records::Status;
use crate::model::summary::{CheckResult, Durability};
use std::collections::HashMap;

/// (summary numbers, the `durability` check when it was tested).
pub(super) fn check(e: &Evidence, per_job: &[&[Event]]) -> (Durability, Option<CheckResult>) {
    if e.restarts.is_empty() {
        let note = "no server restart or failover in this run".to_string();
        return (Durability { note, ..Default::default() }, None);
    }
    if let Some(why) = &e.durability_untestable {
        let note = format!("not tested: {why} lets the server acknowledge a commit before it is on disk");
        return (Durability { note, ..Default::default() }, None);
    }
    let status: HashMap<i64, Status> = e.final_jobs.iter().map(|j| (j.id, j.status)).collect();
    let mut d = Durability { tested: true, ..failover_figures(e) };
    let (lost, finished_and_gone) = completions(e, per_job, &status, &mut d);
    let cancelled = |j: &i64| e.faults.iter().any(|f| f.kind == FaultKind::Cancel && f.job == Some(*j));
    let mut missing: Vec<i64> = e
        .arrivals
        .iter()
        .map(|a| a.job)
        .filter(|j| !status.contains_key(j) && finished_and_gone.binary_search(j).is_err() && !cancelled(j))
        .collect();
    let reissued = reissued_ids(e);
    d.ids_reissued = reissued.len() as u64;
    missing.extend(reissued);
    d.acknowledged_enqueues = e.arrivals.len() as u64;
    d.lost_enqueues = missing.len() as u64;
    d.note = note(e, &d);
    let check = CheckResult {
        name: Check::Durability,
        passed: lost.is_empty() && missing.is_empty(),
        violations: d.lost_completions + d.lost_enqueues,
        detail: d.note.clone(),
        examples: examples(lost.into_iter().chain(missing)),
    };
    (d, Some(check))
}

/// The failovers' figures: how the standby replicated, the WAL it lacked.
fn failover_figures(e: &Evidence) -> Durability {
    Durability {
        failovers: e.failovers.len() as u64,
        replication: match e.failovers.first() {
            Some(f) if f.observed => "unknown".to_string(),
            Some(f) => f.replication.name().to_string(),
            None => String::new(),
        },
        lag_bytes_at_failure: e.failovers.iter().map(|f| f.lag_bytes).sum(),
        wal_lost_bytes: e.failovers.iter().map(|f| f.wal_lost_bytes).sum(),
        ..Default::default()
    }
}

/// Counts acknowledged completions and those lost: the job is not done at the end, or (across a
/// failover) it was claimed again after the failover although its completion was acknowledged
/// before it; and the executions that loss caused. Returns the lost jobs, and the jobs finished
/// and gone from the table (a queue that deletes what it finishes), sorted.
fn completions(
    e: &Evidence,
    per_job: &[&[Event]],
    status: &HashMap<i64, Status>,
    d: &mut Durability,
) -> (Vec<i64>, Vec<i64>) {
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
            let forgotten = forgotten_by_failover(e, events, t_us);
            if !done || forgotten.is_some() {
                lost.push(job);
            }
            if let Some(down_us) = forgotten {
                d.reexecutions +=
                    events.iter().filter(|x| x.kind == EventKind::Executed && x.t_us > down_us).count() as u64;
            }
        } else if done && ack_lost(events) {
            d.unacknowledged_done += 1;
        }
    }
    d.lost_completions = lost.len() as u64;
    finished_and_gone.sort_unstable();
    (lost, finished_and_gone)
}

/// The failover (its kill time) that forgot this job's completion, acknowledged at `ack_us`:
/// one after the acknowledgement, after which a claim of the job was sent. A server that kept
/// the completion would never have handed the job out again.
fn forgotten_by_failover(e: &Evidence, events: &[Event], ack_us: u64) -> Option<u64> {
    e.failovers.iter().map(|f| f.down_us).filter(|&down| down > ack_us).find(|&down| {
        events.iter().any(|x| x.kind == EventKind::Claimed && x.t_us.saturating_sub(u64::from(x.dur_us)) >= down)
    })
}

/// Acknowledged enqueues a failover forgot whose id the new primary then gave to another job:
/// the id sequence went back with the lost WAL, so an INSERT after the failover returned an id
/// acknowledged before it. One entry (the id) per enqueue forgotten this way.
fn reissued_ids(e: &Evidence) -> Vec<i64> {
    let mut out = Vec::new();
    for down in e.failovers.iter().map(|f| f.down_us) {
        let after: std::collections::HashSet<i64> =
            e.arrivals.iter().filter(|a| a.sent_us >= down).map(|a| a.job).collect();
        let acked_before = |a: &&crate::collect::Arrival| a.sent_us + u64::from(a.enqueue_us) < down;
        out.extend(e.arrivals.iter().filter(acked_before).filter(|a| after.contains(&a.job)).map(|a| a.job));
    }
    out
}

fn note(e: &Evidence, d: &Durability) -> String {
    let failed_over = match d.failovers {
        0 => String::new(),
        // URL mode: seen from the server's identity; how it replicated and what WAL it lacked are unknown.
        n if e.failovers.iter().all(|f| f.observed) => format!(
            " ({}, seen from the server's identity: replication and WAL lag unknown; {} re-executions of lost \
             completions)",
            crate::model::words::count(n, "failover"),
            d.reexecutions
        ),
        n => format!(
            " ({}, {} replication: the standby {} bytes of WAL behind when the primary died, {} never received; \
             {} re-executions of lost completions)",
            crate::model::words::count(n, "failover"),
            d.replication,
            d.lag_bytes_at_failure,
            d.wal_lost_bytes,
            d.reexecutions
        ),
    };
    format!(
        "{}{failed_over}: {} acknowledged completions ({} before the first restart), {} of them lost; \
         {} acknowledged enqueues, {} lost ({} of them by an id the new primary gave to another job)",
        crate::model::words::count(e.restarts.len() as u64, "restart"),
        d.acknowledged_completions,
        d.acknowledged_before_restart,
        d.lost_completions,
        d.acknowledged_enqueues,
        d.lost_enqueues,
        d.ids_reissued
    )
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

    #[test]
    fn a_completion_claimed_again_after_a_failover_was_lost_and_its_reexecutions_counted() {
        use crate::model::records::{FailoverRecord, Replication};
        // Job 1 completed (acknowledged at 2) before the failover at 5; claimed again at 7 and
        // run again: lost, 1 re-execution. Job 2 completed at 8, after the failover: kept.
        // Job 3 completed at 2 and never claimed again: kept.
        let journal = [
            ev(1, 1, 1, 1, Claimed),
            ev(2, 1, 1, 1, Accepted),
            ev(7, 1, 2, 2, Claimed),
            ev(8, 1, 2, 2, Executed),
            ev(9, 1, 2, 2, Accepted),
            ev(6, 2, 1, 1, Claimed),
            ev(8, 2, 1, 1, Accepted),
            ev(1, 3, 1, 3, Claimed),
            ev(2, 3, 1, 3, Accepted),
        ];
        let mut events = journal.to_vec();
        events.sort_unstable_by_key(|ev| (ev.job, ev.t_us, ev.kind));
        let per_job: Vec<&[Event]> = events.chunk_by(|a, b| a.job == b.job).collect();
        let jobs = [row(1, Status::Done), row(2, Status::Done), row(3, Status::Done)];
        let mut e = crate::verify::tests::evidence(&journal, &jobs, 3, None);
        let failover = [FailoverRecord {
            down_us: 5,
            up_us: 6,
            replication: Replication::Async,
            hold_us: 1,
            lag_bytes: 900,
            wal_lost_bytes: 800,
            observed: false,
        }];
        let (restarts, up) = ([5], [6]);
        e.restarts = &restarts;
        e.restarts_up = &up;
        e.failovers = &failover;
        let (d, check) = check(&e, &per_job);
        let check = check.unwrap();
        assert_eq!((d.acknowledged_completions, d.lost_completions, d.reexecutions), (3, 1, 1));
        assert_eq!(
            (d.failovers, d.replication.as_str(), d.lag_bytes_at_failure, d.wal_lost_bytes),
            (1, "async", 900, 800)
        );
        assert!(!check.passed);
        assert_eq!((check.violations, check.examples.as_slice()), (1, &[1][..]));
        // The same journal without the failover (a restart at 5): a claim after an acknowledged
        // completion is no loss of the restart's (the job is done at the end).
        e.failovers = &[];
        let (d, check) = check_again(&e, &per_job);
        assert_eq!((d.lost_completions, d.reexecutions), (0, 0));
        assert!(check.unwrap().passed);
    }

    #[test]
    fn an_id_enqueued_again_after_a_failover_was_a_lost_enqueue() {
        use crate::model::records::FailoverRecord;
        let a = |job, sent_us| Arrival { job, class: 1, intended_us: 0, sent_us, enqueue_us: 1 };
        // Job 7 enqueued at 1 (acknowledged at 2) and again at 20, after the failover at 10:
        // the first was forgotten and its id reissued. Job 8 enqueued at 1 and kept.
        let arrivals = [a(7, 1), a(8, 1), a(7, 20)];
        let jobs = [row(7, Status::Queued), row(8, Status::Queued)];
        let mut e = crate::verify::tests::evidence(&[], &jobs, 3, None);
        let failover = [FailoverRecord { down_us: 10, up_us: 12, ..Default::default() }];
        e.arrivals = &arrivals;
        e.restarts = &[10];
        e.failovers = &failover;
        let (d, c) = check_again(&e, &[]);
        assert_eq!((d.acknowledged_enqueues, d.lost_enqueues, d.ids_reissued), (3, 1, 1));
        assert!(!c.unwrap().passed);
        e.failovers = &[];
        let (d, c) = check_again(&e, &[]);
        assert_eq!((d.lost_enqueues, d.ids_reissued), (0, 0), "a restart alone does not judge reissued ids");
        assert!(c.unwrap().passed);
    }

    fn check_again(e: &Evidence, per_job: &[&[Event]]) -> (Durability, Option<CheckResult>) {
        check(e, per_job)
    }
}
