//! Where the run's PostgreSQL comes from and the run's own schema in it.
//!
//! Two kinds of target: an ephemeral cluster started here (the default) or
//! an existing server from `--database-url` / `DATABASE_URL`. Either way the
//! run lives in one schema created for it (`queuebench_<run id>`), every
//! connection's `search_path` points there, and at the end only that schema
//! is dropped, and only if this run created it. Nothing outside it is touched.
//!
//! `--schema NAME --reuse` runs in an existing schema instead: queuebench's
//! own tables there (marked with the comment `queuebench`) are dropped and
//! reinstalled, anything else in the schema is left alone, and at the end
//! only those tables go; the schema stays.

pub(crate) mod connect;
pub mod docker;
pub(crate) mod ephemeral;
mod failed;
pub(crate) mod hosts;
pub(crate) mod password;
pub(crate) mod pgbouncer;
pub(crate) mod pool_probe;
pub(crate) mod role;
pub(crate) mod schema;
mod settings;
pub(crate) mod standby;
pub mod statements;
pub(crate) mod tls;
mod urls;
pub(crate) mod versions;
pub use failed::{Failed, error_text, sql};

use crate::error::{Error, Result, Unfit};
use ephemeral::Cluster;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio_postgres::config::{Host, SslMode as DriverSslMode};
use tokio_postgres::{Client, Config};

/// What every connection of a run is opened from: the driver's settings and the run's TLS
/// ([`tls::Tls`], resolved once). It reads as the `Config` it wraps.
#[derive(Clone, Debug)]
pub struct Endpoint {
    pub config: Config,
    pub tls: tls::Tls,
    /// Set when the endpoint is a transaction or statement pooler: a connection there keeps no
    /// named prepared statement (the next transaction may run on another server connection).
    /// Statements are described on a direct connection opened from this endpoint, and run
    /// through the pooler as unnamed ones (`Client::query_typed_raw`: Parse, Bind, Execute and
    /// Sync in one round trip, so they never cross a transaction boundary).
    pub direct: Option<Box<Endpoint>>,
    /// libpq's `target_session_attrs`, checked on each host by `connect::open` (`hosts`).
    pub session: hosts::TargetSession,
    /// Set by `connect::open` on every connection opened from here (the harness's own
    /// connections: `Database::harness_config`); None for the workers'.
    pub statement_timeout: Option<Duration>,
}

impl Endpoint {
    /// A plain connection (no TLS), as a Unix socket always is.
    pub fn plain(config: Config) -> Endpoint {
        Endpoint {
            config,
            tls: tls::Tls::disabled(),
            direct: None,
            session: Default::default(),
            statement_timeout: None,
        }
    }

    /// The settings and TLS, the driver's own sslmode set to match (a Unix socket never uses TLS,
    /// as in libpq; `allow` starts plain).
    pub fn new(mut config: Config, tls: tls::Tls) -> Endpoint {
        let unix = !config.get_hosts().is_empty() && config.get_hosts().iter().all(|h| matches!(h, Host::Unix(_)));
        config.ssl_mode(match tls.mode {
            _ if unix => DriverSslMode::Disable,
            tls::SslMode::Disable | tls::SslMode::Allow => DriverSslMode::Disable,
            tls::SslMode::Prefer => DriverSslMode::Prefer,
            _ => DriverSslMode::Require,
        });
        Endpoint { config, tls, direct: None, session: Default::default(), statement_timeout: None }
    }

    /// Does a connection here keep no named statements (a transaction or statement pooler)?
    pub fn unnamed(&self) -> bool {
        self.direct.is_some()
    }
}

impl std::ops::Deref for Endpoint {
    type Target = Config;
    fn deref(&self) -> &Config {
        &self.config
    }
}

impl std::ops::DerefMut for Endpoint {
    fn deref_mut(&mut self) -> &mut Config {
        &mut self.config
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Ephemeral,
    Url,
    /// A container started for the run (`--postgres docker`, cargo feature `docker`).
    Docker,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Ephemeral => "ephemeral",
            Kind::Url => "url",
            Kind::Docker => "docker",
        }
    }

    /// A server started for this run (ephemeral or docker): settings are applied, extensions created.
    pub fn owned(self) -> bool {
        self != Kind::Url
    }
}

