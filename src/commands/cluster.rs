//! `queuebench cluster -- COMMAND`: an ephemeral cluster for one command's lifetime.

use crate::db::Database;
use crate::error::{Error, ExitCode, Result};
use crate::{pipeline, scenario};
use std::path::Path;

pub async fn cluster(scenario_file: Option<&Path>, command: &[String]) -> Result<ExitCode> {
    let settings = match scenario_file {
        Some(f) => pipeline::ephemeral_settings(&scenario::plan_from_file(f, &[], Some(0))?)?,
        None => Vec::new(),
    };
    let db = Database::open(None, &settings, "public".into(), false, true).await?;
    let url = db.url_for_tools().expect("an ephemeral cluster has a socket");
    let status = tokio::process::Command::new(&command[0]).args(&command[1..]).env("DATABASE_URL", &url).status().await;
    db.teardown().await?;
    let status = status.map_err(|e| Error::Command { command: command[0].clone(), cause: e.to_string() })?;
    std::process::exit(status.code().unwrap_or(1));
}
