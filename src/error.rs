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

use std::borrow::Cow;
use std::fmt;
use std::path::{Path, PathBuf};

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
    /// `[postgres.settings] max_connections` below what the run needs (ephemeral cluster).
    MaxConnectionsTooLow { file: PathBuf, setting: i64, workers: u32, need: i64 },
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

fn scenario(file: &Path, line: Option<usize>, key: &str, via_set: Option<&str>, reason: &str) -> String {
    let file = file.display();
    match (via_set, line) {
        (Some(set), _) => format!("{file}: --set {}: {reason}", shown(set)),
        (None, Some(line)) => format!("{file}:{line}: {key}: {reason}"),
        (None, None) => format!("{file}: {key}: {reason}"),
    }
}

fn with_sets(sets: &[String]) -> String {
    if sets.is_empty() {
        String::new()
    } else {
        format!(" with --set {}", sets.iter().map(|s| shown(s)).collect::<Vec<_>>().join(" --set "))
    }
}

fn access(action: &Access, path: &Path, cause: Option<&str>) -> String {
    let p = path.display();
    let head = match action {
        Access::Read => format!("cannot read {p}"),
        Access::ReadScenario => format!("cannot read scenario {p}"),
        Access::Create => format!("cannot create {p}"),
        Access::Write => format!("cannot write {p}"),
        Access::RenameTo(to) => format!("cannot rename {p} to {}", to.display()),
        Access::CreateSweepFolder => format!("cannot create the sweep folder {p}"),
        Access::CreateResultsFolder => format!("cannot create the results folder {p}"),
        Access::WriteInResultsFolder => format!("cannot write in the results folder {p}"),
        Access::CreateDirectoryIn => format!("cannot create a directory in {p}"),
        Access::CreateUniqueDirectoryIn => format!("cannot create a unique directory in {p}"),
        Access::Prepare => format!("cannot prepare {p}"),
        Access::Run => format!("cannot run {p}"),
        Access::Start => format!("cannot start {p}"),
        Access::WriteChartInto => format!("cannot write the chart into {p}"),
        Access::Replace => format!("{p} was not written"),
        Access::OpenStepSummary => format!("cannot open $GITHUB_STEP_SUMMARY ({p})"),
        Access::WriteStepSummary => "cannot write $GITHUB_STEP_SUMMARY".to_string(),
        Access::WriteLog => format!("cannot write the --log file {p}"),
    };
    let hint = match action {
        Access::CreateResultsFolder | Access::WriteInResultsFolder => "; pick a writable place with --out DIR",
        _ => "",
    };
    match cause {
        Some(cause) => format!("{head}: {cause}{hint}"),
        None => format!("{head}{hint}"),
    }
}

fn baseline(name: &str, problem: &BaselineProblem) -> String {
    match problem {
        BaselineProblem::BadName => {
            format!("baseline name `{}`: use letters, digits, -, _ and . (e.g. main or v1.2)", shown(name))
        }
        BaselineProblem::Missing { scenario, file } => format!(
            "no baseline `{name}` for scenario `{scenario}` ({} does not exist); save one with --save-baseline {name}",
            file.display()
        ),
        BaselineProblem::Empty { dir } => format!("baseline `{name}` in {} holds no scenario", dir.display()),
        BaselineProblem::Several { files } => format!(
            "baseline `{name}` holds several scenarios; name one file: {}",
            files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", ")
        ),
        BaselineProblem::Unknown { dir } => format!(
            "`{name}` is neither a summary.json, a run folder, a baseline file nor a baseline name in {}",
            dir.display()
        ),
    }
}

