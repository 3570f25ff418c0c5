//! `progress`: ready work was not executed (the rule is in the parent module's documentation).

use super::{STALL_LEASES, STALL_WORKS, run_end, secs, stall_threshold};
use crate::collect::{Event, EventKind, FaultKind};
use crate::model::check::Check;
use crate::model::records::Status;
use crate::model::summary::CheckResult;
use crate::model::words::count_as;
use crate::verify::{Evidence, examples};
use std::collections::HashMap;

/// One job's wait for its first claim: (ready, taken), µs.
type Wait = (u64, u64, i64);

/// Every job's wait for its first claim, as far as the evidence tells.
fn waits(e: &Evidence, per_job: &[&[Event]], end: u64) -> Vec<Wait> {
    let ready: HashMap<i64, u64> = e.arrivals.iter().map(|a| (a.job, a.sent_us + u64::from(a.enqueue_us))).collect();
    let mut cancelled: HashMap<i64, u64> = HashMap::new();
    for f in e.faults.iter().filter(|f| f.kind == FaultKind::Cancel) {
        if let Some(j) = f.job {
            let t = cancelled.entry(j).or_insert(f.t_us);
            *t = (*t).min(f.t_us);
        }
    }
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for events in per_job {
        let job = events[0].job;
        seen.insert(job);
        let taken = events
            .iter()
            .filter_map(|x| match x.kind {
                EventKind::Claimed => Some(x.t_us.saturating_sub(u64::from(x.dur_us))),
                EventKind::Executed => Some(x.t_us.saturating_sub(u64::from(x.dur_us))),
                EventKind::Accepted | EventKind::FailAccepted => Some(x.t_us),
                _ => None,
            })
            .chain(cancelled.get(&job).copied())
            .min()
            .unwrap_or(end);
        let at = ready.get(&job).copied().unwrap_or(0);
        if taken > at {
            out.push((at, taken, job));
        }
    }
    // Jobs the journal never saw: still waiting at the end when the table says `queued`.
    for row in e.final_jobs.iter().filter(|r| !seen.contains(&r.id) && r.status == Status::Queued) {
        let at = ready.get(&row.id).copied().unwrap_or(0);
        let taken = cancelled.get(&row.id).copied().unwrap_or(end);
        if taken > at {
            out.push((at, taken, row.id));
        }
    }
    out
}

/// `progress`.
pub(super) fn progress(e: &Evidence, per_job: &[&[Event]]) -> CheckResult {
    let end = run_end(e);
    let mut runs: Vec<u64> = e.journal.iter().filter(|x| x.kind == EventKind::Executed).map(|x| x.t_us).collect();
    runs.sort_unstable();
    let longest_work = e.journal.iter().filter(|x| x.kind == EventKind::Executed).map(|x| x.dur_us).max();
    let threshold = stall_threshold(e.lease, u64::from(longest_work.unwrap_or(0)));
    let mut waits = waits(e, per_job, end);
    waits.sort_unstable();
    let name = Check::Progress;
    if runs.is_empty() {
        let waited: Vec<i64> = waits.iter().map(|w| w.2).collect();
        let n = u64::from(e.enqueued > 0 || !waited.is_empty());
        let detail = if n == 0 {
            "nothing was enqueued and nothing executed".to_string()
        } else {
            format!(
                "nothing was executed in {:.1} s while {} enqueued ({} waiting for a first claim)",
                secs(end),
                count_as(e.enqueued, "job was", "jobs were"),
                waited.len()
            )
        };
        return CheckResult { name, passed: n == 0, violations: n, detail, examples: examples(waited) };
    }
    // The stretches in which some job was waiting, merged; in each, the gaps between executions.
    let mut stalls: Vec<(u64, u64)> = Vec::new();
    let mut longest = (0u64, 0u64);
    let mut i = 0;
    while i < waits.len() {
        let (from, mut to) = (waits[i].0, waits[i].1);
        while i < waits.len() && waits[i].0 <= to {
            to = to.max(waits[i].1);
            i += 1;
        }
        let inside = runs.partition_point(|&t| t <= from)..runs.partition_point(|&t| t < to);
        let marks: Vec<u64> =
            std::iter::once(from).chain(runs[inside].iter().copied()).chain(std::iter::once(to)).collect();
        for w in marks.windows(2) {
            let gap = (w[0], w[1]);
            if gap.1 - gap.0 > longest.1 - longest.0 {
                longest = gap;
            }
            if gap.1 - gap.0 > threshold {
                stalls.push(gap);
            }
        }
    }
    let n = stalls.len() as u64;
    let worst = stalls.iter().max_by_key(|s| s.1 - s.0).copied().unwrap_or(longest);
    let during: Vec<i64> = if n == 0 {
        Vec::new()
    } else {
        waits.iter().filter(|w| w.0 <= worst.0 && w.1 >= worst.1).map(|w| w.2).collect()
    };
    let detail = format!(
        "{} without an execution longer than {:.1} s while work was ready (the largest of 10 s, {STALL_LEASES} leases, \
         {STALL_WORKS} × the longest work); the longest: {:.1} s, from {:.1} s to {:.1} s",
        count_as(n, "stretch", "stretches"),
        secs(threshold),
        secs(worst.1 - worst.0),
        secs(worst.0),
        secs(worst.1)
    );
    CheckResult { name, passed: n == 0, violations: n, detail, examples: examples(during) }
}
