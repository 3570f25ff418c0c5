//! Validation: `RawScenario` → `Plan`. Every rule that can be checked
//! without a database is checked here, once, and each error names the file,
//! the line and the key (or the `--set` that supplied it) and what is accepted.

use super::faults::{self, Fault, JobType};
use super::horizon::{self, Blocker, VacuumStep};
use super::load::Source;
use super::load_model::{self, DEFAULT_CLASS, LoadModel};
use super::raw::{Fencing, Mode, RawExpect, RawScenario, Reclaim};
use super::units::{format_duration, parse_duration};
use crate::error::{Error, Result};
use crate::model::expect::{self, Expectation};
use crate::strategy::{self, Strategy};
use std::collections::HashMap;
use std::time::Duration;

/// The validated, typed scenario. Later stages read only this.
#[derive(Debug, Clone)]
pub struct Plan {
    pub name: String,
    pub description: String,
    pub seed: u64,
    pub source: Source,
    pub preload: u64,
    pub max_attempts: i32,
    pub workers: u32,
    pub batch: u32,
    pub mode: Mode,
    pub work: WorkModel,
    pub max_claims: Option<u64>,
    pub idle: Idle,
    pub strategy: Strategy,
    /// The values of the priority claims' parameters.
    pub ordering: ClaimOrder,
    pub lease: Duration,
    pub fencing: Fencing,
    pub heartbeat: Option<Duration>,
    pub reclaim: Reclaim,
    pub reaper_interval: Duration,
    pub retry: Retry,
    pub job_types: Vec<JobType>,
    /// Job id → index into `job_types`.
    pub job_type_of: HashMap<i64, u16>,
    pub groups: Vec<(String, Vec<u32>)>,
    pub faults: Vec<Fault>,
    pub load: LoadModel,
    /// None: `run.sample_interval = "off"` (no Postgres time series; the progress line still runs).
    pub sample_interval: Option<Duration>,
    pub blockers: Vec<Blocker>,
    pub vacuum: Vec<VacuumStep>,
    /// Storage parameters for the jobs table (ALTER TABLE jobs SET (...)).
    pub table_settings: Vec<(String, String)>,
    pub plan_probe: Option<Duration>,
    /// A class whose oldest ready job waits longer than this is starving.
    pub starvation_threshold: Duration,
    pub stop: Stop,
    pub timeout: Duration,
    /// How long the workers wait for a lost server to come back before the run ends (exit 3).
    pub reconnect_timeout: Duration,
    pub effects_table: bool,
    pub pg_settings: Vec<(String, String)>,
    pub expectations: Vec<Expectation>,
    /// `[baseline.tolerance]` on top of the defaults.
    pub tolerances: crate::model::tolerance::Tolerances,
    /// `run.time_scale`: every duration above is already multiplied by it
    /// (`scale.rs`); reports divide measured times by it again.
    pub time_scale: f64,
}

/// Backoff before a failed or reclaimed job runs again: min(cap, base × 2^(attempt-1)),
/// then, with jitter, a uniform draw in [0, that] ("full jitter").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Retry {
    pub base: Duration,
    pub cap: Duration,
    pub jitter: bool,
}

/// What `priority-aging` and `deadline-first` (or a custom claim using the
/// same parameters) order by, besides priority and age.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClaimOrder {
    /// `:aging_step_secs`: one point of priority per step ready.
    pub aging_step: Duration,
    /// `:aging_cap`: the most priority aging adds.
    pub aging_cap: i64,
    /// `:deadline_secs`: jobs ready longer than this go first.
    pub deadline: Duration,
}

impl Plan {
    pub fn job_type(&self, id: i64) -> Option<&JobType> {
        self.job_type_of.get(&id).map(|&i| &self.job_types[i as usize])
    }

    /// Does a `postgres_restart` fault stop the server mid-run?
    pub fn restarts_server(&self) -> bool {
        self.faults.iter().any(|f| matches!(f.kind, super::faults::Kind::PostgresRestart { .. }))
    }

    /// Why a restart cannot test durability (a commit may be acknowledged before it is on disk), if so.
    pub fn durability_untestable(&self) -> Option<String> {
        self.pg_settings
            .iter()
            .find(|(k, v)| {
                matches!(k.as_str(), "fsync" | "synchronous_commit")
                    && matches!(v.to_ascii_lowercase().as_str(), "off" | "false" | "0" | "no")
            })
            .map(|(k, v)| format!("{k} = {v}"))
    }
}

