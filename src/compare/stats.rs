//! Small statistics over repeated runs: the median and the spread.
//! Used by `--repeat`, the baseline comparison and sweeps, and by `cargo xtask` (xtask/), whose
//! tables of repeated runs take their medians from here: one rule for an even count everywhere.

pub use crate::model::tolerance::LATENCY_SLACK_MS;
use serde::Serialize;

/// The median of `values` (the mean of the two middle ones for an even count); None when empty.
/// NaNs sort last and are treated like any other value.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len() % 2 == 1 { v[mid] } else { (v[mid - 1] + v[mid]) / 2.0 })
}

/// Median, min and max of one metric over repeated runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub runs: usize,
}

impl Spread {
    pub fn of(values: &[f64]) -> Option<Spread> {
        Some(Spread {
            median: median(values)?,
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            runs: values.len(),
        })
    }

    /// `12.5` for one run, `12.5 (11–14.2)` for several.
    pub fn show(&self) -> String {
        if self.runs > 1 && self.min != self.max {
            format!("{} ({}–{})", num(self.median), num(self.min), num(self.max))
        } else {
            num(self.median)
        }
    }
}

/// A number as people read it: integers without decimals, others with 3 significant-ish digits.
pub fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// The runs each side needs before a change is judged by the rank test ([`p_worse`]) as well
/// as by the tolerance. With fewer, only the tolerance judges (there is no spread to tell
/// noise by).
pub const RANK_TEST_RUNS: usize = 3;

/// The significance level of the rank test: with 3 runs a side, only new runs that are all
/// worse than all old ones reach it (exact p = 1/20 = 0.05).
pub const SIGNIFICANT: f64 = 0.05;

/// The Mann–Whitney rank test, one-sided: the probability, were the old and new runs drawn
/// from one distribution, of the new runs looking at least this much worse than the old ones.
/// `worse(o, n)` says whether the new value `n` is worse than the old value `o`. The statistic
/// U counts the (old, new) pairs where the new run is worse (a tie counts half); the p-value is
/// exact (every way of splitting the m + n runs into sides, counted by the usual recurrence)
/// up to 40 runs a side, and the normal approximation beyond. Ties are rare in measured times;
/// where they occur the p-value is taken at the lower whole U, so it errs on "noise".
pub fn p_worse(old: &[f64], new: &[f64], worse: impl Fn(f64, f64) -> bool) -> f64 {
    let (m, n) = (old.len(), new.len());
    if m == 0 || n == 0 {
        return 1.0;
    }
    let mut twice_u = 0usize;
    for &o in old {
        for &v in new {
            twice_u += if worse(o, v) {
                2
            } else if worse(v, o) {
                0
            } else {
                1
            };
        }
    }
    let u = twice_u / 2; // the lower whole U for a half
    if m <= 40 && n <= 40 {
        let counts = u_counts(m, n);
        let total: f64 = counts.iter().sum();
        return counts[u..].iter().sum::<f64>() / total;
    }
    let (mf, nf) = (m as f64, n as f64);
    let mean = mf * nf / 2.0;
    let sd = (mf * nf * (mf + nf + 1.0) / 12.0).sqrt();
    let z = (u as f64 - 0.5 - mean) / sd;
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

/// How many of the C(m + n, m) splits of m + n distinct runs give each U (0 ..= m·n).
fn u_counts(m: usize, n: usize) -> Vec<f64> {
    // f[i][j][u]: splits of i old and j new runs with statistic u. Adding a new run that is
    // worse than all i old ones adds i to U; adding an old run that is better than all adds 0.
    let max = m * n;
    let mut prev: Vec<Vec<f64>> = vec![vec![0.0; max + 1]; n + 1];
    for row in prev.iter_mut() {
        row[0] = 1.0; // no old runs: U = 0
    }
    for i in 1..=m {
        let mut cur: Vec<Vec<f64>> = vec![vec![0.0; max + 1]; n + 1];
        cur[0][0] = 1.0;
        for j in 1..=n {
            for u in 0..=max {
                let with_old_last = prev[j][u];
                let with_new_last = if u >= i { cur[j - 1][u - i] } else { 0.0 };
                cur[j][u] = with_old_last + with_new_last;
            }
        }
        prev = cur;
    }
    prev[n].clone()
}

/// The complementary error function (Numerical Recipes' erfc, |error| < 1.2e-7).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.26551223
            + t * (1.00002368
                + t * (0.37409196
                    + t * (0.09678418
                        + t * (-0.18628806
                            + t * (0.27886807
                                + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))))
            .exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rank_test_counts_exactly() {
        let rise = |o: f64, n: f64| n > o;
        // 3 vs 3, every new run worse: 1 split in C(6,3) = 20.
        assert!((p_worse(&[10.0, 11.0, 12.0], &[20.0, 21.0, 22.0], rise) - 0.05).abs() < 1e-12);
        // Interleaved runs of one distribution: far from significant.
        assert!(p_worse(&[10.0, 12.0, 14.0], &[11.0, 13.0, 15.0], rise) > 0.3);
        // Every new run better: p = 1.
        assert!((p_worse(&[20.0, 21.0, 22.0], &[10.0, 11.0, 12.0], rise) - 1.0).abs() < 1e-12);
        // 5 vs 5, all worse: 1 / C(10,5) = 1/252.
        let p = p_worse(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0], rise);
        assert!((p - 1.0 / 252.0).abs() < 1e-12, "{p}");
        // Past 40 runs a side, the normal approximation: 45 vs 45 shifted by 10.5 places gives
        // U = 1430 of 2025 (mean 1012.5, sd 123.9), z = 3.37, p ≈ 0.00038.
        let old: Vec<f64> = (0..45).map(|i| i as f64).collect();
        let new: Vec<f64> = (0..45).map(|i| i as f64 + 10.5).collect();
        let p = p_worse(&old, &new, rise);
        assert!(p > 0.0003 && p < 0.0005, "{p}");
        // And at 40 a side, the exact count is near it (same shift, U = 1230 of 1600: z ≈ 3.4).
        let p40 = p_worse(&old[..40], &new[..40], rise);
        assert!(p40 > 0.0001 && p40 < 0.001, "{p40}");
    }

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[7.0]), Some(7.0));
        assert_eq!(median(&[]), None);
        let s = Spread::of(&[5.0, 1.0, 9.0]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.runs), (5.0, 1.0, 9.0, 3));
        assert_eq!(s.show(), "5 (1–9)");
    }
}
