//! The harness's reaper in the stale-completion check: a completion that lands after the
//! reaper took the job back is stale even when no other worker claimed the job since, and a
//! fenced one, refused, passes. One worker, so nothing but the reaper can supersede its claim.

use crate::common::{self, bin, queuebench};

/// One job, one worker: w1 works it (200 ms) and freezes 3 s before it completes; its 1 s
/// lease runs out and the reaper (every 100 ms) gives the job back, long before w1 wakes. The
/// fenced side's w1 then claims it again and runs it twice (at-least-once, excused).
const SCENARIO: &str = r#"
name = "reaper-then-late-completion"
seed = 7

[jobs]
preload = 1

[workers]
count = 1
strategy = "skip-locked"
work = "200ms"

[lease]
duration = "1s"
reclaim = "reaper"
reaper_interval = "100ms"

[retry]
base = "0ms"

[[faults]]
kind = "pause"
point = "before_complete"
workers = "all"
every = 1
limit = 1
duration = "3s"

[run]
stop = "drained"
timeout = "40s"

[expect]
"checks.exactly_once" = "<= 1"
"#;

fn run(fencing: &str) -> common::Run {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("reaper.toml");
    std::fs::write(&path, SCENARIO).unwrap();
    let fencing = format!("lease.fencing={fencing}");
    let r = queuebench(&["run", path.to_str().unwrap(), "--quiet", "--set", &fencing]);
    r.assert_clean();
    assert_eq!(r.num("faults.by_kind.pause"), 1.0, "{}", r.stdout);
    r
}

fn check(r: &common::Run, name: &str) -> serde_json::Value {
    let summary = r.summary();
    summary["checks"].as_array().unwrap().iter().find(|c| c["name"] == name).cloned().unwrap()
}

#[test]
fn a_completion_fenced_by_id_only_lands_after_the_reaper_and_fails_naming_it() {
    let r = run("none");
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    let failed = r.summary()["failed_checks"].clone();
    assert_eq!(failed, serde_json::json!(["stale_completions_accepted"]), "{}", r.stdout);
    let stale = check(&r, "stale_completions_accepted");
    let detail = stale["detail"].as_str().unwrap();
    assert!(detail.contains("accepted after the reaper gave it back at t="), "{detail}");
    assert_eq!(r.num("completions.stale_accepted"), 1.0);
    assert!(r.num("reaper.reclaimed") >= 1.0);
    // explain tells the reaper's part, and the cause names it.
    let o = bin().args(["explain", r.out.to_str().unwrap()]).output().unwrap();
    let told = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{told}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(told.contains("the reaper gives the job back to the queue"), "{told}");
    assert!(told.contains("→ stale completion landed: w1's completion sent at t="), "{told}");
    assert!(told.contains("after the reaper gave it back"), "{told}");
}

#[test]
fn a_fenced_completion_refused_after_the_reaper_passes() {
    let r = run("token");
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(check(&r, "stale_completions_accepted")["violations"], 0);
    assert_eq!(check(&r, "completions_refused_unexplained")["violations"], 0);
    assert_eq!(r.num("completions.stale_rejected"), 1.0, "the late completion, refused after the reaper");
    let detail = check(&r, "stale_completions_accepted")["detail"].as_str().unwrap().to_string();
    assert!(
        detail.contains("after the reaper took the job back: 0 completions and 0 failures landed, 1 refused"),
        "{detail}"
    );
}

/// The built-in skip-locked claim with the built-in reclaim's UPDATE but no RETURNING: the
/// reaper cannot name what it took back.
const UNNAMED_RECLAIM: &str = r#"
[strategies.unnamed-reclaim]
claim = """
WITH next AS (
  SELECT id FROM jobs WHERE queue = 'default' AND status = 'queued' AND run_at <= now()
  ORDER BY run_at LIMIT :batch FOR UPDATE SKIP LOCKED
)
UPDATE jobs j SET status = 'running', attempts = j.attempts + 1,
  locked_until = now() + make_interval(secs => :lease_secs), claim_token = gen_random_uuid(), locked_by = :worker
FROM next WHERE j.id = next.id
RETURNING j.id, j.attempts, j.claim_token, j.class"""
complete = "UPDATE jobs SET status = 'done', locked_until = NULL WHERE id = :id"
reclaim = """
UPDATE jobs SET status = 'queued', locked_until = NULL, claim_token = NULL, locked_by = NULL
WHERE status = 'running' AND locked_until < now()"""
"#;

#[test]
fn a_reclaim_that_names_no_job_leaves_the_reapers_part_unjudged_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("unnamed.toml");
    let text = SCENARIO.replace("strategy = \"skip-locked\"", "strategy = \"unnamed-reclaim\"");
    std::fs::write(&path, format!("{text}{UNNAMED_RECLAIM}")).unwrap();
    let r = queuebench(&["run", path.to_str().unwrap(), "--quiet"]);
    r.assert_clean();
    assert_eq!(r.num("faults.by_kind.pause"), 1.0, "{}", r.stdout);
    assert!(r.num("reaper.reclaimed") >= 1.0, "{}", r.stdout);
    let detail = check(&r, "stale_completions_accepted")["detail"].as_str().unwrap().to_string();
    assert!(detail.contains("with a reclaim that returns no job ids (no RETURNING)"), "{detail}");
    assert!(detail.contains("not judged against the reaper"), "{detail}");
    // validate says so before any run.
    let v = queuebench(&["validate", path.to_str().unwrap()]);
    assert_eq!(v.code, 0, "{}\n{}", v.stdout, v.stderr);
    assert!(v.stderr.contains("does not return its id (add `RETURNING id`"), "{}", v.stderr);
}
