//! `queuebench sql`: every statement a scenario executes, in order, and the
//! equivalent pgbench script (same statements, pgbench's `:name` variables),
//! so the harness can be cross-checked against pgbench.

use crate::adapter::{Accepted, Origin, Step};
use crate::adapter::{Param, Role};
use crate::db::statements::{ADAPTER_EFFECTS, ADAPTER_EFFECTS_INSERT, EFFECTS_INSERT, MIGRATION, listed};
use crate::error::{Error, ExitCode, Result};
use crate::model::protocol::Mode;
use crate::scenario;
use crate::scenario::{Plan, Stop, WorkModel};
use std::fmt::Write;
use std::path::Path;

pub(crate) fn print_sql(file: &Path, sets: &[String], pgbench: bool) -> Result<ExitCode> {
    let plan = scenario::plan_from_file(file, sets, Some(0))?;
    if pgbench {
        let script = pgbench_script(&plan).map_err(|e| Error::ScenarioFile {
            file: file.to_path_buf(),
            sets: Vec::new(),
            reason: e.to_string(),
        })?;
        print!("{script}");
    } else {
        print!("{}", listing(&plan));
    }
    Ok(ExitCode::Passed)
}

/// The full listing, named parameters as written.
pub(crate) fn listing(plan: &Plan) -> String {
    let a = &plan.adapter;
    let mut o = String::new();
    let _ = writeln!(o, "-- queuebench sql: scenario {}", plan.name);
    let origin = match &a.origin {
        Origin::Builtin => "built-in strategy".to_string(),
        Origin::Scenario => "custom strategy".to_string(),
        Origin::File(p) => format!("adapter {}", p.display()),
    };
    let _ = writeln!(
        o,
        "-- {} ({origin}), mode {}, fencing {:?}, {} workers, batch {}\n",
        a.name,
        mode_name(plan.workers.mode),
        plan.lease.fencing,
        plan.workers.count,
        plan.workers.batch
    );
    setup_listing(&mut o, plan);
    let _ = writeln!(
        o,
        "\n-- 3. each worker, every round. :batch = {}, :lease_secs = {}, :worker = 'w<n>'",
        plan.workers.batch,
        plan.lease.duration.as_secs_f64()
    );
    for (name, value) in ordering_values(plan) {
        let _ = writeln!(o, "--   :{name} = {value}");
    }
    for (name, value) in &a.constants {
        let _ = writeln!(o, "--   :{name} = {}", value.literal());
    }
    if a.statements().any(|st| st.params.contains(&Param::Pool)) {
        let pools: Vec<String> =
            plan.workers.groups.iter().map(|(n, ids)| format!("{n} for {} worker(s)", ids.len())).collect();
        let _ = writeln!(o, "--   :pool = the worker's group name: {}", pools.join(", "));
    }
    let hold = plan.workers.mode == Mode::HoldTransaction;
    if hold {
        let _ = writeln!(o, "BEGIN;");
    }
    for step in a.worker_steps() {
        step_listing(&mut o, plan, step);
    }
    if hold {
        let _ = writeln!(o, "COMMIT;");
    }
    side_listing(&mut o, plan);
    o
}

/// 1 and 2: the run's schema, the queue's tables, the preload.
fn setup_listing(o: &mut String, plan: &Plan) {
    let a = &plan.adapter;
    let _ = writeln!(o, "-- 1. once: the run's own schema (dropped at the end in --database-url mode)");
    let _ = writeln!(o, "CREATE SCHEMA \"queuebench_<run id>\";\nSET search_path = \"queuebench_<run id>\";");
    match (&plan.setup_command, a.setup_sql()) {
        (Some(c), _) => {
            let _ = writeln!(o, "-- the setup command creates the queue's tables: {}", c.join(" "));
        }
        (None, Some(sql)) => {
            let _ = writeln!(o, "{}", sql.trim());
        }
        (None, None) => {
            let _ = writeln!(o, "{}", MIGRATION.trim());
        }
    }
    if !a.own_table() {
        let _ = writeln!(o, "{}", listed(ADAPTER_EFFECTS));
    }
    let _ = writeln!(
        o,
        "\n-- 2. once: preload (:count = {} jobs, :max_attempts = {})",
        plan.jobs.preload, plan.jobs.max_attempts
    );
    match &a.preload {
        Some(p) => statements(o, p),
        None => {
            let _ = writeln!(o, "-- the enqueue statement, once per job (:n = 1, 2, …; :payload = {{\"n\": :n}}):");
            statements(o, &a.enqueue);
        }
    }
    let _ = writeln!(o, "VACUUM ANALYZE {};", crate::quote::ident(&a.table));
}

