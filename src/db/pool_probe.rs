//! `--pooler-url URL?pool_mode=MODE`: the declared mode is checked against what the pooler
//! does, before anything is created. queuebench cannot ask a pooler its mode, but it can watch
//! it: through the pooler it runs a transaction of three statements (statement pooling refuses
//! it), and, when `session` is declared, it holds one client's connection while a second client
//! holds a transaction open, and reads both backend pids. In session pooling a client keeps its
//! server process for its whole life, so the second client can never be on it and the first
//! one's pid never changes; a pooler that hands the first client's server process to the second
//! between two of its transactions does not keep sessions. Nothing is written, no state is
//! left on a server connection (no SET, no PREPARE).
//!
//! A mismatch the probe sees is a refusal (exit 2) naming what it saw. A `transaction`
//! declaration for a pooler that keeps sessions is not refused: every statement that works in
//! transaction pooling works there too, and the probe cannot prove it on a busy pool.

use super::Database;
use crate::error::{Error, Result};
use crate::model::pooler::PoolMode;
use std::time::Duration;
use tokio_postgres::{Client, SimpleQueryMessage};

/// How long one probe statement may wait for a server connection. In session pooling with a
/// full pool the second client waits for a whole session: that is no evidence either way.
const WAIT: Duration = Duration::from_secs(3);

/// Rounds of the session test: one suffices with PgBouncer (it hands out the server
/// connection released last); more for a pooler that picks another.
const ROUNDS: usize = 3;

/// What the probe saw that contradicts the declared mode.
enum Seen {
    /// `BEGIN`, `SELECT 1`, `COMMIT` failed: statement pooling.
    NoTransactionBlock(String),
    /// The same three ran: not statement pooling.
    TransactionBlock,
    /// Between two transactions of one client, its server process served another client.
    HandedOver { first: i32, other: i32, second: Option<i32> },
}

impl Database {
    /// Checks `--pooler-url`'s declared pool mode against the pooler (the module docs); a
    /// mismatch is refused with exit 2, a pooler that cannot be reached is exit 3.
    pub async fn probe_pool_mode(&self) -> Result<()> {
        let Some(declared) = self.external_pool_mode() else { return Ok(()) };
        let a = self.pooler_client().await?;
        let seen = match (transaction_block(&a).await, declared) {
            (Some(e), PoolMode::Session | PoolMode::Transaction) => Some(Seen::NoTransactionBlock(e)),
            (None, PoolMode::Statement) => Some(Seen::TransactionBlock),
            (None, PoolMode::Session) => self.handed_over(&a).await?,
            _ => None,
        };
        match seen {
            None => Ok(()),
            Some(seen) => Err(Error::Flag { flag: "--pooler-url".into(), reason: mismatch(declared, &seen) }),
        }
    }

    /// A client connection through `--pooler-url` (exit 3 when the pooler refuses it).
    async fn pooler_client(&self) -> Result<Client> {
        let endpoint = self.pooled_config();
        let (client, _task) = super::connect::open(&endpoint, |_| {}).await.map_err(|e| Error::Database {
            action: "connecting through --pooler-url".into(),
            target: Some(super::password::display_url(&endpoint)),
            sql: super::sql(&e),
            hint: None,
        })?;
        Ok(client)
    }

    /// The session test: `a` reads its backend pid, a second client holds a transaction open
    /// and reads its own, then `a` reads its pid again.
    async fn handed_over(&self, a: &Client) -> Result<Option<Seen>> {
        for _ in 0..ROUNDS {
            let Some(first) = pid(a).await else { return Ok(None) };
            let b = self.pooler_client().await?;
            if !matches!(bounded(b.simple_query("BEGIN")).await, Some(Ok(_))) {
                // No server connection for a second client within WAIT: the pool is full, as in
                // session pooling when the first client holds the last one.
                return Ok(None);
            }
            let Some(other) = pid(&b).await else { return Ok(None) };
            let second = pid(a).await;
            let _ = bounded(b.simple_query("COMMIT")).await;
            if other == first || second != Some(first) {
                return Ok(Some(Seen::HandedOver { first, other, second }));
            }
        }
        Ok(None)
    }
}

/// `BEGIN`, `SELECT 1`, `COMMIT` as three statements; what went wrong when one fails.
async fn transaction_block(client: &Client) -> Option<String> {
    for statement in ["BEGIN", "SELECT 1", "COMMIT"] {
        match bounded(client.simple_query(statement)).await {
            Some(Ok(_)) => {}
            Some(Err(e)) => return Some(format!("{statement} failed: {}", super::sql(&e).message)),
            None => return Some(format!("{statement} had no answer within {} s", WAIT.as_secs())),
        }
    }
    None
}

/// `pg_backend_pid()` of the server process the client's next transaction runs on (None when
/// it gets none within WAIT).
async fn pid(client: &Client) -> Option<i32> {
    let rows = bounded(client.simple_query("SELECT pg_backend_pid()")).await?.ok()?;
    rows.iter().find_map(|m| match m {
        SimpleQueryMessage::Row(r) => r.get(0).and_then(|p| p.parse().ok()),
        _ => None,
    })
}

async fn bounded<T>(f: impl std::future::Future<Output = T>) -> Option<T> {
    tokio::time::timeout(WAIT, f).await.ok()
}

/// The refusal: what was declared, what was seen, the fix.
fn mismatch(declared: PoolMode, seen: &Seen) -> String {
    let head = format!("declares pool_mode={}, but the pooler", declared.name());
    let tail = "Give the mode the pooler runs (its pool_mode setting) in the URL. Nothing was created";
    match seen {
        Seen::NoTransactionBlock(e) => format!(
            "{head} refused a transaction of three statements (BEGIN; SELECT 1; COMMIT: {e}): that is statement \
             pooling, ?pool_mode=statement. {tail}"
        ),
        Seen::TransactionBlock => format!(
            "{head} ran a transaction of three statements (BEGIN; SELECT 1; COMMIT), which statement pooling \
             refuses: it runs transaction or session pooling. {tail}"
        ),
        Seen::HandedOver { first, other, second } => {
            let second = match second {
                Some(p) if p != first => format!("its next transaction ran on backend pid {p}"),
                Some(_) => "its next transaction ran there again".to_string(),
                None => format!("its next transaction got no server connection within {} s", WAIT.as_secs()),
            };
            format!(
                "{head} does not keep a client's server connection: one client's transaction ran on backend pid \
                 {first}, then another client's open transaction ran on backend pid {other}, and {second}. In \
                 session pooling neither can happen: that is transaction pooling, ?pool_mode=transaction. {tail}"
            )
        }
    }
}
