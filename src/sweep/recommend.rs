//! The recommendation, from the lease-sizing rules applied to what the sweep
//! measured. Every line names its rule and the numbers that produced it;
//! when no cell qualifies it says so instead of guessing.
//!
//! - lease: 2–3 × work p99, at least 30 s, at most 5 min; within that range
//!   the shortest swept lease whose expired-lease rate stayed under 0.5 %
//!   (a shorter lease recovers crashed work sooner).
//! - heartbeat: every lease ÷ 3 (two missed beats still leave a third of the
//!   lease; a worker stops after two failed heartbeats); required,
//!   with checkpoints, when 2 × p99 passes the 5 min cap or an execution
//!   outlived the lease.
//! - max attempts: reclaims consume attempts, so the budget
//!   covers the most executions one job needed at that lease plus 2 retries
//!   for transient errors, at least 3.
//! - batch: among cells whose claim p99 < 100 ms and expired-lease rate
//!   < 0.5 %, the smallest batch within 5 % of the best of their throughputs.

use super::results::Measured;
use crate::compare::stats::median;
use std::collections::BTreeMap;

pub(crate) const MIN_LEASE_S: f64 = 30.0;
pub(crate) const MAX_LEASE_S: f64 = 300.0;
pub(crate) const MAX_EXPIRED: f64 = 0.005;
pub(crate) const MAX_CLAIM_P99_MS: f64 = 100.0;
pub(crate) const WITHIN_BEST: f64 = 0.05;

/// One recommendation: a value (None: no cell qualified), the rule, the evidence.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Line {
    pub topic: &'static str,
    pub value: Option<String>,
    pub rule: String,
    pub evidence: String,
}

/// What the sweep set out to measure, so a line can tell a value that was never swept from
/// one whose cells did not finish (an interrupted sweep, cells that failed).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Planned {
    /// Cells in the grid.
    pub cells: usize,
    /// The cells that ran to their end (finished or failed) before the sweep stopped.
    pub ran: usize,
    /// The distinct batch sizes of the grid's cells, ascending.
    pub batches: Vec<u32>,
    /// Ctrl-C or SIGTERM stopped the sweep before every cell ran.
    pub interrupted: bool,
}

impl Planned {
    /// `interrupted after 3 of 8 cells`: what stopped the sweep, for the lines that lack cells.
    fn stopped(&self) -> String {
        format!(
            "the sweep was interrupted after {} of {} cells; sweep.csv, runs.csv and sweep.html hold the cells that \
             finished",
            self.ran, self.cells
        )
    }
}

/// The recommendation from the cells alone (as if every planned cell was measured).
#[cfg(test)]
pub(crate) fn recommend(cells: &[Measured]) -> Vec<Line> {
    recommend_for(cells, &Planned::default())
}

/// The recommendation from the measured cells, told apart from what was planned.
pub(crate) fn recommend_for(cells: &[Measured], planned: &Planned) -> Vec<Line> {
    if cells.is_empty() {
        let evidence = if planned.interrupted {
            format!("{} before any cell finished", planned.stopped().split(';').next().unwrap_or_default())
        } else {
            "no cell finished".into()
        };
        return vec![Line { topic: "all", value: None, rule: "every rule needs measured cells".into(), evidence }];
    }
    let (lease_line, lease) = lease(cells);
    let p99 = work_p99(cells);
    let work_max = cells.iter().map(|c| c.work_max_s).fold(0.0, f64::max);
    vec![lease_line, heartbeat(lease, p99, work_max), max_attempts(cells, lease), batch(cells, planned)]
}

fn work_p99(cells: &[Measured]) -> f64 {
    median(&cells.iter().map(|c| c.work_p99_s).collect::<Vec<_>>()).unwrap_or(0.0)
}

pub(crate) fn pct(f: f64) -> String {
    format!("{:.2} %", f * 100.0)
}

