//! The charts of one run's report: the harness's time series and the Postgres sampler's,
//! one entry per chart (a data table, read top to bottom in report.html's order).
//!
//! Gaps stay gaps: the harness's claim latency has no point in a second without a claim,
//! and the sampler's lines break where two samples are more than twice its usual (median)
//! interval apart (the server down, a sample that took long), a lone point drawn as a dot.
//! A chart with no point at all is not drawn as empty axes (they read as a measured nothing):
//! it says in words why there is nothing (`why_empty`), e.g. not measured for a process client.

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

/// Which time series a chart reads.
#[derive(Clone, Copy, PartialEq)]
enum Source {
    /// `timeseries.csv`: every `run.series_interval`, from the harness's own counters.
    Harness,
    /// `samples.csv`: the Postgres sampler's, at its own times.
    Database,
}

type Spec = (&'static str, &'static str, &'static str, &'static str, Source, Lines);

/// (file stem, caption, title, y label, source, lines); x is seconds since the start.
const TIME_CHARTS: &[Spec] = &[
    (
        "throughput",
        "Completions, claims and empty claims per second (the harness's counters, every second).",
        "Throughput",
        "per second",
        Source::Harness,
        Lines::Columns(&[
            ("completions_per_s", "completions/s"),
            ("claims_per_s", "claims/s"),
            ("empty_claims_per_s", "empty claims/s"),
        ]),
    ),
    (
        "claim-latency",
        "Claim statement latency per second (every claim; no point in a second without one).",
        "Claim latency",
        "ms",
        Source::Harness,
        Lines::Columns(&[("claim_p50_ms", "p50"), ("claim_p99_ms", "p99"), ("claim_max_ms", "max")]),
    ),
    (
        "queue-depth",
        "Jobs waiting (status queued) per class, per sample.",
        "Queue depth",
        "queued jobs",
        Source::Database,
        Lines::PerClass("queued_"),
    ),
    (
        "oldest-ready-age",
        "Age of the oldest ready job per class, per sample.",
        "Oldest ready job",
        "seconds",
        Source::Database,
        Lines::PerClass("oldest_ready_s_"),
    ),
    (
        "dead-tuples",
        "Live and dead tuples of the jobs table (pg_stat_user_tables), per sample.",
        "Tuples",
        "tuples",
        Source::Database,
        Lines::Columns(&[("n_dead_tup", "dead"), ("n_live_tup", "live")]),
    ),
    (
        "table-size",
        "Size of the jobs table and its indexes, per sample.",
        "Table size",
        "MiB",
        Source::Database,
        Lines::Mebibytes(&[("table_bytes", "table"), ("index_bytes", "indexes")]),
    ),
];

/// Drawn only when the claim-plan probe ran.
const PROBE_CHARTS: &[Spec] = &[
    (
        "claim-plan-buffers",
        "Shared buffers one claim touches (EXPLAIN ANALYZE, BUFFERS), rolled back.",
        "Claim plan: buffers per claim",
        "buffers",
        Source::Database,
        Lines::Columns(&[("probe_buffers", "buffers")]),
    ),
    (
        "claim-plan-time",
        "Execution time of one claim under EXPLAIN ANALYZE.",
        "Claim plan: execution time",
        "ms",
        Source::Database,
        Lines::Columns(&[("probe_exec_ms", "execution")]),
    ),
];

const HORIZON_CHART: Spec = (
    "horizon",
    "Age of the oldest open transaction, and of the xmin horizon in transactions.",
    "Oldest transaction",
    "seconds",
    Source::Database,
    Lines::Columns(&[("oldest_xact_s", "oldest transaction")]),
);

/// The charts of one run, in report order: `harness` is `timeseries.csv`, `database` `samples.csv`.
pub fn run_charts(s: &RunSummary, harness: &Timeseries, database: &Timeseries) -> Result<Vec<Chart>> {
    let probed = database.column("probe_buffers").is_some_and(|c| c.iter().any(|v| *v > 0.0));
    let specs =
        TIME_CHARTS.iter().chain(if probed { PROBE_CHARTS } else { &[] }).chain(std::iter::once(&HORIZON_CHART));
    let mut out = Vec::new();
    for (name, caption, title, y_label, source, lines) in specs {
        let caption = &probe_caption(s, name, caption);
        let series = match source {
            Source::Harness => series(harness, lines, None),
            Source::Database => series(database, lines, Some(usual_interval(database))),
        };
        let chart = LineChart { title, x_label: "seconds since start", y_label, series };
        out.push(match charts::is_empty(&chart) {
            true => charts::note(title, &why_empty(s, name, *source, database), name, caption)?,
            false => charts::line(&chart, name, caption)?,
        });
    }
    out.push(queue_wait(s)?);
    Ok(out)
}

