//! After the workers: the final table state, the evidence the checkers read, the checks
//! and measurements over it, and the summary. Nothing here touches the network but
//! `final_table`.

use super::database::ServerFacts;
use crate::adapter::keys::Key;
use crate::collect::{history, phases, waits};
use crate::db::{Database, schema};
use crate::error::Result;
use crate::model::errors::{ErrorCount, Statement};
use crate::model::evidence::{EVIDENCE_VERSION, Exclusion, SavedEvidence, Unique};
use crate::model::protocol::Mode;
use crate::model::records::JobRow;
use crate::model::summary::{RunSummary, Timings};
use crate::report::build::{self, Context};
use crate::report::timeseries::{self, Timeseries};
use crate::report::{self, RunFiles, swimlane};
use crate::run::RunOutput;
use crate::run::observe;
use crate::scenario::Plan;
use crate::verify::{self, Verification};
use std::time::{Duration, Instant};
use tokio_postgres::Client;

/// The table as the run left it. None when the database was lost (the report is partial).
pub(super) struct FinalTable {
    pub jobs: Option<Vec<JobRow>>,
    pub effects_rows: Option<u64>,
}

/// Reads the final state, on the setup connection or (after a server restart closed it) a new one.
pub(super) async fn final_table(plan: &Plan, db: &Database, setup: Client, output: &RunOutput) -> Result<FinalTable> {
    let own = plan.adapter.own_table();
    let client = match output.database_lost {
        Some(_) => return Ok(FinalTable { jobs: None, effects_rows: None }),
        None if setup.is_closed() => db.connect().await?,
        None => setup,
    };
    let jobs = observe::final_state(&client, plan, &output.ids).await?;
    let effects_rows = if plan.run.effects_table { Some(schema::effects_rows(&client, own).await?) } else { None };
    Ok(FinalTable { jobs: Some(jobs), effects_rows })
}

/// The checkers' verdicts and the measurements over the journal.
pub(super) struct Checked {
    pub verification: Verification,
    pub waits: waits::Waits,
    pub phases: Vec<phases::PhaseStats>,
    pub took: Duration,
}

/// What the checkers read besides the history, as saved with the run (`evidence.json`).
/// `server`: the settings the server reported (its own fsync and synchronous_commit).
pub(super) fn saved_evidence(
    plan: &Plan,
    output: &RunOutput,
    table: &FinalTable,
    server: &std::collections::BTreeMap<String, String>,
) -> SavedEvidence {
    SavedEvidence {
        schema_version: EVIDENCE_VERSION,
        enqueued: plan.jobs.preload + output.arrivals.len() as u64,
        effects_rows: table.effects_rows,
        effects_unwritten: output.effects_unwritten,
        lease_us: plan.lease.duration.as_micros() as u64,
        hold_transaction: plan.workers.mode == Mode::HoldTransaction,
        classes: plan.load.class_names().map(String::from).collect(),
        samples: output.samples.clone(),
        blockers: output.horizon.blockers.clone(),
        restarts: output.restarts.iter().map(|r| r.down_us).collect(),
        restarts_up: output.restarts.iter().map(|r| r.up_us.unwrap_or(u64::MAX)).collect(),
        failovers: output.failovers.clone(),
        durability_untestable: plan.durability_untestable_on(server),
        starvation_threshold_us: plan.run.starvation_threshold.as_micros() as u64,
        load_end_us: plan.load.duration().as_micros() as u64,
        partial: table.jobs.is_none(),
        time_scale: plan.time_scale,
        clock_bound_us: clock_bound(&output.agents),
        stopped_us: output.stopped_us,
        duration_us: output.duration.as_micros() as u64,
        reaper_unjournaled: output.reaper.unjournaled,
        session_lease: plan.adapter.drive.lease == crate::adapter::drive::LeaseKind::Session,
        time_resolution_us: plan.adapter.drive.time_resolution.as_micros() as u64,
        successors: output.ids.successors(),
        network: output.network.clone(),
        errors: error_counts(&output.stats),
        expected_errors: plan.adapter.drive.expected_errors.iter().chain(&plan.run.expected_errors).cloned().collect(),
        exclusion: plan.adapter.columns.exclusion_key.as_ref().map(|_| {
            let mut keys = output.stats.exclusion_keys.clone();
            keys.sort_unstable();
            keys.dedup_by_key(|(job, _)| *job);
            Exclusion { limit: plan.adapter.drive.exclusion_limit.max(1), keys }
        }),
        unique: plan.adapter.columns.unique_key.as_ref().map(|_| {
            let rule = plan.adapter.drive.unique;
            let mut keys = output.unique_keys.clone();
            keys.sort_unstable();
            keys.dedup_by_key(|(job, _)| *job);
            Unique {
                keys,
                deduplicated: output.deduplicated,
                done: rule.done,
                dead: rule.dead,
                cancelled: rule.cancelled,
                period_us: rule.period.map(|p| p.as_micros() as u64),
            }
        }),
    }
}

/// The workers' `errors_at` tally as the evidence keeps it.
fn error_counts(stats: &crate::collect::WorkerStats) -> Vec<ErrorCount> {
    stats
        .errors_at
        .iter()
        .filter_map(|(key, &count)| {
            let (at, code) = key.split_once(':')?;
            let first = stats.first_errors.get(key).cloned().unwrap_or_default();
            Some(ErrorCount { statement: Statement::parse(at)?, code: code.to_string(), count, first })
        })
        .collect()
}

