//! The sqlx client (`workers.pool`): workers sharing one `sqlx::PgPool` against a real,
//! self-started PostgreSQL. Under exhaustion the wait for a connection shows up as its own
//! latency, far above the claim statement; acquire timeouts are counted and retried without
//! losing or duplicating a job; what the pool cannot run is refused up front (exit 2).

use crate::common;
use common::{queuebench, repo};

const SCENARIO: &str = "scenarios/sqlx-pool-exhaustion.toml";

#[test]
fn exhausted_pool_waits_for_connections_and_runs_every_job_once() {
    let scenario = repo(SCENARIO);
    let r = queuebench(&["run", scenario.to_str().unwrap(), "--quiet"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.check("exactly_once"), 0);
    assert_eq!(r.num("jobs.completed"), 3000.0);
    assert_eq!(r.num("executions.duplicate"), 0.0);
    assert_eq!(r.num("jobs.lost"), 0.0);
    let (acquire, claim) = (r.num("latency_ms.acquire.p99"), r.num("latency_ms.claim.p99"));
    assert!(r.num("latency_ms.acquire.count") > 0.0);
    assert!(acquire > claim, "32 workers on 4 connections: acquire p99 {acquire} ms vs claim p99 {claim} ms");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo("schema/summary.schema.json")).unwrap()).unwrap();
    let mut errors = Vec::new();
    common::schema::validate(&schema, &schema, &r.summary(), "summary", &mut errors);
    assert!(errors.is_empty(), "summary.json does not match the schema:\n{}", errors.join("\n"));
    r.assert_clean();
}

#[test]
fn acquire_timeouts_are_counted_and_lose_or_duplicate_nothing() {
    let scenario = repo(SCENARIO);
    let r = queuebench(&[
        "run",
        scenario.to_str().unwrap(),
        "--quiet",
        "--set",
        "workers.pool={ size = 1, acquire_timeout = \"1ms\" }",
        "--set",
        "jobs.preload=500",
        "--set",
        "expect={}",
    ]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let timeouts = r.summary()["errors"]["by_code"]["acquire_timeout"].as_u64().unwrap_or(0);
    assert!(timeouts > 0, "1 connection, 32 workers, 1 ms to get it: some acquires must time out");
    assert_eq!(r.num("jobs.completed"), 500.0);
    assert_eq!(r.num("executions.duplicate"), 0.0);
    assert_eq!(r.num("jobs.lost"), 0.0);
    for check in ["exactly_once", "no_lost_jobs", "ownership_overlap", "effects_ledger_agrees"] {
        assert_eq!(r.check(check), 0, "{check}");
    }
}

#[test]
fn a_direct_run_records_no_acquire_and_hold_transaction_is_refused() {
    let scenario = repo(SCENARIO);
    let r = queuebench(&["validate", scenario.to_str().unwrap(), "--set", "workers.mode=hold-transaction"]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("workers.pool") && r.stderr.contains("hold-transaction"), "{}", r.stderr);
    let direct = repo("scenarios/skip-locked.toml");
    let r =
        queuebench(&["run", direct.to_str().unwrap(), "--quiet", "--set", "jobs.preload=200", "--set", "expect={}"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.num("latency_ms.acquire.count"), 0.0);
}

/// The pooled workers run the same round as the direct ones, so the worker faults work on the
/// pool too: 1 % of jobs crash their worker after the claim (the reaper requeues them, nothing
/// is lost or run twice), and a worker paused past its lease before completing is fenced out
/// by the token (its stale completion rejected), each by the shipped scenario's own
/// expectations.
#[test]
fn a_pooled_run_survives_crash_and_pause_faults() {
    let pool = "workers.pool={ size = 2, acquire_timeout = \"10s\" }";
    let crash = repo("scenarios/crash-recovery.toml");
    let r = queuebench(&["run", crash.to_str().unwrap(), "--quiet", "--set", pool]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(r.num("faults.by_kind.crash") > 0.0);
    assert!(r.num("latency_ms.acquire.count") > 0.0, "the workers went through the pool");
    assert_eq!(r.num("jobs.completed"), 2000.0);
    for check in ["exactly_once", "no_lost_jobs", "effects_ledger_agrees"] {
        assert_eq!(r.check(check), 0, "{check}");
    }
    let pause = repo("scenarios/gc-pause-fencing-token.toml");
    let r = queuebench(&["run", pause.to_str().unwrap(), "--quiet", "--set", pool]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.num("faults.by_kind.pause"), 1.0);
    assert_eq!(r.num("completions.stale_rejected"), 1.0);
    assert_eq!(r.num("completions.stale_accepted"), 0.0);
    assert!(r.num("latency_ms.acquire.count") > 0.0);
}

#[test]
fn a_fault_aimed_at_a_workers_own_connection_is_refused_with_the_pool() {
    let s = repo("scenarios/backend-kill.toml");
    let r =
        queuebench(&["validate", s.to_str().unwrap(), "--set", "workers.pool={ size = 2, acquire_timeout = \"1s\" }"]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("kill_backend fault") && r.stderr.contains("capability `own_backend`"), "{}", r.stderr);
    assert!(r.stderr.contains("faults: the sqlx pool transport (workers.pool)"), "{}", r.stderr);
}
