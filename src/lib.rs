//! queuebench: drive simulated workers against a real PostgreSQL job table
//! and prove, with evidence, whether the queue is correct and how fast it is.
//!
//! Data flows one way:
//! scenario → plan → database → run → evidence → checks → summary → exit code.
//! `run_one` below is that list of stage calls.

pub mod cli;
pub mod collect;
pub mod db;
pub mod error;
pub mod gate;
pub mod report;
pub mod run;
pub mod scenario;
pub mod strategy;
pub mod verify;

use cli::{Cli, Command, RunArgs};
use db::{Database, Kind, schema};
use error::{Error, ExitCode, Result};
use report::build::{self, Context};
use report::summary::{DatabaseInfo, RunSummary};
use scenario::Plan;
use std::path::{Path, PathBuf};
use tokio_util::sync::CancellationToken;

/// Runs a parsed command line; never panics on bad input, returns the exit code.
pub async fn main_with(cli: Cli, interrupt: CancellationToken) -> ExitCode {
    let result = match cli.command {
        Command::Run(args) => run_files(&args, &interrupt).await,
        Command::Validate { files, overrides } => validate(&files, &overrides.set),
        Command::Sql { file, overrides, pgbench } => print_sql(&file, &overrides.set, pgbench),
        Command::Prepare { file, overrides, database_url, schema } => {
            prepare(&file, &overrides.set, &database_url, schema).await
        }
        Command::Cluster { scenario, command } => cluster(scenario.as_deref(), &command).await,
    };
    result.unwrap_or_else(|e| {
        eprintln!("error: {e}");
        e.exit_code()
    })
}

async fn run_files(args: &RunArgs, interrupt: &CancellationToken) -> Result<ExitCode> {
    // Validate every file before running any: a typo in the third file should not cost two runs.
    let plans = args
        .files
        .iter()
        .map(|f| scenario::plan_from_file(f, &args.overrides.set, args.seed))
        .collect::<Result<Vec<Plan>>>()?;
    let mut worst = ExitCode::Passed;
    for plan in &plans {
        if interrupt.is_cancelled() {
            break;
        }
        let out_dir = match (&args.out, plans.len()) {
            (Some(out), 1) => out.clone(),
            (Some(out), _) => out.join(&plan.name),
            (None, _) => PathBuf::from("results").join(&plan.name).join(run_id()),
        };
        let code = match run_one(plan, args, &out_dir, interrupt).await {
            Ok(summary) => {
                if args.quiet {
                    println!("{}: {}", plan.name, if summary.passed { "passed" } else { "FAILED" });
                } else {
                    print!("{}", report::terminal::render(&summary));
                    println!("  results        {}", out_dir.display());
                }
                gate::verdict(&summary)
            }
            Err(e) => {
                eprintln!("error: {}: {e}", plan.name);
                e.exit_code()
            }
        };
        worst = worst.worst(code);
    }
    Ok(worst)
}

fn run_id() -> String {
    format!("{}-{:04x}", chrono::Utc::now().format("%Y%m%dT%H%M%S"), rand::random::<u16>())
}

/// One scenario, start to finish. The database is torn down whatever happens.
pub async fn run_one(plan: &Plan, args: &RunArgs, out_dir: &Path, interrupt: &CancellationToken) -> Result<RunSummary> {
    std::fs::create_dir_all(out_dir)
        .map_err(|e| Error::usage(format!("cannot create the results folder {}: {e}", out_dir.display())))?;
    let run_id = run_id();
    let schema_name = format!("queuebench_{}", run_id.replace(['-', 'T'], "_").to_lowercase());
    let started_at = chrono::Utc::now().to_rfc3339();
    let db = Database::open(args.database_url.as_deref(), &plan.pg_settings, schema_name, args.keep).await?;
    let result = run_on(
        plan,
        &db,
        interrupt,
        Context { run_id, started_at, database: DatabaseInfo::default(), effects_rows: None },
    )
    .await;
    let teardown = db.teardown().await;
    let (summary, hist) = result?;
    teardown?;
    report::write_run_folder(out_dir, &summary, &hist, &resolved_text(plan))?;
    Ok(summary)
}