/// How a worker waits after a claim that returned nothing (`run::idle` follows it).
#[derive(Debug, Clone, PartialEq)]
pub struct Idle {
    /// Sleep after the 1st, 2nd, … empty claim in a row; the last step repeats; work resets it.
    pub backoff: Vec<Duration>,
    /// Full jitter: each sleep is a uniform draw in [0, step].
    pub jitter: bool,
    pub wakeup: Wakeup,
    /// With `Wakeup::Listen`: the longest wait without a notification.
    pub fallback_poll: Duration,
}

/// How an idle worker learns of new work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wakeup {
    /// Sleep the backoff schedule, then claim again.
    Poll,
    /// LISTEN on the run's channel; claim on a notification or after `fallback_poll`.
    Listen,
}

impl Wakeup {
    pub fn name(self) -> &'static str {
        match self {
            Wakeup::Poll => "poll",
            Wakeup::Listen => "listen",
        }
    }
}

impl Idle {
    pub fn describe(&self) -> String {
        let steps: Vec<String> = self.backoff.iter().map(|d| format_duration(*d)).collect();
        let jitter = if self.jitter { " with full jitter" } else { "" };
        match self.wakeup {
            Wakeup::Poll => format!("poll, backoff {}{jitter}", steps.join(" → ")),
            Wakeup::Listen => format!("listen, fallback poll {}", format_duration(self.fallback_poll)),
        }
    }
}

/// When the workers stop.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stop {
    /// When no job is queued or running any more.
    Drained,
    /// When every worker has made `max_claims` claim attempts (like `pgbench -t`).
    Claims,
    /// After a fixed time (like `pgbench -T`).
    After(Duration),
}

/// How long one execution of a job takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum WorkModel {
    Fixed(Duration),
    Uniform {
        min: Duration,
        max: Duration,
    },
    /// Lognormal with the given median and 99th percentile.
    LogNormal {
        p50: Duration,
        p99: Duration,
    },
    /// Hits three measured percentiles exactly: log-normal pieces joined at
    /// p50, p95 and p99 (the tails continue the outer pieces' slopes).
    Quantiles {
        p50: Duration,
        p95: Duration,
        p99: Duration,
    },
}

impl WorkModel {
    pub fn describe(&self) -> String {
        match self {
            WorkModel::Fixed(d) => format_duration(*d),
            WorkModel::Uniform { min, max } => format!("uniform {}..{}", format_duration(*min), format_duration(*max)),
            WorkModel::LogNormal { p50, p99 } => {
                format!("lognormal p50 {} p99 {}", format_duration(*p50), format_duration(*p99))
            }
            WorkModel::Quantiles { p50, p95, p99 } => {
                format!("p50 {} p95 {} p99 {}", format_duration(*p50), format_duration(*p95), format_duration(*p99))
            }
        }
    }
}

impl Stop {
    pub fn describe(&self) -> String {
        match self {
            Stop::Drained => "drained".into(),
            Stop::Claims => "claims".into(),
            Stop::After(d) => format_duration(*d),
        }
    }
}

