//! The agents' evidence into the coordinator's output: journals concatenated (then sorted in
//! the checkers' order), histograms and counters added, faults by time; one figure line per
//! agent. An agent whose evidence is missing (it died, or never joined) is marked so; its
//! executions come back from the effects ledger when the queue is queuebench's own table
//! (their claims and completions are unknown).

use super::control::{self, Seen};
use super::evidence::{self, AgentEvidence};
use super::member::Report;
use super::problem::BadEvidence;
use super::state::AgentState;
use crate::collect::{Event, EventKind};
use crate::model::summary::{AgentFigures, AgentOutcome};
use crate::run::RunOutput;
use crate::scenario::Plan;
use std::time::Instant;
use tokio_postgres::Client;

const RECOVERED_LEDGER: &str = include_str!("sql/recovered_ledger.sql");
const RECOVERED_DONE: &str = include_str!("sql/recovered_done.sql");
/// What the coordinator knows of the run's agents when their workers are done.
pub(crate) struct Roll {
    /// The agents the run waited for.
    pub wanted: u32,
    pub seen: Vec<Seen>,
    /// The start on the server's clock, µs since the epoch.
    pub start_at_us: i64,
}

/// Merges every uploaded agent's evidence into `out` and fills `out.agents`.
pub(crate) async fn merge(plan: &Plan, client: &Client, roll: &Roll, out: &mut RunOutput) -> crate::error::Result<()> {
    let started = Instant::now();
    let mut figures = Vec::new();
    let mut longest = None::<u64>;
    for k in 1..=roll.wanted {
        let seen = roll.seen.iter().find(|s| s.agent == k);
        let mut f = share(plan, roll.wanted, k, seen);
        match seen {
            Some(s) if s.state == AgentState::Uploaded => {
                let report: Report = s.report.clone().and_then(|r| serde_json::from_value(r).ok()).unwrap_or_default();
                let got = download(client, k).await?;
                match got {
                    Ok(ev) => {
                        longest = Some(longest.unwrap_or(0).max(report.duration_us));
                        add(&mut f, &report, &ev);
                        absorb(out, ev, &report);
                        f.state = AgentOutcome::Finished;
                    }
                    Err(why) => f.note = format!("its evidence is unreadable: {why}"),
                }
            }
            Some(s) => {
                f.note = s.error.clone().unwrap_or_else(|| {
                    format!("it stopped answering ({:.1} s silent, last state {})", s.silent_s, s.state)
                });
            }
            None => f.note = "it never joined".into(),
        }
        if f.state == AgentOutcome::Missing && seen.is_some() {
            f.recovered_executions = recover(plan, client, roll, &f, out).await;
        }
        figures.push(f);
    }
    if let Some(us) = longest {
        out.duration = std::time::Duration::from_micros(us);
    }
    out.journal.sort_unstable_by_key(Event::order);
    out.faults.sort_by_key(|f| f.t_us);
    let secs = out.duration.as_secs_f64().max(1e-9);
    for f in &mut figures {
        f.jobs_per_sec = f.jobs as f64 / secs;
    }
    out.agents = figures;
    out.merge_s = started.elapsed().as_secs_f64();
    out.merge_peak_rss_mib = peak_rss_mib();
    Ok(())
}

/// Agent k's planned share, before anything is known of what it did.
fn share(plan: &Plan, wanted: u32, k: u32, seen: Option<&Seen>) -> AgentFigures {
    let slots = super::slots(plan.workers.count, wanted, k);
    AgentFigures {
        agent: k,
        name: seen.map(|s| s.name.clone()).unwrap_or_default(),
        state: if seen.is_some() { AgentOutcome::Missing } else { AgentOutcome::Absent },
        workers: slots.clone().count() as u32,
        first_worker: *slots.start(),
        last_worker: *slots.end(),
        identity_base: super::identity_base(plan.workers.count, k),
        ..AgentFigures::default()
    }
}

