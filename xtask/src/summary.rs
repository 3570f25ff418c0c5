//! summary.json read one way: into queuebench's own `RunSummary`, its numbers by the metric names
//! `--expect` and `compare` use (`throughput.jobs_per_sec`, `latency_ms.claim.p99`).

use crate::error::{Error, Result};
use queuebench::model::summary::RunSummary;
use std::path::Path;

/// The summary of the run folder `dir`.
pub fn load(dir: &Path) -> Result<RunSummary> {
    let path = dir.join("summary.json");
    let text = std::fs::read_to_string(&path).map_err(Error::io(&path))?;
    serde_json::from_str(&text).map_err(|source| Error::Summary { path, source })
}

/// One metric of a summary by its dotted name; None when the run did not measure it.
pub fn metric(s: &RunSummary, name: &str) -> Option<f64> {
    s.metrics().get(name).copied()
}

/// The summaries of a `--repeat N` run folder (`repeat-1/` … `repeat-N/`), in order; the folder
/// itself when it holds one run.
pub fn load_repeats(dir: &Path) -> Result<Vec<RunSummary>> {
    if dir.join("summary.json").is_file() {
        return Ok(vec![load(dir)?]);
    }
    let mut out = Vec::new();
    for k in 1.. {
        let d = dir.join(format!("repeat-{k}"));
        if !d.is_dir() {
            break;
        }
        out.push(load(&d)?);
    }
    if out.is_empty() {
        return Err(Error::Run(format!("{}: no summary.json and no repeat-*/ folders", dir.display())));
    }
    Ok(out)
}

/// One metric over several runs, the runs that did not measure it left out.
pub fn metric_of_all(runs: &[RunSummary], name: &str) -> Vec<f64> {
    runs.iter().filter_map(|s| metric(s, name)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_reads_back_by_metric_name_and_repeats_in_order() {
        let dir = tempfile::tempdir().unwrap();
        for (k, jps) in [(1, 100.0), (2, 300.0), (3, 200.0)] {
            let d = dir.path().join(format!("repeat-{k}"));
            std::fs::create_dir(&d).unwrap();
            let mut s = RunSummary::default();
            s.throughput.jobs_per_sec = jps;
            std::fs::write(d.join("summary.json"), serde_json::to_string(&s).unwrap()).unwrap();
        }
        let runs = load_repeats(dir.path()).unwrap();
        assert_eq!(metric_of_all(&runs, "throughput.jobs_per_sec"), vec![100.0, 300.0, 200.0]);
        assert_eq!(metric(&runs[0], "no.such.metric"), None);
        let empty = tempfile::tempdir().unwrap();
        assert!(load_repeats(empty.path()).is_err());
        std::fs::write(empty.path().join("summary.json"), "{not json").unwrap();
        assert!(matches!(load(empty.path()), Err(Error::Summary { .. })));
    }
}
