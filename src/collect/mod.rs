//! What the workers record: a per-worker journal of claims, executions and
//! completions, and per-worker counters with an HdrHistogram of claim
//! latency. Nothing here is shared while the run is hot; the runner merges
//! the workers' parts with `+=` at the end.

pub(crate) mod history;
pub(crate) mod phases;
pub(crate) mod spill;
pub(crate) mod waits;

use crate::model::errors::Statement;
pub use crate::model::fault::FaultKind;
pub use crate::model::reap::{ReapAction, ReapEvent};
use hdrhistogram::Histogram;
use spill::{Record, Spill};
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
    /// The worker sent a completion and lost its connection before the answer (`ack_lost`): it
    /// does not know whether the completion landed. `dur_us`: until the connection was cut.
    CompleteUnknown,
}

impl EventKind {
    pub const ALL: [EventKind; 10] = [
        EventKind::Claimed,
        EventKind::HeartbeatOk,
        EventKind::HeartbeatRejected,
        EventKind::Executed,
        EventKind::Accepted,
        EventKind::Rejected,
        EventKind::FailAccepted,
        EventKind::FailRejected,
        EventKind::Abandoned,
        EventKind::CompleteUnknown,
    ];

    fn index(self) -> u8 {
        EventKind::ALL.iter().position(|k| *k == self).expect("listed") as u8
    }

    /// Its name in the history file (`history.csv.gz`, schema/history.schema.json).
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Claimed => "claim",
            EventKind::HeartbeatOk => "heartbeat_accepted",
            EventKind::HeartbeatRejected => "heartbeat_rejected",
            EventKind::Executed => "execute",
            EventKind::Accepted => "complete_accepted",
            EventKind::Rejected => "complete_rejected",
            EventKind::FailAccepted => "fail_accepted",
            EventKind::FailRejected => "fail_rejected",
            EventKind::Abandoned => "abandon",
            EventKind::CompleteUnknown => "complete_unknown",
        }
    }

    pub fn from_name(name: &str) -> Option<EventKind> {
        EventKind::ALL.into_iter().find(|k| k.name() == name)
    }

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
    /// How long it took: a claim's round trip (it was sent at `t_us - dur_us`), an
    /// execution's work (it started then), a completion's or failure's round trip (it
    /// returned at `t_us + dur_us`); 0 when not measured.
    pub dur_us: u32,
    /// The claim's token, as 64 bits (the first 8 bytes of a uuid; 0: none).
    pub token: u64,
}

/// An injected fault, as it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultEvent {
    pub t_us: u64,
    pub kind: FaultKind,
    pub worker: Option<u32>,
    /// The job in the worker's hands, for faults that hit one.
    pub job: Option<i64>,
}

/// Latencies a worker measures itself, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Latency {
    /// The claim statement (select + claim for a two-statement strategy).
    Claim,
    /// The claim's whole transaction: BEGIN to COMMIT in hold-transaction mode,
    /// the claim statement in lease mode.
    ClaimTx,
    Work,
    Complete,
    /// Waiting for a pooled connection (`workers.pool`); kept as a histogram only.
    Acquire,
}

/// Per-second counts, indexed by whole seconds since the start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Second {
    pub claims: u32,
    pub empty_claims: u32,
    /// `stop = "drained"` checks (is anything left?) sent by idle workers.
    pub drained_checks: u32,
    pub executions: u32,
    pub completions: u32,
}

pub(crate) fn histogram() -> Histogram<u64> {
    // 1 µs to 1 h at 3 significant digits; values above are clamped.
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid histogram bounds")
}

impl Event {
    /// The order the checkers read the journal in: by job, then time, then kind.
    pub fn order(&self) -> (i64, u64, EventKind) {
        (self.job, self.t_us, self.kind)
    }
}

