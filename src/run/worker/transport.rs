//! What a worker's round needs from whoever carries its statements to PostgreSQL: a claim, a
//! write (heartbeat, complete, fail), the drained check and the effects insert, and what to do
//! after an error or a crash. The round itself (claim → work and heartbeats → effect →
//! complete or fail, with the fault points around it) is written once, in `worker/mod.rs` and
//! `worker/job.rs`; a transport only encodes the values it is handed and sends them.
//!
//! Two transports today: [`super::direct::Direct`], one connection of its own per worker with
//! every statement prepared (the fast path, pgbench's shape), and `run::pool::Pooled`, a step
//! at a time on a connection taken from a shared `sqlx::PgPool`, as a Rust service holds its
//! queue.
//!
//! Each declares what it can do ([`Transport::KIND`], whose capabilities are listed in
//! `model::transport`): scenario validation refuses a scenario that asks for more, naming the
//! capability, and a step asked of a transport without its capability ends the worker with
//! [`WorkerFailure::Lacks`] rather than a panic. The trait speaks the round's own types
//! (values, jobs, wake-ups); a transport's client library stays inside it. A new transport:
//! implement this trait, declare its capabilities, add a column to tests/conformance.rs.

use super::Shared;
use super::WorkerFailure;
use crate::collect::WorkerStats;
use crate::model::transport::{Capability, TransportKind};
use crate::run::idle::Wakeups;
use crate::run::values::{Claimed, Values};
use std::time::Duration;

/// Why a round stopped short. `E` is the transport's own error, already counted when it is
/// handed back; the run loop passes it to [`Transport::recover`].
pub(crate) enum Halt<E> {
    Db(E),
    Crash {
        respawn_after: Duration,
        new_identity: bool,
    },
    Stopped,
    /// The step needs a capability the transport does not declare (validation refuses such
    /// a scenario, so this is a transport that does less than it declares).
    Lacks(Capability),
}

impl<E> From<E> for Halt<E> {
    fn from(e: E) -> Self {
        Halt::Db(e)
    }
}

/// A write step of the round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Write {
    Heartbeat,
    Complete,
    Fail,
}

/// A claim's jobs, when it was sent (µs since the start) and how long it took (µs).
pub(crate) struct Claim {
    pub jobs: Vec<Claimed>,
    pub t0_us: u64,
    pub took_us: u64,
}

/// A write's verdict, when it was sent (µs since the start) and how long it took (µs).
pub(crate) struct Sent {
    pub accepted: bool,
    pub t_us: u64,
    pub took_us: u64,
    /// A heartbeat that renewed its fence: the new token (later writes bind it); a failure
    /// that re-inserted the job: its new id.
    pub token: Option<crate::adapter::keys::Key>,
}

/// What a transport may touch of its worker: the run's shared state, the worker's current
/// identity and name, its slot, and its counters.
pub(crate) struct Ctx<'a> {
    pub sh: &'a Shared,
    pub id: u32,
    pub name: &'a str,
    pub slot: u32,
    pub stats: &'a mut WorkerStats,
}

impl<'a> Ctx<'a> {
    /// µs since the run's start.
    pub(crate) fn now_us(&self) -> u64 {
        self.sh.faults.start.elapsed().as_micros() as u64
    }

    /// µs from the run's start to `t` (when a statement was sent).
    pub(crate) fn since_start(&self, t: std::time::Instant) -> u64 {
        t.saturating_duration_since(self.sh.faults.start).as_micros() as u64
    }

    /// The values for one statement of this worker (not tied to `self`'s borrow, so the
    /// transport can take `&mut self` beside them).
    pub(crate) fn values(&self, job: Option<&'a Claimed>, backoff_secs: f64, error: &'a str) -> Values<'a> {
        let sh: &'a Shared = self.sh;
        let mut v = Values::new(&sh.plan);
        v.worker = self.name;
        v.pool = sh.plan.workers.group_of(self.slot).unwrap_or("");
        v.job = job;
        v.backoff_secs = backoff_secs;
        v.error = error;
        v
    }
}

/// Executions not yet in the effects table: the journal's numbers and attempts, and for an
/// adapter the queue's own ids as text.
#[derive(Debug, Default)]
pub(crate) struct Effects {
    pub ids: Vec<i64>,
    pub attempts: Vec<i32>,
    pub keys: Vec<String>,
    /// The pending batch's name once a write of it was tried (0: none tried yet).
    pub batch: i64,
    /// A write of this batch failed, so it may have landed: write it again in place of itself.
    pub again: bool,
    sent: i64,
}

