//! `queuebench run`: scenario → plan → database → run → evidence → checks
//! → summary → exporters → exit code, one scenario after another.

use crate::cli::{PostgresMode, RunArgs};
use crate::collect::{phases, waits};
use crate::compare::{self, store};
use crate::db::{Database, Kind, schema};
use crate::error::{Error, ExitCode, Result};
use crate::model::expect;
use crate::model::summary::{DatabaseInfo, Environment, RunSummary, Timings};
use crate::report::build::{self, Context};
use crate::report::timeseries::{self, Timeseries};
use crate::run::RunOutput;
use crate::scenario::Plan;
use crate::{gate, report, run, scenario, verify};
use std::path::{Path, PathBuf};
use tokio_util::sync::CancellationToken;

pub async fn run_files(args: &RunArgs, interrupt: &CancellationToken) -> Result<ExitCode> {
    // Validate every file, --expect and --tolerance before running any: a typo should not cost a run.
    let mut plans = Vec::new();
    let sets = scenario::scale::with_flag(&args.overrides.set, args.time_scale).map_err(Error::usage)?;
    for f in &args.files {
        let mut plan = scenario::plan_from_file(f, &sets, args.seed)?;
        let names = metric_names(&plan);
        for text in &args.expect {
            plan.expectations.push(expect::parse_cli(text, &names).map_err(Error::usage)?);
        }
        for text in &args.baseline_args.tolerance {
            plan.tolerances.set_cli(text, &names).map_err(Error::usage)?;
        }
        plans.push(plan);
    }
    for name in args.save_baseline.iter().chain(&args.baseline) {
        store::check_name(name)?;
    }
    if let Some(name) = &args.baseline {
        for plan in &plans {
            store::load_named(&args.baseline_args.baseline_dir, name, &plan.name)?;
        }
    }
    if let Some(name) = &args.schema {
        crate::db::check_schema_name(name)?;
    }
    for plan in &plans {
        check_target(plan, args)?;
    }
    let batch_id = run_id();
    let batch_dir = match &args.out {
        Some(out) => out.clone(),
        None => PathBuf::from("results").join(format!("comparison-{batch_id}")),
    };
    let github = report::github::enabled(args.github);
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
        let (code, runs) = run_repeats(plan, args, &out_dir, interrupt).await;
        worst = worst.worst(code);
        if runs.is_empty() {
            continue;
        }
        let summaries: Vec<RunSummary> = runs.iter().map(|(s, _)| s.clone()).collect();
        let comparison = gate_against_baseline(plan, args, &summaries, &out_dir)?;
        if comparison.as_ref().is_some_and(|c| c.regressed) {
            worst = worst.worst(ExitCode::ExpectationFailed);
        }
        if comparison.is_some() || runs.len() > 1 {
            let labelled: Vec<(String, &RunSummary)> = summaries
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    (if runs.len() > 1 { format!("{} #{}", s.scenario, i + 1) } else { s.scenario.clone() }, s)
                })
                .collect();
            write_file(&out_dir.join("junit.xml"), &report::junit::junit(&labelled, comparison.as_ref()))?;
        }
        if github {
            let refs: Vec<&RunSummary> = summaries.iter().collect();
            report::github::append(&report::github::markdown(&refs, comparison.as_ref()))?;
            for line in report::github::annotations(&refs, comparison.as_ref()) {
                println!("{line}");
            }
        }
        finished.extend(runs);
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

/// The metric names a plan's expectations and tolerances may use.
fn metric_names(plan: &Plan) -> Vec<String> {
    let classes: Vec<&str> = plan.load.classes.iter().map(|c| c.name.as_str()).collect();
    let vacuum: Vec<&str> = plan.vacuum.iter().map(|v| v.name.as_str()).collect();
    let phases: Vec<&str> = plan.load.phases.iter().map(|p| p.name.as_str()).collect();
    RunSummary::metric_names(&classes, &vacuum, &phases)
}

