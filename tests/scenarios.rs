//! The shipped scenarios against a real, self-started PostgreSQL, with the
//! numbers the issue asks for asserted from summary.json.

use crate::common;
use common::{queuebench, repo};

fn scenario(name: &str) -> String {
    repo(&format!("scenarios/{name}.toml")).to_string_lossy().into()
}

#[test]
fn naive_claim_executes_jobs_more_than_once() {
    let s = scenario("naive-duplicates");
    let r = queuebench(&["run", &s, "--set", "jobs.preload=2000", "--set", "workers.max_claims=250"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(r.num("executions.duplicate") > 0.0);
    assert!(r.num("executions.jobs_duplicated") > 0.0);
    assert!(r.num("executions.max_per_job") >= 2.0);
    assert_eq!(r.num("executions.total"), 2000.0, "8 workers x 250 claims, each returned a job");
    assert!(r.num("executions.distinct_jobs") < 2000.0);
    assert_eq!(r.num("jobs.lost"), 0.0);
    let checks = r.summary()["checks"].clone();
    assert_eq!(checks[0]["name"], "exactly_once");
    assert_eq!(checks[0]["passed"], false);
    r.assert_clean();
}

#[test]
fn skip_locked_runs_every_job_exactly_once() {
    let s = scenario("skip-locked");
    let r = queuebench(&["run", &s, "--set", "jobs.preload=3000", "--set", "expect.\"jobs.completed\"=== 3000"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.num("executions.duplicate"), 0.0);
    assert_eq!(r.num("executions.distinct_jobs"), 3000.0);
    assert_eq!(r.num("jobs.completed"), 3000.0);
    assert_eq!(r.num("jobs.lost"), 0.0);
    assert_eq!(r.num("jobs.unfinished"), 0.0);
    assert_eq!(r.num("completions.accepted"), 3000.0);
    assert_eq!(r.num("effects.table_rows"), 3000.0, "the effects table agrees with the journal");
    assert!(r.num("latency_ms.claim.p99") > 0.0);
    assert!(r.num("throughput.jobs_per_sec") > 0.0);
    assert_eq!(r.summary()["passed"], true);
    r.assert_clean();
}

#[test]
fn token_fencing_rejects_stale_completions_and_none_accepts_them() {
    let s = scenario("lease-expiry-fencing");
    let fenced = queuebench(&["run", &s, "--set", "jobs.preload=80"]);
    let unfenced = queuebench(&["run", &s, "--set", "jobs.preload=80", "--set", "lease.fencing=none"]);
    assert!(fenced.num("completions.stale_rejected") > 0.0, "{}", fenced.stdout);
    assert_eq!(fenced.num("completions.stale_accepted"), 0.0);
    assert_eq!(fenced.num("jobs.completed"), 80.0);
    assert!(unfenced.num("completions.stale_accepted") > 0.0, "{}", unfenced.stdout);
    assert_eq!(unfenced.num("completions.rejected"), 0.0, "without a fence nothing is rejected");
    // The scenario expects no accepted stale completion: the unfenced run fails its gate.
    assert_eq!(unfenced.code, 1, "{}", unfenced.stdout);
    fenced.assert_clean();
    unfenced.assert_clean();
}

#[test]
fn hold_transaction_strategies_stay_exactly_once() {
    for name in ["for-update-convoy", "skip-locked-hold"] {
        let s = scenario(name);
        let r = queuebench(&[
            "run",
            &s,
            "--set",
            "jobs.preload=150",
            "--set",
            "expect.\"jobs.completed\"=== 150",
            "--set",
            "expect.\"throughput.jobs_per_sec\"=> 0",
        ]);
        assert_eq!(r.code, 0, "{name}: {}\n{}", r.stdout, r.stderr);
        assert_eq!(r.num("executions.duplicate"), 0.0, "{name}");
        assert_eq!(r.num("jobs.completed"), 150.0, "{name}");
        r.assert_clean();
    }
}

#[test]
fn failed_expectation_exits_1_and_still_writes_the_summary() {
    let s = scenario("skip-locked");
    let r = queuebench(&["run", &s, "--set", "jobs.preload=50", "--set", "expect.\"jobs.completed\"=== 51"]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    let summary = r.summary();
    assert_eq!(summary["passed"], false);
    let failed: Vec<_> = summary["expectations"].as_array().unwrap().iter().filter(|e| e["passed"] == false).collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["name"], "jobs.completed");
    assert_eq!(failed[0]["actual"], 50.0);
    r.assert_clean();
}

#[test]
fn custom_strategy_from_the_scenario_file_runs() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mine.toml");
    std::fs::write(
        &file,
        r#"
name = "mine"
[jobs]
preload = 300
[workers]
count = 4
strategy = "mine"
batch = 5
[strategies.mine]
claim = """
UPDATE jobs SET status = 'running', attempts = attempts + 1, claim_token = gen_random_uuid()
WHERE id IN (SELECT id FROM jobs WHERE status = 'queued' ORDER BY id LIMIT :batch FOR UPDATE SKIP LOCKED)
RETURNING id, attempts, claim_token"""
complete = "UPDATE jobs SET status = 'done' WHERE id = :id {fence}"
[expect]
"jobs.completed" = "== 300"
"executions.duplicate" = "== 0"
"#,
    )
    .unwrap();
    let r = queuebench(&["run", file.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.num("claims.jobs"), 300.0);
    assert!(r.num("claims.total") < 300.0, "batch 5 needs fewer round trips than jobs");
    r.assert_clean();
}
