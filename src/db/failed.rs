//! A database failure as the messages show it: the server's message and SQLSTATE, or the
//! driver's message with its causes.

use crate::error::Sql;

/// An error a message shows as text and SQLSTATE: the driver's, or a connect [`super::hosts::Failure`].
pub trait Failed {
    fn sql(&self) -> Sql;
}

/// What the server said (its message and SQLSTATE), or the driver's message with its causes
/// when the failure never reached the server.
impl Failed for tokio_postgres::Error {
    fn sql(&self) -> Sql {
        match self.as_db_error() {
            Some(db) => Sql { message: db.message().to_string(), sqlstate: Some(db.code().code().to_string()) },
            None => {
                let mut message = self.to_string();
                let mut source = std::error::Error::source(self);
                while let Some(inner) = source {
                    message.push_str(&format!(": {inner}"));
                    source = inner.source();
                }
                Sql { message, sqlstate: None }
            }
        }
    }
}

/// The error's message and SQLSTATE ([`Failed`]).
pub fn sql(e: &impl Failed) -> Sql {
    e.sql()
}

/// The driver's message with the server's detail, if any: `message (SQLSTATE xxxxx)`.
pub fn error_text(e: &impl Failed) -> String {
    e.sql().to_string()
}
