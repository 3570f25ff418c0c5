//! The time series: one row per sample interval, joining the Postgres
//! samples with the workers' per-second counters and claim latencies.
//! Written as `timeseries.csv` and read back by `queuebench report`, so the
//! charts need nothing else.

use crate::collect::{Second, WorkerStats};
use crate::error::{Access, Error, Result};
use crate::model::records::PgSample;
use crate::model::records::ProbeSample;
use crate::scenario::Plan;
use std::path::Path;

/// Column names first, then rows of the same width.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timeseries {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Timeseries {
    /// A numeric column by name (missing or unparsable cells are 0).
    pub fn column(&self, name: &str) -> Option<Vec<f64>> {
        let i = self.header.iter().position(|h| h == name)?;
        Some(self.rows.iter().map(|r| r.get(i).and_then(|v| v.parse().ok()).unwrap_or(0.0)).collect())
    }

    /// Column names that start with `prefix` (per-class columns), with the class names.
    pub fn classes(&self, prefix: &str) -> Vec<(String, String)> {
        self.header.iter().filter_map(|h| h.strip_prefix(prefix).map(|c| (h.clone(), c.to_string()))).collect()
    }

    /// The CSV text (`timeseries.csv`).
    pub fn to_csv(&self) -> String {
        let mut w = csv::Writer::from_writer(Vec::new());
        for r in std::iter::once(&self.header).chain(&self.rows) {
            let _ = w.write_record(r);
        }
        String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
    }

    pub fn read(path: &Path) -> Result<Timeseries> {
        let io = |e: csv::Error| Error::path(Access::Read, path, e);
        let mut r = csv::Reader::from_path(path).map_err(io)?;
        let header = r.headers().map_err(io)?.iter().map(String::from).collect();
        let rows = r
            .records()
            .map(|rec| rec.map(|r| r.iter().map(String::from).collect()))
            .collect::<std::result::Result<_, _>>()
            .map_err(io)?;
        Ok(Timeseries { header, rows })
    }
}

/// The columns every time series has, before the per-class ones.
pub const COLUMNS: [&str; 24] = [
    "t_s",
    "phase",
    "claims_per_s",
    "empty_claims_per_s",
    "executions_per_s",
    "completions_per_s",
    "claim_p50_ms",
    "claim_p99_ms",
    "claim_max_ms",
    "queued",
    "running",
    "done",
    "dead",
    "n_live_tup",
    "n_dead_tup",
    "vacuum_count",
    "autovacuum_count",
    "table_bytes",
    "index_bytes",
    "oldest_xact_s",
    "xmin_age_xids",
    "wait_events",
    "probe_buffers",
    "probe_exec_ms",
];

