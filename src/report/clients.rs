//! The comparison across process clients (docs/clients.md): when every run of a batch is a
//! client run (`mode` = "client <name> (…)"), `comparison.html` and `comparison.csv` have
//! one row per client, its scenarios grouped by kind (contention, crash, pause,
//! kill-backend), with the metrics each kind answers. A metric a run does not measure is
//! shown as "—" (an empty CSV cell), never as 0.

use super::ComparedRun;
use super::charts::{self, BarChart, Chart};
use super::html::{escape, figures, page};
use crate::error::Result;
use crate::model::fault::FaultKind;
use crate::model::summary::RunSummary;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The client a run drove: `client pg-boss (4 handlers per process)` → `pg-boss`.
pub(crate) fn client_of(s: &RunSummary) -> Option<&str> {
    let rest = s.mode.strip_prefix("client ")?;
    Some(rest.split(" (").next().unwrap_or(rest).trim())
}

/// A client run's kind: from its faults when any fired, else the scenario name's suffix.
pub(crate) fn kind_of(s: &RunSummary) -> &'static str {
    let fired = |k: FaultKind| s.faults.by_kind.get(&k).copied().unwrap_or(0) > 0;
    let named = |k: &str| s.scenario.ends_with(&format!("-{k}"));
    if named("throughput") {
        "throughput"
    } else if fired(FaultKind::Crash) || named("crash") {
        "crash"
    } else if fired(FaultKind::KillBackend) || named("kill-backend") {
        "kill-backend"
    } else if fired(FaultKind::Pause) || named("pause") {
        "pause"
    } else {
        "contention"
    }
}

/// One client's row. `None` = not measured (or no run of that kind in the batch).
#[derive(Debug, Default, Clone)]
pub(crate) struct ClientRow {
    pub client: String,
    pub scenarios: Vec<String>,
    /// Each scenario's kind, in the same order.
    pub kinds: Vec<&'static str>,
    pub jobs_per_sec: Option<f64>,
    /// The throughput run (the library's high-throughput settings) and its configured ceiling.
    pub full_speed_jobs_per_sec: Option<f64>,
    pub full_speed_ceiling: Option<String>,
    pub queue_wait_p50: Option<f64>,
    pub queue_wait_p99: Option<f64>,
    pub pickup_p50: Option<f64>,
    pub pickup_p99: Option<f64>,
    pub pause_dup_race: Option<u64>,
    pub pause_dup_lease_expired: Option<u64>,
    /// Crash run: recovery ms (max), or Err(faults that hit a job never completed in the run).
    pub crash_recovery: Option<std::result::Result<f64, u64>>,
    pub kill_backend_recovery: Option<std::result::Result<f64, u64>>,
    pub idle_queries_per_sec: Option<f64>,
    pub all_passed: bool,
    /// The checks that failed in a passing run as its scenario expects (`gate::expected_failures`).
    pub expected_failures: Vec<crate::model::check::Check>,
}

/// Whether every run is a client run (then the client comparison is written).
pub(crate) fn all_clients(runs: &[ComparedRun]) -> bool {
    !runs.is_empty() && runs.iter().all(|r| client_of(&r.summary).is_some())
}

/// The slowest recovery, unless a fault's job never came back: then how many did not (a run
/// that recovered from one kill and lost a job to another shows the loss, not a time).
fn recovery(s: &RunSummary) -> std::result::Result<f64, u64> {
    if s.faults.unrecovered == 0 && s.faults.recovered > 0 {
        Ok(s.faults.recovery_ms_max)
    } else {
        Err(s.faults.unrecovered)
    }
}

