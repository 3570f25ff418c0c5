//! What a worker does when a claim comes back empty. An idle queue still
//! costs queries: a worker that polls every 5 ms sends ~200 empty claims a
//! second, each a scan of the ready index. Two ways to spend less:
//!
//! - **poll** with a backoff schedule (`["100ms", "250ms", "2s"]`): each
//!   empty claim in a row sleeps the next step, the last step repeats, a
//!   claim that returns work starts over. Full jitter draws each sleep from
//!   [0, step] so workers that went idle together do not poll in lockstep.
//! - **listen**: an insert into `jobs` fires `NOTIFY <run schema>` (the
//!   trigger in migrations/002_notify.sql, installed only for such runs);
//!   the worker LISTENs on its own connection and sleeps until a
//!   notification or `fallback_poll`. The fallback is needed: NOTIFY only
//!   fires on inserts, not for retries that become due or reclaimed leases,
//!   and a notification sent while the connection was down is gone.
//!
//! NOTIFY is transactional: one sent inside a transaction that rolls back
//! is never delivered. `probe_rollback` shows it at the start of a listen run.

use crate::db::Endpoint;
use crate::db::sql;
use crate::error::SessionFailure;
use crate::scenario::plan::{Idle, Wakeup};
use rand::{Rng, RngExt};
use std::time::Duration;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_postgres::Notification;
use tokio_util::sync::CancellationToken;

/// The poll schedule of one worker.
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    steps: Vec<Duration>,
    jitter: bool,
    /// Index of the next step.
    next: usize,
}

impl Backoff {
    pub(crate) fn new(idle: &Idle) -> Backoff {
        assert!(!idle.backoff.is_empty(), "the plan rejects an empty schedule");
        Backoff { steps: idle.backoff.clone(), jitter: idle.jitter, next: 0 }
    }

    /// A claim returned work: the next idle sleep is the first step again.
    pub(crate) fn reset(&mut self) {
        self.next = 0;
    }

    /// The sleep after one more empty claim; advances the schedule.
    pub(crate) fn next_sleep(&mut self, rng: &mut impl Rng) -> Duration {
        let step = self.steps[self.next];
        self.next = (self.next + 1).min(self.steps.len() - 1);
        if self.jitter { step.mul_f64(rng.random::<f64>()) } else { step }
    }
}

/// Why an idle wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Woken {
    /// The backoff sleep or the fallback poll ran out.
    Timer,
    /// This many notifications arrived (all that were queued are consumed).
    Notified(u64),
    Stopped,
}

/// One idle wait: the next backoff step (poll), or a notification or the
/// fallback poll (listen). Notifications that arrived while the worker was
/// busy end the wait at once: new jobs may be waiting.
pub(crate) async fn wait(
    idle: &Idle,
    backoff: &mut Backoff,
    rng: &mut impl Rng,
    notifications: Option<&mut Wakeups>,
    stop: &CancellationToken,
) -> Woken {
    let (Wakeup::Listen, Some(rx)) = (idle.wakeup, notifications) else {
        let d = backoff.next_sleep(rng);
        return tokio::select! {
            _ = tokio::time::sleep(d) => Woken::Timer,
            _ = stop.cancelled() => Woken::Stopped,
        };
    };
    let queued = rx.drain();
    if queued > 0 {
        return Woken::Notified(queued);
    }
    tokio::select! {
        n = rx.0.recv() => match n {
            Some(_) => Woken::Notified(1 + rx.drain()),
            // The connection is gone; the next claim fails and reconnects.
            None => Woken::Timer,
        },
        _ = tokio::time::sleep(idle.fallback_poll) => Woken::Timer,
        _ = stop.cancelled() => Woken::Stopped,
    }
}

/// The wake-ups a LISTENing connection receives (its NOTIFYs), in the round's own terms: a
/// transport hands these to the idle wait, whatever its client library.
pub(crate) struct Wakeups(UnboundedReceiver<Notification>);

impl Wakeups {
    pub(crate) fn new(rx: UnboundedReceiver<Notification>) -> Wakeups {
        Wakeups(rx)
    }

    /// Consumes every queued wake-up; how many there were.
    pub(crate) fn drain(&mut self) -> u64 {
        let mut n = 0;
        while self.0.try_recv().is_ok() {
            n += 1;
        }
        n
    }
}

