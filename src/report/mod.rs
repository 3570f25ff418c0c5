//! Exporters: the terminal table and the run folder (`summary.json`,
//! `summary.csv`, `timeseries.csv`, `samples.csv`, HdrHistogram files, `charts/`,
//! `report.html`, `junit.xml`), all written through the one fan-out in `export`
//! (summary.json first and whole, the rest best-effort). They read the `RunSummary` and the
//! two time series and never recompute a statistic; `queuebench report DIR` runs the same code
//! on the files a run saved. `build` assembles the summary (the only place its numbers are
//! computed).

pub(crate) mod agents;
pub(crate) mod build;
pub mod charts;
pub(crate) mod clients;
mod escape;
pub(crate) mod export;
pub(crate) mod github;
#[cfg(test)]
mod golden;
pub(crate) mod html;
pub(crate) mod junit;
mod run_charts;
pub(crate) mod scale;
pub(crate) mod swimlane;
pub(crate) mod terminal;
pub(crate) mod timeseries;
pub(crate) mod versions;

use crate::compare::versions::VersionGroup;
use crate::error::{Error, Result};
use crate::model::summary::{Percentiles, RunSummary};
use charts::{BarChart, Chart};
use export::{Exporter, File, Output, Written};
use hdrhistogram::Histogram;
use std::path::Path;
use swimlane::Swimlane;
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

/// One latency: its file stem, its µs histogram and its samples as (ms since start, µs).
pub type Latency<'a> = (String, &'a Histogram<u64>, &'a [crate::collect::Sample]);

/// What a run leaves for the exporters besides the summary.
pub struct RunFiles<'a> {
    /// `history.csv.gz` (collect::history), gzipped already; None with `run.history = false`.
    pub history: Option<&'a [u8]>,
    /// `final_state.csv.gz`; None when the database was lost (there is no final table).
    pub final_state: Option<&'a [u8]>,
    /// `evidence.json`: what else the checkers read.
    pub evidence_json: String,
    /// report.html's example jobs (`swimlane`).
    pub swimlanes: Vec<Swimlane>,
    /// `timeseries.csv` (the harness's, every `run.series_interval`) and `samples.csv` (the sampler's).
    pub timeseries: &'a Timeseries,
    pub samples: &'a Timeseries,
    /// (file stem, µs histogram, its samples as (ms since start, µs)): `latency-<stem>.hgrm`
    /// and, when there are samples, `latency-<stem>.hlog`.
    pub histograms: Vec<Latency<'a>>,
    pub scenario_text: String,
    pub environment_json: String,
}

/// Writes a run folder through the one fan-out (`export`): `summary.json` first and whole,
/// then the rest best-effort; what could not be written is recorded in `summary.json`'s
/// `not_written`. `junit`: also write `junit.xml` (false when the batch writes it there,
/// with the baseline's suite in it).
pub fn export_run(dir: &Path, summary: &RunSummary, files: &RunFiles, junit: bool) -> Result<Written> {
    let charts = run_charts(summary, files.timeseries, files.samples);
    let mut rest: Vec<Box<dyn Exporter + '_>> = vec![
        Box::new(export::one("scenario.toml", || files.scenario_text.as_str())),
        Box::new(export::one("environment.json", || files.environment_json.as_str())),
        Box::new(Output("latency histograms", || histogram_files(&files.histograms))),
        Box::new(export::one("timeseries.csv", || files.timeseries.to_csv())),
        Box::new(export::one("samples.csv", || files.samples.to_csv())),
        Box::new(export::one("evidence.json", || files.evidence_json.as_str())),
    ];
    if let Some(history) = files.history {
        rest.push(Box::new(export::one("history.csv.gz", move || history)));
    }
    if let Some(state) = files.final_state {
        rest.push(Box::new(export::one("final_state.csv.gz", move || state)));
    }
    rest.extend(rebuildable(summary, &charts, &files.swimlanes, &files.scenario_text, junit));
    write_with_summary(dir, summary, &rest)
}

/// `queuebench report DIR`: summary.json, summary.csv, junit.xml, charts/ and report.html
/// again from the files a run saved.
pub fn rebuild(
    dir: &Path,
    summary: &RunSummary,
    (harness, database): (&Timeseries, &Timeseries),
    swimlanes: &[Swimlane],
    scenario_text: &str,
) -> Result<Written> {
    let charts = run_charts(summary, harness, database);
    write_with_summary(dir, summary, &rebuildable(summary, &charts, swimlanes, scenario_text, true))
}

