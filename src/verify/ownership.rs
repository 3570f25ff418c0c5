//! Ownership overlap: two workers both believed they owned a job at the
//! same moment (a claim came back while an earlier holder had not yet let go).

use super::claims::spans;
use super::examples;
use crate::collect::Event;
use crate::model::summary::{CheckResult, Ownership};
use std::time::Duration;

pub fn check(per_job: &[&[Event]]) -> (Ownership, CheckResult) {
    let mut jobs = Vec::new();
    for events in per_job {
        let mut claims = spans(events, Duration::ZERO, false);
        claims.sort_by_key(|c| c.start_us);
        let overlaps = claims.windows(2).any(|w| w[0].released_us.is_none_or(|r| r > w[1].start_us));
        if overlaps {
            jobs.push(events[0].job);
        }
    }
    let o = Ownership { overlapping_jobs: jobs.len() as u64 };
    let check = CheckResult {
        name: "ownership_overlap".into(),
        passed: jobs.is_empty(),
        violations: o.overlapping_jobs,
        detail: format!("{} jobs had two workers believing they owned them at once", o.overlapping_jobs),
        examples: examples(jobs),
    };
    (o, check)
}
