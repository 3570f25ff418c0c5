//! The `[workers]` values that are more than a number: the idle schedule, the work model,
//! priority-quota's quotas and priority-pools' pools (with the classes they may name), and
//! `[postgres]` setting values. Each returns `Invalid` naming what is accepted; `validate`
//! places it at its key.

use super::plan::{DEFAULT_CLASS, Idle, Wakeup, WorkModel};
use super::raw::RawScenario;
use super::units::parse_duration;
use crate::adapter::builtin as strategy;
use crate::error::Invalid;
use std::time::Duration;

/// The classes a scenario's jobs can have, in declaration order: its
/// `[[jobs.classes]]`, then "default" (preloaded jobs), and the ones that
/// actually get jobs (a class nobody claims would starve by construction).
pub(super) fn job_classes(raw: &RawScenario) -> (Vec<&str>, Vec<&str>) {
    let mut accepted: Vec<&str> = raw.jobs.classes.iter().map(|c| c.name.as_str()).collect();
    let mut required = accepted.clone();
    if !accepted.contains(&DEFAULT_CLASS) {
        accepted.push(DEFAULT_CLASS);
        if raw.jobs.preload > 0 {
            required.push(DEFAULT_CLASS);
        }
    }
    (accepted, required)
}

/// `workers.quotas` as (class, jobs per claim) in class order; empty unless
/// the strategy is `priority-quota`, which needs one for every class.
pub(super) fn quotas(raw: &RawScenario) -> std::result::Result<Vec<(String, u32)>, Invalid> {
    let q = &raw.workers.quotas;
    if raw.workers.strategy != "priority-quota" {
        if !q.is_empty() {
            return Err(Invalid::new(format!(
                "only strategy = \"priority-quota\" uses quotas (strategy is \"{}\"); remove them or switch",
                raw.workers.strategy
            )));
        }
        return Ok(Vec::new());
    }
    let (accepted, required) = job_classes(raw);
    for (class, n) in q {
        if !strategy::safe_class_name(class) {
            return Err(Invalid::new(format!("`{class}`: class names here may use only letters, digits, `-` and `_`")));
        }
        if !accepted.contains(&class.as_str()) {
            return Err(Invalid::new(format!(
                "`{class}` is not a class of this scenario; accepted: {}",
                accepted.join(", ")
            )));
        }
        if !(1..=1000).contains(n) {
            return Err(Invalid::new(format!("`{class}`: jobs per claim must be between 1 and 1000, got {n}")));
        }
    }
    let missing: Vec<&str> = required.iter().copied().filter(|c| !q.contains_key(*c)).collect();
    if !missing.is_empty() {
        return Err(Invalid::new(format!(
            "no quota for {}: a class without a quota is never claimed; priority-quota needs one for every class ({})",
            missing.join(", "),
            required.join(", ")
        )));
    }
    Ok(accepted.iter().filter_map(|c| q.get(*c).map(|n| (c.to_string(), *n as u32))).collect())
}

/// `priority-pools`: every group is a pool named after the class it serves,
/// and every class that gets jobs has a pool.
pub(super) fn pools(raw: &RawScenario) -> std::result::Result<(), Invalid> {
    let (accepted, required) = job_classes(raw);
    let groups = &raw.workers.groups;
    if groups.is_empty() {
        return Err(Invalid::new(format!(
            "strategy = \"priority-pools\" needs [[workers.groups]], one per class, named after it ({})",
            required.join(", ")
        )));
    }
    for g in groups {
        if !accepted.contains(&g.name.as_str()) {
            return Err(Invalid::new(format!(
                "group `{}`: with priority-pools a group's name is the class its workers claim; accepted: {}",
                g.name,
                accepted.join(", ")
            )));
        }
    }
    let missing: Vec<&str> = required.iter().copied().filter(|c| !groups.iter().any(|g| g.name == *c)).collect();
    if !missing.is_empty() {
        return Err(Invalid::new(format!(
            "no pool for {}: a class without a group of workers is never claimed",
            missing.join(", ")
        )));
    }
    Ok(())
}