/// summary.json (required), then `rest`; if something of the rest failed, summary.json again
/// listing it (if that write fails too, the first summary.json stands, verdict and all).
fn write_with_summary(dir: &Path, summary: &RunSummary, rest: &[Box<dyn Exporter + '_>]) -> Result<Written> {
    let summary_json = export::one("summary.json", || json(summary));
    let rest: Vec<&dyn Exporter> = rest.iter().map(|b| b.as_ref()).collect();
    let written = export::write(dir, &[&summary_json], &rest)?;
    if !written.not_written.is_empty() {
        let mut s = summary.clone();
        s.not_written = written.not_written.clone();
        if let Err(e) = export::write_atomic(&dir.join("summary.json"), &json(&s)) {
            eprintln!(
                "warning: summary.json (verdict and all) stands, but its not_written list could not be added: {e}"
            );
        }
    }
    Ok(written)
}

fn json(summary: &RunSummary) -> Vec<u8> {
    serde_json::to_vec_pretty(summary).expect("summary serialises")
}

/// The outputs made from the summary and the time series alone (what `report` rebuilds).
fn rebuildable<'a>(
    summary: &'a RunSummary,
    charts: &'a Result<Vec<Chart>>,
    swimlanes: &'a [Swimlane],
    scenario_text: &'a str,
    junit: bool,
) -> Vec<Box<dyn Exporter + 'a>> {
    let mut out: Vec<Box<dyn Exporter + 'a>> =
        vec![Box::new(export::one("summary.csv", || summary_csv(std::slice::from_ref(summary))))];
    if junit {
        out.push(Box::new(export::one("junit.xml", || {
            junit::junit(&[junit::LabelledRun { label: summary.scenario.clone(), summary }], None)
        })));
    }
    out.push(Box::new(charts_output(charts)));
    out.push(Box::new(export::one("report.html", move || {
        let shown: &[Chart] = charts.as_deref().unwrap_or_default();
        html::report(summary, shown, swimlanes, scenario_text)
    })));
    out
}

/// `latency-<stem>.hgrm` for every histogram and `.hlog` for those with samples.
fn histogram_files(histograms: &[Latency]) -> Result<Vec<File>> {
    let mut out = Vec::new();
    for (stem, h, samples) in histograms {
        out.push(File::new(format!("latency-{stem}.hgrm"), percentile_distribution(h)));
        if !samples.is_empty() {
            out.push(File::new(format!("latency-{stem}.hlog"), interval_log(samples, stem)?));
        }
    }
    Ok(out)
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

/// The charts of one run (`run_charts.rs` lists them).
pub use run_charts::run_charts;

/// A run in a comparison: its summary, and its report.html's path relative to the comparison's
/// folder (the link in comparison.html).
#[derive(Debug, Clone)]
pub struct ComparedRun {
    pub summary: RunSummary,
    pub report: String,
}

/// `comparison.html`, `comparison.csv` and their bar charts for several runs, through the
/// fan-out.
/// `versions`: the version matrix of `run --pg-version` (empty otherwise), written as
/// `versions.md` and `versions.csv` and shown on top of comparison.html.
pub(crate) fn export_comparison(dir: &Path, runs: &[ComparedRun], versions: &[VersionGroup]) -> Result<Written> {
    if clients::all_clients(runs) {
        return export_client_comparison(dir, runs, versions);
    }
    let bars = |f: fn(&RunSummary) -> f64| {
        runs.iter().map(|r| (r.summary.scenario.clone(), f(&r.summary))).collect::<Vec<_>>()
    };
    let drawn: Result<Vec<Chart>> = [
        (
            "Jobs executed per second.",
            "compare-throughput",
            "Throughput",
            "jobs/s",
            bars(|s| s.throughput.jobs_per_sec),
        ),
        (
            "Executions beyond the first of each job.",
            "compare-duplicates",
            "Duplicate executions",
            "executions",
            bars(|s| s.executions.duplicate as f64),
        ),
        (
            "Claim statement latency, 99th percentile.",
            "compare-claim-p99",
            "Claim latency p99",
            "ms",
            bars(|s| s.latency_ms.claim.p99),
        ),
    ]
    .into_iter()
    .map(|(caption, name, title, y_label, bars)| charts::bars(&BarChart { title, y_label, bars }, name, caption))
    .collect();
    let summaries: Vec<RunSummary> = runs.iter().map(|r| r.summary.clone()).collect();
    let csv = export::one("comparison.csv", || summary_csv(&summaries));
    let chart_files = charts_output(&drawn);
    let html = export::one("comparison.html", || {
        let matrix = if versions.is_empty() { String::new() } else { self::versions::html(versions) };
        html::comparison(runs, &matrix, drawn.as_deref().unwrap_or_default())
    });
    let matrix = version_files(versions);
    export::write(dir, &[], &[&csv, &chart_files, &html, &matrix])
}

/// versions.md and versions.csv, nothing without a version matrix.
fn version_files(versions: &[VersionGroup]) -> Output<impl Fn() -> Result<Vec<File>> + '_> {
    Output("versions.md and versions.csv", move || {
        if versions.is_empty() {
            return Ok(Vec::new());
        }
        Ok(vec![
            File::new("versions.md", self::versions::markdown(versions)),
            File::new("versions.csv", self::versions::csv(versions)),
        ])
    })
}

