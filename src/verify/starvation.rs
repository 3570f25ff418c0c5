//! Starvation: a class whose oldest ready job waits ever longer while the
//! workers serve other classes. An average queue wait hides it (seed 000:
//! watch the oldest ready age per priority), so this reads the per-class
//! oldest ready age from the Postgres time series. A class starves when that
//! age passes `run.starvation_threshold`, or when it grows steadily (at
//! least half a second per second) over the last third of the load phases,
//! *while another class is served*: at that moment some other class's oldest
//! ready age is under half of it. When every class falls behind alike the
//! workers are simply overloaded (FIFO does that), which is not starvation.
//! Only open-model runs are checked: in a burn-down every preloaded job is
//! as old as the run, which is backlog, not starvation.

use super::examples;
use crate::model::check::Check;
use crate::model::records::PgSample;
use crate::model::summary::{CheckResult, Starvation};
use std::time::Duration;

/// Growth (seconds of age per second of run) that counts as "the head does not move".
pub const GROWTH_LIMIT: f64 = 0.5;

#[derive(Debug, Clone, Copy)]
pub struct Rule {
    pub threshold: Duration,
    /// End of the last load phase; zero for a burn-down (no check).
    pub load_end: Duration,
}

/// One job's wait in its class, for the examples: (class index, wait in µs, job id).
pub type JobWait = (u16, u64, i64);

/// `classes` in the samples' order ("default" first); `waits` picks the example jobs.
pub fn check(
    samples: &[PgSample],
    classes: &[String],
    rule: &Rule,
    waits: &[JobWait],
) -> Option<(Starvation, CheckResult)> {
    if rule.load_end.is_zero() {
        return None;
    }
    let threshold = rule.threshold.as_secs_f64();
    let tail_from = rule.load_end.as_millis() as u64 * 2 / 3;
    let tail_to = rule.load_end.as_millis() as u64;
    let mut s = Starvation { threshold_s: threshold, ..Default::default() };
    let mut details = Vec::new();
    let mut worst_starving: Option<(usize, f64)> = None;
    let mut overloaded = Vec::new();
    for (i, class) in classes.iter().enumerate() {
        let series: Vec<(u64, i64, f64)> =
            samples.iter().filter_map(|x| x.per_class.get(i).map(|&(n, age)| (x.t_ms, n, age))).collect();
        // The preloaded class only counts when it had jobs.
        if !is_present(samples, i) {
            continue;
        }
        let (at_ms, max_age) = series.iter().fold((0, 0.0), |m, &(t, _, age)| if age > m.1 { (t, age) } else { m });
        let tail: Vec<(f64, f64)> = series
            .iter()
            .filter(|&&(t, _, _)| (tail_from..=tail_to).contains(&t))
            .map(|&(t, _, age)| (t as f64 / 1000.0, age))
            .collect();
        let growth = slope(&tail);
        s.max_oldest_ready_age_s.insert(class.clone(), max_age);
        s.growth_s_per_s.insert(class.clone(), growth);
        if max_age > s.worst_age_s || s.worst_class.is_empty() {
            (s.worst_class, s.worst_age_s) = (class.clone(), max_age);
        }
        let past = max_age > threshold;
        let growing = growth >= GROWTH_LIMIT && tail.last().is_some_and(|&(_, age)| age >= 1.0);
        // When it was worst off (its peak, or the end of the load when only growing),
        // was another class being served ahead of it?
        let at = if past { at_ms } else { tail.last().map_or(at_ms, |&(t, _)| (t * 1000.0).round() as u64) };
        let own = series.iter().find(|x| x.0 == at).map_or(max_age, |x| x.2);
        let others_served = samples.iter().find(|x| x.t_ms == at).is_some_and(|x| {
            x.per_class.iter().enumerate().any(|(j, &(_, age))| j != i && is_present(samples, j) && age * 2.0 < own)
        });
        if (past || growing) && !others_served {
            overloaded.push(class.clone());
        }
        if (past || growing) && others_served {
            s.starving.push(class.clone());
            if worst_starving.is_none_or(|(_, a)| max_age > a) {
                worst_starving = Some((i, max_age));
            }
            let why = match (past, growing) {
                (true, true) => format!("past {threshold:.1} s and growing {growth:.2} s/s"),
                (true, false) => format!("past {threshold:.1} s"),
                _ => format!("growing {growth:.2} s/s over the last third of the load"),
            };
            details.push(format!("{class} waited {max_age:.1} s at {:.0} s ({why})", at_ms as f64 / 1000.0));
        }
    }
    let ages: Vec<String> = s.max_oldest_ready_age_s.iter().map(|(c, a)| format!("{c} {a:.1} s")).collect();
    let detail = if details.is_empty() && !overloaded.is_empty() {
        format!(
            "{} fell behind past {threshold:.1} s or kept growing, but no other class was served ahead of them: overload, not starvation (max: {})",
            overloaded.join(", "),
            ages.join(", ")
        )
    } else if details.is_empty() {
        format!("no class's oldest ready job waited past {threshold:.1} s or kept growing (max: {})", ages.join(", "))
    } else {
        format!("{} starving: {} (max: {})", details.len(), details.join("; "), ages.join(", "))
    };
    let example_ids = worst_starving.map_or_else(Vec::new, |(i, _)| longest_waits(waits, i as u16));
    let check = CheckResult {
        name: Check::Starvation,
        passed: s.starving.is_empty(),
        violations: s.starving.len() as u64,
        detail,
        examples: example_ids,
    };
    Some((s, check))
}