impl Record for Event {
    const SIZE: usize = 41;
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.t_us.to_le_bytes());
        out.extend_from_slice(&self.job.to_le_bytes());
        out.extend_from_slice(&self.attempt.to_le_bytes());
        out.extend_from_slice(&self.worker.to_le_bytes());
        out.extend_from_slice(&self.claim.to_le_bytes());
        out.push(self.kind.index());
        out.extend_from_slice(&self.dur_us.to_le_bytes());
        out.extend_from_slice(&self.token.to_le_bytes());
    }
    fn decode(b: &[u8]) -> Self {
        Event {
            t_us: u64::from_le_bytes(b[0..8].try_into().unwrap()),
            job: i64::from_le_bytes(b[8..16].try_into().unwrap()),
            attempt: i32::from_le_bytes(b[16..20].try_into().unwrap()),
            worker: u32::from_le_bytes(b[20..24].try_into().unwrap()),
            claim: u32::from_le_bytes(b[24..28].try_into().unwrap()),
            kind: EventKind::ALL[b[28] as usize],
            dur_us: u32::from_le_bytes(b[29..33].try_into().unwrap()),
            token: u64::from_le_bytes(b[33..41].try_into().unwrap()),
        }
    }
}

/// One measured latency: when it was taken (ms since the run's start) and how long it was
/// (µs). Ordered by time first, as the time series and the interval logs read them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Sample {
    pub at_ms: u32,
    pub us: u32,
}

/// Latency samples, one list per measured latency.
#[derive(Debug, Default)]
pub struct Samples {
    pub claim: Vec<Sample>,
    pub tx: Vec<Sample>,
    pub work: Vec<Sample>,
    pub complete: Vec<Sample>,
}

/// Counters and latency histograms of one worker (or, merged, of all).
#[derive(Debug)]
pub struct WorkerStats {
    pub claims: u64,
    pub empty_claims: u64,
    pub claimed_jobs: u64,
    pub reconnects: u64,
    /// Connection attempts made while reconnecting (successful or not).
    pub reconnect_attempts: u64,
    /// (lost, restored) µs after the start, one per reconnect; restored = when the worker gave up
    /// if it never got a connection back.
    pub outages: Vec<(u64, u64)>,
    pub heartbeats: u64,
    /// `stop = "drained"` checks sent after an empty claim.
    pub drained_checks: u64,
    /// Notifications consumed by idle waits (wakeup = "listen").
    pub notifications: u64,
    pub errors: BTreeMap<String, u64>,
    /// The same errors by statement and code (`model::errors::key`: `claim:40001`).
    pub errors_at: BTreeMap<String, u64>,
    /// The first message of each `errors_at` key.
    pub first_errors: BTreeMap<String, String>,
    /// The statement the worker is running now: where an error it records came from.
    pub at: Statement,
    /// (job, its `[result] exclusion_key`) for every claimed job of an adapter that declares one.
    pub exclusion_keys: Vec<(i64, String)>,
    pub claim_latency: Histogram<u64>,
    pub claim_tx_latency: Histogram<u64>,
    pub work_latency: Histogram<u64>,
    pub complete_latency: Histogram<u64>,
    /// Waits for a pooled connection (`workers.pool`; empty with a connection per worker).
    pub acquire_latency: Histogram<u64>,
    /// Every claim statement's latency sample: the claim-latency time series and interval log.
    /// Spilled to disk as they grow; `take_samples` reads them back.
    pub claim_samples: Spill<Sample>,
    /// The same for claim transactions, work and completions (their interval logs).
    pub tx_samples: Spill<Sample>,
    pub work_samples: Spill<Sample>,
    pub complete_samples: Spill<Sample>,
    pub per_second: Vec<Second>,
}

