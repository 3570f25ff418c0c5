//! `queuebench run`: scenario → plan → database → run → evidence → checks
//! → summary → exporters → exit code, one scenario after another.

use crate::cli::{PostgresMode, RunArgs};
use crate::collect::waits;
use crate::db::{Database, Kind, schema};
use crate::error::{Error, ExitCode, Result};
use crate::report::build::{self, Context};
use crate::report::summary::{DatabaseInfo, Environment, RunSummary};
use crate::report::timeseries::{self, Timeseries};
use crate::run::RunOutput;
use crate::scenario::Plan;
use crate::scenario::load_model::DEFAULT_CLASS;
use crate::{gate, report, run, scenario, verify};
use std::path::{Path, PathBuf};
use tokio_util::sync::CancellationToken;

pub async fn run_files(args: &RunArgs, interrupt: &CancellationToken) -> Result<ExitCode> {
    // Validate every file before running any: a typo in the third file should not cost two runs.
    let plans = args
        .files
        .iter()
        .map(|f| scenario::plan_from_file(f, &args.overrides.set, args.seed))
        .collect::<Result<Vec<Plan>>>()?;
    for plan in &plans {
        check_target(plan, args)?;
    }
    let batch_id = run_id();
    let batch_dir = match &args.out {
        Some(out) => out.clone(),
        None => PathBuf::from("results").join(format!("comparison-{batch_id}")),
    };
    let mut worst = ExitCode::Passed;
    let mut finished = Vec::new();
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
                    for line in report::terminal::failures(&summary) {
                        println!("  {line}");
                    }
                } else {
                    print!("{}", report::terminal::render(&summary));
                    println!("  results        {}", out_dir.join("report.html").display());
                }
                let code = gate::verdict(&summary);
                finished.push((summary, out_dir));
                code
            }
            Err(e) => {
                eprintln!("error: {}: {e}", plan.name);
                e.exit_code()
            }
        };
        worst = worst.worst(code);
    }
    if finished.len() > 1 {
        let runs: Vec<(RunSummary, String)> =
            finished.into_iter().map(|(s, dir)| (s, relative(&batch_dir, &dir.join("report.html")))).collect();
        report::write_comparison(&batch_dir, &runs)?;
        if !args.quiet {
            println!("\ncomparison of {} runs: {}", runs.len(), batch_dir.join("comparison.html").display());
        }
    }
    Ok(worst)
}

/// Where PostgreSQL comes from: `--postgres`, else url when a URL is given, else ephemeral.
fn postgres_mode(args: &RunArgs) -> Result<PostgresMode> {
    match (args.postgres, &args.database_url) {
        (Some(PostgresMode::Url), None) => {
            Err(Error::usage("--postgres url needs --database-url URL (or DATABASE_URL)".to_string()))
        }
        (Some(mode), _) => Ok(mode),
        (None, Some(_)) => Ok(PostgresMode::Url),
        (None, None) => Ok(PostgresMode::Ephemeral),
    }
}

/// Faults the chosen database cannot take: a `postgres_restart` stops and starts the server,
/// which queuebench does only to its own ephemeral cluster.
fn check_target(plan: &Plan, args: &RunArgs) -> Result<()> {
    let mode = postgres_mode(args)?;
    if plan.restarts_server() && mode != PostgresMode::Ephemeral {
        let given = match mode {
            PostgresMode::Docker => "--postgres docker",
            _ => "--database-url (or DATABASE_URL)",
        };
        return Err(Error::usage(format!(
            "{}: [[faults]] kind = \"postgres_restart\" stops and starts the server, which queuebench does only to \
             its own ephemeral cluster, never to a server given by {given}. Run it with --postgres ephemeral \
             (the default without --database-url), or remove the fault",
            plan.source.path.display()
        )));
    }
    Ok(())
}

async fn open_database(plan: &Plan, args: &RunArgs, schema: String) -> Result<Database> {
    let settings = &plan.pg_settings;
    match postgres_mode(args)? {
        PostgresMode::Url => Database::open(args.database_url.as_deref(), settings, schema, args.keep, args.yes).await,
        PostgresMode::Ephemeral => Database::open(None, settings, schema, args.keep, args.yes).await,
        PostgresMode::Docker => Database::open_docker(&args.postgres_image, settings, schema, args.keep).await,
    }
}

/// `to` relative to `from` when it lies below it, else as given.
fn relative(from: &Path, to: &Path) -> String {
    to.strip_prefix(from).unwrap_or(to).display().to_string()
}

pub fn run_id() -> String {
    format!("{}-{:04x}", chrono::Utc::now().format("%Y%m%dT%H%M%S"), rand::random::<u16>())
}

