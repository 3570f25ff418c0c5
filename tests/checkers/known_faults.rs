//! Known answers across restarts, failovers and a queue that stops finishing jobs.

use super::*;

/// The restart scenario: job 1's acknowledged completion is forgotten; job 2's is kept; job 3's
/// COMMIT failed (journaled as abandoned): not acknowledged; job 4's answer was lost and its retry
/// rejected, yet it is done; job 5 was acknowledged after the restart; job 6's enqueue was
/// acknowledged but the job is missing.
pub(crate) fn restart_history() -> History {
    let journal = vec![
        c(1, 1, 1, 1).claimed(0, ms(1)),
        c(1, 1, 1, 1).executed(ms(10)),
        c(1, 1, 1, 1).write(Accepted, ms(20), ms(21)),
        c(2, 1, 2, 1).claimed(ms(30), ms(31)),
        c(2, 1, 2, 1).executed(ms(40)),
        c(2, 1, 2, 1).write(Accepted, ms(50), ms(51)),
        c(3, 2, 1, 1).claimed(ms(60), ms(61)),
        c(3, 2, 1, 1).executed(ms(70)),
        c(3, 2, 1, 1).write(Accepted, ms(80), ms(81)),
        c(3, 2, 1, 1).at(Abandoned, ms(90)),
        c(4, 2, 2, 1).claimed(ms(600), ms(601)),
        c(4, 2, 2, 1).executed(ms(610)),
        c(4, 2, 2, 1).write(Rejected, ms(620), ms(621)),
        c(5, 1, 3, 1).claimed(ms(700), ms(701)),
        c(5, 1, 3, 1).executed(ms(710)),
        c(5, 1, 3, 1).write(Accepted, ms(720), ms(721)),
    ];
    let rows = vec![
        row(1, Status::Queued),
        row(2, Status::Done),
        row(3, Status::Queued),
        row(4, Status::Done),
        row(5, Status::Done),
    ];
    let mut h = History::new(journal, rows, 6);
    h.restarts = vec![ms(500)];
    let arrival = |job| Arrival { job, class: 1, intended_us: 0, sent_us: 0, enqueue_us: 1 };
    h.arrivals = vec![arrival(5), arrival(6)];
    h
}

#[test]
fn a_durability_breach() {
    let h = restart_history();
    let want = Lasting {
        tested: true,
        acknowledged_completions: 3,
        acknowledged_before_restart: 2,
        lost_completions: 1,
        unacknowledged_done: 1,
        acknowledged_enqueues: 2,
        lost_enqueues: 1,
        reexecutions: 0,
        ids_reissued: 0,
        passed: Some(false),
    };
    assert_eq!(reference_durability(&h), want, "reference\n{}", h.show());
    assert_eq!(observed_durability(&h), want, "verify\n{}", h.show());
    // Job 6 vanished: lost as well.
    let numbers = Numbers {
        total: 5,
        distinct_jobs: 5,
        max_per_job: 1,
        accepted: 4,
        rejected: 1,
        lost: 1,
        no_lost_jobs: false,
        // Job 4's retried completion was refused inside its lease, and the history shows no lost
        // connection between its claim (after the restart) and the answer: unexplained.
        refused_unexplained: 1,
        ..CLEAN
    };
    assert_known(&h, numbers);
    // Had the server been back only at 650 ms, job 4's claim at 600 ms was answered while it was
    // still going down, and the refusal of its completion is explained by the cut connection.
    let mut slow = h.clone();
    slow.restarts_up = vec![ms(650)];
    assert_known(&slow, Numbers { refused_unexplained: 0, ..numbers });
    // Without a restart nothing is tested.
    let mut quiet = h.clone();
    quiet.restarts.clear();
    assert_eq!(reference_durability(&quiet), observed_durability(&quiet));
    assert!(!observed_durability(&quiet).tested);
}

#[test]
fn a_failover_that_forgot_a_completion_and_an_enqueue() {
    // The primary dies at 500 ms and the standby, which never had what came after 300 ms, is
    // promoted. Job 1 was completed at 400 ms: claimed again at 600 ms and run again, lost. Job 2
    // was completed at 100 ms, before what the standby lacked, and never handed out again. Job 3
    // was enqueued at 350 ms (acknowledged) and its id given to another enqueue at 700 ms.
    let (w1, w2) = (c(1, 1, 1, 1), c(1, 2, 2, 2));
    let journal = vec![
        w1.claimed(ms(380), ms(381)),
        w1.executed(ms(390)),
        w1.write(Accepted, ms(400), ms(401)),
        w2.claimed(ms(600), ms(601)),
        w2.executed(ms(610)),
        w2.write(Accepted, ms(620), ms(621)),
        c(2, 3, 1, 1).claimed(ms(50), ms(51)),
        c(2, 3, 1, 1).executed(ms(60)),
        c(2, 3, 1, 1).write(Accepted, ms(100), ms(101)),
    ];
    let rows = vec![row(1, Status::Done), row(2, Status::Done), row(3, Status::Queued)];
    let mut h = History::new(journal, rows, 3);
    h.restarts = vec![ms(500)];
    h.restarts_up = vec![ms(550)];
    h.failovers = vec![FailoverRecord { down_us: ms(500), up_us: ms(550), ..Default::default() }];
    let arrival = |job, sent_us| Arrival { job, class: 1, intended_us: 0, sent_us, enqueue_us: 1 };
    h.arrivals = vec![arrival(3, ms(350)), arrival(3, ms(700))];
    let want = Lasting {
        tested: true,
        acknowledged_completions: 2,
        acknowledged_before_restart: 2,
        lost_completions: 1,
        unacknowledged_done: 0,
        acknowledged_enqueues: 2,
        lost_enqueues: 1,
        reexecutions: 1,
        ids_reissued: 1,
        passed: Some(false),
    };
    assert_eq!(reference_durability(&h), want, "reference\n{}", h.show());
    assert_eq!(observed_durability(&h), want, "verify\n{}", h.show());
    // The same history as a plain restart: job 1 is done at the end and job 3 is in the table,
    // so nothing is lost (a restart that keeps its WAL never hands a completed job out again).
    let mut restart = h.clone();
    restart.failovers.clear();
    let kept =
        Lasting { lost_completions: 0, lost_enqueues: 0, reexecutions: 0, ids_reissued: 0, passed: Some(true), ..want };
    assert_eq!(reference_durability(&restart), kept, "reference\n{}", restart.show());
    assert_eq!(observed_durability(&restart), kept, "verify\n{}", restart.show());
}

