//! The side queries' own cost, kept to a share of the run. The sampler and the
//! claim-plan probe each run on a connection of their own and take server time
//! from the workers; a query that took `t` is followed by the next one no sooner
//! than `t / SHARE` after it started, so each keeps its round trips under SHARE
//! of the run's wall time (together under 1 %: issue 8's goal) whatever the
//! table's size. Fast queries (small tables) keep the interval as asked.

use std::time::Duration;
use tokio::time::Instant;

/// Each periodic side query's share of the run's wall time, at most.
pub const SHARE: f64 = 0.005;

/// When the next query may start: `every` after `started`, or later if the last one took
/// more than SHARE of that.
pub fn next(started: Instant, every: Duration, took_s: f64) -> Instant {
    started + every.max(Duration::from_secs_f64((took_s / SHARE).min(3600.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fast_query_keeps_the_interval_and_a_slow_one_stretches_it() {
        let t = Instant::now();
        assert_eq!(next(t, Duration::from_secs(1), 0.002), t + Duration::from_secs(1));
        assert_eq!(next(t, Duration::from_secs(1), 0.020), t + Duration::from_secs(4));
        // A query that took 1 s waits 200 s: its share of the time stays 0.5 %.
        assert_eq!(next(t, Duration::from_millis(500), 1.0), t + Duration::from_secs(200));
    }
}
