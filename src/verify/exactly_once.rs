//! Exactly-once: how often each job's side effect happened, and why the extra executions
//! happened (`rerun::why`, one cause each: a racing claim, a lease that ran out, a crash, a
//! run after the job's completion was accepted, one after a completion whose answer was lost,
//! or a retry after an accepted failure). A retry is no duplicate; every other cause is.

use super::claims::{Held, spans_held};
use super::examples;
use super::rerun::{landed_completions, why};
use crate::collect::{Event, EventKind};
use crate::model::check::Check;
use crate::model::rerun::Rerun;
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
    (clock_us, outages): (u64, &[(u64, u64)]),
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
        let claims = spans_held(events, lease, held);
        let landed = landed_completions(events, held == Held::Transaction);
        let mut duplicates = 0;
        for run in &runs[1..] {
            let cause = match claims.iter().find(|c| c.worker == run.worker && c.claim == run.claim) {
                Some(c) => why(events, &claims, c, &landed, (tolerance, outages)).cause,
                // An execution without its claim in the journal: nothing tells it from a race
                // but a lease, so it counts as the at-least-once of one.
                None => Rerun::LeaseExpired,
            };
            *match cause {
                Rerun::Race => &mut x.duplicate_race,
                Rerun::LeaseExpired => &mut x.duplicate_lease_expired,
                Rerun::AfterCrash => &mut x.duplicate_after_crash,
                Rerun::AfterCompletion => &mut x.duplicate_after_completion,
                Rerun::Retry => &mut x.retries,
                Rerun::AfterAckUnknown => &mut x.duplicate_after_ack_unknown,
            } += 1;
            duplicates += u64::from(cause.is_duplicate());
        }
        if duplicates > 0 {
            duplicated.push(job);
        }
    }
    x.distinct_jobs = executed.len() as u64;
    x.duplicate = x.total - x.distinct_jobs - x.retries;
    x.jobs_duplicated = duplicated.len() as u64;
    let retries = match x.retries {
        0 => String::new(),
        n => format!(
            "; {} after an accepted failure (no duplicates)",
            crate::model::words::count_as(n, "retry", "retries")
        ),
    };
    let check = CheckResult {
        name: Check::ExactlyOnce,
        passed: x.jobs_duplicated == 0,
        violations: x.jobs_duplicated,
        detail: if x.jobs_duplicated == 0 {
            format!("{} executed, each once{retries}", crate::model::words::count(x.distinct_jobs, "job"))
        } else {
            let causes: Vec<String> = [
                (x.duplicate_race, Rerun::Race),
                (x.duplicate_lease_expired, Rerun::LeaseExpired),
                (x.duplicate_after_crash, Rerun::AfterCrash),
                (x.duplicate_after_completion, Rerun::AfterCompletion),
                (x.duplicate_after_ack_unknown, Rerun::AfterAckUnknown),
            ]
            .into_iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, cause)| format!("{n} {}", cause.words()))
            .collect();
            format!(
                "{} of {} executed jobs ran more than once ({} extra executions: {}; up to {} runs of one job){retries}",
                x.jobs_duplicated,
                x.distinct_jobs,
                x.duplicate,
                causes.join(", "),
                x.max_per_job
            )
        },
        examples: examples(duplicated),
    };
    executed.sort_unstable();
    (x, executed, check)
}
