//! Checkers: pure functions over the evidence (journal, final table state,
//! effects count, injected faults). No network, no clock. Each returns
//! numbers for the summary and a named `CheckResult` with example job ids.

mod after_completion;
pub(crate) mod claims;
mod durability;
mod errors;
mod exactly_once;
mod exclusion;
mod fifo;
mod horizon;
mod idempotent;
mod ledger;
mod liveness;
mod lost;
mod ownership;
mod recovery;
pub(crate) mod rerun;
mod stale;
pub mod starvation;
pub(crate) mod story;
pub(crate) mod successors;
pub(crate) mod time;
mod unique;

use crate::collect::history::History;
use crate::collect::{Arrival, Event, EventKind, FaultEvent, ReapEvent};
use crate::model::errors::ErrorCount;
use crate::model::evidence::{Exclusion, SavedEvidence, Unique};
use crate::model::records::PgSample;
use crate::model::records::{BlockerSpan, FailoverRecord};
use crate::model::records::{JobRow, Status};
use crate::model::summary::{
    CheckResult, Completions, DeadTuples, Durability, Executions, Faults, Fifo, Horizon, Jobs, Ownership, Stale,
    Starvation,
};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

/// What the run left behind, as the checkers see it.
#[derive(Clone)]
pub struct Evidence<'a> {
    pub journal: &'a [Event],
    pub final_jobs: &'a [JobRow],
    pub enqueued: u64,
    /// Rows in the effects table, when it is enabled.
    pub effects_rows: Option<u64>,
    /// Executions known to be missing from the effects table: a killed agent's, from the done
    /// rows its workers completed while their ledger rows still waited in its batch.
    pub effects_unwritten: u64,
    pub faults: &'a [FaultEvent],
    /// The jobs the reaper's reclaims returned, by time (`stale`, `liveness`).
    pub reaps: &'a [ReapEvent],
    /// Jobs the reaper reclaimed without naming them (a reclaim with no `RETURNING`).
    pub reaps_unjournaled: u64,
    pub lease: Duration,
    /// hold-transaction mode: a claim ends with its transaction, not at the lease.
    pub hold_transaction: bool,
    /// The lease is the session (advisory locks): a claim ends when its holder lets go.
    pub session_lease: bool,
    /// (job, the job it was retried as): each chain is judged as one job (`successors`).
    pub successors: &'a [(i64, i64)],
    /// The open-model arrivals: each job's class and intended enqueue time.
    pub arrivals: &'a [Arrival],
    /// Class names in the samples' order, "default" (preloaded) first.
    pub classes: &'a [String],
    /// The Postgres time series (oldest ready age per class).
    pub samples: &'a [PgSample],
    pub starvation: starvation::Rule,
    pub blockers: &'a [BlockerSpan],
    /// When the server went down for each restart (`postgres_restart`), µs after the start.
    pub restarts: &'a [u64],
    /// When the server was back after each restart (`model::evidence::SavedEvidence::restarts_up`).
    pub restarts_up: &'a [u64],
    /// The `failover` faults (each also in `restarts`): the replication and the WAL lag.
    pub failovers: &'a [FailoverRecord],
    /// Why those restarts cannot test durability (`fsync = off`), if so.
    pub durability_untestable: Option<String>,
    /// A run across agents: the largest clock error bound among them, µs (0: one clock).
    pub clock_us: u64,
    /// When the workers were told to stop (a `run.stop` duration, the timeout, Ctrl-C, an
    /// abort), µs after the start; None when they stopped on their own (drained, claims) or
    /// the evidence predates the field.
    pub stopped_us: Option<u64>,
    /// How long the run lasted, µs (0: unknown; the last event then marks the end).
    pub end_us: u64,
    /// The workers' statement errors, and the codes declared expected (`errors`).
    pub errors: &'a [ErrorCount],
    pub expected_errors: &'a [String],
    /// The adapter's exclusion key and limit, with each job's key (`exclusion`).
    pub exclusion: Option<&'a Exclusion>,
    /// The adapter's deduplicating enqueue: each produced job's key and the rule (`unique`).
    pub unique: Option<&'a Unique>,
}

