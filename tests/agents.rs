//! Runs across agents (docs/agents.md), with real processes: `--spawn-agents` on this machine,
//! `--agents` with `queuebench agent` processes joining through a real database, an agent
//! SIGKILLed mid-run, one that never arrives, and the bad input.

use crate::common;

use common::pg::ScratchDb;
use common::{bin, processes_with, queuebench};
use serde_json::Value;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// A burn-down scenario written into `dir`: `workers` workers, `jobs` jobs of `work` each.
fn scenario(dir: &Path, workers: u32, jobs: u32, work: &str, lease: &str) -> String {
    let path = dir.join("agents.toml");
    std::fs::write(
        &path,
        format!(
            "name = \"agents\"\nseed = 7\n[jobs]\npreload = {jobs}\n[workers]\ncount = {workers}\n\
             strategy = \"skip-locked\"\nwork = \"{work}\"\n[lease]\nduration = \"{lease}\"\nfencing = \"token\"\n\
             reclaim = \"reaper\"\n[run]\nstop = \"drained\"\ntimeout = \"120s\"\n"
        ),
    )
    .unwrap();
    path.to_string_lossy().into_owned()
}

fn agents(summary: &Value) -> Vec<Value> {
    summary["agents"].as_array().cloned().unwrap_or_default()
}

#[test]
fn spawned_agents_split_the_workers_and_their_figures_add_up_to_the_totals() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), 6, 3000, "1ms", "30s");
    let run = queuebench(&["run", &file, "--spawn-agents", "3", "--quiet"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let s = run.summary();
    let list = agents(&s);
    assert_eq!(list.len(), 3, "{list:?}");
    let workers: Vec<(u64, u64)> =
        list.iter().map(|a| (a["first_worker"].as_u64().unwrap(), a["last_worker"].as_u64().unwrap())).collect();
    assert_eq!(workers, [(1, 2), (3, 4), (5, 6)]);
    for a in &list {
        assert_eq!(a["state"], "finished", "{a}");
        assert!(a["clock_bound_us"].as_u64().is_some(), "{a}");
    }
    let jobs: u64 = list.iter().map(|a| a["jobs"].as_u64().unwrap()).sum();
    assert_eq!(jobs, s["executions"]["total"].as_u64().unwrap(), "per-agent executions add up");
    assert_eq!(s["executions"]["total"], 3000);
    assert_eq!(s["executions"]["duplicate"], 0);
    let claims: u64 = list.iter().map(|a| a["claims"].as_u64().unwrap()).sum();
    assert_eq!(claims, s["claims"]["total"].as_u64().unwrap(), "per-agent claims add up");
    let rate: f64 = list.iter().map(|a| a["jobs_per_sec"].as_f64().unwrap()).sum();
    let total = s["throughput"]["jobs_per_sec"].as_f64().unwrap();
    assert!((rate - total).abs() <= total * 0.01 + 0.01, "agents' jobs/s {rate} vs the run's {total}");
    assert_eq!(run.check("exactly_once"), 0);
    assert_eq!(run.check("effects_ledger_agrees"), 0);
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(common::repo("schema/summary.schema.json")).unwrap()).unwrap();
    let mut errors = Vec::new();
    common::schema::validate(&schema, &schema, &s, "summary", &mut errors);
    assert!(errors.is_empty(), "summary.json against its schema: {errors:?}");
    let id = s["run_id"].as_str().unwrap();
    assert!(processes_with(&["agent", "--run", id]).is_empty(), "an agent of run {id} is still running");
    run.assert_clean();
    // The history was merged: `check` over the saved evidence agrees with the run.
    let check = bin().args(["check"]).arg(&run.out).output().unwrap();
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stderr));
}

/// `queuebench agent` processes joining a coordinator through a real server.
fn agent_process(url: &str, name: &str) -> Child {
    bin()
        .args(["agent", "--name", name, "--wait", "60s"])
        .env("DATABASE_URL", url)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn coordinator(url: &str, file: &str, out: &Path, extra: &[&str]) -> Child {
    bin()
        .args(["run", file, "--database-url", url, "--quiet", "--out"])
        .arg(out)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn wait_all(children: Vec<Child>) -> Vec<(i32, String)> {
    children
        .into_iter()
        .map(|c| {
            let o = c.wait_with_output().unwrap();
            (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stderr).into_owned())
        })
        .collect()
}

fn read_summary(out: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

#[test]
fn agents_join_through_the_database_and_the_schema_is_gone_afterwards() {
    let db = ScratchDb::new("agents");
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), 4, 2000, "1ms", "30s");
    let out = dir.path().join("run");
    let coord = coordinator(&db.url, &file, &out, &["--agents", "2", "--agent-wait", "60s"]);
    let agents = vec![agent_process(&db.url, "left"), agent_process(&db.url, "right")];
    let mut done = wait_all(vec![coord]);
    done.extend(wait_all(agents));
    for (code, err) in &done {
        assert_eq!(*code, 0, "{err}");
    }
    let s = read_summary(&out);
    let names: Vec<&str> = s["agents"].as_array().unwrap().iter().map(|a| a["name"].as_str().unwrap()).collect();
    assert_eq!(names.len(), 2);
    assert!(names.contains(&"left") && names.contains(&"right"), "{names:?}");
    assert_eq!(s["executions"]["total"], 2000);
    assert_eq!(s["executions"]["duplicate"], 0);
    assert_eq!(db.harness_schemas(""), "", "the run's schema (with its control tables) was dropped");
}