/// Runs one plan `--repeat` times (each repeat in `repeat-K/` when more than one) and prints each.
async fn run_repeats(
    plan: &Plan,
    args: &RunArgs,
    out_dir: &Path,
    interrupt: &CancellationToken,
) -> (ExitCode, Vec<(RunSummary, PathBuf)>) {
    let mut worst = ExitCode::Passed;
    let mut runs = Vec::new();
    for k in 1..=args.repeat {
        if interrupt.is_cancelled() {
            break;
        }
        let dir = if args.repeat > 1 { out_dir.join(format!("repeat-{k}")) } else { out_dir.to_path_buf() };
        let code = match run_one(plan, args, &dir, interrupt).await {
            Ok(summary) => {
                let name = if args.repeat > 1 { format!("{} #{k}", plan.name) } else { plan.name.clone() };
                if args.quiet {
                    println!("{name}: {}", if summary.passed { "passed" } else { "FAILED" });
                    for line in report::terminal::failures(&summary) {
                        println!("  {line}");
                    }
                } else {
                    print!("{}", report::terminal::render(&summary));
                    println!("  results        {}", dir.join("report.html").display());
                }
                let code = gate::verdict(&summary);
                runs.push((summary, dir));
                code
            }
            Err(e) => {
                eprintln!("error: {}: {e}", plan.name);
                e.exit_code()
            }
        };
        worst = worst.worst(code);
    }
    (worst, runs)
}

/// `--save-baseline` and `--baseline`: stores the runs, compares them, writes compare.md/json.
fn gate_against_baseline(
    plan: &Plan,
    args: &RunArgs,
    runs: &[RunSummary],
    out_dir: &Path,
) -> Result<Option<compare::Comparison>> {
    let dir = &args.baseline_args.baseline_dir;
    let comparison = match &args.baseline {
        Some(name) => {
            let (label, old) = store::load_named(dir, name, &plan.name)?;
            let c = compare::compare(&old, runs, &plan.tolerances, (&label, "this run"));
            write_comparison_files(out_dir, &c)?;
            if args.quiet {
                for r in c.regressions() {
                    println!(
                        "  baseline {}: {} → {} {}",
                        r.metric,
                        r.old.show(),
                        r.new.map_or("–".into(), |n| n.show()),
                        r.verdict.word()
                    );
                }
            } else {
                print!("{}", compare::table(&c));
            }
            Some(c)
        }
        None => None,
    };
    if let Some(name) = &args.save_baseline {
        if runs.len() < args.repeat as usize {
            eprintln!("warning: baseline `{name}` not saved: only {} of {} repeats finished", runs.len(), args.repeat);
        } else if runs.iter().any(|r| r.interrupted || r.timed_out || r.aborted_by.is_some()) {
            eprintln!("warning: baseline `{name}` not saved: a run was interrupted, timed out or aborted");
        } else {
            let file = store::save(dir, name, runs)?;
            println!(
                "  baseline       {} ({} run{})",
                file.display(),
                runs.len(),
                if runs.len() == 1 { "" } else { "s" }
            );
        }
    }
    Ok(comparison)
}

pub fn write_comparison_files(dir: &Path, c: &compare::Comparison) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::usage(format!("cannot create {}: {e}", dir.display())))?;
    write_file(&dir.join("compare.md"), &compare::markdown(c))?;
    write_file(&dir.join("compare.json"), &serde_json::to_string_pretty(c).expect("comparison serialises"))
}

