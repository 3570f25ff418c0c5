//! Known answers: one hand-built history per cause, asserted against both checkers.

use super::*;

/// Both the reference and `verify` give exactly `want`.
pub(crate) fn assert_known(h: &History, want: Numbers) {
    let reference = reference(h);
    assert!(
        reference == want,
        "the reference checker disagrees with the known answer (reference vs known):\n{}{}",
        reference.diff(&want),
        h.show()
    );
    let got = observed(h);
    assert!(got == want, "verify disagrees with the known answer (verify vs known):\n{}{}", got.diff(&want), h.show());
}

#[test]
fn a_racing_duplicate() {
    // w2's claim is sent at 100 ms, inside w1's lease (w1 completes at 300 ms): both execute.
    let (w1, w2) = (c(1, 1, 1, 1), c(1, 2, 1, 2));
    let journal = vec![
        w1.claimed(0, ms(2)),
        w2.claimed(ms(100), ms(102)),
        w1.executed(ms(200)),
        w2.executed(ms(250)),
        w1.write(Accepted, ms(300), ms(302)),
        w2.write(Rejected, ms(400), ms(401)),
    ];
    let h = History::new(journal, vec![row(1, Status::Done)], 1);
    assert_known(
        &h,
        Numbers {
            total: 2,
            duplicate: 1,
            duplicate_race: 1,
            distinct_jobs: 1,
            jobs_duplicated: 1,
            max_per_job: 2,
            accepted: 1,
            rejected: 1,
            // w1's completion was sent after w2's claim (attempt 2) came back.
            stale_accepted: 1,
            overlapping_jobs: 1,
            claims_during_lease: 1,
            exactly_once: false,
            stale_completions_accepted: false,
            ownership_overlap: false,
            ..CLEAN
        },
    );
}

#[test]
fn a_duplicate_after_the_lease_expired() {
    // w1 pauses after its side effect; its lease ends at 1.001 s; w2 claims at 1.2 s and finishes;
    // w1 wakes at 2 s and its completion is rejected.
    let (w1, w2) = (c(1, 1, 1, 1), c(1, 2, 1, 2));
    let journal = vec![
        w1.claimed(0, ms(1)),
        w1.executed(ms(100)),
        w2.claimed(ms(1200), ms(1201)),
        w2.executed(ms(1300)),
        w2.write(Accepted, ms(1400), ms(1401)),
        w1.write(Rejected, ms(2000), ms(2001)),
    ];
    let h = History::new(journal, vec![row(1, Status::Done)], 1);
    assert_known(
        &h,
        Numbers {
            total: 2,
            duplicate: 1,
            duplicate_lease_expired: 1,
            distinct_jobs: 1,
            jobs_duplicated: 1,
            max_per_job: 2,
            accepted: 1,
            rejected: 1,
            stale_rejected: 1,
            // w1 believed it owned the job until 2 s.
            overlapping_jobs: 1,
            exactly_once: false,
            ownership_overlap: false,
            ..CLEAN
        },
    );
}

#[test]
fn a_retry_after_an_accepted_failure_is_no_race_even_while_the_failure_is_in_flight_but_a_claim_before_it_is() {
    // Job 1: w1's failure (sent 20 ms, returned 25 ms) gives the job back; w2 claims at 30 ms.
    // Job 2: the same, but w2's claim is sent at 22 ms, while the failure was in flight: it may
    // follow the failure's commit (the answer reached w1 later), so no race.
    // Job 3: w2's claim is sent at 15 ms and returns at 16 ms, before w1 even sent its failure.
    let (a1, a2) = (c(1, 1, 1, 1), c(1, 2, 1, 2));
    let (b1, b2) = (c(2, 1, 2, 1), c(2, 2, 2, 2));
    let (d1, d2) = (c(3, 1, 3, 1), c(3, 2, 3, 2));
    let journal = vec![
        a1.claimed(0, ms(1)),
        a1.executed(ms(10)),
        a1.write(FailAccepted, ms(20), ms(25)),
        a2.claimed(ms(30), ms(31)),
        a2.executed(ms(40)),
        a2.write(Accepted, ms(50), ms(51)),
        b1.claimed(0, ms(1)),
        b1.executed(ms(10)),
        b1.write(FailAccepted, ms(20), ms(25)),
        b2.claimed(ms(22), ms(23)),
        b2.executed(ms(40)),
        b2.write(Accepted, ms(50), ms(51)),
        d1.claimed(0, ms(1)),
        d1.executed(ms(10)),
        d1.write(FailAccepted, ms(20), ms(25)),
        d2.claimed(ms(15), ms(16)),
        d2.executed(ms(40)),
        d2.write(Accepted, ms(50), ms(51)),
    ];
    let h = History::new(journal, vec![row(1, Status::Done), row(2, Status::Done), row(3, Status::Done)], 3);
    assert_known(
        &h,
        Numbers {
            total: 6,
            // Jobs 1 and 2 ran again as retries (no duplicates); job 3's claim raced.
            duplicate: 1,
            duplicate_race: 1,
            retries: 2,
            distinct_jobs: 3,
            jobs_duplicated: 1,
            max_per_job: 2,
            accepted: 3,
            fails_accepted: 3,
            // d1's failure (20 ms) came after d2 had claimed the job again: a stale write landed.
            fail_stale_accepted: 1,
            // d2 was sent (15 ms) after d1 came back and before d1 gave the job back (20 ms).
            claims_during_lease: 1,
            // d2 believed it held the job from 16 ms while d1 did until its failure at 20 ms;
            // b2's belief starts at 23 ms, after b1 let go.
            overlapping_jobs: 1,
            exactly_once: false,
            stale_completions_accepted: false,
            ownership_overlap: false,
            ..CLEAN
        },
    );
}

