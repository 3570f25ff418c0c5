//! The run's server as URLs for child processes (a client's workers, an adapter's setup
//! command, spawned agents, psql and pgbench): with the password, for their environment only,
//! never printed.

use super::*;

impl Database {
    /// The run's server as a URL with its password, for a child process's environment
    /// (never printed): the cluster's socket, or the server of `--database-url`.
    pub fn child_url(&self) -> String {
        self.url_for_tools().unwrap_or_else(|| self.session.add_to(self.tls.add_to(password::secret_url(&self.config))))
    }

    /// [`Database::child_url`] as the run role where there is one: for the scenario's own
    /// processes (a client's workers, an adapter's setup command).
    pub fn run_url(&self) -> String {
        match (self.run_role, self.cluster.is_some()) {
            (Some(role), true) => self.tools_url(role).unwrap_or_else(|| self.child_url()),
            _ => self.child_url(),
        }
    }

    /// The URL a spawned agent uses to reach the server through `addr` (an agent's forwarder,
    /// docs/agents.md): the same password and database, the user of [`Database::run_url`]; for
    /// its environment only.
    pub fn child_url_via(&self, addr: std::net::SocketAddr) -> String {
        let mut via = Config::new();
        via.host(addr.ip().to_string()).port(addr.port());
        if let Some(u) = self.run_role.or(self.config.get_user()) {
            via.user(u);
        }
        if let Some(p) = self.config.get_password() {
            via.password(p);
        }
        if let Some(d) = self.config.get_dbname() {
            via.dbname(d);
        }
        self.tls.add_to(password::secret_url(&via))
    }

    /// The ephemeral cluster as a URL for psql, pgbench or a client (with `--tls`: over
    /// localhost with verify-full against the cluster's CA).
    pub fn url_for_tools(&self) -> Option<String> {
        self.tools_url("postgres")
    }

    /// [`Database::url_for_tools`] as `user`.
    fn tools_url(&self, user: &str) -> Option<String> {
        let c = self.cluster.as_ref()?;
        Some(match c.tls_files() {
            Some(_) => self.tls.add_to(format!("postgresql://{user}@localhost:{}/postgres", c.port())),
            // Both servers, each with its port (`postgres://%2Fdir:P1,%2Fdir:P2/…`, which libpq and
            // tokio-postgres both read), and target_session_attrs=read-write.
            None if c.standby().is_some() => {
                let mut config = self.config.clone();
                config.user(user);
                self.session.add_to(password::secret_url(&config))
            }
            None => format!("postgresql:///postgres?host={}&port={}&user={user}", c.socket_dir().display(), c.port()),
        })
    }
}
