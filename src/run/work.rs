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
pub async fn sleep(d: Duration) {
    if d < PRECISE_BELOW {
        let _ = tokio::task::spawn_blocking(move || std::thread::sleep(d)).await;
    } else {
        tokio::time::sleep(d).await;
    }
}

/// z of the 99th percentile of the standard normal distribution.
const Z99: f64 = 2.326_347_874_040_841;

pub fn sample(model: &WorkModel, rng: &mut impl RngExt) -> Duration {
    match *model {
        WorkModel::Fixed(d) => d,
        WorkModel::Uniform { min, max } => min + (max - min).mul_f64(rng.random::<f64>()),
        WorkModel::LogNormal { p50, p99 } => {
            let mu = p50.as_secs_f64().ln();
            let sigma = (p99.as_secs_f64().ln() - mu) / Z99;
            // Box–Muller; 1 - u keeps ln away from 0.
            let (u1, u2) = (1.0 - rng.random::<f64>(), rng.random::<f64>());
            let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
            let secs = (mu + sigma * z).exp().min(p99.as_secs_f64() * 100.0);
            Duration::from_secs_f64(secs)
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
    fn uniform_stays_in_range() {
        let model = WorkModel::Uniform { min: Duration::from_millis(1), max: Duration::from_millis(5) };
        let mut rng = StdRng::seed_from_u64(1);
        for _ in 0..1000 {
            let d = sample(&model, &mut rng);
            assert!(d >= Duration::from_millis(1) && d <= Duration::from_millis(5));
        }
    }
}