/// Three significant digits at most: 1234 → "1234", 12.34 → "12.3", 0.0123 → "0.0123".
pub(crate) fn num(v: f64) -> String {
    let digits = if v.abs() >= 100.0 || v == 0.0 { 0 } else { (2.0 - v.abs().log10().floor()).max(0.0) as usize };
    format!("{v:.digits$}")
}

pub(crate) fn secs(s: f64) -> String {
    if s >= 100.0 || s.fract() == 0.0 {
        format!("{s:.0} s")
    } else if s >= 10.0 {
        format!("{s:.1} s")
    } else {
        format!("{} s", num(s))
    }
}

/// Cells grouped by lease (seconds, as the key in ms): the worst expired and duplicate rates at each.
fn by_lease(cells: &[Measured]) -> BTreeMap<u64, (f64, f64)> {
    let mut out: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
    for c in cells {
        let e = out.entry((c.lease_s * 1000.0).round() as u64).or_default();
        e.0 = e.0.max(c.expired_rate);
        e.1 = e.1.max(c.duplicate_rate);
    }
    out
}

fn lease(cells: &[Measured]) -> (Line, f64) {
    let p99 = work_p99(cells);
    let lo = (2.0 * p99).clamp(MIN_LEASE_S, MAX_LEASE_S);
    let hi = (3.0 * p99).clamp(MIN_LEASE_S, MAX_LEASE_S);
    let rule = format!(
        "lease = 2–3 × work p99, at least {}, at most {}; the shortest swept lease in that range with an \
         expired-lease rate under {}",
        secs(MIN_LEASE_S),
        secs(MAX_LEASE_S),
        pct(MAX_EXPIRED)
    );
    let leases = by_lease(cells);
    let swept: Vec<String> = leases
        .iter()
        .map(|(ms, (e, d))| format!("{} → {} expired, {} duplicates", secs(*ms as f64 / 1000.0), pct(*e), pct(*d)))
        .collect();
    let in_range: Vec<(f64, f64)> = leases
        .iter()
        .map(|(ms, (e, _))| (*ms as f64 / 1000.0, *e))
        .filter(|(l, _)| *l >= lo - 0.5 && *l <= hi + 0.5)
        .collect();
    let mut evidence = format!(
        "work p99 {} (median of {} cells) → range {}–{}; measured: {}",
        secs(p99),
        cells.len(),
        secs(lo),
        secs(hi),
        swept.join("; ")
    );
    let chosen = in_range.iter().find(|(_, e)| *e < MAX_EXPIRED).map(|(l, _)| *l);
    let value = match chosen {
        Some(l) => {
            evidence.push_str(&format!("; {} is the shortest in range under {}", secs(l), pct(MAX_EXPIRED)));
            let shorter: Vec<String> = leases
                .iter()
                .map(|(ms, (e, _))| (*ms as f64 / 1000.0, *e))
                .filter(|(x, e)| *x < lo - 0.5 && *e < MAX_EXPIRED)
                .map(|(x, _)| secs(x))
                .collect();
            if !shorter.is_empty() {
                evidence.push_str(&format!(
                    " ({} also stayed under it, with less than 2 × p99 of headroom for slower days)",
                    shorter.join(", ")
                ));
            }
            l
        }
        None => {
            let why = if in_range.is_empty() {
                "no swept lease lies in the range".to_string()
            } else {
                format!(
                    "every swept lease in the range had an expired-lease rate of {} or more: look for worker pauses, \
                     slow dependencies or database stalls before lengthening it",
                    pct(MAX_EXPIRED)
                )
            };
            evidence
                .push_str(&format!("; not confirmed by the sweep: {why}; the rule alone gives {}", secs(hi.ceil())));
            hi.ceil()
        }
    };
    let capped = 2.0 * p99 > MAX_LEASE_S;
    let value_text = if capped { format!("{} (the cap; work needs heartbeats)", secs(value)) } else { secs(value) };
    (Line { topic: "lease", value: Some(value_text), rule, evidence }, value)
}

