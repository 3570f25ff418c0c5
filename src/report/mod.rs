//! Exporters: the terminal table and the run folder (`summary.json`, the
//! claim-latency histogram, the resolved scenario). They read only the
//! `RunSummary` and never recompute a statistic.

pub mod build;
pub mod summary;
pub mod terminal;

use crate::error::{Error, Result};
use hdrhistogram::Histogram;
use std::path::Path;
use summary::{Percentiles, RunSummary};

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

/// Writes `summary.json` (and friends) into `dir`, creating it.
pub fn write_run_folder(
    dir: &Path,
    summary: &RunSummary,
    claim_hist: &Histogram<u64>,
    scenario_text: &str,
) -> Result<()> {
    let io = |what: &Path, e: std::io::Error| Error::infra(format!("cannot write {}: {e}", what.display()));
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let write = |name: &str, bytes: &[u8]| {
        let path = dir.join(name);
        std::fs::write(&path, bytes).map_err(|e| io(&path, e))
    };
    let json = serde_json::to_vec_pretty(summary).expect("summary serialises");
    write("summary.json", &json)?;
    write("scenario.toml", scenario_text.as_bytes())?;
    write("latency-claim.hgrm", percentile_distribution(claim_hist).as_bytes())?;
    Ok(())
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