pub struct Database {
    pub kind: Kind,
    config: Config,
    /// The TLS every connection uses (resolved once from the URL and the environment).
    pub tls: tls::Tls,
    /// Host, port, user and database, for messages; never the password.
    pub target: String,
    /// URL mode: the URL with the password replaced by `***` (empty for an ephemeral cluster).
    pub url: String,
    pub schema: String,
    /// PgBouncer in front of the cluster (`[postgres.pgbouncer]`); declared before the
    /// cluster so it is dropped (stopped) first.
    pooler: Option<pgbouncer::Pooler>,
    /// `--pooler-url`: a pooler of the user's own and its pool mode.
    external_pooler: Option<(Endpoint, crate::model::pooler::PoolMode)>,
    cluster: Option<Cluster>,
    container: Option<docker::Container>,
    keep: bool,
    /// `--reuse`: an existing schema of that name is used, not refused.
    pub reuse: bool,
    /// Where the password came from (`the URL`, `PGPASSWORD`, the password file), for the auth error.
    password_from: Option<String>,
    /// The role the scenario's SQL connects as, when not the target's own (an ephemeral
    /// cluster's [`role::RUN_ROLE`]; see `role.rs`).
    run_role: Option<&'static str>,
    /// The URL's `target_session_attrs` (read-write for an ephemeral cluster with a standby).
    session: hosts::TargetSession,
    /// The statement_timeout of the harness's own connections ([`Database::bounding_statements`]).
    statement_timeout: Duration,
    /// This run created the schema (teardown drops it) …
    pub(crate) created: AtomicBool,
    /// … or reused an existing one (teardown drops only queuebench's tables in it).
    pub(crate) reused: AtomicBool,
}

/// The harness's statement_timeout until [`Database::bounding_statements`] ties it to a run
/// (`run.timeout`'s default), and the least it is.
pub const DEFAULT_STATEMENT_TIMEOUT: Duration = Duration::from_secs(600);
pub const MIN_STATEMENT_TIMEOUT: Duration = Duration::from_secs(30);

/// URL-mode schemas of runs in progress, for the message of a second Ctrl-C.
static LIVE_SCHEMAS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Set when a second Ctrl-C tears everything down: what fails after it (a connection to the
/// cluster being killed) is a consequence, not an error to report, and the exit code is 130.
static TEARING_DOWN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Has a second Ctrl-C started tearing the run down?
pub fn tearing_down() -> bool {
    TEARING_DOWN.load(std::sync::atomic::Ordering::SeqCst)
}

/// Second Ctrl-C: stop the ephemeral clusters at once, remove the containers (`--postgres
/// docker`), and say which URL-mode schemas stay behind.
pub fn emergency_cleanup() {
    TEARING_DOWN.store(true, std::sync::atomic::Ordering::SeqCst);
    pgbouncer::emergency_cleanup();
    ephemeral::emergency_cleanup();
    docker::emergency_cleanup();
    left_behind();
}

/// Says which URL-mode schemas of runs in progress stay behind, and how to drop them.
pub fn left_behind() {
    for note in LIVE_SCHEMAS.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        eprintln!("left behind: {note}");
    }
}

impl Database {
    /// Opens the target: parses the URL, or starts an ephemeral cluster with `settings`.
    /// `remote_ok`: the user said `--yes` to a URL whose host is not on this machine.
    pub async fn open(
        url: Option<&str>,
        settings: &[(String, String)],
        schema: String,
        keep: bool,
        remote_ok: bool,
    ) -> Result<Database> {
        match url {
            Some(url) => {
                let split = tls::split(url);
                let tls = tls::Tls::resolve(&split.params).map_err(|setting| Error::TlsSetting { setting })?;
                let (url, session) = hosts::TargetSession::take(&split.rest, "--database-url")?;
                let mut config: Config = url.parse().map_err(|e: tokio_postgres::Error| {
                    // The cause names a parameter, never its value; "… but got `x`" quotes one
                    // character of the input, which could be a password's: cut it.
                    let cause = std::error::Error::source(&e).map(|c| c.to_string()).unwrap_or_default();
                    let cause = cause.split(" but got ").next().unwrap_or_default();
                    Error::Flag {
                        flag: "--database-url".into(),
                        reason: format!(
                            "is not a valid PostgreSQL URL or key=value string ({e}: {cause}); \
                             example: postgres://user@127.0.0.1:5432/dbname"
                        ),
                    }
                })?;
                let password_from = password::fill(&mut config);
                let target = describe(&config);
                if !remote_ok && !is_local(&config) {
                    return Err(Error::Unfit { target, problem: Unfit::Remote });
                }
                let url = password::display_url(&config);
                if !is_local(&config) {
                    eprintln!("warning: {url} is not on this machine; running there because of --yes");
                }
                let url = tls.add_to(password::display_url(&config));
                let config = Endpoint::new(config, tls.clone()).config;
                let url = session.add_to(url);
                Ok(Database {
                    kind: Kind::Url,
                    url,
                    password_from,
                    tls,
                    session,
                    ..Database::new(config, target, schema, keep)
                })
            }
            None => Database::open_ephemeral(settings, schema, keep, false, None, None).await,
        }
    }