#[test]
fn stale_writes_accepted_and_rejected() {
    // In each job w1's lease ran out (1.001 s) and w2 claimed the job after it; then w1 wrote.
    // Job 1: w1's completion lands (no fence) and w2's is rejected (the job is done).
    // Job 2: w1's heartbeat and failure land. Job 3: w1's failure is rejected.
    let (a1, a2) = (c(1, 1, 1, 1), c(1, 2, 1, 2));
    let (b1, b2) = (c(2, 1, 2, 1), c(2, 2, 2, 2));
    let (d1, d2) = (c(3, 1, 3, 1), c(3, 2, 3, 2));
    let journal = vec![
        a1.claimed(0, ms(1)),
        a1.executed(ms(1100)),
        a2.claimed(ms(1200), ms(1201)),
        a2.executed(ms(1300)),
        a1.write(Accepted, ms(1500), ms(1501)),
        a2.write(Rejected, ms(1600), ms(1601)),
        b1.claimed(0, ms(1)),
        b2.claimed(ms(1100), ms(1101)),
        b1.at(HeartbeatOk, ms(1150)),
        b1.write(FailAccepted, ms(1200), ms(1200)),
        b2.executed(ms(1300)),
        b2.write(Accepted, ms(1400), ms(1401)),
        d1.claimed(0, ms(1)),
        d2.claimed(ms(1100), ms(1101)),
        d1.write(FailRejected, ms(1150), ms(1151)),
        d2.executed(ms(1200)),
        d2.write(Accepted, ms(1300), ms(1301)),
    ];
    let rows = vec![row(1, Status::Done), row(2, Status::Done), row(3, Status::Done)];
    let h = History::new(journal, rows, 3);
    assert_known(
        &h,
        Numbers {
            total: 4,
            duplicate: 1,
            duplicate_lease_expired: 1,
            distinct_jobs: 3,
            jobs_duplicated: 1,
            max_per_job: 2,
            accepted: 3,
            rejected: 1,
            stale_accepted: 1,
            fails_accepted: 1,
            fail_stale_accepted: 1,
            fails_rejected: 1,
            fail_stale_rejected: 1,
            heartbeats_accepted: 1,
            heartbeat_stale_accepted: 1,
            overlapping_jobs: 3,
            // Job 2: w1's stale heartbeat (1.15 s) stretched its lease past w2's claim (1.1 s).
            claims_during_lease: 1,
            exactly_once: false,
            stale_completions_accepted: false,
            ownership_overlap: false,
            ..CLEAN
        },
    );
}

