//! `queuebench run`: scenario → plan → database → run → evidence → checks
//! → summary → exporters → exit code, one scenario after another.

use crate::cli::RunArgs;
use crate::collect::waits;
use crate::db::{Database, Kind, schema};
use crate::error::{Error, ExitCode, Result};
use crate::report::build::{self, Context};
use crate::report::summary::{DatabaseInfo, Environment, RunSummary, Timings};
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
    let settings = cluster_settings(plan);
    let db = Database::open(args.database_url.as_deref(), &settings, schema_name, args.keep, args.yes).await?;
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
        ("claim".to_string(), &s.claim_latency, s.claim_samples.as_slice()),
        ("claim-tx".into(), &s.claim_tx_latency, &s.tx_samples),
        ("work".into(), &s.work_latency, &s.work_samples),
        ("complete".into(), &s.complete_latency, &s.complete_samples),
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
            Kind::Ephemeral => " or set [postgres.settings] max_connections",
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
            Kind::Ephemeral => plan.pg_settings.iter().cloned().collect(),
            Kind::Url => Default::default(),
        },
        settings_reported: match db.kind {
            Kind::Url => schema::report_settings(&setup, &plan.pg_settings).await,
            Kind::Ephemeral => Default::default(),
        },
    };
    ctx.environment = schema::environment(&setup).await;
    drop(setup);
    let notify = plan.idle.wakeup == scenario::plan::Wakeup::Listen;
    let (client, preload_time) =
        schema::install(db, plan.preload, plan.max_attempts, &plan.table_settings, notify).await?;
    let output = run::run(plan, db, interrupt, progress).await?;
    for f in &output.failures {
        eprintln!("warning: {f}");
    }
    let final_jobs = schema::final_state(&client).await?;
    ctx.effects_rows = if plan.effects_table { Some(schema::effects_rows(&client).await?) } else { None };
    let classes: Vec<String> =
        std::iter::once(DEFAULT_CLASS.to_string()).chain(plan.load.classes.iter().map(|c| c.name.clone())).collect();
    let evidence = verify::Evidence {
        journal: &output.journal,
        final_jobs: &final_jobs,
        enqueued: plan.preload + output.arrivals.len() as u64,
        effects_rows: ctx.effects_rows,
        faults: &output.faults,
        lease: plan.lease,
        arrivals: &output.arrivals,
        classes: &classes,
        samples: &output.samples,
        blockers: &output.horizon.blockers,
        starvation: verify::starvation::Rule { threshold: plan.starvation_threshold, load_end: plan.load.duration() },
    };
    let verify_started = std::time::Instant::now();
    let verification = verify::verify(&evidence);
    let warmup_end = plan.load.warmup_end().as_micros() as u64;
    let waits = waits::measure(&output.journal, &output.arrivals, plan.load.classes.len(), warmup_end);
    let verify_time = verify_started.elapsed();
    let timeseries = timeseries::build(plan, &output.samples, &output.stats, &output.horizon.probes);
    let mut summary = build::build(plan, ctx, &output, verification, &waits);
    summary.timings = Timings {
        preload_s: preload_time.as_secs_f64(),
        verify_s: verify_time.as_secs_f64(),
        sampler_s: output.samples.iter().fold(0.0, |a, s| a + s.took_ms) / 1000.0,
        probe_s: output.horizon.probes.iter().fold(0.0, |a, p| a + p.took_ms) / 1000.0,
    };
    Ok(Finished { summary, output, waits, timeseries })
}

/// Connections a run holds at once: one per worker, one per producer class,
/// one per horizon blocker, and the sampler, reaper, injector and plan probe.
pub fn connections_needed(plan: &Plan) -> i64 {
    i64::from(plan.workers) + plan.load.classes.len() as i64 + plan.blockers.len() as i64 + 4
}

/// The settings an ephemeral cluster starts with: the scenario's, and, unless
/// it sets max_connections itself, enough for its workers (at least 200;
/// 256 workers get 286, 512 get 542). Ignored in URL mode, where the server's
/// own limit is checked before the run instead.
pub fn cluster_settings(plan: &Plan) -> Vec<(String, String)> {
    let mut settings = plan.pg_settings.clone();
    if !settings.iter().any(|(k, _)| k == "max_connections") {
        // The margin covers the setup and final-state connections and a reconnecting worker's new backend.
        let max = (connections_needed(plan) + 26).max(200);
        settings.push(("max_connections".into(), max.to_string()));
    }
    settings
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

    fn plan(workers: u32, settings: &str) -> Plan {
        let text = format!("name = \"x\"\n[jobs]\npreload = 1\n[workers]\ncount = {workers}\n{settings}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.toml");
        std::fs::write(&path, text).unwrap();
        scenario::plan_from_file(&path, &[], Some(1)).unwrap()
    }

    fn max_connections(plan: &Plan) -> i64 {
        let s = cluster_settings(plan);
        let v: Vec<&String> = s.iter().filter(|(k, _)| k == "max_connections").map(|(_, v)| v).collect();
        assert_eq!(v.len(), 1, "{s:?}");
        v[0].parse().unwrap()
    }

    #[test]
    fn an_ephemeral_cluster_has_room_for_every_worker() {
        assert_eq!(max_connections(&plan(8, "")), 200);
        for workers in [256, 512] {
            let p = plan(workers, "");
            assert!(max_connections(&p) >= connections_needed(&p) + 10, "{workers} workers");
        }
        // A scenario's own setting wins.
        assert_eq!(max_connections(&plan(512, "[postgres.settings]\nmax_connections = \"50\"\n")), 50);
    }
}