impl Effects {
    pub(crate) fn push(&mut self, job: &Claimed, keys: bool) {
        self.ids.push(job.id);
        self.attempts.push(job.attempt);
        if keys {
            self.keys.push(job.key.show());
        }
    }

    pub(crate) fn clear(&mut self) {
        self.ids.clear();
        self.attempts.clear();
        self.keys.clear();
        self.batch = 0;
        self.again = false;
    }

    /// Names the pending batch for a write (the same name on every try of it): the worker's
    /// identity in the high bits, its count of batches in the low 40.
    pub(crate) fn name_batch(&mut self, worker: u32) -> i64 {
        if self.batch == 0 {
            self.sent += 1;
            self.batch = (i64::from(worker) << 40) | (self.sent & ((1 << 40) - 1));
        }
        self.batch
    }
}

/// Whoever carries a worker's statements. Every method that fails hands back its error
/// counted (under its SQLSTATE, `io` or `acquire_timeout`); the round decides what follows.
pub(crate) trait Transport {
    type Error;
    /// Which transport this is, and so what it declares it can do
    /// (`TransportKind::capabilities`).
    const KIND: TransportKind;

    /// `BEGIN` of a hold-transaction round ([`Capability::HoldTransaction`]).
    async fn begin(&mut self, _cx: &mut Ctx<'_>) -> Result<(), Halt<Self::Error>> {
        Err(Halt::Lacks(Capability::HoldTransaction))
    }
    /// `COMMIT` of a hold-transaction round.
    async fn commit(&mut self, _cx: &mut Ctx<'_>) -> Result<(), Halt<Self::Error>> {
        Err(Halt::Lacks(Capability::HoldTransaction))
    }
    /// The select (if the adapter has one) and the claim, its rows as jobs.
    async fn claim(&mut self, cx: &mut Ctx<'_>, v: Values<'_>, in_tx: bool) -> Result<Claim, Halt<Self::Error>>;
    /// A heartbeat, completion or failure, judged by the step's rule.
    async fn write(
        &mut self,
        cx: &mut Ctx<'_>,
        what: Write,
        v: &Values<'_>,
        in_tx: bool,
    ) -> Result<Sent, Halt<Self::Error>>;
    /// `observe.remaining`: is anything left?
    async fn anything_left(&mut self, cx: &mut Ctx<'_>, v: &Values<'_>) -> Result<bool, Halt<Self::Error>>;
    /// The pending executions into the effects table, cleared once written. `last`: the run's
    /// final flush (it waits out a busy pool).
    async fn flush_effects(
        &mut self,
        cx: &mut Ctx<'_>,
        effects: &mut Effects,
        last: bool,
    ) -> Result<(), Halt<Self::Error>>;
    /// After an error: reconnect when the connection is gone, roll back a held transaction,
    /// or wait a moment; Err when the database is lost (or the run stopped meanwhile).
    async fn recover(&mut self, cx: &mut Ctx<'_>, e: &Self::Error, hold: bool) -> Result<(), WorkerFailure>;
    /// Whether a completion or failure that failed with `e` may be sent again (`resends` times
    /// so far): the direct transport once after a restored connection, the pool after an
    /// acquire timeout.
    fn resend(&self, e: &Self::Error, resends: u32, hold: bool) -> bool;
    /// A crash: the worker's connection goes without a word.
    fn crash(&mut self, cx: &mut Ctx<'_>);
    /// After a crash's pause: the worker's connection back.
    async fn reopen(&mut self, cx: &mut Ctx<'_>) -> Result<(), WorkerFailure>;
    /// Wake-ups for an idle worker that LISTENs ([`Capability::Listen`]; None: it does not).
    fn wakeups(&mut self) -> Option<&mut Wakeups> {
        None
    }
    /// Whether the worker's connection is open (the last effects flush needs one).
    fn is_open(&self) -> bool;
}

#[cfg(test)]
mod tests {
    use super::Effects;

    #[test]
    fn a_batch_keeps_its_name_until_written_and_names_differ_between_workers() {
        let mut e = Effects::default();
        let first = e.name_batch(3);
        assert_eq!(e.name_batch(3), first, "a retry of the same batch keeps its name");
        e.clear();
        let second = e.name_batch(3);
        assert_ne!(second, first, "the next batch has a name of its own");
        assert_ne!(Effects::default().name_batch(4), first, "another worker's first batch too");
        assert!(first > 0 && second > 0, "0 means none named");
    }
}