/// One scenario, start to finish. The database is torn down whatever happens.
pub async fn run_one(plan: &Plan, args: &RunArgs, out_dir: &Path, interrupt: &CancellationToken) -> Result<RunSummary> {
    std::fs::create_dir_all(out_dir)
        .map_err(|e| Error::usage(format!("cannot create the results folder {}: {e}", out_dir.display())))?;
    let run_id = run_id();
    let schema_name = format!("queuebench_{}", run_id.replace(['-', 'T'], "_").to_lowercase());
    let started_at = chrono::Utc::now().to_rfc3339();
    let db = open_database(plan, args, schema_name).await?;
    let ctx = Context {
        run_id,
        started_at,
        database: DatabaseInfo::default(),
        effects_rows: None,
        environment: Environment::default(),
    };
    let result = run_on(plan, &db, interrupt, ctx, !args.quiet).await;
    let teardown = db.teardown().await;
    let done = result?;
    teardown?;
    let s = &done.output.stats;
    let (w, none): (&waits::Waits, &[(u32, u32)]) = (&done.waits, &[]);
    let mut histograms = vec![
        ("claim".to_string(), &s.claim_latency, done.output.latency.claim.as_slice()),
        ("claim-tx".into(), &s.claim_tx_latency, &done.output.latency.tx),
        ("work".into(), &s.work_latency, &done.output.latency.work),
        ("complete".into(), &s.complete_latency, &done.output.latency.complete),
        ("end-to-end".into(), &w.end_to_end, &w.end_to_end_samples),
        ("producer-lag".into(), &w.producer_lag, none),
        ("enqueue".into(), &w.enqueue, none),
        ("pickup".into(), &w.pickup, none),
    ];
    for ((class, h), samples) in done.summary.latency_ms.queue_wait.keys().zip(&w.queue_wait).zip(&w.queue_wait_samples)
    {
        histograms.push((format!("queue-wait-{class}"), h, samples));
    }
    let files = report::RunFiles {
        timeseries: &done.timeseries,
        histograms,
        scenario_text: &resolved_text(plan),
        environment_json: serde_json::to_string_pretty(&serde_json::json!({
            "environment": done.summary.environment,
            "database": done.summary.database,
            "queuebench_version": done.summary.queuebench_version,
        }))
        .expect("environment serialises"),
    };
    report::write_run_folder(out_dir, &done.summary, &files)?;
    Ok(done.summary)
}

struct Finished {
    summary: RunSummary,
    output: RunOutput,
    waits: waits::Waits,
    timeseries: Timeseries,
}

async fn run_on(
    plan: &Plan,
    db: &Database,
    interrupt: &CancellationToken,
    mut ctx: Context,
    progress: bool,
) -> Result<Finished> {
    let setup = db.connect_admin().await?;
    let need = i64::from(plan.workers) + plan.load.classes.len() as i64 + 4;
    let slots = schema::connection_slots(&setup).await?;
    if need > slots {
        let fix = match db.kind {
            Kind::Ephemeral | Kind::Docker => " or set [postgres.settings] max_connections",
            Kind::Url => " or raise max_connections",
        };
        return Err(Error::usage(format!(
            "{} workers (plus producers, sampler, reaper and injector) need {need} connections but {} has only {slots} free; lower workers.count{fix}",
            plan.workers, db.target
        )));
    }
    ctx.database = DatabaseInfo {
        kind: db.kind.name().into(),
        target: db.target.clone(),
        schema: db.schema.clone(),
        server_version: schema::server_version(&setup).await,
        settings_applied: match db.kind {
            Kind::Ephemeral | Kind::Docker => plan.pg_settings.iter().cloned().collect(),
            Kind::Url => Default::default(),
        },
        settings_reported: match db.kind {
            Kind::Url => schema::report_settings(&setup, &plan.pg_settings).await,
            Kind::Ephemeral | Kind::Docker => Default::default(),
        },
    };
    ctx.environment = schema::environment(&setup).await;
    drop(setup);
    let notify = plan.idle.wakeup == scenario::plan::Wakeup::Listen;
    let client = schema::install(db, plan.preload, plan.max_attempts, &plan.table_settings, notify).await?;
    let output = run::run(plan, db, interrupt, progress).await?;
    for f in &output.failures {
        eprintln!("warning: {f}");
    }
    // After a server restart the setup connection is gone: read the final state on a new one.
    // If the database was lost, there is no final state: the report is partial.
    let client = match output.database_lost {
        Some(_) => None,
        None if client.is_closed() => Some(db.connect().await?),
        None => Some(client),
    };
    let final_jobs = match &client {
        Some(c) => schema::final_state(c).await?,
        None => Vec::new(),
    };
    ctx.effects_rows = match &client {
        Some(c) if plan.effects_table => Some(schema::effects_rows(c).await?),
        _ => None,
    };
    let restarts: Vec<u64> = output.restarts.iter().map(|r| r.down_us).collect();
    let classes: Vec<String> =
        std::iter::once(DEFAULT_CLASS.to_string()).chain(plan.load.classes.iter().map(|c| c.name.clone())).collect();
    let evidence = verify::Evidence {
        journal: &output.journal,
        final_jobs: &final_jobs,
        enqueued: plan.preload + output.arrivals.len() as u64,
        effects_rows: ctx.effects_rows,
        faults: &output.faults,
        lease: plan.lease,
        hold_transaction: plan.mode == crate::scenario::raw::Mode::HoldTransaction,
        arrivals: &output.arrivals,
        classes: &classes,
        samples: &output.samples,
        blockers: &output.horizon.blockers,
        starvation: verify::starvation::Rule { threshold: plan.starvation_threshold, load_end: plan.load.duration() },
        restarts: &restarts,
        durability_untestable: plan.durability_untestable(),
    };
    let mut verification = verify::verify(&evidence);
    if client.is_none() {
        verification.checks.retain(|c| !verify::NEEDS_FINAL_TABLE.contains(&c.name.as_str()));
        verification.jobs = report::summary::Jobs { enqueued: evidence.enqueued, ..Default::default() };
    }
    let warmup_end = plan.load.warmup_end().as_micros() as u64;
    let waits = waits::measure(&output.journal, &output.arrivals, plan.load.classes.len(), warmup_end);
    let timeseries =
        timeseries::build(plan, &output.samples, &output.stats, &output.latency.claim, &output.horizon.probes);
    let summary = build::build(plan, ctx, &output, verification, &waits);
    Ok(Finished { summary, output, waits, timeseries })
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
