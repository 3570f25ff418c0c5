//! Exporters: the terminal table and the run folder (`summary.json`,
//! `summary.csv`, `timeseries.csv`, HdrHistogram files, `charts/`,
//! `report.html`, `junit.xml`). They read the `RunSummary` and the `Timeseries` and never
//! recompute a statistic; `queuebench report DIR` runs the same code on the
//! files a run saved.

pub mod build;
pub mod charts;
pub mod github;
pub mod html;
pub mod junit;
pub mod scale;
pub mod terminal;
pub mod timeseries;

use crate::error::{Error, Result};
use crate::model::summary::{Percentiles, RunSummary};
use charts::{BarChart, LineChart, Series};
use hdrhistogram::Histogram;
use std::path::Path;
use timeseries::Timeseries;

/// Milliseconds percentiles of a microsecond histogram.
pub fn percentiles(h: &Histogram<u64>) -> Percentiles {
    let ms = |us: u64| us as f64 / 1000.0;
    if h.is_empty() {
        return Percentiles::default();
    }
    Percentiles {
        count: h.len(),
        p50: ms(h.value_at_quantile(0.50)),
        p90: ms(h.value_at_quantile(0.90)),
        p95: ms(h.value_at_quantile(0.95)),
        p99: ms(h.value_at_quantile(0.99)),
        p999: ms(h.value_at_quantile(0.999)),
        max: ms(h.max()),
    }
}

fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).map_err(|e| Error::infra(format!("cannot write {}: {e}", path.display())))
}

/// One latency: its file stem, its µs histogram and its samples as (ms since start, µs).
pub type Latency<'a> = (String, &'a Histogram<u64>, &'a [(u32, u32)]);

/// What a run leaves for the exporters besides the summary.
pub struct RunFiles<'a> {
    pub timeseries: &'a Timeseries,
    /// (file stem, µs histogram, its samples as (ms since start, µs)): `latency-<stem>.hgrm`
    /// and, when there are samples, `latency-<stem>.hlog`.
    pub histograms: Vec<Latency<'a>>,
    pub scenario_text: &'a str,
    pub environment_json: String,
}

/// Writes the whole run folder.
pub fn write_run_folder(dir: &Path, summary: &RunSummary, files: &RunFiles) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::infra(format!("cannot create {}: {e}", dir.display())))?;
    write(&dir.join("scenario.toml"), files.scenario_text.as_bytes())?;
    write(&dir.join("environment.json"), files.environment_json.as_bytes())?;
    for (stem, h, samples) in &files.histograms {
        write(&dir.join(format!("latency-{stem}.hgrm")), percentile_distribution(h).as_bytes())?;
        if !samples.is_empty() {
            write(&dir.join(format!("latency-{stem}.hlog")), &interval_log(samples, stem)?)?;
        }
    }
    files.timeseries.write(&dir.join("timeseries.csv"))?;
    render(dir, summary, files.timeseries, files.scenario_text)
}

/// summary.json, summary.csv, charts/ and report.html: everything `queuebench report` can rebuild.
pub fn render(dir: &Path, summary: &RunSummary, ts: &Timeseries, scenario_text: &str) -> Result<()> {
    write(&dir.join("summary.json"), &serde_json::to_vec_pretty(summary).expect("summary serialises"))?;
    write(&dir.join("summary.csv"), summary_csv(std::slice::from_ref(summary)).as_bytes())?;
    write(&dir.join("junit.xml"), junit::junit(&[(summary.scenario.clone(), summary)], None).as_bytes())?;
    let charts = run_charts(summary, ts, &dir.join("charts"))?;
    write(&dir.join("report.html"), html::report(summary, &charts, scenario_text).as_bytes())
}

