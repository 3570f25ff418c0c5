//! The side queries' own cost, kept to a share of the run. The sampler and the
//! claim-plan probe each run on a connection of their own and take server time
//! from the workers; a query slower than FLOOR that took `t` is followed by the
//! next one no sooner than `t / SHARE` after it started, so at the default 1 s
//! interval each keeps its round trips under SHARE of the run's wall time
//! (together under 1 %, the goal of the benchmark suite) whatever the table's size. Queries
//! under FLOOR (small tables) keep the interval as asked: a shorter interval is
//! the user's choice to pay more.

use std::time::Duration;
use tokio::time::Instant;

/// Each periodic side query's share of the run's wall time, at most.
pub(crate) const SHARE: f64 = 0.005;

/// Below this a query keeps the asked interval (SHARE of the default 1 s interval).
pub(crate) const FLOOR_S: f64 = 0.005;

/// When the next query may start: `every` after `started`, or later if the last one took
/// more than FLOOR_S and more than SHARE of that.
pub(crate) fn next(started: Instant, every: Duration, took_s: f64) -> Instant {
    if took_s <= FLOOR_S {
        return started + every;
    }
    started + every.max(Duration::from_secs_f64((took_s / SHARE).min(3600.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fast_query_keeps_the_interval_and_a_slow_one_stretches_it() {
        let t = Instant::now();
        assert_eq!(next(t, Duration::from_secs(1), 0.002), t + Duration::from_secs(1));
        // Under the floor, a short interval is kept as asked.
        assert_eq!(next(t, Duration::from_millis(100), 0.004), t + Duration::from_millis(100));
        assert_eq!(next(t, Duration::from_secs(1), 0.020), t + Duration::from_secs(4));
        // A query that took 1 s waits 200 s: its share of the time stays 0.5 %.
        assert_eq!(next(t, Duration::from_millis(500), 1.0), t + Duration::from_secs(200));
    }
}
