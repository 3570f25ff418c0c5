use super::*;
use crate::collect::EventKind::*;
use crate::collect::FaultEvent;
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
    let arrivals = [crate::collect::Arrival { job: 2, class: 1, intended_us: 0, sent_us: 29_900_000, enqueue_us: 10 }];
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