    /// Starts an ephemeral cluster with `settings`; `tls`: it also listens on localhost with a
    /// certificate of its own CA, and every connection uses TLS with sslmode=verify-full.
    /// `standby`: a streaming standby beside it; every connection then names both servers
    /// with `target_session_attrs=read-write`, as an application of an HA cluster does, and
    /// so finds the standby once a failover has promoted it. `version`: a PostgreSQL major
    /// (`--pg-version`; docs/postgres-versions.md), found on this machine, never fetched.
    pub async fn open_ephemeral(
        settings: &[(String, String)],
        schema: String,
        keep: bool,
        tls: bool,
        standby: Option<crate::model::records::Replication>,
        version: Option<u32>,
    ) -> Result<Database> {
        let mut settings = settings.to_vec();
        if !settings.iter().any(|(k, _)| k == "max_connections") {
            settings.push(("max_connections".into(), "200".into()));
        }
        let cluster = Cluster::start(&settings, keep, tls, standby, version)?;
        let mut config = Config::new();
        let tls = match cluster.tls_files() {
            Some(files) => {
                config.host("localhost").port(cluster.port());
                tls::Tls::own_ca(files.ca.clone(), files.client_cert.clone(), files.client_key.clone())
                    .map_err(|setting| Error::TlsSetting { setting })?
            }
            None => {
                config.host_path(cluster.socket_dir()).port(cluster.port());
                tls::Tls::disabled()
            }
        };
        config.user("postgres").dbname("postgres");
        let target = describe(&config);
        let config = Endpoint::new(config, tls.clone()).config;
        let mut db = Database { cluster: Some(cluster), tls, ..Database::new(config, target, schema, keep) };
        db.wait_ready().await?;
        if let Some(s) = db.cluster.as_ref().and_then(|c| c.standby()).cloned() {
            standby::start(&db.servers().expect("an ephemeral cluster").primary, &s)?;
            let primary = db.connect_admin().await?;
            standby::wait_streaming(&primary, s.replication, &s.server).await?;
            db.config.host_path(db.cluster.as_ref().map(Cluster::socket_dir).unwrap_or(Path::new("/")));
            db.config.port(s.server.port());
            db.session = hosts::TargetSession::ReadWrite;
        }
        Ok(db)
    }

    pub(super) fn new(config: Config, target: String, schema: String, keep: bool) -> Database {
        Database {
            kind: Kind::Ephemeral,
            config,
            tls: tls::Tls::disabled(),
            target,
            url: String::new(),
            schema,
            pooler: None,
            external_pooler: None,
            cluster: None,
            container: None,
            keep,
            reuse: false,
            password_from: None,
            run_role: None,
            session: hosts::TargetSession::Any,
            statement_timeout: DEFAULT_STATEMENT_TIMEOUT,
            created: AtomicBool::new(false),
            reused: AtomicBool::new(false),
        }
    }

    /// The harness's own connections (setup, teardown, the sampler, the reaper, faults, the
    /// agents' control) get `statement_timeout` = the run's timeout, at least
    /// [`MIN_STATEMENT_TIMEOUT`]: no statement of the harness outlives the run it serves. The
    /// workers' connections get none (a stuck claim is the run's to end).
    pub fn bounding_statements(mut self, run_timeout: Duration) -> Database {
        self.statement_timeout = run_timeout.max(MIN_STATEMENT_TIMEOUT);
        self
    }

    /// `--reuse`: run in the schema even if it exists (see the module docs).
    pub fn reusing(mut self, reuse: bool) -> Database {
        self.reuse = reuse;
        self
    }

    /// The user and database the connection uses (for messages that suggest a GRANT).
    pub fn user_and_database(&self) -> (String, String) {
        let user =
            self.config.get_user().map(str::to_string).or_else(|| std::env::var("USER").ok()).unwrap_or_default();
        (user.clone(), self.config.get_dbname().unwrap_or(&user).to_string())
    }

    /// How reports name the server: the URL without its password, or the cluster's socket.
    pub fn shown(&self) -> &str {
        if self.url.is_empty() { &self.target } else { &self.url }
    }