impl Default for WorkerStats {
    fn default() -> Self {
        WorkerStats {
            claims: 0,
            empty_claims: 0,
            claimed_jobs: 0,
            reconnects: 0,
            reconnect_attempts: 0,
            outages: Vec::new(),
            heartbeats: 0,
            drained_checks: 0,
            notifications: 0,
            errors: BTreeMap::new(),
            errors_at: BTreeMap::new(),
            first_errors: BTreeMap::new(),
            at: Statement::Other,
            exclusion_keys: Vec::new(),
            claim_latency: histogram(),
            claim_tx_latency: histogram(),
            work_latency: histogram(),
            complete_latency: histogram(),
            acquire_latency: histogram(),
            claim_samples: Spill::new(),
            tx_samples: Spill::new(),
            work_samples: Spill::new(),
            complete_samples: Spill::new(),
            per_second: Vec::new(),
        }
    }
}

impl WorkerStats {
    /// Records a latency measured at `t_us` after the start.
    pub fn record(&mut self, which: Latency, t_us: u64, micros: u64) {
        let v = micros.max(1);
        let sample = Sample { at_ms: (t_us / 1000) as u32, us: v.min(u64::from(u32::MAX)) as u32 };
        let (hist, samples) = match which {
            Latency::Claim => (&mut self.claim_latency, &mut self.claim_samples),
            Latency::ClaimTx => (&mut self.claim_tx_latency, &mut self.tx_samples),
            Latency::Work => (&mut self.work_latency, &mut self.work_samples),
            Latency::Complete => (&mut self.complete_latency, &mut self.complete_samples),
            Latency::Acquire => {
                self.acquire_latency.saturating_record(v);
                return;
            }
        };
        hist.saturating_record(v);
        samples.push(sample);
    }

    /// The counters of the second `t_us` falls in.
    pub fn second(&mut self, t_us: u64) -> &mut Second {
        let i = (t_us / 1_000_000) as usize;
        if self.per_second.len() <= i {
            self.per_second.resize(i + 1, Second::default());
        }
        &mut self.per_second[i]
    }

    /// An error of the statement the worker is running (`at`), with its message.
    pub fn record_error(&mut self, code: &str, message: &str) {
        self.record_errors(self.at, code, message, 1);
    }

    /// `n` errors of statement `at` with this code, the first with this message.
    pub fn record_errors(&mut self, at: Statement, code: &str, message: &str, n: u64) {
        *self.errors.entry(code.to_string()).or_default() += n;
        let key = crate::model::errors::key(at, code);
        if !self.first_errors.contains_key(&key) {
            self.first_errors.insert(key.clone(), message.to_string());
        }
        *self.errors_at.entry(key).or_default() += n;
    }

    /// Moves this worker's latency samples (read back from disk) onto the end of `all`.
    pub fn take_samples(&mut self, all: &mut Samples) {
        for (mine, to) in [
            (&mut self.claim_samples, &mut all.claim),
            (&mut self.tx_samples, &mut all.tx),
            (&mut self.work_samples, &mut all.work),
            (&mut self.complete_samples, &mut all.complete),
        ] {
            to.extend(std::mem::take(mine).into_vec());
        }
    }
}