/// A burn-down (6 workers, 1500 jobs of 20 ms, a 2 s lease, `reclaim` as given) across three
/// `queuebench agent` processes; the one named `doomed` is SIGKILLed once 200 executions are in
/// the effects table. Returns the scratch database, the run folder and the coordinator's exit
/// code and stderr, every process waited for.
fn run_and_kill_one_agent(tag: &str, reclaim: &str) -> KilledRun {
    let db = ScratchDb::new(tag);
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), 6, 1500, "20ms", "2s");
    let text =
        std::fs::read_to_string(&file).unwrap().replace("reclaim = \"reaper\"", &format!("reclaim = \"{reclaim}\""));
    std::fs::write(&file, text).unwrap();
    let out = dir.path().join("run");
    let coord = coordinator(&db.url, &file, &out, &["--agents", "3", "--agent-wait", "60s"]);
    let doomed = agent_process(&db.url, "doomed");
    let survivors = vec![agent_process(&db.url, "left"), agent_process(&db.url, "right")];
    let started = Instant::now();
    let mut seen_holding = false;
    while started.elapsed() < Duration::from_secs(60) {
        let schema = db.sql("SELECT schemaname FROM pg_tables WHERE tablename = 'qb_agent_run'");
        let schema = schema.trim();
        let effects = |s: &str| db.sql(&format!("SELECT count(*) FROM {s}.effects")).trim().parse::<u64>().unwrap_or(0);
        // Killed while it holds a job (its 2 of the 6 workers, by its agent number), so the kill
        // always leaves something to recover: on a loaded machine it had once held none.
        let holding = |s: &str| {
            let k = db.sql(&format!("SELECT agent FROM {s}.qb_agent WHERE name = 'doomed'"));
            let Ok(k) = k.trim().parse::<u32>() else { return false };
            let held = db.sql(&format!(
                "SELECT count(*) FROM {s}.jobs WHERE status = 'running' AND locked_by IN ('w{}', 'w{}')",
                2 * k - 1,
                2 * k
            ));
            held.trim().parse::<u64>().unwrap_or(0) > 0
        };
        if !schema.is_empty() && effects(schema) >= 200 && holding(schema) {
            seen_holding = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    common::pg::signal(&doomed, libc::SIGKILL);
    // Killed too late (the run over before the agent was seen holding a job), the kill tests
    // nothing: say so rather than fail on the verdict.
    assert!(seen_holding, "the doomed agent was never seen holding a job within 60 s of the start");
    let coordinator = wait_all(vec![coord]).remove(0);
    wait_all(survivors);
    wait_all(vec![doomed]);
    let (code, err) = coordinator;
    KilledRun { db, _dir: dir, out, code, err }
}

struct KilledRun {
    db: ScratchDb,
    _dir: tempfile::TempDir,
    out: std::path::PathBuf,
    code: i32,
    err: String,
}

/// Three agents, one SIGKILLed mid-run, and the reaper: the run still passes (exit 0), nothing
/// is lost, the effects ledger agrees with the journal (the dead agent's executions come back
/// from the ledger), and the per-agent counts add up to the run's.
#[test]
fn an_agent_killed_mid_run_is_marked_missing_and_its_jobs_are_reclaimed() {
    // 6 workers × 20 ms jobs: 1500 jobs take ~5 s; a 2 s lease lets the reaper hand the dead
    // agent's jobs to the others.
    let KilledRun { db, _dir, out, code, err } = run_and_kill_one_agent("agentkill", "reaper");
    let s = read_summary(&out);
    let checks = s["checks"].as_array().unwrap();
    let failing: Vec<&Value> = checks.iter().filter(|c| c["passed"] == false).collect();
    assert_eq!(code, 0, "the run passes: failing checks {failing:?}\n{err}");
    let list = s["agents"].as_array().unwrap();
    let dead = list.iter().find(|a| a["name"] == "doomed").expect("the doomed agent is listed");
    assert_eq!(dead["state"], "missing", "{dead}");
    assert!(dead["note"].as_str().unwrap().contains("stopped answering"), "{dead}");
    assert!(dead["recovered_executions"].as_u64().unwrap() > 0, "its executions came back from the ledger: {dead}");
    for name in ["left", "right"] {
        let alive = list.iter().find(|a| a["name"] == name).unwrap();
        assert_eq!(alive["state"], "finished", "{alive}");
    }
    assert_eq!(s["jobs"]["lost"], 0, "its jobs were reclaimed: {}", s["jobs"]);
    assert_eq!(s["jobs"]["completed"], 1500);
    let ledger = checks.iter().find(|c| c["name"] == "effects_ledger_agrees").expect("the ledger check ran");
    assert_eq!(ledger["passed"], true, "the journal and the effects table agree: {ledger}");
    // A live agent's jobs, the missing one's recovered executions (its completions are unknown).
    let jobs: u64 =
        list.iter().map(|a| a["jobs"].as_u64().unwrap() + a["recovered_executions"].as_u64().unwrap()).sum();
    assert_eq!(jobs, s["executions"]["total"].as_u64().unwrap(), "per-agent executions add up: {list:?}");
    assert_eq!(db.harness_schemas(""), "");
}

/// The same kill with nothing to reclaim the dead agent's jobs (`reclaim = "off"`): the run
/// cannot finish them, so the coordinator says so and stops it instead of waiting for the
/// 120 s timeout, and the checks fail the run (exit 1): the queue lost those jobs.
#[test]
fn with_nothing_to_reclaim_a_dead_agents_jobs_the_run_says_it_cannot_progress_and_ends() {
    let KilledRun { db, _dir, out, code, err } = run_and_kill_one_agent("agentstuck", "off");
    assert_eq!(code, 1, "the jobs the dead agent held are lost: a failed verdict\n{err}");
    let s = read_summary(&out);
    assert_eq!(s["timed_out"], false, "it stopped before run.timeout");
    let dead = s["agents"].as_array().unwrap().iter().find(|a| a["name"] == "doomed").unwrap().clone();
    assert!(dead["note"].as_str().unwrap().contains("the run cannot progress"), "why it stopped: {dead}");
    let lost = s["checks"].as_array().unwrap().iter().find(|c| c["name"] == "no_lost_jobs").unwrap().clone();
    assert_eq!(lost["passed"], false, "{lost}");
    assert!(
        s["jobs"]["lost"].as_u64().unwrap() > 0,
        "the dead agent's jobs, held with nobody to reclaim them: {}",
        s["jobs"]
    );
    assert_eq!(db.harness_schemas(""), "");
}

/// The shipped `scenarios/agents/kill-agent.toml`: the coordinator SIGKILLs agent 2 of 3 at 2 s
/// (`kind = "kill_agent"`). With its reaper the run passes (exit 0): agent 2 is missing, with
/// the fault in its note, its executions recovered, the jobs it held reclaimed, nothing lost and
/// the ledger agreeing. Its process really is gone: no agent of the run is left running.
#[test]
fn the_shipped_kill_agent_scenario_kills_agent_2_and_the_reaper_brings_its_jobs_back() {
    let file = common::repo("scenarios/agents/kill-agent.toml").to_string_lossy().into_owned();
    let run = queuebench(&["run", &file, "--spawn-agents", "3", "--quiet"]);
    let s = run.summary();
    assert_eq!(run.code, 0, "failed checks {:?}\n{}", s["failed_checks"], run.stderr);
    let list = agents(&s);
    let states: Vec<&str> = list.iter().map(|a| a["state"].as_str().unwrap()).collect();
    assert_eq!(states, ["finished", "missing", "finished"], "{list:?}");
    let note = list[1]["note"].as_str().unwrap();
    assert!(note.contains("killed (SIGKILL) by faults[0] (kind = \"kill_agent\") at 2.0 s"), "{note}");
    assert!(list[1]["recovered_executions"].as_u64().unwrap() > 0, "{}", list[1]);
    assert_eq!(s["faults"]["by_kind"]["kill_agent"], 1);
    assert!(s["reaper"]["reclaimed"].as_u64().unwrap() >= 1, "the jobs agent 2 held came back: {}", s["reaper"]);
    assert_eq!(s["jobs"]["lost"], 0, "{}", s["jobs"]);
    assert_eq!(s["jobs"]["completed"], 60);
    assert_eq!(run.check("no_lost_jobs"), 0);
    assert_eq!(run.check("effects_ledger_agrees"), 0);
    assert!(!run.stderr.contains("warning: agent 2"), "a planned kill is no agent failure: {}", run.stderr);
    let id = s["run_id"].as_str().unwrap();
    assert!(processes_with(&["agent", "--run", id]).is_empty(), "an agent of run {id} is still running");
    run.assert_clean();
}

/// The same file with nothing to reclaim the killed agent's jobs (`lease.reclaim = "off"`):
/// the coordinator stops the run that cannot progress (long before its 2 min timeout) and the
/// verdict fails (exit 1): the jobs agent 2 held are lost.
#[test]
fn the_kill_agent_scenario_without_a_reaper_stops_early_and_fails() {
    let file = common::repo("scenarios/agents/kill-agent.toml").to_string_lossy().into_owned();
    let started = Instant::now();
    let run = queuebench(&["run", &file, "--spawn-agents", "3", "--set", "lease.reclaim=off", "--quiet"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(started.elapsed() < Duration::from_secs(90), "it stopped early: {:?}", started.elapsed());
    let s = run.summary();
    assert_eq!(s["timed_out"], false);
    let note = agents(&s)[1]["note"].as_str().unwrap().to_string();
    assert!(note.contains("kill_agent") && note.contains("the run cannot progress"), "{note}");
    assert!(s["jobs"]["lost"].as_u64().unwrap() > 0, "{}", s["jobs"]);
    assert!(run.check("no_lost_jobs") > 0);
    run.assert_clean();
}

/// kill_agent signals agents this run spawned: refused (exit 2) for a local run and for agents
/// that join with `--agents`, naming the fix; and an agent the run does not have.
#[test]
fn kill_agent_is_refused_without_spawned_agents() {
    let file = common::repo("scenarios/agents/kill-agent.toml").to_string_lossy().into_owned();
    let run = queuebench(&["run", &file]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("kill-agent.toml") && run.stderr.contains("run it with --spawn-agents N"),
        "{}",
        run.stderr
    );
    let run = queuebench(&["run", &file, "--agents", "3", "--database-url", "postgres://127.0.0.1:1/none"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("agents that join with --agents"), "{}", run.stderr);
    assert!(run.stderr.contains("run it with --spawn-agents 3"), "{}", run.stderr);
    let run = queuebench(&["run", &file, "--spawn-agents", "1"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("names agent 2, but the run has 1"), "{}", run.stderr);
    run.assert_clean();
}

#[test]
fn an_agent_that_never_arrives_is_absent_and_the_run_goes_on() {
    let db = ScratchDb::new("agentabsent");
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), 4, 500, "0ms", "30s");
    let out = dir.path().join("run");
    let coord = coordinator(&db.url, &file, &out, &["--agents", "2", "--agent-wait", "4s"]);
    let lone = agent_process(&db.url, "lone");
    let done = wait_all(vec![coord, lone]);
    assert_eq!(done[0].0, 0, "{}", done[0].1);
    assert!(done[0].1.contains("1 of 2 agents joined"), "{}", done[0].1);
    let s = read_summary(&out);
    let list = s["agents"].as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[1]["state"], "absent");
    assert_eq!(list[1]["note"], "it never joined");
    assert_eq!(s["executions"]["total"], 500, "the lone agent's workers drained the queue");
}

#[test]
fn no_agent_at_all_is_exit_3_naming_the_command_to_start_one() {
    let db = ScratchDb::new("agentnone");
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), 2, 10, "0ms", "30s");
    let run = queuebench(&["run", &file, "--database-url", &db.url, "--agents", "1", "--agent-wait", "2s"]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(run.stderr.contains("no agent joined within 2 s"), "{}", run.stderr);
    assert!(run.stderr.contains("queuebench agent --database-url URL --run"), "{}", run.stderr);
    assert_eq!(db.harness_schemas(""), "");
}

#[test]
fn bad_agent_input_is_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), 2, 10, "0ms", "30s");
    let run = queuebench(&["run", &file, "--agents", "2"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--agents needs --database-url"), "{}", run.stderr);
    let run = queuebench(&["run", &file, "--spawn-agents", "0"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("--spawn-agents needs at least 1 agent"), "{}", run.stderr);
    let run = queuebench(&["run", &file, "--spawn-agents", "3"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("3 agents for 2 workers"), "{}", run.stderr);
    let run = queuebench(&["run", &file, "--spawn-agents", "1", "--agent-wait", "soon"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("--agent-wait soon"), "{}", run.stderr);
    let client = common::repo("scenarios/clients/pg-boss-contention.toml");
    let run = queuebench(&["run", client.to_str().unwrap(), "--spawn-agents", "1"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("a client scenario runs its own worker processes"), "{}", run.stderr);
    run.assert_clean();
}

#[test]
fn an_agent_with_no_run_to_join_says_how_to_start_one() {
    let db = ScratchDb::new("agentlost");
    let o = bin().args(["agent", "--database-url", &db.url, "--wait", "1s"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("no run is waiting for agents"), "{err}");
    assert!(err.contains("--agents N"), "{err}");
}
