//! What the workers record: a per-worker journal of claims, executions and
//! completions, and per-worker counters with an HdrHistogram of claim
//! latency. Nothing here is shared while the run is hot; the runner merges
//! the workers' parts with `+=` at the end.

use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::ops::AddAssign;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum EventKind {
    /// The claim returned this job to this worker (recorded after it returned).
    Claimed,
    /// A heartbeat extended the lease.
    HeartbeatOk,
    /// A heartbeat changed nothing (0 rows): the job is no longer ours.
    HeartbeatRejected,
    /// The worker performed the job's external side effect.
    Executed,
    /// The worker sent a completion and it updated the row.
    Accepted,
    /// The worker sent a completion and it changed nothing (0 rows).
    Rejected,
    /// The worker recorded a failure (retry or dead) and it updated the row.
    FailAccepted,
    /// The worker recorded a failure and it changed nothing.
    FailRejected,
    /// The worker let go of the job without finishing it (crash, lost lease, lost connection, interrupt).
    Abandoned,
}

impl EventKind {
    /// Does this event end the worker's belief that it owns the job?
    pub fn ends_ownership(self) -> bool {
        matches!(
            self,
            EventKind::Accepted
                | EventKind::Rejected
                | EventKind::FailAccepted
                | EventKind::FailRejected
                | EventKind::Abandoned
                | EventKind::HeartbeatRejected
        )
    }
}

/// One journal entry. `t_us` counts from the start of the run; a statement's
/// time is when it was sent, a claim's when it came back. `(worker, claim)`
/// names one claim: `claim` counts the worker's claimed jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    pub t_us: u64,
    pub job: i64,
    /// The attempt number the claim returned (-1 if the strategy returns none).
    pub attempt: i32,
    pub worker: u32,
    pub claim: u32,
    pub kind: EventKind,
}

/// An injected fault, as it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultEvent {
    pub t_us: u64,
    pub kind: &'static str,
    pub worker: Option<u32>,
    /// The job in the worker's hands, for faults that hit one.
    pub job: Option<i64>,
}

/// Counters and the claim-latency histogram of one worker (or, merged, of all).
#[derive(Debug, Clone)]
pub struct WorkerStats {
    pub claims: u64,
    pub empty_claims: u64,
    pub claimed_jobs: u64,
    pub reconnects: u64,
    pub heartbeats: u64,
    pub errors: BTreeMap<String, u64>,
    /// Claim statement latency in microseconds.
    pub claim_latency: Histogram<u64>,
}

impl Default for WorkerStats {
    fn default() -> Self {
        WorkerStats {
            claims: 0,
            empty_claims: 0,
            claimed_jobs: 0,
            reconnects: 0,
            heartbeats: 0,
            errors: BTreeMap::new(),
            // 1 µs to 1 h at 3 significant digits; values above are clamped.
            claim_latency: Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid histogram bounds"),
        }
    }
}

impl WorkerStats {
    pub fn record_claim_latency(&mut self, micros: u64) {
        self.claim_latency.saturating_record(micros.max(1));
    }

    pub fn record_error(&mut self, code: &str) {
        *self.errors.entry(code.to_string()).or_default() += 1;
    }
}

impl AddAssign<&WorkerStats> for WorkerStats {
    fn add_assign(&mut self, other: &WorkerStats) {
        self.claims += other.claims;
        self.empty_claims += other.empty_claims;
        self.claimed_jobs += other.claimed_jobs;
        self.reconnects += other.reconnects;
        self.heartbeats += other.heartbeats;
        for (k, v) in &other.errors {
            *self.errors.entry(k.clone()).or_default() += v;
        }
        self.claim_latency.add(&other.claim_latency).expect("histograms share bounds");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_adds_counts_and_histograms() {
        let mut a = WorkerStats::default();
        let mut b = WorkerStats::default();
        a.claims = 2;
        a.record_claim_latency(100);
        b.claims = 3;
        b.record_claim_latency(300);
        b.record_error("40P01");
        a += &b;
        assert_eq!(a.claims, 5);
        assert_eq!(a.claim_latency.len(), 2);
        assert_eq!(a.errors["40P01"], 1);
        assert!(a.claim_latency.max() >= 300);
    }
}
