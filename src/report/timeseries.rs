//! The time series, two tables with their own clocks:
//! - `timeseries.csv`, the harness's own: one row per `run.series_interval` (1 s unless set)
//!   for every interval of the run, from the workers' per-second counters and every claim's
//!   latency — claims, empty claims, executions and completions per second, claim p50/p99/max
//!   (empty in an interval with no claim: a gap, not a zero);
//! - `samples.csv`, the Postgres sampler's: one row per sample at the time it was taken (the
//!   sampler stretches its interval on big tables, and skips while the server is down).
//!
//! Both are read back by `queuebench report`, so the charts need nothing else.

use crate::collect::{Sample, Second, WorkerStats};
use crate::error::{Access, Error, Result};
use crate::model::records::PgSample;
use crate::model::records::ProbeSample;
use crate::scenario::Plan;
use std::path::Path;
use std::time::Duration;

/// Column names first, then rows of the same width.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timeseries {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Timeseries {
    /// A numeric column by name; an empty cell (nothing measured) is NaN, an unparsable one 0.
    pub fn column(&self, name: &str) -> Option<Vec<f64>> {
        let i = self.header.iter().position(|h| h == name)?;
        let cell = |v: &str| if v.is_empty() { f64::NAN } else { v.parse().unwrap_or(0.0) };
        Some(self.rows.iter().map(|r| r.get(i).map_or(f64::NAN, |v| cell(v))).collect())
    }

    /// Column names that start with `prefix` (per-class columns), with the class names.
    pub fn classes(&self, prefix: &str) -> Vec<(String, String)> {
        self.header.iter().filter_map(|h| h.strip_prefix(prefix).map(|c| (h.clone(), c.to_string()))).collect()
    }

    /// The CSV text.
    pub fn to_csv(&self) -> String {
        let mut w = csv::Writer::from_writer(Vec::new());
        for r in std::iter::once(&self.header).chain(&self.rows) {
            let _ = w.write_record(r);
        }
        String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
    }

    /// `name` in the run folder `dir`, read as a run folder's file ([`crate::files::read_in_folder`]).
    pub fn read_in(dir: &Path, name: &str) -> Result<Timeseries> {
        let path = dir.join(name);
        let io = |e: csv::Error| Error::path(Access::Read, &path, e);
        let bytes = crate::files::read_in_folder(dir, name, crate::files::Kind::Summary)?;
        let mut r = csv::Reader::from_reader(bytes.as_slice());
        let header = r.headers().map_err(io)?.iter().map(String::from).collect();
        let rows = r
            .records()
            .map(|rec| rec.map(|r| r.iter().map(String::from).collect()))
            .collect::<std::result::Result<_, _>>()
            .map_err(io)?;
        Ok(Timeseries { header, rows })
    }
}

/// The harness's columns (`timeseries.csv`); `t_s` is the end of the interval.
pub(crate) const HARNESS: [&str; 9] = [
    "t_s",
    "phase",
    "claims_per_s",
    "empty_claims_per_s",
    "executions_per_s",
    "completions_per_s",
    "claim_p50_ms",
    "claim_p99_ms",
    "claim_max_ms",
];

