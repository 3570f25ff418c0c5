//! The charts of one run's report: the harness's time series and the Postgres sampler's,
//! one entry per chart (a data table, read top to bottom in report.html's order).

use super::charts::{self, Chart, LineChart, Series};
use super::timeseries::Timeseries;
use crate::error::Result;
use crate::model::summary::RunSummary;

/// How a chart's lines come from the time series: named columns, or one line per class.
enum Lines {
    /// (column, legend)
    Columns(&'static [(&'static str, &'static str)]),
    /// Columns `<prefix><class>`, one line per class.
    PerClass(&'static str),
    /// (column, legend), divided by 2^20 (bytes → MiB).
    Mebibytes(&'static [(&'static str, &'static str)]),
}

/// (file stem, caption, title, y label, lines); x is seconds since the start.
const TIME_CHARTS: &[(&str, &str, &str, &str, Lines)] = &[
    (
        "throughput",
        "Completions, claims and empty claims per second.",
        "Throughput",
        "per second",
        Lines::Columns(&[
            ("completions_per_s", "completions/s"),
            ("claims_per_s", "claims/s"),
            ("empty_claims_per_s", "empty claims/s"),
        ]),
    ),
    (
        "claim-latency",
        "Claim statement latency per sample interval.",
        "Claim latency",
        "ms",
        Lines::Columns(&[("claim_p50_ms", "p50"), ("claim_p99_ms", "p99"), ("claim_max_ms", "max")]),
    ),
    (
        "queue-depth",
        "Jobs waiting (status queued) per class.",
        "Queue depth",
        "queued jobs",
        Lines::PerClass("queued_"),
    ),
    (
        "oldest-ready-age",
        "Age of the oldest ready job per class.",
        "Oldest ready job",
        "seconds",
        Lines::PerClass("oldest_ready_s_"),
    ),
    (
        "dead-tuples",
        "Live and dead tuples of the jobs table (pg_stat_user_tables).",
        "Tuples",
        "tuples",
        Lines::Columns(&[("n_dead_tup", "dead"), ("n_live_tup", "live")]),
    ),
    (
        "table-size",
        "Size of the jobs table and its indexes.",
        "Table size",
        "MiB",
        Lines::Mebibytes(&[("table_bytes", "table"), ("index_bytes", "indexes")]),
    ),
];

/// Drawn only when the claim-plan probe ran.
const PROBE_CHARTS: &[(&str, &str, &str, &str, Lines)] = &[
    (
        "claim-plan-buffers",
        "Shared buffers one claim touches (EXPLAIN ANALYZE, BUFFERS), rolled back.",
        "Claim plan: buffers per claim",
        "buffers",
        Lines::Columns(&[("probe_buffers", "buffers")]),
    ),
    (
        "claim-plan-time",
        "Execution time of one claim under EXPLAIN ANALYZE.",
        "Claim plan: execution time",
        "ms",
        Lines::Columns(&[("probe_exec_ms", "execution")]),
    ),
];

const HORIZON_CHART: (&str, &str, &str, &str, Lines) = (
    "horizon",
    "Age of the oldest open transaction, and of the xmin horizon in transactions.",
    "Oldest transaction",
    "seconds",
    Lines::Columns(&[("oldest_xact_s", "oldest transaction")]),
);

/// The charts of one run, in report order.
pub fn run_charts(s: &RunSummary, ts: &Timeseries) -> Result<Vec<Chart>> {
    let probed = ts.column("probe_buffers").is_some_and(|c| c.iter().any(|v| *v > 0.0));
    let specs =
        TIME_CHARTS.iter().chain(if probed { PROBE_CHARTS } else { &[] }).chain(std::iter::once(&HORIZON_CHART));
    let mut out = Vec::new();
    for (name, caption, title, y_label, lines) in specs {
        let chart = LineChart { title, x_label: "seconds since start", y_label, series: series(ts, lines) };
        out.push(charts::line(&chart, name, caption)?);
    }
    out.push(queue_wait(s)?);
    Ok(out)
}

fn series(ts: &Timeseries, lines: &Lines) -> Vec<Series> {
    let t = ts.column("t_s").unwrap_or_default();
    let column = |col: &str, name: &str, scale: f64| Series {
        name: name.to_string(),
        points: t.iter().copied().zip(ts.column(col).unwrap_or_default().into_iter().map(|v| v / scale)).collect(),
    };
    match lines {
        Lines::Columns(cols) => cols.iter().map(|(c, n)| column(c, n, 1.0)).collect(),
        Lines::Mebibytes(cols) => cols.iter().map(|(c, n)| column(c, n, 1_048_576.0)).collect(),
        Lines::PerClass(prefix) => {
            ts.classes(prefix).into_iter().map(|(col, class)| column(&col, &class, 1.0)).collect()
        }
    }
}

/// The queue wait distribution per class, from the summary's percentiles.
fn queue_wait(s: &RunSummary) -> Result<Chart> {
    let waits: Vec<Series> = s
        .latency_ms
        .queue_wait
        .iter()
        .filter(|(_, p)| p.count > 0)
        .map(|(class, p)| Series {
            name: class.clone(),
            points: vec![(50.0, p.p50), (90.0, p.p90), (95.0, p.p95), (99.0, p.p99), (99.9, p.p999), (100.0, p.max)],
        })
        .collect();
    let chart = LineChart { title: "Queue wait distribution", x_label: "percentile", y_label: "ms", series: waits };
    charts::line(&chart, "queue-wait", "Queue wait from the intended enqueue time, by percentile, per class.")
}
