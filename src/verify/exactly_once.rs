//! Exactly-once: how often each job's side effect happened.

use super::{EXAMPLES, Evidence};
use crate::collect::EventKind;
use crate::report::summary::{CheckResult, Executions};

/// Executions per job id, sorted by id.
pub type PerJob = Vec<(i64, u64)>;

pub fn check(e: &Evidence) -> (Executions, PerJob, CheckResult) {
    let mut ids: Vec<i64> = e
        .journal
        .iter()
        .filter(|ev| ev.kind == EventKind::Executed)
        .map(|ev| ev.job)
        .collect();
    ids.sort_unstable();
    let mut per_job: PerJob = Vec::new();
    for id in &ids {
        match per_job.last_mut() {
            Some((last, n)) if last == id => *n += 1,
            _ => per_job.push((*id, 1)),
        }
    }
    let duplicated: Vec<&(i64, u64)> = per_job.iter().filter(|(_, n)| *n > 1).collect();
    let x = Executions {
        total: ids.len() as u64,
        duplicate: ids.len() as u64 - per_job.len() as u64,
        distinct_jobs: per_job.len() as u64,
        jobs_duplicated: duplicated.len() as u64,
        max_per_job: per_job.iter().map(|(_, n)| *n).max().unwrap_or(0),
    };
    let check = CheckResult {
        name: "exactly_once".into(),
        passed: x.jobs_duplicated == 0,
        violations: x.jobs_duplicated,
        detail: if x.jobs_duplicated == 0 {
            format!("{} jobs executed, each once", x.distinct_jobs)
        } else {
            format!(
                "{} of {} executed jobs ran more than once ({} extra executions, up to {} for one job)",
                x.jobs_duplicated, x.distinct_jobs, x.duplicate, x.max_per_job
            )
        },
        examples: duplicated
            .iter()
            .take(EXAMPLES)
            .map(|(id, _)| *id)
            .collect(),
    };
    (x, per_job, check)
}
