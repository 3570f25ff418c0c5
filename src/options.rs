//! The command line, resolved once (as ripgrep's low-level arguments become its high-level
//! ones): where PostgreSQL comes from, where the outputs go, the seed, the overrides and the
//! scale. `cli.rs` builds these from clap's structs and checks them; `run`, `sweep`, `prepare`
//! and `cluster` read only these, so no stage below the command line sees clap.

use crate::error::{Error, Result};
use std::path::PathBuf;

/// `--postgres`: where the run's PostgreSQL comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PostgresMode {
    Ephemeral,
    Docker,
    Url,
}

/// The database a run uses, resolved from `--postgres`, `--database-url` and `--postgres-image`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A throw-away cluster from this machine's server binaries (the default).
    Ephemeral,
    /// An existing server; the run gets a schema of its own there. `allow_remote`: `--yes`
    /// to a host that is not on this machine.
    Url { url: String, allow_remote: bool },
    /// A throw-away container (`--postgres docker`, cargo feature `docker`).
    Docker { image: String },
}

impl Target {
    /// `--postgres` if given, else url when a URL is given, else ephemeral.
    pub fn resolve(mode: Option<PostgresMode>, url: Option<String>, image: &str, allow_remote: bool) -> Result<Target> {
        Ok(match (mode, url) {
            (Some(PostgresMode::Url), None) => {
                return Err(Error::Flag {
                    flag: "--postgres url".into(),
                    reason: "needs --database-url URL (or DATABASE_URL)".into(),
                });
            }
            (Some(PostgresMode::Url) | None, Some(url)) => Target::Url { url, allow_remote },
            (Some(PostgresMode::Docker), _) => Target::Docker { image: image.to_string() },
            (Some(PostgresMode::Ephemeral) | None, _) => Target::Ephemeral,
        })
    }

    /// How the user asked for it, for messages (`--database-url (or DATABASE_URL)`).
    pub fn given_by(&self) -> &'static str {
        match self {
            Target::Ephemeral => "--postgres ephemeral",
            Target::Url { .. } => "--database-url (or DATABASE_URL)",
            Target::Docker { .. } => "--postgres docker",
        }
    }
}

/// How a run uses its database.
#[derive(Debug, Clone)]
pub struct DatabaseOptions {
    pub target: Target,
    /// `--schema NAME` (default: `queuebench_<run id>`), checked.
    pub schema: Option<String>,
    /// `--reuse`: run in the existing `--schema`, replacing only queuebench's own tables.
    pub reuse: bool,
    /// `--keep`: keep the schema (URL mode) or the stopped cluster's data dir.
    pub keep: bool,
    /// `--tls`: the ephemeral cluster serves TLS and the run connects with verify-full.
    pub tls: bool,
    /// `--pooler-url`: a pooler of the user's own in front of the `--database-url` server, and
    /// its pool mode (the URL's `pool_mode`, taken out of it).
    pub pooler: Option<(String, crate::model::pooler::PoolMode)>,
}

impl DatabaseOptions {
    pub fn ephemeral() -> DatabaseOptions {
        DatabaseOptions { target: Target::Ephemeral, schema: None, reuse: false, keep: false, tls: false, pooler: None }
    }

    pub fn new(target: Target, schema: Option<String>, reuse: bool, keep: bool) -> Result<DatabaseOptions> {
        if let Some(name) = &schema {
            check_schema_name(name)?;
        }
        Ok(DatabaseOptions { target, schema, reuse, keep, tls: false, pooler: None })
    }

    /// `--tls`: only for the ephemeral cluster (a server of one's own takes sslmode in its URL).
    pub fn with_tls(mut self, tls: bool) -> Result<DatabaseOptions> {
        if tls && self.target != Target::Ephemeral {
            return Err(Error::Flag {
                flag: "--tls".into(),
                reason: format!(
                    "makes queuebench's own ephemeral cluster serve TLS; {} is not one: for a server of your own, \
                     put sslmode (and sslrootcert) in the URL, e.g. ?sslmode=verify-full&sslrootcert=ca.pem",
                    self.target.given_by()
                ),
            });
        }
        self.tls = tls;
        Ok(self)
    }

    /// `--pooler-url URL?pool_mode=MODE`: only beside `--database-url` (queuebench starts its own
    /// PgBouncer for the ephemeral cluster: `[postgres.pgbouncer]`), and the mode is required.
    pub fn with_pooler(mut self, url: Option<String>) -> Result<DatabaseOptions> {
        use crate::model::pooler::PoolMode;
        let Some(url) = url else { return Ok(self) };
        let refuse = |reason: String| Error::Flag { flag: "--pooler-url".into(), reason };
        if !matches!(self.target, Target::Url { .. }) {
            return Err(refuse(format!(
                "drives the workers through a pooler of your own in front of --database-url, and {} is not one; \
                 for PgBouncer in front of the ephemeral cluster, add [postgres.pgbouncer] to the scenario \
                 (or --set postgres.pgbouncer.pool_mode=transaction)",
                self.target.given_by()
            )));
        }
        let (rest, mode) = take_query_param(&url, "pool_mode");
        let mode = match mode {
            None => {
                return Err(refuse(
                    "needs the pooler's pool mode in its query: ?pool_mode=transaction (or session, statement)".into(),
                ));
            }
            Some(m) => PoolMode::parse(&m)
                .ok_or_else(|| refuse(format!("pool_mode `{m}` is not one of {}", PoolMode::NAMES.join(", "))))?,
        };
        self.pooler = Some((rest, mode));
        Ok(self)
    }
}

