//! Assembles the `RunSummary` from the plan, the run's output and the
//! checkers' verdicts. The only place summary numbers are computed.

use super::percentiles;
use crate::collect::Second;
use crate::collect::phases::PhaseStats;
use crate::collect::waits::Waits;
use crate::gate;
use crate::model::fingerprint::Fingerprint;
use crate::model::summary::*;
use crate::run::RunOutput;
use crate::scenario::Plan;
use crate::verify::Verification;
use std::time::Duration;

pub(crate) struct Context {
    pub run_id: String,
    pub started_at: String,
    pub database: DatabaseInfo,
    pub effects_rows: Option<u64>,
    pub environment: Environment,
    /// The server settings the fingerprint records.
    pub settings: std::collections::BTreeMap<String, String>,
}

pub(crate) fn build(
    plan: &Plan,
    mut ctx: Context,
    out: &RunOutput,
    v: Verification,
    w: &Waits,
    ph: &[PhaseStats],
) -> RunSummary {
    let secs = out.duration.as_secs_f64().max(1e-9);
    let st = &out.stats;
    let settings = std::mem::take(&mut ctx.settings);
    let mut s = RunSummary {
        schema_version: SCHEMA_VERSION,
        queuebench_version: crate::model::VERSION.into(),
        run_id: ctx.run_id,
        scenario: plan.name.clone(),
        description: plan.description.clone(),
        started_at: ctx.started_at,
        seed: plan.seed,
        strategy: plan.adapter.name.clone(),
        adapter: match &plan.adapter.origin {
            crate::adapter::Origin::File(p) => p.display().to_string(),
            _ => String::new(),
        },
        adapter_design: plan.adapter.design.clone(),
        mode: match &plan.client {
            Some(c) => format!("client {} ({} handlers per process)", c.name, c.concurrency),
            None => serde_json::to_value(plan.workers.mode)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default(),
        },
        fencing: if plan.adapter.own_table() {
            serde_json::to_value(plan.lease.fencing).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()
        } else {
            "the adapter's own".into()
        },
        workers: plan.workers.count,
        batch: plan.workers.batch,
        work: plan.workers.work.describe(),
        stop: plan.run.stop.describe(),
        time_scale: 1.0,
        database: ctx.database,
        interrupted: out.interrupted,
        timed_out: out.timed_out,
        partial: out.database_lost.is_some(),
        partial_reason: out.database_lost.as_ref().map(|w| format!("database lost: {w}")).unwrap_or_default(),
        outage: outage(plan, out),
        throughput: {
            let ceiling = plan
                .client
                .as_ref()
                .and_then(|c| crate::scenario::ceiling::of_client(c, plan.workers.count, &plan.workers.work));
            Throughput {
                jobs_per_sec: v.executions.total as f64 / secs,
                claims_per_sec: st.claims as f64 / secs,
                duration_s: out.duration.as_secs_f64(),
                ceiling_jobs_per_sec: ceiling.as_ref().map(|c| c.jobs_per_sec),
                ceiling: ceiling.map(|c| c.words).unwrap_or_default(),
            }
        },
        reaper: Reaper { runs: out.reaper.runs, reclaimed: out.reaper.reclaimed, marked_dead: out.reaper.marked_dead },
        claims: Claims {
            total: st.claims,
            empty: st.empty_claims,
            jobs: st.claimed_jobs,
            heartbeats: st.heartbeats,
            reconnects: st.reconnects,
        },
        errors: Errors {
            total: st.errors.values().sum(),
            by_code: st.errors.clone(),
            by_statement: st.errors_at.clone(),
        },
        effects: Effects { journal: 0, table_rows: ctx.effects_rows },
        latency_ms: latencies(plan, out, w),
        producer: producer(out, w),
        wakeup: wakeup(plan, out),
        phases: phases(plan),
        by_phase: by_phase(plan, w, ph, out.duration),
        environment: ctx.environment,
        timings: Default::default(),
        vacuum: vacuum(out),
        probe: probe(&out.horizon.probes),
        aborted_by: out.aborted.clone(),
        ..Default::default()
    };
    apply_verification(&mut s, v);
    super::scale::unscale(&mut s, plan);
    judge(&mut s, &plan.expectations);
    s.fingerprint = Some(fingerprint(plan, &s, settings));
    s
}

/// What makes this run comparable with another: the scenario as run, its shape (as the
/// summary names it, in scenario units), the target, the machine and the server.
fn fingerprint(plan: &Plan, s: &RunSummary, settings: std::collections::BTreeMap<String, String>) -> Fingerprint {
    Fingerprint {
        scenario_hash: plan.source.content_hash(),
        strategy: s.strategy.clone(),
        adapter: s.adapter.clone(),
        workers: s.workers,
        batch: s.batch,
        mode: s.mode.clone(),
        work: s.work.clone(),
        target: s.database.kind.clone(),
        tls: if s.database.tls.used { "TLS".into() } else { String::new() },
        pooler: s.database.pooler.as_ref().map(|p| format!("{} {}", p.kind, p.pool_mode)).unwrap_or_default(),
        server_version: s.database.server_version.clone(),
        cores: s.environment.cores,
        memory_gib: s.environment.memory_gib.round() as u64,
        settings,
    }
}

