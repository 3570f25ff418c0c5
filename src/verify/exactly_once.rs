//! Exactly-once: how often each job's side effect happened, and why the
//! extra executions happened. An execution whose claim came while another
//! claim's lease on the same job still ran is a race (the bug); one whose
//! claim came after every other lease had expired is the at-least-once a
//! lease promises (the previous holder was paused, slow or dead).

use super::claims::{Held, spans_held};
use super::examples;
use crate::collect::{Event, EventKind};
use crate::model::check::Check;
use crate::model::summary::{CheckResult, Executions};
use std::time::Duration;

/// Ids of every executed job, sorted.
pub(super) type Executed = Vec<i64>;

/// `held`: when a claim ends if nobody gives the job back (see `claims::spans_held`). `clock_us`:
/// the agents' clock error bound (0 for a local run), see `claims::race_tolerance`.
pub(super) fn check(
    per_job: &[&[Event]],
    lease: Duration,
    held: Held,
    clock_us: u64,
) -> (Executions, Executed, CheckResult) {
    let tolerance = super::claims::race_tolerance(lease, clock_us);
    let mut x = Executions::default();
    let mut executed = Vec::new();
    let mut duplicated = Vec::new();
    for events in per_job {
        let runs: Vec<&Event> = events.iter().filter(|e| e.kind == EventKind::Executed).collect();
        if runs.is_empty() {
            continue;
        }
        let job = runs[0].job;
        executed.push(job);
        x.total += runs.len() as u64;
        x.max_per_job = x.max_per_job.max(runs.len() as u64);
        if runs.len() == 1 {
            continue;
        }
        duplicated.push(job);
        let claims = spans_held(events, lease, held);
        for run in &runs[1..] {
            let Some(c) = claims.iter().find(|c| c.worker == run.worker && c.claim == run.claim) else { continue };
            // A race: the job was handed out while another claim's lease still ran (either way round).
            let by_race = claims.iter().any(|o| {
                (o.worker, o.claim) != (c.worker, c.claim)
                    && o.holds_at(c.sent_us, tolerance)
                    && c.holds_at(o.sent_us, tolerance)
            });
            if by_race {
                x.duplicate_race += 1;
            } else {
                x.duplicate_lease_expired += 1;
            }
        }
    }
    x.distinct_jobs = executed.len() as u64;
    x.duplicate = x.total - x.distinct_jobs;
    x.jobs_duplicated = duplicated.len() as u64;
    let check = CheckResult {
        name: Check::ExactlyOnce,
        passed: x.jobs_duplicated == 0,
        violations: x.jobs_duplicated,
        detail: if x.jobs_duplicated == 0 {
            format!("{} executed, each once", crate::model::words::count(x.distinct_jobs, "job"))
        } else {
            format!(
                "{} of {} executed jobs ran more than once ({} extra executions: {} by racing claims, {} after a lease expired; up to {} for one job)",
                x.jobs_duplicated,
                x.distinct_jobs,
                x.duplicate,
                x.duplicate_race,
                x.duplicate_lease_expired,
                x.max_per_job
            )
        },
        examples: examples(duplicated),
    };
    executed.sort_unstable();
    (x, executed, check)
}
