//! The sessions a schedule drives: one connection per actor, each statement sent as text (the
//! literal the psql script shows) on a task of its own, so a statement that waits on a lock
//! stays pending while the other sessions go on. A statement is judged blocked when
//! `pg_blocking_pids` names a backend for it; it settles when its blocker commits or rolls back.
//! Between schedules every session rolls back and the schema's tables go back to the snapshot
//! taken after the preload (`Snapshot`).

use crate::db::Database;
use crate::db::connect;
use crate::error::{Error, Result};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;
use tokio_postgres::{Client, SimpleQueryMessage};

/// A statement's rows as text (the last statement's, for a text of several).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub(super) struct Rows {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Option<String>>>,
    /// Rows the statement reported (`UPDATE 1`, `SELECT 2`).
    pub affected: u64,
}

impl Rows {
    /// A column's values, by name.
    pub(super) fn column(&self, name: &str) -> Option<Vec<Option<String>>> {
        let i = self.columns.iter().position(|c| c == name)?;
        Some(self.rows.iter().map(|r| r.get(i).cloned().flatten()).collect())
    }
}

/// The server's error for a statement, as text (SQLSTATE and message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ServerError(pub String);

impl std::fmt::Display for ServerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a statement came back with: its rows, or the server's error.
pub(super) type Outcome = std::result::Result<Rows, ServerError>;

type Pending = JoinHandle<std::result::Result<Vec<SimpleQueryMessage>, tokio_postgres::Error>>;

struct Session {
    client: Arc<Client>,
    task: JoinHandle<()>,
    pid: i32,
    pending: Option<Pending>,
    open: bool,
}

/// A statement sent: it returned, or it waits on a lock another session holds.
pub(super) enum Sent {
    Done(Outcome),
    Blocked,
}

pub(super) struct Sessions {
    endpoint: crate::db::Endpoint,
    on_connect: Option<String>,
    list: Vec<Session>,
    monitor: Client,
    /// How long a statement may run before it is asked whether it is blocked.
    poll: Duration,
    /// Every backend pid a session has had (it reconnects after a crash), and the session.
    backends: Vec<(i32, usize)>,
    /// The gate session, where statements may pause inside (`pause`).
    gates: Option<super::pause::Gates>,
    /// `pg_blocking_pids` asked of one backend, prepared once (it is asked on every wait).
    blocked_query: tokio_postgres::Statement,
}

fn converted(r: std::result::Result<Vec<SimpleQueryMessage>, tokio_postgres::Error>) -> Outcome {
    let messages = r.map_err(|e| ServerError(crate::db::error_text(&e)))?;
    // Each statement's rows come before its CommandComplete; the last statement's are kept.
    let (mut last, mut current) = (Rows::default(), Rows::default());
    for m in messages {
        match m {
            SimpleQueryMessage::Row(row) => {
                if current.columns.is_empty() {
                    current.columns = row.columns().iter().map(|c| c.name().to_string()).collect();
                }
                current.rows.push((0..row.len()).map(|i| row.get(i).map(str::to_string)).collect());
            }
            SimpleQueryMessage::CommandComplete(n) => {
                current.affected = n;
                last = std::mem::take(&mut current);
            }
            _ => {}
        }
    }
    Ok(last)
}

async fn open_one(endpoint: &crate::db::Endpoint, on_connect: Option<&str>) -> Result<Session> {
    let failed = |e: &dyn crate::db::Failed| Error::Machine {
        action: "opening a session for explore".into(),
        cause: e.sql().to_string(),
    };
    let (client, task) = connect::open(endpoint, |_| {}).await.map_err(|e| failed(&e))?;
    if let Some(init) = on_connect {
        client.batch_execute(init).await.map_err(|e| failed(&e))?;
    }
    // A deadlock between two sessions is settled in milliseconds, not the default second (a
    // superuser setting: where it is refused, the default stands).
    let _ = client.batch_execute("SET deadlock_timeout = '20ms'").await;
    // A commit need not wait for its WAL to reach the disk: what the schedule sees (locks,
    // visibility) is the same, and the cluster is thrown away.
    let _ = client.batch_execute("SET synchronous_commit = off").await;
    let pid: i32 = client.query_one("SELECT pg_backend_pid()", &[]).await.map_err(|e| failed(&e))?.get(0);
    Ok(Session { client: Arc::new(client), task, pid, pending: None, open: true })
}