pub struct Verification {
    pub jobs: Jobs,
    pub executions: Executions,
    pub completions: Completions,
    pub stale: Stale,
    pub ownership: Ownership,
    pub faults: Faults,
    pub horizon: Horizon,
    pub dead_tuples: DeadTuples,
    pub starvation: Starvation,
    pub fifo: Fifo,
    pub durability: Durability,
    pub checks: Vec<CheckResult>,
}

/// What happened, event by event: the journal, the faults, the arrivals. The live run has them
/// in memory, `queuebench check` reads them back from `history.csv.gz`.
#[derive(Clone, Copy)]
pub struct Events<'a> {
    pub journal: &'a [Event],
    pub faults: &'a [FaultEvent],
    pub arrivals: &'a [Arrival],
    pub reaps: &'a [ReapEvent],
}

impl<'a> Events<'a> {
    pub fn of(history: &'a History) -> Events<'a> {
        Events {
            journal: &history.journal,
            faults: &history.faults,
            arrivals: &history.arrivals,
            reaps: &history.reaps,
        }
    }
}

impl<'a> Evidence<'a> {
    /// The checkers' input, built in one place for the live run and for `queuebench check`:
    /// the saved evidence (`evidence.json`, written before the checkers run), the events, and
    /// the final table. Whatever the checkers read comes from these three, so a check run again
    /// offline reads what the live one read.
    pub fn new(saved: &'a SavedEvidence, events: Events<'a>, final_jobs: &'a [JobRow]) -> Evidence<'a> {
        Evidence {
            journal: events.journal,
            final_jobs,
            enqueued: saved.enqueued,
            effects_rows: saved.effects_rows,
            effects_unwritten: saved.effects_unwritten,
            faults: events.faults,
            reaps: events.reaps,
            reaps_unjournaled: saved.reaper_unjournaled,
            lease: Duration::from_micros(saved.lease_us),
            hold_transaction: saved.hold_transaction,
            session_lease: saved.session_lease,
            successors: &saved.successors,
            arrivals: events.arrivals,
            classes: &saved.classes,
            samples: &saved.samples,
            starvation: starvation::Rule {
                threshold: Duration::from_micros(saved.starvation_threshold_us),
                load_end: Duration::from_micros(saved.load_end_us),
            },
            blockers: &saved.blockers,
            restarts: &saved.restarts,
            restarts_up: &saved.restarts_up,
            failovers: &saved.failovers,
            durability_untestable: saved.durability_untestable.clone(),
            clock_us: saved.boundary_us(),
            stopped_us: saved.stopped_us,
            end_us: saved.duration_us,
            errors: &saved.errors,
            expected_errors: &saved.expected_errors,
            exclusion: saved.exclusion.as_ref(),
            unique: saved.unique.as_ref(),
        }
    }

    /// Evidence of a journal and a final table alone: no faults, no arrivals, no samples, no
    /// restarts, one clock, a burn-down (no starvation window). What a caller without a run
    /// (`explore`, the checkers' tests) starts from, setting the rest by struct update.
    pub fn bare(journal: &'a [Event], final_jobs: &'a [JobRow], enqueued: u64, lease: Duration) -> Evidence<'a> {
        Evidence {
            journal,
            final_jobs,
            enqueued,
            effects_rows: None,
            effects_unwritten: 0,
            faults: &[],
            reaps: &[],
            reaps_unjournaled: 0,
            lease,
            hold_transaction: false,
            session_lease: false,
            successors: &[],
            arrivals: &[],
            classes: &[],
            samples: &[],
            starvation: starvation::Rule { threshold: Duration::from_secs(10), load_end: Duration::ZERO },
            blockers: &[],
            restarts: &[],
            restarts_up: &[],
            failovers: &[],
            durability_untestable: None,
            clock_us: 0,
            stopped_us: None,
            end_us: 0,
            errors: &[],
            expected_errors: &[],
            exclusion: None,
            unique: None,
        }
    }
}

/// Every checker, and the checks that need the final table left out when there is none
/// (a partial run: the database was lost).
pub fn verify_all(e: &Evidence, partial: bool) -> Verification {
    let mut v = verify(e);
    if partial {
        v.checks.retain(|c| !c.name.needs_final_table());
        v.jobs = Jobs { enqueued: e.enqueued, ..Default::default() };
    }
    v
}

/// How many example job ids a check keeps.
const EXAMPLES: usize = 10;

pub fn verify(e: &Evidence) -> Verification {
    if !e.successors.is_empty() {
        // Jobs retried under a new id: every event and row of a chain under its first id.
        let (journal, final_jobs) = successors::follow(e.journal, e.final_jobs, e.successors);
        let reaps = successors::follow_reaps(e.reaps, e.successors);
        let e = Evidence { journal: &journal, final_jobs: &final_jobs, reaps: &reaps, successors: &[], ..e.clone() };
        return verify(&e);
    }
    // The runner hands the journal over sorted (no second copy of a long run's journal); sort if not.
    let events: Cow<[Event]> = if e.journal.is_sorted_by_key(Event::order) {
        Cow::Borrowed(e.journal)
    } else {
        let mut v = e.journal.to_vec();
        v.sort_unstable_by_key(Event::order);
        Cow::Owned(v)
    };
    let per_job: Vec<&[Event]> = events.chunk_by(|a, b| a.job == b.job).collect();
    let held = claims::Held::of(e.hold_transaction, e.session_lease);
    // The server's outages (down, back up; up unknown in old evidence: the down time).
    let outages: Vec<(u64, u64)> =
        e.restarts.iter().enumerate().map(|(i, &down)| (down, e.restarts_up.get(i).copied().unwrap_or(down))).collect();
    let (executions, executed, once) = exactly_once::check(&per_job, e.lease, held, (e.clock_us, &outages));
    let (mut jobs, lost, budget) = lost::check(e, &per_job, &executed);
    let class_of: HashMap<i64, u16> = e.arrivals.iter().map(|a| (a.job, a.class)).collect();
    jobs.completed_by_class = completed_by_class(e, &per_job, &class_of);
    let fifo = fifo::check(&per_job);
    let waits = job_waits(e, &per_job, &class_of);
    let starving = starvation::check(e.samples, e.classes, &e.starvation, &waits);
    let reaps = stale::Reaps::of(e.reaps, e.reaps_unjournaled, e.clock_us);
    let (completions, stale, stale_check) = stale::check(&per_job, &reaps);
    let (ownership, overlap) = ownership::check(&per_job, e.lease, held);
    let faults = recovery::check(e.faults, &per_job);
    let after_completion = after_completion::check(&per_job, e.lease, held, (e.clock_us, &outages));
    let mut checks = vec![once, after_completion, lost, stale_check, overlap, budget];
    checks.extend(liveness::check(e, &per_job));
    checks.extend(recovery::cancel_check(e.faults, &per_job));
    let (horizon, vacuum) = horizon::check(e.samples, e.blockers);
    let dead_tuples = horizon::dead_tuples(e.samples);
    checks.extend(vacuum);
    checks.extend(ledger::check(e, executions.total));
    checks.extend(errors::check(e));
    checks.extend(exclusion::check(e, &per_job));
    checks.extend(idempotent::check(&per_job, e.lease, held, (e.clock_us, &outages)));
    checks.extend(unique::check(e, &per_job));
    jobs.deduplicated = e.unique.map_or(0, |u| u.deduplicated);
    let (durability, lasting) = durability::check(e, &per_job);
    checks.extend(lasting);
    let starvation = match starving {
        Some((summary, check)) => {
            checks.push(check);
            summary
        }
        None => Starvation::default(),
    };
    Verification {
        jobs,
        executions,
        completions,
        stale,
        ownership,
        faults,
        horizon,
        dead_tuples,
        starvation,
        fifo,
        durability,
        checks,
    }
}

/// `done` jobs per class, as `jobs.completed` counts them: `done` rows, and jobs a queue
/// deleted after an accepted completion; `class_of` maps a produced job to its class index
/// (0 = "default", every job not in it).
fn completed_by_class(e: &Evidence, per_job: &[&[Event]], class_of: &HashMap<i64, u16>) -> BTreeMap<String, u64> {
    let mut counts = vec![0u64; e.classes.len()];
    let present = |id: i64| e.final_jobs.binary_search_by_key(&id, |j| j.id).is_ok();
    let done_rows = e.final_jobs.iter().filter(|j| j.status == Status::Done).map(|j| j.id);
    let deleted = per_job
        .iter()
        .filter(|evs| !present(evs[0].job) && evs.iter().any(|ev| ev.kind == EventKind::Accepted))
        .map(|evs| evs[0].job);
    for id in done_rows.chain(deleted) {
        if let Some(n) = counts.get_mut(class_of.get(&id).copied().unwrap_or(0) as usize) {
            *n += 1;
        }
    }
    e.classes.iter().cloned().zip(counts).filter(|(c, n)| *n > 0 || c != "default").collect()
}

/// Each job's wait from its intended enqueue to its first claim (to the end
/// of the journal when never claimed), with its class: the starvation examples.
fn job_waits(e: &Evidence, per_job: &[&[Event]], class_of: &HashMap<i64, u16>) -> Vec<starvation::JobWait> {
    let end = e.journal.iter().map(|ev| ev.t_us).max().unwrap_or(0);
    let intended: HashMap<i64, u64> = e.arrivals.iter().map(|a| (a.job, a.intended_us)).collect();
    let first_claim: HashMap<i64, u64> = per_job
        .iter()
        .filter_map(|evs| evs.iter().find(|ev| ev.kind == EventKind::Claimed).map(|ev| (ev.job, ev.t_us)))
        .collect();
    e.final_jobs
        .iter()
        .filter(|j| j.status != Status::Cancelled)
        .map(|j| {
            let at = intended.get(&j.id).copied().unwrap_or(0);
            let claimed = first_claim.get(&j.id).copied().unwrap_or(end);
            (class_of.get(&j.id).copied().unwrap_or(0), claimed.saturating_sub(at), j.id)
        })
        .collect()
}

/// Up to `EXAMPLES` ids.
fn examples(ids: impl IntoIterator<Item = i64>) -> Vec<i64> {
    ids.into_iter().take(EXAMPLES).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::EventKind::{self, *};
    use crate::collect::FaultKind;

    pub(super) fn ev(t_us: u64, job: i64, attempt: i32, worker: u32, kind: EventKind) -> Event {
        Event { t_us, job, attempt, worker, claim: attempt as u32, kind, dur_us: 0, token: 0 }
    }

    fn row(id: i64, status: Status) -> JobRow {
        JobRow { id, status, attempts: 1, max_attempts: 5, lease_expired: false }
    }

    pub(super) fn evidence<'a>(
        journal: &'a [Event],
        jobs: &'a [JobRow],
        enqueued: u64,
        effects: Option<u64>,
    ) -> Evidence<'a> {
        Evidence { effects_rows: effects, ..Evidence::bare(journal, jobs, enqueued, Duration::from_secs(1)) }
    }

    fn failed(v: &Verification) -> Vec<&str> {
        v.checks.iter().filter(|c| !c.passed).map(|c| c.name.name()).collect()
    }

    #[test]
    fn clean_run_passes_everything() {
        let journal = [ev(1, 1, 1, 1, Claimed), ev(2, 1, 1, 1, Executed), ev(3, 1, 1, 1, Accepted)];
        let jobs = [row(1, Status::Done), row(2, Status::Queued)];
        let v = verify(&evidence(&journal, &jobs, 2, Some(1)));
        assert!(failed(&v).is_empty(), "{:?}", v.checks);
        assert_eq!((v.jobs.completed, v.jobs.unfinished, v.jobs.lost), (1, 1, 0));
        assert_eq!((v.executions.total, v.executions.duplicate), (1, 0));
    }

    #[test]
    fn a_race_is_a_duplicate_overlap_and_stale_accept() {
        // w1 claims job 1 (attempt 1); w2 claims it again 2 µs later, well inside the lease.
        let journal = [
            ev(1, 1, 1, 1, Claimed),
            ev(2, 1, 2, 2, Claimed),
            ev(3, 1, 1, 1, Executed),
            ev(4, 1, 1, 1, Accepted),
            ev(5, 1, 2, 2, Executed),
            ev(6, 1, 2, 2, Rejected),
        ];
        let v = verify(&evidence(&journal, &[row(1, Status::Done)], 1, Some(1)));
        assert_eq!((v.executions.duplicate, v.executions.jobs_duplicated, v.executions.max_per_job), (1, 1, 2));
        assert_eq!((v.executions.duplicate_race, v.executions.duplicate_lease_expired), (1, 0));
        assert_eq!((v.completions.accepted, v.completions.rejected), (1, 1));
        assert_eq!((v.completions.stale_accepted, v.completions.stale_rejected), (1, 0));
        assert_eq!(v.ownership.overlapping_jobs, 1);
        assert_eq!(
            failed(&v),
            ["exactly_once", "stale_completions_accepted", "ownership_overlap", "effects_ledger_agrees"]
        );
        assert_eq!(v.checks[0].examples, [1]);
    }

    #[test]
    fn a_retry_after_an_accepted_failure_is_no_race_and_an_unserialized_claim_is() {
        // w1 fails job 9 (accepted: back in the queue); w2 claims it 1 ms later, well inside
        // w1's 1 s lease: the failure gave the job back, so the second run is a retry.
        let journal = [
            ev(0, 9, 1, 1, Claimed),
            ev(10, 9, 1, 1, Executed),
            ev(20, 9, 1, 1, FailAccepted),
            ev(1_020, 9, 2, 2, Claimed),
            ev(1_030, 9, 2, 2, Executed),
            ev(1_040, 9, 2, 2, Accepted),
        ];
        let v = verify(&evidence(&journal, &[row(9, Status::Done)], 1, None));
        let x = &v.executions;
        assert_eq!((x.duplicate_race, x.duplicate_lease_expired, x.retries, x.duplicate), (0, 0, 1, 0));
        assert!(
            v.checks[0].passed && v.checks[0].detail.contains("1 retry after an accepted failure"),
            "{:?}",
            v.checks[0]
        );
        assert_eq!(v.ownership.claims_during_lease, 0);
        // The naive race with zero work: w2's claim was sent (at 5) before w1's claim came back
        // (at 50) and returned after w1 had already completed: no two beliefs overlap, yet the
        // job was handed out twice while w1's lease ran.
        let mut race = [
            ev(50, 8, 1, 1, Claimed),
            ev(51, 8, 1, 1, Executed),
            ev(52, 8, 1, 1, Accepted),
            ev(90, 8, 1, 2, Claimed),
            ev(91, 8, 1, 2, Executed),
            ev(92, 8, 1, 2, Accepted),
        ];
        race[0].dur_us = 45;
        race[3].dur_us = 85;
        let v = verify(&evidence(&race, &[row(8, Status::Done)], 1, None));
        assert_eq!(v.executions.duplicate_race, 1, "sent while the other claim was in flight");
        assert_eq!(v.ownership.overlapping_jobs, 0, "w1 let go (52) before w2's claim came back (90)");
        let overlap = v.checks.iter().find(|c| c.name.name() == "ownership_overlap").unwrap();
        assert!(
            overlap.detail.contains("0 jobs had two workers")
                && overlap.detail.contains("1 claim handed a job out over another holder's lease"),
            "{}",
            overlap.detail
        );
    }

    #[test]
    fn a_reclaim_after_the_lease_is_an_expected_duplicate() {
        // w1's lease (1 s) ran out; w2 claimed at 1.5 s; w1 woke at 2 s and its completion was rejected.
        let journal = [
            ev(0, 3, 1, 1, Claimed),
            ev(10, 3, 1, 1, Executed),
            ev(1_500_000, 3, 2, 2, Claimed),
            ev(1_600_000, 3, 2, 2, Executed),
            ev(1_700_000, 3, 2, 2, Accepted),
            ev(2_000_000, 3, 1, 1, Rejected),
        ];
        let v = verify(&evidence(&journal, &[row(3, Status::Done)], 1, None));
        assert_eq!((v.executions.duplicate_race, v.executions.duplicate_lease_expired), (0, 1));
        assert_eq!((v.completions.stale_accepted, v.completions.stale_rejected), (0, 1));
        assert_eq!(v.ownership.overlapping_jobs, 1, "w1 still believed it owned the job");
    }

    #[test]
    fn a_completion_in_flight_across_a_reclaim_is_stale() {
        // A partition: w1's completion of job 4 is sent at 8 s (inside its 9 s lease) and
        // answered at 11 s; the reaper requeued the job and w2's claim came back at 9.1 s.
        let mut journal = [
            ev(0, 4, 1, 1, Claimed),
            ev(8_000_000, 4, 1, 1, Executed),
            ev(8_000_010, 4, 1, 1, Rejected),
            ev(9_100_000, 4, 2, 2, Claimed),
            ev(17_100_000, 4, 2, 2, Executed),
            ev(17_100_010, 4, 2, 2, Accepted),
        ];
        journal[2].dur_us = 3_000_000;
        let v = verify(&evidence(&journal, &[row(4, Status::Done)], 1, None));
        assert_eq!((v.completions.stale_accepted, v.completions.stale_rejected), (0, 1), "the token fence");
        // The status fence lets it land: the claim came back before its answer, and a landed
        // completion ends the job, so the server served that claim first.
        journal[2].kind = Accepted;
        journal[5].kind = Rejected;
        let v = verify(&evidence(&journal, &[row(4, Status::Done)], 1, None));
        assert_eq!((v.completions.stale_accepted, v.completions.stale_rejected), (1, 0));
        assert!(failed(&v).contains(&"stale_completions_accepted"));
        // Another claim in flight beside w2's (sent before w2's came back) may have been served
        // after it: w2's claim is not surely the last, and nothing is counted.
        let mut two = journal.to_vec();
        let mut w3 = ev(9_100_005, 4, 3, 3, Claimed);
        w3.dur_us = 1_000;
        two.insert(4, w3);
        let v = verify(&evidence(&two, &[row(4, Status::Done)], 1, None));
        assert_eq!(v.completions.stale_accepted, 0);
        // Answered before the claim came back: not stale.
        journal[2].dur_us = 1_000_000;
        let v = verify(&evidence(&journal, &[row(4, Status::Done)], 1, None));
        assert_eq!(v.completions.stale_accepted, 0);
    }

    #[test]
    fn in_hold_transaction_mode_a_rerun_after_a_rolled_back_round_is_no_race() {
        // w1's round failed (its COMMIT did not return: rolled back) at 5 µs; w2 claimed the job at 6 µs.
        let journal = [
            ev(1, 4, 1, 1, Claimed),
            ev(2, 4, 1, 1, Executed),
            ev(3, 4, 1, 1, Accepted),
            ev(5, 4, 1, 1, Abandoned),
            ev(100_000, 4, 2, 2, Claimed),
            ev(100_001, 4, 2, 2, Executed),
            ev(100_002, 4, 2, 2, Accepted),
        ];
        let jobs = [row(4, Status::Done)];
        let mut e = evidence(&journal, &jobs, 1, None);
        let v = verify(&e);
        assert_eq!(v.executions.duplicate_race, 0, "the accepted completion gave the job back");
        assert_eq!(v.executions.duplicate_after_completion, 1, "and a claim took the finished job again");
        assert!(failed(&v).contains(&"run_after_completion"), "{:?}", v.checks);
        e.hold_transaction = true;
        let v = verify(&e);
        let x = &v.executions;
        assert_eq!((x.duplicate_race, x.duplicate_lease_expired, x.duplicate_after_crash), (0, 0, 1));
        assert!(!failed(&v).contains(&"run_after_completion"), "the rolled-back completion never landed");
    }

    #[test]
    fn claims_recorded_out_of_order_follow_the_attempt_number() {
        // w2's claim (attempt 3) was recorded before w1's older claim (attempt 2).
        let journal = [ev(1, 7, 3, 2, Claimed), ev(2, 7, 2, 1, Claimed), ev(3, 7, 3, 2, Accepted)];
        let v = verify(&evidence(&journal, &[row(7, Status::Done)], 1, None));
        assert_eq!(v.completions.stale_accepted, 0);
    }

    #[test]
    fn a_cancelled_job_that_runs_afterwards_is_caught() {
        let journal = [ev(10, 1, 1, 1, Claimed), ev(11, 1, 1, 1, Executed), ev(12, 1, 1, 1, Accepted)];
        let cancel = [FaultEvent { t_us: 5, kind: FaultKind::Cancel, worker: None, job: Some(1) }];
        let jobs = [row(1, Status::Done)];
        let mut e = evidence(&journal, &jobs, 1, None);
        e.faults = &cancel;
        let v = verify(&e);
        assert_eq!(failed(&v), ["cancelled_jobs_not_run"]);
        assert_eq!(v.faults.by_kind[&FaultKind::Cancel], 1);
        assert_eq!((v.faults.recovered, v.faults.unrecovered), (0, 0), "a cancel is not a fault to recover from");
    }

    #[test]
    fn a_queue_that_deletes_what_it_finishes_is_judged_by_the_journal() {
        // Job 1: executed and completed, then deleted by the queue: done. Job 2: completed
        // (accepted) but never executed, then deleted: lost. Job 3: cancelled and deleted.
        // Job 4: failed for good and deleted: dead. Job 5: gone without a trace: lost.
        // Job 6: still queued.
        let journal = [
            ev(1, 1, 1, 1, Claimed),
            ev(2, 1, 1, 1, Executed),
            ev(3, 1, 1, 1, Accepted),
            ev(4, 2, 1, 2, Claimed),
            ev(5, 2, 1, 2, Accepted),
            ev(6, 4, 1, 3, Claimed),
            ev(7, 4, 1, 3, Executed),
            ev(8, 4, 1, 3, FailAccepted),
        ];
        let cancel = [FaultEvent { t_us: 1, kind: FaultKind::Cancel, worker: None, job: Some(3) }];
        let jobs = [row(6, Status::Queued)];
        let mut e = evidence(&journal, &jobs, 6, None);
        e.faults = &cancel;
        let v = verify(&e);
        let j = &v.jobs;
        // Done as the queue counts it (as a `done` row never executed is): jobs 1 and 2.
        assert_eq!((j.completed, j.dead, j.cancelled, j.queued), (2, 1, 1, 1));
        assert_eq!(j.lost, 2, "the unexecuted completion and the job gone without a trace");
        let lost = v.checks.iter().find(|c| c.name.name() == "no_lost_jobs").unwrap();
        assert!(!lost.passed && lost.detail.contains("1 done without an execution"), "{}", lost.detail);
        assert!(lost.detail.contains("1 missing from the table"), "{}", lost.detail);
        assert_eq!(lost.examples, [2, 5], "the unexecuted completion, then the job gone without a trace");
        // Per class, as `completed` counts: jobs 1 and 2, deleted after their completions.
        let classes = ["default".to_string()];
        e.classes = &classes;
        assert_eq!(verify(&e).jobs.completed_by_class.get("default"), Some(&2));
    }

    #[test]
    fn done_without_execution_or_expired_running_is_lost() {
        let mut expired = row(2, Status::Running);
        expired.lease_expired = true;
        let mut over = row(4, Status::Dead);
        over.attempts = 6;
        let jobs = [row(1, Status::Done), expired, over];
        let v = verify(&evidence(&[], &jobs, 4, None));
        // job 1 done but never executed, job 2 held by nobody, job 3 vanished from the table.
        assert_eq!(v.jobs.lost, 3);
        assert_eq!((v.jobs.stuck_running, v.jobs.dead, v.jobs.attempts_exceeded), (1, 1, 1));
        // Job 2 is running with no claim in the journal (abandoned), and nothing was executed.
        assert_eq!(failed(&v), ["no_lost_jobs", "attempts_within_budget", "jobs_left_abandoned", "progress"]);
    }
}