/// The largest clock error bound among the agents (at the start or the end), µs.
fn clock_bound(agents: &[crate::model::summary::AgentFigures]) -> u64 {
    agents.iter().map(|a| a.clock_bound_us.max(a.clock_bound_end_us.unwrap_or(0))).max().unwrap_or(0)
}

/// Runs every checker over the evidence and measures waits and phases from the journal.
pub(super) fn check(plan: &Plan, output: &RunOutput, table: &FinalTable, saved: &SavedEvidence) -> Checked {
    let started = Instant::now();
    let events = verify::Events {
        journal: &output.journal,
        faults: &output.faults,
        arrivals: &output.arrivals,
        reaps: &output.reaper.journal,
    };
    let evidence = verify::Evidence::new(saved, events, table.jobs.as_deref().unwrap_or_default());
    let verification = verify::verify_all(&evidence, saved.partial);
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
pub(super) struct Finished {
    pub summary: RunSummary,
    pub output: RunOutput,
    pub waits: waits::Waits,
    /// The harness's series (`timeseries.csv`) and the sampler's (`samples.csv`).
    pub timeseries: Timeseries,
    pub samples: Timeseries,
    /// The evidence the checkers read, kept in the run folder for `queuebench check`.
    pub saved: SavedEvidence,
    pub final_jobs: Vec<JobRow>,
    /// `history.csv.gz` and `final_state.csv.gz`, encoded (None: not kept, or no final table).
    pub history: Option<Vec<u8>>,
    pub final_state: Option<Vec<u8>>,
}

/// The summary (verdict included) from everything the stages produced.
/// Everything the run and the checkers produced, for the summary.
pub(super) struct Produced {
    pub output: RunOutput,
    pub table: FinalTable,
    pub checked: Checked,
    pub saved: SavedEvidence,
}

pub(super) fn summarize(plan: &Plan, run_id: String, started_at: String, facts: ServerFacts, p: Produced) -> Finished {
    let Produced { output, table, checked, saved } = p;
    let timeseries = timeseries::harness(plan, &output.stats, &output.latency.claim, output.duration);
    let samples = timeseries::database(plan, &output.samples, &output.horizon.probes);
    let ctx = Context {
        run_id,
        started_at,
        database: facts.database,
        effects_rows: table.effects_rows,
        environment: facts.environment,
        settings: facts.settings,
    };
    let mut summary = build::build(plan, ctx, &output, checked.verification, &checked.waits, &checked.phases);
    summary.timings = Timings {
        preload_s: facts.preload.as_secs_f64(),
        verify_s: checked.took.as_secs_f64(),
        sampler_s: output.samples.iter().fold(0.0, |a, s| a + s.took_ms) / 1000.0,
        probe_s: output.horizon.probes.iter().fold(0.0, |a, p| a + p.took_ms) / 1000.0,
        history_s: 0.0,
        merge_s: output.merge_s,
        merge_peak_rss_mib: output.merge_peak_rss_mib,
    };
    summary.agents = output.agents.clone();
    let final_jobs = table.jobs.unwrap_or_default();
    let started = Instant::now();
    let (history, final_state) = encode_history(plan, &output, &saved, &final_jobs);
    summary.timings.history_s = started.elapsed().as_secs_f64();
    Finished { summary, output, waits: checked.waits, timeseries, samples, saved, final_jobs, history, final_state }
}

/// The history and the final table as their files (docs/history.md), unless `run.history = false`.
fn encode_history(
    plan: &Plan,
    o: &RunOutput,
    saved: &SavedEvidence,
    final_jobs: &[JobRow],
) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
    if !plan.run.history {
        return (None, None);
    }
    let rows =
        history::Rows { journal: &o.journal, arrivals: &o.arrivals, faults: &o.faults, reaps: &o.reaper.journal };
    let history = history::write(rows, &saved.classes);
    let key = |id: i64| match o.ids.key(id) {
        Key::Int(i) if i == id => None,
        k => Some(k.show()),
    };
    let final_state = (!saved.partial).then(|| history::write_final_state(final_jobs, key));
    (Some(history), final_state)
}

impl Finished {
    /// What the run folder holds besides the summary: time series, latency histograms (with
    /// their samples for the interval logs), the scenario as run, the environment.
    pub(super) fn files(&self, plan: &Plan) -> RunFiles<'_> {
        let (s, w) = (&self.output.stats, &self.waits);
        let l = &self.output.latency;
        let none: &[crate::collect::Sample] = &[];
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
        let o = &self.output;
        let src = swimlane::Source {
            journal: &o.journal,
            faults: &o.faults,
            reaps: &o.reaper.journal,
            final_jobs: &self.final_jobs,
            lease: plan.lease.duration,
            hold_transaction: self.saved.hold_transaction,
            clock_us: self.saved.boundary_us(),
            network: &self.saved.network,
        };
        RunFiles {
            swimlanes: swimlane::swimlanes(&self.summary.checks, &src),
            history: self.history.as_deref(),
            final_state: self.final_state.as_deref(),
            evidence_json: serde_json::to_string_pretty(&self.saved).expect("evidence serialises"),
            timeseries: &self.timeseries,
            samples: &self.samples,
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
