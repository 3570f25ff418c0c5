//! queuebench: drive simulated workers against a real PostgreSQL job table
//! and prove, with evidence, whether the queue is correct and how fast it is.
//!
//! Data flows one way:
//! scenario → plan → database → run → evidence → checks → summary → exit code.
//! `pipeline::run_one` is that list of stage calls; docs/architecture.md has the map.

#![warn(unreachable_pub)]

pub(crate) mod adapter;
pub(crate) mod agent;
pub mod cli;
pub mod collect;
pub(crate) mod commands;
pub(crate) mod compare;
pub mod db;
pub mod diag;
pub mod error;
pub(crate) mod explore;
pub mod files;
pub(crate) mod gate;
pub mod model;
pub(crate) mod options;
pub(crate) mod pipeline;
pub(crate) mod quote;
pub mod report;
pub mod run;
pub(crate) mod scenario;
pub(crate) mod sweep;
pub mod verify;

#[cfg(test)]
mod fuzz_tests;

use cli::{Cli, Command};

use error::ExitCode;
/// The version and the commit it was built from (on the ground floor: `model::VERSION`).
pub use model::VERSION;
use tokio_util::sync::CancellationToken;

/// What the first Ctrl-C or SIGTERM prints: the signal by name and how to quit at once
/// (the same signal again, or Ctrl-C).
pub fn interrupt_message(signal: &str) -> String {
    let again = if signal == "SIGTERM" { "SIGTERM again (or Ctrl-C)" } else { "Ctrl-C again" };
    format!("interrupted by {signal}: stopping workers and writing what was collected ({again} to quit at once)")
}

/// Runs a parsed command line; never panics on bad input, returns the exit code.
pub async fn main_with(cli: Cli, interrupt: CancellationToken) -> ExitCode {
    let result = match cli.command {
        Command::Run(args) => match args.options() {
            Ok(cmd) => pipeline::run_files(&cmd, &interrupt).await,
            Err(e) => Err(e),
        },
        Command::Sweep(args) => match args.options() {
            Ok(cmd) => sweep::sweep(&cmd, &interrupt).await,
            Err(e) => Err(e),
        },
        Command::Report { dir } => commands::report::rebuild_report(&dir),
        Command::Check { dir, json } => commands::check::check(&dir, json),
        Command::Explain { dir, job } => commands::explain::explain(&dir, job),
        Command::Repro { file, overrides, fencing, database_url, repeat } => {
            let target = match database_url {
                Some(url) => options::Target::Url { url, allow_remote: false },
                None => options::Target::Ephemeral,
            };
            commands::repro::repro(&file, &overrides.set, fencing, &target, repeat).await
        }
        Command::Explore(args) => {
            let target = match args.database_url {
                Some(url) => options::Target::Url { url, allow_remote: false },
                None => options::Target::Ephemeral,
            };
            let o = explore::Options {
                sessions: args.sessions,
                jobs: args.jobs,
                depth: args.depth as usize,
                time: std::time::Duration::from_secs(args.time),
                reduce: !args.no_reduce,
                liveness: !args.safety_only,
                reaper: !args.no_reaper,
                ticks: args.ticks,
                crashes: args.crashes,
                heartbeats: args.heartbeats,
                fail: args.fail,
                cancel: args.cancel,
                producer: args.producer,
                out: args.out,
            };
            explore::explore(&args.file, &args.overrides.set, &target, &o).await
        }
        Command::Compare { old, new, baseline, out, force } => {
            commands::compare::compare_runs(&old, &new, &baseline, out.as_deref(), force)
        }
        Command::Validate { files, overrides, database_url, yes } => {
            let target = match database_url {
                Some(url) => options::Target::Url { url, allow_remote: yes },
                None => options::Target::Ephemeral,
            };
            commands::validate::validate(&files, &overrides.set, &target).await
        }
        Command::Sql { file, overrides, pgbench } => commands::sql::print_sql(&file, &overrides.set, pgbench),
        Command::Prepare { file, overrides, database_url, schema, reuse } => {
            commands::prepare::prepare(&file, &overrides.set, &database_url, schema, reuse).await
        }
        Command::Clean { database_url, yes } => commands::clean::clean(database_url.as_deref(), yes).await,
        Command::Agent { database_url, run, name, index, wait } => match scenario::units::parse_duration(&wait) {
            Ok(wait) => {
                let opts = agent::member::AgentOptions { url: database_url, run, name, index, wait };
                agent::member::agent(&opts, &interrupt).await.map(|()| ExitCode::Passed)
            }
            Err(e) => Err(error::Error::FlagValue {
                flag: "--wait".into(),
                value: Some(wait),
                invalid: error::Invalid::new(e.to_string()),
            }),
        },
        Command::Cluster { scenario, tls, command } => {
            commands::cluster::cluster(scenario.as_deref(), tls, &command).await
        }
    };
    result.unwrap_or_else(|e| {
        if db::tearing_down() {
            // A second Ctrl-C is killing the cluster under this run: the signal thread exits 130.
            return ExitCode::Interrupted;
        }
        eprintln!("error: {e}");
        e.exit_code()
    })
}