/// The client comparison (`clients.rs`): `comparison.html` and `comparison.csv` one row per
/// client, the per-run CSV as `comparison-runs.csv`.
fn export_client_comparison(dir: &Path, runs: &[ComparedRun], versions: &[VersionGroup]) -> Result<Written> {
    let rows = clients::rows(runs);
    let drawn = clients::charts(&rows);
    let summaries: Vec<RunSummary> = runs.iter().map(|r| r.summary.clone()).collect();
    let csv = export::one("comparison.csv", || clients::csv(&rows));
    let runs_csv = export::one("comparison-runs.csv", || summary_csv(&summaries));
    let chart_files = charts_output(&drawn);
    let html = export::one("comparison.html", || {
        clients::html(&rows, drawn.as_deref().unwrap_or_default(), &html::runs_table(runs))
    });
    let matrix = version_files(versions);
    export::write(dir, &[], &[&csv, &runs_csv, &chart_files, &html, &matrix])
}

/// The exporter of drawn charts: `charts/<name>.svg` and `.png`, or the drawing's error.
pub fn charts_output(charts: &Result<Vec<Chart>>) -> Output<impl Fn() -> Result<Vec<File>> + '_> {
    Output("charts", move || match charts {
        Ok(c) => Ok(c.iter().flat_map(|c| c.files("charts")).map(|(p, b)| File::new(p, b)).collect()),
        Err(e) => Err(e.clone()),
    })
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
pub fn interval_log(samples: &[crate::collect::Sample], tag: &str) -> Result<Vec<u8>> {
    use hdrhistogram::serialization::V2DeflateSerializer;
    use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let mut buf = Vec::new();
    let mut ser = V2DeflateSerializer::new();
    let err = |e: String| Error::machine("writing the claim interval log", e);
    let mut w = IntervalLogWriterBuilder::new()
        .with_max_value_divisor(1000.0)
        .begin_log_with(&mut buf, &mut ser)
        .map_err(|e| err(e.to_string()))?;
    for chunk in sorted.chunk_by(|a, b| a.at_ms / 1000 == b.at_ms / 1000) {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds");
        for s in chunk {
            h.saturating_record(u64::from(s.us).max(1));
        }
        let second = std::time::Duration::from_secs(u64::from(chunk[0].at_ms / 1000));
        w.write_histogram(&h, second, std::time::Duration::from_secs(1), Tag::new(tag))
            .map_err(|e| err(e.to_string()))?;
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
        let samples =
            [(10, 100), (20, 200), (1500, 300), (3200, 400)].map(|(at_ms, us)| crate::collect::Sample { at_ms, us });
        let log = interval_log(&samples, "claim").unwrap();
        let intervals = hdrhistogram::serialization::interval_log::IntervalLogIterator::new(&log)
            .filter(|e| matches!(e, Ok(hdrhistogram::serialization::interval_log::LogEntry::Interval(_))))
            .count();
        assert_eq!(intervals, 3);
    }
}
