//! URL mode: the server a run reaches is watched for a change of identity, since queuebench
//! did not restart it itself. From its own connection, at the start, every 200 ms and at the
//! end, it reads the postmaster's start time (`pg_postmaster_start_time()`, open to every
//! role), the cluster's system identifier (`pg_control_system()`) and the timeline it writes
//! WAL on (`pg_walfile_name(pg_current_wal_lsn())`); a role that may not read the last two is
//! watched by the start time alone.
//!
//! A new start time is a restart, unless the new postmaster started before the one the run
//! saw first (a server that was running all along: a standby promoted) or the system
//! identifier or the timeline changed: then it is a failover. Either goes where the
//! ephemeral `postgres_restart` and `failover` faults put theirs (`FaultState::restarts`,
//! `failovers`), so the durability check and the outage line judge it the same way. The
//! failover's replication and WAL figures are not known here (`FailoverRecord::observed`).
//!
//! When it happened: from the first failed read after the last one that saw the old server
//! (or, if the connection came back before the watch noticed, that last read), to the first
//! read of the new one.

use super::Side;
use super::faults::{FaultState, Restart};
use crate::db::Endpoint;
use crate::model::records::FailoverRecord;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_postgres::{Client, SimpleQueryMessage};
use tokio_util::sync::CancellationToken;

const EVERY: Duration = Duration::from_millis(200);

/// How long the last read may wait for a server that is still coming back.
const LAST_READ: Duration = Duration::from_secs(5);

/// What tells one server (and one start of it) from another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Identity {
    /// `pg_postmaster_start_time()` as text (the session's time zone: the same every read).
    pub started: String,
    pub system: Option<String>,
    pub timeline: Option<String>,
}

/// Watches the server until `stop`, then reads it once more; records what changed.
pub(crate) async fn watch(config: Endpoint, start: Instant, faults: Arc<FaultState>, stop: CancellationToken) {
    let Some(mut side) = Side::connect(&config, "the server watch").await else { return };
    let mut seen: Option<Identity> = None;
    let (mut last_ok_us, mut lost_us): (u64, Option<u64>) = (0, None);
    let mut last = false;
    let mut next = tokio::time::Instant::now();
    while !last {
        tokio::select! {
            _ = tokio::time::sleep_until(next) => {}
            _ = stop.cancelled() => last = true,
        }
        next = tokio::time::Instant::now() + EVERY;
        let until = Instant::now() + if last { LAST_READ } else { Duration::ZERO };
        let now = loop {
            let now = match side.client().await {
                Some((client, _)) => read(client).await,
                None => None,
            };
            if now.is_some() || Instant::now() >= until {
                break now;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let t_us = start.elapsed().as_micros() as u64;
        let Some(now) = now else {
            lost_us.get_or_insert(t_us);
            continue;
        };
        if let Some(before) = &seen
            && let Some((failover, what)) = change(before, &now)
        {
            let down_us = lost_us.unwrap_or(last_ok_us);
            record(&faults, failover, down_us, t_us);
            let kind = if failover { "failover" } else { "restart" };
            eprintln!(
                "warning: the server changed during the run ({what}), seen at {:.1} s: counted as a {kind}; the \
                 durability check covers it",
                t_us as f64 / 1e6
            );
        }
        seen = Some(now);
        (last_ok_us, lost_us) = (t_us, None);
    }
}

fn record(faults: &FaultState, failover: bool, down_us: u64, up_us: u64) {
    faults.restarts.lock().unwrap().push(Restart { down_us, up_us: Some(up_us) });
    if failover {
        faults.failovers.lock().unwrap().push(FailoverRecord { down_us, up_us, observed: true, ..Default::default() });
    }
}

/// The server's identity, None when it cannot be read (the server is away).
async fn read(client: &Client) -> Option<Identity> {
    let started = first_row(client, "SELECT pg_postmaster_start_time()::text").await.ok()??;
    // A role without EXECUTE on the pg_control functions: the start time alone.
    // The timeline WAL is written on now (the first 8 hex digits of the WAL file name):
    // pg_control_checkpoint()'s is that of the last checkpoint, which a promoted server
    // reaches only later, and would count one failover twice.
    let control = "SELECT s.system_identifier::text || ' ' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) \
                   FROM pg_control_system() s";
    let (system, timeline) = match first_row(client, control).await {
        Ok(Some(text)) => match text.split_once(' ') {
            Some((s, t)) => (Some(s.to_string()), Some(t.to_string())),
            None => (None, None),
        },
        Ok(None) => (None, None),
        Err(e) if client.is_closed() || e.as_db_error().is_none() => return None,
        Err(_) => (None, None),
    };
    Some(Identity { started, system, timeline })
}

async fn first_row(client: &Client, sql: &str) -> Result<Option<String>, tokio_postgres::Error> {
    let rows = client.simple_query(sql).await?;
    Ok(rows.iter().find_map(|m| match m {
        SimpleQueryMessage::Row(r) => r.get(0).map(String::from),
        _ => None,
    }))
}

/// (a failover?, what changed) between two reads, None when it is the same server.
pub(crate) fn change(before: &Identity, now: &Identity) -> Option<(bool, String)> {
    let differs = |a: &Option<String>, b: &Option<String>| a.is_some() && b.is_some() && a != b;
    let shown = |v: &Option<String>| v.clone().unwrap_or_default();
    if differs(&before.system, &now.system) {
        return Some((true, format!("system identifier {} → {}", shown(&before.system), shown(&now.system))));
    }
    if differs(&before.timeline, &now.timeline) {
        return Some((true, format!("timeline {} → {}", shown(&before.timeline), shown(&now.timeline))));
    }
    if before.started == now.started {
        return None;
    }
    // The same text format both times: the later start sorts later.
    let earlier = now.started < before.started;
    let what = format!("postmaster start time {} → {}", before.started, now.started);
    Some((earlier, if earlier { format!("{what}, a server that was running before: promoted") } else { what }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(started: &str, system: Option<&str>, timeline: Option<&str>) -> Identity {
        Identity { started: started.into(), system: system.map(String::from), timeline: timeline.map(String::from) }
    }

    #[test]
    fn a_new_start_is_a_restart_and_a_new_timeline_or_an_older_server_a_failover() {
        let first = id("2026-12-03 19:30:12+00", Some("7"), Some("1"));
        assert_eq!(change(&first, &first), None);
        let restarted = id("2026-12-03 19:31:00+00", Some("7"), Some("1"));
        assert!(matches!(change(&first, &restarted), Some((false, w)) if w.contains("postmaster start time")));
        let promoted = id("2026-12-03 19:31:00+00", Some("7"), Some("2"));
        assert!(matches!(change(&first, &promoted), Some((true, w)) if w.contains("timeline 1 → 2")));
        let older = id("2026-12-03 19:00:00+00", Some("7"), Some("1"));
        assert!(matches!(change(&first, &older), Some((true, _))));
        let other = id("2026-12-03 19:30:12+00", Some("8"), Some("1"));
        assert!(matches!(change(&first, &other), Some((true, w)) if w.contains("system identifier")));
        // Without the pg_control functions: the start time alone.
        let blind = id("2026-12-03 19:31:00+00", None, None);
        assert!(matches!(change(&first, &blind), Some((false, _))));
    }
}
