//! Reports in the scenario's own time units: a run with `run.time_scale`
//! measured scaled times; this divides them by the scale again, in one place,
//! before the expectations are evaluated (so `[expect]` lines use the
//! scenario's units too).
//!
//! Divided by the scale: work, queue wait, end-to-end and pickup latencies,
//! the run's duration, fault recovery times, starvation ages and threshold,
//! phases (and each phase's own numbers), blocker hold and catch-up times,
//! vacuum step times. Multiplied: jobs/s and claims/s (also per phase).
//! Left in wall-clock time: the database round trips (claim, claim_tx,
//! complete, producer lag and enqueue), the idle-wakeup figures, the
//! claim-plan probe and the time series (the database does not run slower
//! at a scale).

use crate::model::summary::{Percentiles, RunSummary};
use crate::scenario::plan::Stop;
use crate::scenario::units::format_duration;
use crate::scenario::{Plan, scale};
use std::time::Duration;

pub(crate) fn unscale(s: &mut RunSummary, plan: &Plan) {
    let k = plan.time_scale;
    s.time_scale = k;
    if k == 1.0 {
        return;
    }
    let t = |v: &mut f64| *v /= k;
    let p = |p: &mut Percentiles| {
        for v in [&mut p.p50, &mut p.p90, &mut p.p95, &mut p.p99, &mut p.p999, &mut p.max] {
            *v /= k;
        }
    };
    // Back to the scenario's durations, rounded to the microsecond they were written in.
    let back = |d: Duration| Duration::from_micros((d.as_secs_f64() / k * 1e6).round() as u64);
    s.work = scale::map_work(plan.workers.work, back).describe();
    if let Stop::After(d) = plan.run.stop {
        s.stop = format_duration(back(d));
    }
    s.throughput.jobs_per_sec *= k;
    s.throughput.claims_per_sec *= k;
    t(&mut s.throughput.duration_s);
    let l = &mut s.latency_ms;
    for q in [&mut l.work, &mut l.end_to_end, &mut l.pickup].into_iter().chain(l.queue_wait.values_mut()) {
        p(q);
    }
    unscale_verification(s, k);
    for ph in &mut s.phases {
        t(&mut ph.start_s);
        t(&mut ph.duration_s);
    }
    for ph in s.by_phase.values_mut() {
        t(&mut ph.start_s);
        t(&mut ph.duration_s);
        ph.throughput.jobs_per_sec *= k;
        ph.throughput.claims_per_sec *= k;
        let l = &mut ph.latency_ms;
        for q in [&mut l.work, &mut l.end_to_end].into_iter().chain(l.queue_wait.values_mut()) {
            p(q);
        }
    }
    s.vacuum.values_mut().for_each(|v| t(&mut v.at_s));
}

/// The times the checkers measure (fault recovery, starvation ages, blocker holds), back to
/// the scenario's units: part of `unscale`, and all `queuebench check` recomputes.
pub(crate) fn unscale_verification(s: &mut RunSummary, k: f64) {
    if k == 1.0 || k == 0.0 {
        return;
    }
    let t = |v: &mut f64| *v /= k;
    t(&mut s.faults.recovery_ms_max);
    t(&mut s.faults.recovery_ms_mean);
    t(&mut s.faults.recovery_ms_total);
    let st = &mut s.starvation;
    t(&mut st.threshold_s);
    t(&mut st.worst_age_s);
    st.max_oldest_ready_age_s.values_mut().for_each(t);
    t(&mut s.horizon.held_s);
    if s.horizon.catch_up_s >= 0.0 {
        t(&mut s.horizon.catch_up_s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::load::{Source, parse_text};
    use crate::scenario::validate::validate;

    #[test]
    fn scaled_times_are_reported_in_the_scenario_units_and_db_latencies_stay() {
        let text =
            "name = \"x\"\n[jobs]\npreload = 1\n[workers]\nwork = \"8s\"\n[run]\nstop = \"10m\"\ntime_scale = 0.01\n";
        let plan = validate(
            parse_text(text).unwrap(),
            Source { path: "t".into(), text: text.into(), overrides: vec![] },
            None,
        )
        .unwrap();
        let mut s = RunSummary::default();
        s.throughput.jobs_per_sec = 100.0;
        s.throughput.duration_s = 6.0;
        s.latency_ms.work.p99 = 80.0;
        s.latency_ms.claim.p99 = 2.0;
        s.latency_ms.queue_wait.insert("default".into(), Percentiles { p50: 10.0, ..Default::default() });
        unscale(&mut s, &plan);
        assert_eq!((s.time_scale, s.work.as_str(), s.stop.as_str()), (0.01, "8s", "600s"));
        assert!((s.throughput.jobs_per_sec - 1.0).abs() < 1e-9 && (s.throughput.duration_s - 600.0).abs() < 1e-6);
        assert!(
            (s.latency_ms.work.p99 - 8000.0).abs() < 1e-6
                && (s.latency_ms.queue_wait["default"].p50 - 1000.0).abs() < 1e-6
        );
        assert_eq!(s.latency_ms.claim.p99, 2.0, "a database round trip is not scaled");
    }
}
