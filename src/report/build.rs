//! Assembles the `RunSummary` from the plan, the run's output and the
//! checkers' verdicts. The only place summary numbers are computed.

use super::percentiles;
use super::summary::*;
use crate::collect::waits::Waits;
use crate::gate;
use crate::run::RunOutput;
use crate::scenario::Plan;
use crate::scenario::load_model::DEFAULT_CLASS;
use crate::verify::Verification;

pub struct Context {
    pub run_id: String,
    pub started_at: String,
    pub database: DatabaseInfo,
    pub effects_rows: Option<u64>,
    pub environment: Environment,
}

pub fn build(plan: &Plan, ctx: Context, out: &RunOutput, v: Verification, w: &Waits) -> RunSummary {
    let secs = out.duration.as_secs_f64().max(1e-9);
    let st = &out.stats;
    let mut s = RunSummary {
        schema_version: SCHEMA_VERSION,
        queuebench_version: env!("CARGO_PKG_VERSION").into(),
        run_id: ctx.run_id,
        scenario: plan.name.clone(),
        description: plan.description.clone(),
        started_at: ctx.started_at,
        seed: plan.seed,
        strategy: plan.strategy.name.clone(),
        mode: serde_json::to_value(plan.mode).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default(),
        fencing: serde_json::to_value(plan.fencing).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default(),
        workers: plan.workers,
        batch: plan.batch,
        work: plan.work.describe(),
        stop: plan.stop.describe(),
        database: ctx.database,
        interrupted: out.interrupted,
        timed_out: out.timed_out,
        throughput: Throughput {
            jobs_per_sec: v.executions.total as f64 / secs,
            claims_per_sec: st.claims as f64 / secs,
            duration_s: out.duration.as_secs_f64(),
        },
        jobs: v.jobs,
        executions: v.executions,
        completions: v.completions,
        stale: v.stale,
        ownership: v.ownership,
        starvation: v.starvation,
        fifo: v.fifo,
        faults: v.faults,
        reaper: Reaper { runs: out.reaper.runs, reclaimed: out.reaper.reclaimed, marked_dead: out.reaper.marked_dead },
        claims: Claims {
            total: st.claims,
            empty: st.empty_claims,
            jobs: st.claimed_jobs,
            heartbeats: st.heartbeats,
            reconnects: st.reconnects,
        },
        errors: Errors { total: st.errors.values().sum(), by_code: st.errors.clone() },
        effects: Effects { journal: 0, table_rows: ctx.effects_rows },
        latency_ms: Latencies {
            claim: percentiles(&st.claim_latency),
            claim_tx: percentiles(&st.claim_tx_latency),
            work: percentiles(&st.work_latency),
            complete: percentiles(&st.complete_latency),
            queue_wait: std::iter::once(DEFAULT_CLASS)
                .chain(plan.load.classes.iter().map(|c| c.name.as_str()))
                .zip(&w.queue_wait)
                .map(|(name, h)| (name.to_string(), percentiles(h)))
                .collect(),
            end_to_end: percentiles(&w.end_to_end),
        },
        producer: Producer {
            planned: out.arrivals.len() as u64 + out.unsent + out.producer_errors,
            sent: out.arrivals.len() as u64,
            unsent: out.unsent,
            errors: out.producer_errors,
            lag_ms: percentiles(&w.producer_lag),
            enqueue_ms: percentiles(&w.enqueue),
            excluded_warmup: w.excluded_warmup,
        },
        phases: plan
            .load
            .phases
            .iter()
            .map(|p| PhaseInfo {
                name: p.name.clone(),
                start_s: p.start.as_secs_f64(),
                duration_s: p.duration.as_secs_f64(),
                rate: p.rate,
                warmup: p.warmup,
            })
            .collect(),
        environment: ctx.environment,
        checks: v.checks,
        expectations: Vec::new(),
        passed: false,
    };
    s.effects.journal = s.executions.total;
    s.expectations = gate::evaluate(&plan.expectations, &s);
    s.passed = !s.interrupted && !s.timed_out && s.expectations.iter().all(|e| e.passed);
    s
}