fn unfit(target: &str, problem: &Unfit) -> String {
    match problem {
        Unfit::Remote => format!(
            "{target} is not on this machine: queuebench creates a schema there, loads it with jobs and drives \
             it hard. If that is what you want, add --yes"
        ),
        Unfit::RefusedSetting { refusal } => format!(
            "[postgres.settings]: PostgreSQL refused a setting: {refusal}. Fix it in the \
             scenario (memory units: B, kB, MB, GB, TB; time units: us, ms, s, min, h, d); the cluster \
             was removed"
        ),
        Unfit::SchemaExists { schema } => {
            // Suggest dropping it only when the name says it is a leftover of ours.
            let leftover = if schema.starts_with("queuebench_") {
                format!(", drop it if it is left over from an earlier run (DROP SCHEMA {schema} CASCADE)")
            } else {
                String::new()
            };
            format!(
                "schema {schema} already exists in {target}; queuebench never adopts a schema it did not create. \
                 Pick another --schema{leftover}, or add --reuse to reinstall only queuebench's tables (jobs, \
                 effects, business_rows) in it"
            )
        }
        Unfit::ForeignObject { schema, object } => format!(
            "--reuse: schema {schema} has an object named {object} that queuebench did not create; it is left \
             alone and nothing was changed. Use another --schema"
        ),
        Unfit::TooFewConnections { workers, need, slots, own_server } => {
            let fix = if *own_server {
                "or raise [postgres.settings] max_connections"
            } else {
                "or raise the server's max_connections (or wait for its other clients to finish)"
            };
            format!(
                "{workers} workers need {need} connections (with the side connections: producers, sampler, reaper, \
                 faults, blockers, vacuum steps, probe, setup) but {target} has only {slots} free (max_connections \
                 minus superuser_reserved_connections minus other clients' connections); lower workers.count {fix}. \
                 Nothing was created"
            )
        }
        Unfit::RestartNeedsEphemeral { file } => format!(
            "{}: [[faults]] kind = \"postgres_restart\" stops and starts the server, which queuebench does only to \
             its own ephemeral cluster, never to a server given by {target}. Run it with --postgres ephemeral \
             (the default without --database-url), or remove the fault",
            file.display()
        ),
        Unfit::MaxConnectionsTooLow { file, setting, workers, need } => format!(
            "{}: [postgres.settings] max_connections = {setting} but {workers} workers need {need} connections \
             with the side connections and reserved slots; raise it to at least {need}, leave it out (queuebench \
             sizes it), or lower workers.count. Nothing was started",
            file.display()
        ),
    }
}

fn missing(what: &Missing) -> String {
    match what {
        Missing::PostgresUser => "running as root, and initdb refuses root; there is no `postgres` system user to \
                                  run the cluster as. Create one (useradd --system postgres), run queuebench as a \
                                  normal user, or pass --database-url"
            .to_string(),
        Missing::BinDir(dir) => format!(
            "QUEUEBENCH_PG_BINDIR={} has no initdb and postgres: point it at PostgreSQL's bin directory \
             (`pg_config --bindir` prints it), unset it to search PATH, or pass --database-url \
             postgres://user@host/db to use a running server",
            dir.display()
        ),
        Missing::ServerBinaries => "no PostgreSQL server binaries (initdb and postgres) found via pg_config \
                                    --bindir, PATH or /usr/lib/postgresql/*/bin, so queuebench cannot start its \
                                    own cluster. Install the server (Debian/Ubuntu: apt-get install postgresql), \
                                    set QUEUEBENCH_PG_BINDIR to the directory holding initdb, or point queuebench at \
                                    a running server with --database-url postgres://user@host/db"
            .to_string(),
    }
}

/// The most characters of one value an error message shows; a longer value is cut.
pub const SHOWN_CHARS: usize = 60;

/// A value as an error message echoes it: whole when it has at most [`SHOWN_CHARS`]
/// characters, else its first ones and how long it was (`aaaa…(100000 characters)`), so a
/// 100,000-character value in a file or a flag is not printed back in full.
pub fn shown(value: &str) -> Cow<'_, str> {
    let n = value.chars().count();
    if n <= SHOWN_CHARS || already_shown(value) {
        return Cow::Borrowed(value);
    }
    let head: String = value.chars().take(SHOWN_CHARS).collect();
    Cow::Owned(format!("{head}…({n} characters)"))
}

