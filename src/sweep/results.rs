//! What a sweep measured per cell: the repeats' summaries, their medians, and
//! the few numbers the recommendation rules read (`Measured`).

use super::grid::Cell;
use crate::compare::stats::median;
use crate::model::summary::RunSummary;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// One cell after its repeats ran.
#[derive(Debug, Clone)]
pub(crate) struct CellResult {
    pub cell: Cell,
    /// The repeats that finished (an interrupted or failed repeat is left out).
    pub runs: Vec<RunSummary>,
    pub dirs: Vec<PathBuf>,
    /// Why a repeat did not finish.
    pub errors: Vec<String>,
    /// The plan's lease and heartbeat in the scenario's seconds (unscaled).
    pub lease_s: f64,
    pub heartbeat_s: Option<f64>,
}

impl CellResult {
    /// Every summary metric, as the median over the repeats.
    pub(crate) fn medians(&self) -> BTreeMap<String, f64> {
        let all: Vec<BTreeMap<String, f64>> = self.runs.iter().map(RunSummary::metrics).collect();
        let keys: std::collections::BTreeSet<&String> = all.iter().flat_map(|m| m.keys()).collect();
        keys.into_iter()
            .filter_map(|k| {
                let v: Vec<f64> = all.iter().filter_map(|m| m.get(k).copied()).collect();
                median(&v).map(|m| (k.clone(), m))
            })
            .collect()
    }

    /// Every repeat met the scenario's expectations.
    pub(crate) fn passed(&self) -> bool {
        !self.runs.is_empty() && self.errors.is_empty() && self.runs.iter().all(|r| r.passed)
    }

    /// The numbers the rules read: medians for speed, the worst repeat for
    /// correctness rates (one bad repeat is not averaged away). None without a finished repeat.
    pub(crate) fn measured(&self) -> Option<Measured> {
        if self.runs.is_empty() {
            return None;
        }
        let med = |f: &dyn Fn(&RunSummary) -> f64| median(&self.runs.iter().map(f).collect::<Vec<_>>()).unwrap_or(0.0);
        let worst = |f: &dyn Fn(&RunSummary) -> f64| self.runs.iter().map(f).fold(0f64, f64::max);
        Some(Measured {
            label: self.cell.label(),
            batch: self.runs[0].batch,
            workers: self.runs[0].workers,
            lease_s: self.lease_s,
            heartbeat_s: self.heartbeat_s,
            jobs_per_sec: med(&|r| r.throughput.jobs_per_sec),
            claim_p99_ms: med(&|r| r.latency_ms.claim.p99),
            work_p99_s: med(&|r| r.latency_ms.work.p99 / 1000.0),
            work_max_s: worst(&|r| r.latency_ms.work.max / 1000.0),
            expired_rate: worst(&expired_lease_rate),
            duplicate_rate: worst(&duplicate_rate),
            max_per_job: worst(&|r| r.executions.max_per_job as f64) as u64,
            dead: worst(&|r| r.jobs.dead as f64) as u64,
        })
    }
}

/// Leases that ran out before their job was completed, per lease granted
/// (claimed job): what the reaper took back or marked dead, or (inline
/// reclaim, no reaper) the executions that followed an expired lease.
pub(crate) fn expired_lease_rate(r: &RunSummary) -> f64 {
    let x = &r.executions;
    let expired = (r.reaper.reclaimed + r.reaper.marked_dead).max(x.duplicate_lease_expired + x.duplicate_after_crash);
    expired as f64 / r.claims.jobs.max(1) as f64
}

/// Executions beyond the first of each job, per execution.
pub(crate) fn duplicate_rate(r: &RunSummary) -> f64 {
    r.executions.duplicate as f64 / r.executions.total.max(1) as f64
}

/// One cell's numbers as the recommendation rules read them; times in the scenario's seconds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Measured {
    pub label: String,
    pub batch: u32,
    pub workers: u32,
    pub lease_s: f64,
    pub heartbeat_s: Option<f64>,
    pub jobs_per_sec: f64,
    pub claim_p99_ms: f64,
    pub work_p99_s: f64,
    pub work_max_s: f64,
    /// Fractions (0.005 = 0.5 %).
    pub expired_rate: f64,
    pub duplicate_rate: f64,
    pub max_per_job: u64,
    pub dead: u64,
}