impl Sessions {
    pub(super) async fn open(db: &Database, on_connect: Option<&str>, n: usize) -> Result<Sessions> {
        let endpoint = db.worker_config();
        let mut list = Vec::with_capacity(n);
        for _ in 0..n {
            list.push(open_one(&endpoint, on_connect).await?);
        }
        let backends = list.iter().enumerate().map(|(i, s)| (s.pid, i)).collect();
        let monitor = db.connect().await?;
        let blocked_query = monitor
            .prepare("SELECT cardinality(pg_blocking_pids($1)) > 0")
            .await
            .map_err(|e| monitor_err("preparing the lock-wait question", &e))?;
        Ok(Sessions {
            blocked_query,
            endpoint,
            on_connect: on_connect.map(String::from),
            list,
            monitor,
            poll: Duration::from_millis(2),
            backends,
            gates: None,
        })
    }

    /// Makes the pause function (through `schema_client`, on the schema's search_path) and
    /// opens the gate session: statements can pause inside from now on.
    pub(super) async fn open_gates(&mut self, schema_client: &Client) -> Result<()> {
        self.gates = Some(super::pause::Gates::open(&self.endpoint, schema_client).await?);
        Ok(())
    }

    /// Closes session `i`'s gate (before its paused statement is sent).
    pub(super) async fn hold_gate(&mut self, i: usize) -> Result<()> {
        let gates = self.gates.as_mut().expect("a paused statement has a gate session");
        gates.hold(i as i32 + 1).await
    }

    /// Opens session `i`'s gate: its paused statement runs on.
    pub(super) async fn release_gate(&mut self, i: usize) -> Result<()> {
        let gates = self.gates.as_mut().expect("a paused statement has a gate session");
        gates.release(i as i32 + 1).await
    }

    /// Every backend pid a session has had, with the session's index.
    pub(super) fn backends(&self) -> &[(i32, usize)] {
        &self.backends
    }

    /// The connection the harness reads and resets the schema on.
    pub(super) fn monitor(&self) -> &Client {
        &self.monitor
    }

    /// Sends `sql` on session `i` and waits until it returns or blocks.
    pub(super) async fn send(&mut self, i: usize, sql: String) -> Result<Sent> {
        let client = self.list[i].client.clone();
        self.list[i].pending = Some(tokio::spawn(async move { client.simple_query(&sql).await }));
        self.settle(i, Duration::ZERO).await
    }

    /// Is session `i` waiting on a statement?
    pub(super) fn is_pending(&self, i: usize) -> bool {
        self.list[i].pending.is_some()
    }

    /// Sends `sql` on session `i` when it is known to return (it did when its schedule was first
    /// played, and a replay is the same): waits for it without asking about locks, and asks
    /// only if it has not returned after a second.
    pub(super) async fn send_known(&mut self, i: usize, sql: String) -> Result<Sent> {
        let client = self.list[i].client.clone();
        self.list[i].pending = Some(tokio::spawn(async move { client.simple_query(&sql).await }));
        self.settle_known(i).await
    }

    /// Waits for session `i`'s pending statement, known to return now (its blocker is gone, as
    /// when its schedule was first played); asks about locks only after a second.
    pub(super) async fn settle_known(&mut self, i: usize) -> Result<Sent> {
        let handle = self.list[i].pending.as_mut().expect("a pending statement");
        if let Ok(r) = tokio::time::timeout(Duration::from_secs(1), handle).await {
            self.list[i].pending = None;
            let r = r.map_err(|e| Error::Machine { action: "a session's statement".into(), cause: e.to_string() })?;
            return Ok(Sent::Done(converted(r)));
        }
        self.settle(i, Duration::ZERO).await
    }

