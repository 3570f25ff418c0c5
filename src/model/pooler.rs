//! A connection pooler between the workers and PostgreSQL (`[postgres.pgbouncer]`): its pool
//! mode decides which session state survives from one transaction to the next, and so which
//! statements the workers may keep on a connection (docs/production-postgres.md).

use serde::{Deserialize, Serialize};

/// PgBouncer's `pool_mode`: when a server connection goes back to the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PoolMode {
    /// When the client disconnects: the session is the client's, as without a pooler.
    Session,
    /// At the end of each transaction: session state (prepared statements, LISTEN, SET,
    /// session advisory locks) stays on a server connection another client may get next.
    Transaction,
    /// After each statement: no multi-statement transaction at all.
    Statement,
}

impl PoolMode {
    pub const NAMES: [&'static str; 3] = ["session", "transaction", "statement"];

    pub fn name(self) -> &'static str {
        match self {
            PoolMode::Session => "session",
            PoolMode::Transaction => "transaction",
            PoolMode::Statement => "statement",
        }
    }

    pub fn parse(text: &str) -> Option<PoolMode> {
        match text {
            "session" => Some(PoolMode::Session),
            "transaction" => Some(PoolMode::Transaction),
            "statement" => Some(PoolMode::Statement),
            _ => None,
        }
    }

    /// Does a client keep its server connection between transactions? Only then may it keep
    /// named prepared statements, LISTEN, and a backend pid that means something.
    pub fn keeps_session(self) -> bool {
        self == PoolMode::Session
    }
}

/// `[postgres.pgbouncer]`: queuebench starts PgBouncer in front of its ephemeral cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PgBouncer {
    pub mode: PoolMode,
    /// `default_pool_size`: server connections per database and user.
    pub size: u32,
}
