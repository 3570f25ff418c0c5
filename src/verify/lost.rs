//! Lost jobs: marked done without ever executing, or gone from the table.

use super::exactly_once::PerJob;
use super::{EXAMPLES, Evidence};
use crate::db::schema::Status;
use crate::report::summary::{CheckResult, Jobs};

pub fn check(e: &Evidence, per_job: &PerJob) -> (Jobs, CheckResult) {
    let executed = |id: i64| per_job.binary_search_by_key(&id, |(j, _)| *j).is_ok();
    let done_unexecuted: Vec<i64> = e
        .final_jobs
        .iter()
        .filter(|j| j.status == Status::Done && !executed(j.id))
        .map(|j| j.id)
        .collect();
    let vanished = e.enqueued.saturating_sub(e.final_jobs.len() as u64);
    let completed = e
        .final_jobs
        .iter()
        .filter(|j| j.status == Status::Done)
        .count() as u64;
    let jobs = Jobs {
        enqueued: e.enqueued,
        completed,
        unfinished: e.enqueued.saturating_sub(completed),
        lost: done_unexecuted.len() as u64 + vanished,
        stuck_running: e
            .final_jobs
            .iter()
            .filter(|j| j.status == Status::Running)
            .count() as u64,
    };
    let check = CheckResult {
        name: "no_lost_jobs".into(),
        passed: jobs.lost == 0,
        violations: jobs.lost,
        detail: format!(
            "{} jobs marked done without an execution, {} missing from the table",
            done_unexecuted.len(),
            vanished
        ),
        examples: done_unexecuted.into_iter().take(EXAMPLES).collect(),
    };
    (jobs, check)
}