/// The sampler's columns (`samples.csv`), before the per-class ones; `t_s` is when it was taken.
pub(crate) const DATABASE: [&str; 17] = [
    "t_s",
    "phase",
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

/// The harness's series: a row for every `interval` (whole seconds) from the start to
/// `duration`, the last one possibly shorter. `claim_samples`: every claim statement's latency.
pub(crate) fn harness(plan: &Plan, stats: &WorkerStats, claim_samples: &[Sample], duration: Duration) -> Timeseries {
    let header = HARNESS.iter().map(|c| c.to_string()).collect();
    let step = plan.run.series_interval.as_millis().max(1000) as u64 / 1000 * 1000;
    let end = duration.as_millis() as u64;
    let mut claims: Vec<Sample> = claim_samples.to_vec();
    claims.sort_unstable();
    let mut rows = Vec::new();
    let mut from = 0;
    while from < end {
        let to = (from + step).min(end);
        let counts = sum_seconds(&stats.per_second, from, to);
        let secs = (to - from) as f64 / 1000.0;
        let lo = claims.partition_point(|c| u64::from(c.at_ms) < from);
        let hi = claims.partition_point(|c| u64::from(c.at_ms) < to);
        let mut window: Vec<u32> = claims[lo..hi].iter().map(|c| c.us).collect();
        window.sort_unstable();
        let q = |p: f64| match window.len() {
            0 => String::new(),
            n => format!("{:.3}", window[((n as f64 - 1.0) * p).round() as usize] as f64 / 1000.0),
        };
        let phase = plan.load.phase_name(Duration::from_millis(from));
        rows.push(vec![
            format!("{:.3}", to as f64 / 1000.0),
            phase.to_string(),
            format!("{:.1}", counts.claims as f64 / secs),
            format!("{:.1}", counts.empty_claims as f64 / secs),
            format!("{:.1}", counts.executions as f64 / secs),
            format!("{:.1}", counts.completions as f64 / secs),
            q(0.5),
            q(0.99),
            q(1.0),
        ]);
        from = to;
    }
    Timeseries { header, rows }
}

/// The sampler's series: a row per sample, with the latest claim-plan probe at or before it.
pub(crate) fn database(plan: &Plan, samples: &[PgSample], probes: &[ProbeSample]) -> Timeseries {
    let classes: Vec<&str> = plan.load.class_names().collect();
    let mut header: Vec<String> = DATABASE.iter().map(|c| c.to_string()).collect();
    header.extend(classes.iter().map(|c| format!("queued_{c}")));
    header.extend(classes.iter().map(|c| format!("oldest_ready_s_{c}")));
    let rows = samples
        .iter()
        .map(|s| {
            let phase = plan.load.phase_name(Duration::from_millis(s.t_ms));
            let mut row = vec![format!("{:.3}", s.t_ms as f64 / 1000.0), phase.to_string()];
            let counts = [
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
            ];
            row.extend(counts.iter().map(|v| v.to_string()));
            row.push(format!("{:.3}", s.oldest_xact_s));
            row.push(s.xmin_age.to_string());
            row.push(s.waits.clone());
            let probe = probes.iter().rev().find(|p| p.t_ms <= s.t_ms);
            row.push(probe.map_or(String::new(), |p| p.buffers.to_string()));
            row.push(probe.map_or(String::new(), |p| format!("{:.3}", p.exec_ms)));
            // Without the adapter's depth query nothing was counted: empty cells, not zeros.
            match plan.adapter.observe.depth {
                Some(_) => {
                    row.extend(s.per_class.iter().map(|(n, _)| n.to_string()));
                    row.extend(s.per_class.iter().map(|(_, age)| format!("{age:.3}")));
                }
                None => row.extend(std::iter::repeat_n(String::new(), 2 * s.per_class.len())),
            }
            row
        })
        .collect();
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
        std::fs::write(dir.path().join("timeseries.csv"), ts.to_csv()).unwrap();
        let back = Timeseries::read_in(dir.path(), "timeseries.csv").unwrap();
        assert_eq!(back, ts);
        assert_eq!(back.column("queued_high").unwrap(), [5.0]);
        assert_eq!(back.classes("queued_"), [("queued_high".to_string(), "high".to_string())]);
    }

    fn plan(series_interval: &str) -> Plan {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.toml");
        std::fs::write(&path, "name = \"x\"\n[jobs]\npreload = 1\n").unwrap();
        let set = format!("run.series_interval={series_interval}");
        crate::scenario::plan_from_file(&path, &[set], None).unwrap()
    }

    #[test]
    fn the_harness_series_has_a_row_for_every_second_and_gaps_without_claims() {
        let mut stats = WorkerStats {
            per_second: vec![Second { claims: 4, completions: 4, ..Second::default() }; 5],
            ..Default::default()
        };
        stats.per_second[2] = Second::default();
        // Claims in seconds 0, 1, 3 and 4; none in second 2.
        let claims = [(100, 2000), (900, 4000), (1500, 1000), (3100, 3000), (4999, 5000)]
            .map(|(at_ms, us)| Sample { at_ms, us });
        let ts = harness(&plan("1s"), &stats, &claims, Duration::from_millis(4500));
        assert_eq!(ts.column("t_s").unwrap(), [1.0, 2.0, 3.0, 4.0, 4.5], "every second, the last one short");
        let p50 = ts.column("claim_p50_ms").unwrap();
        assert!(p50[2].is_nan(), "no claim in the third second: a gap, not a zero");
        assert_eq!(p50[1], 1.0);
        assert_eq!(ts.column("claim_max_ms").unwrap()[0], 4.0);
        assert_eq!(ts.column("completions_per_s").unwrap()[..3], [4.0, 4.0, 0.0]);
        assert_eq!(ts.column("completions_per_s").unwrap()[4], 4.0, "half a second: 2 completions, 4/s");
        let wide = harness(&plan("2s"), &stats, &claims, Duration::from_millis(4500));
        assert_eq!(wide.column("t_s").unwrap(), [2.0, 4.0, 4.5]);
        assert_eq!(wide.column("claims_per_s").unwrap()[1], 2.0);
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
