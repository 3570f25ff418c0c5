//! queuebench: drive simulated workers against a real PostgreSQL job table
//! and prove, with evidence, whether the queue is correct and how fast it is.
//!
//! Data flows one way:
//! scenario → plan → database → run → evidence → checks → summary → exit code.
//! `run_one` below is that list of stage calls.

pub mod cli;
pub mod collect;
pub mod compare;
pub mod db;
pub mod error;
pub mod gate;
pub mod pipeline;
pub mod report;
pub mod run;
pub mod scenario;
pub mod strategy;
pub mod sweep;
pub mod verify;

#[cfg(test)]
mod fuzz_tests;

use cli::{Cli, Command};
use db::{Database, schema};
use error::{Error, ExitCode, Result};
use report::summary::RunSummary;
use report::timeseries::Timeseries;
use std::path::{Path, PathBuf};
use tokio_util::sync::CancellationToken;

/// Runs a parsed command line; never panics on bad input, returns the exit code.
pub async fn main_with(cli: Cli, interrupt: CancellationToken) -> ExitCode {
    let result = match cli.command {
        Command::Run(args) => pipeline::run_files(&args, &interrupt).await,
        Command::Sweep(args) => sweep::sweep(&args, &interrupt).await,
        Command::Report { dir } => rebuild_report(&dir),
        Command::Compare { old, new, baseline, out } => compare_runs(&old, &new, &baseline, out.as_deref()),
        Command::Validate { files, overrides } => validate(&files, &overrides.set),
        Command::Sql { file, overrides, pgbench } => print_sql(&file, &overrides.set, pgbench),
        Command::Prepare { file, overrides, database_url, schema, reuse } => {
            prepare(&file, &overrides.set, &database_url, schema, reuse).await
        }
        Command::Cluster { scenario, command } => cluster(scenario.as_deref(), &command).await,
    };
    result.unwrap_or_else(|e| {
        eprintln!("error: {e}");
        e.exit_code()
    })
}

/// `queuebench report DIR`: summary.json, summary.csv, charts and report.html again from a run's files.
fn rebuild_report(dir: &Path) -> Result<ExitCode> {
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name))
            .map_err(|e| Error::usage(format!("cannot read {}: {e}", dir.join(name).display())))
    };
    let summary: RunSummary = serde_json::from_str(&read("summary.json")?)
        .map_err(|e| Error::usage(format!("{}: not a queuebench summary: {e}", dir.join("summary.json").display())))?;
    let ts = Timeseries::read(&dir.join("timeseries.csv"))?;
    report::render(dir, &summary, &ts, &read("scenario.toml").unwrap_or_default())?;
    println!("rebuilt {}", dir.join("report.html").display());
    Ok(ExitCode::Passed)
}

/// `queuebench compare OLD NEW`: the baseline table for two sets of summaries.
fn compare_runs(old: &str, new: &str, args: &cli::BaselineArgs, out: Option<&Path>) -> Result<ExitCode> {
    let (old_label, old_runs) = compare::store::load_any(old, &args.baseline_dir)?;
    let (new_label, new_runs) = compare::store::load_any(new, &args.baseline_dir)?;
    let (o, n) = (&old_runs[0].scenario, &new_runs[0].scenario);
    if o != n {
        eprintln!("warning: comparing different scenarios: `{o}` and `{n}`");
    }
    let names: Vec<String> = new_runs.iter().chain(&old_runs).flat_map(|r| r.metrics().into_keys()).collect();
    let mut tol = scenario_tolerances(Path::new(new), &names)?;
    for t in &args.tolerance {
        tol.set_cli(t, &names).map_err(Error::usage)?;
    }
    let c = compare::compare(&old_runs, &new_runs, &tol, (&old_label, &new_label));
    print!("{}", compare::table(&c));
    if let Some(dir) = out {
        pipeline::write_comparison_files(dir, &c)?;
    }
    Ok(if c.regressed { ExitCode::ExpectationFailed } else { ExitCode::Passed })
}