#[test]
fn a_zero_work_race_has_no_ownership_overlap() {
    // w2's claim is sent (10 ms) while w1's is in flight (5 → 50 ms); w1 lets go at 52 ms, before
    // w2's claim comes back (90 ms): no two beliefs overlap, yet the job was handed out twice.
    let (w1, w2) = (c(1, 1, 1, 1), c(1, 2, 1, 2));
    let journal = vec![
        w1.claimed(ms(5), ms(50)),
        w1.executed(ms(51)),
        w1.write(Accepted, ms(52), ms(53)),
        w2.claimed(ms(10), ms(90)),
        w2.executed(ms(91)),
        w2.write(Accepted, ms(92), ms(93)),
    ];
    let h = History::new(journal, vec![row(1, Status::Done)], 1);
    assert_known(
        &h,
        Numbers {
            total: 2,
            duplicate: 1,
            duplicate_race: 1,
            distinct_jobs: 1,
            jobs_duplicated: 1,
            max_per_job: 2,
            accepted: 2,
            // w2's claim was in flight over w1's lease (sent at 10 ms, before w1's hand-back at
            // 53 ms; back at 90 ms, after w1's claim): the count that says so.
            claims_during_lease: 1,
            exactly_once: false,
            ..CLEAN
        },
    );
}

#[test]
fn the_lease_end_tolerance_and_heartbeats() {
    // w1 never lets go of jobs 1, 2 and 4. Job 1: w2 is sent 30 ms before w1's computed lease end
    // (1.01 s): within the clock tolerance, after the lease. Job 2: 70 ms before: a race.
    // Job 3: w1's completion was sent at 20 ms; w2 was sent at 19 ms: a race (no tolerance at a
    // hand-back). Job 4: w1's heartbeat at 0.8 s moved its lease end to 1.8 s; w2 sent at 1.5 s races.
    let mut journal = Vec::new();
    for (job, sent) in [(1, 980), (2, 940)] {
        let (w1, w2) = (c(job, 1, job as u32, 1), c(job, 2, job as u32, 2));
        journal.extend([
            w1.claimed(0, ms(10)),
            w1.executed(ms(100)),
            w2.claimed(ms(sent), ms(sent + 1)),
            w2.executed(ms(sent + 5)),
            w2.write(Accepted, ms(sent + 10), ms(sent + 11)),
        ]);
    }
    let (w1, w2) = (c(3, 1, 3, 1), c(3, 2, 3, 2));
    journal.extend([
        w1.claimed(0, ms(1)),
        w1.executed(ms(10)),
        w1.write(Accepted, ms(20), ms(40)),
        w2.claimed(ms(19), ms(41)),
        w2.executed(ms(50)),
        w2.write(Accepted, ms(60), ms(61)),
    ]);
    let (w1, w2) = (c(4, 1, 4, 1), c(4, 2, 4, 2));
    journal.extend([
        w1.claimed(0, ms(1)),
        w1.at(HeartbeatOk, ms(800)),
        w1.executed(ms(900)),
        w2.claimed(ms(1500), ms(1501)),
        w2.executed(ms(1600)),
        w2.write(Accepted, ms(1700), ms(1701)),
    ]);
    let rows = (1..=4).map(|id| row(id, Status::Done)).collect();
    let h = History::new(journal, rows, 4);
    assert_known(
        &h,
        Numbers {
            total: 8,
            duplicate: 4,
            duplicate_race: 3,
            duplicate_lease_expired: 1,
            distinct_jobs: 4,
            jobs_duplicated: 4,
            max_per_job: 2,
            accepted: 5,
            heartbeats_accepted: 1,
            overlapping_jobs: 3,
            claims_during_lease: 4,
            exactly_once: false,
            ownership_overlap: false,
            ..CLEAN
        },
    );
}

#[test]
fn every_cause_of_a_lost_job() {
    let journal = vec![
        // 1: done without an execution.
        c(1, 1, 1, 1).claimed(0, ms(1)),
        c(1, 1, 1, 1).write(Accepted, ms(10), ms(11)),
        // 2: running with an expired lease (the worker crashed after its side effect).
        c(2, 1, 2, 1).claimed(ms(20), ms(21)),
        c(2, 1, 2, 1).executed(ms(30)),
        // 3: running, lease still valid: not lost.
        c(3, 2, 1, 1).claimed(ms(20), ms(21)),
        c(3, 2, 1, 1).executed(ms(30)),
        // 4: missing from the table, its completion rejected: lost.
        c(4, 2, 2, 1).claimed(ms(40), ms(41)),
        c(4, 2, 2, 1).executed(ms(50)),
        c(4, 2, 2, 1).write(Rejected, ms(60), ms(61)),
        // 5: deleted after its accepted completion: done.
        c(5, 3, 1, 1).claimed(ms(40), ms(41)),
        c(5, 3, 1, 1).executed(ms(50)),
        c(5, 3, 1, 1).write(Accepted, ms(60), ms(61)),
        // 6: deleted after an accepted failure: dead.
        c(6, 3, 2, 1).claimed(ms(70), ms(71)),
        c(6, 3, 2, 1).executed(ms(80)),
        c(6, 3, 2, 1).write(FailAccepted, ms(90), ms(91)),
        // 7: cancelled (a fault) and deleted: no events. 8: deleted after an accepted completion
        // but never executed: lost. 9: still queued.
        c(8, 1, 3, 1).claimed(ms(70), ms(71)),
        c(8, 1, 3, 1).write(Accepted, ms(80), ms(81)),
    ];
    let expired = JobRow { lease_expired: true, ..row(2, Status::Running) };
    let rows = vec![row(1, Status::Done), expired, row(3, Status::Running), row(9, Status::Queued)];
    let mut h = History::new(journal, rows, 9);
    h.faults = vec![cancel(7, ms(5))];
    assert_known(
        &h,
        Numbers {
            total: 5,
            distinct_jobs: 5,
            max_per_job: 1,
            accepted: 3,
            rejected: 1,
            fails_accepted: 1,
            lost: 4,
            no_lost_jobs: false,
            // Job 4's completion was refused inside its lease with nobody else around.
            refused_unexplained: 1,
            ..CLEAN
        },
    );
}