    /// Waits for session `i`'s pending statement until it returns or is seen blocked (after
    /// `at_least`, for a deadlock the server is about to break).
    pub(super) async fn settle(&mut self, i: usize, at_least: Duration) -> Result<Sent> {
        let started = Instant::now();
        let pid = self.list[i].pid;
        loop {
            let handle = self.list[i].pending.as_mut().expect("a pending statement");
            tokio::select! {
                r = handle => {
                    self.list[i].pending = None;
                    let r = r.map_err(|e| Error::Machine { action: "a session's statement".into(), cause: e.to_string() })?;
                    return Ok(Sent::Done(converted(r)));
                }
                _ = tokio::time::sleep(self.poll) => {}
            }
            if started.elapsed() >= at_least && self.blocked(pid).await? {
                return Ok(Sent::Blocked);
            }
            if started.elapsed() > Duration::from_secs(30) {
                return Err(Error::Machine {
                    action: "waiting for a session's statement".into(),
                    cause: "it neither returned nor waited on a lock for 30 s".into(),
                });
            }
        }
    }

    async fn blocked(&self, pid: i32) -> Result<bool> {
        let row = self
            .monitor
            .query_one(&self.blocked_query, &[&pid])
            .await
            .map_err(|e| monitor_err("asking pg_blocking_pids", &e))?;
        Ok(row.get(0))
    }

    /// The session's connection goes: its backend is terminated (a blocked statement too) and
    /// its transaction rolled back; returns once the backend is gone.
    pub(super) async fn crash(&mut self, i: usize) -> Result<()> {
        let s = &mut self.list[i];
        if let Some(p) = s.pending.take() {
            p.abort();
        }
        s.task.abort();
        s.open = false;
        let pid = s.pid;
        self.monitor
            .execute("SELECT pg_terminate_backend($1)", &[&pid])
            .await
            .map_err(|e| monitor_err("terminating a session", &e))?;
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(10) {
            let gone = self
                .monitor
                .query_opt("SELECT 1 FROM pg_stat_activity WHERE pid = $1", &[&pid])
                .await
                .map_err(|e| monitor_err("watching a session end", &e))?
                .is_none();
            if gone {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        Err(Error::Machine {
            action: "crashing a session".into(),
            cause: format!("backend {pid} still there after 10 s"),
        })
    }

    /// The session's connection closes and it connects again (an answer lost: `ack_lost`).
    pub(super) async fn reconnect(&mut self, i: usize) -> Result<()> {
        self.crash(i).await?;
        self.list[i] = open_one(&self.endpoint, self.on_connect.as_deref()).await?;
        self.backends.push((self.list[i].pid, i));
        Ok(())
    }

    /// Every session back to idle outside a transaction, with no session-level advisory lock,
    /// a crashed one reconnected.
    pub(super) async fn quiesce(&mut self) -> Result<()> {
        // A statement paused at its gate runs on, rather than waiting out the cancel below.
        if let Some(g) = self.gates.as_mut() {
            g.release_all().await?;
        }
        // The idle sessions roll back side by side: one round trip for all of them.
        let idle: Vec<Arc<Client>> =
            self.list.iter().filter(|s| s.open && s.pending.is_none()).map(|s| s.client.clone()).collect();
        futures_util::future::try_join_all(idle.iter().map(|c| rolled_back(c))).await?;
        let busy: Vec<usize> =
            (0..self.list.len()).filter(|&i| !self.list[i].open || self.list[i].pending.is_some()).collect();
        for i in busy {
            if self.list[i].pending.is_some()
                && let Sent::Blocked = self.settle(i, Duration::from_millis(200)).await?
            {
                let pid = self.list[i].pid;
                let _ = self.monitor.execute("SELECT pg_cancel_backend($1)", &[&pid]).await;
                if let Sent::Blocked = self.settle(i, Duration::from_secs(2)).await? {
                    self.crash(i).await?;
                }
            }
            if self.list[i].open {
                self.rollback(i).await?;
            } else {
                self.list[i] = open_one(&self.endpoint, self.on_connect.as_deref()).await?;
                self.backends.push((self.list[i].pid, i));
            }
        }
        Ok(())
    }

    async fn rollback(&mut self, i: usize) -> Result<()> {
        rolled_back(&self.list[i].client).await
    }
}

/// A session rolled back, with no session-level advisory lock left.
async fn rolled_back(c: &Client) -> Result<()> {
    c.batch_execute("ROLLBACK; SELECT pg_advisory_unlock_all()").await.map_err(|e| Error::Machine {
        action: "rolling a session back between schedules".into(),
        cause: crate::db::error_text(&e),
    })
}

pub(super) fn monitor_err(what: &str, e: &tokio_postgres::Error) -> Error {
    Error::Machine { action: what.into(), cause: crate::db::error_text(e) }
}