fn heartbeat(lease: f64, p99: f64, work_max: f64) -> Line {
    let every = (lease / 3.0).floor().max(1.0);
    let required = 2.0 * p99 > MAX_LEASE_S || work_max > lease;
    let rule = format!(
        "heartbeat every lease ÷ 3 (two missed beats still leave a third of the lease; stop after two \
         failed beats); required with checkpoints when work outgrows the {} cap",
        secs(MAX_LEASE_S)
    );
    let evidence =
        format!("lease {}; work p99 {}, longest measured execution {}", secs(lease), secs(p99), secs(work_max));
    let value = if required {
        format!("every {} (required: work can outlive the lease; checkpoint long work)", secs(every))
    } else {
        format!("every {} (recommended: every measured execution fitted the lease)", secs(every))
    };
    Line { topic: "heartbeat", value: Some(value), rule, evidence }
}

fn max_attempts(cells: &[Measured], lease: f64) -> Line {
    // The cells at the chosen lease, or failing that at the nearest longer one, or all.
    let at = |l: f64| cells.iter().filter(|c| (c.lease_s - l).abs() < 0.5).collect::<Vec<_>>();
    let nearest = cells.iter().map(|c| c.lease_s).filter(|l| *l >= lease - 0.5).fold(f64::INFINITY, f64::min);
    let mut these = at(lease);
    if these.is_empty() && nearest.is_finite() {
        these = at(nearest);
    }
    if these.is_empty() {
        these = cells.iter().collect();
    }
    let most = these.iter().map(|c| c.max_per_job).max().unwrap_or(1);
    let expired = these.iter().map(|c| c.expired_rate).fold(0.0, f64::max);
    let dead = these.iter().map(|c| c.dead).max().unwrap_or(0);
    let n = (most + 2).max(3);
    Line {
        topic: "max attempts",
        value: Some(n.to_string()),
        rule: "a reclaim consumes an attempt, so the budget covers the most executions one job needed plus \
               2 retries for transient errors, at least 3"
            .into(),
        evidence: format!(
            "at lease {} ({} cell{}): at most {most} executions for one job, expired-lease rate {}, {dead} dead; \
             an honest job ends dead by expiries alone with chance ≈ {:.1e} (a common default is 8)",
            secs(these[0].lease_s),
            these.len(),
            if these.len() == 1 { "" } else { "s" },
            pct(expired),
            expired.powi(n as i32)
        ),
    }
}

