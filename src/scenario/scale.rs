//! Time scaling (`run.time_scale`): one pass over the validated `Plan` that
//! multiplies every duration of the scenario's time model by the scale and
//! divides every rate by it, so the load keeps its shape (the same number of
//! jobs per phase, the same lease ÷ work ratio) and a production-shaped
//! scenario (work p99 70 s, lease 3 min) runs in seconds at 0.01.
//!
//! Scaled: work models (also per class), lease, heartbeat, reaper interval,
//! retry backoff, idle backoff and fallback poll, aging step and deadline,
//! `run.stop` as a duration, the starvation threshold, phases (rates ÷ scale),
//! fault times, durations, respawn delays and kill rates (÷ scale), blockers
//! and vacuum steps, and an adapter's `[constants]` durations (`{ duration = "10s" }`).
//! Not scaled (they are wall-clock tools, not part of the modelled system):
//! `run.timeout`, `run.sample_interval`, `run.plan_probe`, and the database
//! itself (claim and complete round trips stay real milliseconds).
//!
//! Minimum durations: PostgreSQL keeps intervals to the microsecond and the
//! loops sleep on a millisecond timer, so a scaled lease or heartbeat below
//! 1 ms is an error, and loop intervals (reaper, idle backoff, fallback poll,
//! aging step) are floored at 1 ms.

use super::faults::{Kind, Trigger};
use super::plan::{Plan, Stop, WorkModel};
use super::units::format_duration;
use crate::error::{Error, Invalid};
use std::time::Duration;

/// Scales accepted by `run.time_scale` / `--time-scale`.
pub(crate) const RANGE: std::ops::RangeInclusive<f64> = 0.0001..=1000.0;

const MIN: Duration = Duration::from_millis(1);

/// Applies `plan.time_scale` to every duration and rate of the plan (once: the scale stays recorded).
pub(crate) fn apply(plan: &mut Plan) -> Result<(), Invalid> {
    let k = plan.time_scale;
    if k == 1.0 {
        return Ok(());
    }
    let s = |d: Duration| d.mul_f64(k);
    // Loop intervals: scaled, but never below 1 ms (a zero stays zero).
    let floored = |d: Duration| if d.is_zero() { d } else { s(d).max(MIN) };
    plan.workers.work = work(plan.workers.work, k);
    for (_, c) in &mut plan.adapter.constants {
        if let crate::adapter::Constant::Duration(d) = c {
            *d = s(*d);
        }
    }
    plan.adapter.drive.unique.period = plan.adapter.drive.unique.period.map(s);
    plan.lease.duration = at_least_1ms("lease.duration", plan.lease.duration, k)?;
    plan.lease.heartbeat = plan.lease.heartbeat.map(|h| at_least_1ms("lease.heartbeat", h, k)).transpose()?;
    plan.lease.reaper_interval = floored(plan.lease.reaper_interval);
    plan.retry.base = s(plan.retry.base);
    plan.retry.cap = s(plan.retry.cap);
    plan.workers.idle.backoff = plan.workers.idle.backoff.iter().map(|d| floored(*d)).collect();
    plan.workers.idle.fallback_poll = floored(plan.workers.idle.fallback_poll);
    plan.workers.ordering.aging_step = floored(plan.workers.ordering.aging_step);
    plan.workers.ordering.deadline = s(plan.workers.ordering.deadline);
    if let Stop::After(d) = plan.run.stop {
        plan.run.stop = Stop::After(s(d));
    }
    plan.run.starvation_threshold = s(plan.run.starvation_threshold).max(MIN);
    for f in &mut plan.faults {
        match &mut f.kind {
            Kind::Crash { respawn_after, .. } => *respawn_after = s(*respawn_after),
            Kind::Pause { duration, .. } | Kind::LockHold { duration, .. } => *duration = s(*duration),
            Kind::PostgresRestart { down, .. } => *down = s(*down),
            Kind::Failover { hold } => *hold = s(*hold),
            Kind::Network { duration, .. } => *duration = s(*duration),
            Kind::KillBackend | Kind::Cancel { .. } | Kind::KillAgent | Kind::AckLost { .. } => {}
        }
        match &mut f.trigger {
            Trigger::At(d) => *d = s(*d),
            Trigger::Rate(r) => *r /= k,
            Trigger::Probability(_) | Trigger::Every(_) => {}
        }
    }
    for c in &mut plan.load.classes {
        c.rate /= k;
        c.work = c.work.map(|w| work(w, k));
    }
    for p in &mut plan.load.phases {
        p.start = s(p.start);
        p.duration = s(p.duration).max(Duration::from_micros(1));
    }
    for b in &mut plan.blockers {
        b.at = s(b.at);
        b.duration = s(b.duration).max(MIN);
        b.scan_every = s(b.scan_every).max(Duration::from_millis(10));
    }
    for v in &mut plan.vacuum {
        v.at = s(v.at);
    }
    Ok(())
}

/// `--set` overrides plus `--time-scale X` as one more (`run.time_scale=X`); both at once is an error.
pub(crate) fn with_flag(sets: &[String], scale: Option<f64>) -> Result<Vec<String>, Error> {
    let mut out = sets.to_vec();
    if let Some(k) = scale {
        if sets.iter().any(|s| s.split('=').next().map(str::trim) == Some("run.time_scale")) {
            return Err(Error::TimeScaleTwice);
        }
        out.push(format!("run.time_scale={k}"));
    }
    Ok(out)
}

