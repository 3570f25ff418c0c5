//! The connection settings each kind of connection gets: the workers' (the run role, the run's
//! schema), the side tasks' (the same, with the harness's statement_timeout), the harness's own
//! (the target's user, bounded), and through a pooler; the run role itself.

use super::*;

impl Database {
    /// The connection settings the scenario's SQL runs on (workers, producers, the reaper, the
    /// sampler's and the probe's queries, explore sessions, validate): search_path is the run's
    /// schema, and the user is the run role where there is one (`role.rs`).
    pub fn worker_config(&self) -> Endpoint {
        let mut endpoint = Endpoint { statement_timeout: None, ..self.harness_config() };
        if let Some(role) = self.run_role {
            endpoint.config.user(role);
        }
        endpoint
    }

    /// [`Database::worker_config`] as the target's own user (the ephemeral cluster's
    /// superuser), with the harness's statement_timeout: for the harness's faults, extensions
    /// and cancels, never for the scenario's SQL.
    pub fn harness_config(&self) -> Endpoint {
        let mut config = self.config.clone();
        let options = config.get_options().map(|o| format!("{o} ")).unwrap_or_default();
        config.options(format!("{options}-c {}", crate::quote::option_ident("search_path", &self.schema)));
        Endpoint { statement_timeout: Some(self.statement_timeout), ..self.endpoint(self.named(config)) }
    }

    /// The role the scenario's SQL connects as, when not the target's own user.
    pub fn run_role(&self) -> Option<&'static str> {
        self.run_role
    }

    /// From here on, the scenario's SQL connects as [`role::RUN_ROLE`], created now (an
    /// ephemeral cluster only: the caller decides).
    pub(crate) async fn least_privilege(&mut self) -> Result<()> {
        let admin = self.connect_admin().await?;
        role::create_run_role(&admin).await.map_err(|e| Error::Database {
            action: format!("creating the run role {}", role::RUN_ROLE),
            target: Some(self.target.clone()),
            sql: sql(&e),
            hint: None,
        })?;
        self.run_role = Some(role::RUN_ROLE);
        Ok(())
    }

    /// `config` with the run's TLS: the one place a connection's TLS comes from.
    pub fn endpoint(&self, config: Config) -> Endpoint {
        Endpoint { config, tls: self.tls.clone(), direct: None, session: self.session, statement_timeout: None }
    }

    /// The side tasks' connections into the run's schema (the sampler, the reaper, probes,
    /// blockers): the scenario's SQL as the workers run it, with the harness's statement_timeout.
    pub fn side_config(&self) -> Endpoint {
        Endpoint { statement_timeout: Some(self.statement_timeout), ..self.worker_config() }
    }

    /// The settings workers and producers connect with: through the run's pooler when there is
    /// one (its server role's search_path is the run's schema; no `options`, which a pooler
    /// refuses), else [`Database::worker_config`].
    pub fn pooled_config(&self) -> Endpoint {
        if let Some((endpoint, mode)) = &self.external_pooler {
            let mut endpoint = endpoint.clone();
            endpoint.config = self.named(endpoint.config);
            endpoint.direct = (!mode.keeps_session()).then(|| Box::new(self.worker_config()));
            return endpoint;
        }
        let Some(pooler) = &self.pooler else { return self.worker_config() };
        let mut endpoint = Endpoint::plain(self.named(pooler.config()));
        if !pooler.settings.mode.keeps_session() {
            endpoint.direct = Some(Box::new(self.worker_config()));
        }
        endpoint
    }

    /// The pooler's mode and size, when the run's workers go through one.
    pub fn pooler(&self) -> Option<crate::model::pooler::PgBouncer> {
        self.pooler.as_ref().map(|p| p.settings)
    }

    /// A live run's connections name its schema in application_name (unless the URL sets
    /// one), so `queuebench clean` leaves that schema alone.
    pub(super) fn named(&self, mut config: Config) -> Config {
        if config.get_application_name().is_none() && !self.schema.is_empty() {
            config.application_name(format!("queuebench {}", self.schema));
        }
        config
    }
}