    /// Called once the run's schema exists (created or reused): teardown will clean it up.
    pub(crate) fn mark_schema(&self, created: bool) {
        let flag = if created { &self.created } else { &self.reused };
        flag.store(true, Ordering::Relaxed);
        if self.kind == Kind::Url {
            let what = if created { "schema" } else { "queuebench's tables in schema" };
            LIVE_SCHEMAS.lock().unwrap_or_else(|e| e.into_inner()).push(format!(
                "{what} {s} in {t} (remove it with: DROP SCHEMA {q} CASCADE{only})",
                s = self.schema,
                q = crate::quote::ident(&self.schema),
                t = self.url,
                only = if created { "" } else { ", or reinstall with --reuse" }
            ));
        }
    }

    /// The ephemeral servers (None for other targets): the `postgres_restart` fault stops and
    /// starts the primary, the `failover` fault kills it and promotes the standby.
    pub fn servers(&self) -> Option<ephemeral::Servers> {
        self.cluster.as_ref().map(Cluster::servers)
    }

    async fn wait_ready(&mut self) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match connect::open(&self.endpoint(self.config.clone()), |_| {}).await {
                Ok(_) => return Ok(()),
                Err(e) => {
                    if let Some(why) = self.cluster.as_mut().and_then(Cluster::exited) {
                        return Err(match refused_setting(&why) {
                            Some(refusal) => {
                                Error::Unfit { target: self.target.clone(), problem: Unfit::RefusedSetting { refusal } }
                            }
                            None => Error::machine("the ephemeral cluster did not start", why),
                        });
                    }
                    if Instant::now() > deadline
                        && let Some(container) = &self.container
                    {
                        return Err(container.not_ready(30, e));
                    }
                    if Instant::now() > deadline {
                        let tail = self.cluster.as_ref().map(Cluster::log_tail).unwrap_or_default();
                        return Err(Error::ClusterNotReady { seconds: 30, cause: e.to_string(), log_tail: tail });
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
    }

    /// A connection whose search_path is the run's schema.
    pub async fn connect(&self) -> Result<Client> {
        self.connect_with(&self.worker_config()).await
    }

    /// A connection with the server's default search_path (for setup and teardown).
    pub async fn connect_admin(&self) -> Result<Client> {
        self.connect_with(&self.endpoint(self.config.clone())).await
    }

    async fn connect_with(&self, endpoint: &Endpoint) -> Result<Client> {
        let endpoint = Endpoint {
            statement_timeout: Some(self.statement_timeout),
            ..self.endpoint(self.named(endpoint.config.clone()))
        };
        let (client, _task) = connect::open(&endpoint, |_| {}).await.map_err(|e| self.connect_error(&e))?;
        Ok(client)
    }

    fn connect_error(&self, e: &hosts::Failure) -> Error {
        let host = match self.config.get_hosts().first() {
            Some(Host::Tcp(h)) => h.clone(),
            Some(Host::Unix(p)) => p.display().to_string(),
            None => "localhost".into(),
        };
        if let Some(failure) = e.driver().and_then(|e| self.tls.diagnose(e, &host)) {
            return Error::Tls { target: self.target.clone(), failure };
        }
        let sql = e.sql();
        let timed_out;
        let unfit;
        let hint = match sql.sqlstate.as_deref() {
            _ if e.timed_out() => {
                timed_out = format!(
                    "a server that accepts the connection and never answers is not PostgreSQL, or is stuck (`pg_isready \
                     -h HOST -p PORT -t 5` tells): check the host and port in --database-url, or raise \
                     connect_timeout=SECONDS in it (now {} s per host; without it queuebench waits {} s)",
                    e.limit.as_secs(),
                    hosts::DEFAULT_CONNECT_TIMEOUT.as_secs()
                );
                &timed_out
            }
            _ if e.unfit() => {
                unfit = format!(
                    "no host is what target_session_attrs={} asks for: add one that is to the URL, or change the value \
                     (libpq's: {})",
                    e.wanted.name(),
                    hosts::TARGET_SESSION_VALUES
                );
                &unfit
            }
            Some("28P01") => &format!(
                "authentication failed: check the user and the password ({}; queuebench looks in the URL, then \
                 PGPASSWORD, then the password file PGPASSFILE or ~/.pgpass)",
                match &self.password_from {
                    Some(from) => format!("the password used came from {from}"),
                    None => "no password was given".into(),
                }
            ),
            Some("28000") => {
                "the server refused this user, database or host (pg_hba.conf has no matching entry, or the role \
                 cannot log in): ask the server's administrator, or use another user"
            }
            Some("3D000") => "the database does not exist: create it (createdb NAME) or name another in the URL",
            Some("53300") => "the server has no free connection slots: lower workers.count or raise max_connections",
            Some("57P03") => "the server is starting up or shutting down: try again in a moment",
            _ if sql.message.contains("password missing") => {
                "the server asks for a password and none was given: put it in the URL \
                 (postgres://USER:PASSWORD@HOST/DB), in PGPASSWORD, or in the password file (PGPASSFILE or ~/.pgpass)"
            }
            _ if self.kind == Kind::Url => {
                "is the server running and listening there? Check the host and port in --database-url (or \
                 DATABASE_URL; `pg_isready -h HOST -p PORT` tells), or leave it out to let queuebench start its own cluster"
            }
            _ => "the ephemeral cluster stopped accepting connections",
        };
        Error::Connect { target: self.target.clone(), sql, hint: hint.to_string() }
    }

    /// Teardown even under --keep: for a run (or `prepare`) that failed half-way, whose schema is
    /// not worth keeping and would block the retry ("already exists").
    pub async fn discard(mut self) -> Result<()> {
        self.keep = false;
        self.teardown().await
    }

    /// Drops what the run created (URL mode, unless --keep): the schema it created, or only
    /// queuebench's tables in a reused one. Stops an ephemeral cluster.
    pub async fn teardown(mut self) -> Result<()> {
        let mut result = Ok(());
        let (created, reused) = (self.created.load(Ordering::Relaxed), self.reused.load(Ordering::Relaxed));
        if self.kind == Kind::Url && self.keep && (created || reused) {
            eprintln!("kept schema {} in {}", self.schema, self.url);
        } else if self.kind == Kind::Url && created {
            result = schema::drop_schema(&self).await;
        } else if self.kind == Kind::Url && reused {
            result = schema::drop_own_objects(&self).await;
        }
        if result.is_ok() {
            LIVE_SCHEMAS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .retain(|n| !n.contains(&format!(" {} ", self.schema)));
        }
        if let Some(mut p) = self.pooler.take() {
            p.stop();
        }
        if let Some(mut c) = self.cluster.take() {
            c.stop();
        }
        if let Some(c) = self.container.take() {
            c.remove().await;
        }
        result
    }
}

/// The postmaster's complaint about a `-c name=value` from the scenario, if that is why it exited.
pub(super) fn refused_setting(log: &str) -> Option<String> {
    let bad = ["invalid value for parameter", "unrecognized configuration parameter", "is outside the valid range"];
    let first = log.lines().position(|l| bad.iter().any(|b| l.contains(b)))?;
    let text: Vec<&str> = log
        .lines()
        .skip(first)
        .take(2)
        .filter(|l| l.contains("FATAL:") || l.contains("HINT:"))
        .map(|l| l.split_once(":  ").map_or(l, |(_, msg)| msg).trim_end_matches('.'))
        .collect();
    Some(text.join("; "))
}

/// Does the URL point at this machine (a unix socket or a loopback address)?
pub fn is_local(config: &Config) -> bool {
    config.get_hosts().iter().all(|h| match h {
        Host::Unix(_) => true,
        Host::Tcp(name) => {
            let name = name.trim_start_matches('[').trim_end_matches(']');
            name == "localhost" || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
        }
    })
}

/// `host:port (user …, database …)`, every host of a multi-host URL (`a:1,b:2 (…)`); never the
/// password.
pub fn describe(config: &Config) -> String {
    let ports = config.get_ports();
    let port = |i: usize| ports.get(i).or(ports.first()).copied().unwrap_or(5432);
    let hosts: Vec<String> = match config.get_hosts() {
        [] => vec![format!("localhost (default socket):{}", port(0))],
        hosts => hosts
            .iter()
            .enumerate()
            .map(|(i, h)| match h {
                Host::Tcp(h) => format!("{h}:{}", port(i)),
                Host::Unix(p) => format!("{}:{}", p.display(), port(i)),
            })
            .collect(),
    };
    let user = config.get_user().map(str::to_string).or_else(|| std::env::var("USER").ok()).unwrap_or_default();
    let db = config.get_dbname().unwrap_or(&user).to_string();
    format!("{} (user {user}, database {db})", hosts.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_means_loopback_or_a_socket() {
        for url in [
            "postgres://u@localhost/db",
            "postgres://u@127.0.0.1:5433/db",
            "postgres://u@[::1]/db",
            "host=/tmp port=5432",
        ] {
            assert!(is_local(&url.parse().unwrap()), "{url}");
        }
        for url in ["postgres://u@db.example.com/db", "postgres://u@10.0.0.5/db", "postgres://u@localhost,db2/db"] {
            assert!(!is_local(&url.parse().unwrap()), "{url}");
        }
    }
}
