//! Errors that carry their exit code and the context that says the fix.
//!
//! Exit codes are API (see README "Exit codes"): 0 every expectation met,
//! 1 an expectation failed, 2 usage or scenario error, 3 infrastructure
//! error, 130 interrupted. Every error message says what to do about it.
//!
//! [`Error`] is classified by who has to act and on what: the scenario file, a flag, a path,
//! the target database (exit 2), or the database and the machine failing us (exit 3). Each
//! variant keeps the parts a caller or a test can look at (file, line, key, flag, path,
//! target, SQLSTATE) and renders them into the message the user reads.
//!
//! Lower layers that only judge a value return [`Invalid`] (or a small enum of their own,
//! e.g. `scenario::units::DurationError`): what is wrong and what is accepted. The caller
//! knows where the value came from and places it ([`Error::Scenario`] with the file, line
//! and key, or [`Error::FlagValue`] with the flag).

mod echo;
mod excerpt;
mod render;
pub use echo::{SHOWN_CHARS, find_key_line, shorten_values, shown, toml_error, toml_hint};
pub use excerpt::filter;
use render::{access, baseline, missing, scenario, unfit, with_sets};
use std::fmt;
use std::path::PathBuf;

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

/// A value that does not fit: what is wrong with it and what is accepted. Returned by the
/// functions that judge values without knowing where they came from; the caller places it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct Invalid {
    /// The key below the caller's that holds the value (`fallback_poll` when the caller checks
    /// `[workers]`, a metric in `[baseline.tolerance]`); None when the caller's key is the place.
    pub key: Option<String>,
    /// What is wrong and what is accepted.
    pub reason: String,
}

impl From<String> for Invalid {
    fn from(reason: String) -> Invalid {
        Invalid::new(reason)
    }
}

impl From<&str> for Invalid {
    fn from(reason: &str) -> Invalid {
        Invalid::new(reason)
    }
}

impl Invalid {
    pub fn new(reason: impl Into<String>) -> Invalid {
        Invalid { key: None, reason: reason.into() }
    }

    /// The value under `key` (below the caller's key) is wrong.
    pub fn at(key: impl Into<String>, reason: impl Into<String>) -> Invalid {
        Invalid { key: Some(key.into()), reason: reason.into() }
    }

    /// The same error, its reason led by `context` (`jobs.classes `a`: work: …`).
    pub fn within(self, context: impl fmt::Display) -> Invalid {
        Invalid { key: self.key, reason: format!("{context}: {}", self.reason) }
    }
}

/// What PostgreSQL said when a connection or a statement failed (`db::sql` reads it from the
/// driver): the server's message and SQLSTATE, or the driver's message and its causes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sql {
    pub message: String,
    /// The server's SQLSTATE (`42P01`); None when the failure never reached the server.
    pub sqlstate: Option<String>,
}

impl fmt::Display for Sql {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.sqlstate {
            Some(code) => write!(f, "{} (SQLSTATE {code})", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for Sql {}

/// Why a session of the run (a worker's connection, the LISTEN probe) could not be set up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionFailure {
    /// A step on the server failed: `connecting`, `LISTEN "ch"`, `preparing the strategy's claim
    /// statement` (then with the statement as sent).
    #[error("{step}: {sql}{}", .statement.as_ref().map(|s| format!("\n  SQL: {s}")).unwrap_or_default())]
    Sql { step: String, sql: Sql, statement: Option<String> },
    /// The strategy's statements do not fit together (the claim lacks a column the others use).
    #[error("{0}")]
    Statements(Invalid),
    /// The task opening the connection panicked.
    #[error("opening a connection panicked: {0}")]
    Panicked(String),
}

/// What queuebench was doing with a file or folder, as its message says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    Read,
    ReadScenario,
    Create,
    Write,
    /// `rename(2)` of a temporary file over this path.
    RenameTo(PathBuf),
    CreateSweepFolder,
    CreateResultsFolder,
    WriteInResultsFolder,
    CreateDirectoryIn,
    CreateUniqueDirectoryIn,
    Prepare,
    /// Run a program (initdb).
    Run,
    /// Start a program that keeps running (postgres).
    Start,
    WriteChartInto,
    /// An atomic write of this file failed (the cause says which step).
    Replace,
    OpenStepSummary,
    WriteStepSummary,
    /// The `--log FILE` of diagnostics.
    WriteLog,
}

/// The scenario does not fit the target database (exit 2); each case names its fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unfit {
    /// A `--database-url` host that is not on this machine, without `--yes`.
    Remote,
    /// The ephemeral cluster's postmaster refused a `[postgres.settings]` value (its log lines).
    RefusedSetting { refusal: String },
    /// `--schema` names an existing schema and `--reuse` was not given.
    SchemaExists { schema: String },
    /// `--reuse`: an object with one of queuebench's names that queuebench did not create.
    ForeignObject { schema: String, object: String },
    /// More connections than the server has free; `own_server`: a cluster or container of ours.
    TooFewConnections { workers: u32, need: i64, slots: i64, own_server: bool },
    /// A `postgres_restart` fault on a server queuebench did not start.
    RestartNeedsEphemeral { file: PathBuf },
    /// `[postgres] standby` (and a `failover`) on a server queuebench did not start.
    StandbyNeedsEphemeral { file: PathBuf },
    /// `[postgres.settings] max_connections` below what the run needs (ephemeral cluster).
    MaxConnectionsTooLow { file: PathBuf, setting: i64, workers: u32, need: i64 },
    /// `[postgres.pgbouncer]` on a server queuebench did not start.
    PoolerNeedsEphemeral { file: PathBuf },
    /// `--pg-version` (or `[postgres] version`) on a server queuebench did not start.
    VersionNeedsEphemeral { major: u32 },
}

