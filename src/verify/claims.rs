//! The claims of one job, in the database's order, with each claim's lease and the end of its
//! holder's belief that it owned the job.
//!
//! A claim's lease runs from the moment the claim was *sent* (the database may hand the job
//! out at any moment of the round trip) to the lease's end — moved by accepted heartbeats,
//! and cut short by an accepted completion or failure, which gives the job back. Two claims
//! whose leases overlap are a race: the queue handed out a job someone held. A claim sent
//! after the other's lease ended (it expired, or the job was finished or failed back into the
//! queue) is the at-least-once a lease promises. A completion whose answer was lost
//! (`CompleteUnknown`) and that, sent again, was refused had landed: it handed the job back when
//! it was first sent.

use crate::collect::{Event, EventKind};
use std::time::Duration;

#[derive(Debug, Clone, Copy)]
pub(crate) struct ClaimSpan {
    pub worker: u32,
    pub claim: u32,
    pub attempt: i32,
    /// When the claim came back.
    pub start_us: u64,
    /// When it was sent (its round trip before `start_us`; the same when not measured).
    pub sent_us: u64,
    /// Claim time (or last accepted heartbeat) plus the lease, or the accepted completion or
    /// failure that gave the job back (when it was sent), whichever came first.
    pub lease_end_us: u64,
    /// The end is an acknowledged hand-back, measured on the harness's own clock (no
    /// allowance for the server's clock is needed, as at a computed lease end).
    pub handed_back: bool,
    /// When the holder let go (completion, failure, abandon, rejected heartbeat); None = held to the end.
    pub released_us: Option<u64>,
    /// The lease's computed end, a hand-back left aside: the queue may have let the job go from
    /// here (less the tolerance) even when the holder's completion landed later.
    pub lease_until_us: u64,
}

impl ClaimSpan {
    /// Did this claim hold the job when another claim was sent at `sent_us`? Before an
    /// acknowledged hand-back, measured on the harness's clock; and before the computed lease
    /// end less `tolerance` (clocks, the queue's time resolution), after which the queue may have
    /// let the job go although the holder's completion landed later (a state-only fence).
    pub(crate) fn holds_at(&self, sent_us: u64, tolerance: u64) -> bool {
        if self.handed_back {
            sent_us < self.lease_end_us && sent_us.saturating_add(tolerance) < self.lease_until_us
        } else {
            sent_us.saturating_add(tolerance) < self.lease_end_us
        }
    }
}

/// Claims of one job ordered by attempt number (the database's order) when
/// the strategy returns one, else by the time they came back. In
/// hold-transaction mode a claim lives as long as its transaction: it ends when
/// the worker lets go (commit, or the rollback of a failed round), not at the lease.
/// How far before another claim's computed lease end a claim may be sent and still count as
/// after it: harness clocks run a little behind the server's (a quarter of the lease, at most
/// 50 ms), and agents' clocks differ by up to twice their error bound (`clock_us`, docs/agents.md).
pub(crate) fn race_tolerance(lease: Duration, clock_us: u64) -> u64 {
    (lease.as_micros() as u64 / 4).min(50_000).max(2 * clock_us)
}

/// How long a claim holds its job when nobody gives it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Held {
    /// For the lease from the claim, moved by heartbeats.
    Lease,
    /// hold-transaction mode: until the transaction ends, at most the lease.
    Transaction,
    /// A session lease (advisory locks): until the holder lets go (its connection ends with a
    /// crash); the lease's clock does not apply.
    Session,
}

impl Held {
    pub(crate) fn of(hold_transaction: bool, session_lease: bool) -> Held {
        match (session_lease, hold_transaction) {
            (true, _) => Held::Session,
            (false, true) => Held::Transaction,
            (false, false) => Held::Lease,
        }
    }
}

pub(crate) fn spans(events: &[Event], lease: Duration, hold_transaction: bool) -> Vec<ClaimSpan> {
    spans_held(events, lease, Held::of(hold_transaction, false))
}

/// [`spans`], for any way a claim holds its job.
pub(crate) fn spans_held(events: &[Event], lease: Duration, held: Held) -> Vec<ClaimSpan> {
    let lease_us = if held == Held::Session { u64::MAX / 4 } else { lease.as_micros() as u64 };
    let mut spans: Vec<ClaimSpan> = events
        .iter()
        .filter(|e| e.kind == EventKind::Claimed)
        .map(|c| ClaimSpan {
            worker: c.worker,
            claim: c.claim,
            attempt: c.attempt,
            start_us: c.t_us,
            sent_us: c.t_us.saturating_sub(u64::from(c.dur_us)),
            lease_end_us: c.t_us + lease_us,
            handed_back: false,
            released_us: None,
            lease_until_us: 0,
        })
        .collect();
    for s in &mut spans {
        let (mut handed_back, mut unknown) = (None, None);
        for e in events.iter().filter(|e| e.worker == s.worker && e.claim == s.claim) {
            if e.kind == EventKind::HeartbeatOk {
                s.lease_end_us = s.lease_end_us.max(e.t_us + lease_us);
            }
            if e.kind.ends_ownership() && s.released_us.is_none() {
                s.released_us = Some(e.t_us);
            }
            // Handed back when the accepted completion or failure was sent: from then on a claim
            // may get the job without any race (the write commits somewhere in its round trip,
            // and a claim sent during that round trip can follow it).
            if matches!(e.kind, EventKind::Accepted | EventKind::FailAccepted) && handed_back.is_none() {
                handed_back = Some(e.t_us);
            }
            // A completion whose answer was lost, then sent again and refused: the refusal says
            // the first landed (the job was done from when it was sent).
            if e.kind == EventKind::CompleteUnknown && unknown.is_none() {
                unknown = Some(e.t_us);
            }
            if e.kind == EventKind::Rejected && handed_back.is_none() {
                handed_back = unknown;
            }
        }
        s.lease_until_us = s.lease_end_us;
        if let Some(t) = handed_back.filter(|t| *t < s.lease_end_us) {
            s.lease_end_us = t.max(s.start_us);
            s.handed_back = true;
        }
    }
    if held != Held::Lease {
        for s in &mut spans {
            s.lease_end_us = s.released_us.map_or(s.lease_end_us, |r| r.min(s.lease_end_us));
        }
    }
    if spans.iter().all(|s| s.attempt >= 0) {
        spans.sort_by_key(|s| (s.attempt, s.start_us));
    }
    spans
}