/// Checks `raw` and resolves every default. `seed` (from `--seed`) wins over the file's.
pub fn validate(raw: RawScenario, source: Source, seed: Option<u64>) -> Result<Plan> {
    let err = |key: &str, msg: String| Error::usage(format!("{}: {msg}", source.locate(key)));
    if raw.name.trim().is_empty() || raw.name.contains(['/', '\\']) {
        return Err(err("name", "must be a non-empty name without slashes (it names the results folder)".into()));
    }
    let positive = |key: &str, v: i64| -> Result<u32> {
        if v <= 0 || v > 100_000 {
            return Err(err(key, format!("must be between 1 and 100000, got {v}")));
        }
        Ok(v as u32)
    };
    let time_scale = raw.run.time_scale;
    if !(time_scale.is_finite() && super::scale::RANGE.contains(&time_scale)) {
        return Err(err(
            "run.time_scale",
            format!("must be between 0.0001 and 1000 (0.01 runs 70 s of work in 0.7 s), got {time_scale}"),
        ));
    }
    let workers = positive("workers.count", raw.workers.count)?;
    let batch = positive("workers.batch", raw.workers.batch)?;
    let max_attempts = positive("jobs.max_attempts", raw.jobs.max_attempts)? as i32;
    if raw.jobs.preload < 0 || raw.jobs.preload > 1_000_000_000 {
        return Err(err("jobs.preload", format!("must be between 0 and 1000000000, got {}", raw.jobs.preload)));
    }
    let max_claims = match raw.workers.max_claims {
        Some(n) if n <= 0 => {
            return Err(err("workers.max_claims", format!("must be at least 1, got {n}")));
        }
        other => other.map(|n| n as u64),
    };
    let duration = |key: &str, text: &str| parse_duration(text).map_err(|e| err(key, e));
    let lease = duration("lease.duration", &raw.lease.duration)?;
    if lease < Duration::from_millis(1) {
        return Err(err("lease.duration", "must be at least 1ms".into()));
    }
    let idle = idle(&raw.workers).map_err(|e| err(&e.0, e.1))?;
    let timeout = duration("run.timeout", &raw.run.timeout)?;
    let reconnect_timeout = duration("run.reconnect_timeout", &raw.run.reconnect_timeout)?;
    if reconnect_timeout < Duration::from_millis(100) {
        return Err(err("run.reconnect_timeout", "must be at least 100ms, e.g. \"30s\"".into()));
    }
    let stop = match raw.run.stop.as_str() {
        "drained" => Stop::Drained,
        "claims" => Stop::Claims,
        other => Stop::After(
            parse_duration(other)
                .map_err(|e| err("run.stop", format!("accepted: \"drained\", \"claims\" or a duration; {e}")))?,
        ),
    };
    if stop == Stop::Claims && max_claims.is_none() {
        return Err(err("run.stop", "stop = \"claims\" needs workers.max_claims".into()));
    }
    let work = work_model(&raw.workers.work).map_err(|e| err("workers.work", e))?;
    let quotas = quotas(&raw).map_err(|e| err("workers.quotas", e))?;
    let strategy: Strategy = strategy::resolve(&raw.workers.strategy, &raw.strategies, raw.lease.fencing, &quotas)
        .map_err(|e| err("workers.strategy", e))?;
    // A quota claim's batch is the sum of its quotas: `workers.batch` may be
    // left out or set to that sum, nothing else (it would mean nothing).
    let batch = if quotas.is_empty() {
        batch
    } else {
        let sum: u32 = quotas.iter().map(|(_, n)| n).sum();
        if batch != 1 && batch != sum {
            return Err(err(
                "workers.batch",
                format!(
                    "with priority-quota the batch is the sum of workers.quotas ({sum}); leave it out or set it to {sum}, got {batch}"
                ),
            ));
        }
        sum
    };
    let pg_settings = raw
        .postgres
        .settings
        .iter()
        .map(|(k, v)| setting_value(v).map(|v| (k.clone(), v)).map_err(|e| err(&format!("postgres.settings.{k}"), e)))
        .collect::<Result<Vec<_>>>()?;
    let class_names: Vec<&str> = raw.jobs.classes.iter().map(|c| c.name.as_str()).collect();
    let vacuum_names: Vec<&str> = raw.vacuum.iter().map(|v| v.name.as_str()).collect();
    let phase_names: Vec<&str> = raw.run.phases.iter().map(|p| p.name.as_str()).collect();
    let metric_names = crate::model::summary::RunSummary::metric_names(&class_names, &vacuum_names, &phase_names);
    let expectations = raw
        .expect
        .iter()
        .map(|(metric, e)| {
            let parsed = match e {
                RawExpect::Expr(expr) => expect::parse_expectation(metric, expr, &metric_names),
                RawExpect::Table(t) if t.expr.contains("abort") => {
                    Err("write abort = true beside expr, not inside it".to_string())
                }
                RawExpect::Table(t) => {
                    let expr = if t.abort { format!("{}, abort", t.expr) } else { t.expr.clone() };
                    expect::parse_expectation(metric, &expr, &metric_names)
                }
            };
            parsed.map_err(|e| err(&format!("expect.{metric}"), e))
        })
        .collect::<Result<Vec<_>>>()?;
    let tolerances = crate::model::tolerance::Tolerances::from_pairs(raw.baseline.tolerance.iter(), &metric_names)
        .map_err(|(k, e)| err(&format!("baseline.tolerance.{k}"), e))?;
    let heartbeat = match raw.lease.heartbeat.as_str() {
        "off" => None,
        text => Some(duration("lease.heartbeat", text)?),
    };
    if let Some(h) = heartbeat.filter(|h| h.is_zero() || *h >= lease) {
        return Err(err(
            "lease.heartbeat",
            format!(
                "{} must be above 0 and shorter than lease.duration ({}): a heartbeat extends the lease before it \
                 runs out (a third of the lease is usual), or \"off\"",
                format_duration(h),
                format_duration(lease)
            ),
        ));
    }
    if raw.lease.reclaim == Reclaim::Inline
        && raw.workers.strategy != "skip-locked-inline-reclaim"
        && !raw.strategies.contains_key(&raw.workers.strategy)
    {
        return Err(err("lease.reclaim", "reclaim = \"inline\" needs a claim that takes expired leases: strategy = \"skip-locked-inline-reclaim\" or your own".into()));
    }
    let retry = Retry {
        base: duration("retry.base", &raw.retry.base)?,
        cap: duration("retry.cap", &raw.retry.cap)?,
        jitter: raw.retry.jitter,
    };
    let (job_types, job_type_of) =
        faults::job_types(&raw.jobs.types, raw.jobs.preload as u64).map_err(|e| err("jobs.types", e))?;
    let groups = faults::groups(&raw.workers.groups, workers).map_err(|e| err("workers.groups", e))?;
    if raw.workers.strategy == "priority-pools" {
        pools(&raw).map_err(|e| err("workers.groups", e))?;
    }
    let fault_list = raw
        .faults
        .iter()
        .enumerate()
        .map(|(i, f)| {
            faults::fault(i, f, &groups, workers)
                .map_err(|e| err("faults", format!("[[faults]] #{} (kind = \"{}\"): {e}", i + 1, f.kind)))
        })
        .collect::<Result<Vec<_>>>()?;
    let load =
        load_model::build(&raw.jobs.classes, &raw.run.phases, &raw.jobs.arrivals, raw.jobs.business_row, work_model)
            .map_err(|e| err("jobs.classes", e))?;
    let sample_interval = match raw.run.sample_interval.as_str() {
        "off" => None,
        text => {
            let d = duration("run.sample_interval", text)?;
            if d < Duration::from_millis(100) {
                return Err(err("run.sample_interval", "must be at least 100ms, or \"off\"".into()));
            }
            Some(d)
        }
    };
    let ordering = ClaimOrder {
        aging_step: duration("workers.aging_step", &raw.workers.aging_step)?,
        aging_cap: raw.workers.aging_cap,
        deadline: duration("workers.deadline", &raw.workers.deadline)?,
    };
    if ordering.aging_step < Duration::from_millis(1) {
        return Err(err("workers.aging_step", "must be at least 1ms (one point of priority per step waited)".into()));
    }
    if !(0..=1_000_000).contains(&ordering.aging_cap) {
        return Err(err(
            "workers.aging_cap",
            format!("must be between 0 and 1000000 (0 turns aging off), got {}", ordering.aging_cap),
        ));
    }
    let starvation_threshold = duration("run.starvation_threshold", &raw.run.starvation_threshold)?;
    if starvation_threshold.is_zero() {
        return Err(err("run.starvation_threshold", "must be above 0, e.g. \"10s\"".into()));
    }
    if raw.jobs.preload == 0 && !load.is_open() && stop == Stop::Drained {
        return Err(err("jobs.preload", "nothing to do: preload jobs, or add [[jobs.classes]] producers".into()));
    }
    let blockers = horizon::blockers(&raw.blockers).map_err(|e| err("blockers", e))?;
    let vacuum = horizon::vacuum_steps(&raw.vacuum).map_err(|e| err("vacuum", e))?;
    let table_settings = raw
        .postgres
        .table_settings
        .iter()
        .map(|(k, v)| {
            let key_ok = !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
            let value = setting_value(v).map_err(|e| err(&format!("postgres.table_settings.{k}"), e))?;
            let value_ok = value.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-');
            if !key_ok || !value_ok {
                return Err(err(
                    &format!("postgres.table_settings.{k}"),
                    "names and values are plain words or numbers".into(),
                ));
            }
            Ok((k.clone(), value))
        })
        .collect::<Result<Vec<_>>>()?;
    let plan_probe = match raw.run.plan_probe.as_str() {
        "off" => None,
        text => Some(duration("run.plan_probe", text)?.max(Duration::from_millis(100))),
    };
    let mut plan = Plan {
        blockers,
        vacuum,
        table_settings,
        plan_probe,
        load,
        sample_interval,
        starvation_threshold,
        ordering,
        heartbeat,
        reclaim: raw.lease.reclaim,
        reaper_interval: duration("lease.reaper_interval", &raw.lease.reaper_interval)?,
        retry,
        job_types,
        job_type_of,
        groups,
        faults: fault_list,
        name: raw.name,
        description: raw.description,
        seed: seed.or(raw.seed).unwrap_or_else(rand::random),
        source,
        preload: raw.jobs.preload as u64,
        max_attempts,
        workers,
        batch,
        mode: raw.workers.mode,
        work,
        max_claims,
        idle,
        strategy,
        lease,
        fencing: raw.lease.fencing,
        stop,
        timeout,
        reconnect_timeout,
        effects_table: raw.run.effects_table,
        pg_settings,
        expectations,
        tolerances,
        time_scale,
    };
    if let Err(e) = super::scale::apply(&mut plan) {
        return Err(Error::usage(format!("{}: {e}", plan.source.locate("run.time_scale"))));
    }
    Ok(plan)
}