/// Counters, histograms and per-second counts add up; samples move with `take_samples`.
impl AddAssign<&WorkerStats> for WorkerStats {
    fn add_assign(&mut self, other: &WorkerStats) {
        self.claims += other.claims;
        self.empty_claims += other.empty_claims;
        self.claimed_jobs += other.claimed_jobs;
        self.reconnects += other.reconnects;
        self.reconnect_attempts += other.reconnect_attempts;
        self.outages.extend_from_slice(&other.outages);
        self.heartbeats += other.heartbeats;
        self.drained_checks += other.drained_checks;
        self.notifications += other.notifications;
        for (k, v) in &other.errors {
            *self.errors.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &other.errors_at {
            *self.errors_at.entry(k.clone()).or_default() += v;
        }
        for (k, m) in &other.first_errors {
            self.first_errors.entry(k.clone()).or_insert_with(|| m.clone());
        }
        self.exclusion_keys.extend_from_slice(&other.exclusion_keys);
        for (mine, theirs) in [
            (&mut self.claim_latency, &other.claim_latency),
            (&mut self.claim_tx_latency, &other.claim_tx_latency),
            (&mut self.work_latency, &other.work_latency),
            (&mut self.complete_latency, &other.complete_latency),
            (&mut self.acquire_latency, &other.acquire_latency),
        ] {
            mine.add(theirs).expect("histograms share bounds");
        }
        if self.per_second.len() < other.per_second.len() {
            self.per_second.resize(other.per_second.len(), Second::default());
        }
        for (a, b) in self.per_second.iter_mut().zip(&other.per_second) {
            a.claims += b.claims;
            a.empty_claims += b.empty_claims;
            a.drained_checks += b.drained_checks;
            a.executions += b.executions;
            a.completions += b.completions;
        }
    }
}

impl Record for Arrival {
    const SIZE: usize = 30;
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.job.to_le_bytes());
        out.extend_from_slice(&self.class.to_le_bytes());
        out.extend_from_slice(&self.intended_us.to_le_bytes());
        out.extend_from_slice(&self.sent_us.to_le_bytes());
        out.extend_from_slice(&self.enqueue_us.to_le_bytes());
    }
    fn decode(b: &[u8]) -> Self {
        Arrival {
            job: i64::from_le_bytes(b[0..8].try_into().unwrap()),
            class: u16::from_le_bytes(b[8..10].try_into().unwrap()),
            intended_us: u64::from_le_bytes(b[10..18].try_into().unwrap()),
            sent_us: u64::from_le_bytes(b[18..26].try_into().unwrap()),
            enqueue_us: u32::from_le_bytes(b[26..30].try_into().unwrap()),
        }
    }
}

/// One open-model arrival: when the job was meant to be enqueued and when it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    pub job: i64,
    /// 1 + the index into the plan's classes (0 is the preloaded "default" class).
    pub class: u16,
    pub intended_us: u64,
    pub sent_us: u64,
    /// How long the enqueue took (the INSERT, or the whole transaction with a business row).
    pub enqueue_us: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_and_arrivals_survive_their_binary_form() {
        for (i, kind) in EventKind::ALL.into_iter().enumerate() {
            let e = Event {
                t_us: u64::MAX - i as u64,
                job: -7 - i as i64,
                attempt: -1,
                worker: 9,
                claim: 1 << 31,
                kind,
                dur_us: 7,
                token: u64::MAX,
            };
            let mut b = Vec::new();
            e.encode(&mut b);
            assert_eq!((b.len(), Event::decode(&b)), (Event::SIZE, e));
        }
        let a = Arrival { job: 1 << 40, class: 3, intended_us: 5, sent_us: 6, enqueue_us: u32::MAX };
        let mut b = Vec::new();
        a.encode(&mut b);
        assert_eq!((b.len(), Arrival::decode(&b)), (Arrival::SIZE, a));
    }

    #[test]
    fn merging_adds_counts_and_histograms() {
        let mut a = WorkerStats::default();
        let mut b = WorkerStats::default();
        a.claims = 2;
        a.record(Latency::Claim, 10, 100);
        a.second(2_500_000).claims += 1;
        b.claims = 3;
        b.record(Latency::Claim, 20, 300);
        b.second(500_000).claims += 2;
        b.record_error("40P01", "deadlock detected");
        a += &b;
        assert_eq!(a.claims, 5);
        assert_eq!(a.claim_latency.len(), 2);
        assert_eq!(a.errors["40P01"], 1);
        assert!(a.claim_latency.max() >= 300);
        assert_eq!(a.claim_samples.len(), 1, "samples are not merged by +=");
        let mut all = Samples::default();
        a.take_samples(&mut all);
        b.take_samples(&mut all);
        assert_eq!(all.claim.len(), 2);
        assert_eq!(a.per_second.iter().map(|s| s.claims).collect::<Vec<_>>(), [2, 0, 1]);
    }
}
