//! Faults and recovery: for each fault that hit a job, the time from the
//! fault to that job's next accepted completion. A job never completed
//! after its fault is unrecovered (it may legitimately be dead). And
//! cancellations: a job cancelled while waiting must never run afterwards.

use super::examples;
use crate::collect::{Event, EventKind, FaultEvent, FaultKind};
use crate::model::check::Check;
use crate::model::summary::{CheckResult, Faults};

fn events_of<'a>(per_job: &[&'a [Event]], job: i64) -> &'a [Event] {
    per_job.binary_search_by_key(&job, |events| events[0].job).map_or(&[], |i| per_job[i])
}

/// Jobs executed after their cancellation was accepted (None when nothing was cancelled).
pub(super) fn cancel_check(faults: &[FaultEvent], per_job: &[&[Event]]) -> Option<CheckResult> {
    let bad: Vec<i64> = faults
        .iter()
        .filter(|f| f.kind == FaultKind::Cancel)
        .filter_map(|f| {
            f.job.filter(|&j| events_of(per_job, j).iter().any(|e| e.kind == EventKind::Executed && e.t_us > f.t_us))
        })
        .collect();
    let cancelled = faults.iter().filter(|f| f.kind == FaultKind::Cancel).count();
    if cancelled == 0 {
        return None;
    }
    Some(CheckResult {
        name: Check::CancelledJobsNotRun,
        passed: bad.is_empty(),
        violations: bad.len() as u64,
        detail: format!(
            "{} cancelled while waiting, {} of them executed afterwards",
            crate::model::words::count(cancelled as u64, "job"),
            bad.len()
        ),
        examples: examples(bad),
    })
}

pub(super) fn check(faults: &[FaultEvent], per_job: &[&[Event]]) -> Faults {
    let mut f = Faults::default();
    for k in FaultKind::ALL {
        f.by_kind.insert(k, 0);
    }
    for ev in faults {
        *f.by_kind.entry(ev.kind).or_default() += 1;
        f.injected += 1;
        let Some(job) = ev.job.filter(|_| ev.kind != FaultKind::Cancel) else { continue };
        match recovered_after(ev, events_of(per_job, job)) {
            Some(d) => {
                let ms = (d.t_us - ev.t_us) as f64 / 1000.0;
                f.recovered += 1;
                f.recovery_ms_max = f.recovery_ms_max.max(ms);
                f.recovery_ms_total += ms;
            }
            None => f.unrecovered += 1,
        }
    }
    if f.recovered > 0 {
        f.recovery_ms_mean = f.recovery_ms_total / f.recovered as f64;
    }
    f
}

/// The job's first accepted completion at or after the fault, if any (`events`: the job's).
pub(super) fn recovered_after<'a>(fault: &FaultEvent, events: &'a [Event]) -> Option<&'a Event> {
    events.iter().find(|e| e.kind == EventKind::Accepted && e.t_us >= fault.t_us)
}