/// One worker step with what it is for.
fn step_listing(o: &mut String, plan: &Plan, step: &Step) {
    let what = match step.role {
        Role::Select => "select (its ids become :ids)".to_string(),
        Role::Complete => format!("complete, once per job after {} of work", plan.workers.work.describe()),
        Role::Heartbeat => match plan.lease.heartbeat {
            Some(h) => format!("heartbeat, every {} while working", crate::scenario::units::format_duration(h)),
            None => "heartbeat (not used: lease.heartbeat = \"off\")".into(),
        },
        Role::Fail => "fail, instead of complete when a job type fails (:backoff_secs from [retry])".into(),
        role => role.name().to_string(),
    };
    let rule = match step.accepted {
        Accepted::Rows => "",
        Accepted::True => " (accepted: its first column is true)",
        Accepted::Positive => " (accepted: its first column is above 0)",
    };
    let list = if step.is_single() { "" } else { " (one transaction)" };
    let _ = writeln!(o, "-- {what}{rule}{list}");
    statements(o, step);
}

fn statements(o: &mut String, step: &Step) {
    for st in &step.statements {
        let _ = writeln!(o, "{};", st.text);
    }
}

/// The effects ledger, the drained check, the reaper, the producers and the end of the run.
fn side_listing(o: &mut String, plan: &Plan) {
    let a = &plan.adapter;
    if plan.run.effects_table {
        let insert = if a.own_table() { EFFECTS_INSERT } else { ADAPTER_EFFECTS_INSERT };
        let _ =
            writeln!(o, "\n-- every 64 executions and at the end, outside any claim transaction\n{};", listed(insert));
    }
    if plan.run.stop == Stop::Drained {
        let _ =
            writeln!(o, "\n-- after a claim that returned nothing (stop = \"drained\")\n{};", a.observe.remaining.text);
    }
    if let (crate::model::protocol::Reclaim::Reaper, Some(reclaim)) = (plan.lease.reclaim, &a.reclaim) {
        let every = crate::scenario::units::format_duration(plan.lease.reaper_interval);
        let _ = writeln!(o, "\n-- the reaper, every {every} on its own connection");
        statements(o, reclaim);
    }
    if plan.load.is_open() {
        let _ = writeln!(o, "\n-- each open-model arrival (its producer's connection)");
        statements(o, &a.enqueue);
    }
    let _ = writeln!(o, "\n-- 4. once, at the end\n{};", a.observe.state.text);
    if plan.run.effects_table {
        let table = if a.own_table() { "effects" } else { "queuebench_effects" };
        let _ = writeln!(o, "SELECT count(*) FROM {table};");
    }
    let _ = writeln!(o, "DROP SCHEMA \"queuebench_<run id>\" CASCADE; -- --database-url mode without --keep");
}

/// The priority-ordering parameters the plan's select or claim uses, with their values.
fn ordering_values(plan: &Plan) -> Vec<(&'static str, String)> {
    let s = &plan.adapter;
    let uses = |step: &Step, p: Param| step.statements.iter().any(|st| st.params.contains(&p));
    let used = |p: Param| uses(&s.claim, p) || s.select.as_ref().is_some_and(|x| uses(x, p));
    let o = &plan.workers.ordering;
    [
        (Param::AgingStepSecs, format!("{:?}", o.aging_step.as_secs_f64())),
        (Param::AgingCap, o.aging_cap.to_string()),
        (Param::DeadlineSecs, format!("{:?}", o.deadline.as_secs_f64())),
    ]
    .into_iter()
    .filter(|(p, _)| used(*p))
    .map(|(p, v)| (p.name(), v))
    .collect()
}

fn mode_name(m: Mode) -> &'static str {
    match m {
        Mode::Lease => "lease",
        Mode::HoldTransaction => "hold-transaction",
    }
}

/// What pgbench cannot do that the scenario asks for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NoPgbench {
    #[error("pgbench needs a fixed count per client: set workers.max_claims, or a preload divisible by workers.count")]
    NoFixedCount,
    #[error("the pgbench script needs workers.batch = 1 (pgbench's \\gset keeps one row)")]
    Batch,
    #[error("the pgbench script is for queuebench's own table (a built-in or [strategies] claim), not an adapter")]
    Adapter,
}

