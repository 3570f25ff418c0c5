//! Inside a statement: a pause after the statement's snapshot and before its first lock.
//!
//! PostgreSQL takes a statement's snapshot when it starts (READ COMMITTED takes one per
//! statement), so a statement that reads rows and then takes a lock that never waits
//! (`pg_try_advisory_lock`) decides on rows as they were at its start: a job that another
//! session finished and unlocked in between still looks present and its lock is free (Que's
//! c95329c). Whole-statement steps never open that window, and no lock wait shows it.
//!
//! Where a statement calls a try-lock function, explore can also send it with a gate in
//! front of its first such call: `pg_try_advisory_lock(queuebench_pause(2) + <argument>)`.
//! `queuebench_pause(gate)` (a plpgsql function explore makes in its own schema) takes and
//! gives back a shared advisory lock that a gate session holds exclusively, so the statement
//! stops there, its snapshot taken and its first lock not yet tried. To the search that is a
//! statement waiting on a lock: the other sessions go on, and a step of its own (`Resume`)
//! lets the gate go; the statement runs on from where it stood. The gate's lock is a
//! two-key advisory lock (`objsubid = 2`), apart from the one-key locks queues take.
//!
//! `queuebench_pause(n)` returns 0, so the argument keeps its value and type (int + int stays
//! int, int + bigint is bigint; `+` binds tighter than every operator an integer argument would
//! be built with but `*`, `/`, `%`, `^` and casts, which bind tighter still).

use crate::error::{Error, Result};
use tokio_postgres::Client;

/// The gates' first key (`'QB'` in the high bytes); the second is the session's number (A = 1).
pub(super) const GATE_CLASS: i32 = 0x5142_0000;

/// The lock functions that never wait: a statement calling one can decide on a snapshot
/// older than its lock. (The waiting ones show up as lock waits already.)
const TRY_LOCKS: [&str; 4] = [
    "pg_try_advisory_lock",
    "pg_try_advisory_lock_shared",
    "pg_try_advisory_xact_lock",
    "pg_try_advisory_xact_lock_shared",
];

/// The function the gate stands on, made in the explore schema (and written into a printed
/// script, so it replays by hand).
pub(super) const FUNCTION: &str = "CREATE OR REPLACE FUNCTION queuebench_pause(gate integer) RETURNS integer \
LANGUAGE plpgsql VOLATILE AS $qb$ BEGIN \
PERFORM pg_advisory_lock_shared(1363279872, gate); \
PERFORM pg_advisory_unlock_shared(1363279872, gate); \
RETURN 0; END $qb$";

/// The gate session's text that closes gate `n` (before the statement is sent).
pub(super) fn hold_sql(gate: i32) -> String {
    format!("SELECT pg_advisory_lock({GATE_CLASS}, {gate})")
}

/// The gate session's text that opens gate `n` (the statement runs on).
pub(super) fn release_sql(gate: i32) -> String {
    format!("SELECT pg_advisory_unlock({GATE_CLASS}, {gate})")
}

/// Where the first try-lock call's argument starts (just past its `(`), outside quotes and
/// comments; None when the statement calls none.
fn first_try_lock(sql: &str) -> Option<usize> {
    let lower = sql.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\'' => i = skip_until(bytes, i + 1, b"'"),
            b'"' => i = skip_until(bytes, i + 1, b"\""),
            b'-' if bytes.get(i + 1) == Some(&b'-') => i = skip_until(bytes, i, b"\n"),
            b'/' if bytes.get(i + 1) == Some(&b'*') => i = skip_until(bytes, i + 2, b"*/"),
            _ => {
                let word_start = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
                if word_start && let Some(end) = call_at(&lower, i) {
                    return Some(end);
                }
                i += 1;
            }
        }
    }
    None
}

/// Past the end of the next `close` at or after `from`.
fn skip_until(bytes: &[u8], from: usize, close: &[u8]) -> usize {
    let mut j = from;
    while j < bytes.len() {
        if bytes[j..].starts_with(close) {
            return j + close.len();
        }
        j += 1;
    }
    bytes.len()
}

/// A try-lock call's name at `i` (then spaces and `(`): where its argument starts.
fn call_at(lower: &str, i: usize) -> Option<usize> {
    // The longest name first: `pg_try_advisory_lock_shared` before `pg_try_advisory_lock`.
    let mut names = TRY_LOCKS;
    names.sort_by_key(|n| std::cmp::Reverse(n.len()));
    let name = names.iter().find(|n| lower[i..].starts_with(**n))?;
    let after = &lower[i + name.len()..];
    let next = after.chars().next()?;
    if next.is_ascii_alphanumeric() || next == '_' {
        return None;
    }
    let trimmed = after.trim_start();
    trimmed.starts_with('(').then(|| lower.len() - trimmed.len() + 1)
}

