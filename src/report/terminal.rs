//! The summary a person reads at the end of a run.

use crate::model::check::Check;
use crate::model::summary::{PhaseNumbers, RunSummary};
use crate::model::words::{count, count_as};
use std::fmt::Write;

pub(crate) fn render(s: &RunSummary) -> String {
    let mut o = String::new();
    let status = if s.interrupted {
        "INTERRUPTED"
    } else if s.partial {
        "PARTIAL"
    } else if s.aborted_by.is_some() {
        "ABORTED"
    } else if s.passed {
        "PASSED"
    } else {
        "FAILED"
    };
    // A pass the scenario's [expect] excused checks for says which.
    let _ = writeln!(o, "\n{} — {}", s.scenario, crate::gate::passed_words(status, s));
    let queue = if s.adapter.is_empty() {
        format!("strategy {} · mode {} · fencing {}", s.strategy, s.mode, s.fencing)
    } else {
        format!("adapter {} ({}) · mode {}", s.strategy, s.adapter, s.mode)
    };
    let workers = count(s.workers, "worker");
    let _ = writeln!(o, "  {queue} · {workers} · batch {} · work {} · stop {}", s.batch, s.work, s.stop);
    if !s.adapter_design.is_empty() {
        let _ = writeln!(o, "  design   {}", s.adapter_design);
    }
    let _ = writeln!(
        o,
        "  database {} {} (PostgreSQL {}, {}){}{}",
        s.database.kind,
        s.database.shown(),
        s.database.server_version,
        s.database.tls.shown(),
        crate::model::summary::PoolerInfo::shown(&s.database.pooler),
        s.database.superuser_notice()
    );
    if s.partial {
        let _ = writeln!(o, "  PARTIAL REPORT {}; checks on the final table were not run", s.partial_reason);
    }
    for (k, v) in lines(s) {
        let _ = writeln!(o, "  {k:<14} {v}");
    }
    o.push_str(&checks_and_expectations(s));
    o
}

/// The checks and the expectations, as the run's summary lists them (and `queuebench check`).
pub(crate) fn checks_and_expectations(s: &RunSummary) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "  checks");
    for c in &s.checks {
        let ex = if c.examples.is_empty() { String::new() } else { format!(" e.g. jobs {:?}", c.examples) };
        let _ = writeln!(o, "    {} {:<28} {}{ex}", mark(c.passed), c.name, c.detail);
    }
    if !s.expectations.is_empty() {
        let _ = writeln!(o, "  expectations");
        for e in &s.expectations {
            let mark = if e.judged() { mark(e.passed) } else { "--  " };
            let _ = writeln!(o, "    {mark} {} {} (actual {})", e.name, e.expression, e.actual_shown());
        }
    }
    o
}

/// Why a run failed, one line per reason: what `--quiet` prints under FAILED. The reasons are
/// those of `gate::judge`: the run did not finish, an expectation failed, or a check failed that
/// no expectation names (a check the scenario names, as naive-duplicates names `exactly_once`,
/// is judged by that expectation instead).
pub(crate) fn failures(s: &RunSummary) -> Vec<String> {
    let stopped = [(s.timed_out, "timed out before the stop condition"), (s.interrupted, "interrupted")];
    let stopped = stopped.into_iter().filter(|(hit, _)| *hit).map(|(_, why)| why.to_string());
    let partial = s.partial.then(|| format!("PARTIAL REPORT {}", s.partial_reason));
    let expects = s
        .expectations
        .iter()
        .filter(|e| !e.passed)
        .map(|e| format!("expect {} {} (actual {})", e.name, e.expression, e.actual_shown()));
    let checks = s.failed_checks.iter().map(|&name| check_failure(s, name));
    let aborted = s.aborted_by.iter().map(|a| format!("aborted by {a}"));
    let unsent = (s.producer.unsent > 0)
        .then(|| format!("the producers left {} of {} planned arrivals unsent", s.producer.unsent, s.producer.planned));
    partial.into_iter().chain(aborted).chain(stopped).chain(unsent).chain(expects).chain(checks).collect()
}

/// What `--quiet` prints for a run (`name`: the scenario's, `#k` added among repeats):
/// `NAME: passed`, or `NAME: FAILED` and why, a line each.
pub(crate) fn quiet(s: &RunSummary, name: &str) -> String {
    let verdict = if s.passed { crate::gate::passed_words("passed", s) } else { "FAILED".into() };
    let mut o = format!("{name}: {verdict}\n");
    for line in failures(s) {
        let _ = writeln!(o, "  {line}");
    }
    o
}