/// The pgbench options that match the plan (`-c`, `-j`, and `-t` or `-T`).
pub(crate) fn pgbench_args(plan: &Plan) -> std::result::Result<String, NoPgbench> {
    let w = plan.workers.count;
    let run = match (plan.run.stop, plan.workers.max_claims) {
        (Stop::After(d), _) => format!("-T {}", d.as_secs().max(1)),
        (_, Some(n)) => format!("-t {n}"),
        (Stop::Drained, None) if plan.jobs.preload.is_multiple_of(u64::from(w)) => {
            format!("-t {}", plan.jobs.preload / u64::from(w))
        }
        _ => return Err(NoPgbench::NoFixedCount),
    };
    Ok(format!("-n -M prepared -c {w} -j {w} {run}"))
}

/// A pgbench script running the same statements per transaction as one worker round.
pub(crate) fn pgbench_script(plan: &Plan) -> std::result::Result<String, NoPgbench> {
    if plan.workers.batch != 1 {
        return Err(NoPgbench::Batch);
    }
    if !plan.adapter.own_table() {
        return Err(NoPgbench::Adapter);
    }
    let s = &plan.adapter;
    let args = pgbench_args(plan)?;
    // pgbench finds `:name` even inside comments, so comment lines go.
    // pgbench has no per-client text variables: :pool becomes the group of
    // client n + 1 (the harness's worker slots count from 1, clients from 0).
    let arms: String = plan
        .workers
        .groups
        .iter()
        .flat_map(|(name, ids)| ids.iter().map(move |id| (name, id)))
        .map(|(name, id)| format!(" WHEN {} THEN {}", id - 1, crate::quote::literal(name)))
        .collect();
    let pool = format!("(CASE :client_id{arms} END)");
    let worker = |t: &str| {
        let code: Vec<&str> = t.lines().filter(|l| !l.trim_start().starts_with("--")).collect();
        code.join("\n").replace(":worker", "('pgbench-' || :client_id)").replace(":pool", &pool)
    };
    let mut o = String::new();
    let _ = writeln!(
        o,
        "-- pgbench script for queuebench scenario {} (strategy {}, mode {})",
        plan.name,
        s.name,
        mode_name(plan.workers.mode)
    );
    let _ = writeln!(o, "-- pgbench-args: {args}");
    let _ = writeln!(
        o,
        "-- Run inside the scenario's schema: PGOPTIONS='-c search_path=SCHEMA' pgbench {args} -f THIS_FILE"
    );
    let _ = writeln!(o, "-- The claim is wrapped to always return one row so \\gset works when it claims nothing.");
    if plan.run.effects_table {
        let _ = writeln!(
            o,
            "-- Not here: the harness's batched effects INSERT (one per 64 jobs); compare with run.effects_table = false."
        );
    }
    let _ = writeln!(o, "\\set batch {}\n\\set lease_secs {:?}", plan.workers.batch, plan.lease.duration.as_secs_f64());
    for (name, value) in ordering_values(plan) {
        let _ = writeln!(o, "\\set {name} {value}");
    }
    let hold = plan.workers.mode == Mode::HoldTransaction;
    if hold {
        let _ = writeln!(o, "BEGIN;");
    }
    if let Some(sel) = &s.select {
        let _ = writeln!(
            o,
            "SELECT count(*) AS nsel, array_agg(id) AS ids FROM ({}) AS s \\gset",
            worker(&sel.first().text)
        );
        let _ = writeln!(o, "\\if :nsel > 0");
    }
    let _ = writeln!(
        o,
        "WITH c AS (\n{}\n)\nSELECT count(*) AS n, min(id) AS id, min(attempts) AS attempt, min(claim_token::text) AS token FROM c \\gset",
        worker(&s.claim.first().text)
    );
    let _ = writeln!(o, "\\if :n > 0");
    if let WorkModel::Fixed(d) = plan.workers.work {
        if !d.is_zero() {
            let _ = writeln!(o, "\\sleep {} us", d.as_micros());
        }
    } else {
        let _ = writeln!(o, "-- work model {} has no pgbench equivalent; no sleep", plan.workers.work.describe());
    }
    let _ = writeln!(o, "{};", worker(&s.complete.first().text));
    let _ = writeln!(o, "\\endif");
    if s.select.is_some() {
        let _ = writeln!(o, "\\endif");
    }
    if hold {
        let _ = writeln!(o, "COMMIT;");
    }
    Ok(o)
}