/// `[workers] idle_backoff / idle_jitter / wakeup / fallback_poll`; an error names its key.
/// The classes a scenario's jobs can have, in declaration order: its
/// `[[jobs.classes]]`, then "default" (preloaded jobs), and the ones that
/// actually get jobs (a class nobody claims would starve by construction).
fn job_classes(raw: &RawScenario) -> (Vec<&str>, Vec<&str>) {
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
fn quotas(raw: &RawScenario) -> std::result::Result<Vec<(String, u32)>, String> {
    let q = &raw.workers.quotas;
    if raw.workers.strategy != "priority-quota" {
        if !q.is_empty() {
            return Err(format!(
                "only strategy = \"priority-quota\" uses quotas (strategy is \"{}\"); remove them or switch",
                raw.workers.strategy
            ));
        }
        return Ok(Vec::new());
    }
    let (accepted, required) = job_classes(raw);
    for (class, n) in q {
        if !strategy::safe_class_name(class) {
            return Err(format!("`{class}`: class names here may use only letters, digits, `-` and `_`"));
        }
        if !accepted.contains(&class.as_str()) {
            return Err(format!("`{class}` is not a class of this scenario; accepted: {}", accepted.join(", ")));
        }
        if !(1..=1000).contains(n) {
            return Err(format!("`{class}`: jobs per claim must be between 1 and 1000, got {n}"));
        }
    }
    let missing: Vec<&str> = required.iter().copied().filter(|c| !q.contains_key(*c)).collect();
    if !missing.is_empty() {
        return Err(format!(
            "no quota for {}: a class without a quota is never claimed; priority-quota needs one for every class ({})",
            missing.join(", "),
            required.join(", ")
        ));
    }
    Ok(accepted.iter().filter_map(|c| q.get(*c).map(|n| (c.to_string(), *n as u32))).collect())
}

/// `priority-pools`: every group is a pool named after the class it serves,
/// and every class that gets jobs has a pool.
fn pools(raw: &RawScenario) -> std::result::Result<(), String> {
    let (accepted, required) = job_classes(raw);
    let groups = &raw.workers.groups;
    if groups.is_empty() {
        return Err(format!(
            "strategy = \"priority-pools\" needs [[workers.groups]], one per class, named after it ({})",
            required.join(", ")
        ));
    }
    for g in groups {
        if !accepted.contains(&g.name.as_str()) {
            return Err(format!(
                "group `{}`: with priority-pools a group's name is the class its workers claim; accepted: {}",
                g.name,
                accepted.join(", ")
            ));
        }
    }
    let missing: Vec<&str> = required.iter().copied().filter(|c| !groups.iter().any(|g| g.name == *c)).collect();
    if !missing.is_empty() {
        return Err(format!("no pool for {}: a class without a group of workers is never claimed", missing.join(", ")));
    }
    Ok(())
}

fn idle(w: &super::raw::RawWorkers) -> std::result::Result<Idle, (String, String)> {
    const ACCEPTED: &str = "accepted: \"5ms\" or a schedule [\"100ms\", \"250ms\", \"2s\"]";
    let key = |k: &str| format!("workers.{k}");
    let step = |v: &toml::Value| match v.as_str() {
        Some(text) => parse_duration(text),
        None => Err(format!("{v} is not a duration string; {ACCEPTED}")),
    };
    let backoff = match &w.idle_backoff {
        toml::Value::Array(steps) if steps.is_empty() => Err(format!("the schedule is empty; {ACCEPTED}")),
        toml::Value::Array(steps) => steps.iter().map(step).collect(),
        other => step(other).map(|d| vec![d]),
    }
    .map_err(|e| (key("idle_backoff"), e))?;
    let wakeup = match w.wakeup.as_str() {
        "poll" => Wakeup::Poll,
        "listen" => Wakeup::Listen,
        other => return Err((key("wakeup"), format!("unknown wakeup `{other}`; accepted: \"poll\" or \"listen\""))),
    };
    let fallback_poll = parse_duration(&w.fallback_poll).map_err(|e| (key("fallback_poll"), e))?;
    if fallback_poll < Duration::from_millis(1) {
        return Err((
            key("fallback_poll"),
            "must be at least 1ms (it bounds how long a missed notification delays work)".into(),
        ));
    }
    Ok(Idle { backoff, jitter: w.idle_jitter, wakeup, fallback_poll })
}

fn work_model(value: &toml::Value) -> std::result::Result<WorkModel, String> {
    const ACCEPTED: &str = "accepted: \"5ms\", { p50 = \"8ms\", p99 = \"70ms\" }, { p50 = \"8s\", p95 = \"35s\", p99 = \"70s\" } or { min = \"1ms\", max = \"5ms\" }";
    let dur = |v: Option<&toml::Value>, key: &str| -> std::result::Result<Duration, String> {
        let text =
            v.and_then(|v| v.as_str()).ok_or_else(|| format!("`{key}` must be a duration string; {ACCEPTED}"))?;
        parse_duration(text)
    };
    match value {
        toml::Value::String(s) => parse_duration(s).map(WorkModel::Fixed),
        toml::Value::Table(t) => {
            let mut keys: Vec<&str> = t.keys().map(String::as_str).collect();
            keys.sort_unstable();
            match keys.as_slice() {
                ["p50", "p95", "p99"] => {
                    let (p50, p95, p99) =
                        (dur(t.get("p50"), "p50")?, dur(t.get("p95"), "p95")?, dur(t.get("p99"), "p99")?);
                    if p50.is_zero() || p95 <= p50 || p99 <= p95 {
                        return Err("needs 0 < p50 < p95 < p99".into());
                    }
                    Ok(WorkModel::Quantiles { p50, p95, p99 })
                }
                ["p50", "p99"] => {
                    let (p50, p99) = (dur(t.get("p50"), "p50")?, dur(t.get("p99"), "p99")?);
                    if p50.is_zero() || p99 <= p50 {
                        return Err("needs 0 < p50 < p99".into());
                    }
                    Ok(WorkModel::LogNormal { p50, p99 })
                }
                ["max", "min"] => {
                    let (min, max) = (dur(t.get("min"), "min")?, dur(t.get("max"), "max")?);
                    if max < min {
                        return Err("needs min <= max".into());
                    }
                    Ok(WorkModel::Uniform { min, max })
                }
                _ => Err(format!("unexpected keys {keys:?}; {ACCEPTED}")),
            }
        }
        _ => Err(ACCEPTED.into()),
    }
}

fn setting_value(v: &toml::Value) -> std::result::Result<String, String> {
    match v {
        toml::Value::String(s) => Ok(s.clone()),
        toml::Value::Integer(i) => Ok(i.to_string()),
        toml::Value::Float(f) => Ok(f.to_string()),
        toml::Value::Boolean(b) => Ok(if *b { "on" } else { "off" }.into()),
        _ => Err("a setting must be a string, number or boolean".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::load::{Source, parse_text};
    use super::*;

    fn plan(text: &str) -> Result<Plan> {
        // Every scenario needs work; tests that do not say otherwise get one preloaded job.
        let text = &if text.contains("[jobs]") { text.to_string() } else { format!("{text}[jobs]\npreload = 1\n") };
        let raw = parse_text(text).map_err(Error::usage)?;
        let source = Source { path: "t.toml".into(), text: text.into(), overrides: vec![] };
        validate(raw, source, Some(1))
    }

    #[test]
    fn a_scenario_with_nothing_to_do_is_an_error() {
        let raw = parse_text("name = \"x\"\n").unwrap();
        let source = Source { path: "t.toml".into(), text: "name = \"x\"\n".into(), overrides: vec![] };
        assert!(validate(raw, source, Some(1)).unwrap_err().to_string().contains("nothing to do"));
    }

    #[test]
    fn the_sampler_can_be_turned_off() {
        assert_eq!(plan("name = \"x\"\n").unwrap().sample_interval, Some(Duration::from_secs(1)));
        assert_eq!(plan("name = \"x\"\n[run]\nsample_interval = \"off\"\n").unwrap().sample_interval, None);
        let e = plan("name = \"x\"\n[run]\nsample_interval = \"50ms\"\n").unwrap_err().to_string();
        assert!(e.contains("run.sample_interval") && e.contains("\"off\""), "{e}");
    }

    #[test]
    fn defaults_resolve() {
        let p = plan("name = \"x\"\n[jobs]\npreload = 1\n").unwrap();
        assert_eq!((p.workers, p.batch, p.strategy.name.as_str()), (1, 1, "skip-locked"));
        assert_eq!(p.stop, Stop::Drained);
        assert_eq!(p.work, WorkModel::Fixed(Duration::ZERO));
    }

    #[test]
    fn zero_counts_name_the_line() {
        let e = plan("name = \"x\"\n[workers]\ncount = 0\n").unwrap_err().to_string();
        assert!(e.starts_with("t.toml:3: workers.count: must be between 1"), "{e}");
        let e = plan("name = \"x\"\n[workers]\nbatch = 0\n").unwrap_err().to_string();
        assert!(e.contains("t.toml:3: workers.batch"), "{e}");
    }

    #[test]
    fn work_models_parse() {
        let p = plan("name = \"x\"\n[workers]\nwork = { p50 = \"8ms\", p99 = \"70ms\" }\n").unwrap();
        assert!(matches!(p.work, WorkModel::LogNormal { .. }));
        let p = plan("name = \"x\"\n[workers]\nwork = { min = \"1ms\", max = \"5ms\" }\n").unwrap();
        assert!(matches!(p.work, WorkModel::Uniform { .. }));
        assert!(plan("name = \"x\"\n[workers]\nwork = { p50 = \"8ms\" }\n").is_err());
        assert!(plan("name = \"x\"\n[workers]\nwork = 5\n").is_err());
    }

    #[test]
    fn idle_backoff_is_a_duration_or_a_schedule() {
        let p = plan("name = \"x\"\n").unwrap();
        assert_eq!(
            p.idle,
            Idle {
                backoff: vec![Duration::from_millis(5)],
                jitter: false,
                wakeup: Wakeup::Poll,
                fallback_poll: Duration::from_secs(2)
            }
        );
        let p = plan(
            "name = \"x\"\n[workers]\nidle_backoff = [\"100ms\", \"2s\"]\nidle_jitter = true\nwakeup = \"listen\"\n",
        )
        .unwrap();
        assert_eq!(p.idle.backoff, [Duration::from_millis(100), Duration::from_secs(2)]);
        assert!(p.idle.jitter && p.idle.wakeup == Wakeup::Listen);
        let e = plan("name = \"x\"\n[workers]\nidle_backoff = []\n").unwrap_err().to_string();
        assert!(e.contains("t.toml:3: workers.idle_backoff") && e.contains("empty"), "{e}");
        let e = plan("name = \"x\"\n[workers]\nidle_backoff = [5]\n").unwrap_err().to_string();
        assert!(e.contains("workers.idle_backoff") && e.contains("accepted"), "{e}");
        let e = plan("name = \"x\"\n[workers]\nwakeup = \"push\"\n").unwrap_err().to_string();
        assert!(e.contains("workers.wakeup") && e.contains("listen"), "{e}");
    }

    #[test]
    fn stop_claims_needs_max_claims() {
        let e = plan("name = \"x\"\n[run]\nstop = \"claims\"\n").unwrap_err().to_string();
        assert!(e.contains("max_claims"), "{e}");
        let e = plan("name = \"x\"\n[run]\nstop = \"soon\"\n").unwrap_err().to_string();
        assert!(e.contains("t.toml:3: run.stop") && e.contains("drained"), "{e}");
    }

    #[test]
    fn unknown_metric_in_expect_is_an_error() {
        let e = plan("name = \"x\"\n[expect]\n\"jobs.lsot\" = \"== 0\"\n").unwrap_err().to_string();
        assert!(e.contains("jobs.lsot") && e.contains("jobs.lost"), "{e}");
    }

    const TWO_CLASSES: &str = "[jobs]\n[[jobs.classes]]\nname = \"high\"\nrate = 5.0\n[[jobs.classes]]\nname = \"normal\"\nrate = 2.0\n[[run.phases]]\nname = \"p\"\nduration = \"1s\"\n";

    #[test]
    fn quotas_become_the_claim_and_the_batch() {
        let p = plan(&format!(
            "name = \"x\"\n[workers]\nstrategy = \"priority-quota\"\nquotas = {{ normal = 3, high = 5 }}\n{TWO_CLASSES}"
        ))
        .unwrap();
        assert_eq!(p.batch, 8);
        let sql = &p.strategy.claim.text;
        // Class order, not the quotas' order: high's CTE comes first.
        assert!(sql.find("class = 'high'").unwrap() < sql.find("class = 'normal'").unwrap(), "{sql}");
        assert!(sql.contains("LIMIT 5") && sql.contains("LIMIT 3"), "{sql}");
    }

    #[test]
    fn quota_errors_name_the_key_and_what_is_accepted() {
        let with = |workers: &str| {
            plan(&format!("name = \"x\"\n[workers]\nstrategy = \"priority-quota\"\n{workers}\n{TWO_CLASSES}"))
                .unwrap_err()
                .to_string()
        };
        let e = with("quotas = { high = 5 }");
        assert!(e.contains("t.toml:4: workers.quotas") && e.contains("no quota for normal"), "{e}");
        let e = with("quotas = { high = 5, normal = 3, low = 1 }");
        assert!(e.contains("`low` is not a class") && e.contains("high, normal, default"), "{e}");
        let e = with("quotas = { high = 5, normal = 0 }");
        assert!(e.contains("between 1 and 1000, got 0"), "{e}");
        let e = with("quotas = { high = 5, \"normal'\" = 3 }");
        assert!(e.contains("letters, digits"), "{e}");
        let e = with("");
        assert!(e.contains("workers.quotas") && e.contains("no quota for high, normal"), "{e}");
        let e = with("batch = 4\nquotas = { high = 5, normal = 3 }");
        assert!(e.contains("workers.batch") && e.contains("set it to 8"), "{e}");
        assert!(
            plan(&format!(
                "name = \"x\"\n[workers]\nstrategy = \"priority-quota\"\nbatch = 8\nquotas = {{ high = 5, normal = 3 }}\n{TWO_CLASSES}"
            ))
            .is_ok()
        );
        let e = plan("name = \"x\"\n[workers]\nquotas = { default = 1 }\n").unwrap_err().to_string();
        assert!(e.contains("workers.quotas") && e.contains("only strategy = \"priority-quota\""), "{e}");
        // Preloaded jobs are class "default": they need a quota too.
        let e = plan("name = \"x\"\n[workers]\nstrategy = \"priority-quota\"\nquotas = { high = 1 }\n[jobs]\npreload = 5\n[[jobs.classes]]\nname = \"high\"\nrate = 1.0\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no quota for default"), "{e}");
    }

    #[test]
    fn pools_are_groups_named_after_classes() {
        let with = |groups: &str| {
            plan(&format!("name = \"x\"\n[workers]\ncount = 2\nstrategy = \"priority-pools\"\n{groups}{TWO_CLASSES}"))
        };
        let ok = "[[workers.groups]]\nname = \"high\"\ncount = 1\n[[workers.groups]]\nname = \"normal\"\ncount = 1\n";
        let p = with(ok).unwrap();
        assert_eq!(p.groups, vec![("high".to_string(), vec![1]), ("normal".to_string(), vec![2])]);
        assert!(p.strategy.claim.params.contains(&crate::strategy::Param::Pool));
        let e = with(&ok.replace("\"normal\"", "\"slow\"")).unwrap_err().to_string();
        assert!(
            e.contains("workers.groups") && e.contains("group `slow`") && e.contains("high, normal, default"),
            "{e}"
        );
        let e = with(&ok.replace("\"normal\"", "\"high\"")).unwrap_err().to_string();
        assert!(e.contains("no pool for normal"), "{e}");
        let e = with("").unwrap_err().to_string();
        assert!(e.contains("needs [[workers.groups]]"), "{e}");
    }
}