/// A baseline that `--baseline`, `--save-baseline` or `compare` cannot use (exit 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BaselineProblem {
    /// The name is not a plain file-name part.
    BadName,
    /// No file for this scenario under that name.
    Missing { scenario: String, file: PathBuf },
    /// The baseline's folder holds no scenario file.
    Empty { dir: PathBuf },
    /// The baseline's folder holds several scenario files.
    Several { files: Vec<PathBuf> },
    /// Neither a path nor a baseline name.
    Unknown { dir: PathBuf },
}

/// What this machine lacks to start an ephemeral cluster (exit 3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Missing {
    /// Running as root with no `postgres` system user to run the cluster as.
    PostgresUser,
    /// `QUEUEBENCH_PG_BINDIR` points where there is no initdb and postgres.
    BinDir(PathBuf),
    /// No server binaries anywhere queuebench looks.
    ServerBinaries,
    /// `[postgres.pgbouncer]` and no `pgbouncer` program (`QUEUEBENCH_PGBOUNCER`, PATH, /usr/sbin).
    PgBouncer { given: Option<PathBuf> },
    /// `queuebench postgres fetch` and no `npm` program to fetch with.
    Npm { npm: PathBuf },
    /// `npm pack` of a pinned package failed (the network, the registry npm is set to): its output.
    Fetch { spec: String, output: String },
    /// `--pg-version N` (or `[postgres] version`) and no binaries of that major anywhere
    /// queuebench looks; `seen`: the folders found, with their versions.
    Version { major: u32, cache: PathBuf, seen: Vec<String> },
    /// As root the cluster runs as `postgres`, who cannot enter `blocked`, a folder above `bindir`.
    Unreachable { bindir: PathBuf, blocked: PathBuf },
    /// The scenario needs a server program `bindir` does not hold (a standby needs
    /// `pg_basebackup` of the same major; the fetched packages carry only initdb, pg_ctl and
    /// postgres).
    Tool { tool: &'static str, bindir: PathBuf, why: &'static str },
}

/// A TLS setting that cannot be used (exit 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TlsSetting {
    UnknownMode {
        value: String,
        from: String,
        accepted: &'static str,
    },
    MissingFile {
        path: PathBuf,
        from: String,
    },
    /// A verifying mode and no root certificate file anywhere libpq looks.
    NoRootCert {
        mode: &'static str,
        default: PathBuf,
    },
    /// A file that is there but holds no usable certificate or key.
    BadFile {
        path: PathBuf,
        from: String,
        reason: String,
    },
    /// `sslcert` without `sslkey` (or the other way round).
    HalfPair {
        given: String,
        missing: &'static str,
        missing_env: &'static str,
    },
}

