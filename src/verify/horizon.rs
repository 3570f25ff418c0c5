//! What horizon blockers did to the table: the peak of dead tuples while
//! they held the xmin horizon back, and how long vacuum needed after the
//! last one ended to bring dead tuples back down: to a tenth of the peak, or
//! to one and a half times the most seen before the first blocker (a steady
//! load always has some dead tuples between autovacuum runs), or under 100,
//! whichever is highest. Pure over the time series and the blockers' spans.

use crate::model::check::Check;
use crate::model::records::BlockerSpan;
use crate::model::records::PgSample;
use crate::model::summary::{CheckResult, DeadTuples, Horizon};

/// The dead tuples over the whole run: peak, last, least-squares growth per second and the
/// autovacuum runs between the first sample and the last.
pub(super) fn dead_tuples(samples: &[PgSample]) -> DeadTuples {
    let (Some(first), Some(last)) = (samples.first(), samples.last()) else {
        return DeadTuples::default();
    };
    let n = samples.len() as f64;
    let mean_t = samples.iter().map(|s| s.t_ms as f64 / 1000.0).sum::<f64>() / n;
    let mean_d = samples.iter().map(|s| s.n_dead_tup as f64).sum::<f64>() / n;
    let (mut cov, mut var) = (0.0, 0.0);
    for s in samples {
        let dt = s.t_ms as f64 / 1000.0 - mean_t;
        cov += dt * (s.n_dead_tup as f64 - mean_d);
        var += dt * dt;
    }
    DeadTuples {
        samples: samples.len() as u64,
        peak: samples.iter().map(|s| s.n_dead_tup).max().unwrap_or(0),
        end: last.n_dead_tup,
        growth_per_s: if var > 0.0 { cov / var } else { 0.0 },
        autovacuums: last.autovacuum_count - first.autovacuum_count,
    }
}

pub(super) fn check(samples: &[PgSample], blockers: &[BlockerSpan]) -> (Horizon, Option<CheckResult>) {
    let (Some(first), Some(last_end)) =
        (blockers.iter().map(|b| b.start_us).min(), blockers.iter().map(|b| b.end_us).max())
    else {
        return (Horizon::default(), None);
    };
    let (from_ms, to_ms) = (first / 1000, last_end / 1000);
    let held: Vec<&PgSample> = samples.iter().filter(|s| s.t_ms >= from_ms && s.t_ms <= to_ms + 1000).collect();
    let peak = held.iter().map(|s| s.n_dead_tup).max().unwrap_or(0);
    let baseline = samples.iter().filter(|s| s.t_ms < from_ms).map(|s| s.n_dead_tup).max().unwrap_or(0);
    let target = (peak / 10).max(100).max(baseline * 3 / 2);
    let caught_up = samples.iter().find(|s| s.t_ms > to_ms && s.n_dead_tup <= target);
    let h = Horizon {
        blockers: blockers.len() as u64,
        held_s: blockers.iter().map(|b| (b.end_us - b.start_us) as f64 / 1e6).sum(),
        peak_dead_tuples: peak,
        peak_xmin_age: held.iter().map(|s| s.xmin_age).max().unwrap_or(0),
        catch_up_s: caught_up.map_or(-1.0, |s| (s.t_ms - to_ms) as f64 / 1000.0),
    };
    let check = CheckResult {
        name: Check::VacuumCaughtUp,
        passed: caught_up.is_some(),
        violations: u64::from(caught_up.is_none()),
        detail: match caught_up {
            Some(_) => format!(
                "dead tuples peaked at {peak} while the horizon was held; {:.1} s after the last blocker ended they were back under {target}",
                h.catch_up_s
            ),
            None => format!("dead tuples peaked at {peak} and were still above {target} when the run ended"),
        },
        examples: Vec::new(),
    };
    (h, Some(check))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(t_ms: u64, dead: i64) -> PgSample {
        PgSample { t_ms, n_dead_tup: dead, ..Default::default() }
    }

    #[test]
    fn peak_and_catch_up() {
        let samples = [s(0, 0), s(1000, 500), s(2000, 2000), s(3000, 2100), s(4000, 1500), s(5000, 50)];
        let b = [BlockerSpan { kind: "idle_in_transaction".into(), start_us: 500_000, end_us: 3_000_000 }];
        let (h, c) = check(&samples, &b);
        assert_eq!(h.peak_dead_tuples, 2100);
        assert_eq!(h.catch_up_s, 2.0);
        assert!(c.unwrap().passed);
        let (h, c) = check(&samples[..5], &b);
        assert_eq!(h.catch_up_s, -1.0);
        assert!(!c.unwrap().passed);
        assert!(check(&samples, &[]).1.is_none());
        // A steady load's dead tuples before the blocker set the bar for "caught up".
        let steady = [s(0, 400), s(1000, 2000), s(2000, 5000), s(3000, 550), s(4000, 300)];
        let b = [BlockerSpan { kind: "repeatable_read".into(), start_us: 900_000, end_us: 2_500_000 }];
        let (h, _) = check(&steady, &b);
        assert_eq!(h.catch_up_s, 0.5, "550 is within 1.5 × the 400 seen before");
    }

    #[test]
    fn dead_tuples_over_the_whole_run() {
        let at =
            |t_ms, dead, autovacuum_count| PgSample { t_ms, n_dead_tup: dead, autovacuum_count, ..Default::default() };
        let d = dead_tuples(&[at(0, 0, 2), at(1000, 100, 2), at(2000, 300, 3), at(3000, 200, 4)]);
        assert_eq!((d.samples, d.peak, d.end, d.autovacuums), (4, 300, 200, 2));
        assert!((d.growth_per_s - 80.0).abs() < 1e-9, "{}", d.growth_per_s);
        let none = dead_tuples(&[]);
        assert_eq!((none.samples, none.peak, none.growth_per_s), (0, 0, 0.0));
    }
}