/// One row per client, in name order.
pub(crate) fn rows(runs: &[ComparedRun]) -> Vec<ClientRow> {
    let mut by: BTreeMap<String, ClientRow> = BTreeMap::new();
    for s in runs.iter().map(|r| &r.summary) {
        let Some(name) = client_of(s) else { continue };
        let r = by.entry(name.to_string()).or_insert_with(|| ClientRow {
            client: name.to_string(),
            all_passed: true,
            ..Default::default()
        });
        r.scenarios.push(s.scenario.clone());
        r.kinds.push(kind_of(s));
        r.all_passed &= s.passed;
        for c in crate::gate::expected_failures(s).into_iter().filter(|_| s.passed) {
            if !r.expected_failures.contains(&c) {
                r.expected_failures.push(c);
            }
        }
        // The process journal counts no idle statements (the library's polling is its own):
        // idle seconds with no idle query counted is "not measured", not 0 queries/s.
        if s.wakeup.idle_seconds > 0.0 && s.wakeup.idle_queries > 0 {
            r.idle_queries_per_sec = Some(s.wakeup.idle_queries_per_sec);
        }
        match kind_of(s) {
            "contention" => {
                r.jobs_per_sec = Some(s.throughput.jobs_per_sec);
                let wait = s.latency_ms.queue_wait.get("default").filter(|p| p.count > 0);
                r.queue_wait_p50 = wait.map(|p| p.p50);
                r.queue_wait_p99 = wait.map(|p| p.p99);
                let pickup = Some(&s.latency_ms.pickup).filter(|p| p.count > 0);
                r.pickup_p50 = pickup.map(|p| p.p50);
                r.pickup_p99 = pickup.map(|p| p.p99);
            }
            "pause" => {
                r.pause_dup_race = Some(s.executions.duplicate_race);
                r.pause_dup_lease_expired = Some(s.executions.duplicate_lease_expired);
            }
            "throughput" => {
                r.full_speed_jobs_per_sec = Some(s.throughput.jobs_per_sec);
                r.full_speed_ceiling = Some(s.throughput.ceiling.clone()).filter(|c| !c.is_empty());
            }
            "crash" => r.crash_recovery = Some(recovery(s)),
            _ => r.kill_backend_recovery = Some(recovery(s)),
        }
    }
    by.into_values().collect()
}

const DASH: &str = "—";

/// "584.0" with the ceiling under it, or "—".
fn full_speed(r: &ClientRow) -> String {
    match (&r.full_speed_jobs_per_sec, &r.full_speed_ceiling) {
        (None, _) => DASH.to_string(),
        (Some(v), None) => format!("{v:.1}<br><span class=muted>no ceiling set by configuration</span>"),
        (Some(v), Some(c)) => format!("{v:.1}<br><span class=muted>ceiling: {}</span>", escape(c)),
    }
}

fn num(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| DASH.to_string(), |x| format!("{x:.digits$}"))
}

fn count(v: Option<u64>) -> String {
    v.map_or_else(|| DASH.to_string(), |x| x.to_string())
}

fn recovered(v: Option<std::result::Result<f64, u64>>) -> String {
    match v {
        None => DASH.to_string(),
        Some(Ok(ms)) => format!("{ms:.0}"),
        Some(Err(n)) => format!("not recovered in the run ({n} fault{})", if n == 1 { "" } else { "s" }),
    }
}

/// The CSV's columns, in order.
pub(crate) const CSV_HEADER: [&str; 15] = [
    "client",
    "scenarios",
    "contention_jobs_per_sec",
    "full_speed_jobs_per_sec",
    "full_speed_ceiling",
    "queue_wait_p50_ms",
    "queue_wait_p99_ms",
    "pickup_p50_ms",
    "pickup_p99_ms",
    "pause_duplicates_race",
    "pause_duplicates_lease_expired",
    "crash_recovery_ms",
    "kill_backend_recovery_ms",
    "idle_queries_per_sec",
    "passed",
];

/// The verdicts cell: `all passed` (with the checks that failed as the scenarios expect, when
/// some did), or `FAILED`.
fn verdicts(r: &ClientRow) -> String {
    if !r.all_passed {
        return "<span class=fail>FAILED</span>".into();
    }
    match crate::gate::expected_note(&r.expected_failures) {
        Some(note) => format!("<span class=ok>all passed</span> <small class=muted>({})</small>", escape(&note)),
        None => "<span class=ok>all passed</span>".into(),
    }
}