impl fmt::Display for TlsSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TlsSetting::UnknownMode { value, from, accepted } => {
                write!(f, "sslmode `{value}` ({from}) is not a libpq sslmode; use one of {accepted}")
            }
            TlsSetting::MissingFile { path, from } => {
                write!(f, "{} ({from}) does not exist; give the file's path, or leave the setting out", path.display())
            }
            TlsSetting::NoRootCert { mode, default } => write!(
                f,
                "sslmode={mode} checks the server's certificate against a root certificate file, and none was \
                 given: set sslrootcert=FILE in the URL (or PGSSLROOTCERT), or put the CA certificate in {} \
                 (libpq's default); sslmode=require encrypts without checking",
                default.display()
            ),
            TlsSetting::BadFile { path, from, reason } => write!(f, "{} ({from}): {reason}", path.display()),
            TlsSetting::HalfPair { given, missing, missing_env } => write!(
                f,
                "{given} is set but {missing} is not: a client certificate and its key go together (set {missing} \
                 in the URL or {missing_env})"
            ),
        }
    }
}

/// A TLS connection that failed (exit 3), said as what failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TlsFailure {
    /// The server answered the SSLRequest with `N`.
    NotOffered { mode: &'static str },
    /// The chain does not lead to the root certificate file.
    Untrusted { root: Option<PathBuf>, detail: String },
    /// verify-full: none of the certificate's names is the host asked for.
    NameMismatch { host: String, names: Vec<String> },
    /// The server refused the client certificate (or wanted one and got none).
    ClientCertRefused { cert: Option<PathBuf>, detail: String },
    /// Any other handshake failure.
    Handshake { detail: String },
}

impl fmt::Display for TlsFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TlsFailure::NotOffered { mode } => write!(
                f,
                "the server does not offer TLS, and sslmode={mode} requires it: turn on ssl in the server's \
                 postgresql.conf (ssl = on, ssl_cert_file, ssl_key_file), or use sslmode=prefer to allow a \
                 plain connection"
            ),
            TlsFailure::Untrusted { root: Some(root), detail } => write!(
                f,
                "the server's certificate is not trusted: it is not signed by a certificate in the root \
                 certificate file {} ({detail}); give the CA that signed the server's certificate as sslrootcert",
                root.display()
            ),
            TlsFailure::Untrusted { root: None, detail } => {
                write!(f, "the server's certificate is not trusted ({detail})")
            }
            TlsFailure::NameMismatch { host, names } => write!(
                f,
                "the server's certificate is for {} but the host asked for is {host} (sslmode=verify-full \
                 checks the name): connect with one of the certificate's names, or use sslmode=verify-ca to \
                 check the chain only",
                if names.is_empty() { "no name at all".to_string() } else { names.join(", ") }
            ),
            TlsFailure::ClientCertRefused { cert, detail } => write!(
                f,
                "the server refused the client certificate{} ({detail}): check sslcert and sslkey, and that the \
                 server trusts their CA (ssl_ca_file)",
                cert.as_ref().map(|c| format!(" {}", c.display())).unwrap_or_else(|| " (none was given)".into())
            ),
            TlsFailure::Handshake { detail } => write!(f, "the TLS handshake failed: {detail}"),
        }
    }
}

