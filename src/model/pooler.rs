//! A connection pooler between the workers and PostgreSQL (`[postgres.pgbouncer]`): its pool
//! mode decides which session state survives from one transaction to the next, and so which
//! statements the workers may keep on a connection (docs/production-postgres.md).

use super::transport::Capability;
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

    /// What the mode takes away from the direct transport's declaration
    /// (`model::transport`): a backend of the worker's own outside session pooling, a held
    /// transaction in statement pooling. (LISTEN still runs through transaction pooling, its
    /// wake-ups lost: scenarios/pgbouncer-listen-notify.toml.)
    pub fn withholds(self) -> &'static [Capability] {
        match self {
            PoolMode::Session => &[],
            PoolMode::Transaction => &[Capability::OwnBackend],
            PoolMode::Statement => &[Capability::OwnBackend, Capability::HoldTransaction],
        }
    }
}

/// `[postgres.pgbouncer]`: queuebench starts PgBouncer in front of its ephemeral cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PgBouncer {
    pub mode: PoolMode,
    /// `default_pool_size`: server connections per database and user.
    pub size: u32,
}

/// What a run asks of its connections that a pool mode cannot give: `kill_backend` needs a
/// worker's own server process (session pooling only), `hold-transaction` a multi-statement
/// transaction (not statement pooling). The same refusals for queuebench's own PgBouncer
/// (`[postgres.pgbouncer]`) and a pooler of the user's own (`--pooler-url`): the reason, and
/// the fix as `set` writes the mode to change to (`pool_mode = "session"`).
pub(crate) fn refusal(
    mode: PoolMode,
    kills_backends: bool,
    holds_transaction: bool,
    set: fn(PoolMode) -> String,
) -> Option<String> {
    if mode.withholds().contains(&Capability::OwnBackend) && kills_backends {
        return Some(format!(
            "kill_backend terminates a worker's server process (capability `{}`), and in {} pooling a worker has \
             none of its own (each transaction may run on another): use {}, or drop the fault",
            Capability::OwnBackend.name(),
            mode.name(),
            set(PoolMode::Session)
        ));
    }
    if mode.withholds().contains(&Capability::HoldTransaction) && holds_transaction {
        return Some(format!(
            "statement pooling refuses every multi-statement transaction, and workers.mode = \"hold-transaction\" \
             claims, works and completes in one (capability `{}`): use {}, or workers.mode = \"lease\"",
            Capability::HoldTransaction.name(),
            set(PoolMode::Transaction)
        ));
    }
    None
}
