//! Errors that carry their exit code.
//!
//! Exit codes are API (see README "Exit codes"): 0 every expectation met,
//! 1 an expectation failed, 2 usage or scenario error, 3 infrastructure
//! error, 130 interrupted. Every error message says what to do about it.

use std::fmt;

/// The exit codes queuebench documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    Passed = 0,
    ExpectationFailed = 1,
    Usage = 2,
    Infrastructure = 3,
    Interrupted = 130,
}

impl ExitCode {
    pub fn code(self) -> i32 {
        self as i32
    }

    /// The worse of two outcomes (used when several scenarios run in one call).
    pub fn worst(self, other: ExitCode) -> ExitCode {
        let rank = |c: ExitCode| match c {
            ExitCode::Passed => 0,
            ExitCode::ExpectationFailed => 1,
            ExitCode::Usage => 2,
            ExitCode::Infrastructure => 3,
            ExitCode::Interrupted => 4,
        };
        if rank(other) > rank(self) { other } else { self }
    }
}

/// An error classified by who has to fix it.
#[derive(Debug)]
pub enum Error {
    /// The scenario file, a `--set` override or a command-line flag is wrong (exit 2).
    Usage(String),
    /// The database or the machine failed us (exit 3).
    Infra(String),
}

impl Error {
    pub fn usage(msg: impl Into<String>) -> Self {
        Error::Usage(msg.into())
    }
    pub fn infra(msg: impl Into<String>) -> Self {
        Error::Infra(msg.into())
    }
    pub fn exit_code(&self) -> ExitCode {
        match self {
            Error::Usage(_) => ExitCode::Usage,
            Error::Infra(_) => ExitCode::Infrastructure,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(m) | Error::Infra(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;
