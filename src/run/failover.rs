//! The `failover` fault: the primary of the ephemeral cluster dies hard and its streaming
//! standby is promoted, while workers, reaper and producers carry on through the run's
//! multi-host connection settings (`target_session_attrs=read-write`), as applications of an
//! HA cluster do.
//!
//! To make an asynchronous failover lose something on purpose rather than by luck, the
//! primary's walsender (the process that streams WAL to the standby) can be frozen with
//! SIGSTOP for `hold` first: with asynchronous replication the primary goes on acknowledging
//! commits the standby never receives; with synchronous replication those commits wait for
//! the standby, so nothing is acknowledged that the standby lacks. The walsender is frozen
//! rather than the standby's WAL receiver so that nothing is left in flight: a frozen
//! receiver would find the socket's buffered WAL on waking and keep a part of what the
//! primary wrote during the hold, by an amount set by the kernel's buffer sizes.
//!
//! Steps: freeze the walsender, wait `hold`, read the primary's WAL position and how far
//! behind the standby is (`lag_bytes`), SIGKILL the primary's postmaster and every process it
//! started (the frozen walsender among them, never woken), wait for
//! the standby's WAL receiver to see it go, read what the standby has (`wal_lost_bytes`:
//! what it will never have), promote it, and wait until a read-write connection through the
//! run's settings succeeds. The kill is a `restart` too (down at the kill, up at that
//! connection), so the checks that judge connections cut by a restart judge these the same way.

use crate::db::Endpoint;
use crate::db::ephemeral::{Servers, Standby};
use crate::db::standby;
use crate::model::records::FailoverRecord;
use std::time::{Duration, Instant};
use tokio_postgres::Client;
use tokio_util::sync::CancellationToken;

/// Runs one failover; what happened, if the primary was killed (times in µs after `start`;
/// `up_us` is `u64::MAX` if no read-write connection succeeded).
pub(crate) async fn run(
    start: Instant,
    servers: Option<&Servers>,
    config: &Endpoint,
    hold: Duration,
    stop: &CancellationToken,
) -> Option<FailoverRecord> {
    let now_us = || start.elapsed().as_micros() as u64;
    let Some((servers, standby)) = servers.and_then(|s| Some((s, s.standby.clone()?))) else {
        eprintln!("warning: failover needs the ephemeral cluster's standby ([postgres] standby); skipped");
        return None;
    };
    let (Some(primary), Some(replica)) =
        (direct(&servers.primary.direct_config()).await, direct(&standby.server.direct_config()).await)
    else {
        eprintln!("warning: failover: could not reach the primary and the standby directly; skipped");
        return None;
    };
    let frozen = match hold.is_zero() {
        true => None,
        false => freeze(&primary).await,
    };
    if let Some(pid) = frozen {
        tokio::select! {
            _ = tokio::time::sleep(hold) => {}
            // The run is over before the failover: no failover, the walsender goes on.
            _ = stop.cancelled() => return thaw(pid),
        }
    }
    let mut record =
        FailoverRecord { replication: standby.replication, hold_us: hold.as_micros() as u64, ..Default::default() };
    let last_lsn = standby::current_lsn(&primary).await;
    if let Some(lsn) = &last_lsn {
        record.lag_bytes = standby::behind(&replica, lsn).await.unwrap_or(0);
    }
    record.down_us = now_us();
    if let Err(e) = servers.primary.kill_hard().await {
        eprintln!("warning: failover: could not kill the primary: {e}");
        return frozen.map(thaw).unwrap_or_default();
    }
    standby::receiver_quiet(&replica, Duration::from_secs(5)).await;
    if let Some(lsn) = &last_lsn {
        record.wal_lost_bytes = standby::behind(&replica, lsn).await.unwrap_or(0);
    }
    record.up_us = match promote_and_wait(&standby, &replica, config, stop).await {
        true => now_us(),
        false => u64::MAX,
    };
    tracing::info!(?record, "failover");
    Some(record)
}

/// A connection to one server alone (no read-write check).
async fn direct(config: &tokio_postgres::Config) -> Option<Client> {
    crate::db::connect::open(&Endpoint::plain(config.clone()), |_| {}).await.ok().map(|(c, _)| c)
}

/// Freezes the primary's walsender (SIGSTOP); its pid, if there was one to freeze.
async fn freeze(primary: &Client) -> Option<i32> {
    let Some(pid) = standby::walsender_pid(primary).await else {
        eprintln!("warning: failover: the primary has no walsender to hold; failing over without a hold");
        return None;
    };
    // SAFETY: kill(2) on a process of the cluster this run started (it runs as its user or ours).
    let sent = unsafe { libc::kill(pid, libc::SIGSTOP) } == 0;
    sent.then_some(pid)
}

/// Wakes the frozen walsender (SIGCONT) when no failover follows.
fn thaw(pid: i32) -> Option<FailoverRecord> {
    // SAFETY: kill(2) on the walsender of the cluster this run started, frozen by `freeze`.
    unsafe { libc::kill(pid, libc::SIGCONT) };
    None
}

/// Promotes the standby and waits (up to 60 s) until the run's settings reach a read-write
/// server: did they?
async fn promote_and_wait(standby: &Standby, replica: &Client, config: &Endpoint, stop: &CancellationToken) -> bool {
    if let Err(e) = standby::promote(replica).await {
        eprintln!("warning: failover: {e}\n{}", standby.server.log_tail());
        return false;
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while !stop.is_cancelled() && Instant::now() < deadline {
        if crate::db::connect::open(config, |_| {}).await.is_ok() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}