/// Whether a statement has a point to pause at.
pub(super) fn has_point(sql: &str) -> bool {
    first_try_lock(sql).is_some()
}

/// Whether any statement of the queue's protocol has a point to pause at.
pub(super) fn any_point(a: &crate::adapter::Adapter) -> bool {
    let steps = [&a.select, &a.heartbeat, &a.fail, &a.reclaim, &a.cancel];
    let mut all = steps.into_iter().flatten().chain([&a.claim, &a.complete, &a.enqueue]);
    all.any(|s| s.statements.iter().any(|st| has_point(&st.text)))
}

/// The statement with gate `gate` in front of its first try-lock call's argument; None when
/// it calls none.
pub(super) fn paused(sql: &str, gate: i32) -> Option<String> {
    let at = first_try_lock(sql)?;
    Some(format!("{}queuebench_pause({gate}) + {}", &sql[..at], &sql[at..]))
}

/// The gate session: one connection that holds each paused session's gate.
pub(super) struct Gates {
    client: Client,
    _task: tokio::task::JoinHandle<()>,
    held: Vec<bool>,
}

fn gate_err(what: &str, e: &tokio_postgres::Error) -> Error {
    Error::Machine { action: what.into(), cause: crate::db::error_text(e) }
}

impl Gates {
    /// Makes the pause function in the schema of `client` (its search_path), and opens the gate session.
    pub(super) async fn open(endpoint: &crate::db::Endpoint, schema_client: &Client) -> Result<Gates> {
        schema_client.batch_execute(FUNCTION).await.map_err(|e| gate_err("making explore's pause function", &e))?;
        let (client, task) = crate::db::connect::open(endpoint, |_| {}).await.map_err(|e| Error::Machine {
            action: "opening explore's gate session".into(),
            cause: crate::db::Failed::sql(&e).to_string(),
        })?;
        Ok(Gates { client, _task: task, held: Vec::new() })
    }

    /// Closes gate `gate` (a session's number) before a paused statement is sent.
    pub(super) async fn hold(&mut self, gate: i32) -> Result<()> {
        let i = gate as usize;
        if self.held.len() <= i {
            self.held.resize(i + 1, false);
        }
        if !self.held[i] {
            self.client.batch_execute(&hold_sql(gate)).await.map_err(|e| gate_err("closing a gate", &e))?;
            self.held[i] = true;
        }
        Ok(())
    }

    /// Opens gate `gate`: the statement that stood at it runs on.
    pub(super) async fn release(&mut self, gate: i32) -> Result<()> {
        let i = gate as usize;
        if self.held.get(i).copied().unwrap_or(false) {
            self.client.batch_execute(&release_sql(gate)).await.map_err(|e| gate_err("opening a gate", &e))?;
            self.held[i] = false;
        }
        Ok(())
    }

    /// Every gate open (between schedules).
    pub(super) async fn release_all(&mut self) -> Result<()> {
        if self.held.iter().any(|h| *h) {
            self.client
                .batch_execute("SELECT pg_advisory_unlock_all()")
                .await
                .map_err(|e| gate_err("opening the gates", &e))?;
            self.held.iter_mut().for_each(|h| *h = false);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_goes_in_front_of_the_first_try_lock_call_only() {
        let sql = "SELECT pg_try_advisory_lock((j).job_id) FROM t UNION ALL SELECT pg_try_advisory_lock(x)";
        assert_eq!(
            paused(sql, 2).unwrap(),
            "SELECT pg_try_advisory_lock(queuebench_pause(2) + (j).job_id) FROM t UNION ALL SELECT pg_try_advisory_lock(x)"
        );
        assert_eq!(
            paused("select PG_TRY_ADVISORY_XACT_LOCK (1)", 1).unwrap(),
            "select PG_TRY_ADVISORY_XACT_LOCK (queuebench_pause(1) + 1)"
        );
    }

    #[test]
    fn quotes_comments_waiting_locks_and_longer_names_are_no_point() {
        for sql in [
            "SELECT 'pg_try_advisory_lock(1)'",
            "-- pg_try_advisory_lock(1)\nSELECT 1",
            "/* pg_try_advisory_lock(1) */ SELECT 1",
            "SELECT pg_advisory_lock(1)",
            "SELECT my_pg_try_advisory_lock(1)",
            "SELECT pg_try_advisory_lock_x(1)",
            "SELECT \"pg_try_advisory_lock(\" FROM t",
        ] {
            assert!(!has_point(sql), "{sql}");
        }
        assert!(has_point("SELECT pg_try_advisory_lock_shared(1, 2)"));
    }
}
