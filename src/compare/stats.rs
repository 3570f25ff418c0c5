//! Small statistics over repeated runs: the median and the spread.
//! Used by `--repeat` and by the baseline comparison; reusable by sweeps.

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

#[cfg(test)]
mod tests {
    use super::*;

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