/// `check exactly_once failed: <detail> (name "checks.exactly_once" in [expect] if the scenario
/// expects it)`.
pub(crate) fn check_failure(s: &RunSummary, name: Check) -> String {
    let detail = s.checks.iter().find(|c| c.name == name).map_or(String::new(), |c| c.detail.clone());
    format!("check {name} failed: {detail} (name \"checks.{name}\" in [expect] if the scenario expects it)")
}

/// A deduplicating enqueue's refusals, after the jobs line's counts (none without them).
fn deduplicated(j: &crate::model::summary::Jobs) -> String {
    if j.deduplicated == 0 {
        return String::new();
    }
    format!(" · {} deduplicated at enqueue (not jobs)", j.deduplicated)
}

/// One labelled line of the summary.
type Row = (&'static str, String);

/// The labelled lines of a summary, shared by the terminal and report.html: the core lines
/// every run has, then one group per feature the run used, in this order.
pub(crate) fn lines(s: &RunSummary) -> Vec<Row> {
    let groups: [fn(&RunSummary) -> Vec<Row>; 16] = [
        aborted,
        time_scale,
        core,
        super::agents::lines,
        fail_and_heartbeat,
        producers,
        queue_waits,
        phases,
        idle,
        pickup,
        done_by_class,
        oldest_ready,
        fifo,
        faults,
        outage,
        durability,
    ];
    groups.iter().flat_map(|g| g(s)).collect()
}

fn aborted(s: &RunSummary) -> Vec<Row> {
    s.aborted_by.iter().map(|a| ("aborted by", a.clone())).collect()
}

fn time_scale(s: &RunSummary) -> Vec<Row> {
    if !(s.time_scale > 0.0 && s.time_scale != 1.0) {
        return Vec::new();
    }
    vec![(
        "time scale",
        format!(
            "{} · every duration ran × {0}; times and rates below are in the scenario's units, \
             claim/complete latencies in real ms",
            s.time_scale
        ),
    )]
}

/// What every run reports: jobs, executions, completions, claims, throughput, claim latency, errors.
fn core(s: &RunSummary) -> Vec<Row> {
    let (j, x, c, l) = (&s.jobs, &s.executions, &s.completions, &s.latency_ms.claim);
    vec![
        (
            "jobs",
            if s.partial {
                // Counted from the final table, which was not read: unknown, not 0.
                format!(
                    "{} enqueued · completed, queued, running, dead, cancelled, lost: unknown (the final table was not read)",
                    j.enqueued
                )
            } else {
                format!(
                    "{} enqueued · {} completed · {} queued · {} running · {} dead · {} cancelled · {} lost · {} over their attempt budget",
                    j.enqueued,
                    j.completed,
                    j.queued,
                    j.stuck_running,
                    j.dead,
                    j.cancelled,
                    j.lost,
                    j.attempts_exceeded
                ) + &deduplicated(j)
            },
        ),
        (
            "executions",
            format!(
                "{} total · {} distinct jobs · {} duplicate ({} racing claims, {} after lease expiry, {} after a crash, {} after completion{}) · {} · max {} per job",
                x.total,
                x.distinct_jobs,
                x.duplicate,
                x.duplicate_race,
                x.duplicate_lease_expired,
                x.duplicate_after_crash,
                x.duplicate_after_completion,
                match x.duplicate_after_ack_unknown {
                    0 => String::new(),
                    n => format!(", {n} {}", crate::model::rerun::Rerun::AfterAckUnknown.words()),
                },
                crate::model::words::count_as(x.retries, "retry", "retries"),
                x.max_per_job
            ),
        ),
        (
            "completions",
            format!(
                "{} accepted · {} rejected · stale: {} accepted, {} rejected",
                c.accepted, c.rejected, c.stale_accepted, c.stale_rejected
            ),
        ),
        (
            "claims",
            format!(
                "{} · {} empty · {} returned · {}",
                count(s.claims.total, "round trip"),
                s.claims.empty,
                count(s.claims.jobs, "job"),
                count_as(s.ownership.overlapping_jobs, "job with overlapping owners", "jobs with overlapping owners")
            ),
        ),
        (
            "throughput",
            format!(
                "{:.0} jobs/s · {:.0} claims/s over {:.2} s{}",
                s.throughput.jobs_per_sec,
                s.throughput.claims_per_sec,
                s.throughput.duration_s,
                ceiling_note(&s.throughput)
            ),
        ),
        (
            "claim latency",
            match (l.count, s.mode.starts_with("client ")) {
                // A library's claim is its own statement, inside its worker: no sample is not 0 ms.
                (0, true) => "not measured (a process client's claims are the library's own statements)".into(),
                (0, false) => "no sample (no claim returned)".into(),
                _ => format!(
                    "p50 {:.2} · p95 {:.2} · p99 {:.2} · p99.9 {:.2} · max {:.2} ms ({})",
                    l.p50,
                    l.p95,
                    l.p99,
                    l.p999,
                    l.max,
                    count(l.count, "sample")
                ),
            },
        ),
        (
            "errors",
            if s.errors.total == 0 { "none".into() } else { format!("{} {:?}", s.errors.total, s.errors.by_code) },
        ),
    ]
}

fn fail_and_heartbeat(s: &RunSummary) -> Vec<Row> {
    let st = &s.stale;
    if st.fails_accepted + st.fails_rejected + st.heartbeats_accepted + st.heartbeats_rejected == 0 {
        return Vec::new();
    }
    vec![(
        "fail/heartbeat",
        format!(
            "fails {} accepted ({} stale), {} rejected ({} stale) · heartbeats {} accepted ({} stale), {} rejected",
            st.fails_accepted,
            st.fail_stale_accepted,
            st.fails_rejected,
            st.fail_stale_rejected,
            st.heartbeats_accepted,
            st.heartbeat_stale_accepted,
            st.heartbeats_rejected
        ),
    )]
}

fn producers(s: &RunSummary) -> Vec<Row> {
    let p = &s.producer;
    if p.planned == 0 {
        return Vec::new();
    }
    vec![(
        "producers",
        format!(
            "{} planned · {} sent · {} unsent · {} · lag p50 {:.1} · p99 {:.1} · max {:.1} ms · enqueue p50 {:.2} ms",
            p.planned,
            p.sent,
            p.unsent,
            count(p.errors, "error"),
            p.lag_ms.p50,
            p.lag_ms.p99,
            p.lag_ms.max,
            p.enqueue_ms.p50
        ),
    )]
}

fn queue_waits(s: &RunSummary) -> Vec<Row> {
    let waits = s.latency_ms.queue_wait.iter().filter(|(_, w)| w.count > 0);
    waits
        .map(|(class, w)| {
            let text = format!(
                "{class}: p50 {:.1} · p95 {:.1} · p99 {:.1} · max {:.1} ms ({})",
                w.p50,
                w.p95,
                w.p99,
                w.max,
                count(w.count, "job")
            );
            ("queue wait", text)
        })
        .collect()
}

fn phases(s: &RunSummary) -> Vec<Row> {
    let mut phases: Vec<(&String, &PhaseNumbers)> = s.by_phase.iter().collect();
    phases.sort_by(|a, b| a.1.start_s.total_cmp(&b.1.start_s));
    phases
        .into_iter()
        .map(|(name, p)| {
            let waits: Vec<String> = p
                .latency_ms
                .queue_wait
                .iter()
                .filter(|(_, w)| w.count > 0)
                .map(|(class, w)| format!("{class} {:.1}", w.p95))
                .collect();
            let text = format!(
                "{name}{}: {:.0} jobs/s · claim p99 {} ms · queue wait p95 {} ms",
                if p.warmup { " (warm-up)" } else { "" },
                p.throughput.jobs_per_sec,
                if p.latency_ms.claim.count > 0 { format!("{:.2}", p.latency_ms.claim.p99) } else { "–".into() },
                if waits.is_empty() { "–".to_string() } else { waits.join(", ") }
            );
            ("phase", text)
        })
        .collect()
}

fn idle(s: &RunSummary) -> Vec<Row> {
    let wk = &s.wakeup;
    if !(s.producer.planned > 0 || wk.mode == "listen" || wk.idle_seconds > 0.0) {
        return Vec::new();
    }
    let probe = match (wk.rolled_back_notify_delivered, wk.committed_notify_delivered) {
        (Some(rb), Some(c)) => format!(" · probe: rolled-back NOTIFY delivered {rb}, committed {c}"),
        _ => String::new(),
    };
    vec![(
        "idle",
        format!(
            "{} · {:.1} idle queries/s over {:.1} idle s · {} notifications{probe}",
            wk.policy, wk.idle_queries_per_sec, wk.idle_seconds, wk.notifications_received
        ),
    )]
}

fn pickup(s: &RunSummary) -> Vec<Row> {
    let pick = &s.latency_ms.pickup;
    if pick.count == 0 {
        return Vec::new();
    }
    vec![(
        "pickup",
        format!(
            "enqueue commit → first claim p50 {:.1} · p99 {:.1} · max {:.1} ms ({})",
            pick.p50,
            pick.p99,
            pick.max,
            count(pick.count, "job")
        ),
    )]
}

fn done_by_class(s: &RunSummary) -> Vec<Row> {
    let by = &s.jobs.completed_by_class;
    if !by.keys().any(|c| c != "default") {
        return Vec::new();
    }
    vec![("done by class", by.iter().map(|(c, n)| format!("{c} {n}")).collect::<Vec<_>>().join(" · "))]
}

fn oldest_ready(s: &RunSummary) -> Vec<Row> {
    let sv = &s.starvation;
    if sv.max_oldest_ready_age_s.is_empty() {
        return Vec::new();
    }
    let ages: Vec<String> = sv
        .max_oldest_ready_age_s
        .iter()
        .map(|(c, a)| {
            format!(
                "{c} max {a:.1} s ({:+.2} s/s at the end of the load)",
                sv.growth_s_per_s.get(c).copied().unwrap_or(0.0)
            )
        })
        .collect();
    vec![("oldest ready", format!("{} · threshold {:.1} s", ages.join(" · "), sv.threshold_s))]
}

fn fifo(s: &RunSummary) -> Vec<Row> {
    if s.fifo.completions <= 1 {
        return Vec::new();
    }
    vec![(
        "fifo",
        format!(
            "{} completions · {} neighbours out of enqueue order · worst displacement {} places",
            s.fifo.completions, s.fifo.inverted_pairs, s.fifo.worst_displacement
        ),
    )]
}

fn faults(s: &RunSummary) -> Vec<Row> {
    let f = &s.faults;
    if f.injected == 0 && s.reaper.runs == 0 {
        return Vec::new();
    }
    let kinds: Vec<String> = f.by_kind.iter().filter(|(_, n)| **n > 0).map(|(k, n)| format!("{n} {k}")).collect();
    vec![(
        "faults",
        format!(
            "{} injected{} · {} reconnects · recovered {} (max {:.0} ms, mean {:.0} ms), unrecovered {} · reaper reclaimed {}, marked dead {}",
            f.injected,
            if kinds.is_empty() { String::new() } else { format!(" ({})", kinds.join(", ")) },
            s.claims.reconnects,
            f.recovered,
            f.recovery_ms_max,
            f.recovery_ms_mean,
            f.unrecovered,
            s.reaper.reclaimed,
            s.reaper.marked_dead
        ),
    )]
}

fn outage(s: &RunSummary) -> Vec<Row> {
    let o = &s.outage;
    if !(o.server_restarts > 0 || o.reconnect_attempts > o.worker_reconnects) {
        return Vec::new();
    }
    vec![(
        "outage",
        format!(
            "{}, down {:.0} ms · {} in {} · longest worker outage {:.0} ms \
             ({:.1}–{:.1} s) · timeout {:.0} s",
            count(o.server_restarts, "server restart"),
            o.server_down_ms,
            count(o.worker_reconnects, "reconnect"),
            count(o.reconnect_attempts, "attempt"),
            o.longest_worker_outage_ms,
            o.window_start_s,
            o.window_end_s,
            o.reconnect_timeout_s
        ),
    )]
}

fn durability(s: &RunSummary) -> Vec<Row> {
    if s.outage.server_restarts == 0 {
        return Vec::new();
    }
    let d = &s.durability;
    let line = if d.tested {
        format!("{} · {} done though their ack was lost", d.note, d.unacknowledged_done)
    } else {
        d.note.clone()
    };
    vec![("durability", line)]
}

fn mark(ok: bool) -> &'static str {
    if ok { "ok  " } else { "FAIL" }
}