/// Whether `value` is already what [`shown`] makes of a long value (so a message cut once
/// is not cut again when a caller shows it).
fn already_shown(value: &str) -> bool {
    let Some((_, tail)) = value.split_once('…') else { return false };
    value.chars().take_while(|&c| c != '…').count() == SHOWN_CHARS
        && tail
            .strip_prefix('(')
            .and_then(|t| t.strip_suffix(" characters)"))
            .is_some_and(|n| n.parse::<usize>().is_ok())
}

/// `message` with every value it echoes cut by [`shown`]: what stands between backticks or
/// double quotes (on one line), and any other run of characters without a space (a number, a
/// key, the `^^^^` under a TOML error's line) except a path or URL (a run with a `/`). The
/// rest of the message stays as it is.
pub fn shorten_values(message: &str) -> Cow<'_, str> {
    let long = |run: &str| run.chars().count() > SHOWN_CHARS;
    if !message.split_whitespace().any(long) && !message.lines().any(|l| l.chars().count() > 2 * SHOWN_CHARS) {
        return Cow::Borrowed(message);
    }
    let chars: Vec<char> = message.chars().collect();
    let mut out = String::with_capacity(message.len().min(4096));
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '`' || c == '"' {
            let close = chars[i + 1..].iter().take_while(|&&d| d != '\n').position(|&d| d == c);
            if let Some(len) = close {
                let inner: String = chars[i + 1..i + 1 + len].iter().collect();
                out.push(c);
                out.push_str(&shown(&inner));
                out.push(c);
                i += len + 2;
                continue;
            }
        }
        if c.is_whitespace() || c == '`' || c == '"' {
            out.push(c);
            i += 1;
            continue;
        }
        let mut end =
            chars[i..].iter().position(|&d| d.is_whitespace() || d == '`' || d == '"').map_or(chars.len(), |p| i + p);
        // A value cut before (`aaa…(1000 characters)`) is one run, its marker included.
        const MARK: &str = " characters)";
        let rest: String = chars[end..chars.len().min(end + MARK.len())].iter().collect();
        if rest == MARK && chars[i..end].contains(&'…') {
            end += MARK.chars().count();
        }
        let run: String = chars[i..end].iter().collect();
        // A path or a URL (a run with a `/`) is where to look, not an echoed value: whole.
        if run.contains('/') {
            out.push_str(&run);
        } else {
            out.push_str(&shown(&run));
        }
        i = end;
    }
    Cow::Owned(out)
}

/// The range of each integer type serde names (`expected u64`), in the words a scenario
/// author reads: the key's accepted whole numbers.
const WHOLE_NUMBERS: [(&str, &str); 6] = [
    ("u64", "a whole number from 0 to 18446744073709551615 (2^64 − 1)"),
    ("usize", "a whole number from 0 to 18446744073709551615 (2^64 − 1)"),
    ("u32", "a whole number from 0 to 4294967295"),
    ("i64", "a whole number from -9223372036854775808 to 9223372036854775807"),
    ("i32", "a whole number from -2147483648 to 2147483647"),
    ("u16", "a whole number from 0 to 65535"),
];

/// The key a TOML error's excerpt points at: in `2 | seed = -1` under which the carets stand
/// (`  |        ^^`), the key before the `=` left of the first caret. None without an excerpt.
fn key_in_excerpt(message: &str) -> Option<String> {
    let lines: Vec<&str> = message.lines().collect();
    let (at, text) = lines.iter().enumerate().find_map(|(i, l)| {
        let (num, rest) = l.split_once(" | ")?;
        num.trim().parse::<usize>().ok().map(|_| (i, rest))
    })?;
    let bar = lines[at].find(" | ")? + 3;
    let carets = lines.get(at + 1)?;
    let caret = carets.char_indices().find(|&(_, c)| c == '^').map(|(b, _)| carets[..b].chars().count())?;
    let before: String = text.chars().take(caret.checked_sub(lines[at][..bar].chars().count())?).collect();
    let (left, _) = before.rsplit_once('=')?;
    let key = left.rsplit(['{', ',']).next()?.trim().trim_matches('"').trim_matches('\'');
    (!key.is_empty()).then(|| key.to_string())
}