/// `[baseline.tolerance]` of the scenario a run folder saved (`scenario.toml`, or a repeat's).
fn scenario_tolerances(run: &Path, names: &[String]) -> Result<compare::Tolerances> {
    let Some(file) =
        [run.join("scenario.toml"), run.join("repeat-1").join("scenario.toml")].into_iter().find(|f| f.is_file())
    else {
        return Ok(compare::Tolerances::default());
    };
    let text = std::fs::read_to_string(&file).map_err(|e| Error::usage(format!("{}: {e}", file.display())))?;
    let table: toml::Table = toml::from_str(&text).map_err(|e| Error::usage(format!("{}: {e}", file.display())))?;
    let tolerance = table.get("baseline").and_then(|b| b.get("tolerance")).and_then(|t| t.as_table());
    let pairs: Vec<(String, String)> = tolerance
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_str().map_or_else(|| v.to_string(), String::from)))
        .collect();
    compare::Tolerances::from_pairs(pairs.iter().map(|(k, v)| (k, v)), names)
        .map_err(|(k, e)| Error::usage(format!("{}: baseline.tolerance.{k}: {e}", file.display())))
}

fn validate(files: &[PathBuf], sets: &[String]) -> Result<ExitCode> {
    let mut worst = ExitCode::Passed;
    for f in files {
        match scenario::plan_from_file(f, sets, Some(0)) {
            Ok(p) => {
                println!("{}: ok ({} · {} workers · strategy {})", f.display(), p.name, p.workers, p.strategy.name)
            }
            Err(e) => {
                eprintln!("error: {e}");
                worst = worst.worst(e.exit_code());
            }
        }
    }
    Ok(worst)
}

fn print_sql(file: &Path, sets: &[String], pgbench: bool) -> Result<ExitCode> {
    let plan = scenario::plan_from_file(file, sets, Some(0))?;
    if pgbench {
        let script =
            strategy::print::pgbench_script(&plan).map_err(|e| Error::usage(format!("{}: {e}", file.display())))?;
        print!("{script}");
    } else {
        print!("{}", strategy::print::listing(&plan));
    }
    Ok(ExitCode::Passed)
}

async fn prepare(file: &Path, sets: &[String], url: &str, schema_name: String, reuse: bool) -> Result<ExitCode> {
    let plan = scenario::plan_from_file(file, sets, Some(0))?;
    db::check_schema_name(&schema_name)?;
    let db = Database::open(Some(url), &[], schema_name, true, true).await?.reusing(reuse);
    let notify = plan.idle.wakeup == scenario::plan::Wakeup::Listen;
    let preload = match schema::install(&db, plan.preload, plan.max_attempts, &plan.table_settings, notify).await {
        Ok((_, preload)) => preload,
        Err(e) => {
            // Nothing half-built stays behind to block the retry.
            let _ = db.discard().await;
            return Err(e);
        }
    };
    println!(
        "{}: schema {} ready with {} jobs (preload {:.3} s)",
        db.target,
        db.schema,
        plan.preload,
        preload.as_secs_f64()
    );
    Ok(ExitCode::Passed)
}

async fn cluster(scenario_file: Option<&Path>, command: &[String]) -> Result<ExitCode> {
    let settings = match scenario_file {
        Some(f) => pipeline::ephemeral_settings(&scenario::plan_from_file(f, &[], Some(0))?)?,
        None => Vec::new(),
    };
    let db = Database::open(None, &settings, "public".into(), false, true).await?;
    let url = db.url_for_tools().expect("an ephemeral cluster has a socket");
    let status = tokio::process::Command::new(&command[0]).args(&command[1..]).env("DATABASE_URL", &url).status().await;
    db.teardown().await?;
    let status = status.map_err(|e| Error::usage(format!("cannot run `{}`: {e}", command[0])))?;
    std::process::exit(status.code().unwrap_or(1));
}
