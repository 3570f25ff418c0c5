//! Durability across a restart, as the reference and `verify` see it.

use super::*;

/// Durability across a restart, as the reference sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Lasting {
    pub(crate) tested: bool,
    pub(crate) acknowledged_completions: u64,
    pub(crate) acknowledged_before_restart: u64,
    pub(crate) lost_completions: u64,
    pub(crate) unacknowledged_done: u64,
    pub(crate) acknowledged_enqueues: u64,
    pub(crate) lost_enqueues: u64,
    pub(crate) reexecutions: u64,
    pub(crate) ids_reissued: u64,
    pub(crate) passed: Option<bool>,
}

/// A completion is acknowledged when the worker saw it return and no failed COMMIT of its claim
/// (an `Abandoned` at or after it) undid it; it is lost when the job is not done at the end — and
/// a job missing from the table after an accepted completion *is* done (a queue that deletes what
/// it finishes). An acknowledged enqueue is lost when its job is missing and nothing in the journal
/// or the faults accounts for it. A job done whose only completions were rejected and whose last
/// letting go was a rejected completion had its acknowledgement lost (`unacknowledged_done`).
pub(crate) fn reference_durability(h: &History) -> Lasting {
    if h.restarts.is_empty() {
        let none = Lasting {
            tested: false,
            acknowledged_completions: 0,
            acknowledged_before_restart: 0,
            lost_completions: 0,
            unacknowledged_done: 0,
            acknowledged_enqueues: 0,
            lost_enqueues: 0,
            reexecutions: 0,
            ids_reissued: 0,
            passed: None,
        };
        return none;
    }
    let first_restart = *h.restarts.iter().min().unwrap();
    let status = |job: i64| h.rows.iter().find(|r| r.id == job).map(|r| r.status);
    let cancelled = |job: i64| h.faults.iter().any(|f| f.kind.name() == "cancel" && f.job == Some(job));
    let mut d = Lasting {
        tested: true,
        acknowledged_completions: 0,
        acknowledged_before_restart: 0,
        lost_completions: 0,
        unacknowledged_done: 0,
        acknowledged_enqueues: h.arrivals.len() as u64,
        lost_enqueues: 0,
        reexecutions: 0,
        ids_reissued: 0,
        passed: None,
    };
    let jobs: BTreeSet<i64> = h.journal.iter().map(|e| e.job).collect();
    for &job in &jobs {
        let events = job_events(h, job);
        let has = |k: EventKind| events.iter().any(|e| e.kind == k);
        let done = match status(job) {
            Some(s) => s == Status::Done,
            None => has(Accepted),
        };
        let ack = events.iter().find(|a| {
            a.kind == Accepted
                && !events
                    .iter()
                    .any(|x| x.kind == Abandoned && (x.worker, x.claim) == (a.worker, a.claim) && x.t_us >= a.t_us)
        });
        if let Some(a) = ack {
            d.acknowledged_completions += 1;
            d.acknowledged_before_restart += u64::from(a.t_us < first_restart);
            // A failover after the acknowledgement forgot it if the job was handed out again:
            // a claim sent after the failover came back with it.
            let forgot = h
                .failovers
                .iter()
                .map(|f| f.down_us)
                .filter(|&down| down > a.t_us)
                .filter(|&down| events.iter().any(|e| e.kind == Claimed && e.t_us - u64::from(e.dur_us) >= down))
                .min();
            d.lost_completions += u64::from(!done || forgot.is_some());
            if let Some(down) = forgot {
                d.reexecutions += events.iter().filter(|e| e.kind == Executed && e.t_us > down).count() as u64;
            }
        } else if done && !has(Accepted) {
            let last_let_go = events.iter().rev().find(|e| {
                matches!(e.kind, Accepted | Rejected | FailAccepted | FailRejected | Abandoned | HeartbeatRejected)
            });
            d.unacknowledged_done += u64::from(last_let_go.is_some_and(|e| e.kind == Rejected));
        }
    }
    for a in &h.arrivals {
        let explained = h.journal.iter().any(|e| e.job == a.job && matches!(e.kind, Accepted | FailAccepted));
        d.lost_enqueues += u64::from(status(a.job).is_none() && !explained && !cancelled(a.job));
        // Acknowledged before a failover, and the same id enqueued again after it.
        for f in &h.failovers {
            let again = h.arrivals.iter().any(|b| b.job == a.job && b.sent_us >= f.down_us);
            let reissued = a.sent_us + u64::from(a.enqueue_us) < f.down_us && again;
            d.lost_enqueues += u64::from(reissued);
            d.ids_reissued += u64::from(reissued);
        }
    }
    d.passed = Some(d.lost_completions + d.lost_enqueues == 0);
    d
}

pub(crate) fn observed_durability(h: &History) -> Lasting {
    let v = verify(&h.evidence());
    let d = &v.durability;
    Lasting {
        tested: d.tested,
        acknowledged_completions: d.acknowledged_completions,
        acknowledged_before_restart: d.acknowledged_before_restart,
        lost_completions: d.lost_completions,
        unacknowledged_done: d.unacknowledged_done,
        acknowledged_enqueues: d.acknowledged_enqueues,
        lost_enqueues: d.lost_enqueues,
        reexecutions: d.reexecutions,
        ids_reissued: d.ids_reissued,
        passed: v.checks.iter().find(|c| c.name.name() == "durability").map(|c| c.passed),
    }
}
