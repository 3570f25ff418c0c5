//! Statement errors as the checkers judge them: which of the queue's statements failed, with
//! which SQLSTATE, how often, and the first message. A claim, completion, failure, heartbeat,
//! commit or a producer's enqueue that errors is the queue's SQL going wrong (a unique violation where two workers took
//! one lock, a serialization failure, a deadlock) unless the adapter or the scenario declares
//! the code expected, or a fault the run injected explains it (a lost connection).

use serde::{Deserialize, Serialize};

/// The statement a worker was running when the error came back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Statement {
    Claim,
    Complete,
    Fail,
    Heartbeat,
    /// The COMMIT of a hold-transaction round.
    Commit,
    /// The harness's own effects-ledger write.
    Effects,
    /// Anything else (BEGIN, the drained check).
    #[default]
    Other,
    /// A producer's enqueue (open model).
    Enqueue,
}

impl Statement {
    pub const ALL: [Statement; 8] = [
        Statement::Claim,
        Statement::Complete,
        Statement::Fail,
        Statement::Heartbeat,
        Statement::Commit,
        Statement::Effects,
        Statement::Other,
        Statement::Enqueue,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Statement::Claim => "claim",
            Statement::Complete => "complete",
            Statement::Fail => "fail",
            Statement::Heartbeat => "heartbeat",
            Statement::Commit => "commit",
            Statement::Effects => "effects",
            Statement::Other => "other",
            Statement::Enqueue => "enqueue",
        }
    }

    pub fn parse(name: &str) -> Option<Statement> {
        Statement::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The queue's own statements, whose errors `unexpected_errors` judges.
    pub fn is_the_queues(self) -> bool {
        !matches!(self, Statement::Effects | Statement::Other)
    }
}

/// The key a worker's tally files an error under: `claim:40001`.
pub fn key(at: Statement, code: &str) -> String {
    format!("{}:{code}", at.name())
}

/// One (statement, SQLSTATE) pair's errors, as the evidence keeps them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ErrorCount {
    pub statement: Statement,
    /// SQLSTATE, or `io` for a lost connection.
    pub code: String,
    pub count: u64,
    /// The first such error's message.
    pub first: String,
}

/// A lost or refused connection: `io`, SQLSTATE class 08, an administrator's or a crash's
/// shutdown (57P01–57P03).
pub fn is_connection_loss(code: &str) -> bool {
    code == "io" || code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03")
}

/// A wait of the client's own, not an answer of the server's: a pooled connection that never
/// came (`acquire_timeout`, `workers.pool`). No statement was sent, so it says nothing about the
/// queue's SQL.
pub fn is_client_wait(code: &str) -> bool {
    code == "acquire_timeout"
}

/// A SQLSTATE as written in `expected_errors`: five digits or upper-case letters.
pub fn is_sqlstate(code: &str) -> bool {
    code.len() == 5 && code.bytes().all(|b| b.is_ascii_digit() || b.is_ascii_uppercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_codes() {
        assert_eq!(key(Statement::Claim, "23505"), "claim:23505");
        for s in Statement::ALL {
            assert_eq!(Statement::parse(s.name()), Some(s));
        }
        assert!(is_connection_loss("io") && is_connection_loss("57P01") && is_connection_loss("08006"));
        assert!(!is_connection_loss("23505") && !is_connection_loss("40001"));
        assert!(is_sqlstate("40001") && is_sqlstate("55P03") && !is_sqlstate("4000") && !is_sqlstate("40o01"));
    }
}