/// `claim_samples`: (ms since start, µs) of every claim statement.
pub fn build(
    plan: &Plan,
    samples: &[PgSample],
    stats: &WorkerStats,
    claim_samples: &[(u32, u32)],
    probes: &[ProbeSample],
) -> Timeseries {
    let classes: Vec<&str> = plan.load.class_names().collect();
    let mut header: Vec<String> = COLUMNS.iter().map(|c| c.to_string()).collect();
    for c in &classes {
        header.push(format!("queued_{c}"));
    }
    for c in &classes {
        header.push(format!("oldest_ready_s_{c}"));
    }
    let mut claims: Vec<(u32, u32)> = claim_samples.to_vec();
    claims.sort_unstable();
    let interval_ms = plan.run.sample_interval.map_or(0, |d| d.as_millis() as u64);
    let mut rows = Vec::with_capacity(samples.len());
    // Each row covers the time since the previous sample (the sampler stretches its interval
    // when samples are slow), the first one interval before it.
    let mut prev: Option<u64> = None;
    for s in samples {
        let (from, to) = (prev.unwrap_or(s.t_ms.saturating_sub(interval_ms)).min(s.t_ms), s.t_ms);
        prev = Some(s.t_ms);
        let secs = (to - from) as f64 / 1000.0;
        let counts = sum_seconds(&stats.per_second, from, to);
        let lo = claims.partition_point(|c| u64::from(c.0) < from);
        let hi = claims.partition_point(|c| u64::from(c.0) < to);
        let mut window: Vec<u32> = claims[lo..hi].iter().map(|c| c.1).collect();
        window.sort_unstable();
        let q =
            |p: f64| window.get(((window.len() as f64 - 1.0) * p).round() as usize).map_or(0.0, |v| *v as f64 / 1000.0);
        let phase = plan.load.phase_name(std::time::Duration::from_millis(s.t_ms));
        let mut row: Vec<String> = vec![
            format!("{:.3}", s.t_ms as f64 / 1000.0),
            phase.to_string(),
            format!("{:.1}", counts.claims as f64 / secs),
            format!("{:.1}", counts.empty_claims as f64 / secs),
            format!("{:.1}", counts.executions as f64 / secs),
            format!("{:.1}", counts.completions as f64 / secs),
            format!("{:.3}", q(0.5)),
            format!("{:.3}", q(0.99)),
            format!("{:.3}", q(1.0)),
        ];
        row.extend(
            [
                s.queued,
                s.running,
                s.done,
                s.dead,
                s.n_live_tup,
                s.n_dead_tup,
                s.vacuum_count,
                s.autovacuum_count,
                s.table_bytes,
                s.index_bytes,
            ]
            .iter()
            .map(|v| v.to_string()),
        );
        row.push(format!("{:.3}", s.oldest_xact_s));
        row.push(s.xmin_age.to_string());
        row.push(s.waits.clone());
        // The latest claim-plan probe at or before this sample.
        let probe = probes.iter().rev().find(|p| p.t_ms <= s.t_ms);
        row.push(probe.map_or(String::new(), |p| p.buffers.to_string()));
        row.push(probe.map_or(String::new(), |p| format!("{:.3}", p.exec_ms)));
        row.extend(s.per_class.iter().map(|(n, _)| n.to_string()));
        row.extend(s.per_class.iter().map(|(_, age)| format!("{age:.3}")));
        rows.push(row);
    }
    Timeseries { header, rows }
}

/// Per-second counts over [from_ms, to_ms), prorating partial seconds.
fn sum_seconds(per_second: &[Second], from_ms: u64, to_ms: u64) -> Second {
    let mut out = Second::default();
    let mut t = from_ms;
    while t < to_ms {
        let sec = (t / 1000) as usize;
        let end = ((sec as u64 + 1) * 1000).min(to_ms);
        let part = (end - t) as f64 / 1000.0;
        if let Some(s) = per_second.get(sec) {
            let take = |v: u32| (v as f64 * part).round() as u32;
            out.claims += take(s.claims);
            out.empty_claims += take(s.empty_claims);
            out.executions += take(s.executions);
            out.completions += take(s.completions);
        }
        t = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_round_trips_and_columns_read_back() {
        let ts = Timeseries {
            header: vec!["t_s".into(), "queued_high".into(), "wait_events".into()],
            rows: vec![vec!["1.000".into(), "5".into(), "Lock:tuple=2 IO:DataFileRead=1".into()]],
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("timeseries.csv");
        std::fs::write(&path, ts.to_csv()).unwrap();
        let back = Timeseries::read(&path).unwrap();
        assert_eq!(back, ts);
        assert_eq!(back.column("queued_high").unwrap(), [5.0]);
        assert_eq!(back.classes("queued_"), [("queued_high".to_string(), "high".to_string())]);
    }

    #[test]
    fn whole_seconds_sum_and_partial_ones_prorate() {
        let secs = vec![Second { claims: 10, empty_claims: 0, executions: 4, completions: 2, drained_checks: 0 }; 3];
        let s = sum_seconds(&secs, 1000, 2000);
        assert_eq!((s.claims, s.executions), (10, 4));
        let s = sum_seconds(&secs, 500, 1500);
        assert_eq!(s.claims, 10);
    }
}
