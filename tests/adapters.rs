//! Adapters (`docs/adapters.md`): a queue in its own schema, judged right.
//!
//! - a completion that returns a row without changing one is not counted as accepted (and
//!   `validate` refuses to judge a SELECT-shaped write by its row count);
//! - a queue that completes by DELETE has its jobs counted done, not lost;
//! - uuid ids are numbered for the journal and bound back as uuids;
//! - `validate` prepares the SQL: a syntax error is exit 2 naming the statement;
//! - a custom strategy's default fail and heartbeat never need a column its claim lacks.

use crate::common;
use common::queuebench;

fn write(dir: &std::path::Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

/// A small queue of our own: a table with a uuid id, claimed with SKIP LOCKED (`COMPLETE`:
/// the `complete` line each test writes in).
pub(crate) const QUEUE: &str = r#"
name = "tiny"
table = "q"
setup = """
CREATE TABLE q (
  id       uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
  n        bigint      NOT NULL,
  state    text        NOT NULL DEFAULT 'ready',
  tries    smallint    NOT NULL DEFAULT 0,
  taken_at timestamptz
);
CREATE INDEX q_ready ON q (n) WHERE state = 'ready';
"""
enqueue = "INSERT INTO q (n) VALUES (:n) RETURNING id"
preload = "INSERT INTO q (n) SELECT g FROM generate_series(1, :count) AS g"
claim = """
WITH next AS (SELECT id FROM q WHERE state = 'ready' ORDER BY n LIMIT :batch FOR UPDATE SKIP LOCKED)
UPDATE q SET state = 'taken', tries = tries + 1, taken_at = :now FROM next WHERE q.id = next.id
RETURNING q.id, q.tries"""
COMPLETE

[result]
id = "id"
attempt = "tries"

[observe]
state = """SELECT id, CASE state WHEN 'ready' THEN 'queued' WHEN 'taken' THEN 'running' ELSE 'done' END AS status,
tries AS attempts FROM q"""
remaining = "SELECT count(*) FROM q WHERE state IN ('ready', 'taken')"
"#;

fn scenario(adapter: &str) -> String {
    format!(
        "name = \"tiny-run\"\nadapter = \"{adapter}\"\n[jobs]\npreload = 300\n[workers]\ncount = 4\n\
         [run]\ntimeout = \"60s\"\nsample_interval = \"off\"\n"
    )
}

#[test]
fn a_completion_that_returns_a_row_without_changing_one_is_not_accepted() {
    let dir = tempfile::tempdir().unwrap();
    // pg-boss's shape: the CTE's UPDATE matches nothing (the state is wrong), the SELECT still returns a row.
    let never =
        "WITH r AS (UPDATE q SET state = 'done' WHERE id = :id AND state = 'nope' RETURNING 1) SELECT count(*) FROM r";
    write(dir.path(), "rows.toml", &QUEUE.replace("COMPLETE", &format!("complete = \"{never}\"")));
    let s = write(dir.path(), "s.toml", &scenario("rows.toml"));
    let r = queuebench(&["validate", &s]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("rows.toml") && r.stderr.contains("accepted = \"positive\""), "{}", r.stderr);

    write(
        dir.path(),
        "rows.toml",
        &QUEUE.replace("COMPLETE", &format!("complete = {{ sql = \"{never}\", accepted = \"positive\" }}")),
    );
    // Nothing is ever done, so the queue never drains: the run times out (and fails).
    let r = queuebench(&["run", &s, "--set", "run.timeout=4s", "--quiet"]);
    assert_eq!(r.code, 1, "the run cannot pass: {}\n{}", r.stdout, r.stderr);
    assert_eq!(r.summary()["timed_out"], true);
    assert_eq!(r.num("completions.accepted"), 0.0, "count(*) = 0 is not an acceptance");
    assert_eq!(r.num("completions.rejected"), r.num("executions.total"));
    assert_eq!(r.num("jobs.completed"), 0.0);
    assert!(r.num("jobs.stuck_running") > 0.0);
    r.assert_clean();
}

#[test]
fn a_queue_that_completes_by_delete_has_its_jobs_done_not_lost() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "del.toml", &QUEUE.replace("COMPLETE", "complete = \"DELETE FROM q WHERE id = :id\""));
    let s = write(dir.path(), "s.toml", &scenario("del.toml"));
    let r = queuebench(&["validate", &s]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("its SQL prepared"), "{}", r.stdout);
    let r = queuebench(&["run", &s, "--quiet"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.num("jobs.enqueued"), 300.0);
    assert_eq!(r.num("jobs.completed"), 300.0, "deleted after an accepted completion = done");
    assert_eq!(r.num("jobs.lost"), 0.0);
    assert_eq!(r.num("executions.distinct_jobs"), 300.0, "uuid ids numbered once each");
    assert_eq!(r.num("executions.duplicate"), 0.0);
    assert_eq!(r.num("effects.table_rows"), 300.0, "queuebench_effects beside the queue");
    assert_eq!(r.summary()["adapter"], dir.path().join("del.toml").display().to_string());
    r.assert_clean();
}

