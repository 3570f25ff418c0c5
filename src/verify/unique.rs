//! Uniqueness at enqueue: an adapter that declares `[result] unique_key` promises that its
//! enqueue dedupes: an enqueue of a key another job still holds inserts nothing (it returns no
//! row, and the harness counts it deduplicated, not as a job). A job holds its key from its
//! enqueue while it is queued or running, and also once done, dead or cancelled when
//! `[drive] unique_states` says so, at most `[drive] unique_period` after its enqueue (Oban's
//! `unique: [period, states]`).
//!
//! The check fails for every produced job that landed while another job of its key certainly
//! held it, judged only on what the run saw for certain, so a late answer never makes a
//! violation up: a job certainly holds its key from the moment its enqueue returned until the
//! write that let it go was *sent* (its accepted completion, cancel or last failure, by the
//! journal and the final table), and until its period, counted from when its enqueue was sent,
//! ran out. Two jobs of one key conflict when, at the later one's return, both held it (two
//! jobs of one key unfinished at once), or when the earlier one held it through the whole of
//! the later one's enqueue (the later insert ran while the key was taken).

use super::Evidence;
use super::time::secs;
use crate::collect::{Event, EventKind, FaultKind};
use crate::model::check::Check;
use crate::model::evidence::Unique;
use crate::model::records::Status;
use crate::model::summary::CheckResult;
use crate::model::words::count;
use std::collections::{BTreeMap, HashMap};

/// One produced job's hold on its key: its enqueue was sent at `sent`, returned at `landed`,
/// and it certainly held its key until `until` (µs after the start).
#[derive(Debug, Clone, Copy)]
struct Hold {
    job: i64,
    sent: u64,
    landed: u64,
    until: u64,
}

pub(super) fn check(e: &Evidence, per_job: &[&[Event]]) -> Option<CheckResult> {
    let unique = e.unique?;
    let events: HashMap<i64, &[Event]> = per_job.iter().map(|evs| (evs[0].job, *evs)).collect();
    let key_of: HashMap<i64, &str> = unique.keys.iter().map(|(j, k)| (*j, k.as_str())).collect();
    let mut by_key: BTreeMap<&str, Vec<Hold>> = BTreeMap::new();
    for a in e.arrivals {
        let Some(&key) = key_of.get(&a.job) else { continue };
        let landed = a.sent_us + u64::from(a.enqueue_us);
        let released = released(e, unique, a.job, events.get(&a.job).copied().unwrap_or_default(), landed);
        let period_end = unique.period_us.map_or(u64::MAX, |p| a.sent_us.saturating_add(p));
        let hold = Hold { job: a.job, sent: a.sent_us, landed, until: released.min(period_end) };
        by_key.entry(key).or_default().push(hold);
    }
    let mut jobs = Vec::new();
    let mut first: Option<String> = None;
    for (key, holds) in &mut by_key {
        holds.sort_unstable_by_key(|h| (h.landed, h.job));
        for (i, later) in holds.iter().enumerate() {
            let conflict = holds[..i].iter().find(|earlier| {
                let both_held = later.landed < earlier.until && later.landed < later.until;
                let held_throughout = earlier.landed <= later.sent && later.landed < earlier.until;
                both_held || held_throughout
            });
            if let Some(earlier) = conflict {
                jobs.push(later.job);
                first.get_or_insert_with(|| {
                    format!(
                        "key {key}: job {} enqueued from t={} to t={} while job {} (enqueued by t={}) held it",
                        later.job,
                        secs(later.sent),
                        secs(later.landed),
                        earlier.job,
                        secs(earlier.landed)
                    )
                });
            }
        }
    }
    let n = jobs.len() as u64;
    jobs.sort_unstable();
    let landed = unique.keys.len() as u64;
    let detail = format!(
        "{} of {} landed while another job held its key ({}){}; {} deduplicated",
        count(n, "enqueue"),
        landed,
        rule(unique),
        first.map(|f| format!("; the first: {f}")).unwrap_or_default(),
        count(unique.deduplicated, "enqueue"),
    );
    Some(CheckResult {
        name: Check::UniqueEnqueue,
        passed: n == 0,
        violations: n,
        detail,
        examples: super::examples(jobs),
    })
}

/// The rule in words: which states keep a key, for how long.
fn rule(u: &Unique) -> String {
    let mut held = vec!["queued", "running"];
    held.extend([(u.done, "done"), (u.dead, "dead"), (u.cancelled, "cancelled")].iter().filter(|h| h.0).map(|h| h.1));
    let within = u.period_us.map(|p| format!(", within {} of its enqueue", secs(p))).unwrap_or_default();
    format!("a job keeps its key while {}{within}", held.join(", "))
}

