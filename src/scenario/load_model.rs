//! The open load model from `[[jobs.classes]]` and `[[run.phases]]`: job classes with arrival
//! rates, and phases that scale them over time. Validated here (the types are in `plan`);
//! `run::producer` follows it.

use super::plan::{Arrivals, Class, DEFAULT_CLASS, LoadModel, Phase, WorkModel};
use super::raw::{RawClass, RawPhase};
use super::units::parse_duration;
use crate::error::Invalid;
use std::time::Duration;

pub(crate) fn build(
    classes: &[RawClass],
    phases: &[RawPhase],
    arrivals: &str,
    business_row: bool,
    work: impl Fn(&toml::Value) -> Result<WorkModel, Invalid>,
) -> Result<LoadModel, Invalid> {
    let arrivals = match arrivals {
        "constant" => Arrivals::Constant,
        "poisson" => Arrivals::Poisson,
        other => return Err(Invalid::new(format!("jobs.arrivals `{other}`; accepted: constant, poisson"))),
    };
    let mut out = Vec::new();
    for c in classes {
        if c.name.is_empty() || c.name == DEFAULT_CLASS || out.iter().any(|o: &Class| o.name == c.name) {
            return Err(Invalid::new(format!(
                "jobs.classes: `{}` must be a unique name other than \"{DEFAULT_CLASS}\"",
                c.name
            )));
        }
        if !(c.rate > 0.0 && c.rate <= 100_000.0) {
            return Err(Invalid::new(format!(
                "jobs.classes `{}`: rate must be above 0 and at most 100000 per second",
                c.name
            )));
        }
        if !(0..=1_000_000).contains(&c.payload_bytes) {
            return Err(Invalid::new(format!(
                "jobs.classes `{}`: payload_bytes must be between 0 and 1000000",
                c.name
            )));
        }
        let work = c
            .work
            .as_ref()
            .map(&work)
            .transpose()
            .map_err(|e| e.within(format_args!("jobs.classes `{}`: work", c.name)))?;
        out.push(Class {
            name: c.name.clone(),
            priority: c.priority.clamp(i32::MIN as i64, i32::MAX as i64) as i32,
            rate: c.rate,
            payload_bytes: c.payload_bytes as usize,
            work,
        });
    }
    let mut start = Duration::ZERO;
    let mut ps = Vec::new();
    for p in phases {
        let duration = parse_duration(&p.duration)
            .map_err(|e| Invalid::from(e).within(format_args!("run.phases `{}`: duration", p.name)))?;
        if duration.is_zero() || !(p.rate >= 0.0 && p.rate <= 1000.0) {
            return Err(Invalid::new(format!(
                "run.phases `{}`: needs a duration above 0 and a rate multiplier in 0..1000",
                p.name
            )));
        }
        ps.push(Phase { name: p.name.clone(), start, duration, rate: p.rate, warmup: p.warmup });
        start += duration;
    }
    if !out.is_empty() && ps.is_empty() {
        return Err(Invalid::new("jobs.classes needs [[run.phases]] to say how long the producers run"));
    }
    if out.is_empty() && !ps.is_empty() {
        return Err(Invalid::new("run.phases needs [[jobs.classes]] to produce jobs"));
    }
    Ok(LoadModel { classes: out, phases: ps, arrivals, business_row })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(name: &str, rate: f64) -> RawClass {
        RawClass { name: name.into(), priority: 0, rate, payload_bytes: 0, work: None }
    }

    fn phase(name: &str, d: &str, rate: f64, warmup: bool) -> RawPhase {
        RawPhase { name: name.into(), duration: d.into(), rate, warmup }
    }

    #[test]
    fn phases_follow_each_other() {
        let m = build(
            &[class("high", 50.0)],
            &[phase("warm-up", "1s", 0.5, true), phase("steady", "2s", 1.0, false)],
            "poisson",
            false,
            |_| unreachable!(),
        )
        .unwrap();
        assert_eq!(m.duration(), Duration::from_secs(3));
        assert_eq!(m.phase_at(Duration::from_millis(1500)).unwrap().name, "steady");
        assert_eq!(m.warmup_end(), Duration::from_secs(1));
        assert_eq!(m.arrivals, Arrivals::Poisson);
    }

    #[test]
    fn bad_models_are_errors() {
        assert!(
            build(&[class("a", 0.0)], &[phase("p", "1s", 1.0, false)], "constant", false, |_| unreachable!()).is_err()
        );
        assert!(
            build(&[class("default", 1.0)], &[phase("p", "1s", 1.0, false)], "constant", false, |_| unreachable!())
                .is_err()
        );
        assert!(build(&[class("a", 1.0)], &[], "constant", false, |_| unreachable!()).is_err());
        assert!(
            build(&[class("a", 1.0)], &[phase("p", "1s", 1.0, false)], "bursty", false, |_| unreachable!()).is_err()
        );
    }
}
