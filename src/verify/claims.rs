//! The claims of one job, in the database's order, with each claim's
//! lease end and the end of its holder's belief that it owned the job.

use crate::collect::{Event, EventKind};
use std::time::Duration;

#[derive(Debug, Clone, Copy)]
pub struct ClaimSpan {
    pub worker: u32,
    pub claim: u32,
    pub attempt: i32,
    pub start_us: u64,
    /// Claim time (or last accepted heartbeat) plus the lease.
    pub lease_end_us: u64,
    /// When the holder let go (completion, failure, abandon, rejected heartbeat); None = held to the end.
    pub released_us: Option<u64>,
}

/// Claims of one job ordered by attempt number (the database's order) when
/// the strategy returns one, else by the time they came back. In
/// hold-transaction mode a claim lives as long as its transaction: it ends when
/// the worker lets go (commit, or the rollback of a failed round), not at the lease.
pub fn spans(events: &[Event], lease: Duration, hold_transaction: bool) -> Vec<ClaimSpan> {
    let lease_us = lease.as_micros() as u64;
    let mut spans: Vec<ClaimSpan> = events
        .iter()
        .filter(|e| e.kind == EventKind::Claimed)
        .map(|c| ClaimSpan {
            worker: c.worker,
            claim: c.claim,
            attempt: c.attempt,
            start_us: c.t_us,
            lease_end_us: c.t_us + lease_us,
            released_us: None,
        })
        .collect();
    for s in &mut spans {
        for e in events.iter().filter(|e| e.worker == s.worker && e.claim == s.claim) {
            if e.kind == EventKind::HeartbeatOk {
                s.lease_end_us = s.lease_end_us.max(e.t_us + lease_us);
            }
            if e.kind.ends_ownership() && s.released_us.is_none() {
                s.released_us = Some(e.t_us);
            }
        }
    }
    if hold_transaction {
        for s in &mut spans {
            s.lease_end_us = s.released_us.map_or(s.lease_end_us, |r| r.min(s.lease_end_us));
        }
    }
    if spans.iter().all(|s| s.attempt >= 0) {
        spans.sort_by_key(|s| (s.attempt, s.start_us));
    }
    spans
}