#[test]
fn a_clean_history() {
    // Job 1 done; job 2's first holder crashed before its side effect and let go, the second
    // claimed it after the lease and finished it (heartbeating once); job 3 done; job 4 queued.
    let j2 = (c(2, 2, 1, 1), c(2, 3, 1, 2));
    let journal = vec![
        c(1, 1, 1, 1).claimed(0, ms(2)),
        c(1, 1, 1, 1).executed(ms(10)),
        c(1, 1, 1, 1).write(Accepted, ms(11), ms(13)),
        j2.0.claimed(ms(5), ms(6)),
        j2.0.at(Abandoned, ms(7)),
        j2.1.claimed(ms(1100), ms(1102)),
        j2.1.at(HeartbeatOk, ms(1400)),
        j2.1.executed(ms(1700)),
        j2.1.write(Accepted, ms(1701), ms(1703)),
        c(3, 1, 2, 1).claimed(ms(20), ms(21)),
        c(3, 1, 2, 1).executed(ms(30)),
        c(3, 1, 2, 1).write(Accepted, ms(31), ms(32)),
    ];
    let rows = vec![row(1, Status::Done), row(2, Status::Done), row(3, Status::Done), row(4, Status::Queued)];
    let h = History::new(journal, rows, 4);
    assert_known(
        &h,
        Numbers { total: 3, distinct_jobs: 3, max_per_job: 1, accepted: 3, heartbeats_accepted: 1, ..CLEAN },
    );
    let v = verify(&h.evidence());
    let failed: Vec<&str> = v.checks.iter().filter(|c| !c.passed).map(|c| c.name.name()).collect();
    assert!(failed.is_empty(), "{failed:?}");
}

#[test]
fn claims_recorded_out_of_their_database_order_follow_the_attempt_number() {
    // w2's claim (attempt 2) came back before w1's (attempt 1, a slow round trip): w2's completion
    // is not stale, w1's is. Without attempt numbers (-1) the order is by time and it flips.
    let journal = |a1: i32, a2: i32| {
        let (w1, w2) = (c(1, 1, 1, a1), c(1, 2, 1, a2));
        vec![
            w1.claimed(0, ms(30)),
            w2.claimed(ms(10), ms(20)),
            w2.executed(ms(40)),
            w2.write(Accepted, ms(50), ms(51)),
            w1.write(Rejected, ms(60), ms(61)),
        ]
    };
    let want = Numbers {
        total: 1,
        distinct_jobs: 1,
        max_per_job: 1,
        accepted: 1,
        rejected: 1,
        stale_rejected: 1,
        overlapping_jobs: 1,
        // w1's claim was in flight over w2's lease: sent (0 ms) before w2's hand-back (51 ms),
        // back (30 ms) after w2's claim (20 ms).
        claims_during_lease: 1,
        ownership_overlap: false,
        ..CLEAN
    };
    assert_known(&History::new(journal(1, 2), vec![row(1, Status::Done)], 1), want);
    // By time, w1's claim (back at 30 ms) is the newer one: w2's completion (50 ms) is the stale one.
    let by_time = Numbers { stale_accepted: 1, stale_rejected: 0, stale_completions_accepted: false, ..want };
    assert_known(&History::new(journal(-1, -1), vec![row(1, Status::Done)], 1), by_time);
}