fn at_least_1ms(key: &str, d: Duration, k: f64) -> Result<Duration, Invalid> {
    let scaled = d.mul_f64(k);
    if scaled < MIN {
        return Err(Invalid::new(format!(
            "{key} {} × time_scale {k} is {}µs; it must stay at least 1ms (PostgreSQL keeps microseconds, the \
             workers' timers milliseconds): raise run.time_scale to at least {}",
            format_duration(d),
            scaled.as_micros(),
            MIN.as_secs_f64() / d.as_secs_f64().max(1e-9)
        )));
    }
    Ok(scaled)
}

/// A work model with every duration multiplied by `k`.
pub(crate) fn work(m: WorkModel, k: f64) -> WorkModel {
    map_work(m, |d| d.mul_f64(k))
}

/// A work model with `s` applied to every duration.
pub(crate) fn map_work(m: WorkModel, s: impl Fn(Duration) -> Duration) -> WorkModel {
    match m {
        WorkModel::Fixed(d) => WorkModel::Fixed(s(d)),
        WorkModel::Uniform { min, max } => WorkModel::Uniform { min: s(min), max: s(max) },
        WorkModel::LogNormal { p50, p99 } => WorkModel::LogNormal { p50: s(p50), p99: s(p99) },
        WorkModel::Quantiles { p50, p95, p99 } => WorkModel::Quantiles { p50: s(p50), p95: s(p95), p99: s(p99) },
    }
}

#[cfg(test)]
mod tests {
    use super::super::load::{Source, parse_text};
    use super::super::validate::validate;
    use super::*;

    const SCENARIO: &str = r#"
name = "x"
[jobs]
preload = 10
[[jobs.classes]]
name = "high"
rate = 2.0
work = "10s"
[workers]
work = { p50 = "8s", p95 = "35s", p99 = "70s" }
idle_backoff = ["10ms", "2s"]
[lease]
duration = "90s"
heartbeat = "30s"
reaper_interval = "50ms"
[retry]
base = "5s"
cap = "15m"
[run]
timeout = "2m"
stop = "10m"
[[run.phases]]
name = "steady"
duration = "60s"
[[faults]]
kind = "pause"
at = "20s"
duration = "100s"
[[faults]]
kind = "kill_backend"
rate = 0.5
"#;

    /// The plan at `scale`, or the error validate gives (the shared text parses).
    fn plan(scale: &str) -> crate::error::Result<Plan> {
        let text = SCENARIO.replace("[run]\n", &format!("[run]\ntime_scale = {scale}\n"));
        let raw = parse_text(&text).expect("the test's scenario parses");
        validate(raw, Source { path: "t.toml".into(), text, overrides: vec![] }, Some(1))
    }

    #[test]
    fn every_duration_of_the_time_model_is_scaled_and_rates_divided() {
        let (one, p) = (plan("1.0").unwrap(), plan("0.01").unwrap());
        let ms = Duration::from_millis;
        assert_eq!(p.time_scale, 0.01);
        assert_eq!(p.workers.work, WorkModel::Quantiles { p50: ms(80), p95: ms(350), p99: ms(700) });
        assert_eq!((p.lease.duration, p.lease.heartbeat), (ms(900), Some(ms(300))));
        assert_eq!((p.retry.base, p.retry.cap), (ms(50), ms(9000)));
        assert_eq!(p.run.stop, Stop::After(ms(6000)));
        assert_eq!(p.workers.idle.backoff, [ms(1), ms(20)], "loop intervals floor at 1 ms");
        assert_eq!(p.lease.reaper_interval, ms(1));
        assert_eq!(p.load.classes[0].rate, 200.0);
        assert_eq!(p.load.classes[0].work, Some(WorkModel::Fixed(ms(100))));
        assert_eq!(p.load.phases[0].duration, ms(600));
        assert_eq!(p.faults[0].trigger, Trigger::At(ms(200)));
        assert!(matches!(p.faults[0].kind, Kind::Pause { duration, .. } if duration == ms(1000)));
        assert_eq!(p.faults[1].trigger, Trigger::Rate(50.0));
        // Wall-clock tools keep their values.
        assert_eq!((p.run.timeout, p.run.sample_interval), (one.run.timeout, one.run.sample_interval));
        // Scale 1 changes nothing.
        assert_eq!((one.lease.duration, one.workers.work), (Duration::from_secs(90), plan("1").unwrap().workers.work));
    }

    #[test]
    fn the_flag_is_one_more_override_and_not_twice() {
        let sets = vec!["workers.count=2".to_string()];
        assert_eq!(with_flag(&sets, None).unwrap(), sets);
        assert_eq!(with_flag(&sets, Some(0.01)).unwrap(), ["workers.count=2", "run.time_scale=0.01"]);
        assert!(with_flag(&["run.time_scale=1".into()], Some(0.5)).unwrap_err().to_string().contains("once"));
    }

    #[test]
    fn a_lease_scaled_below_1ms_or_a_bad_scale_is_an_error_naming_the_key() {
        let e = plan("0.00001").unwrap_err().to_string();
        assert!(e.contains("run.time_scale"), "{e}");
        let e = SCENARIO.replace("duration = \"90s\"", "duration = \"50ms\"").replace("heartbeat = \"30s\"", "");
        let text = e.replace("[run]\n", "[run]\ntime_scale = 0.01\n");
        let err = validate(parse_text(&text).unwrap(), Source { path: "t.toml".into(), text, overrides: vec![] }, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("t.toml") && err.contains("lease.duration 50ms") && err.contains("at least 1ms"), "{err}");
        for bad in ["0", "-1", "2000", "nan"] {
            assert!(plan(bad).is_err_and(|e| e.to_string().contains("run.time_scale")), "{bad}");
        }
    }
}
