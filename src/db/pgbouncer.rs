//! PgBouncer in front of the ephemeral cluster (`[postgres.pgbouncer]`), with the cluster's
//! lifecycle: started from the `pgbouncer` program on the machine (`QUEUEBENCH_PGBOUNCER`,
//! `PATH`, `/usr/sbin`) with an ini file generated into a folder of the cluster's temporary
//! directory, listening only on a Unix socket in that directory (as the cluster does: a folder
//! only its user and the harness can enter, so `auth_type = trust` opens nothing the cluster's
//! own socket does not), and stopped before the cluster at the end. As root it runs as the
//! cluster's user (PgBouncer refuses root too); `PR_SET_PDEATHSIG` stops it if the harness is
//! SIGKILLed, and its folder goes with the cluster's (`queuebench clean`).
//!
//! Its server connections log in as `queuebench_pool`, a role made for the run whose
//! `search_path` is the run's schema (`ALTER ROLE … SET search_path`). A pooler passes no
//! `options` startup parameter, and a `SET` on one client's connection would stay on a server
//! connection the next client gets (transaction mode) or be lost with DISCARD ALL (session
//! mode); a role's default is what every server connection starts with, and what DISCARD ALL
//! returns to.

use super::ephemeral::{Cluster, as_owner, cluster_owner, free_port};
use crate::error::{Access, Error, Missing, Result};
use crate::model::pooler::PgBouncer;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio_postgres::Config;

/// The role PgBouncer's server connections log in as.
pub(crate) const POOL_ROLE: &str = "queuebench_pool";

/// PgBouncer processes alive in this process, for the second-Ctrl-C emergency exit.
static LIVE: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// A running PgBouncer of this run.
pub(crate) struct Pooler {
    pub settings: PgBouncer,
    /// Its folder: pgbouncer.ini, userlist.txt, pgbouncer.log.
    pub dir: PathBuf,
    /// The directory of its Unix socket (the cluster's).
    socket_dir: PathBuf,
    pub port: u16,
    child: Option<Child>,
}

impl Pooler {
    /// Writes the ini file and starts PgBouncer; readiness is checked by the caller.
    /// `clients`: the most client connections it must take at once.
    pub(crate) fn start(cluster: &Cluster, settings: PgBouncer, clients: u32) -> Result<Pooler> {
        let program = find_program()?;
        let owner = cluster_owner()?;
        let dir = cluster.dir.join("pgbouncer");
        std::fs::create_dir(&dir).map_err(|e| Error::io(Access::Create, &dir, e))?;
        let port = loop {
            let p = free_port(&dir)?;
            if p != cluster.port() {
                break p;
            }
        };
        let ini = ini(cluster, settings, &dir, port, clients);
        write(&dir.join("pgbouncer.ini"), &ini)?;
        write(&dir.join("userlist.txt"), "\"postgres\" \"\"\n")?;
        let log_path = dir.join("pgbouncer.log");
        let log = std::fs::File::create(&log_path).map_err(|e| Error::io(Access::Create, &log_path, e))?;
        let log_too = log.try_clone().map_err(|e| Error::io(Access::Create, &log_path, e))?;
        if let Some((uid, gid)) = owner {
            for path in [&dir, &dir.join("pgbouncer.ini"), &dir.join("userlist.txt"), &log_path] {
                std::os::unix::fs::chown(path, Some(uid), Some(gid))
                    .map_err(|e| Error::io(Access::Prepare, path, e))?;
            }
        }
        let mut cmd = Command::new(&program);
        cmd.arg(dir.join("pgbouncer.ini")).current_dir(&dir).stdin(Stdio::null()).stdout(log).stderr(log_too);
        cmd.process_group(0);
        as_owner(&mut cmd, owner);
        crate::shutdown::die_with_parent(&mut cmd, libc::SIGTERM);
        let child = cmd.spawn().map_err(|e| Error::io(Access::Start, &program, e))?;
        LIVE.lock().unwrap_or_else(|e| e.into_inner()).push(child.id() as i32);
        Ok(Pooler { settings, dir, socket_dir: cluster.socket_dir().to_path_buf(), port, child: Some(child) })
    }

    /// How a worker connects to it: its socket, as the cluster's user, to the `postgres` database.
    pub(crate) fn config(&self) -> Config {
        let mut config = Config::new();
        config.host_path(&self.socket_dir).port(self.port).user("postgres").dbname("postgres");
        config
    }

