//! The preload survives a terminated backend the way workers do: a real `pg_terminate_backend`
//! of the preload's `INSERT` mid-way, and the run still ends with exactly `n` jobs, numbered
//! `1..=n` (what `verify/lost.rs` counts on), none lost, none enqueued twice: for the built-in
//! table and for an adapter's set-based preload whose ids come from its own sequence.

use crate::common;
use common::pg::ScratchDb;
use common::{bin, repo};
use std::path::Path;
use std::time::{Duration, Instant};

/// Runs `scenario` into `db` (schema `schema`, kept), terminating the backend whose active
/// query contains `insert` once it has run 200 ms; returns the summary and stderr.
fn run_and_terminate(
    db: &ScratchDb,
    scenario: &Path,
    schema: &str,
    n: u64,
    insert: &str,
) -> (serde_json::Value, String) {
    let out = tempfile::tempdir().unwrap();
    let child = bin()
        .args(["run", scenario.to_str().unwrap(), "--database-url", &db.url, "--schema", schema, "--keep", "--quiet"])
        .args(["--set", &format!("jobs.preload={n}"), "--set", "run.stop=1s", "--set", "expect={}"])
        .arg("--out")
        .arg(out.path().join("run"))
        .env_remove("DATABASE_URL")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(60);
    let mut killed = false;
    while !killed && Instant::now() < until {
        let r = db.sql(&format!(
            "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid() \
             AND query LIKE '%{insert}%' AND now() - query_start > interval '200 ms') t"
        ));
        killed = r.trim() == "1";
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr).into_owned());
    assert!(killed, "the preload's INSERT was never seen running:\n{stderr}");
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stderr.contains("note: the preload lost its connection"), "{stderr}");
    assert!(stderr.contains(&format!("0 of {n} jobs were in, enqueuing the other {n}")), "{stderr}");
    let text = std::fs::read_to_string(out.path().join("run/summary.json")).unwrap();
    (serde_json::from_str(&text).unwrap(), stderr)
}

fn assert_n_jobs_once(summary: &serde_json::Value, n: u64) {
    assert_eq!(summary["jobs"]["enqueued"], n, "n jobs, not more");
    assert_eq!(summary["jobs"]["lost"], 0, "no job lost: the ids are still 1..=n");
    assert_eq!(summary["executions"]["duplicate"], 0);
}

#[test]
fn a_preload_whose_backend_is_terminated_resumes_and_enqueues_each_job_once() {
    let db = ScratchDb::new("preload");
    let (n, schema) = (600_000, "qb_preload_kill");
    let s = repo("scenarios/skip-locked.toml");
    let (summary, _) = run_and_terminate(&db, &s, schema, n, "INSERT INTO jobs (payload, run_at, max_attempts)");
    assert_n_jobs_once(&summary, n);
    let table = db.sql(&format!("SELECT count(*), min(id), max(id), count(DISTINCT payload) FROM {schema}.jobs"));
    assert_eq!(table.trim(), format!("{n}|1|{n}|{n}"), "the table holds jobs 1..=n, each once");
    db.sql(&format!("DROP SCHEMA {schema} CASCADE"));
}

/// An adapter's queue numbered by its own bigserial: its sequence is put back too.
const ADAPTER: &str = r#"
name = "seq"
table = "q"
setup = """
CREATE TABLE q (id bigserial PRIMARY KEY, n bigint NOT NULL, state text NOT NULL DEFAULT 'ready',
                tries smallint NOT NULL DEFAULT 0);
CREATE INDEX q_ready ON q (n) WHERE state = 'ready';
"""
enqueue = "INSERT INTO q (n) VALUES (:n) RETURNING id"
preload = "INSERT INTO q (n) SELECT g FROM generate_series(1, :count) AS g"
claim = """
WITH next AS (SELECT id FROM q WHERE state = 'ready' ORDER BY n LIMIT :batch FOR UPDATE SKIP LOCKED)
UPDATE q SET state = 'taken', tries = tries + 1 FROM next WHERE q.id = next.id RETURNING q.id, q.tries"""
complete = "UPDATE q SET state = 'done' WHERE id = :id AND state = 'taken'"

[result]
id = "id"
attempt = "tries"

[observe]
state = """SELECT id, CASE state WHEN 'ready' THEN 'queued' WHEN 'taken' THEN 'running' ELSE 'done' END AS status,
tries AS attempts FROM q"""
remaining = "SELECT count(*) FROM q WHERE state IN ('ready', 'taken')"
"#;

#[test]
fn an_adapters_set_based_preload_resumes_with_its_sequence_put_back() {
    let db = ScratchDb::new("preload_adapter");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("seq.toml"), ADAPTER).unwrap();
    let s = dir.path().join("s.toml");
    std::fs::write(
        &s,
        "name = \"seq-run\"\nadapter = \"seq.toml\"\n[workers]\ncount = 2\n[run]\nsample_interval = \"off\"\n",
    )
    .unwrap();
    let (n, schema) = (1_500_000, "qb_preload_adapter");
    let (summary, _) = run_and_terminate(&db, &s, schema, n, "INSERT INTO q (n) SELECT");
    assert_n_jobs_once(&summary, n);
    let table = db.sql(&format!("SELECT count(*), min(id), max(id), count(DISTINCT n) FROM {schema}.q"));
    assert_eq!(table.trim(), format!("{n}|1|{n}|{n}"), "the adapter's table holds jobs 1..=n, each once");
    db.sql(&format!("DROP SCHEMA {schema} CASCADE"));
}