#[test]
fn a_deleting_queue_keeps_what_it_acknowledged_across_a_restart() {
    let w = c(1, 1, 1, 1);
    let journal = vec![w.claimed(0, ms(1)), w.executed(ms(10)), w.write(Accepted, ms(20), ms(21))];
    let mut h = History::new(journal, vec![], 1);
    h.restarts = vec![ms(500)];
    h.arrivals = vec![Arrival { job: 1, class: 1, intended_us: 0, sent_us: 0, enqueue_us: 1 }];
    assert_known(&h, Numbers { total: 1, distinct_jobs: 1, max_per_job: 1, accepted: 1, ..CLEAN });
    let want = Lasting {
        tested: true,
        acknowledged_completions: 1,
        acknowledged_before_restart: 1,
        lost_completions: 0,
        unacknowledged_done: 0,
        acknowledged_enqueues: 1,
        lost_enqueues: 0,
        reexecutions: 0,
        ids_reissued: 0,
        passed: Some(true),
    };
    assert_eq!(reference_durability(&h), want, "reference\n{}", h.show());
    assert_eq!(observed_durability(&h), want, "verify\n{}", h.show());
}

#[test]
fn a_job_missing_without_a_trace_is_lost_even_beside_a_cancelled_and_completed_one() {
    // Job 1 was cancelled, ran anyway (cancelled_jobs_not_run catches that), was completed and
    // deleted; job 2 vanished without a trace.
    let w = c(1, 1, 1, 1);
    let journal = vec![w.claimed(ms(10), ms(11)), w.executed(ms(20)), w.write(Accepted, ms(30), ms(31))];
    let mut h = History::new(journal, vec![], 2);
    h.faults = vec![cancel(1, ms(5))];
    assert_known(
        &h,
        Numbers { total: 1, distinct_jobs: 1, max_per_job: 1, accepted: 1, lost: 1, no_lost_jobs: false, ..CLEAN },
    );
    // The same subtraction, another way: an enqueue whose answer was lost and that was sent again
    // leaves one more row than `enqueued` (docs/database-loss.md); that extra row (id 3) hides
    // job 2, which vanished.
    let h = History::new(vec![], vec![row(1, Status::Queued), row(3, Status::Queued)], 2);
    // Nothing was executed while jobs were enqueued: no progress either.
    assert_known(&h, Numbers { lost: 1, no_lost_jobs: false, stalls: 1, ..CLEAN });
}

#[test]
fn a_queue_that_stops_finishing_jobs() {
    // Job 1: the completion matches nothing (refused inside the lease, nobody else around) and
    // the job stays running. Job 2: its holder crashed (a fault) and nothing reclaimed it: running
    // with its holder gone, the fault unrecovered, and the job never came back. Job 3: a crash left
    // it dead at once (one fault, no failure of its own). Job 4: queued from the start and never
    // claimed while the run went on to 30 s: no execution after 0.3 s while it waited.
    let (j1, j2, j3) = (c(1, 1, 1, 1), c(2, 2, 1, 1), c(3, 3, 1, 1));
    let journal = vec![
        j1.claimed(0, ms(1)),
        j1.executed(ms(100)),
        j1.write(Rejected, ms(110), ms(111)),
        j2.claimed(0, ms(1)),
        j2.at(Abandoned, ms(50)),
        j3.claimed(0, ms(1)),
        j3.at(Abandoned, ms(50)),
        c(5, 1, 2, 1).claimed(ms(200), ms(201)),
        c(5, 1, 2, 1).executed(ms(300)),
        c(5, 1, 2, 1).write(Accepted, ms(310), ms(311)),
    ];
    let crash = |job| FaultEvent { t_us: ms(50), kind: FaultKind::Crash, worker: Some(job as u32), job: Some(job) };
    let rows = vec![
        row(1, Status::Running),
        row(2, Status::Running),
        row(3, Status::Dead),
        row(4, Status::Queued),
        row(5, Status::Done),
    ];
    let mut h = History::new(journal, rows, 5);
    h.faults = vec![crash(2), crash(3)];
    h.end = ms(30_000);
    let want = Numbers {
        total: 2,
        distinct_jobs: 2,
        max_per_job: 1,
        accepted: 1,
        rejected: 1,
        refused_unexplained: 1,
        left_abandoned: 2,
        stalls: 1,
        unrecovered_faults: Some(2),
        dead_after_one_fault: Some(1),
        ..CLEAN
    };
    assert_known(&h, want);
    let v = verify(&h.evidence());
    assert_eq!(check(&v, "jobs_left_abandoned").examples, [1, 2]);
    assert_eq!(check(&v, "progress").examples, [4]);
    // Stopped by the clock at 1 s: the crashes are within the grace (2 leases + 1 s) of the stop.
    h.stopped = Some(ms(1_000));
    assert_known(&h, Numbers { unrecovered_faults: Some(0), ..want });
}