/// "; ceiling 16 handlers × 1 job per fetch ÷ 0.5 s poll = 32 jobs/s (reached 97%)".
pub(crate) fn ceiling_note(t: &crate::model::summary::Throughput) -> String {
    match t.ceiling_jobs_per_sec {
        Some(c) if c > 0.0 && !t.ceiling.is_empty() => {
            format!(" · ceiling set by configuration: {} (reached {:.0}%)", t.ceiling, 100.0 * t.jobs_per_sec / c)
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::summary::{CheckResult, ExpectationResult};

    #[test]
    fn quiet_failure_lines_name_the_checks_that_failed_the_run() {
        let checks = vec![
            CheckResult {
                name: Check::ExactlyOnce,
                passed: false,
                violations: 3,
                detail: "3 ran twice".into(),
                ..Default::default()
            },
            CheckResult {
                name: Check::OwnershipOverlap,
                passed: false,
                violations: 1,
                detail: "1 job".into(),
                ..Default::default()
            },
        ];
        let expectations = vec![ExpectationResult {
            name: "checks.ownership_overlap".into(),
            expression: ">= 0".into(),
            actual: Some(1.0),
            passed: true,
        }];
        let mut s = RunSummary { checks, expectations, failed_checks: vec![Check::ExactlyOnce], ..Default::default() };
        assert_eq!(
            failures(&s),
            [
                "check exactly_once failed: 3 ran twice (name \"checks.exactly_once\" in [expect] if the scenario expects it)"
            ]
        );
        s.failed_checks.clear();
        assert!(failures(&s).is_empty(), "a check the scenario names is judged by its expectation");
    }
}