fn write_file(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|e| Error::infra(format!("cannot write {}: {e}", path.display())))
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
pub(crate) fn check_target(plan: &Plan, args: &RunArgs) -> Result<()> {
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
    let settings = &plan.postgres.settings;
    match postgres_mode(args)? {
        PostgresMode::Url => Database::open(args.database_url.as_deref(), settings, schema, args.keep, args.yes).await,
        PostgresMode::Ephemeral => Database::open(None, &ephemeral_settings(plan)?, schema, args.keep, args.yes).await,
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
    let fresh = !out_dir.exists();
    std::fs::create_dir_all(out_dir).map_err(|e| {
        Error::usage(format!(
            "cannot create the results folder {}: {e}; pick a writable place with --out DIR",
            out_dir.display()
        ))
    })?;
    let probe = out_dir.join(".queuebench-write-test");
    if let Err(e) = std::fs::write(&probe, b"") {
        if fresh {
            let _ = std::fs::remove_dir(out_dir);
        }
        return Err(Error::usage(format!(
            "cannot write in the results folder {}: {e}; pick a writable place with --out DIR",
            out_dir.display()
        )));
    }
    let _ = std::fs::remove_file(&probe);
    let result = run_in(plan, args, out_dir, interrupt).await;
    if result.is_err() && fresh {
        // Nothing was written: leave no empty folder behind (remove_dir only removes an empty one).
        let _ = std::fs::remove_dir(out_dir);
    }
    result
}

async fn run_in(plan: &Plan, args: &RunArgs, out_dir: &Path, interrupt: &CancellationToken) -> Result<RunSummary> {
    let run_id = run_id();
    let schema_name = match &args.schema {
        Some(name) => name.clone(),
        None => format!("queuebench_{}", run_id.replace(['-', 'T'], "_").to_lowercase()),
    };
    let started_at = chrono::Utc::now().to_rfc3339();
    let db = open_database(plan, args, schema_name).await?.reusing(args.reuse);
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
    let need = connections_needed(plan);
    let slots = schema::connection_slots(&setup).await?;
    if need > slots {
        let fix = match db.kind {
            Kind::Ephemeral | Kind::Docker => "or raise [postgres.settings] max_connections",
            Kind::Url => "or raise the server's max_connections (or wait for its other clients to finish)",
        };
        return Err(Error::usage(format!(
            "{} workers need {need} connections (with the side connections: producers, sampler, reaper, faults, \
             blockers, vacuum steps, probe, setup) but {} has only {slots} free (max_connections minus \
             superuser_reserved_connections minus other clients' connections); lower workers.count {fix}. Nothing was \
             created",
            plan.workers.count,
            db.shown()
        )));
    }
    ctx.database = DatabaseInfo {
        kind: db.kind.name().into(),
        target: db.target.clone(),
        url: db.url.clone(),
        schema: db.schema.clone(),
        server_version: schema::server_version(&setup).await,
        settings_applied: match db.kind {
            Kind::Ephemeral | Kind::Docker => plan.postgres.settings.iter().cloned().collect(),
            Kind::Url => Default::default(),
        },
        settings_reported: match db.kind {
            Kind::Url => schema::report_settings(&setup, &plan.postgres.settings).await,
            Kind::Ephemeral | Kind::Docker => Default::default(),
        },
    };
    ctx.environment = schema::environment(&setup).await;
    drop(setup);
    let notify = plan.workers.idle.wakeup == scenario::plan::Wakeup::Listen;
    let (client, preload_time) =
        schema::install(db, plan.jobs.preload, plan.jobs.max_attempts, &plan.postgres.table_settings, notify).await?;
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
        Some(c) if plan.run.effects_table => Some(schema::effects_rows(c).await?),
        _ => None,
    };
    let restarts: Vec<u64> = output.restarts.iter().map(|r| r.down_us).collect();
    let classes: Vec<String> = plan.load.class_names().map(String::from).collect();
    let evidence = verify::Evidence {
        journal: &output.journal,
        final_jobs: &final_jobs,
        enqueued: plan.jobs.preload + output.arrivals.len() as u64,
        effects_rows: ctx.effects_rows,
        faults: &output.faults,
        lease: plan.lease.duration,
        hold_transaction: plan.workers.mode == crate::model::protocol::Mode::HoldTransaction,
        arrivals: &output.arrivals,
        classes: &classes,
        samples: &output.samples,
        blockers: &output.horizon.blockers,
        starvation: verify::starvation::Rule {
            threshold: plan.run.starvation_threshold,
            load_end: plan.load.duration(),
        },
        restarts: &restarts,
        durability_untestable: plan.durability_untestable(),
    };
    let verify_started = std::time::Instant::now();
    let mut verification = verify::verify(&evidence);
    if client.is_none() {
        verification.checks.retain(|c| !verify::NEEDS_FINAL_TABLE.contains(&c.name.as_str()));
        verification.jobs = crate::model::summary::Jobs { enqueued: evidence.enqueued, ..Default::default() };
    }
    let warmup_end = plan.load.warmup_end().as_micros() as u64;
    let windows: Vec<phases::Window> = plan
        .load
        .phases
        .iter()
        .map(|p| (p.start.as_micros() as u64, (p.start + p.duration).as_micros() as u64))
        .collect();
    let waits = waits::measure(&output.journal, &output.arrivals, plan.load.classes.len(), warmup_end, &windows);
    let phase_stats = phases::measure(&windows, &output.latency, &output.journal);
    let verify_time = verify_started.elapsed();
    let timeseries =
        timeseries::build(plan, &output.samples, &output.stats, &output.latency.claim, &output.horizon.probes);
    let mut summary = build::build(plan, ctx, &output, verification, &waits, &phase_stats);
    summary.timings = Timings {
        preload_s: preload_time.as_secs_f64(),
        verify_s: verify_time.as_secs_f64(),
        sampler_s: output.samples.iter().fold(0.0, |a, s| a + s.took_ms) / 1000.0,
        probe_s: output.horizon.probes.iter().fold(0.0, |a, p| a + p.took_ms) / 1000.0,
    };
    Ok(Finished { summary, output, waits, timeseries })
}

