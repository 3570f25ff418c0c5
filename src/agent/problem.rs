//! What goes wrong between agents and their coordinator, as types: an agent that cannot join,
//! a run that cannot be found, evidence that cannot be read, a network command that failed.
//! Each says what the user reads; callers place it in `error::Error::Agents` or a note.

/// Why an agent cannot join the run it found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NoJoin {
    #[error("it is full or has started without this agent")]
    Full,
    #[error("--index {k}: the run has agents 1..={wanted}")]
    OutOfRange { k: i32, wanted: i32 },
    #[error("--index {k}: agent {k} has joined already (as {other})")]
    Taken { k: i32, other: String },
}

/// Why no run to join was found in the database.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NoRun {
    #[error("run {run_id} is {state}, no longer waiting for agents")]
    NotWaiting { run_id: String, state: String },
    #[error("no run `{0}` in this database")]
    Unknown(String),
    #[error("no run is waiting for agents in this database ({0} run(s) across agents found, none waiting)")]
    NoneWaiting(usize),
}

/// Why an agent's uploaded evidence cannot be read; `part` names the part (`journal`,
/// `samples`, `histograms`, `counters`, `faults`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BadEvidence {
    #[error("{part}: a list is cut short")]
    CutShort { part: &'static str },
    #[error("{part}: not gzip: {cause}")]
    NotGzip { part: &'static str, cause: String },
    #[error("{part}: {cause}")]
    Unreadable { part: &'static str, cause: String },
    #[error("faults: unknown kind `{0}`")]
    UnknownFault(String),
}

/// A command run for the agents' network (`ip`, `tc`) that failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CommandFailed {
    /// It ran and exited non-zero: its stderr.
    #[error("`{command}`: {stderr}")]
    Exited { command: String, stderr: String },
    /// It could not be started.
    #[error("`{program}`: {cause}")]
    NotStarted { program: String, cause: String },
    /// The thread that ran it failed.
    #[error("running it failed: {0}")]
    Task(String),
}