/// A process client's claim-plan charts say whose claim they measured: the paired adapter's.
fn probe_caption(s: &RunSummary, name: &str, caption: &str) -> String {
    if !name.starts_with("claim-plan") || !s.mode.starts_with("client ") {
        return caption.to_string();
    }
    format!(
        "{caption} The claim is the paired adapter's ({}): its transcription of the library's claim, run on the \
         library's own tables. The library's workers send their own statement, which queuebench does not see: \
         a different form (batch size, parameters, a function) may touch other buffers.",
        s.adapter
    )
}

/// Why a chart of this run has no point to draw, in words.
fn why_empty(s: &RunSummary, name: &str, source: Source, database: &Timeseries) -> String {
    let client = s.mode.starts_with("client ");
    let text = match (name, source) {
        ("claim-latency", _) if client => {
            "Not measured for a process client: its claims are the library's own statements, sent from inside the \
             library's worker. queuebench sees when a handler starts (the journal's claim), not the claim's round trip."
        }
        ("claim-latency", _) => "No claim statement returned in this run: there is no claim latency to draw.",
        ("throughput", _) => "No claim, execution or completion in this run.",
        (_, Source::Database) if database.rows.is_empty() => {
            "Not sampled: the Postgres sampler took no sample in this run (run.sample_interval = \"off\", or the run \
             ended before its first)."
        }
        ("queue-depth" | "oldest-ready-age", _) => {
            "Not measured: the queue's adapter has no observe.depth query, so the sampler cannot count its waiting jobs."
        }
        _ => "The sampler recorded no value for this chart in this run.",
    };
    text.to_string()
}

/// The median time between two samples: the sampler's usual interval (stretched or not).
fn usual_interval(ts: &Timeseries) -> f64 {
    let t = ts.column("t_s").unwrap_or_default();
    let mut gaps: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).collect();
    gaps.sort_unstable_by(f64::total_cmp);
    gaps.get(gaps.len() / 2).copied().unwrap_or(f64::INFINITY)
}

/// The lines of one chart. `gap_after`: a line breaks (a NaN point) where two points are
/// more than twice that many seconds apart.
fn series(ts: &Timeseries, lines: &Lines, gap_after: Option<f64>) -> Vec<Series> {
    let t = ts.column("t_s").unwrap_or_default();
    let column = |col: &str, name: &str, scale: f64| {
        let values = ts.column(col).unwrap_or_default().into_iter().map(|v| v / scale);
        let mut points: Vec<(f64, f64)> = Vec::with_capacity(t.len());
        for (x, y) in t.iter().copied().zip(values) {
            let far = |last: &(f64, f64)| gap_after.is_some_and(|g| x - last.0 > 2.0 * g);
            if points.last().is_some_and(far) {
                points.push((x, f64::NAN));
            }
            points.push((x, y));
        }
        Series { name: name.to_string(), points }
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
    let caption = "Queue wait from the intended enqueue time, by percentile, per class.";
    if charts::is_empty(&chart) {
        let why = "No job's queue wait was measured in this run (no job was claimed after its enqueue).";
        return charts::note(chart.title, why, "queue-wait", caption);
    }
    charts::line(&chart, "queue-wait", caption)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_far_apart_break_the_line() {
        let t = ["0.0", "1.0", "2.0", "3.0", "10.0", "11.0", "11.3"];
        let ts = Timeseries {
            header: vec!["t_s".into(), "n_dead_tup".into()],
            rows: t.iter().map(|t| vec![t.to_string(), "5".into()]).collect(),
        };
        assert_eq!(usual_interval(&ts), 1.0, "the median, not the short last one");
        let lines = series(&ts, &Lines::Columns(&[("n_dead_tup", "dead")]), Some(usual_interval(&ts)));
        let gaps: Vec<f64> = lines[0].points.iter().filter(|p| p.1.is_nan()).map(|p| p.0).collect();
        assert_eq!(gaps, [10.0], "one break, between 3 s and 10 s");
        let joined = series(&ts, &Lines::Columns(&[("n_dead_tup", "dead")]), None);
        assert!(joined[0].points.iter().all(|p| p.1.is_finite()));
    }
}