/// Adds "did you mean `count`?" to serde's "unknown field `coutn`, expected one of …", and
/// what to add to "missing field `complete`" (`keys_listed`: where every key is listed), for
/// the TOML files queuebench reads (scenarios, adapters).
/// `expected struct RawWorkers` → `expected a table of keys { … }`: the Rust type means
/// nothing to a scenario author.
fn without_struct_names(message: String) -> String {
    let mut out = String::new();
    let mut rest = message.as_str();
    while let Some(pos) = rest.find("expected struct ") {
        out.push_str(&rest[..pos]);
        out.push_str("expected a table of keys { … }");
        let after = &rest[pos + "expected struct ".len()..];
        rest = after.trim_start_matches(|c: char| c.is_alphanumeric() || c == '_');
    }
    out.push_str(rest);
    out
}

pub fn toml_hint(message: String, keys_listed: &str) -> String {
    let message = words_for_types(message);
    let message = shorten_values(&message).into_owned();
    if let Some(field) = message.split("missing field `").nth(1).and_then(|r| r.split('`').next()) {
        return format!("{}\nadd `{field} = …` to the table shown above ({keys_listed})", message.trim_end());
    }
    let Some(pos) = message.find("unknown field `").or_else(|| message.find("unknown variant `")) else {
        return message;
    };
    let words: Vec<&str> = message[pos..].split('`').skip(1).step_by(2).collect();
    let Some((wrong, candidates)) = words.split_first() else {
        return message;
    };
    let best =
        candidates.iter().map(|c| (strsim::levenshtein(wrong, c), *c)).filter(|(d, c)| *d <= 2.max(c.len() / 3)).min();
    match best {
        Some((_, c)) => format!("{}\ndid you mean `{c}`?", message.trim_end()),
        None => message,
    }
}

/// serde names Rust types (`expected u64`, `integer `…` as i128`); a scenario author thinks in
/// TOML values: a whole number's accepted range, a list, a table. A value out of its type's
/// range also names the key it was given for.
fn words_for_types(message: String) -> String {
    let key = key_in_excerpt(&message);
    let mut out = message.replace(" as i128", "").replace(" as u128", "");
    let mut whole = false;
    for (ty, words) in WHOLE_NUMBERS {
        let from = format!("expected {ty}");
        // `expected u64` at the end of the message or before punctuation, not `expected u640`.
        let mut rest = out.as_str();
        let mut next = String::new();
        while let Some(pos) = rest.find(&from) {
            let after = &rest[pos + from.len()..];
            next.push_str(&rest[..pos]);
            if after.starts_with(|c: char| c.is_alphanumeric() || c == '_') {
                next.push_str(&from);
            } else {
                next.push_str("expected ");
                next.push_str(words);
                whole = true;
            }
            rest = after;
        }
        next.push_str(rest);
        out = next;
    }
    let out = [
        ("expected f64", "expected a number"),
        ("expected f32", "expected a number"),
        ("expected a sequence", "expected a list [ … ]"),
        ("expected a map", "expected a table { … }"),
        (
            "integer number overflowed",
            "the number is too large: whole numbers go up to 18446744073709551615 (2^64 − 1) at most, and each key \
             has its own limit (docs/scenario-files.md)",
        ),
        ("floating-point number overflowed", "the number is too large to be read as a number"),
    ]
    .iter()
    .fold(out, |m, (from, to)| m.replace(from, to));
    let out = without_struct_names(out);
    match key {
        // The excerpt shows the line; the last line says which key and what it accepts.
        Some(key) if whole => match out.trim_end().rsplit_once('\n') {
            Some((head, last)) if !last.starts_with(&format!("{key}:")) => format!("{head}\n{key}: {last}\n"),
            _ => out,
        },
        _ => out,
    }
}

