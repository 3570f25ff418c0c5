//! `queuebench cluster -- COMMAND`: an ephemeral cluster for one command's lifetime.

use crate::db::Database;
use crate::error::{Error, ExitCode, Result};
use crate::{pipeline, scenario};
use std::path::Path;

/// `tls`: the cluster serves TLS and DATABASE_URL says verify-full against its CA (also when
/// the scenario sets `[postgres] tls`).
pub(crate) async fn cluster(scenario_file: Option<&Path>, tls: bool, command: &[String]) -> Result<ExitCode> {
    let (settings, tls) = match scenario_file {
        Some(f) => {
            let plan = scenario::plan_from_file(f, &[], Some(0))?;
            (pipeline::ephemeral_settings(&plan)?, tls || plan.postgres.tls)
        }
        None => (Vec::new(), tls),
    };
    let db = Database::open_ephemeral(&settings, "public".into(), false, tls, None).await?;
    let url = db.url_for_tools().expect("an ephemeral cluster has a socket");
    let status = tokio::process::Command::new(&command[0]).args(&command[1..]).env("DATABASE_URL", &url).status().await;
    db.teardown().await?;
    let status = status.map_err(|e| Error::Command { command: command[0].clone(), cause: e.to_string() })?;
    std::process::exit(status.code().unwrap_or(1));
}
