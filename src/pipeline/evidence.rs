//! After the workers: the final table state, the evidence the checkers read, the checks
//! and measurements over it, and the summary. Nothing here touches the network but
//! `final_table`.

use super::database::ServerFacts;
use crate::collect::{phases, waits};
use crate::db::{Database, schema};
use crate::error::Result;
use crate::model::protocol::Mode;
use crate::model::records::JobRow;
use crate::model::summary::{Jobs, RunSummary, Timings};
use crate::report::build::{self, Context};
use crate::report::timeseries::{self, Timeseries};
use crate::report::{self, RunFiles};
use crate::run::RunOutput;
use crate::scenario::Plan;
use crate::verify::{self, Verification};
use std::time::{Duration, Instant};
use tokio_postgres::Client;

/// The table as the run left it. None when the database was lost (the report is partial).
pub struct FinalTable {
    pub jobs: Option<Vec<JobRow>>,
    pub effects_rows: Option<u64>,
}

/// Reads the final state, on the setup connection or (after a server restart closed it) a new one.
pub async fn final_table(plan: &Plan, db: &Database, setup: Client, output: &RunOutput) -> Result<FinalTable> {
    let client = match output.database_lost {
        Some(_) => return Ok(FinalTable { jobs: None, effects_rows: None }),
        None if setup.is_closed() => db.connect().await?,
        None => setup,
    };
    let jobs = schema::final_state(&client).await?;
    let effects_rows = if plan.run.effects_table { Some(schema::effects_rows(&client).await?) } else { None };
    Ok(FinalTable { jobs: Some(jobs), effects_rows })
}

/// The checkers' verdicts and the measurements over the journal.
pub struct Checked {
    pub verification: Verification,
    pub waits: waits::Waits,
    pub phases: Vec<phases::PhaseStats>,
    pub took: Duration,
}

/// Runs every checker over the evidence and measures waits and phases from the journal.
pub fn check(plan: &Plan, output: &RunOutput, table: &FinalTable) -> Checked {
    let started = Instant::now();
    let restarts: Vec<u64> = output.restarts.iter().map(|r| r.down_us).collect();
    let classes: Vec<String> = plan.load.class_names().map(String::from).collect();
    let evidence = verify::Evidence {
        journal: &output.journal,
        final_jobs: table.jobs.as_deref().unwrap_or_default(),
        enqueued: plan.jobs.preload + output.arrivals.len() as u64,
        effects_rows: table.effects_rows,
        faults: &output.faults,
        lease: plan.lease.duration,
        hold_transaction: plan.workers.mode == Mode::HoldTransaction,
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
    let mut verification = verify::verify(&evidence);
    if table.jobs.is_none() {
        verification.checks.retain(|c| !verify::NEEDS_FINAL_TABLE.contains(&c.name.as_str()));
        verification.jobs = Jobs { enqueued: evidence.enqueued, ..Default::default() };
    }
    let warmup_end = plan.load.warmup_end().as_micros() as u64;
    let windows: Vec<phases::Window> = plan
        .load
        .phases
        .iter()
        .map(|p| (p.start.as_micros() as u64, (p.start + p.duration).as_micros() as u64))
        .collect();
    let waits = waits::measure(&output.journal, &output.arrivals, plan.load.classes.len(), warmup_end, &windows);
    let phases = phases::measure(&windows, &output.latency, &output.journal);
    Checked { verification, waits, phases, took: started.elapsed() }
}

/// A run, summarised: what the exporters get.
pub struct Finished {
    pub summary: RunSummary,
    pub output: RunOutput,
    pub waits: waits::Waits,
    pub timeseries: Timeseries,
}

/// The summary (verdict included) from everything the stages produced.
pub fn summarize(
    plan: &Plan,
    run_id: String,
    started_at: String,
    facts: ServerFacts,
    output: RunOutput,
    table: FinalTable,
    checked: Checked,
) -> Finished {
    let timeseries =
        timeseries::build(plan, &output.samples, &output.stats, &output.latency.claim, &output.horizon.probes);
    let ctx = Context {
        run_id,
        started_at,
        database: facts.database,
        effects_rows: table.effects_rows,
        environment: facts.environment,
    };
    let mut summary = build::build(plan, ctx, &output, checked.verification, &checked.waits, &checked.phases);
    summary.timings = Timings {
        preload_s: facts.preload.as_secs_f64(),
        verify_s: checked.took.as_secs_f64(),
        sampler_s: output.samples.iter().fold(0.0, |a, s| a + s.took_ms) / 1000.0,
        probe_s: output.horizon.probes.iter().fold(0.0, |a, p| a + p.took_ms) / 1000.0,
    };
    Finished { summary, output, waits: checked.waits, timeseries }
}

impl Finished {
    /// What the run folder holds besides the summary: time series, latency histograms (with
    /// their samples for the interval logs), the scenario as run, the environment.
    pub fn files(&self, plan: &Plan) -> RunFiles<'_> {
        let (s, w) = (&self.output.stats, &self.waits);
        let l = &self.output.latency;
        let none: &[(u32, u32)] = &[];
        let mut histograms: Vec<report::Latency> = vec![
            ("claim".to_string(), &s.claim_latency, l.claim.as_slice()),
            ("claim-tx".into(), &s.claim_tx_latency, &l.tx),
            ("work".into(), &s.work_latency, &l.work),
            ("complete".into(), &s.complete_latency, &l.complete),
            ("end-to-end".into(), &w.end_to_end, &w.end_to_end_samples),
            ("producer-lag".into(), &w.producer_lag, none),
            ("enqueue".into(), &w.enqueue, none),
            ("pickup".into(), &w.pickup, none),
        ];
        let classes = self.summary.latency_ms.queue_wait.keys();
        for ((class, h), samples) in classes.zip(&w.queue_wait).zip(&w.queue_wait_samples) {
            histograms.push((format!("queue-wait-{class}"), h, samples));
        }
        RunFiles {
            timeseries: &self.timeseries,
            histograms,
            scenario_text: resolved_text(plan),
            environment_json: serde_json::to_string_pretty(&serde_json::json!({
                "environment": self.summary.environment,
                "database": self.summary.database,
                "queuebench_version": self.summary.queuebench_version,
            }))
            .expect("environment serialises"),
        }
    }
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