fn batch(cells: &[Measured], planned: &Planned) -> Line {
    let rule = format!(
        "the smallest batch within {:.0} % of the best throughput among cells with claim p99 < {} ms and \
         expired-lease rate < {}",
        WITHIN_BEST * 100.0,
        MAX_CLAIM_P99_MS,
        pct(MAX_EXPIRED)
    );
    let mut batches: Vec<u32> = cells.iter().map(|c| c.batch).collect();
    batches.sort_unstable();
    batches.dedup();
    if batches.len() < 2 {
        let measured = batches.first().copied().unwrap_or(1);
        let swept = || planned.batches.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
        let evidence = if planned.batches.len() < 2 {
            format!(
                "batch was not swept (every cell ran batch {measured}); sweep it, e.g. --set workers.batch=1,10,20,100"
            )
        } else if planned.interrupted {
            format!(
                "{}: only batch {measured} of the swept {} was measured; run the sweep again for a batch \
                 recommendation",
                planned.stopped(),
                swept()
            )
        } else {
            format!(
                "only the cells of batch {measured} of the swept {} finished a run (the others failed: see their \
                 errors); nothing to compare",
                swept()
            )
        };
        return Line { topic: "batch", value: None, rule, evidence };
    }
    let slow = cells.iter().filter(|c| c.claim_p99_ms >= MAX_CLAIM_P99_MS).count();
    let expiring = cells.iter().filter(|c| c.expired_rate >= MAX_EXPIRED).count();
    let ok: Vec<&Measured> =
        cells.iter().filter(|c| c.claim_p99_ms < MAX_CLAIM_P99_MS && c.expired_rate < MAX_EXPIRED).collect();
    let Some(best) = ok.iter().max_by(|a, b| a.jobs_per_sec.total_cmp(&b.jobs_per_sec)) else {
        return Line {
            topic: "batch",
            value: None,
            rule,
            evidence: format!(
                "no cell qualifies: {slow} of {} had claim p99 ≥ {} ms, {expiring} an expired-lease rate ≥ {}",
                cells.len(),
                MAX_CLAIM_P99_MS,
                pct(MAX_EXPIRED)
            ),
        };
    };
    let floor = best.jobs_per_sec * (1.0 - WITHIN_BEST);
    let pick = ok
        .iter()
        .filter(|c| c.jobs_per_sec >= floor)
        .min_by(|a, b| a.batch.cmp(&b.batch).then(b.jobs_per_sec.total_cmp(&a.jobs_per_sec)))
        .expect("the best cell is within 5 % of itself");
    Line {
        topic: "batch",
        value: Some(pick.batch.to_string()),
        rule,
        evidence: format!(
            "{} of {} cells qualify ({slow} too slow to claim, {expiring} expiring); best {} jobs/s at [{}]; \
             batch {} reached {} jobs/s (claim p99 {:.1} ms, {} expired) at [{}]",
            ok.len(),
            cells.len(),
            num(best.jobs_per_sec),
            best.label,
            pick.batch,
            num(pick.jobs_per_sec),
            pick.claim_p99_ms,
            pct(pick.expired_rate),
            pick.label
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(batch: u32, lease_s: f64, jobs_per_sec: f64, claim_p99_ms: f64, expired_rate: f64) -> Measured {
        Measured {
            label: format!("batch={batch} lease={lease_s}"),
            batch,
            workers: 4,
            lease_s,
            heartbeat_s: None,
            jobs_per_sec,
            claim_p99_ms,
            work_p99_s: 70.0,
            work_max_s: 150.0,
            expired_rate,
            duplicate_rate: expired_rate,
            max_per_job: 1,
            dead: 0,
        }
    }

    fn line<'a>(lines: &'a [Line], topic: &str) -> &'a Line {
        lines.iter().find(|l| l.topic == topic).unwrap()
    }

    #[test]
    fn numbers_keep_three_significant_digits() {
        assert_eq!(
            [num(1234.4), num(12.34), num(1.234), num(0.01234), num(0.0)],
            ["1234", "12.3", "1.23", "0.0123", "0"]
        );
    }

    #[test]
    fn lease_is_the_shortest_in_range_under_half_a_percent() {
        // p99 70 s → range 140–210 s; 90 s is out of range, 140 s expires too often, 180 s qualifies.
        let cells =
            [cell(1, 90.0, 100.0, 5.0, 0.0), cell(1, 140.0, 100.0, 5.0, 0.006), cell(1, 180.0, 100.0, 5.0, 0.001)];
        let l = recommend(&cells);
        assert_eq!(line(&l, "lease").value.as_deref(), Some("180 s"));
        assert!(line(&l, "lease").evidence.contains("range 140 s–210 s"), "{:?}", l[0]);
        assert_eq!(line(&l, "heartbeat").value.as_deref().unwrap().split(' ').nth(1), Some("60"));
    }

    #[test]
    fn a_shorter_lease_under_the_limit_is_mentioned_not_chosen() {
        let cells = [cell(1, 90.0, 100.0, 5.0, 0.002), cell(1, 140.0, 100.0, 5.0, 0.001)];
        let lease = line(&recommend(&cells), "lease").clone();
        assert_eq!(lease.value.as_deref(), Some("140 s"));
        assert!(lease.evidence.contains("(90 s also stayed under it"), "{lease:?}");
    }

    #[test]
    fn lease_falls_back_to_the_rule_and_says_so() {
        let cells = [cell(1, 140.0, 100.0, 5.0, 0.02), cell(1, 210.0, 100.0, 5.0, 0.01)];
        let lease = line(&recommend(&cells), "lease").clone();
        assert_eq!(lease.value.as_deref(), Some("210 s"));
        assert!(lease.evidence.contains("not confirmed") && lease.evidence.contains("worker pauses"), "{lease:?}");
        let cells = [cell(1, 30.0, 100.0, 5.0, 0.0)];
        assert!(line(&recommend(&cells), "lease").evidence.contains("no swept lease lies in the range"));
    }

    #[test]
    fn lease_bounds_30s_and_5min_heartbeat_required_above() {
        let mut short = cell(1, 30.0, 100.0, 5.0, 0.0);
        (short.work_p99_s, short.work_max_s) = (2.0, 4.0);
        let l = recommend(&[short]);
        assert_eq!(line(&l, "lease").value.as_deref(), Some("30 s"));
        assert!(line(&l, "heartbeat").value.as_deref().unwrap().contains("recommended"));
        let mut long = cell(1, 300.0, 100.0, 5.0, 0.0);
        (long.work_p99_s, long.work_max_s) = (200.0, 400.0);
        let l = recommend(&[long]);
        assert!(line(&l, "lease").value.as_deref().unwrap().starts_with("300 s (the cap"), "{l:?}");
        assert!(line(&l, "heartbeat").value.as_deref().unwrap().contains("required"));
    }

    #[test]
    fn max_attempts_covers_the_reclaims_seen() {
        let mut c = cell(1, 180.0, 100.0, 5.0, 0.001);
        c.max_per_job = 3;
        assert_eq!(line(&recommend(&[c.clone()]), "max attempts").value.as_deref(), Some("5"));
        c.max_per_job = 1;
        assert_eq!(line(&recommend(&[c]), "max attempts").value.as_deref(), Some("3"));
    }

    #[test]
    fn batch_is_the_smallest_within_five_percent() {
        let cells = [
            cell(1, 180.0, 500.0, 5.0, 0.0),
            cell(10, 180.0, 960.0, 8.0, 0.0),
            cell(20, 180.0, 1000.0, 9.0, 0.0),
            cell(100, 180.0, 1500.0, 150.0, 0.0), // fastest, but claim p99 over 100 ms
            cell(50, 180.0, 2000.0, 20.0, 0.01),  // fastest, but expiring
        ];
        let b = line(&recommend(&cells), "batch").clone();
        assert_eq!(b.value.as_deref(), Some("10"), "{b:?}");
        assert!(b.evidence.contains("3 of 5 cells qualify"), "{b:?}");
    }

    #[test]
    fn batch_says_when_nothing_qualifies_or_nothing_was_swept() {
        let cells = [cell(1, 180.0, 500.0, 150.0, 0.0), cell(10, 180.0, 900.0, 20.0, 0.02)];
        let b = line(&recommend(&cells), "batch").clone();
        assert!(b.value.is_none() && b.evidence.contains("no cell qualifies"), "{b:?}");
        let b = line(&recommend(&[cell(1, 180.0, 500.0, 5.0, 0.0)]), "batch").clone();
        assert!(b.value.is_none() && b.evidence.contains("not swept"), "{b:?}");
    }

    #[test]
    fn an_interrupted_batch_sweep_says_it_was_interrupted_not_that_batch_was_not_swept() {
        let planned = Planned { cells: 4, ran: 1, batches: vec![1, 10, 20, 100], interrupted: true };
        let b = line(&recommend_for(&[cell(1, 180.0, 500.0, 5.0, 0.0)], &planned), "batch").clone();
        assert!(b.value.is_none() && !b.evidence.contains("not swept"), "{b:?}");
        assert!(b.evidence.starts_with("the sweep was interrupted after 1 of 4 cells"), "{b:?}");
        assert!(b.evidence.contains("sweep.csv") && b.evidence.contains("the swept 1, 10, 20, 100"), "{b:?}");
        let all = recommend_for(&[], &planned);
        assert_eq!(all[0].evidence, "the sweep was interrupted after 1 of 4 cells before any cell finished");
        let failed = Planned { interrupted: false, ran: 4, ..planned };
        let b = line(&recommend_for(&[cell(1, 180.0, 500.0, 5.0, 0.0)], &failed), "batch").clone();
        assert!(b.evidence.contains("the others failed"), "{b:?}");
    }
}