/// The checkers' numbers and verdicts into the summary (a run's, or `queuebench check`'s
/// re-run over a saved history).
pub(crate) fn apply_verification(s: &mut RunSummary, v: Verification) {
    s.durability = v.durability;
    s.jobs = v.jobs;
    s.executions = v.executions;
    s.completions = v.completions;
    s.stale = v.stale;
    s.ownership = v.ownership;
    s.starvation = v.starvation;
    s.fifo = v.fifo;
    s.faults = v.faults;
    s.horizon = v.horizon;
    s.dead_tuples = v.dead_tuples;
    s.checks = v.checks;
    s.effects.journal = s.executions.total;
}

/// The expectations, then the verdict (`gate::judge`).
pub(crate) fn judge(s: &mut RunSummary, expectations: &[crate::model::expect::Expectation]) {
    s.expectations = gate::evaluate(expectations, s);
    let verdict = gate::judge(s);
    s.passed = verdict.passed;
    s.failed_checks = verdict.failed_checks;
}

fn latencies(plan: &Plan, out: &RunOutput, w: &Waits) -> Latencies {
    let st = &out.stats;
    Latencies {
        claim: percentiles(&st.claim_latency),
        claim_tx: percentiles(&st.claim_tx_latency),
        work: percentiles(&st.work_latency),
        complete: percentiles(&st.complete_latency),
        acquire: percentiles(&st.acquire_latency),
        queue_wait: plan
            .load
            .class_names()
            .zip(&w.queue_wait)
            .map(|(name, h)| (name.to_string(), percentiles(h)))
            .collect(),
        end_to_end: percentiles(&w.end_to_end),
        pickup: percentiles(&w.pickup),
    }
}

fn producer(out: &RunOutput, w: &Waits) -> Producer {
    Producer {
        planned: out.arrivals.len() as u64 + out.deduplicated + out.unsent + out.producer_errors,
        // A deduplicated enqueue was sent; it made no job.
        sent: out.arrivals.len() as u64 + out.deduplicated,
        unsent: out.unsent,
        errors: out.producer_errors,
        lag_ms: percentiles(&w.producer_lag),
        enqueue_ms: percentiles(&w.enqueue),
        excluded_warmup: w.excluded_warmup,
    }
}

fn wakeup(plan: &Plan, out: &RunOutput) -> WakeupStats {
    let (idle_queries, idle_seconds) = idle_time(&out.stats.per_second, out.duration.as_secs_f64());
    WakeupStats {
        mode: plan.workers.idle.wakeup.name().into(),
        policy: plan.workers.idle.describe(),
        idle_queries,
        idle_seconds,
        idle_queries_per_sec: if idle_seconds > 0.0 { idle_queries as f64 / idle_seconds } else { 0.0 },
        notifications_received: out.stats.notifications,
        rolled_back_notify_delivered: out.probe.map(|p| p.rolled_back_delivered),
        committed_notify_delivered: out.probe.map(|p| p.committed_delivered),
    }
}

fn phases(plan: &Plan) -> Vec<PhaseInfo> {
    let info = |p: &crate::scenario::plan::Phase| PhaseInfo {
        name: p.name.clone(),
        start_s: p.start.as_secs_f64(),
        duration_s: p.duration.as_secs_f64(),
        rate: p.rate,
        warmup: p.warmup,
    };
    plan.load.phases.iter().map(info).collect()
}

/// Each named VACUUM step, with the claim-plan probe's buffers just before and after it.
fn vacuum(out: &RunOutput) -> std::collections::BTreeMap<String, VacuumNumbers> {
    let probes = &out.horizon.probes;
    let step = |r: &crate::model::records::VacuumResult| VacuumNumbers {
        at_s: r.t_us as f64 / 1e6,
        removed: r.removed,
        remain: r.remain,
        not_removable: r.not_removable,
        pgstattuple_dead: r.pgstattuple_dead.unwrap_or(-1),
        n_dead_tup: r.n_dead_tup,
        probe_buffers_before: probes.iter().rev().find(|p| p.t_ms * 1000 <= r.t_us).map_or(-1, |p| p.buffers),
        probe_buffers_after: probes.iter().find(|p| p.t_ms * 1000 > r.t_us).map_or(-1, |p| p.buffers),
    };
    out.horizon.vacuum.iter().map(|r| (r.name.clone(), step(r))).collect()
}