/// Connections a run opens at once: one per worker, plus the setup connection held through
/// the run, the sampler, one per producer class, fault injector, blocker session and vacuum
/// step, the reaper and the claim-plan probe, and two for reconnects and the LISTEN probe.
pub fn connections_needed(plan: &Plan) -> i64 {
    let faults = plan.faults.iter().filter(|f| !f.per_job()).count();
    let blockers: u32 = plan.blockers.iter().map(|b| b.sessions).sum();
    let reaper = usize::from(plan.lease.reclaim == crate::model::protocol::Reclaim::Reaper);
    let probe = usize::from(plan.run.plan_probe.is_some());
    let side = 2 + plan.load.classes.len() + faults + plan.vacuum.len() + reaper + probe + 2;
    i64::from(plan.workers.count) + i64::from(blockers) + side as i64
}

/// The ephemeral cluster's settings: the scenario's, with max_connections raised to what the
/// run needs when the scenario leaves it out (refused before starting when it sets too few).
pub fn ephemeral_settings(plan: &Plan) -> Result<Vec<(String, String)>> {
    let mut settings = plan.postgres.settings.clone();
    // Slots a superuser may use, plus the 3 superuser_reserved_connections (the cluster's default).
    let need = connections_needed(plan) + 3;
    match settings.iter().find(|(k, _)| k == "max_connections") {
        Some((_, v)) => match v.parse::<i64>() {
            Ok(n) if n < need => {
                return Err(Error::usage(format!(
                    "{}: [postgres.settings] max_connections = {n} but {} workers need {need} connections with the \
                     side connections and reserved slots; raise it to at least {need}, leave it out (queuebench \
                     sizes it), or lower workers.count. Nothing was started",
                    plan.source.path.display(),
                    plan.workers.count
                )));
            }
            _ => {}
        },
        None => settings.push(("max_connections".into(), need.max(200).to_string())),
    }
    Ok(settings)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(text: &str) -> Plan {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.toml");
        std::fs::write(&path, text).unwrap();
        scenario::plan_from_file(&path, &[], Some(1)).unwrap()
    }

    fn max_connections(settings: &[(String, String)]) -> i64 {
        settings.iter().find(|(k, _)| k == "max_connections").unwrap().1.parse().unwrap()
    }

    #[test]
    fn the_ephemeral_cluster_gets_the_connections_the_run_needs() {
        let small = plan("name = \"x\"\n[jobs]\npreload = 5\n[workers]\ncount = 8\n");
        assert_eq!(max_connections(&ephemeral_settings(&small).unwrap()), 200, "at least the old default");
        let big = plan("name = \"x\"\n[jobs]\npreload = 5\n[workers]\ncount = 400\n");
        let need = connections_needed(&big);
        assert!(need > 400);
        assert_eq!(max_connections(&ephemeral_settings(&big).unwrap()), need + 3, "plus the reserved slots");
        let set = plan(
            "name = \"x\"\n[jobs]\npreload = 5\n[workers]\ncount = 400\n[postgres.settings]\nmax_connections = 1000\n",
        );
        assert_eq!(max_connections(&ephemeral_settings(&set).unwrap()), 1000, "the scenario's own value stays");
        let low = plan(
            "name = \"x\"\n[jobs]\npreload = 5\n[workers]\ncount = 400\n[postgres.settings]\nmax_connections = 100\n",
        );
        let e = ephemeral_settings(&low).unwrap_err();
        assert_eq!(e.exit_code(), ExitCode::Usage);
        assert!(e.to_string().contains(&format!("raise it to at least {}", need + 3)), "{e}");
    }

    #[test]
    fn side_connections_are_counted() {
        let base = connections_needed(&plan("name = \"x\"\n[jobs]\npreload = 5\n[workers]\ncount = 4\n"));
        let blockers = plan(
            "name = \"x\"\n[jobs]\npreload = 5\n[workers]\ncount = 4\n\
             [[blockers]]\nkind = \"idle_in_transaction\"\nat = \"1s\"\nduration = \"1s\"\nsessions = 3\n",
        );
        assert_eq!(connections_needed(&blockers), base + 3);
    }
}
