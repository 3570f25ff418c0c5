//! The ephemeral cluster's streaming standby (`[postgres] standby = "async" | "sync"`): made
//! from the running primary with `pg_basebackup -R` (which writes `standby.signal` and a
//! `primary_conninfo` naming the primary's socket), started on the next port in the same
//! socket folder, and waited for until it streams. Replication goes over the cluster's own
//! Unix socket, which initdb's pg_hba lets the cluster's user use for replication; nothing
//! listens on the network. With `sync` the primary has `synchronous_standby_names = '*'`, so a
//! commit is acknowledged only once the standby has flushed it; the standby itself has no
//! such setting, so once promoted it does not wait for a standby it no longer has.
//!
//! Also the statements the `failover` fault needs: the walsender to freeze, the WAL positions
//! on both sides, the standby's WAL receiver going quiet, and the promotion.

use super::ephemeral::StopError;
use super::ephemeral::{LIVE, Postmaster, Standby};
use crate::error::{Access, Error, Result};
use crate::model::records::Replication;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tokio_postgres::Client;

/// Makes the standby from the running primary and starts it (waiting for it to stream is
/// [`wait_streaming`]'s).
pub(crate) fn start(primary: &Postmaster, standby: &Standby) -> Result<()> {
    base_backup(primary, &standby.server)?;
    standby.server.spawn()
}

/// Copies the primary into the standby's data directory (`pg_basebackup -R -X stream`), as the
/// cluster's user, so the standby starts as a standby of it.
fn base_backup(primary: &Postmaster, standby: &Postmaster) -> Result<()> {
    let program = primary.bindir.join("pg_basebackup");
    let mut cmd = Command::new(&program);
    cmd.arg("-D").arg(&standby.data).arg("-h").arg(&primary.dir);
    cmd.args(["-p", &primary.port().to_string(), "-U", "postgres", "-R", "-X", "stream", "-c", "fast", "--no-sync"]);
    cmd.current_dir(&primary.dir).stdin(Stdio::null());
    super::ephemeral::as_owner(&mut cmd, primary.owner);
    // The primary may still be starting: pg_basebackup needs it to accept connections.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = cmd.output().map_err(|e| Error::io(Access::Run, &program, e))?;
        if out.status.success() {
            return Ok(());
        }
        let output = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        let starting = output.contains("starting up") || output.contains("No such file") || output.contains("refused");
        if !starting || Instant::now() > deadline {
            return Err(Error::Process { program: "pg_basebackup".into(), status: out.status.to_string(), output });
        }
        let _ = std::fs::remove_dir_all(&standby.data);
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until the primary streams to the standby (`pg_stat_replication`; with `sync`, as its
/// synchronous standby), up to 60 s. `primary` is a connection to the primary.
pub(crate) async fn wait_streaming(primary: &Client, replication: Replication, standby: &Postmaster) -> Result<()> {
    let want = match replication {
        Replication::Async => "async",
        Replication::Sync => "sync",
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let rows = primary
            .query("SELECT sync_state FROM pg_stat_replication WHERE state = 'streaming'", &[])
            .await
            .map_err(|e| Error::machine("asking the ephemeral primary for its standby", super::error_text(&e)))?;
        if rows.iter().any(|r| r.get::<_, Option<String>>(0).as_deref() == Some(want)) {
            return Ok(());
        }
        if Instant::now() > deadline || !standby.running() {
            return Err(Error::ClusterNotReady {
                seconds: 60,
                cause: format!("the standby did not start streaming ({want}) from the primary"),
                log_tail: standby.log_tail(),
            });
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The pid of the primary's walsender to the standby, if one streams.
pub(crate) async fn walsender_pid(primary: &Client) -> Option<i32> {
    let row = primary.query_opt("SELECT pid FROM pg_stat_replication ORDER BY pid LIMIT 1", &[]).await.ok()??;
    row.get(0)
}

/// The primary's current WAL position, as text (`0/3000060`).
pub(crate) async fn current_lsn(primary: &Client) -> Option<String> {
    let row = primary.query_one("SELECT pg_current_wal_lsn()::text", &[]).await.ok()?;
    Some(row.get(0))
}

/// Bytes of WAL from the standby's last received position up to `lsn` (0 if it has it all).
pub(crate) async fn behind(standby: &Client, lsn: &str) -> Option<u64> {
    let row = standby
        .query_one(
            "SELECT greatest(0, pg_wal_lsn_diff($1::text::pg_lsn, \
             coalesce(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn())))::bigint",
            &[&lsn],
        )
        .await
        .ok()?;
    Some(row.get::<_, i64>(0) as u64)
}

/// Waits (up to `limit`) until the standby's WAL receiver no longer streams: it has read what
/// was left in its socket and seen the primary go.
pub(crate) async fn receiver_quiet(standby: &Client, limit: Duration) {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        let streaming = standby
            .query_one("SELECT count(*) FROM pg_stat_wal_receiver WHERE status = 'streaming'", &[])
            .await
            .map(|r| r.get::<_, i64>(0))
            .unwrap_or(0);
        if streaming == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Promotes the standby and waits (up to 60 s) until it has left recovery.
pub(crate) async fn promote(standby: &Client) -> Result<()> {
    let failed = |cause: String| Error::machine("promoting the ephemeral cluster's standby", cause);
    let row = standby.query_one("SELECT pg_promote(true, 60)", &[]).await.map_err(|e| failed(super::error_text(&e)))?;
    match row.get::<_, bool>(0) {
        true => Ok(()),
        false => Err(failed("pg_promote did not finish within 60 s".into())),
    }
}

impl Postmaster {
    /// Kills the server the hard way, as a machine that dies would: the postmaster is frozen
    /// (SIGSTOP: it forks nothing more), then it and every process it started (backends,
    /// walsenders, helpers: each runs in a session of its own, so a signal to the postmaster's
    /// process group would miss them) get SIGKILL, and no backend answers another statement.
    /// Waits for them all to exit. Returns the postmaster's pid.
    pub async fn kill_hard(&self) -> std::result::Result<i32, StopError> {
        let pid = match self.child.lock().unwrap().as_ref() {
            Some(c) => c.id() as i32,
            None => return Err(StopError::NotRunning),
        };
        // SAFETY: kill(2) on our own child and on the processes it started.
        unsafe { libc::kill(pid, libc::SIGSTOP) };
        let children = children_of(pid);
        for &c in &children {
            // SAFETY: as above.
            unsafe { libc::kill(c, libc::SIGKILL) };
        }
        // SAFETY: as above.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            let exited = self.child.lock().unwrap().as_mut().is_none_or(|c| matches!(c.try_wait(), Ok(Some(_))));
            if exited && children.iter().all(|&c| gone(c)) {
                self.child.lock().unwrap().take();
                LIVE.lock().unwrap().retain(|(p, _)| *p != pid);
                return Ok(pid);
            }
            if Instant::now() > until {
                return Err(StopError::StillRunning { pid, signal: libc::SIGKILL });
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// The processes whose parent is `pid` (from /proc).
fn children_of(pid: i32) -> Vec<i32> {
    let parent = |stat: &str| stat.rsplit_once(") ").and_then(|(_, rest)| rest.split(' ').nth(1)?.parse::<i32>().ok());
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|p| std::fs::read_to_string(format!("/proc/{p}/stat")).ok().as_deref().and_then(parent) == Some(pid))
        .collect()
}

/// Has the process exited (gone, or a zombie waiting for its new parent)?
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X')),
        Err(_) => true,
    }
}