/// Each phase's own numbers, keyed by its name (a repeated name gets `#2`, `#3`, …).
/// Rates divide by the time the run spent in the phase (a run that ended early did not run the
/// rest of its last phase).
fn by_phase(
    plan: &Plan,
    w: &Waits,
    ph: &[PhaseStats],
    elapsed: Duration,
) -> std::collections::BTreeMap<String, PhaseNumbers> {
    let classes: Vec<&str> = plan.load.class_names().collect();
    let mut out = std::collections::BTreeMap::new();
    for ((phase, stats), waits) in plan.load.phases.iter().zip(ph).zip(&w.by_phase) {
        let ran = elapsed.saturating_sub(phase.start).min(phase.duration);
        let secs = ran.as_secs_f64().max(1e-9);
        let numbers = PhaseNumbers {
            start_s: phase.start.as_secs_f64(),
            duration_s: phase.duration.as_secs_f64(),
            warmup: phase.warmup,
            executions: PhaseExecutions { total: stats.executions },
            throughput: PhaseThroughput {
                jobs_per_sec: stats.executions as f64 / secs,
                claims_per_sec: stats.claims as f64 / secs,
            },
            latency_ms: PhaseLatencies {
                claim: percentiles(&stats.claim),
                work: percentiles(&stats.work),
                complete: percentiles(&stats.complete),
                queue_wait: classes
                    .iter()
                    .zip(&waits.queue_wait)
                    .map(|(c, h)| (c.to_string(), percentiles(h)))
                    .collect(),
                end_to_end: percentiles(&waits.end_to_end),
            },
        };
        let mut name = phase.name.clone();
        let mut n = 1;
        while out.contains_key(&name) {
            n += 1;
            name = format!("{}#{n}", phase.name);
        }
        out.insert(name, numbers);
    }
    out
}

/// The server's restarts and the workers' lost connections.
fn outage(plan: &Plan, out: &RunOutput) -> Outage {
    let end_us = out.duration.as_micros() as u64;
    let st = &out.stats;
    let ms = |us: u64| us as f64 / 1000.0;
    Outage {
        server_restarts: out.restarts.len() as u64,
        server_down_ms: ms(out.restarts.iter().map(|r| r.up_us.unwrap_or(end_us).saturating_sub(r.down_us)).sum()),
        worker_reconnects: st.reconnects,
        reconnect_attempts: st.reconnect_attempts,
        longest_worker_outage_ms: ms(st.outages.iter().map(|(a, b)| b.saturating_sub(*a)).max().unwrap_or(0)),
        window_start_s: st.outages.iter().map(|o| o.0).min().unwrap_or(0) as f64 / 1e6,
        window_end_s: st.outages.iter().map(|o| o.1).max().unwrap_or(0) as f64 / 1e6,
        reconnect_timeout_s: plan.run.reconnect_timeout.as_secs_f64(),
    }
}

fn probe(samples: &[crate::model::records::ProbeSample]) -> Probe {
    let (Some(first), Some(last)) = (samples.first(), samples.last()) else { return Probe::default() };
    Probe {
        samples: samples.len() as u64,
        buffers_first: first.buffers,
        buffers_max: samples.iter().map(|s| s.buffers).max().unwrap_or(0),
        buffers_last: last.buffers,
        exec_ms_first: first.exec_ms,
        exec_ms_max: samples.iter().map(|s| s.exec_ms).fold(0.0, f64::max),
        exec_ms_last: last.exec_ms,
    }
}

/// (queries, seconds) over the idle seconds of a run `secs` long: seconds in
/// which no claim returned a job and nothing was executed. The queries are
/// the empty claims and drained checks sent in them.
fn idle_time(per_second: &[Second], secs: f64) -> (u64, f64) {
    let (mut queries, mut seconds) = (0, 0.0);
    let zero = Second::default();
    for i in 0..secs.ceil() as usize {
        let s = per_second.get(i).unwrap_or(&zero);
        if s.claims == s.empty_claims && s.executions == 0 {
            queries += u64::from(s.empty_claims + s.drained_checks);
            seconds += (secs - i as f64).min(1.0);
        }
    }
    (queries, seconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_seconds_are_those_without_work() {
        let busy = Second { claims: 10, empty_claims: 4, executions: 6, ..Default::default() };
        let idle = Second { claims: 8, empty_claims: 8, drained_checks: 2, ..Default::default() };
        // Second 2 saw nothing at all (everyone asleep) and second 3 is half a second long.
        let (q, s) = idle_time(&[busy, idle], 3.5);
        assert_eq!(q, 10);
        assert!((s - 2.5).abs() < 1e-9, "{s}");
        assert_eq!(idle_time(&[busy], 1.0), (0, 0.0));
    }
}
