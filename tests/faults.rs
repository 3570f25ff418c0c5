//! Every fault kind and every fencing mode against a real PostgreSQL, with
//! the checker counts asserted from summary.json.

use crate::common;
use common::{queuebench, repo};

fn run(name: &str, sets: &[&str]) -> common::Run {
    let s = repo(&format!("scenarios/{name}.toml"));
    let mut args = vec!["run", s.to_str().unwrap()];
    for set in sets {
        args.extend(["--set", set]);
    }
    let r = queuebench(&args);
    r.assert_clean();
    r
}

fn gc_pause(fencing: &str) -> common::Run {
    let r = run(&format!("gc-pause-fencing-{fencing}"), &[]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.num("faults.by_kind.pause"), 1.0);
    assert_eq!(r.num("jobs.lost"), 0.0);
    assert_eq!(r.num("executions.duplicate_race"), 0.0, "a pause never makes a racing claim");
    r
}

#[test]
fn pause_past_the_lease_without_fencing_lands_a_stale_completion() {
    let r = gc_pause("none");
    assert_eq!(r.num("completions.stale_accepted"), 1.0);
    assert_eq!(r.num("completions.stale_rejected"), 0.0);
    assert_eq!(r.num("ownership.overlapping_jobs"), 1.0);
}

#[test]
fn pause_past_the_lease_with_status_fencing_still_lands_it() {
    let r = gc_pause("status");
    assert_eq!(r.num("completions.stale_accepted"), 1.0);
    assert_eq!(r.num("completions.stale_rejected"), 0.0);
}

#[test]
fn pause_past_the_lease_with_attempts_fencing_is_rejected() {
    let r = gc_pause("attempts");
    assert_eq!(r.num("completions.stale_accepted"), 0.0);
    assert_eq!(r.num("completions.stale_rejected"), 1.0);
    assert_eq!(r.num("executions.duplicate_lease_expired"), 1.0, "both holders ran it: at-least-once");
}

#[test]
fn pause_past_the_lease_with_token_fencing_is_rejected() {
    let r = gc_pause("token");
    assert_eq!(r.num("completions.stale_accepted"), 0.0);
    assert_eq!(r.num("completions.stale_rejected"), 1.0);
    assert_eq!(r.check("stale_completions_accepted"), 0);
}

