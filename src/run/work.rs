//! Sampling how long one execution takes from the scenario's work model.

use crate::scenario::WorkModel;
use rand::RngExt;
use std::time::Duration;

/// Below this, tokio's 1 ms timer wheel would stretch the work noticeably
/// (a 5 ms sleep took ~6 ms, costing 14 % of throughput against pgbench's
/// `\sleep`), so short work sleeps on a blocking-pool thread, precise to
/// tens of microseconds. Longer work uses tokio's timer.
const PRECISE_BELOW: Duration = Duration::from_millis(50);

/// Simulates `d` of work.
pub(crate) async fn sleep(d: Duration) {
    if d < PRECISE_BELOW {
        let _ = tokio::task::spawn_blocking(move || std::thread::sleep(d)).await;
    } else {
        tokio::time::sleep(d).await;
    }
}

/// z of the 99th percentile of the standard normal distribution.
const Z99: f64 = 2.326_347_874_040_841;
/// z of the 95th percentile.
const Z95: f64 = 1.644_853_626_951_472;

/// A standard normal draw (Box–Muller; 1 - u keeps ln away from 0).
fn normal(rng: &mut impl RngExt) -> f64 {
    let (u1, u2) = (1.0 - rng.random::<f64>(), rng.random::<f64>());
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

pub(crate) fn sample(model: &WorkModel, rng: &mut impl RngExt) -> Duration {
    match *model {
        WorkModel::Fixed(d) => d,
        WorkModel::Uniform { min, max } => min + (max - min).mul_f64(rng.random::<f64>()),
        WorkModel::LogNormal { p50, p99 } => {
            let mu = p50.as_secs_f64().ln();
            let sigma = (p99.as_secs_f64().ln() - mu) / Z99;
            let secs = (mu + sigma * normal(rng)).exp().min(p99.as_secs_f64() * 100.0);
            Duration::from_secs_f64(secs)
        }
        WorkModel::Quantiles { p50, p95, p99 } => {
            // ln(work) is piecewise linear in z: through p50 and p95 up to z95
            // (and below the median), through p95 and p99 above it.
            let (l50, l95, l99) = (p50.as_secs_f64().ln(), p95.as_secs_f64().ln(), p99.as_secs_f64().ln());
            let z = normal(rng);
            let ln = if z <= Z95 { l50 + (l95 - l50) / Z95 * z } else { l95 + (l99 - l95) / (Z99 - Z95) * (z - Z95) };
            Duration::from_secs_f64(ln.exp().min(p99.as_secs_f64() * 100.0))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    #[test]
    fn lognormal_hits_its_percentiles() {
        let model = WorkModel::LogNormal { p50: Duration::from_millis(8), p99: Duration::from_millis(70) };
        let mut rng = StdRng::seed_from_u64(7);
        let mut v: Vec<f64> = (0..20_000).map(|_| sample(&model, &mut rng).as_secs_f64() * 1e3).collect();
        v.sort_by(f64::total_cmp);
        let (p50, p99) = (v[10_000], v[19_800]);
        assert!((7.0..9.0).contains(&p50), "p50 {p50}");
        assert!((60.0..82.0).contains(&p99), "p99 {p99}");
    }

    #[test]
    fn quantiles_hit_all_three_percentiles() {
        let (p50, p95, p99) = (Duration::from_secs(8), Duration::from_secs(35), Duration::from_secs(70));
        let model = WorkModel::Quantiles { p50, p95, p99 };
        let mut rng = StdRng::seed_from_u64(11);
        let mut v: Vec<f64> = (0..40_000).map(|_| sample(&model, &mut rng).as_secs_f64()).collect();
        v.sort_by(f64::total_cmp);
        let (a, b, c) = (v[20_000], v[38_000], v[39_600]);
        assert!((7.5..8.5).contains(&a), "p50 {a}");
        assert!((32.0..38.0).contains(&b), "p95 {b}");
        assert!((62.0..78.0).contains(&c), "p99 {c}");
    }

    #[test]
    fn uniform_stays_in_range() {
        let model = WorkModel::Uniform { min: Duration::from_millis(1), max: Duration::from_millis(5) };
        let mut rng = StdRng::seed_from_u64(1);
        for _ in 0..1000 {
            let d = sample(&model, &mut rng);
            assert!(d >= Duration::from_millis(1) && d <= Duration::from_millis(5));
        }
    }
}