/// `url` without the query parameter `name`, and its value (URLs only; key=value strings are
/// returned as they are).
fn take_query_param(url: &str, name: &str) -> (String, Option<String>) {
    let Some((base, query)) = url.split_once('?') else { return (url.to_string(), None) };
    let mut value = None;
    let kept: Vec<&str> = query
        .split('&')
        .filter(|pair| match pair.split_once('=') {
            Some((k, v)) if k == name => {
                value = Some(v.to_string());
                false
            }
            _ => true,
        })
        .collect();
    let rest = if kept.is_empty() { base.to_string() } else { format!("{base}?{}", kept.join("&")) };
    (rest, value)
}

/// Schemas every database has, that a run never uses even under `--reuse` (pg_* names,
/// `pg_catalog`, `pg_toast`, `pg_temp_N`, are refused by the name rule below).
const SHARED_SCHEMAS: [&str; 2] = ["public", "information_schema"];

/// A schema name queuebench accepts from the command line: lower-case letters, digits and _,
/// not a shared schema.
pub(crate) fn check_schema_name(name: &str) -> Result<()> {
    if SHARED_SCHEMAS.contains(&name) {
        return Err(Error::Flag {
            flag: "--schema".into(),
            reason: format!(
                "`{name}` is a schema the database itself or other applications use; queuebench runs only in a \
                 schema of its own (with or without --reuse): leave --schema out, or give a name of your own \
                 (--schema qb)"
            ),
        });
    }
    let ok = name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !name.starts_with("pg_");
    if ok {
        Ok(())
    } else {
        Err(Error::Flag {
            flag: "--schema".into(),
            reason: format!(
                "`{name}`: use lower-case letters, digits and _ (at most 63, not starting with a digit or pg_)"
            ),
        })
    }
}

/// What one run of one scenario needs besides its plan: shared by every repeat and sweep cell.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub database: DatabaseOptions,
    /// Draw the live progress line (off with `--quiet` and in sweeps).
    pub progress: bool,
    /// `--agents N` / `--spawn-agents N`: the workers run in agents (docs/agents.md).
    pub agents: Option<AgentsOptions>,
}

/// A run across agents: how many, how long to wait for them, and whether this machine
/// starts them itself (`--spawn-agents`, each in a network namespace with `--netns`).
#[derive(Debug, Clone, PartialEq)]
pub struct AgentsOptions {
    pub count: u32,
    /// `--agent-wait`: how long the coordinator waits for the agents to join.
    pub wait: std::time::Duration,
    pub spawn: bool,
    pub netns: bool,
}

/// `--save-baseline`, `--baseline`, `--baseline-dir`, `--tolerance`.
#[derive(Debug, Clone, Default)]
pub struct BaselineOptions {
    pub save: Option<String>,
    pub compare: Option<String>,
    pub dir: PathBuf,
    /// `METRIC=VALUE`, checked against each scenario's metric names when its plan is built.
    pub tolerances: Vec<String>,
}

/// `queuebench run`, resolved.
#[derive(Debug, Clone)]
pub struct RunCommand {
    pub files: Vec<PathBuf>,
    /// `--set` overrides, with `--time-scale` folded in as `run.time_scale`.
    pub sets: Vec<String>,
    pub seed: Option<u64>,
    pub out: Option<PathBuf>,
    /// `--force`: write into an `--out` folder that already holds something.
    pub force: bool,
    /// `--expect` texts, parsed against each scenario's metric names when its plan is built.
    pub expect: Vec<String>,
    pub quiet: bool,
    pub repeat: u32,
    pub baseline: BaselineOptions,
    /// Write the GitHub step summary and annotations.
    pub github: bool,
    pub run: RunOptions,
    /// `--pg-version 14,16`: each file runs once per major (in `<out>/<scenario>-pg<N>/`), and a
    /// table compares them (docs/postgres-versions.md). Empty for one version or none (a single
    /// `--pg-version N` is `--set postgres.version=N`).
    pub pg_versions: Vec<u32>,
}

/// `queuebench sweep`, resolved.
#[derive(Debug, Clone)]
pub struct SweepCommand {
    pub file: PathBuf,
    /// `KEY=V1,V2,…` lists (parsed into the grid by `sweep::grid`).
    pub grid: Vec<String>,
    pub repeat: u32,
    pub time_scale: Option<f64>,
    pub out: Option<PathBuf>,
    /// `--force`: write into an `--out` folder that already holds something.
    pub force: bool,
    pub seed: Option<u64>,
    pub quiet: bool,
    pub run: RunOptions,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_follows_the_flags() {
        let url = || Some("postgres://u@127.0.0.1/db".to_string());
        assert_eq!(Target::resolve(None, None, "i", false).unwrap(), Target::Ephemeral);
        assert!(matches!(Target::resolve(None, url(), "i", true).unwrap(), Target::Url { allow_remote: true, .. }));
        assert_eq!(
            Target::resolve(Some(PostgresMode::Ephemeral), url(), "i", false).unwrap(),
            Target::Ephemeral,
            "--postgres ephemeral wins over DATABASE_URL"
        );
        assert_eq!(
            Target::resolve(Some(PostgresMode::Docker), None, "postgres:16", false).unwrap(),
            Target::Docker { image: "postgres:16".into() }
        );
        let e = Target::resolve(Some(PostgresMode::Url), None, "i", false).unwrap_err();
        assert!(e.to_string().contains("needs --database-url"), "{e}");
    }

    #[test]
    fn schema_names_are_checked_once() {
        assert!(DatabaseOptions::new(Target::Ephemeral, Some("mine_1".into()), false, false).is_ok());
        for bad in ["Mine", "1x", "pg_x", "a-b", &"x".repeat(64)] {
            assert!(DatabaseOptions::new(Target::Ephemeral, Some(bad.into()), false, false).is_err(), "{bad}");
        }
    }
}