async fn download(client: &Client, k: u32) -> crate::error::Result<Result<AgentEvidence, BadEvidence>> {
    let mut parts = Vec::new();
    for name in evidence::PARTS {
        let bytes =
            control::download(client, k, name).await.map_err(|e| control::failed("downloading evidence", &e))?;
        parts.push((name, bytes));
    }
    Ok(evidence::decode(|name| parts.iter().find(|(n, _)| *n == name).map(|(_, b)| b.clone()).unwrap_or_default()))
}

/// Agent k's own figures from its evidence and report.
fn add(f: &mut AgentFigures, report: &Report, ev: &AgentEvidence) {
    f.jobs = ev.journal.iter().filter(|e| e.kind == EventKind::Executed).count() as u64;
    f.claims = ev.stats.claims;
    f.claim_p99_ms =
        (!ev.stats.claim_latency.is_empty()).then(|| crate::report::percentiles(&ev.stats.claim_latency).p99);
    f.errors = ev.stats.errors.values().sum();
    f.clock_offset_us = report.clock_start.offset_us;
    f.clock_bound_us = report.clock_start.bound_us;
    f.clock_offset_end_us = report.clock_end.map(|c| c.offset_us);
    f.clock_bound_end_us = report.clock_end.map(|c| c.bound_us);
    f.evidence_bytes = report.evidence_bytes;
    let mut notes = report.failures.clone();
    notes.extend(report.database_lost.iter().map(|l| format!("lost the database: {l}")));
    f.note = notes.join("; ");
}

/// One agent's evidence into the run's.
fn absorb(out: &mut RunOutput, mut ev: AgentEvidence, report: &Report) {
    out.stats += &ev.stats;
    out.latency.claim.append(&mut ev.latency.claim);
    out.latency.tx.append(&mut ev.latency.tx);
    out.latency.work.append(&mut ev.latency.work);
    out.latency.complete.append(&mut ev.latency.complete);
    out.journal.append(&mut ev.journal);
    out.faults.append(&mut ev.faults);
    out.interrupted |= report.interrupted;
    out.timed_out |= report.timed_out;
    if out.database_lost.is_none() {
        out.database_lost.clone_from(&report.database_lost);
    }
}

/// A missing agent's executions, from two witnesses on queuebench's own table: the effects
/// ledger (one `execute` event per row, at the time it was written, with no claim), and the
/// done rows its workers completed whose ledger rows were still batched in the agent when it
/// died (a worker completes only after executing; the time is unknown, so the event is placed
/// at the agent's last sign of life).
async fn recover(plan: &Plan, client: &Client, roll: &Roll, f: &AgentFigures, out: &mut RunOutput) -> u64 {
    if !plan.adapter.own_table() || !plan.run.effects_table {
        return 0;
    }
    let (first, last, base) = (f.first_worker as i32, f.last_worker as i32, f.identity_base as i32);
    let span = base + super::IDENTITY_SPAN as i32 - 1;
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 4] = [&first, &last, &base, &span];
    let (Ok(rows), Ok(done)) =
        (client.query(RECOVERED_LEDGER, &params).await, client.query(RECOVERED_DONE, &params).await)
    else {
        return 0;
    };
    let last_seen_us = roll.seen.iter().find(|s| s.agent == f.agent).map_or(0, |s| s.last_seen_us - roll.start_at_us);
    let event = |t_us: i64, job: i64, worker: i32, attempt: i32| Event {
        t_us: t_us.max(0) as u64,
        job,
        attempt,
        worker: worker as u32,
        claim: 0,
        kind: EventKind::Executed,
        dur_us: 0,
        token: 0,
    };
    out.journal.extend(rows.iter().map(|r| event(r.get::<_, i64>(3) - roll.start_at_us, r.get(0), r.get(1), r.get(2))));
    out.journal.extend(done.iter().map(|r| event(last_seen_us, r.get(0), r.get(1), r.get(2))));
    out.effects_unwritten += done.len() as u64;
    (rows.len() + done.len()) as u64
}

/// This process's peak resident memory so far (VmHWM), MiB; 0 where /proc does not say.
fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok());
    kib.unwrap_or(0.0) / 1024.0
}
