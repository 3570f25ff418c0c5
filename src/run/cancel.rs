//! Every wait of a run bounded (docs/safety.md, "Every wait bounded"): once a run is told to
//! stop (`run.stop`, `run.timeout`, a signal, an abort) or its workers are done, a statement of
//! the run still running in the server after a grace is cancelled (`pg_cancel_backend`), its
//! backend terminated after a second grace (`pg_terminate_backend`), and a worker task that is
//! still not back after a third is given up (its record is lost, and said so). A claim stuck in
//! `pg_sleep(100)` then ends the run at its timeout, and no backend of the run is left running
//! for the teardown (a `DROP SCHEMA` would wait for its locks).
//!
//! The run's backends are found in `pg_stat_activity` by what names them: queuebench's own
//! `application_name` (`queuebench <schema>`, unique to the run; a name the URL sets is not
//! trusted to be), the direct workers' backend pids, and a process client's `queuebench-p<N>`
//! names in the run's database.

use crate::db::{Database, Endpoint};
use std::future::Future;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

/// From the stop to the cancel, from the cancel to the terminate, and from the terminate to
/// giving up on a worker task.
pub(crate) const GRACE: Duration = Duration::from_secs(2);

/// A connection to the server for the cancel is given this long.
const CONNECT_LIMIT: Duration = Duration::from_secs(5);

/// How a backend is told.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum How {
    /// `pg_cancel_backend`: the statement ends with 57014, the connection stays.
    Cancel,
    /// `pg_terminate_backend`: the connection ends.
    Terminate,
}

/// The run's backends, as `pg_stat_activity` names them.
#[derive(Clone)]
pub(crate) struct Backends {
    /// The harness's own connection settings (the superuser in an ephemeral cluster).
    endpoint: Endpoint,
    /// `queuebench <schema>`: every connection of the run carries it (None when the URL sets
    /// its own application_name, which other sessions may share).
    app: Option<String>,
    /// `queuebench-p%`: a process client's connections (clients/CONTRACT.md).
    clients: bool,
}

impl Backends {
    /// The backends of the run in `db`'s schema.
    pub(crate) fn of(db: &Database) -> Backends {
        let endpoint = db.harness_config();
        let app = endpoint.config.get_application_name().filter(|a| *a == format!("queuebench {}", db.schema));
        Backends { app: app.map(String::from), endpoint, clients: false }
    }

    /// Also a process client's connections (`queuebench-p<N>`, `queuebench-p<N>-effects`).
    pub(crate) fn with_clients(mut self) -> Backends {
        self.clients = true;
        self
    }

    /// Cancels the statement of (or terminates) every backend of the run that is not idle, and
    /// of `pids`, with a warning that names what was still running, and `when`; returns how
    /// many. The warning comes first: a worker whose statement is cancelled ends at once, and
    /// with it the wait this runs beside. Nothing when the server cannot be reached within 5 s.
    pub(crate) async fn end(&self, how: How, pids: &[i32], when: &str) -> usize {
        let connected = tokio::time::timeout(CONNECT_LIMIT, crate::db::connect::open(&self.endpoint, |_| {})).await;
        let Ok(Ok((client, _task))) = connected else { return 0 };
        let list = "SELECT pid, left(regexp_replace(query, '\\s+', ' ', 'g'), 60) FROM pg_stat_activity \
                    WHERE pid <> pg_backend_pid() AND datname = current_database() AND state <> 'idle' \
                    AND (application_name = $1 OR pid = ANY($2) OR ($3 AND application_name LIKE 'queuebench-p%'))";
        let app = self.app.as_deref().unwrap_or("");
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 3] = [&app, &pids, &self.clients];
        let Ok(Ok(rows)) = tokio::time::timeout(CONNECT_LIMIT, client.query(list, &params)).await else { return 0 };
        let Some(first) = rows.first().map(|r| r.get::<_, Option<String>>(1).unwrap_or_default()) else { return 0 };
        let found: Vec<i32> = rows.iter().map(|r| r.get(0)).collect();
        let (verb, what, call) = match how {
            How::Cancel => ("cancelled", "statement", "SELECT pg_cancel_backend(pid) FROM unnest($1::int4[]) pid"),
            How::Terminate => ("terminated", "backend", "SELECT pg_terminate_backend(pid) FROM unnest($1::int4[]) pid"),
        };
        let what = crate::model::words::count(found.len() as u64, what);
        tracing::warn!(how = verb, count = found.len(), first = %first, when, "ending what the run left running");
        eprintln!("warning: {what} still running in the server {when}: {verb} (`{first}`)");
        let _ = tokio::time::timeout(CONNECT_LIMIT, client.query(call, &[&found])).await;
        found.len()
    }
}

/// The direct workers' backend pids now (0: none).
pub(crate) fn live_pids(pids: &[AtomicI32]) -> Vec<i32> {
    pids.iter().map(|p| p.load(Ordering::Relaxed)).filter(|p| *p != 0).collect()
}

/// Awaits `work`; once `stopped` is done, gives it [`GRACE`], then cancels the statements of
/// `backends` (and `pids`), then terminates their backends, then calls `give_up`, which must
/// make `work` end (the run aborts its worker tasks). `who` names what stopped, for the
/// warnings. Returns `work`'s output.
pub(crate) async fn bounded<T>(
    work: impl Future<Output = T>,
    stopped: impl Future<Output = ()>,
    backends: &Backends,
    pids: &[AtomicI32],
    who: &str,
    give_up: impl FnOnce(),
) -> T {
    let unstick = async {
        stopped.await;
        tokio::time::sleep(GRACE).await;
        backends.end(How::Cancel, &live_pids(pids), &format!("2 s after {who} stopped")).await;
        tokio::time::sleep(GRACE).await;
        backends.end(How::Terminate, &live_pids(pids), &format!("4 s after {who} stopped")).await;
        tokio::time::sleep(GRACE).await;
        give_up();
        std::future::pending::<()>().await;
    };
    tokio::pin!(work);
    tokio::select! {
        out = &mut work => out,
        () = unstick => unreachable!("pending never ends"),
    }
}
