//! Mutual exclusion across jobs: an adapter that declares `[result] exclusion_key` (a lock, a
//! concurrency key, a named queue) promises that at most `[drive] exclusion_limit` jobs (1 by
//! default) sharing one value of it are held at once. A job is held from its claim's return to
//! the first thing that ends its holder's belief (a completion, a failure, a crash, a refused
//! heartbeat), or to the run's end. The check fails for every claim that took a job while the
//! limit's worth of other jobs of its key were held, and for every claim the database refused
//! with a unique or exclusion violation (23505, 23P01) that the adapter does not declare
//! expected: there the database caught two holders of one key and turned the race into an error.

use super::Evidence;
use super::time::secs;
use crate::collect::{Event, EventKind};
use crate::model::check::Check;
use crate::model::errors::Statement;
use crate::model::summary::CheckResult;
use crate::model::words::count;
use std::collections::{BTreeMap, HashMap};

/// One claim's hold on its job: (start µs, end µs, job).
type Hold = (u64, u64, i64);

pub(super) fn check(e: &Evidence, per_job: &[&[Event]]) -> Option<CheckResult> {
    let exclusion = e.exclusion?;
    let limit = exclusion.limit.max(1) as usize;
    let key_of: HashMap<i64, &str> = exclusion.keys.iter().map(|(j, k)| (*j, k.as_str())).collect();
    let end = e.end_us.max(e.journal.iter().map(|ev| ev.t_us).max().unwrap_or(0));
    let mut by_key: BTreeMap<&str, Vec<Hold>> = BTreeMap::new();
    for events in per_job {
        let Some(&key) = key_of.get(&events[0].job) else { continue };
        by_key.entry(key).or_default().extend(holds(events, end));
    }
    let mut over = 0u64;
    let mut jobs = Vec::new();
    let mut first: Option<String> = None;
    for (key, holds) in &mut by_key {
        holds.sort_unstable();
        // The holds still open, as (end, job): a sweep in start order, so each claim looks only
        // at what is held when it comes back, not at every earlier hold of its key.
        let mut open: Vec<(u64, i64)> = Vec::new();
        for &(start, end, job) in holds.iter() {
            open.retain(|&(until, _)| until > start);
            // Other jobs of the key held when this claim came back.
            let mut others: Vec<i64> = open.iter().filter(|h| h.1 != job).map(|h| h.1).collect();
            open.push((end, job));
            others.sort_unstable();
            others.dedup();
            if others.len() >= limit {
                over += 1;
                jobs.push(job);
                first.get_or_insert_with(|| {
                    format!("key {key}: job {job} claimed at t={} while job {} held it", secs(start), others[0])
                });
            }
        }
    }
    let refused: u64 = e
        .errors
        .iter()
        .filter(|c| c.statement == Statement::Claim && matches!(c.code.as_str(), "23505" | "23P01"))
        .filter(|c| !e.expected_errors.contains(&c.code))
        .map(|c| c.count)
        .sum();
    jobs.sort_unstable();
    jobs.dedup();
    let n = over + refused;
    let detail = format!(
        "{} took a job while {} of its key already held one (limit {limit}){}; {} refused by a unique or exclusion constraint (23505, 23P01: the database caught two holders of one key)",
        count(over, "claim"),
        if limit == 1 { "another job".to_string() } else { format!("{limit} other jobs") },
        first.map(|f| format!(", the first: {f}")).unwrap_or_default(),
        count(refused, "claim")
    );
    Some(CheckResult {
        name: Check::MutualExclusion,
        passed: n == 0,
        violations: n,
        detail,
        examples: super::examples(jobs),
    })
}

/// Each claim of one job's hold: from the claim's return to its holder's first letting go.
fn holds(events: &[Event], end: u64) -> Vec<Hold> {
    events
        .iter()
        .filter(|c| c.kind == EventKind::Claimed)
        .map(|c| {
            let released = events
                .iter()
                .filter(|x| (x.worker, x.claim) == (c.worker, c.claim) && x.kind.ends_ownership() && x.t_us >= c.t_us)
                .map(|x| x.t_us)
                .min()
                .unwrap_or(end);
            (c.t_us, released, c.job)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::errors::ErrorCount;
    use crate::model::evidence::Exclusion;
    use std::time::Duration;

    fn ev(t_us: u64, job: i64, worker: u32, kind: EventKind) -> Event {
        Event { t_us, job, attempt: 1, worker, claim: job as u32, kind, dur_us: 0, token: 0 }
    }

    fn judge(journal: &mut [Event], limit: u32, errors: &[ErrorCount]) -> CheckResult {
        journal.sort_by_key(Event::order);
        let exclusion = Exclusion { limit, keys: vec![(1, "k".into()), (2, "k".into()), (3, "other".into())] };
        let e =
            Evidence { exclusion: Some(&exclusion), errors, ..Evidence::bare(journal, &[], 3, Duration::from_secs(1)) };
        let per_job: Vec<&[Event]> = journal.chunk_by(|a, b| a.job == b.job).collect();
        check(&e, &per_job).unwrap()
    }

    #[test]
    fn two_jobs_of_one_key_held_at_once_fail_and_one_after_the_other_pass() {
        use EventKind::*;
        let mut at_once = vec![
            ev(0, 1, 1, Claimed),
            ev(5, 2, 2, Claimed),
            ev(10, 1, 1, Accepted),
            ev(12, 2, 2, Accepted),
            ev(6, 3, 3, Claimed),
            ev(9, 3, 3, Accepted),
        ];
        let r = judge(&mut at_once, 1, &[]);
        assert!(!r.passed && r.violations == 1 && r.examples == [2], "{r:?}");
        assert!(r.detail.contains("key k: job 2 claimed at t=0.000 s while job 1 held it"), "{}", r.detail);
        assert!(judge(&mut at_once, 2, &[]).passed, "a limit of 2 allows both");
        let mut in_turn =
            vec![ev(0, 1, 1, Claimed), ev(10, 1, 1, Accepted), ev(11, 2, 2, Claimed), ev(12, 2, 2, Accepted)];
        assert!(judge(&mut in_turn, 1, &[]).passed);
        // The database refused the second holder: the race shows as errors, and fails too.
        let refused =
            [ErrorCount { statement: Statement::Claim, code: "23505".into(), count: 3, first: String::new() }];
        let r = judge(&mut in_turn, 1, &refused);
        assert!(!r.passed && r.violations == 3, "{r:?}");
    }
}