/// Did class `i` ever have jobs? The preloaded class is often empty.
fn is_present(samples: &[PgSample], i: usize) -> bool {
    i != 0 || samples.iter().any(|x| x.per_class.first().is_some_and(|c| c.0 > 0))
}

/// The class's jobs that waited longest, longest first.
fn longest_waits(waits: &[JobWait], class: u16) -> Vec<i64> {
    let mut mine: Vec<&JobWait> = waits.iter().filter(|w| w.0 == class).collect();
    mine.sort_unstable_by_key(|w| (std::cmp::Reverse(w.1), w.2));
    examples(mine.into_iter().map(|w| w.2))
}

/// Least-squares slope of (x, y); 0 with fewer than 3 points.
fn slope(points: &[(f64, f64)]) -> f64 {
    if points.len() < 3 {
        return 0.0;
    }
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    if sxx == 0.0 { 0.0 } else { sxy / sxx }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classes() -> Vec<String> {
        ["default", "high", "normal"].map(String::from).to_vec()
    }

    /// One sample per second; `high(t)` and `normal(t)` give the oldest ready ages.
    fn series(secs: u64, high: impl Fn(f64) -> f64, normal: impl Fn(f64) -> f64) -> Vec<PgSample> {
        (0..=secs)
            .map(|t| {
                let x = t as f64;
                PgSample {
                    t_ms: t * 1000,
                    per_class: vec![(0, 0.0), (5, high(x)), (50, normal(x))],
                    ..Default::default()
                }
            })
            .collect()
    }

    fn rule(threshold: u64, load_end: u64) -> Rule {
        Rule { threshold: Duration::from_secs(threshold), load_end: Duration::from_secs(load_end) }
    }

    #[test]
    fn a_class_whose_age_passes_the_threshold_starves() {
        let samples = series(30, |_| 0.1, |t| t / 2.0);
        let waits = [(2, 9_000_000, 40), (2, 15_000_000, 41), (1, 99_000_000, 7), (2, 1_000, 42)];
        let (s, c) = check(&samples, &classes(), &rule(10, 30), &waits).unwrap();
        assert!(!c.passed);
        assert_eq!(c.violations, 1);
        assert_eq!(s.starving, ["normal"]);
        assert_eq!((s.worst_class.as_str(), s.worst_age_s), ("normal", 15.0));
        assert!((s.growth_s_per_s["normal"] - 0.5).abs() < 1e-9);
        assert!(!s.max_oldest_ready_age_s.contains_key("default"), "the empty preload class is left out");
        assert_eq!(c.examples, [41, 40, 42], "the starving class's longest waits first");
        assert!(c.detail.contains("normal waited 15.0 s at 30 s"), "{}", c.detail);
    }

    #[test]
    fn steady_growth_below_the_threshold_starves_too() {
        // Ages 0..=9 s over the load, rising 1 s/s at the end: the head never moves.
        let samples = series(9, |_| 0.2, |t| t);
        let (s, c) = check(&samples, &classes(), &rule(10, 9), &[]).unwrap();
        assert_eq!(s.starving, ["normal"]);
        assert!(c.detail.contains("growing 1.00 s/s"), "{}", c.detail);
    }

    #[test]
    fn a_bounded_age_does_not_starve() {
        // Aging: normal's age rises to 4 s and stays there.
        let samples = series(30, |t| (t / 10.0).min(1.0), |t| t.min(4.0));
        let (s, c) = check(&samples, &classes(), &rule(10, 30), &[]).unwrap();
        assert!(c.passed, "{}", c.detail);
        assert_eq!((s.worst_class.as_str(), s.worst_age_s), ("normal", 4.0));
        assert!(s.growth_s_per_s["normal"].abs() < 1e-9);
    }

    #[test]
    fn every_class_behind_alike_is_overload_not_starvation() {
        // FIFO under overload: both classes' heads age together past the threshold.
        let samples = series(30, |t| t / 2.0, |t| t / 2.0 + 0.1);
        let (s, c) = check(&samples, &classes(), &rule(10, 30), &[]).unwrap();
        assert!(c.passed, "{}", c.detail);
        assert!(s.starving.is_empty());
        assert!(c.detail.contains("overload, not starvation"), "{}", c.detail);
        assert_eq!(s.worst_age_s, 15.1);
    }

    #[test]
    fn growth_after_the_load_is_not_counted() {
        // The age climbs only after the producers stopped (at 10 s): a drain, not starvation.
        let samples = series(18, |_| 0.0, |t| (t - 10.0).max(0.0));
        let (_, c) = check(&samples, &classes(), &rule(10, 10), &[]).unwrap();
        assert!(c.passed, "{}", c.detail);
    }

    #[test]
    fn burn_down_runs_are_not_checked() {
        assert!(check(&series(5, |t| t, |t| t), &classes(), &rule(1, 0), &[]).is_none());
    }

    #[test]
    fn slope_of_a_line() {
        assert!((slope(&[(0.0, 1.0), (1.0, 3.0), (2.0, 5.0)]) - 2.0).abs() < 1e-12);
        assert_eq!(slope(&[(0.0, 1.0), (1.0, 3.0)]), 0.0);
    }
}