#[test]
fn crashes_after_claim_are_recovered_and_consume_attempts() {
    let r = run("crash-recovery", &["jobs.preload=600", "expect.\"jobs.completed\"=== 600"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let crashes = r.num("faults.by_kind.crash");
    assert!(crashes > 0.0);
    assert_eq!(r.num("jobs.completed"), 600.0);
    assert_eq!(r.num("jobs.lost"), 0.0);
    assert_eq!(r.num("faults.unrecovered"), 0.0);
    assert!(r.num("claims.reconnects") >= crashes, "every crash respawns with a new connection");
    let retried = r.num("jobs.retried");
    assert!(retried > 0.0 && retried <= crashes, "retried {retried}, crashes {crashes}");
    assert!(r.num("reaper.reclaimed") >= retried);
}

#[test]
fn a_poison_job_ends_dead_after_max_attempts_without_blocking_others() {
    let r = run("poison-job", &["jobs.preload=200", "expect.\"jobs.completed\"=== 199"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.num("jobs.dead"), 1.0);
    assert_eq!(r.num("jobs.completed"), 199.0);
    assert_eq!(r.num("faults.by_kind.poison"), 3.0, "one crash per attempt, max_attempts = 3");
    assert_eq!(r.num("reaper.marked_dead"), 1.0);
    assert_eq!(r.num("jobs.lost"), 0.0);
}

#[test]
fn heartbeats_keep_long_jobs_and_their_absence_duplicates_them() {
    let on = run("heartbeat-long-jobs", &[]);
    assert_eq!(on.code, 0, "{}\n{}", on.stdout, on.stderr);
    assert_eq!(on.num("executions.duplicate"), 0.0);
    assert!(on.num("stale.heartbeats_accepted") > 0.0);
    let off = run("heartbeat-off-long-jobs", &[]);
    assert_eq!(off.code, 0, "{}\n{}", off.stdout, off.stderr);
    assert!(off.num("executions.duplicate_lease_expired") > 0.0);
    assert_eq!(off.num("executions.duplicate_race"), 0.0);
    assert_eq!(off.num("jobs.dead"), 8.0);
}

#[test]
fn a_heartbeat_shorter_than_half_the_work_still_keeps_the_job() {
    // 1.1 s of work, a 1 s lease and a heartbeat every 600 ms: one heartbeat per job, at 600 ms
    // of work. The work is split around the mid_work fault point (at 550 ms); when each half
    // restarted the heartbeat timer, neither half reached 600 ms, no heartbeat was sent, the
    // lease ran out, and the reaper handed every job out again.
    let r = run(
        "heartbeat-long-jobs",
        &["workers.work=1100ms", "lease.duration=1s", "lease.heartbeat=600ms", "lease.reaper_interval=50ms"],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.num("claims.heartbeats"), 8.0, "one heartbeat for each of the 8 jobs");
    assert_eq!(r.num("stale.heartbeats_accepted"), 8.0);
    assert_eq!(r.num("executions.duplicate"), 0.0);
    assert_eq!(r.num("jobs.completed"), 8.0);
}

#[test]
fn killed_backends_are_counted_and_nothing_is_lost() {
    let r = run("backend-kill", &["jobs.preload=1500", "expect.\"jobs.completed\"=== 1500"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let kills = r.num("faults.by_kind.kill_backend");
    assert!(kills > 0.0);
    assert!(r.num("claims.reconnects") > 0.0);
    assert!(r.num("errors.total") > 0.0, "the workers saw the kills");
    assert_eq!(r.num("jobs.completed"), 1500.0);
    assert_eq!(r.num("jobs.lost"), 0.0);
}

#[test]
fn a_group_pause_freezes_the_group_and_the_others_finish_its_jobs() {
    let r = run("group-pause", &[]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(r.num("reaper.reclaimed") >= 1.0);
    assert_eq!(r.check("stale_completions_accepted"), 0);
    assert_eq!(r.num("jobs.completed"), 60.0);
}

#[test]
fn a_held_row_lock_stalls_for_update_but_not_skip_locked() {
    let fu = run("lock-hold-for-update", &["jobs.preload=800", "expect.\"jobs.completed\"=== 800"]);
    assert_eq!(fu.code, 0, "{}\n{}", fu.stdout, fu.stderr);
    assert!(fu.num("latency_ms.claim.max") >= 900.0, "blocked for the 1 s hold");
    let sl = run(
        "lock-hold-for-update",
        &[
            "workers.strategy=skip-locked",
            "jobs.preload=800",
            "expect.\"jobs.completed\"=== 800",
            "expect.\"latency_ms.claim.max\"=>= 0",
        ],
    );
    assert_eq!(sl.code, 0, "{}\n{}", sl.stdout, sl.stderr);
    assert_eq!(sl.num("faults.by_kind.lock_hold"), 1.0);
    assert_eq!(sl.num("executions.duplicate"), 0.0);
}

#[test]
fn cancelled_waiting_jobs_never_run() {
    let r = run("cancel-waiting-jobs", &[]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.num("jobs.cancelled"), 200.0);
    assert_eq!(r.check("cancelled_jobs_not_run"), 0);
}

#[test]
fn failing_job_types_retry_with_backoff_then_go_dead() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("fail.toml");
    std::fs::write(
        &file,
        r#"
name = "flaky"
[jobs]
preload = 100
max_attempts = 3
[[jobs.types]]
name = "always-fails"
count = 2
fail_probability = 1.0
fail_code = "PERMANENT"
[[jobs.types]]
name = "flaky"
count = 20
fail_probability = 0.5
fail_code = "RATE_LIMIT"
[workers]
count = 3
[retry]
base = "5ms"
cap = "20ms"
[[faults]]
kind = "crash"
point = "mid_work"
every = 10
respawn_after = "10ms"
identity = "new"
[lease]
duration = "200ms"
reclaim = "reaper"
reaper_interval = "50ms"
[expect]
"jobs.dead" = ">= 2"
"jobs.lost" = "== 0"
"stale.fails_accepted" = "> 0"
"checks.attempts_within_budget" = "== 0"
# A crash mid-work comes before the side effect, and a retry after an accepted failure is no
# duplicate; only a lease run out under a loaded machine's pause could make one.
"checks.exactly_once" = ">= 0"
"#,
    )
    .unwrap();
    let r = queuebench(&["run", file.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(r.num("executions.retries") > 0.0, "{}", r.summary()["executions"]);
    assert_eq!(r.num("executions.duplicate_race"), 0.0, "{}", r.summary()["executions"]);
    assert_eq!(r.num("jobs.dead") + r.num("jobs.completed"), 100.0, "every job ends done or dead");
    assert!(r.num("faults.by_kind.crash") > 0.0);
    assert_eq!(r.num("stale.fail_stale_accepted"), 0.0);
    r.assert_clean();
}

/// The built-in SKIP LOCKED queue with a job type that fails half the time: every extra run is
/// a retry after an accepted failure, so exactly_once holds and the run passes; `explain` tells
/// a retried job's story as a retry (issue 36: "a correct queue with retries fails").
#[test]
fn a_correct_queue_with_retries_passes_exactly_once_and_explain_calls_them_retries() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("retries.toml");
    std::fs::write(
        &file,
        "name = \"retries\"\n[jobs]\npreload = 300\nmax_attempts = 5\n[[jobs.types]]\nname = \"flaky\"\ncount = 300\n\
         fail_probability = 0.5\n[workers]\ncount = 4\nstrategy = \"skip-locked\"\n[retry]\nbase = \"5ms\"\ncap = \"20ms\"\n",
    )
    .unwrap();
    let r = queuebench(&["run", file.to_str().unwrap(), "--quiet"]);
    assert_eq!(r.code, 0, "a correct queue with retries passes: {}\n{}", r.stdout, r.stderr);
    let x = &r.summary()["executions"];
    assert!(x["retries"].as_u64().unwrap() > 0, "{x}");
    assert_eq!(x["duplicate"], 0, "{x}");
    assert_eq!(r.check("exactly_once"), 0);
    // A job that ran more than once: its story calls the second run a retry.
    let history = r.out.join("history.csv.gz");
    assert!(history.is_file());
    let retried = (1..=300)
        .map(|id| queuebench(&["explain", r.out.to_str().unwrap(), "--job", &id.to_string()]))
        .find(|e| e.stdout.contains("a retry"))
        .expect("some job's story tells a retry");
    assert!(
        !retried.stdout.contains("racing claim") && !retried.stdout.contains("after lease expiry"),
        "{}",
        retried.stdout
    );
}

/// A scenario file in `dir` (the built-in SKIP LOCKED queue, or `adapter`) with an `ack_lost`
/// fault on every worker's every 3rd completion, at most `limit` times. The lease is generous
/// (a loaded machine must not let 1 ms jobs run past it) unless a test waits for it.
fn ack_lost_scenario(dir: &std::path::Path, adapter: Option<&str>, fault: &str, limit: u32) -> String {
    let lease = if fault.contains("lease") { "1s" } else { "5s" };
    let queue = match adapter {
        Some(a) => format!("adapter = \"{}\"\n", repo(&format!("tests/fixtures/ack-lost/{a}")).display()),
        None => String::new(),
    };
    let strategy = if adapter.is_none() { "strategy = \"skip-locked\"\n" } else { "" };
    let text = format!(
        "name = \"ack-lost\"\nseed = 7\n{queue}[jobs]\npreload = 120\nmax_attempts = 10\n[workers]\ncount = 3\n{strategy}work = \"1ms\"\n\
         [lease]\nduration = \"{lease}\"\n{reclaim}[[faults]]\nkind = \"ack_lost\"\nevery = 3\nlimit = {limit}\n{fault}\
         [run]\nstop = \"drained\"\ntimeout = \"90s\"\nsample_interval = \"off\"\n",
        reclaim = if adapter.is_none() {
            "fencing = \"token\"\nreclaim = \"reaper\"\nreaper_interval = \"100ms\"\n"
        } else {
            ""
        },
    );
    let file = dir.join("ack-lost.toml");
    std::fs::write(&file, text).unwrap();
    file.to_string_lossy().into_owned()
}

/// A correct queue (SKIP LOCKED, token fence) whose completions lose their answers: each is
/// sent again and either lands or finds the job done (0 rows), which explains itself. Nothing
/// runs twice, and the run passes.
#[test]
fn a_lost_answer_on_a_correct_queue_is_sent_again_and_nothing_runs_twice() {
    let dir = tempfile::tempdir().unwrap();
    let s = ack_lost_scenario(dir.path(), None, "", 12);
    let r = queuebench(&["run", &s, "--quiet"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let injected = r.num("faults.by_kind.ack_lost");
    assert!(injected > 0.0 && injected <= 12.0, "{}", r.summary()["faults"]);
    assert!(r.num("faults.injected") >= injected);
    assert_eq!(r.num("executions.duplicate"), 0.0, "{}", r.summary()["executions"]);
    assert_eq!(r.num("executions.duplicate_after_ack_unknown"), 0.0);
    assert_eq!(r.num("jobs.completed"), 120.0);
    // The server ran each first completion: the one sent again finds the job done.
    assert_eq!(r.num("completions.rejected"), injected, "{}", r.summary()["completions"]);
    assert_eq!(r.check("completions_refused_unexplained"), 0);
    assert_eq!(r.check("completion_idempotent"), 0);
    assert_eq!(r.check("run_after_completion"), 0);
    r.assert_clean();
}

/// The same queue, its requests lost and the jobs left to the lease: the completion never
/// landed, the reaper brings each job back and another worker runs it. At-least-once, told by
/// its own cause; the completion check has nothing against it.
#[test]
fn a_lost_request_left_to_the_lease_runs_again_after_an_unknown_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let s = ack_lost_scenario(dir.path(), None, "lose = \"request\"\nthen = \"lease\"\n", 4);
    let r = queuebench(&["run", &s, "--quiet", "--set", "expect.\"checks.exactly_once\"=>= 0"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let injected = r.num("faults.by_kind.ack_lost");
    assert!(injected > 0.0, "{}", r.summary()["faults"]);
    let x = &r.summary()["executions"];
    assert_eq!(r.num("executions.duplicate_after_ack_unknown"), injected, "{x}");
    assert_eq!(r.num("executions.duplicate"), injected, "no other cause: {x}");
    assert_eq!(r.check("completion_idempotent"), 0);
    assert_eq!(r.num("jobs.completed"), 120.0);
    r.assert_clean();
}

/// A queue whose completion flips done and ready by id: the completion sent again after a lost
/// answer puts the finished job back, it runs again, and the run fails, with the cause in
/// summary.json, the terminal and `explain`.
#[test]
fn a_completion_that_is_not_idempotent_runs_the_job_again_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    let s = ack_lost_scenario(dir.path(), Some("toggle-complete.toml"), "", 4);
    let r = queuebench(&["run", &s]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    let x = &r.summary()["executions"];
    assert!(r.num("executions.duplicate_after_ack_unknown") > 0.0, "{x}");
    assert_eq!(r.num("executions.duplicate_after_completion"), 0.0, "{x}");
    assert!(r.check("completion_idempotent") > 0);
    assert_eq!(r.check("run_after_completion"), 0, "left to completion_idempotent");
    let failed = r.summary()["failed_checks"].to_string();
    assert!(failed.contains("completion_idempotent") && failed.contains("exactly_once"), "{failed}");
    let words = "after an acknowledgement whose outcome was unknown";
    assert!(r.stdout.contains(words), "{}", r.stdout);
    let summary = r.summary();
    let checks = summary["checks"].as_array().unwrap();
    let once = checks.iter().find(|c| c["name"] == "exactly_once").unwrap();
    assert!(once["detail"].as_str().unwrap().contains(words), "{once}");
    let idem = checks.iter().find(|c| c["name"] == "completion_idempotent").unwrap();
    let job = idem["examples"][0].as_i64().unwrap();
    let e = queuebench(&["explain", r.out.to_str().unwrap(), "--job", &job.to_string()]);
    assert!(e.stdout.contains(words) && e.stdout.contains("not idempotent"), "{}", e.stdout);
    assert!(e.stdout.contains("outcome unknown"), "{}", e.stdout);
    r.assert_clean();
}

/// In hold-transaction mode the COMMIT is the acknowledgement: `ack_lost` is refused there.
#[test]
fn ack_lost_needs_lease_mode() {
    let dir = tempfile::tempdir().unwrap();
    let s = ack_lost_scenario(dir.path(), None, "", 1);
    let text = std::fs::read_to_string(&s).unwrap().replace("work = ", "mode = \"hold-transaction\"\nwork = ");
    std::fs::write(&s, text).unwrap();
    let r = queuebench(&["validate", &s]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("ack_lost") && r.stderr.contains("mode = \"lease\""), "{}", r.stderr);
}
