//! The figures of the tables, over compare's statistics (`queuebench::stats`): one median, the
//! mean of the middle two for an even count, as `--repeat`, `compare` and `sweep` take it.

pub use queuebench::stats::{LATENCY_SLACK_MS, Spread, median};

/// The median of `values`, 0 when there are none (a table cell of a section that measured nothing).
pub fn median_or_zero(values: &[f64]) -> f64 {
    median(values).unwrap_or(0.0)
}

/// `a / b`, 0 when `b` is not positive.
pub fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 { a / b } else { 0.0 }
}

/// CPU seconds per 10,000 jobs; None without jobs.
pub fn per_10k(cpu_s: f64, jobs: f64) -> Option<f64> {
    (jobs > 0.0).then(|| cpu_s * 10_000.0 / jobs)
}

/// Is a figure within its goal? `Goal::AtLeast(0.95)`, `Goal::AtMost(1.5)`.
#[derive(Debug, Clone, Copy)]
pub enum Goal {
    AtLeast(f64),
    AtMost(f64),
}

impl Goal {
    /// PASS or MISS, as the benchmark tables print it.
    pub fn verdict(self, value: f64) -> &'static str {
        let ok = match self {
            Goal::AtLeast(g) => value >= g,
            Goal::AtMost(g) => value <= g,
        };
        if ok { "PASS" } else { "MISS" }
    }
}

/// Which way a metric gets worse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Worse {
    /// Throughput: a drop is worse.
    Lower,
    /// Latency: a rise is worse.
    Higher,
}

impl Worse {
    /// By name, as compare's tolerances tell them apart: `throughput.*` gets worse by falling.
    pub fn of_metric(metric: &str) -> Worse {
        if metric.starts_with("throughput.") { Worse::Lower } else { Worse::Higher }
    }

    /// How much worse the worse of `lo` and `hi` (lo ≤ hi) is than the better: a drop as a share
    /// of `hi`, a rise as a share of `lo`; 0 when the base is not positive.
    pub fn change(self, lo: f64, hi: f64) -> f64 {
        let base = match self {
            Worse::Lower => hi,
            Worse::Higher => lo,
        };
        if base > 0.0 { (hi - lo) / base } else { 0.0 }
    }

    /// A latency rise below compare's slack (LATENCY_SLACK_MS) never fails a comparison.
    pub fn within_slack(self, lo: f64, hi: f64) -> bool {
        self == Worse::Higher && hi - lo < LATENCY_SLACK_MS
    }
}

/// The medians of consecutive disjoint groups of `size` values (a last, shorter group is left out).
pub fn group_medians(values: &[f64], size: usize) -> Vec<f64> {
    values.chunks_exact(size).filter_map(median).collect()
}

/// The smallest and largest of `values`; None when empty.
pub fn min_max(values: &[f64]) -> Option<(f64, f64)> {
    Spread::of(values).map(|s| (s.min, s.max))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_median_rule_the_mean_of_the_middle_two_for_an_even_count() {
        // The rule compare, --repeat and sweep use; the shell scripts had two (the lower
        // middle one in bench/lib.sh's `median`, the mean in `median_lines`).
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[10.0, 20.0]), Some(15.0));
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[]), None);
        assert_eq!(median_or_zero(&[]), 0.0);
        // Unsorted input, negatives and a repeated value.
        assert_eq!(median(&[5.0, -1.0, 5.0, 0.0, 2.0, 9.0]), Some(3.5));
    }

    #[test]
    fn ratios_and_goals() {
        assert_eq!(ratio(3.0, 4.0), 0.75);
        assert_eq!(ratio(3.0, 0.0), 0.0);
        assert_eq!(per_10k(2.0, 40_000.0), Some(0.5));
        assert_eq!(per_10k(2.0, 0.0), None);
        assert_eq!(Goal::AtLeast(0.95).verdict(0.95), "PASS");
        assert_eq!(Goal::AtLeast(0.95).verdict(0.94), "MISS");
        assert_eq!(Goal::AtMost(1.5).verdict(1.6), "MISS");
        assert_eq!(Goal::AtMost(1.5).verdict(1.5), "PASS");
    }

    #[test]
    fn worse_is_a_drop_for_throughput_and_a_rise_for_latency() {
        assert_eq!(Worse::of_metric("throughput.jobs_per_sec"), Worse::Lower);
        assert_eq!(Worse::of_metric("latency_ms.claim.p99"), Worse::Higher);
        // 80 → 100: a 20 % drop seen from 100, a 25 % rise seen from 80.
        assert!((Worse::Lower.change(80.0, 100.0) - 0.2).abs() < 1e-12);
        assert!((Worse::Higher.change(80.0, 100.0) - 0.25).abs() < 1e-12);
        assert_eq!(Worse::Higher.change(0.0, 1.0), 0.0);
        assert!(Worse::Higher.within_slack(2.0, 2.5));
        assert!(!Worse::Higher.within_slack(2.0, 3.5));
        assert!(!Worse::Lower.within_slack(2.0, 2.5), "no slack for throughput");
    }

    #[test]
    fn groups_of_three_leave_a_short_tail_out() {
        let v = [1.0, 2.0, 3.0, 10.0, 30.0, 20.0, 7.0];
        assert_eq!(group_medians(&v, 3), vec![2.0, 20.0]);
        assert_eq!(min_max(&v), Some((1.0, 30.0)));
        assert_eq!(min_max(&[]), None);
    }
}