/// One row per run; the columns are the run's identity and every numeric metric, sorted (a
/// latency a run did not measure is an empty cell, not 0).
pub fn summary_csv(runs: &[RunSummary]) -> String {
    let mut cols: Vec<String> = runs.iter().flat_map(RunSummary::metric_paths).collect();
    cols.sort();
    cols.dedup();
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = vec!["run_id", "scenario", "strategy", "mode", "fencing", "passed"];
    header.extend(cols.iter().map(String::as_str));
    let _ = w.write_record(&header);
    for r in runs {
        let m = r.metrics();
        let mut row = vec![
            r.run_id.clone(),
            r.scenario.clone(),
            r.strategy.clone(),
            r.mode.clone(),
            r.fencing.clone(),
            r.passed.to_string(),
        ];
        row.extend(cols.iter().map(|c| m.get(c).map(|v| v.to_string()).unwrap_or_default()));
        let _ = w.write_record(&row);
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// The charts of one run, as (caption, svg).
fn run_charts(s: &RunSummary, ts: &Timeseries, dir: &Path) -> Result<Vec<(String, String)>> {
    let t = ts.column("t_s").unwrap_or_default();
    let series = |col: &str, name: &str| Series {
        name: name.to_string(),
        points: t.iter().copied().zip(ts.column(col).unwrap_or_default()).collect(),
    };
    let per_class = |prefix: &str| -> Vec<Series> {
        ts.classes(prefix).into_iter().map(|(col, class)| series(&col, &class)).collect()
    };
    let mut out = Vec::new();
    let mut add = |caption: &str, name: &str, chart: LineChart| -> Result<()> {
        out.push((caption.to_string(), charts::line(&chart, dir, name)?));
        Ok(())
    };
    add(
        "Completions, claims and empty claims per second.",
        "throughput",
        LineChart {
            title: "Throughput",
            x_label: "seconds since start",
            y_label: "per second",
            series: vec![
                series("completions_per_s", "completions/s"),
                series("claims_per_s", "claims/s"),
                series("empty_claims_per_s", "empty claims/s"),
            ],
        },
    )?;
    add(
        "Claim statement latency per sample interval.",
        "claim-latency",
        LineChart {
            title: "Claim latency",
            x_label: "seconds since start",
            y_label: "ms",
            series: vec![series("claim_p50_ms", "p50"), series("claim_p99_ms", "p99"), series("claim_max_ms", "max")],
        },
    )?;
    add(
        "Jobs waiting (status queued) per class.",
        "queue-depth",
        LineChart {
            title: "Queue depth",
            x_label: "seconds since start",
            y_label: "queued jobs",
            series: per_class("queued_"),
        },
    )?;
    add(
        "Age of the oldest ready job per class.",
        "oldest-ready-age",
        LineChart {
            title: "Oldest ready job",
            x_label: "seconds since start",
            y_label: "seconds",
            series: per_class("oldest_ready_s_"),
        },
    )?;
    add(
        "Live and dead tuples of the jobs table (pg_stat_user_tables).",
        "dead-tuples",
        LineChart {
            title: "Tuples",
            x_label: "seconds since start",
            y_label: "tuples",
            series: vec![series("n_dead_tup", "dead"), series("n_live_tup", "live")],
        },
    )?;
    let mb = |col: &str, name: &str| {
        let mut s = series(col, name);
        s.points.iter_mut().for_each(|p| p.1 /= 1_048_576.0);
        s
    };
    add(
        "Size of the jobs table and its indexes.",
        "table-size",
        LineChart {
            title: "Table size",
            x_label: "seconds since start",
            y_label: "MiB",
            series: vec![mb("table_bytes", "table"), mb("index_bytes", "indexes")],
        },
    )?;
    if ts.column("probe_buffers").is_some_and(|c| c.iter().any(|v| *v > 0.0)) {
        add(
            "Shared buffers one claim touches (EXPLAIN ANALYZE, BUFFERS), rolled back.",
            "claim-plan-buffers",
            LineChart {
                title: "Claim plan: buffers per claim",
                x_label: "seconds since start",
                y_label: "buffers",
                series: vec![series("probe_buffers", "buffers")],
            },
        )?;
        add(
            "Execution time of one claim under EXPLAIN ANALYZE.",
            "claim-plan-time",
            LineChart {
                title: "Claim plan: execution time",
                x_label: "seconds since start",
                y_label: "ms",
                series: vec![series("probe_exec_ms", "execution")],
            },
        )?;
    }
    add(
        "Age of the oldest open transaction, and of the xmin horizon in transactions.",
        "horizon",
        LineChart {
            title: "Oldest transaction",
            x_label: "seconds since start",
            y_label: "seconds",
            series: vec![series("oldest_xact_s", "oldest transaction")],
        },
    )?;
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
    add(
        "Queue wait from the intended enqueue time, by percentile, per class.",
        "queue-wait",
        LineChart { title: "Queue wait distribution", x_label: "percentile", y_label: "ms", series: waits },
    )?;
    Ok(out)
}

/// `comparison.html` and its bar charts for several runs; `runs` pairs a summary with its report's relative path.
pub fn write_comparison(dir: &Path, runs: &[(RunSummary, String)]) -> Result<()> {
    let charts_dir = dir.join("charts");
    let bars =
        |f: &dyn Fn(&RunSummary) -> f64| runs.iter().map(|(s, _)| (s.scenario.clone(), f(s))).collect::<Vec<_>>();
    let mut charts = Vec::new();
    for (caption, name, title, y, values) in [
        (
            "Jobs executed per second.",
            "compare-throughput",
            "Throughput",
            "jobs/s",
            bars(&|s| s.throughput.jobs_per_sec),
        ),
        (
            "Executions beyond the first of each job.",
            "compare-duplicates",
            "Duplicate executions",
            "executions",
            bars(&|s| s.executions.duplicate as f64),
        ),
        (
            "Claim statement latency, 99th percentile.",
            "compare-claim-p99",
            "Claim latency p99",
            "ms",
            bars(&|s| s.latency_ms.claim.p99),
        ),
    ] {
        let svg = charts::bars(&BarChart { title, y_label: y, bars: values }, &charts_dir, name)?;
        charts.push((caption.to_string(), svg));
    }
    let summaries: Vec<RunSummary> = runs.iter().map(|(s, _)| s.clone()).collect();
    write(&dir.join("comparison.csv"), summary_csv(&summaries).as_bytes())?;
    write(&dir.join("comparison.html"), html::comparison(runs, &charts).as_bytes())
}

/// HdrHistogram's percentile distribution text (the `.hgrm` format), in milliseconds.
pub fn percentile_distribution(h: &Histogram<u64>) -> String {
    let mut out = String::from("       Value     Percentile TotalCount 1/(1-Percentile)\n\n");
    if h.is_empty() {
        return out;
    }
    for v in h.iter_quantiles(1) {
        let q = v.quantile_iterated_to();
        let inv = if q < 1.0 { format!("{:.2}", 1.0 / (1.0 - q)) } else { "inf".into() };
        out.push_str(&format!(
            "{:12.3} {:14.12} {:10} {:>14}\n",
            v.value_iterated_to() as f64 / 1000.0,
            q,
            v.count_since_last_iteration(),
            inv
        ));
    }
    out.push_str(&format!(
        "#[Mean    = {:12.3}, StdDeviation   = {:12.3}]\n#[Max     = {:12.3}, Total count    = {:12}]\n",
        h.mean() / 1000.0,
        h.stdev() / 1000.0,
        h.max() as f64 / 1000.0,
        h.len()
    ));
    out
}

/// An HdrHistogram interval log (one interval per second, values in µs, shown in ms),
/// mergeable with logs from other processes by the usual HdrHistogram tools.
pub fn interval_log(samples: &[(u32, u32)], tag: &str) -> Result<Vec<u8>> {
    use hdrhistogram::serialization::V2DeflateSerializer;
    use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let mut buf = Vec::new();
    let mut ser = V2DeflateSerializer::new();
    let err = |e: String| Error::infra(format!("writing the claim interval log: {e}"));
    let mut w = IntervalLogWriterBuilder::new()
        .with_max_value_divisor(1000.0)
        .begin_log_with(&mut buf, &mut ser)
        .map_err(|e| err(e.to_string()))?;
    for chunk in sorted.chunk_by(|a, b| a.0 / 1000 == b.0 / 1000) {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds");
        for (_, us) in chunk {
            h.saturating_record(u64::from(*us).max(1));
        }
        let second = std::time::Duration::from_secs(u64::from(chunk[0].0 / 1000));
        w.write_histogram(&h, second, std::time::Duration::from_secs(1), Tag::new(tag))
            .map_err(|e| err(format!("{e:?}")))?;
    }
    drop(w);
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_csv_has_the_same_columns_for_every_run() {
        let mut a = RunSummary { run_id: "a".into(), ..Default::default() };
        a.executions.duplicate = 3;
        let b = RunSummary { run_id: "b".into(), ..Default::default() };
        let text = summary_csv(&[a, b]);
        let mut r = csv::Reader::from_reader(text.as_bytes());
        let header: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
        assert_eq!(&header[..6], ["run_id", "scenario", "strategy", "mode", "fencing", "passed"]);
        assert!(header.iter().any(|h| h == "executions.duplicate"));
        assert!(header.iter().any(|h| h == "latency_ms.claim.p99"));
        let rows: Vec<csv::StringRecord> = r.records().map(|x| x.unwrap()).collect();
        assert_eq!(rows.len(), 2);
        assert!(rows.iter().all(|row| row.len() == header.len()));
        let i = header.iter().position(|h| h == "executions.duplicate").unwrap();
        assert_eq!(&rows[0][i], "3");
    }

    #[test]
    fn interval_log_has_one_interval_per_second() {
        let samples = [(10, 100), (20, 200), (1500, 300), (3200, 400)];
        let log = interval_log(&samples, "claim").unwrap();
        let intervals = hdrhistogram::serialization::interval_log::IntervalLogIterator::new(&log)
            .filter(|e| matches!(e, Ok(hdrhistogram::serialization::interval_log::LogEntry::Interval(_))))
            .count();
        assert_eq!(intervals, 3);
    }
}
