//! What a task can fail with, each with its exit code.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad arguments or a missing tool: nothing was run (exit 2).
    #[error("{0}")]
    Usage(String),
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: not a summary.json: {source}")]
    Summary { path: PathBuf, source: serde_json::Error },
    #[error("could not start {program}: {source}")]
    Spawn { program: String, source: std::io::Error },
    /// A run the table needs failed (exit 3, as the shell scripts did).
    #[error("{0}")]
    Run(String),
    /// The task ran and its verdict is a failure (exit 1).
    #[error("{0}")]
    Failed(String),
}

impl Error {
    pub fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io { path, source }
    }

    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) => 2,
            Error::Failed(_) => 1,
            Error::Io { .. } | Error::Summary { .. } | Error::Spawn { .. } | Error::Run(_) => 3,
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;
