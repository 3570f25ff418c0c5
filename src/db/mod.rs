//! Where the run's PostgreSQL comes from and the run's own schema in it.
//!
//! Two kinds of target: an ephemeral cluster started here (the default) or
//! an existing server from `--database-url` / `DATABASE_URL`. Either way the
//! run lives in one schema created for it (`queuebench_<run id>`), every
//! connection's `search_path` points there, and at the end only that schema
//! is dropped. Nothing outside it is touched.

pub mod docker;
pub mod ephemeral;
pub mod schema;

use crate::error::{Error, Result};
use ephemeral::Cluster;
use std::time::{Duration, Instant};
use tokio_postgres::config::Host;
use tokio_postgres::{Client, Config, NoTls};

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
    /// Host, port, user and database, for messages; never the password.
    pub target: String,
    pub schema: String,
    cluster: Option<Cluster>,
    container: Option<docker::Container>,
    keep: bool,
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
                let config: Config = url.parse().map_err(|e| {
                    Error::usage(format!(
                        "--database-url is not a valid PostgreSQL URL or key=value string ({e}); \
                         example: postgres://user@127.0.0.1:5432/dbname"
                    ))
                })?;
                let target = describe(&config);
                if !remote_ok && !is_local(&config) {
                    return Err(Error::usage(format!(
                        "{target} is not on this machine: queuebench creates a schema there, loads it with jobs and drives \
                         it hard. If that is what you want, add --yes"
                    )));
                }
                Ok(Database { kind: Kind::Url, config, target, schema, cluster: None, container: None, keep })
            }
            None => {
                let mut settings = settings.to_vec();
                if !settings.iter().any(|(k, _)| k == "max_connections") {
                    settings.push(("max_connections".into(), "200".into()));
                }
                let cluster = Cluster::start(&settings, keep)?;
                let mut config = Config::new();
                config.host_path(cluster.socket_dir()).port(ephemeral::PORT).user("postgres").dbname("postgres");
                let target = describe(&config);
                let cluster = Some(cluster);
                let mut db = Database { kind: Kind::Ephemeral, config, target, schema, cluster, container: None, keep };
                db.wait_ready().await?;
                Ok(db)
            }
        }
    }

    /// The ephemeral server process (None for other targets): the `postgres_restart` fault stops and starts it.
    pub fn postmaster(&self) -> Option<std::sync::Arc<ephemeral::Postmaster>> {
        self.cluster.as_ref().map(Cluster::postmaster)
    }

    /// A URL for other tools (pgbench, psql) to reach the same server.
    pub fn url_for_tools(&self) -> Option<String> {
        let c = self.cluster.as_ref()?;
        Some(format!("postgresql:///postgres?host={}&port={}&user=postgres", c.socket_dir().display(), ephemeral::PORT))
    }

    async fn wait_ready(&mut self) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match self.config.connect(NoTls).await {
                Ok(_) => return Ok(()),
                Err(e) => {
                    if let Some(why) = self.cluster.as_mut().and_then(Cluster::exited) {
                        return Err(Error::infra(format!("the ephemeral cluster did not start: {why}")));
                    }
                    if Instant::now() > deadline {
                        let tail = self.cluster.as_ref().map(Cluster::log_tail).unwrap_or_default();
                        return Err(Error::infra(format!(
                            "the ephemeral cluster did not accept connections within 30 s ({e}); log:\n{tail}"
                        )));
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
    }

    /// The connection settings workers use: search_path is the run's schema.
    pub fn worker_config(&self) -> Config {
        let mut config = self.config.clone();
        let options = config.get_options().map(|o| format!("{o} ")).unwrap_or_default();
        config.options(format!("{options}-c search_path={}", self.schema));
        config
    }

    /// A connection whose search_path is the run's schema.
    pub async fn connect(&self) -> Result<Client> {
        self.connect_with(&self.worker_config()).await
    }

    /// A connection with the server's default search_path (for setup and teardown).
    pub async fn connect_admin(&self) -> Result<Client> {
        self.connect_with(&self.config).await
    }

    async fn connect_with(&self, config: &Config) -> Result<Client> {
        let (client, connection) = config.connect(NoTls).await.map_err(|e| self.connect_error(&e))?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(client)
    }

    fn connect_error(&self, e: &tokio_postgres::Error) -> Error {
        let code = e.code().map(|c| c.code().to_string());
        let hint = match code.as_deref() {
            Some("28P01") | Some("28000") => {
                "authentication failed: check the user and password (in the URL, PGPASSWORD or ~/.pgpass)"
            }
            Some("3D000") => "the database does not exist: create it or name another in the URL",
            Some("53300") => "the server has no free connection slots: lower workers.count or raise max_connections",
            _ if self.kind == Kind::Url => {
                "is the server running and reachable? Check host and port in --database-url (or DATABASE_URL), \
                 or leave it out to let queuebench start its own cluster"
            }
            _ => "the ephemeral cluster stopped accepting connections",
        };
        Error::infra(format!("cannot connect to PostgreSQL at {}: {}; {hint}", self.target, error_text(e)))
    }

    /// Drops the run's schema (URL mode, unless --keep) and stops an ephemeral cluster.
    pub async fn teardown(mut self) -> Result<()> {
        let mut result = Ok(());
        if self.kind == Kind::Url && !self.keep {
            result = schema::drop_schema(&self).await;
        } else if self.kind == Kind::Url {
            eprintln!("kept schema {} in {}", self.schema, self.target);
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

/// `host:port user=… dbname=…`, never the password.
pub fn describe(config: &Config) -> String {
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        Some(Host::Unix(p)) => p.display().to_string(),
        None => "localhost (default socket)".into(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config.get_user().map(str::to_string).or_else(|| std::env::var("USER").ok()).unwrap_or_default();
    let db = config.get_dbname().unwrap_or(&user).to_string();
    format!("{host}:{port} (user {user}, database {db})")
}

/// The driver's message with the server's detail, if any.
pub fn error_text(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} (SQLSTATE {})", db.message(), db.code().code()),
        None => {
            let mut s = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(inner) = source {
                s.push_str(&format!(": {inner}"));
                source = inner.source();
            }
            s
        }
    }
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