#[test]
fn a_deleted_job_nobody_completed_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    // The claim deletes the job it hands out (an at-most-once queue): a worker that crashes
    // after the claim loses the job for good.
    let queue = QUEUE.replace(
        "UPDATE q SET state = 'taken', tries = tries + 1, taken_at = :now FROM next WHERE q.id = next.id\nRETURNING q.id, q.tries",
        "DELETE FROM q USING next WHERE q.id = next.id RETURNING q.id, q.tries",
    );
    let complete = "complete = { sql = \"SELECT :id::uuid IS NOT NULL\", accepted = \"true\" }";
    write(dir.path(), "amo.toml", &queue.replace("COMPLETE", complete));
    let text = scenario("amo.toml")
        + "[[faults]]\nkind = \"crash\"\npoint = \"after_claim\"\nevery = 50\nrespawn_after = \"10ms\"\n";
    let s = write(dir.path(), "s.toml", &text);
    let r = queuebench(&["run", &s, "--quiet"]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    let crashed = r.num("faults.by_kind.crash");
    assert!(crashed > 0.0);
    assert_eq!(r.num("jobs.lost"), crashed, "each crashed job is gone without a completion");
    r.assert_clean();
}

#[test]
fn validate_prepares_custom_sql_and_names_the_broken_statement() {
    let dir = tempfile::tempdir().unwrap();
    let text = "name = \"x\"\n[jobs]\npreload = 10\n[workers]\nstrategy = \"mine\"\n[strategies.mine]\n\
        claim = \"UPDATE jobs SET status = 'running' WHERE id IN (SELECT id FROM jobs WHERE status = 'queued' LIMIT :batch FOR UPDATE SKIP LOCKED) RETURNING id\"\n\
        complete = \"UPDATE jobz SET status = 'done' WHERE id = :id\"\n";
    let s = write(dir.path(), "bad.toml", text);
    let r = queuebench(&["validate", &s]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("bad.toml") && r.stderr.contains("complete statement"), "{}", r.stderr);
    assert!(r.stderr.contains("relation \"jobz\" does not exist") && r.stderr.contains("42P01"), "{}", r.stderr);
    let s = write(dir.path(), "typo.toml", &text.replace("UPDATE jobz", "UPDAT jobs"));
    let r = queuebench(&["validate", &s]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("syntax error at or near \"UPDAT\""), "{}", r.stderr);
    r.assert_clean();
}

#[test]
fn default_fail_and_heartbeat_never_need_a_column_the_claim_lacks() {
    let dir = tempfile::tempdir().unwrap();
    // The claim returns only the id; fencing is the default (token). A failing job type uses
    // the default fail statement, which must not ask for claim_token.
    let text = "name = \"x\"\n[jobs]\npreload = 40\n[[jobs.types]]\nname = \"flaky\"\ncount = 10\nfail_probability = 1.0\n\
        [workers]\ncount = 2\nstrategy = \"mine\"\n[run]\ntimeout = \"60s\"\n\
        [expect]\n\"checks.exactly_once\" = \"== 0\"\n[strategies.mine]\n\
        claim = \"UPDATE jobs SET status = 'running', attempts = attempts + 1 WHERE id IN (SELECT id FROM jobs WHERE status = 'queued' AND run_at <= now() ORDER BY id LIMIT :batch FOR UPDATE SKIP LOCKED) RETURNING id\"\n\
        complete = \"UPDATE jobs SET status = 'done' WHERE id = :id AND status = 'running'\"\n";
    let s = write(dir.path(), "s.toml", text);
    let r = queuebench(&["validate", &s]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = queuebench(&["run", &s, "--quiet", "--set", "jobs.max_attempts=2"]);
    assert_eq!(r.code, 0, "the default fail statement fences on status only: {}\n{}", r.stdout, r.stderr);
    assert_eq!(r.num("stale.fails_accepted"), 20.0, "10 flaky jobs failed twice each: {}", r.stdout);
    assert_eq!(r.num("jobs.dead"), 10.0);
    assert_eq!(r.num("executions.duplicate_race"), 0.0, "a retry after an accepted failure is no race");
    r.assert_clean();
}

/// The live progress line's depth comes from the adapter's `observe.depth`: an adapter without
/// one gets no depth on the line, never "queued 0 running 0" while its jobs run; with one, the
/// line shows it.
#[test]
fn the_progress_line_shows_a_depth_only_from_the_adapters_own_depth_query() {
    let dir = tempfile::tempdir().unwrap();
    let complete = "complete = \"UPDATE q SET state = 'done' WHERE id = :id AND state = 'taken'\"";
    write(dir.path(), "nodepth.toml", &QUEUE.replace("COMPLETE", complete));
    let depth = "depth = \"\"\"SELECT 'default' AS class, CASE state WHEN 'ready' THEN 'queued' WHEN 'taken' THEN 'running' \
                 ELSE 'done' END AS status, count(*), 0.0::float8 FROM q GROUP BY 1, 2\"\"\"";
    write(
        dir.path(),
        "depth.toml",
        &QUEUE.replace("COMPLETE", complete).replace("[observe]", &format!("[observe]\n{depth}")),
    );
    for (adapter, shows) in [("nodepth.toml", false), ("depth.toml", true)] {
        let s = write(dir.path(), "s.toml", &scenario(adapter));
        let sets = ["--set", "run.sample_interval=200ms", "--set", "workers.work=40ms"];
        let r = queuebench(&[&["run", &s][..], &sets].concat());
        assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
        let lines: Vec<&str> = r.stderr.lines().filter(|l| l.contains("jobs/s")).collect();
        assert!(!lines.is_empty(), "the progress line is printed: {}", r.stderr);
        assert_eq!(lines.iter().any(|l| l.contains("queued")), shows, "{adapter}: {lines:?}");
    }
}
