//! Validation: `RawScenario` → `Plan`. Every rule that can be checked
//! without a database is checked here, once, and each error names the file,
//! the line and the key (or the `--set` that supplied it) and what is accepted.
//! One function per section of the scenario file.

use super::at::At;
use super::faults;
use super::horizon;
use super::load::Source;
use super::load_model;
use super::name::check_name;
use super::plan::{ClaimOrder, JobSettings, LeaseSettings, Plan, Retry, RunSettings, Stop, Wakeup, WorkerSettings};
use super::raw::{RawExpect, RawScenario, Reclaim};
use super::units::{format_duration, parse_duration};
use super::values::{idle, pools, quotas, work_model};
use crate::adapter::{self, Adapter};
use crate::error::{Invalid, Result};
use crate::model::expect::{self, Expectation};
use crate::model::summary::RunSummary;
use crate::model::tolerance::Tolerances;
use std::time::Duration;

/// Checks `raw` and resolves every default. `seed` (from `--seed`) wins over the file's.
pub(crate) fn validate(mut raw: RawScenario, source: Source, seed: Option<u64>) -> Result<Plan> {
    let client = super::client::take(&mut raw, &source)?;
    let at = At(&source);
    check_name(&raw.name).map_err(|e| at.invalid("name", e))?;
    let time_scale = raw.run.time_scale;
    if !(time_scale.is_finite() && super::scale::RANGE.contains(&time_scale)) {
        return Err(at.err(
            "run.time_scale",
            format!("must be between 0.0001 and 1000 (0.01 runs 70 s of work in 0.7 s), got {time_scale}"),
        ));
    }
    let jobs = jobs(&raw, &at)?;
    let (mut workers, adapter) = workers(&raw, &at)?;
    let lease = lease(&raw, &at, &adapter)?;
    super::drive::fixed_lease(&at, &adapter, lease.duration, time_scale)?;
    let retry = Retry {
        base: at.duration("retry.base", &raw.retry.base)?,
        cap: at.duration("retry.cap", &raw.retry.cap)?,
        jitter: raw.retry.jitter,
    };
    let mut faults = raw
        .faults
        .iter()
        .enumerate()
        .map(|(i, f)| {
            faults::fault(i, f, &workers.groups, workers.count).map_err(|e| {
                at.invalid("faults", e.within(format_args!("[[faults]] #{} (kind = \"{}\")", i + 1, f.kind)))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    super::drive::apply(&raw, &at, &adapter, &mut workers, &mut faults)?;
    let load =
        load_model::build(&raw.jobs.classes, &raw.run.phases, &raw.jobs.arrivals, raw.jobs.business_row, work_model)
            .map_err(|e| at.invalid("jobs.classes", e))?;
    let run = run_settings(&raw, &at)?;
    if run.stop == Stop::Claims && workers.max_claims.is_none() {
        return Err(at.err("run.stop", "stop = \"claims\" needs workers.max_claims"));
    }
    let (expectations, tolerances) = gate(&raw, &at)?;
    let setup_command = setup_command(&raw, &at, &adapter)?;
    if raw.jobs.preload == 0 && !load.is_open() && run.stop == Stop::Drained {
        return Err(at.err("jobs.preload", "nothing to do: preload jobs, or add [[jobs.classes]] producers"));
    }
    if client.is_some() && raw.postgres.pgbouncer.is_some() {
        return Err(at.err(
            "postgres.pgbouncer",
            "a process client (workers.client) reaches the server by its own DATABASE_URL, not through the \
             pooler queuebench starts; run the built-in workers (leave out workers.client) or drop [postgres.pgbouncer]",
        ));
    }
    let mut plan = Plan {
        blockers: horizon::blockers(&raw.blockers).map_err(|e| at.invalid("blockers", e))?,
        vacuum: horizon::vacuum_steps(&raw.vacuum).map_err(|e| at.invalid("vacuum", e))?,
        postgres: super::postgres::postgres(&raw, &at)?,
        seed: seed.or(raw.seed).unwrap_or_else(rand::random),
        name: raw.name,
        description: raw.description,
        time_scale,
        jobs,
        workers,
        setup_command,
        client,
        adapter,
        lease,
        retry,
        faults,
        load,
        run,
        expectations,
        tolerances,
        source,
    };
    adapter_fits(&plan, &At(&plan.source))?;
    failover_fits(&plan, &At(&plan.source))?;
    super::pool::fits(&plan).map_err(|(key, e)| At(&plan.source).invalid(key, e))?;
    if let Err(e) = super::scale::apply(&mut plan) {
        return Err(plan.source.error("run.time_scale", e));
    }
    Ok(plan)
}

/// `[jobs]`: preload, attempts, job types.
fn jobs(raw: &RawScenario, at: &At) -> Result<JobSettings> {
    let max_attempts = at.count("jobs.max_attempts", raw.jobs.max_attempts)? as i32;
    if raw.jobs.preload < 0 || raw.jobs.preload > 1_000_000_000 {
        return Err(at.err("jobs.preload", format!("must be between 0 and 1000000000, got {}", raw.jobs.preload)));
    }
    let (types, type_of) =
        faults::job_types(&raw.jobs.types, raw.jobs.preload as u64).map_err(|e| at.invalid("jobs.types", e))?;
    let unique_keys = raw.jobs.unique_keys.map(|n| at.count("jobs.unique_keys", n)).transpose()?;
    if unique_keys.is_some() && raw.jobs.classes.is_empty() {
        return Err(at.err(
            "jobs.unique_keys",
            "the producers' enqueues share keys: it needs [[jobs.classes]] (preloaded jobs each have their own)",
        ));
    }
    Ok(JobSettings { preload: raw.jobs.preload as u64, max_attempts, types, type_of, unique_keys })
}

/// `[workers]` and the queue they claim from: the adapter, or the strategy over queuebench's
/// table (a quota claim sets the batch).
fn workers(raw: &RawScenario, at: &At) -> Result<(WorkerSettings, Adapter)> {
    let w = &raw.workers;
    let count = at.count("workers.count", w.count)?;
    let batch = at.count("workers.batch", w.batch)?;
    let max_claims = match w.max_claims {
        Some(n) if n <= 0 => return Err(at.err("workers.max_claims", format!("must be at least 1, got {n}"))),
        other => other.map(|n| n as u64),
    };
    let idle = idle(w).map_err(|e| at.invalid("workers", e))?;
    let work = work_model(&w.work).map_err(|e| at.invalid("workers.work", e))?;
    let quotas = quotas(raw).map_err(|e| at.invalid("workers.quotas", e))?;
    let strategy = match &raw.adapter {
        Some(spec) => {
            if at.0.gives("workers.strategy") {
                return Err(at.err("adapter", "adapter and workers.strategy are exclusive: the adapter is the queue"));
            }
            let lease = |s: &str| parse_duration(s).map_err(|e| Invalid::new(e.to_string()));
            adapter::file::load(spec, at.0.folder(), lease)?
        }
        None => adapter::builtin::resolve(&w.strategy, &raw.strategies, raw.lease.fencing, &quotas)
            .map_err(|e| at.invalid("workers.strategy", e))?,
    };
    // A quota claim's batch is the sum of its quotas: `workers.batch` may be
    // left out or set to that sum, nothing else (it would mean nothing).
    let batch = if quotas.is_empty() {
        batch
    } else {
        let sum: u32 = quotas.iter().map(|(_, n)| n).sum();
        if batch != 1 && batch != sum {
            return Err(at.err(
                "workers.batch",
                format!(
                    "with priority-quota the batch is the sum of workers.quotas ({sum}); leave it out or set it to {sum}, got {batch}"
                ),
            ));
        }
        sum
    };
    let groups = faults::groups(&w.groups, count).map_err(|e| at.invalid("workers.groups", e))?;
    if w.strategy == "priority-pools" {
        pools(raw).map_err(|e| at.invalid("workers.groups", e))?;
    }
    let ordering = ClaimOrder {
        aging_step: at.duration("workers.aging_step", &w.aging_step)?,
        aging_cap: w.aging_cap,
        deadline: at.duration("workers.deadline", &w.deadline)?,
    };
    if ordering.aging_step < Duration::from_millis(1) {
        return Err(at.err("workers.aging_step", "must be at least 1ms (one point of priority per step waited)"));
    }
    if !(0..=1_000_000).contains(&ordering.aging_cap) {
        return Err(at.err(
            "workers.aging_cap",
            format!("must be between 0 and 1000000 (0 turns aging off), got {}", ordering.aging_cap),
        ));
    }
    let pool = match &w.pool {
        Some(p) => Some(super::pool::settings(p).map_err(|e| at.invalid("workers.pool", e))?),
        None => None,
    };
    let settings = WorkerSettings { count, batch, mode: w.mode, work, max_claims, idle, ordering, groups, pool };
    Ok((settings, strategy))
}

/// `[lease]`: duration (the adapter's own default when the scenario leaves it out), fencing,
/// heartbeat, reclaim.
fn lease(raw: &RawScenario, at: &At, adapter: &Adapter) -> Result<LeaseSettings> {
    let l = &raw.lease;
    let duration = match adapter.default_lease {
        Some(d) if !at.0.gives("lease.duration") => d,
        _ => at.duration("lease.duration", &l.duration)?,
    };
    if duration < Duration::from_millis(1) {
        return Err(at.err("lease.duration", "must be at least 1ms"));
    }
    let heartbeat = match l.heartbeat.as_str() {
        "off" => None,
        text => Some(at.duration("lease.heartbeat", text)?),
    };
    if let Some(h) = heartbeat.filter(|h| h.is_zero() || *h >= duration) {
        return Err(at.err(
            "lease.heartbeat",
            format!(
                "{} must be above 0 and shorter than lease.duration ({}): a heartbeat extends the lease before it \
                 runs out (a third of the lease is usual), or \"off\"",
                format_duration(h),
                format_duration(duration)
            ),
        ));
    }
    if l.reclaim == Reclaim::Inline
        && adapter.own_table()
        && raw.workers.strategy != "skip-locked-inline-reclaim"
        && !raw.strategies.contains_key(&raw.workers.strategy)
    {
        return Err(at.err(
            "lease.reclaim",
            "reclaim = \"inline\" needs a claim that takes expired leases: strategy = \"skip-locked-inline-reclaim\" or your own",
        ));
    }
    Ok(LeaseSettings {
        duration,
        fencing: l.fencing,
        heartbeat,
        reclaim: l.reclaim,
        reaper_interval: at.duration("lease.reaper_interval", &l.reaper_interval)?,
    })
}

/// `setup_command`: only with an adapter file; its program relative to the scenario's folder.
fn setup_command(raw: &RawScenario, at: &At, adapter: &Adapter) -> Result<Option<Vec<String>>> {
    let Some(command) = &raw.setup_command else { return Ok(None) };
    if adapter.own_table() {
        return Err(at.err("setup_command", "replaces an adapter's setup SQL: it needs adapter = \"…\""));
    }
    let Some(program) = command.first().filter(|p| !p.trim().is_empty()) else {
        return Err(
            at.err("setup_command", "give the program and its arguments, e.g. [\"../clients/x/run\", \"setup\"]")
        );
    };
    // A bare name (`true`, `npx`) is looked up on PATH; a path starts at the scenario's folder.
    let resolved = if program.contains('/') {
        let p = at.0.folder().join(program);
        std::path::absolute(&p).unwrap_or(p)
    } else {
        program.into()
    };
    Ok(Some(std::iter::once(resolved.display().to_string()).chain(command[1..].iter().cloned()).collect()))
}

/// A `failover` fault promotes the standby: there must be one, and only one failover. An
/// `ack_lost` fault cuts a completion of its own transaction: lease mode only.
fn failover_fits(plan: &Plan, at: &At) -> Result<()> {
    let ack_lost = plan.faults.iter().any(|f| matches!(f.kind, super::faults::Kind::AckLost { .. }));
    if ack_lost && plan.workers.mode == crate::model::protocol::Mode::HoldTransaction {
        return Err(at.err(
            "faults",
            "kind = \"ack_lost\" cuts a completion sent in its own transaction: it needs mode = \"lease\" (in \
             hold-transaction mode the COMMIT is the acknowledgement)",
        ));
    }
    let n = plan.faults.iter().filter(|f| matches!(f.kind, super::faults::Kind::Failover { .. })).count();
    if n > 0 && plan.postgres.standby.is_none() {
        return Err(at.err(
            "faults",
            "kind = \"failover\" promotes the ephemeral cluster's standby: add [postgres] standby = \"async\" \
             (or \"sync\")",
        ));
    }
    if n > 1 {
        return Err(at.err("faults", "one failover per run: after it the cluster has no standby left to promote"));
    }
    Ok(())
}

/// What an adapter file must have for the scenario's features, and the features that need
/// queuebench's own table. Each error names the scenario key that asks for it.
fn adapter_fits(plan: &Plan, at: &At) -> Result<()> {
    let a = &plan.adapter;
    let missing = |key: &str, step: &str| {
        at.err(key, format!("needs the adapter's `{step}` statement, which `{}` does not have", a.name))
    };
    if plan.jobs.types.iter().any(|t| t.fail_probability > 0.0) && a.fail.is_none() {
        return Err(missing("jobs.types", "fail"));
    }
    if plan.lease.heartbeat.is_some() && a.heartbeat.is_none() {
        return Err(missing("lease.heartbeat", "heartbeat"));
    }
    if plan.lease.reclaim == Reclaim::Reaper && a.reclaim.is_none() {
        return Err(missing("lease.reclaim", "reclaim"));
    }
    let cancels = plan.faults.iter().any(|f| matches!(f.kind, super::faults::Kind::Cancel { .. }));
    if cancels && a.cancel.is_none() {
        return Err(missing("faults", "cancel"));
    }
    if a.own_table() {
        return Ok(());
    }
    let own_table_only = [
        ("jobs.business_row", plan.load.business_row, "a business row is enqueued beside queuebench's own table"),
        ("workers.wakeup", plan.workers.idle.wakeup == Wakeup::Listen, "LISTEN needs queuebench's NOTIFY trigger"),
        (
            "faults",
            plan.faults.iter().any(|f| matches!(f.kind, super::faults::Kind::LockHold { rows: Some(_), .. })),
            "lock_hold with rows picks rows of queuebench's own table (without rows it locks the adapter's table)",
        ),
    ];
    for (key, used, why) in own_table_only {
        if used {
            return Err(at.err(key, format!("not with an adapter yet: {why}")));
        }
    }
    Ok(())
}

/// `[run]`: stop condition, timeouts, sampler, probe, starvation threshold.
fn run_settings(raw: &RawScenario, at: &At) -> Result<RunSettings> {
    let r = &raw.run;
    let reconnect_timeout = at.duration("run.reconnect_timeout", &r.reconnect_timeout)?;
    if reconnect_timeout < Duration::from_millis(100) {
        return Err(at.err("run.reconnect_timeout", "must be at least 100ms, e.g. \"30s\""));
    }
    let stop = match r.stop.as_str() {
        "drained" => Stop::Drained,
        "claims" => Stop::Claims,
        other => Stop::After(
            parse_duration(other)
                .map_err(|e| at.err("run.stop", format!("accepted: \"drained\", \"claims\" or a duration; {e}")))?,
        ),
    };
    let sample_interval = match r.sample_interval.as_str() {
        "off" => None,
        text => {
            let d = at.duration("run.sample_interval", text)?;
            if d < Duration::from_millis(100) {
                return Err(at.err("run.sample_interval", "must be at least 100ms, or \"off\""));
            }
            Some(d)
        }
    };
    let series_interval = at.duration("run.series_interval", &r.series_interval)?;
    if series_interval.is_zero() || series_interval.subsec_nanos() != 0 {
        return Err(at.err("run.series_interval", "must be whole seconds, e.g. \"1s\" or \"5s\""));
    }
    let starvation_threshold = at.duration("run.starvation_threshold", &r.starvation_threshold)?;
    if starvation_threshold.is_zero() {
        return Err(at.err("run.starvation_threshold", "must be above 0, e.g. \"10s\""));
    }
    if let Some(bad) = r.expected_errors.iter().find(|c| !crate::model::errors::is_sqlstate(c)) {
        return Err(at.err(
            "run.expected_errors",
            format!("`{bad}` is no SQLSTATE: five digits or capital letters, e.g. \"40001\" (serialization_failure)"),
        ));
    }
    let plan_probe = match r.plan_probe.as_str() {
        "off" => None,
        text => Some(at.duration("run.plan_probe", text)?.max(Duration::from_millis(100))),
    };
    Ok(RunSettings {
        stop,
        timeout: at.duration("run.timeout", &r.timeout)?,
        reconnect_timeout,
        effects_table: r.effects_table,
        history: r.history,
        sample_interval,
        series_interval,
        plan_probe,
        starvation_threshold,
        expected_errors: r.expected_errors.clone(),
    })
}

/// `[expect]` and `[baseline.tolerance]`, checked against the metric names this scenario's
/// summary will have (its classes, phases and vacuum steps).
fn gate(raw: &RawScenario, at: &At) -> Result<(Vec<Expectation>, Tolerances)> {
    let class_names: Vec<&str> = raw.jobs.classes.iter().map(|c| c.name.as_str()).collect();
    let vacuum_names: Vec<&str> = raw.vacuum.iter().map(|v| v.name.as_str()).collect();
    let phase_names: Vec<&str> = raw.run.phases.iter().map(|p| p.name.as_str()).collect();
    let metric_names = RunSummary::metric_names(&class_names, &vacuum_names, &phase_names);
    let expectations = raw
        .expect
        .iter()
        .map(|(metric, e)| {
            let parsed = match e {
                RawExpect::Expr(expr) => expect::parse_expectation(metric, expr, &metric_names),
                RawExpect::Table(t) if t.expr.contains("abort") => {
                    Err(Invalid::new("write abort = true beside expr, not inside it"))
                }
                RawExpect::Table(t) => {
                    let expr = if t.abort { format!("{}, abort", t.expr) } else { t.expr.clone() };
                    expect::parse_expectation(metric, &expr, &metric_names)
                }
            };
            parsed.map_err(|e| at.invalid(&format!("expect.{metric}"), e))
        })
        .collect::<Result<Vec<_>>>()?;
    let tolerances = Tolerances::from_pairs(raw.baseline.tolerance.iter(), &metric_names)
        .map_err(|e| at.invalid("baseline.tolerance", e))?;
    Ok((expectations, tolerances))
}

#[cfg(test)]
mod tests {
    use super::super::load::{Source, parse_text};
    use super::super::plan::{Idle, WorkModel};
    use super::*;
    use crate::error::Error;

    fn plan(text: &str) -> Result<Plan> {
        // Every scenario needs work; tests that do not say otherwise get one preloaded job.
        let text = &if text.contains("[jobs]") { text.to_string() } else { format!("{text}[jobs]\npreload = 1\n") };
        let raw = parse_text(text).map_err(|e| Error::ScenarioFile {
            file: "t.toml".into(),
            sets: vec![],
            reason: e.reason,
        })?;
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
    fn a_standby_and_a_pooler_together_are_refused_and_each_alone_is_planned() {
        let both = "name = \"x\"\n[postgres]\nstandby = \"sync\"\n[postgres.pgbouncer]\npool_mode = \"session\"\n";
        let e = plan(both).unwrap_err().to_string();
        assert!(e.contains("postgres.pgbouncer") && e.contains("standby"), "{e}");
        let standby = plan("name = \"x\"\n[postgres]\nstandby = \"async\"\n").unwrap();
        assert!(standby.postgres.standby.is_some() && standby.postgres.pgbouncer.is_none());
        let pooled = plan("name = \"x\"\n[postgres.pgbouncer]\npool_mode = \"transaction\"\n").unwrap();
        assert!(pooled.postgres.pgbouncer.is_some() && pooled.postgres.standby.is_none());
    }

    #[test]
    fn the_sampler_can_be_turned_off() {
        assert_eq!(plan("name = \"x\"\n").unwrap().run.sample_interval, Some(Duration::from_secs(1)));
        assert_eq!(plan("name = \"x\"\n[run]\nsample_interval = \"off\"\n").unwrap().run.sample_interval, None);
        let e = plan("name = \"x\"\n[run]\nsample_interval = \"50ms\"\n").unwrap_err().to_string();
        assert!(e.contains("run.sample_interval") && e.contains("\"off\""), "{e}");
        assert_eq!(plan("name = \"x\"\n").unwrap().run.series_interval, Duration::from_secs(1));
        let e = plan("name = \"x\"\n[run]\nseries_interval = \"1500ms\"\n").unwrap_err().to_string();
        assert!(e.contains("run.series_interval") && e.contains("whole seconds"), "{e}");
    }

    #[test]
    fn defaults_resolve() {
        let p = plan("name = \"x\"\n[jobs]\npreload = 1\n").unwrap();
        assert_eq!((p.workers.count, p.workers.batch, p.adapter.name.as_str()), (1, 1, "skip-locked"));
        assert_eq!(p.run.stop, Stop::Drained);
        assert_eq!(p.workers.work, WorkModel::Fixed(Duration::ZERO));
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
        assert!(matches!(p.workers.work, WorkModel::LogNormal { .. }));
        let p = plan("name = \"x\"\n[workers]\nwork = { min = \"1ms\", max = \"5ms\" }\n").unwrap();
        assert!(matches!(p.workers.work, WorkModel::Uniform { .. }));
        assert!(plan("name = \"x\"\n[workers]\nwork = { p50 = \"8ms\" }\n").is_err());
        assert!(plan("name = \"x\"\n[workers]\nwork = 5\n").is_err());
    }

    #[test]
    fn idle_backoff_is_a_duration_or_a_schedule() {
        let p = plan("name = \"x\"\n").unwrap();
        assert_eq!(
            p.workers.idle,
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
        assert_eq!(p.workers.idle.backoff, [Duration::from_millis(100), Duration::from_secs(2)]);
        assert!(p.workers.idle.jitter && p.workers.idle.wakeup == Wakeup::Listen);
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
        assert_eq!(p.workers.batch, 8);
        let sql = &p.adapter.claim.first().text;
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
        assert_eq!(p.workers.groups, vec![("high".to_string(), vec![1]), ("normal".to_string(), vec![2])]);
        assert!(p.adapter.claim.first().params.contains(&crate::adapter::Param::Pool));
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