/// `[workers] idle_backoff / idle_jitter / wakeup / fallback_poll`; an error names its key in `[workers]`.
pub(super) fn idle(w: &super::raw::RawWorkers) -> std::result::Result<Idle, Invalid> {
    const ACCEPTED: &str = "accepted: \"5ms\" or a schedule [\"100ms\", \"250ms\", \"2s\"]";
    let step = |v: &toml::Value| match v.as_str() {
        Some(text) => parse_duration(text).map_err(Invalid::from),
        None => Err(Invalid::new(format!("{v} is not a duration string; {ACCEPTED}"))),
    };
    let backoff = match &w.idle_backoff {
        toml::Value::Array(steps) if steps.is_empty() => {
            Err(Invalid::new(format!("the schedule is empty; {ACCEPTED}")))
        }
        toml::Value::Array(steps) => steps.iter().map(step).collect(),
        other => step(other).map(|d| vec![d]),
    }
    .map_err(|e| Invalid::at("idle_backoff", e.reason))?;
    let wakeup = match w.wakeup.as_str() {
        "poll" => Wakeup::Poll,
        "listen" => Wakeup::Listen,
        other => {
            return Err(Invalid::at("wakeup", format!("unknown wakeup `{other}`; accepted: \"poll\" or \"listen\"")));
        }
    };
    let fallback_poll = parse_duration(&w.fallback_poll).map_err(|e| Invalid::at("fallback_poll", e.to_string()))?;
    if fallback_poll < Duration::from_millis(1) {
        return Err(Invalid::at(
            "fallback_poll",
            "must be at least 1ms (it bounds how long a missed notification delays work)",
        ));
    }
    Ok(Idle { backoff, jitter: w.idle_jitter, wakeup, fallback_poll })
}

pub(super) fn work_model(value: &toml::Value) -> std::result::Result<WorkModel, Invalid> {
    const ACCEPTED: &str = "accepted: \"5ms\", { p50 = \"8ms\", p99 = \"70ms\" }, { p50 = \"8s\", p95 = \"35s\", p99 = \"70s\" } or { min = \"1ms\", max = \"5ms\" }";
    let dur = |v: Option<&toml::Value>, key: &str| -> std::result::Result<Duration, Invalid> {
        let text = v
            .and_then(|v| v.as_str())
            .ok_or_else(|| Invalid::new(format!("`{key}` must be a duration string; {ACCEPTED}")))?;
        Ok(parse_duration(text)?)
    };
    match value {
        toml::Value::String(s) => Ok(WorkModel::Fixed(parse_duration(s)?)),
        toml::Value::Table(t) => {
            let mut keys: Vec<&str> = t.keys().map(String::as_str).collect();
            keys.sort_unstable();
            match keys.as_slice() {
                ["p50", "p95", "p99"] => {
                    let (p50, p95, p99) =
                        (dur(t.get("p50"), "p50")?, dur(t.get("p95"), "p95")?, dur(t.get("p99"), "p99")?);
                    if p50.is_zero() || p95 <= p50 || p99 <= p95 {
                        return Err(Invalid::new("needs 0 < p50 < p95 < p99"));
                    }
                    Ok(WorkModel::Quantiles { p50, p95, p99 })
                }
                ["p50", "p99"] => {
                    let (p50, p99) = (dur(t.get("p50"), "p50")?, dur(t.get("p99"), "p99")?);
                    if p50.is_zero() || p99 <= p50 {
                        return Err(Invalid::new("needs 0 < p50 < p99"));
                    }
                    Ok(WorkModel::LogNormal { p50, p99 })
                }
                ["max", "min"] => {
                    let (min, max) = (dur(t.get("min"), "min")?, dur(t.get("max"), "max")?);
                    if max < min {
                        return Err(Invalid::new("needs min <= max"));
                    }
                    Ok(WorkModel::Uniform { min, max })
                }
                _ => Err(Invalid::new(format!("unexpected keys {keys:?}; {ACCEPTED}"))),
            }
        }
        _ => Err(Invalid::new(ACCEPTED)),
    }
}

pub(super) fn setting_value(v: &toml::Value) -> std::result::Result<String, Invalid> {
    match v {
        toml::Value::String(s) => Ok(s.clone()),
        toml::Value::Integer(i) => Ok(i.to_string()),
        toml::Value::Float(f) => Ok(f.to_string()),
        toml::Value::Boolean(b) => Ok(if *b { "on" } else { "off" }.into()),
        _ => Err(Invalid::new("a setting must be a string, number or boolean")),
    }
}
