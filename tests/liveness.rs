//! The liveness checks against a real PostgreSQL: a queue that stops finishing jobs fails the
//! run (exit 1) and names the check, and the same load on a correct queue passes (exit 0).

use crate::common;
use common::{queuebench, repo};
use serde_json::Value;

fn failed_checks(r: &common::Run) -> Vec<String> {
    let s = r.summary();
    s["failed_checks"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect()
}

fn detail(r: &common::Run, name: &str) -> String {
    let s: Value = r.summary();
    let c = s["checks"].as_array().unwrap().iter().find(|c| c["name"] == name).cloned();
    c.unwrap_or_else(|| panic!("no check {name}"))["detail"].as_str().unwrap().to_string()
}

/// 40 jobs, 2 workers, a custom strategy whose completion is `complete` (`{fence}` allowed).
fn custom_queue(dir: &std::path::Path, complete: &str) -> std::path::PathBuf {
    let file = dir.join("queue.toml");
    let text = format!(
        r#"
name = "liveness-queue"
[jobs]
preload = 40
[workers]
count = 2
strategy = "mine"
max_claims = 25
[lease]
duration = "30s"
fencing = "token"
[run]
stop = "claims"
timeout = "60s"
[strategies.mine]
claim = """
UPDATE jobs SET status = 'running', attempts = attempts + 1, claim_token = gen_random_uuid(),
       locked_until = now() + make_interval(secs => :lease_secs)
WHERE id IN (SELECT id FROM jobs WHERE status = 'queued' ORDER BY id LIMIT :batch FOR UPDATE SKIP LOCKED)
RETURNING id, attempts, claim_token"""
complete = "{complete}"
"#
    );
    std::fs::write(&file, text).unwrap();
    file
}

#[test]
fn a_completion_that_never_lands_fails_the_refused_and_abandoned_checks() {
    let dir = tempfile::tempdir().unwrap();
    // The completion matches no row: every one is refused (0 rows) while the holder's lease runs.
    let broken =
        custom_queue(dir.path(), "UPDATE jobs SET status = 'done' WHERE id = :id AND status = 'nowhere' {fence}");
    let r = queuebench(&["run", broken.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    r.assert_clean();
    let failed = failed_checks(&r);
    assert!(failed.contains(&"completions_refused_unexplained".to_string()), "{failed:?}");
    assert!(failed.contains(&"jobs_left_abandoned".to_string()), "{failed:?}");
    assert!(!failed.contains(&"exactly_once".to_string()), "the safety checks still pass: {failed:?}");
    assert_eq!(r.num("jobs.completed"), 0.0);
    assert_eq!(r.check("completions_refused_unexplained"), r.num("completions.rejected") as u64);
    assert_eq!(r.check("jobs_left_abandoned"), r.num("jobs.stuck_running") as u64);
    assert!(r.num("completions.rejected") > 0.0);
    assert!(detail(&r, "jobs_left_abandoned").contains("after a refused completion or failure"));
    assert!(r.stdout.contains("completions_refused_unexplained"), "{}", r.stdout);

    // The same queue with a completion that lands: every check holds.
    let fixed = custom_queue(dir.path(), "UPDATE jobs SET status = 'done', locked_until = NULL WHERE id = :id {fence}");
    let r = queuebench(&["run", fixed.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.num("jobs.completed"), 40.0);
    assert_eq!(r.check("completions_refused_unexplained"), 0);
    assert_eq!(r.check("jobs_left_abandoned"), 0);
    assert_eq!(r.check("progress"), 0);
}

fn crash_run(sets: &[&str]) -> common::Run {
    let s = repo("scenarios/crash-recovery.toml");
    // One job in 20 crashes its worker right after the claim.
    let crash = r#"faults=[{ kind = "crash", point = "after_claim", probability = 0.05, respawn_after = "100ms" }]"#;
    let mut args = vec!["run", s.to_str().unwrap(), "--set", "jobs.preload=300", "--set", "expect={}", "--set", crash];
    for set in sets {
        args.extend(["--set", set]);
    }
    let r = queuebench(&args);
    r.assert_clean();
    r
}

#[test]
fn crashes_nobody_recovers_from_fail_the_fault_checks() {
    // Without a reaper the crashed jobs stay running: the run stops by the clock after 6 s,
    // long after the crashes (300 jobs of 1 ms take well under a second here, even loaded).
    let r = crash_run(&["lease.reclaim=off", "run.stop=6s"]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    let crashes = r.num("faults.by_kind.crash");
    assert!(crashes > 0.0);
    let failed = failed_checks(&r);
    assert!(failed.contains(&"faults_recovered".to_string()), "{failed:?}");
    assert!(failed.contains(&"jobs_left_abandoned".to_string()), "{failed:?}");
    assert_eq!(r.check("jobs_left_abandoned"), r.num("jobs.stuck_running") as u64);
    assert!(r.check("faults_recovered") > 0);
    assert!(detail(&r, "jobs_left_abandoned").contains("abandoned: a crash"));

    // With the reaper but a budget of one attempt, each crash ends its job dead at once.
    let r = crash_run(&["jobs.max_attempts=1"]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    let failed = failed_checks(&r);
    assert!(failed.contains(&"dead_after_one_fault".to_string()), "{failed:?}");
    // Each such job spent its whole budget (one attempt) and the queue marked it dead: judged,
    // so it counts once, under dead_after_one_fault, not again as an unrecovered fault.
    assert!(!failed.contains(&"faults_recovered".to_string()), "{failed:?}");
    assert_eq!(r.check("dead_after_one_fault"), r.num("jobs.dead") as u64);
    assert!(r.num("jobs.dead") > 0.0);

    // The queue as shipped (reaper, 5 attempts) under the same crashes: every check holds.
    let r = crash_run(&[]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(r.num("faults.by_kind.crash") > 0.0);
    assert_eq!(r.check("faults_recovered"), 0);
    assert_eq!(r.check("dead_after_one_fault"), 0);
    assert_eq!(r.check("jobs_left_abandoned"), 0);
    assert_eq!(r.num("jobs.completed"), 300.0);
}
