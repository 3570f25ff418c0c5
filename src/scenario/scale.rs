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
//! and vacuum steps.
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
use std::time::Duration;

/// Scales accepted by `run.time_scale` / `--time-scale`.
pub const RANGE: std::ops::RangeInclusive<f64> = 0.0001..=1000.0;

const MIN: Duration = Duration::from_millis(1);

/// Applies `plan.time_scale` to every duration and rate of the plan (once: the scale stays recorded).
pub fn apply(plan: &mut Plan) -> Result<(), String> {
    let k = plan.time_scale;
    if k == 1.0 {
        return Ok(());
    }
    let s = |d: Duration| d.mul_f64(k);
    // Loop intervals: scaled, but never below 1 ms (a zero stays zero).
    let floored = |d: Duration| if d.is_zero() { d } else { s(d).max(MIN) };
    plan.work = work(plan.work, k);
    plan.lease = at_least_1ms("lease.duration", plan.lease, k)?;
    plan.heartbeat = plan.heartbeat.map(|h| at_least_1ms("lease.heartbeat", h, k)).transpose()?;
    plan.reaper_interval = floored(plan.reaper_interval);
    plan.retry.base = s(plan.retry.base);
    plan.retry.cap = s(plan.retry.cap);
    plan.idle.backoff = plan.idle.backoff.iter().map(|d| floored(*d)).collect();
    plan.idle.fallback_poll = floored(plan.idle.fallback_poll);
    plan.ordering.aging_step = floored(plan.ordering.aging_step);
    plan.ordering.deadline = s(plan.ordering.deadline);
    if let Stop::After(d) = plan.stop {
        plan.stop = Stop::After(s(d));
    }
    plan.starvation_threshold = s(plan.starvation_threshold).max(MIN);
    for f in &mut plan.faults {
        match &mut f.kind {
            Kind::Crash { respawn_after, .. } => *respawn_after = s(*respawn_after),
            Kind::Pause { duration, .. } | Kind::LockHold { duration, .. } => *duration = s(*duration),
            Kind::KillBackend | Kind::Cancel { .. } => {}
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

fn at_least_1ms(key: &str, d: Duration, k: f64) -> Result<Duration, String> {
    let scaled = d.mul_f64(k);
    if scaled < MIN {
        return Err(format!(
            "{key} {} × time_scale {k} is {}µs; it must stay at least 1ms (PostgreSQL keeps microseconds, the \
             workers' timers milliseconds): raise run.time_scale to at least {}",
            format_duration(d),
            scaled.as_micros(),
            MIN.as_secs_f64() / d.as_secs_f64().max(1e-9)
        ));
    }
    Ok(scaled)
}

/// A work model with every duration multiplied by `k`.
pub fn work(m: WorkModel, k: f64) -> WorkModel {
    let s = |d: Duration| d.mul_f64(k);
    match m {
        WorkModel::Fixed(d) => WorkModel::Fixed(s(d)),
        WorkModel::Uniform { min, max } => WorkModel::Uniform { min: s(min), max: s(max) },
        WorkModel::LogNormal { p50, p99 } => WorkModel::LogNormal { p50: s(p50), p99: s(p99) },
        WorkModel::Quantiles { p50, p95, p99 } => WorkModel::Quantiles { p50: s(p50), p95: s(p95), p99: s(p99) },
    }
}