/// An error classified by who has to fix it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    // ---- exit 2: the scenario, the command line or the paths given ----
    /// A scenario key breaks a rule: `file:line: key: reason`, or `file: --set k=v: reason`
    /// when an override supplied the value.
    #[error("{}", scenario(.file, *.line, .key, .via_set.as_deref(), &shorten_values(.reason)))]
    Scenario { file: PathBuf, line: Option<usize>, key: String, via_set: Option<String>, reason: String },
    /// The scenario as a whole: not TOML, not a scenario (with its overrides), or not
    /// expressible as asked (`queuebench sql --pgbench`).
    #[error("{}{}: {}", .file.display(), with_sets(.sets), shorten_values(.reason))]
    ScenarioFile { file: PathBuf, sets: Vec<String>, reason: String },
    /// A flag that is wrong as given: `{flag} {reason}` (`--repeat must be at least 1`).
    #[error("{flag} {}", shorten_values(.reason))]
    Flag { flag: String, reason: String },
    /// A flag's value that its parser refused: `--set k=v: …`, `--expect: …`.
    #[error(
        "{flag}{}: {}",
        .value.as_ref().map(|v| format!(" {}", shown(v))).unwrap_or_default(),
        shorten_values(&.invalid.reason)
    )]
    FlagValue { flag: String, value: Option<String>, invalid: Invalid },
    /// `--time-scale` together with `--set run.time_scale`.
    #[error("give the time scale once: --time-scale or --set run.time_scale, not both")]
    TimeScaleTwice,
    /// A sweep grid over the cell limit.
    #[error("the grid has {cells} cells (more than {max}); shorten the --set lists")]
    GridTooLarge { cells: usize, max: usize },
    /// A baseline name or argument that does not lead to one baseline.
    #[error("{}", baseline(.name, .problem))]
    Baseline { name: String, problem: BaselineProblem },
    /// A path given (or one under it) that cannot be read, created or written.
    #[error("{}", access(.action, .path, .cause.as_deref()))]
    Path { action: Access, path: PathBuf, cause: Option<String> },
    /// A file read back (a summary.json, a baseline) that is not what it should be.
    #[error("{}: {}", .path.display(), shorten_values(.reason))]
    Input { path: PathBuf, reason: String },
    /// `compare` of runs whose fingerprints differ, without `--force`.
    #[error(
        "{old} and {new} are not comparable: their fingerprints differ\n{}\n(--force compares them anyway)",
        .differences.iter().map(|d| format!("  {d}")).collect::<Vec<_>>().join("\n")
    )]
    NotComparable { old: String, new: String, differences: Vec<String> },
    /// The command given to `queuebench cluster --` cannot be run.
    #[error("cannot run `{command}`: {cause}")]
    Command { command: String, cause: String },
    /// A TLS setting (sslmode, sslrootcert, sslcert, sslkey; URL or environment) that cannot be used.
    #[error("{setting}")]
    TlsSetting { setting: TlsSetting },
    /// The scenario or the flags do not fit the target database (as messages name it).
    #[error("{}", unfit(.target, .problem))]
    Unfit { target: String, problem: Unfit },

    // ---- exit 3: the database or the machine failed us ----
    /// The server could not be reached or refused the login.
    #[error("cannot connect to PostgreSQL at {target}: {sql}; {hint}")]
    Connect { target: String, sql: Sql, hint: String },
    /// A TLS connection failed: what failed (not offered, not trusted, wrong name, client
    /// certificate refused).
    #[error("cannot connect to PostgreSQL at {target} over TLS: {failure}")]
    Tls { target: String, failure: TlsFailure },
    /// A statement of setup, teardown or the final read failed: `{action}[ in {target}] failed:
    /// {sql}[; {hint}]`; `action` is the statement itself when it is short enough to show.
    #[error(
        "{action}{} failed: {sql}{}",
        .target.as_ref().map(|t| format!(" in {t}")).unwrap_or_default(),
        .hint.as_ref().map(|h| format!("; {h}")).unwrap_or_default()
    )]
    Database { action: String, target: Option<String>, sql: Sql, hint: Option<String> },
    /// A worker session for the strategy could not be set up on the target.
    #[error("strategy `{strategy}` on {target}: {failure}")]
    Strategy { strategy: String, target: String, failure: Box<SessionFailure> },
    /// The LISTEN/NOTIFY rollback probe could not run on the target.
    #[error("rollback probe: {failure} (on {target})")]
    Probe { target: String, failure: Box<SessionFailure> },
    /// A file or folder of queuebench's own (the cluster's, an output being written) failed.
    #[error("{}", access(.action, .path, .cause.as_deref()))]
    Io { action: Access, path: PathBuf, cause: Option<String> },
    /// A program failed: `{program} failed ({status}):\n{output}`.
    #[error("{program} failed ({status}):\n{output}")]
    Process { program: String, status: String, output: String },
    /// The ephemeral cluster started but did not accept connections in time.
    #[error("the ephemeral cluster did not accept connections within {seconds} s ({cause}); log:\n{log_tail}")]
    ClusterNotReady { seconds: u64, cause: String, log_tail: String },
    /// The machine lacks what an ephemeral cluster needs.
    #[error("{}", missing(.0))]
    Missing(Missing),
    /// Something on this machine failed while doing `action` (a task panicked, a chart could
    /// not be drawn, the cluster exited): `{action}: {cause}`.
    #[error("{action}: {cause}")]
    Machine { action: String, cause: String },
    /// A run across agents could not go on (docs/agents.md): `run` names the run, `reason`
    /// what went wrong and what to do (exit 3).
    #[error("agents of run {run}: {reason}")]
    Agents { run: String, reason: String },
}

