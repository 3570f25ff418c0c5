//! Who runs the scenario's SQL (docs/safety.md, "Who runs what").
//!
//! In an ephemeral cluster the harness's own work (creating the run's schema, faults,
//! observation, teardown) runs as the cluster's superuser `postgres`; everything that runs the
//! scenario's SQL (workers, producers, the adapter's statements and setup, explore sessions,
//! `validate`'s smoke cycle, process clients and setup commands) connects as [`RUN_ROLE`], a
//! login role that is not a superuser, may not create roles or databases, and owns the run's
//! schema. `COPY … TO PROGRAM`, `pg_read_server_files`, untrusted languages and `ALTER SYSTEM`
//! are then refused by the server itself (SQLSTATE 42501). In URL mode the URL's role is used
//! as given, and [`current`] reports whether it is a superuser.

use super::Database;
use crate::error::{Error, Result};
use tokio_postgres::Client;

/// The ephemeral cluster's role for the scenario's SQL.
pub(crate) const RUN_ROLE: &str = "queuebench_run";

/// The run role and what it may do: log in (the cluster trusts its own socket, so without a
/// password), create schemas in the database (real queue libraries' migrations make their
/// own), read the statistics views whole (`pg_monitor`: pg_stat_activity's other sessions,
/// pgstattuple) and flush its statistics. Idempotent: a standby replays it, a second run of a
/// kept cluster finds it.
const CREATE_RUN_ROLE: &str = "\
DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'queuebench_run') THEN
    CREATE ROLE queuebench_run LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
  END IF;
END $$;
GRANT pg_monitor TO queuebench_run;
DO $$ BEGIN
  EXECUTE format('GRANT CREATE ON DATABASE %I TO queuebench_run', current_database());
  IF to_regprocedure('pg_stat_force_next_flush()') IS NOT NULL THEN
    GRANT EXECUTE ON FUNCTION pg_stat_force_next_flush() TO queuebench_run;
  END IF;
END $$";

/// Creates [`RUN_ROLE`] (as the superuser `admin`).
pub(crate) async fn create_run_role(admin: &Client) -> std::result::Result<(), tokio_postgres::Error> {
    admin.batch_execute(CREATE_RUN_ROLE).await
}

/// The run's schema becomes the run role's (when the run has one), so the scenario's setup
/// creates its tables there and owns them; `admin` is the superuser's connection.
pub(crate) async fn hand_over(db: &Database, admin: &Client) -> Result<()> {
    let Some(role) = db.run_role() else { return Ok(()) };
    let alter = format!("ALTER SCHEMA \"{}\" OWNER TO {role}", db.schema.replace('"', "\"\""));
    admin.batch_execute(&alter).await.map_err(|e| Error::Database {
        action: alter.clone(),
        target: Some(db.shown().to_string()),
        sql: super::sql(&e),
        hint: None,
    })
}

/// `error` with the way out when the run role lacked a privilege (SQLSTATE 42501).
pub(crate) fn hinted(db: &Database, error: Error) -> Error {
    match error {
        Error::Database { action, target, sql, hint: None }
            if db.run_role().is_some() && sql.sqlstate.as_deref() == Some("42501") =>
        {
            let hint = Some(format!(
                "the scenario's SQL runs as {RUN_ROLE}, which owns the run's schema and is not a superuser \
                 (docs/safety.md, \"Who runs what\"); a scenario that needs more sets [postgres] superuser_sql = true"
            ));
            Error::Database { action, target, sql, hint }
        }
        other => other,
    }
}

/// The role a connection runs as and whether it is a superuser (`rolsuper`); `None` when the
/// server did not say.
pub(crate) async fn current(client: &Client) -> (String, Option<bool>) {
    let sql = "SELECT current_user::text, (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)";
    match client.query_one(sql, &[]).await {
        Ok(r) => (r.get(0), r.get(1)),
        Err(_) => (String::new(), None),
    }
}
