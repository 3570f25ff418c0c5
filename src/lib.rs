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
pub mod shutdown;
pub(crate) mod sweep;
pub mod verify;

#[cfg(test)]
mod fuzz_tests;

use cli::{Cli, Command};

/// The statistics of repeated runs (the median, the spread, the rank test) that `compare`,
/// `--repeat` and `sweep` use, for `cargo xtask`'s tables (xtask/).
pub use compare::stats;
use error::ExitCode;
/// The version and the commit it was built from (on the ground floor: `model::VERSION`).
pub use model::VERSION;
use tokio_util::sync::CancellationToken;

/// What the first Ctrl-C, SIGTERM or SIGHUP prints: the signal by name, what stops (`workers`:
/// a run's workers, whose evidence is written; else the command) and how to quit at once (the
/// same signal again, or Ctrl-C).
pub fn interrupt_message(signal: &str, workers: bool) -> String {
    let again =
        if signal.starts_with("Ctrl-C") { "Ctrl-C again".to_string() } else { format!("{signal} again (or Ctrl-C)") };
    let doing = if workers { "stopping workers and writing what was collected" } else { "stopping and cleaning up" };
    format!("interrupted by {signal}: {doing} ({again} to quit at once)")
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
        Command::Repro { file, overrides, fencing, target, repeat } => match target.target() {
            Ok(target) => {
                let repro = commands::repro::repro(&file, &overrides.set, fencing, &target, repeat);
                until_interrupted(repro, &interrupt).await
            }
            Err(e) => Err(e),
        },
        Command::Explore(args) => {
            let progress = match args.progress.as_str() {
                "off" => Ok(None),
                every => duration_flag("--progress", every.to_string()).map(Some),
            };
            match progress {
                Ok(progress) => explore_with(args, progress, &interrupt).await,
                Err(e) => Err(e),
            }
        }
        Command::Compare { old, new, baseline, out, force } => {
            commands::compare::compare_runs(&old, &new, &baseline, out.as_deref(), force)
        }
        Command::Validate { files, overrides, target, timeout } => {
            match target.target().and_then(|target| Ok((target, duration_flag("--timeout", timeout)?))) {
                Ok((target, limit)) => {
                    commands::validate::validate(&files, &overrides.set, &target, limit, &interrupt).await
                }
                Err(e) => Err(e),
            }
        }
        Command::Sql { file, overrides, pgbench } => commands::sql::print_sql(&file, &overrides.set, pgbench),
        Command::Prepare { file, overrides, server, schema, reuse } => match server.anywhere() {
            Ok(target) => {
                let prepared = commands::prepare::prepare(&file, &overrides.set, target, schema, reuse);
                until_interrupted(prepared, &interrupt).await
            }
            Err(e) => Err(e),
        },
        Command::Clean { target } => match target.target() {
            Ok(server) => until_interrupted(commands::clean::clean(&server, target.yes), &interrupt).await,
            Err(e) => Err(e),
        },
        Command::Agent { server, run, name, index, wait } => {
            match server.required().and_then(|url| Ok((url, duration_flag("--wait", wait)?))) {
                Ok((url, wait)) => {
                    let opts = agent::member::AgentOptions { url, run, name, index, wait };
                    agent::member::agent(&opts, &interrupt).await.map(|()| ExitCode::Passed)
                }
                Err(e) => Err(e),
            }
        }
        Command::Cluster { scenario, tls, pg_version, command } => {
            match pg_version.map(|v| db::versions::major_flag("--pg-version", &v).map(|p| p.major)).transpose() {
                Ok(version) => {
                    commands::cluster::cluster(scenario.as_deref(), tls, version, &command, &interrupt).await
                }
                Err(e) => Err(e),
            }
        }
        Command::Postgres(action) => commands::postgres::postgres(&action),
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

/// A duration flag (`10m`, `60s`): refused with exit 2 when it is not one.
async fn explore_with(
    args: cli::ExploreArgs,
    progress: Option<std::time::Duration>,
    interrupt: &CancellationToken,
) -> error::Result<ExitCode> {
    let target = args.target.target()?;
    let o = explore::Options {
        progress,
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
        inside: !args.whole_statements,
        acks_lost: args.acks_lost,
        cancel: args.cancel,
        producer: args.producer,
        out: args.out,
        all: args.all,
        ignore: args.ignore,
        replay: args.replay,
        random: args.random,
        seed: args.seed,
        pct_depth: args.pct_depth,
    };
    until_interrupted(explore::explore(&args.file, &args.overrides.set, &target, &o), interrupt).await
}

fn duration_flag(flag: &str, value: String) -> error::Result<std::time::Duration> {
    scenario::units::parse_duration(&value).map_err(|e| error::Error::FlagValue {
        flag: flag.into(),
        value: Some(value),
        invalid: error::Invalid::new(e.to_string()),
    })
}

/// A command that does not watch for signals itself ends at the first one (exit 130): its
/// future is dropped, which stops and removes an ephemeral cluster it holds; a URL-mode schema
/// it had created is named, with how to drop it.
async fn until_interrupted(
    command: impl std::future::Future<Output = error::Result<ExitCode>>,
    interrupt: &CancellationToken,
) -> error::Result<ExitCode> {
    tokio::select! {
        result = command => result,
        () = interrupt.cancelled() => {
            db::left_behind();
            Ok(ExitCode::Interrupted)
        }
    }
}
