//! The server going away mid-run: a crash-restart of the ephemeral cluster
//! (`postgres_restart`) that the workers ride out and the durability check
//! audits, a server that stays down past `run.reconnect_timeout` (exit 3, a
//! partial report), and the fault refused against a server that is not ours.

use crate::common;
use common::{queuebench, repo};

fn restart(sets: &[&str]) -> common::Run {
    let s = repo("scenarios/postgres-restart.toml");
    let mut args = vec!["run", s.to_str().unwrap()];
    for set in sets {
        args.extend(["--set", set]);
    }
    let r = queuebench(&args);
    r.assert_clean();
    r
}

#[test]
fn a_crash_restart_keeps_every_acknowledged_completion_and_loses_nothing() {
    let r = restart(&[]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let s = r.summary();
    assert_eq!(s["partial"], false);
    assert_eq!(r.num("outage.server_restarts"), 1.0);
    assert!(r.num("outage.server_down_ms") > 0.0);
    // Every worker lost its connection and found the server again, some after failed tries.
    assert!(r.num("outage.worker_reconnects") >= 4.0, "{}", r.stdout);
    assert!(r.num("outage.reconnect_attempts") > r.num("outage.worker_reconnects"), "{}", r.stdout);
    assert!(r.num("outage.window_end_s") > r.num("outage.window_start_s"));
    // The restart tested something: completions acknowledged before it, all still done after it.
    assert_eq!(s["durability"]["tested"], true);
    assert!(r.num("durability.acknowledged_before_restart") > 0.0);
    assert_eq!(r.num("durability.lost_completions"), 0.0);
    assert_eq!(r.num("durability.lost_enqueues"), 0.0);
    assert!(r.num("durability.acknowledged_enqueues") > 0.0);
    assert_eq!(r.check("durability"), 0);
    // Every job accounted for and done; a job can run twice only after its lease expired
    // (a claim whose answer died in the crash), never through a racing claim.
    assert_eq!(r.num("jobs.lost"), 0.0);
    assert_eq!(r.check("no_lost_jobs"), 0);
    assert!(r.num("jobs.completed") >= r.num("jobs.enqueued"), "{}", r.stdout);
    assert_eq!(r.num("executions.duplicate_race"), 0.0);
    assert_eq!(r.num("executions.duplicate"), r.num("executions.duplicate_lease_expired"));
    assert_eq!(r.check("stale_completions_accepted"), 0);
    assert!(r.stdout.contains("durability"), "{}", r.stdout);
}

#[test]
fn a_server_down_past_the_reconnect_timeout_ends_with_exit_3_and_a_partial_report() {
    let r =
        restart(&[r#"faults=[{ kind = "postgres_restart", at = "1s", duration = "5m" }]"#, "run.reconnect_timeout=2s"]);
    assert_eq!(r.code, 3, "{}\n{}", r.stdout, r.stderr);
    let s = r.summary();
    assert_eq!(s["partial"], true);
    assert_eq!(s["passed"], false);
    let why = s["partial_reason"].as_str().unwrap();
    assert!(why.contains("run.reconnect_timeout"), "{why}");
    assert!(r.stdout.contains("PARTIAL"), "{}", r.stdout);
    let html = std::fs::read_to_string(r.out.join("report.html")).unwrap();
    assert!(html.contains("PARTIAL REPORT"), "report.html marks it too");
    // The checks that read the final table were not run, rather than reported as passing or failing.
    let names: Vec<&str> = s["checks"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert!(!names.contains(&"no_lost_jobs") && !names.contains(&"durability"), "{names:?}");
    assert!(names.contains(&"exactly_once"), "{names:?}");
    assert!(r.num("outage.reconnect_attempts") > 1.0);
    assert!(r.num("outage.longest_worker_outage_ms") >= 2000.0);
    assert_eq!(r.num("outage.server_restarts"), 1.0);
}

#[test]
fn with_fsync_off_durability_is_not_tested_rather_than_passed() {
    let r = restart(&["postgres.settings.fsync=off"]);
    let s = r.summary();
    assert_eq!(r.num("outage.server_restarts"), 1.0, "{}", r.stderr);
    assert_eq!(s["durability"]["tested"], false);
    let note = s["durability"]["note"].as_str().unwrap();
    assert!(note.contains("not tested") && note.contains("fsync = off"), "{note}");
    let checks = s["checks"].as_array().unwrap();
    assert!(!checks.iter().any(|c| c["name"] == "durability"));
    // The scenario expects a durability check: missing, so the run fails rather than passes.
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    let e = s["expectations"].as_array().unwrap().iter().find(|e| e["name"] == "checks.durability").unwrap().clone();
    assert_eq!(e["passed"], false);
    assert!(r.stdout.contains("not tested"), "{}", r.stdout);
}

#[test]
fn postgres_restart_against_a_database_url_is_a_usage_error() {
    let s = repo("scenarios/postgres-restart.toml");
    let r = queuebench(&["run", s.to_str().unwrap(), "--database-url", "postgres://nobody@127.0.0.1:1/none"]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("postgres_restart") && r.stderr.contains("--database-url"), "{}", r.stderr);
    assert!(r.stderr.contains("postgres-restart.toml"), "{}", r.stderr);
    assert!(!r.out.exists(), "nothing is created");
}

/// A batch of the effects ledger whose answer a lost connection swallowed is written again
/// (`statements::effects_again`): whether or not the first write landed, each execution ends
/// up in the table once. Without it a restart mid-write counted a batch twice (64 rows over the
/// journal: `effects_ledger_agrees` failed on a run whose queue did nothing wrong).
#[test]
fn an_effects_batch_written_again_replaces_itself() {
    use queuebench::db::statements::{
        ADAPTER_EFFECTS, ADAPTER_EFFECTS_INSERT, EFFECTS_INSERT, MIGRATION, effects_again, listed,
    };
    let db = common::pg::ScratchDb::new("effects_again");
    db.sql(MIGRATION);
    db.sql(ADAPTER_EFFECTS);
    let count = |table: &str| db.sql(&format!("SELECT count(*) FROM {table}")).trim().to_string();
    // The own table: batch 7 lands, then is written again twice (as after two lost answers).
    db.sql(&format!(
        "PREPARE ins(int8[], int4, int4[], int8) AS {};\
         PREPARE again(int8[], int4, int4[], int8) AS {};\
         EXECUTE ins('{{1,2,3}}', 1, '{{1,1,1}}', 7);\
         EXECUTE again('{{1,2,3}}', 1, '{{1,1,1}}', 7);\
         EXECUTE again('{{1,2,3,4}}', 1, '{{1,1,1,1}}', 7);\
         EXECUTE ins('{{5}}', 1, '{{1}}', 8);",
        listed(EFFECTS_INSERT),
        effects_again(true)
    ));
    assert_eq!(count("effects"), "5", "jobs 1–4 once (the batch grew before its second try), job 5 once");
    // Written again when the first write never landed: written once.
    db.sql(&format!(
        "PREPARE a_again(text[], int8[], text, int4[], int8) AS {};\
         EXECUTE a_again('{{a,b}}', '{{1,2}}', 'w1', '{{1,1}}', 9);\
         PREPARE a_ins(text[], int8[], text, int4[], int8) AS {};\
         EXECUTE a_ins('{{c}}', '{{3}}', 'w1', '{{1}}', 10);\
         EXECUTE a_again('{{a,b}}', '{{1,2}}', 'w1', '{{1,1}}', 9);",
        effects_again(false),
        listed(ADAPTER_EFFECTS_INSERT)
    ));
    assert_eq!(count("queuebench_effects"), "3");
}