async fn run_on(
    plan: &Plan,
    db: &Database,
    interrupt: &CancellationToken,
    mut ctx: Context,
) -> Result<(RunSummary, hdrhistogram::Histogram<u64>)> {
    let setup = db.connect_admin().await?;
    let slots = schema::connection_slots(&setup).await?;
    if i64::from(plan.workers) + 2 > slots {
        return Err(Error::usage(format!(
            "{} workers need {} connections but {} has only {slots} free; lower workers.count{}",
            plan.workers,
            plan.workers + 2,
            db.target,
            if db.kind == Kind::Ephemeral {
                " or set [postgres.settings] max_connections"
            } else {
                " or raise max_connections"
            }
        )));
    }
    ctx.database = DatabaseInfo {
        kind: db.kind.name().into(),
        target: db.target.clone(),
        schema: db.schema.clone(),
        server_version: schema::server_version(&setup).await,
        settings_applied: match db.kind {
            Kind::Ephemeral => plan.pg_settings.iter().cloned().collect(),
            Kind::Url => Default::default(),
        },
        settings_reported: match db.kind {
            Kind::Url => schema::report_settings(&setup, &plan.pg_settings).await,
            Kind::Ephemeral => Default::default(),
        },
    };
    drop(setup);
    let client = schema::install(db, plan.preload, plan.max_attempts).await?;
    let output = run::run(plan, db, interrupt).await?;
    for f in &output.failures {
        eprintln!("warning: {f}");
    }
    let final_jobs = schema::final_state(&client).await?;
    ctx.effects_rows = if plan.effects_table { Some(schema::effects_rows(&client).await?) } else { None };
    let evidence = verify::Evidence {
        journal: &output.journal,
        final_jobs: &final_jobs,
        enqueued: plan.preload,
        effects_rows: ctx.effects_rows,
        faults: &output.faults,
        lease: plan.lease,
    };
    let verification = verify::verify(&evidence);
    let hist = output.stats.claim_latency.clone();
    Ok((build::build(plan, ctx, &output, verification), hist))
}

/// The scenario as run: the file's text plus the overrides and seed that applied.
fn resolved_text(plan: &Plan) -> String {
    let mut t = plan.source.text.clone();
    t.push_str(&format!("\n# queuebench: resolved seed = {}\n", plan.seed));
    for o in &plan.source.overrides {
        t.push_str(&format!("# queuebench: --set {o}\n"));
    }
    t
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

async fn prepare(file: &Path, sets: &[String], url: &str, schema_name: String) -> Result<ExitCode> {
    let plan = scenario::plan_from_file(file, sets, Some(0))?;
    let db = Database::open(Some(url), &[], schema_name, true).await?;
    schema::install(&db, plan.preload, plan.max_attempts).await?;
    println!("{}: schema {} ready with {} jobs", db.target, db.schema, plan.preload);
    Ok(ExitCode::Passed)
}

async fn cluster(scenario_file: Option<&Path>, command: &[String]) -> Result<ExitCode> {
    let settings = match scenario_file {
        Some(f) => scenario::plan_from_file(f, &[], Some(0))?.pg_settings,
        None => Vec::new(),
    };
    let db = Database::open(None, &settings, "public".into(), false).await?;
    let url = db.url_for_tools().expect("an ephemeral cluster has a socket");
    let status = tokio::process::Command::new(&command[0]).args(&command[1..]).env("DATABASE_URL", &url).status().await;
    db.teardown().await?;
    let status = status.map_err(|e| Error::usage(format!("cannot run `{}`: {e}", command[0])))?;
    std::process::exit(status.code().unwrap_or(1));
}