impl Error {
    /// A path given on the command line (or one under it) that cannot be used (exit 2).
    pub fn path(action: Access, path: impl Into<PathBuf>, cause: impl fmt::Display) -> Error {
        Error::Path { action, path: path.into(), cause: Some(cause.to_string()) }
    }

    /// A file or folder of queuebench's own that failed (exit 3).
    pub fn io(action: Access, path: impl Into<PathBuf>, cause: impl fmt::Display) -> Error {
        Error::Io { action, path: path.into(), cause: Some(cause.to_string()) }
    }

    /// Something on this machine failed while doing `action` (exit 3).
    pub fn machine(action: impl Into<String>, cause: impl fmt::Display) -> Error {
        Error::Machine { action: action.into(), cause: cause.to_string() }
    }

    pub fn exit_code(&self) -> ExitCode {
        match self {
            Error::Scenario { .. }
            | Error::ScenarioFile { .. }
            | Error::Flag { .. }
            | Error::FlagValue { .. }
            | Error::TimeScaleTwice
            | Error::GridTooLarge { .. }
            | Error::Baseline { .. }
            | Error::Path { .. }
            | Error::Input { .. }
            | Error::NotComparable { .. }
            | Error::Command { .. }
            | Error::TlsSetting { .. }
            | Error::Unfit { .. } => ExitCode::Usage,
            Error::Connect { .. }
            | Error::Tls { .. }
            | Error::Database { .. }
            | Error::Strategy { .. }
            | Error::Probe { .. }
            | Error::Io { .. }
            | Error::Process { .. }
            | Error::ClusterNotReady { .. }
            | Error::Missing(_)
            | Error::Machine { .. }
            | Error::Agents { .. } => ExitCode::Infrastructure,
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scenario_error_names_the_line_the_key_or_the_override() {
        let at = |line, via_set: Option<&str>| Error::Scenario {
            file: "s.toml".into(),
            line,
            key: "workers.count".into(),
            via_set: via_set.map(String::from),
            reason: "must be between 1 and 100000, got 0".into(),
        };
        assert_eq!(at(Some(3), None).to_string(), "s.toml:3: workers.count: must be between 1 and 100000, got 0");
        assert_eq!(at(None, None).to_string(), "s.toml: workers.count: must be between 1 and 100000, got 0");
        assert_eq!(
            at(Some(3), Some("workers.count=0")).to_string(),
            "s.toml: --set workers.count=0: must be between 1 and 100000, got 0"
        );
        assert_eq!(at(None, None).exit_code(), ExitCode::Usage);
    }

    #[test]
    fn the_sqlstate_follows_the_server_message() {
        let sql = Sql { message: "relation \"jobs\" does not exist".into(), sqlstate: Some("42P01".into()) };
        let e = Error::Database { action: "preloading jobs".into(), target: None, sql, hint: None };
        assert_eq!(e.to_string(), "preloading jobs failed: relation \"jobs\" does not exist (SQLSTATE 42P01)");
        assert_eq!(e.exit_code(), ExitCode::Infrastructure);
    }

    #[test]
    fn paths_say_what_could_not_be_done() {
        let e = Error::path(Access::CreateResultsFolder, "/r", "Permission denied");
        assert_eq!(
            e.to_string(),
            "cannot create the results folder /r: Permission denied; pick a writable place with --out DIR"
        );
        assert_eq!(e.exit_code(), ExitCode::Usage);
        let e = Error::Io { action: Access::CreateUniqueDirectoryIn, path: "/tmp".into(), cause: None };
        assert_eq!(e.to_string(), "cannot create a unique directory in /tmp");
        assert_eq!(e.exit_code(), ExitCode::Infrastructure);
    }

    #[test]
    fn a_flag_value_error_names_the_flag_and_the_value() {
        let e = Error::FlagValue {
            flag: "--set".into(),
            value: Some("x".into()),
            invalid: Invalid::new("expected key=value"),
        };
        assert_eq!(e.to_string(), "--set x: expected key=value");
        let e = Error::FlagValue { flag: "--expect".into(), value: None, invalid: Invalid::new("`x` is not a metric") };
        assert_eq!(e.to_string(), "--expect: `x` is not a metric");
    }
}