    /// If PgBouncer has exited, its log says why.
    pub(crate) fn exited(&mut self) -> Option<String> {
        let status = self.child.as_mut()?.try_wait().ok()??;
        Some(format!("pgbouncer exited ({status}); its log ends with:\n{}", self.log_tail()))
    }

    pub(crate) fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.dir.join("pgbouncer.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(10)..].join("\n")
    }

    /// Immediate shutdown (SIGTERM), then SIGKILL after 5 s.
    pub(crate) fn stop(&mut self) {
        let Some(mut child) = self.child.take() else { return };
        let pid = child.id() as i32;
        for (signal, wait) in [(libc::SIGTERM, 5), (libc::SIGKILL, 5)] {
            // SAFETY: plain kill(2) on our own child.
            unsafe { libc::kill(pid, signal) };
            let until = Instant::now() + Duration::from_secs(wait);
            while Instant::now() < until && !matches!(child.try_wait(), Ok(Some(_))) {
                std::thread::sleep(Duration::from_millis(10));
            }
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
        }
        LIVE.lock().unwrap_or_else(|e| e.into_inner()).retain(|p| *p != pid);
    }
}

impl Drop for Pooler {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Second Ctrl-C: stop every PgBouncer of this process at once.
pub(crate) fn emergency_cleanup() {
    for pid in std::mem::take(&mut *LIVE.lock().unwrap_or_else(|e| e.into_inner())) {
        // SAFETY: kill(2) on a child we started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

/// The generated pgbouncer.ini: one database, the cluster's, reached over its socket as
/// [`POOL_ROLE`]; clients only on a Unix socket in the cluster's directory.
fn ini(cluster: &Cluster, s: PgBouncer, dir: &Path, port: u16, clients: u32) -> String {
    format!(
        "; written by queuebench for one run; removed with the cluster's directory\n\
         [databases]\n\
         postgres = host={socket} port={server_port} dbname=postgres user={POOL_ROLE}\n\
         \n\
         [pgbouncer]\n\
         listen_addr =\n\
         listen_port = {port}\n\
         unix_socket_dir = {socket}\n\
         auth_type = trust\n\
         auth_file = {dir}/userlist.txt\n\
         admin_users = postgres\n\
         pool_mode = {mode}\n\
         default_pool_size = {size}\n\
         max_client_conn = {max_clients}\n\
         ; sqlx sends it at startup; PgBouncer refuses unknown startup parameters\n\
         ignore_startup_parameters = extra_float_digits\n\
         server_reset_query = DISCARD ALL\n\
         log_connections = 0\n\
         log_disconnections = 0\n",
        socket = cluster.socket_dir().display(),
        server_port = cluster.port(),
        dir = dir.display(),
        mode = s.mode.name(),
        size = s.size,
        max_clients = clients + 100,
    )
}

fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|e| Error::io(Access::Write, path, e))
}

/// The `pgbouncer` program: `QUEUEBENCH_PGBOUNCER` when set (and only there), else `PATH`,
/// then `/usr/sbin` (where Debian puts it).
pub(crate) fn find_program() -> Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    if let Some(given) = std::env::var_os("QUEUEBENCH_PGBOUNCER").map(PathBuf::from) {
        return if runnable(&given) {
            Ok(given)
        } else {
            Err(Error::Missing(Missing::PgBouncer { given: Some(given) }))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin")])
        .map(|d| d.join("pgbouncer"))
        .find(|p| runnable(p))
        .ok_or(Error::Missing(Missing::PgBouncer { given: None }))
}

impl super::Database {
    /// Starts PgBouncer in front of the ephemeral cluster: the pool role first (its
    /// search_path the run's schema), then the process, then a real query through it.
    /// `clients`: the most connections the run opens through it at once.
    pub async fn start_pooler(&mut self, settings: PgBouncer, clients: u32) -> Result<()> {
        let Some(cluster) = self.cluster.as_ref() else {
            return Err(Error::machine("starting PgBouncer", "there is no ephemeral cluster to put it in front of"));
        };
        let admin = self.connect_admin().await?;
        // Its server connections run the scenario's SQL: as a member of the run role when the
        // run has one (src/db/role.rs), else as a superuser.
        let rights = match self.run_role() {
            Some(run_role) => format!("NOSUPERUSER IN ROLE {}", crate::quote::ident(run_role)),
            None => "SUPERUSER".into(),
        };
        let (pool_role, schema) = (crate::quote::ident(POOL_ROLE), crate::quote::ident(&self.schema));
        let role = format!("CREATE ROLE {pool_role} LOGIN {rights}; ALTER ROLE {pool_role} SET search_path = {schema}");
        admin.batch_execute(&role).await.map_err(|e| Error::Database {
            action: format!("creating the role PgBouncer's server connections log in as ({POOL_ROLE})"),
            target: Some(self.target.clone()),
            sql: super::sql(&e),
            hint: None,
        })?;
        self.pooler = Some(Pooler::start(cluster, settings, clients)?);
        self.wait_pooler_ready().await
    }

    /// Retries a `SELECT 1` through the pooler for up to 10 s; a PgBouncer that exited says why.
    async fn wait_pooler_ready(&mut self) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let endpoint = self.pooled_config();
            let tried = match super::connect::open(&endpoint, |_| {}).await {
                Ok((client, _task)) => client.simple_query("SELECT 1").await.map(|_| ()).map_err(|e| super::sql(&e)),
                Err(e) => Err(super::sql(&e)),
            };
            let pooler = self.pooler.as_mut().expect("started above");
            match tried {
                Ok(()) => return Ok(()),
                Err(e) => {
                    if let Some(why) = pooler.exited() {
                        return Err(Error::machine("PgBouncer did not start", why));
                    }
                    if Instant::now() > deadline {
                        let why = format!("{}; its log ends with:\n{}", e, pooler.log_tail());
                        return Err(Error::machine("PgBouncer did not accept a connection within 10 s", why));
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
    }
}

impl super::Database {
    /// `--pooler-url`: the workers and producers go through a pooler of the user's own (its URL
    /// without `pool_mode`, with its own sslmode and password as a URL would have them).
    pub fn use_pooler(&mut self, url: &str, mode: crate::model::pooler::PoolMode) -> Result<()> {
        let split = super::tls::split(url);
        let tls = super::tls::Tls::resolve(&split.params).map_err(|setting| Error::TlsSetting { setting })?;
        let mut config: Config = split.rest.parse().map_err(|e: tokio_postgres::Error| Error::Flag {
            flag: "--pooler-url".into(),
            reason: format!(
                "is not a valid PostgreSQL URL ({e}); example: postgres://app@127.0.0.1:6432/app?pool_mode=transaction"
            ),
        })?;
        super::password::fill(&mut config);
        self.external_pooler = Some((super::Endpoint::new(config, tls), mode));
        Ok(())
    }

    /// The pool mode of `--pooler-url`, if one was given.
    pub fn external_pool_mode(&self) -> Option<crate::model::pooler::PoolMode> {
        self.external_pooler.as_ref().map(|(_, mode)| *mode)
    }

    /// Through a pooler of the user's own, a connection starts with the search_path of the
    /// pooler's server role: queuebench cannot set it there (no `options` through a pooler, and a
    /// `SET` stays on the server connection). It must already be the run's schema, or exit 3 with
    /// the fix. Call it once the schema exists (`current_schema()` skips a missing one).
    pub async fn check_pooler_search_path(&self) -> Result<()> {
        if self.external_pooler.is_none() {
            return Ok(());
        }
        let endpoint = self.pooled_config();
        let failed = |sql| Error::Database {
            action: "connecting through --pooler-url".into(),
            target: Some(super::password::display_url(&endpoint)),
            sql,
            hint: None,
        };
        let (client, _task) = super::connect::open(&endpoint, |_| {}).await.map_err(|e| failed(super::sql(&e)))?;
        let rows = client.simple_query("SELECT current_schema()").await.map_err(|e| failed(super::sql(&e)))?;
        let current = rows.iter().find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => Some(r.get(0).unwrap_or("").to_string()),
            _ => None,
        });
        match current {
            Some(s) if s == self.schema => Ok(()),
            other => Err(Error::machine(
                "checking the search_path through --pooler-url",
                format!(
                    "a connection through the pooler starts in schema `{}`, not the run's `{s}`. A pooler passes no \
                     `options` and keeps no SET for the next transaction, so the run's schema must be the default \
                     search_path of the role the pooler logs in as: pick a schema name, give it to that role \
                     (ALTER ROLE <the pooler's server user> SET search_path = NAME) and run with --schema NAME \
                     (docs/production-postgres.md, \"A pooler of your own\"). Nothing was left behind",
                    other.unwrap_or_default(),
                    s = self.schema
                ),
            )),
        }
    }
}