/// What the rollback probe saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    /// Notifications sent in a rolled-back transaction that arrived anyway (PostgreSQL: 0).
    pub rolled_back_delivered: u64,
    /// Committed notifications that arrived (1 expected).
    pub committed_delivered: u64,
}

/// LISTENs on `channel`, sends `NOTIFY` from a second session inside a
/// transaction that rolls back, waits `quiet` and counts what arrived; then
/// sends one that commits and waits up to 5 s for it. Payloads tell the two apart.
pub(crate) async fn probe_rollback(config: &Endpoint, channel: &str, quiet: Duration) -> Result<Probe, SessionFailure> {
    let connect = || async {
        let (forward, rx) = crate::db::connect::notifications();
        let (client, task) = crate::db::connect::open(config, forward).await.map_err(|e| SessionFailure::Sql {
            step: "connecting".into(),
            sql: sql(&e),
            statement: None,
        })?;
        Ok::<_, SessionFailure>((client, rx, task))
    };
    let (listener, mut rx, listener_task) = connect().await?;
    let (sender, _, sender_task) = connect().await?;
    let ch = crate::quote::ident(channel);
    let result = async {
        run(&listener, format!("LISTEN {ch}")).await?;
        run(&sender, format!("BEGIN; NOTIFY {ch}, 'rolled-back'; ROLLBACK")).await?;
        tokio::time::sleep(quiet).await;
        run(&sender, format!("NOTIFY {ch}, 'committed'")).await?;
        let mut probe = Probe { rolled_back_delivered: 0, committed_delivered: 0 };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while probe.committed_delivered == 0 {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some(n)) if n.payload() == "committed" => probe.committed_delivered += 1,
                Ok(Some(_)) => probe.rolled_back_delivered += 1,
                Ok(None) | Err(_) => break,
            }
        }
        Ok(probe)
    }
    .await;
    drop((listener, sender));
    let _ = (listener_task.await, sender_task.await);
    result
}

async fn run(client: &tokio_postgres::Client, text: String) -> Result<(), SessionFailure> {
    client.batch_execute(&text).await.map_err(|e| SessionFailure::Sql { step: text, sql: sql(&e), statement: None })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    fn idle(steps: &[u64], jitter: bool) -> Idle {
        Idle {
            backoff: steps.iter().map(|&ms| Duration::from_millis(ms)).collect(),
            jitter,
            wakeup: Wakeup::Poll,
            fallback_poll: Duration::from_secs(2),
        }
    }

    #[test]
    fn the_schedule_climbs_holds_its_last_step_and_resets_on_work() {
        let mut rng = StdRng::seed_from_u64(1);
        let mut b = Backoff::new(&idle(&[100, 250, 500, 2000], false));
        let ms = |b: &mut Backoff, rng: &mut StdRng| b.next_sleep(rng).as_millis();
        let first: Vec<u128> = (0..6).map(|_| ms(&mut b, &mut rng)).collect();
        assert_eq!(first, [100, 250, 500, 2000, 2000, 2000]);
        b.reset();
        assert_eq!(ms(&mut b, &mut rng), 100);
        assert_eq!(ms(&mut b, &mut rng), 250);
    }

    #[test]
    fn a_single_step_is_the_old_fixed_sleep() {
        let mut rng = StdRng::seed_from_u64(1);
        let mut b = Backoff::new(&idle(&[5], false));
        assert!((0..10).all(|_| b.next_sleep(&mut rng) == Duration::from_millis(5)));
    }

    #[test]
    fn full_jitter_stays_within_zero_and_the_step_and_spreads() {
        let mut rng = StdRng::seed_from_u64(7);
        let mut b = Backoff::new(&idle(&[100, 400], true));
        let first = b.next_sleep(&mut rng);
        assert!(first <= Duration::from_millis(100), "{first:?}");
        let draws: Vec<Duration> = (0..2000).map(|_| b.next_sleep(&mut rng)).collect();
        assert!(draws.iter().all(|d| *d <= Duration::from_millis(400)));
        let mean = draws.iter().map(Duration::as_secs_f64).sum::<f64>() / draws.len() as f64;
        assert!((0.18..0.22).contains(&mean), "mean {mean} s, expected ~0.2 s (uniform in [0, 400ms])");
        assert!(
            draws.iter().any(|d| *d < Duration::from_millis(40))
                && draws.iter().any(|d| *d > Duration::from_millis(360))
        );
    }
}