/// When the job certainly still held its key, at the latest (µs): when the write that ended
/// its hold was sent (an accepted completion, an accepted cancel, the last accepted failure of
/// a job that ended dead), unless the rule keeps that state's key too; for a job the table
/// says is finished without a write in the journal to say when, the last moment the journal
/// saw it (or its enqueue's return); never, for a job still queued or running at the end.
fn released(e: &Evidence, u: &Unique, job: i64, events: &[Event], landed: u64) -> u64 {
    let first = |kind: EventKind| events.iter().find(|ev| ev.kind == kind).map(|ev| ev.t_us);
    let cancelled = e.faults.iter().find(|f| f.kind == FaultKind::Cancel && f.job == Some(job)).map(|f| f.t_us);
    let row = e.final_jobs.binary_search_by_key(&job, |j| j.id).ok().map(|i| e.final_jobs[i].status);
    let last_seen = events.iter().map(|ev| ev.t_us).max().unwrap_or(landed).max(landed);
    if let Some(t) = first(EventKind::Accepted) {
        return if u.done { u64::MAX } else { t };
    }
    if let Some(t) = cancelled {
        return if u.cancelled { u64::MAX } else { t };
    }
    let failed = events.iter().filter(|ev| ev.kind == EventKind::FailAccepted).map(|ev| ev.t_us).max();
    match (row, failed) {
        (Some(Status::Dead) | None, Some(t)) => {
            if u.dead {
                u64::MAX
            } else {
                t
            }
        }
        (Some(Status::Done), _) if u.done => u64::MAX,
        (Some(Status::Dead), _) if u.dead => u64::MAX,
        (Some(Status::Cancelled), _) if u.cancelled => u64::MAX,
        (Some(Status::Done | Status::Dead | Status::Cancelled) | None, _) => last_seen,
        _ => u64::MAX,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::Arrival;
    use crate::model::records::JobRow;
    use std::time::Duration;

    fn arrival(job: i64, sent_us: u64, took_us: u32) -> Arrival {
        Arrival { job, class: 1, intended_us: sent_us, sent_us, enqueue_us: took_us }
    }

    fn row(id: i64, status: Status) -> JobRow {
        JobRow { id, status, attempts: 1, max_attempts: 5, lease_expired: false }
    }

    fn completed(job: i64, t_us: u64) -> Event {
        Event { t_us, job, attempt: 1, worker: 1, claim: 1, kind: EventKind::Accepted, dur_us: 0, token: 0 }
    }

    fn judge(arrivals: &[Arrival], journal: &[Event], rows: &[JobRow], rule: Unique) -> CheckResult {
        let keys = arrivals.iter().map(|a| (a.job, "k".to_string())).collect();
        let unique = Unique { keys, ..rule };
        let e = Evidence {
            arrivals,
            unique: Some(&unique),
            ..Evidence::bare(journal, rows, arrivals.len() as u64, Duration::from_secs(1))
        };
        let per_job: Vec<&[Event]> = journal.chunk_by(|a, b| a.job == b.job).collect();
        check(&e, &per_job).unwrap()
    }

    #[test]
    fn two_concurrent_enqueues_of_one_key_that_both_landed_fail() {
        // Both inserted, neither finished: two jobs of one key at once.
        let arrivals = [arrival(1, 1_000, 2_000), arrival(2, 1_500, 2_000)];
        let rows = [row(1, Status::Queued), row(2, Status::Queued)];
        let r = judge(&arrivals, &[], &rows, Unique::default());
        assert!(!r.passed && r.violations == 1 && r.examples == [2], "{r:?}");
        assert!(r.detail.contains("key k: job 2") && r.detail.contains("job 1"), "{}", r.detail);
    }

    #[test]
    fn a_key_freed_by_a_completion_may_be_taken_again_unless_done_keeps_it() {
        // Job 1 completed (sent at 5 ms) before job 2's enqueue was even sent (10 ms).
        let arrivals = [arrival(1, 1_000, 1_000), arrival(2, 10_000, 1_000)];
        let journal = [completed(1, 5_000)];
        let rows = [row(1, Status::Done), row(2, Status::Queued)];
        assert!(judge(&arrivals, &journal, &rows, Unique::default()).passed);
        // Oban's rule: a completed job keeps its key for the period.
        let oban = Unique { done: true, period_us: Some(60_000_000), ..Default::default() };
        assert_eq!(judge(&arrivals, &journal, &rows, oban.clone()).violations, 1);
        // ... and not after it: job 2 came 70 s later.
        let late = [arrival(1, 1_000, 1_000), arrival(2, 70_000_000, 1_000)];
        assert!(judge(&late, &journal, &rows, oban).passed);
    }

    #[test]
    fn a_completion_sent_before_the_other_returned_is_not_a_violation() {
        // The two enqueues overlap, but job 1's completion was sent before job 2's enqueue
        // returned: the run cannot tell whether job 2's insert saw job 1 finished.
        let arrivals = [arrival(1, 1_000, 500), arrival(2, 1_200, 3_000)];
        let journal = [completed(1, 2_000)];
        let rows = [row(1, Status::Done), row(2, Status::Queued)];
        assert!(judge(&arrivals, &journal, &rows, Unique::default()).passed);
        // A job the table says is done, with no completion in the journal: released at the
        // last moment the run saw it, its enqueue's return.
        let rows = [row(1, Status::Done), row(2, Status::Queued)];
        assert!(judge(&arrivals, &[], &rows, Unique::default()).passed);
    }
}
