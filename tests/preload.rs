//! The preload survives a terminated backend the way workers do: a real `pg_terminate_backend`
//! of the preload's `INSERT` mid-way, and the run still ends with exactly `n` jobs, numbered
//! `1..=n` (what `verify/lost.rs` counts on), none lost, none enqueued twice.

mod common;
use common::pg::ScratchDb;
use common::{bin, repo};
use std::time::{Duration, Instant};

#[test]
fn a_preload_whose_backend_is_terminated_resumes_and_enqueues_each_job_once() {
    let db = ScratchDb::new("preload");
    let n = 600_000;
    let schema = "qb_preload_kill";
    let out = tempfile::tempdir().unwrap();
    let s = repo("scenarios/skip-locked.toml");
    let child = bin()
        .args(["run", s.to_str().unwrap(), "--database-url", &db.url, "--schema", schema, "--keep", "--quiet"])
        .args(["--set", &format!("jobs.preload={n}"), "--set", "run.stop=1s", "--set", "expect={}"])
        .arg("--out")
        .arg(out.path().join("run"))
        .env_remove("DATABASE_URL")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Terminate the preload's INSERT once it has been running a moment.
    let until = Instant::now() + Duration::from_secs(60);
    let mut killed = false;
    while !killed && Instant::now() < until {
        let r = db.sql(
            "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid() \
             AND query LIKE '%INSERT INTO jobs (payload, run_at, max_attempts)%' \
             AND now() - query_start > interval '200 ms') t",
        );
        killed = r.trim() == "1";
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(killed, "the preload's INSERT was never seen running:\n{stderr}");
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stderr.contains("note: the preload lost its connection"), "{stderr}");
    assert!(stderr.contains(&format!("0 of {n} jobs were in, enqueuing the other {n}")), "{stderr}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("run/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["jobs"]["enqueued"], n, "n jobs, not more");
    assert_eq!(summary["jobs"]["lost"], 0, "no job lost: the ids are still 1..=n");
    assert_eq!(summary["executions"]["duplicate"], 0);
    let table = db.sql(&format!("SELECT count(*), min(id), max(id), count(DISTINCT payload) FROM {schema}.jobs"));
    assert_eq!(table.trim(), format!("{n}|1|{n}|{n}"), "the table holds jobs 1..=n, each once");
    db.sql(&format!("DROP SCHEMA {schema} CASCADE"));
}
