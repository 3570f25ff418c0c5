//! Checkers: pure functions over the evidence (journal, final table state,
//! effects count). No network, no clock. Each returns numbers for the
//! summary and a named `CheckResult` with example job ids.

mod exactly_once;
mod ledger;
mod lost;
mod stale;

use crate::collect::Event;
use crate::db::schema::JobRow;
use crate::report::summary::{CheckResult, Completions, Executions, Jobs};

/// What the run left behind, as the checkers see it.
pub struct Evidence<'a> {
    pub journal: &'a [Event],
    pub final_jobs: &'a [JobRow],
    pub enqueued: u64,
    /// Rows in the effects table, when it is enabled.
    pub effects_rows: Option<u64>,
}

pub struct Verification {
    pub jobs: Jobs,
    pub executions: Executions,
    pub completions: Completions,
    pub checks: Vec<CheckResult>,
}

/// How many example job ids a check keeps.
const EXAMPLES: usize = 5;

pub fn verify(e: &Evidence) -> Verification {
    let (executions, per_job, once) = exactly_once::check(e);
    let (jobs, lost) = lost::check(e, &per_job);
    let (completions, stale) = stale::check(e);
    let mut checks = vec![once, lost, stale];
    checks.extend(ledger::check(e, executions.total));
    Verification {
        jobs,
        executions,
        completions,
        checks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::EventKind;
    use crate::db::schema::Status;

    fn ev(t_us: u64, job: i64, attempt: i32, worker: u32, kind: EventKind) -> Event {
        Event {
            t_us,
            job,
            attempt,
            worker,
            kind,
        }
    }

    fn row(id: i64, status: Status) -> JobRow {
        JobRow {
            id,
            status,
            attempts: 1,
        }
    }

    #[test]
    fn clean_run_passes_everything() {
        use EventKind::*;
        let journal = [
            ev(1, 1, 1, 1, Claimed),
            ev(2, 1, 1, 1, Executed),
            ev(3, 1, 1, 1, Accepted),
        ];
        let jobs = [row(1, Status::Done), row(2, Status::Queued)];
        let v = verify(&Evidence {
            journal: &journal,
            final_jobs: &jobs,
            enqueued: 2,
            effects_rows: Some(1),
        });
        assert!(v.checks.iter().all(|c| c.passed), "{:?}", v.checks);
        assert_eq!(
            (v.jobs.completed, v.jobs.unfinished, v.jobs.lost),
            (1, 1, 0)
        );
        assert_eq!((v.executions.total, v.executions.duplicate), (1, 0));
    }

    #[test]
    fn duplicate_and_stale_accepted_are_caught() {
        use EventKind::*;
        // w1 claims job 7 (attempt 1); w2 claims it again (attempt 2) before w1 completes.
        let journal = [
            ev(1, 7, 1, 1, Claimed),
            ev(2, 7, 2, 2, Claimed),
            ev(3, 7, 1, 1, Executed),
            ev(4, 7, 1, 1, Accepted),
            ev(5, 7, 2, 2, Executed),
            ev(6, 7, 2, 2, Rejected),
        ];
        let jobs = [row(7, Status::Done)];
        let v = verify(&Evidence {
            journal: &journal,
            final_jobs: &jobs,
            enqueued: 1,
            effects_rows: Some(1),
        });
        assert_eq!(
            (
                v.executions.duplicate,
                v.executions.jobs_duplicated,
                v.executions.max_per_job
            ),
            (1, 1, 2)
        );
        assert_eq!((v.completions.accepted, v.completions.rejected), (1, 1));
        assert_eq!(
            (v.completions.stale_accepted, v.completions.stale_rejected),
            (1, 0)
        );
        let failed: Vec<&str> = v
            .checks
            .iter()
            .filter(|c| !c.passed)
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(
            failed,
            [
                "exactly_once",
                "stale_completions_accepted",
                "effects_ledger_agrees"
            ]
        );
        assert_eq!(v.checks[0].examples, [7]);
    }

    #[test]
    fn claims_recorded_out_of_order_follow_the_attempt_number() {
        use EventKind::*;
        // w2's claim (attempt 3) was recorded before w1's older claim (attempt 2).
        let journal = [
            ev(1, 7, 3, 2, Claimed),
            ev(2, 7, 2, 1, Claimed),
            ev(3, 7, 3, 2, Accepted),
        ];
        let v = verify(&Evidence {
            journal: &journal,
            final_jobs: &[row(7, Status::Done)],
            enqueued: 1,
            effects_rows: None,
        });
        assert_eq!(v.completions.stale_accepted, 0);
    }

    #[test]
    fn done_without_execution_is_lost() {
        let jobs = [row(1, Status::Done), row(2, Status::Running)];
        let v = verify(&Evidence {
            journal: &[],
            final_jobs: &jobs,
            enqueued: 3,
            effects_rows: None,
        });
        // job 1 done but never executed, job 3 vanished from the table.
        assert_eq!(v.jobs.lost, 2);
        assert_eq!(v.jobs.stuck_running, 1);
        assert!(
            !v.checks
                .iter()
                .find(|c| c.name == "no_lost_jobs")
                .unwrap()
                .passed
        );
        assert!(v.checks.iter().all(|c| c.name != "effects_ledger_agrees"));
    }
}