/// Finds the 1-based line that sets `key` (`workers.count`), following
/// `[table]` headers. Good enough for error messages; not a TOML parser.
pub fn find_key_line(text: &str, key: &str) -> Option<usize> {
    let (table, leaf) = match key.rsplit_once('.') {
        Some((t, l)) => (t, l),
        None => ("", key),
    };
    let mut current = String::new();
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        if let Some(h) = l.strip_prefix('[') {
            current = h.trim_start_matches('[').trim_end_matches(']').trim().to_string();
            continue;
        }
        let Some((k, _)) = l.split_once('=') else {
            continue;
        };
        let k = k.trim().trim_matches('"');
        let full = if current.is_empty() { k.to_string() } else { format!("{current}.{k}") };
        if full == key || (current == table && k == leaf) {
            return Some(i + 1);
        }
    }
    None
}

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
    fn a_long_value_is_cut_once_wherever_it_is_echoed() {
        let long = "a".repeat(100_000);
        let cut = format!("{}…(100000 characters)", "a".repeat(SHOWN_CHARS));
        assert_eq!(shown(&long), cut);
        assert_eq!(shown("short"), "short");
        assert_eq!(shown(&cut), cut, "a value cut once stays as it is");
        let message = format!("unknown strategy `{long}`; or define [strategies.{long}] with claim, got \"{long}\"");
        let once = shorten_values(&message).into_owned();
        assert_eq!(
            once,
            format!(
                "unknown strategy `{cut}`; or define [strategies.{}…(100013 characters) with claim, got \"{cut}\"",
                "a".repeat(SHOWN_CHARS - "[strategies.".len())
            ),
        );
        assert_eq!(shorten_values(&once), once, "shortening is idempotent");
        assert_eq!(shorten_values("expected `a`, got \"b\" at line 3"), "expected `a`, got \"b\" at line 3");
        let path = format!("/results/{}/history.csv.gz", "r".repeat(80));
        let message = format!("7: no such job in {path}");
        assert_eq!(shorten_values(&message), message, "a path is shown whole");
        let e = Error::FlagValue { flag: "--set".into(), value: Some(format!("k={long}")), invalid: Invalid::new("x") };
        assert!(e.to_string().chars().count() < 120, "{e}");
        let e = Error::Scenario {
            file: "s.toml".into(),
            line: None,
            key: "k".into(),
            via_set: Some(format!("k={long}")),
            reason: format!("unknown `{long}`"),
        };
        assert!(e.to_string().chars().count() < 200, "{e}");
    }

    #[test]
    fn toml_errors_name_the_key_and_its_range_not_rust_types() {
        let parse = |text: &str| {
            #[derive(Debug, serde::Deserialize)]
            #[allow(dead_code)]
            struct S {
                seed: Option<u64>,
                count: Option<i64>,
            }
            toml_hint(toml::from_str::<S>(text).unwrap_err().to_string(), "keys")
        };
        let m = parse("seed = -1\n");
        assert!(
            m.contains("seed: invalid value: integer `-1`, expected a whole number from 0 to 18446744073709551615"),
            "{m}"
        );
        let m = parse("seed = 18446744073709551616\n");
        assert!(!m.contains("i128") && m.contains("seed: ") && m.contains("2^64 − 1"), "{m}");
        let m = parse("count = 99999999999999999999\n");
        assert!(!m.contains("i128") && !m.contains("i64") && m.contains("count: "), "{m}");
        let m = parse("count = 1e40\n");
        assert!(m.contains("count: invalid type: floating point") && !m.contains("i64"), "{m}");
        let m = parse(&format!("count = {}\n", "9".repeat(309)));
        assert!(m.contains("…(309 characters)") && m.len() < 600, "{m}");
        assert!(!m.contains("overflowed") && m.contains("too large"), "{m}");
        let m = parse("count = { x = 1 }\n");
        assert!(!m.contains("i64"), "{m}");
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