/// `comparison.csv` for clients: one row per client; an empty cell = not measured.
pub(crate) fn csv(rows: &[ClientRow]) -> String {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    let _ = w.write_record(CSV_HEADER);
    let f = |v: Option<f64>| v.map(|x| format!("{x:.3}")).unwrap_or_default();
    let c = |v: Option<u64>| v.map(|x| x.to_string()).unwrap_or_default();
    let r = |v: Option<std::result::Result<f64, u64>>| match v {
        Some(Ok(ms)) => format!("{ms:.3}"),
        _ => String::new(),
    };
    for row in rows {
        let _ = w.write_record([
            row.client.clone(),
            row.scenarios.join(" "),
            f(row.jobs_per_sec),
            f(row.full_speed_jobs_per_sec),
            row.full_speed_ceiling.clone().unwrap_or_default(),
            f(row.queue_wait_p50),
            f(row.queue_wait_p99),
            f(row.pickup_p50),
            f(row.pickup_p99),
            c(row.pause_dup_race),
            c(row.pause_dup_lease_expired),
            r(row.crash_recovery),
            r(row.kill_backend_recovery),
            f(row.idle_queries_per_sec),
            row.all_passed.to_string(),
        ]);
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// The bar charts: only clients with a measured value get a bar; a chart nobody measured is left out.
pub(crate) fn charts(rows: &[ClientRow]) -> Result<Vec<Chart>> {
    let bars = |f: &dyn Fn(&ClientRow) -> Option<f64>| {
        rows.iter().filter_map(|r| f(r).map(|v| (r.client.clone(), v))).collect::<Vec<_>>()
    };
    let recovery_ms = |v: &Option<std::result::Result<f64, u64>>| v.and_then(|x| x.ok());
    let specs = [
        (
            "Contention run: jobs executed per second.",
            "clients-throughput",
            "Throughput (contention)",
            "jobs/s",
            bars(&|r| r.jobs_per_sec),
        ),
        (
            "Throughput run, at the library's high-throughput settings: jobs executed per second.",
            "clients-full-speed",
            "Throughput (full speed)",
            "jobs/s",
            bars(&|r| r.full_speed_jobs_per_sec),
        ),
        (
            "Contention run: enqueue to the handler's start, 99th percentile.",
            "clients-queue-wait-p99",
            "Queue wait p99 (contention)",
            "ms",
            bars(&|r| r.queue_wait_p99),
        ),
        (
            "Pause run: executions beyond the first of each job (race + after lease expiry).",
            "clients-pause-duplicates",
            "Duplicates under pause",
            "executions",
            bars(&|r| r.pause_dup_race.zip(r.pause_dup_lease_expired).map(|(a, b)| (a + b) as f64)),
        ),
        (
            "Crash run: fault to the hit job's next completion (clients that recovered within the run).",
            "clients-crash-recovery",
            "Recovery after crash",
            "ms",
            bars(&|r| recovery_ms(&r.crash_recovery)),
        ),
    ];
    specs
        .into_iter()
        .filter(|s| !s.4.is_empty())
        .map(|(caption, name, title, y_label, bars)| charts::bars(&BarChart { title, y_label, bars }, name, caption))
        .collect()
}

/// `comparison.html` for clients: the client table, what is not measured, the charts, then
/// every run (as the generic comparison lists them).
pub(crate) fn html(rows: &[ClientRow], charts: &[Chart], runs_table: &str) -> String {
    let mut o = String::from("<h1>queuebench comparison: clients</h1>");
    o.push_str(
        "<table><tr><th>client</th><th>jobs/s<br><span class=muted>contention</span></th>\
         <th>jobs/s at full speed<br><span class=muted>throughput run · its ceiling</span></th>\
         <th>queue wait p50 / p99 ms<br><span class=muted>contention</span></th>\
         <th>pickup p50 / p99 ms</th>\
         <th>duplicates under pause<br><span class=muted>race / after lease expiry</span></th>\
         <th>recovery after crash ms</th><th>recovery after kill_backend ms</th>\
         <th>idle queries/s</th><th>verdicts</th></tr>",
    );
    for r in rows {
        let pair = |a: Option<f64>, b: Option<f64>| {
            if a.is_none() && b.is_none() { DASH.to_string() } else { format!("{} / {}", num(a, 0), num(b, 0)) }
        };
        let dups = if r.pause_dup_race.is_none() {
            DASH.to_string()
        } else {
            format!("{} / {}", count(r.pause_dup_race), count(r.pause_dup_lease_expired))
        };
        let _ = write!(
            o,
            "<tr><td>{}<br><span class=muted>runs: {}</span></td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td>{}</td></tr>",
            escape(&r.client),
            escape(&r.kinds.join(", ")),
            num(r.jobs_per_sec, 1),
            full_speed(r),
            pair(r.queue_wait_p50, r.queue_wait_p99),
            pair(r.pickup_p50, r.pickup_p99),
            dups,
            escape(&recovered(r.crash_recovery)),
            escape(&recovered(r.kill_backend_recovery)),
            num(r.idle_queries_per_sec, 1),
            verdicts(r),
        );
    }
    o.push_str("</table>");
    o.push_str(
        "<p class=muted>— = not measured, or no run of that kind in the batch. \
         <b>Queue wait</b>: the job's enqueue (preload) to its handler's <code>start</code> event line. \
         <b>Pickup</b> (enqueue commit to first claim of open-model jobs) is not measured for clients: \
         client scenarios preload their jobs. \
         <b>Idle queries/s</b> is not measured for clients: the library's own polling statements are not counted. \
         <b>Recovery</b>: a fault to the hit job's next accepted completion (the slowest); \
         \"not recovered in the run\": the library did not hand the dead worker's jobs to another worker before the run ended \
         (its lease is longer than the run, docs/clients.md). \
         <b>Duplicates</b>: a race when the second execution's claim overlapped another claim's lease, \
         otherwise after lease expiry.</p>",
    );
    figures(&mut o, charts);
    o.push_str("<h2>Runs</h2>");
    o.push_str(runs_table);
    page("queuebench comparison: clients", &o)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(scenario: &str, client: &str) -> ComparedRun {
        let mut s = RunSummary {
            scenario: scenario.into(),
            mode: format!("client {client} (4 handlers per process)"),
            passed: true,
            ..Default::default()
        };
        s.throughput.jobs_per_sec = 40.0;
        ComparedRun { summary: s, report: format!("{scenario}/report.html") }
    }

    #[test]
    fn one_row_per_client_with_kinds_grouped() {
        let mut crash = run("pg-boss-crash", "pg-boss");
        crash.summary.faults.by_kind.insert(FaultKind::Crash, 1);
        crash.summary.faults.unrecovered = 1;
        // It recovered from another fault in 2 ms: the loss shows, not the time.
        crash.summary.faults.recovered = 1;
        crash.summary.faults.recovery_ms_max = 2.0;
        let mut pause = run("pgqueuer-pause", "pgqueuer");
        pause.summary.faults.recovered = 1;
        pause.summary.faults.recovery_ms_max = 3050.0;
        pause.summary.executions.duplicate_lease_expired = 2;
        let runs = [run("pg-boss-contention", "pg-boss"), crash, run("pgqueuer-contention", "pgqueuer"), pause];
        assert!(all_clients(&runs));
        let rows = rows(&runs);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].client, "pg-boss");
        assert_eq!(rows[0].crash_recovery, Some(Err(1)));
        assert_eq!(rows[0].pause_dup_race, None);
        assert_eq!(rows[1].pause_dup_lease_expired, Some(2));
        assert_eq!(rows[1].idle_queries_per_sec, None, "not measured, not 0");
        let text = csv(&rows);
        let mut lines = text.lines();
        assert_eq!(lines.next().unwrap().split(',').count(), CSV_HEADER.len());
        let pgboss = lines.next().unwrap();
        assert!(pgboss.starts_with("pg-boss,") && pgboss.ends_with(",,true"), "{pgboss}");
        let page = html(&rows, &[], "");
        assert!(page.contains("not recovered in the run (1 fault)"));
        assert!(page.contains("not measured for clients"));
        assert!(page.contains("runs: contention, crash"));
    }
}
