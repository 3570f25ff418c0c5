//! `validate`'s smoke cycle (src/commands/validate/cycle.rs): inside the transaction validate
//! rolls back, the adapter's statements run once with real values and the observer queries are
//! read back.
//!
//! - every shipped adapter passes it, and nothing is left in the database after;
//! - an observer that gives a status no checker knows is exit 2, naming the status, the observer
//!   and the accepted ones, and so is one that reads a completed job as anything but `done`;
//! - a claim that takes no row lock and no advisory lock is warned about (exit 0), one with
//!   `FOR UPDATE SKIP LOCKED` is not;
//! - a complete that prepares but fails when run is exit 2 naming the adapter, the step, its SQL
//!   and the server's message.

use crate::common;
use common::pg::ScratchDb;
use common::{queuebench, repo};
use std::path::Path;

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

fn scenario(dir: &Path, name: &str, adapter: &str) -> String {
    let stem = name.trim_end_matches(".toml");
    write(dir, name, &format!("name = \"{stem}\"\nadapter = \"{adapter}\"\n[jobs]\npreload = 10\n"))
}

/// Nothing of the cycle stays: no schema but the server's own, no table, type or function.
fn assert_nothing_left(db: &ScratchDb) {
    assert_eq!(db.harness_schemas(""), "", "the scratch schema is gone");
    let left = db.sql(
        "SELECT (SELECT count(*) FROM pg_namespace WHERE nspname NOT IN ('public', 'information_schema') \
                  AND nspname NOT LIKE 'pg\\_%') \
              + (SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public') \
              + (SELECT count(*) FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace WHERE n.nspname = 'public') \
              + (SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public')",
    );
    assert_eq!(left.trim(), "0", "validate left something in {}", db.name);
}

#[test]
fn every_shipped_adapter_runs_the_cycle_and_leaves_nothing() {
    let db = ScratchDb::new("vcycle");
    let dir = tempfile::tempdir().unwrap();
    let mut names: Vec<String> = std::fs::read_dir(repo("adapters"))
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".toml").map(String::from))
        .collect();
    names.sort();
    assert!(names.len() >= 10, "{names:?}");
    let files: Vec<String> = names.iter().map(|n| scenario(dir.path(), &format!("{n}.toml"), n)).collect();
    let mut args = vec!["validate", "--database-url", &db.url];
    args.extend(files.iter().map(String::as_str));
    let r = queuebench(&args);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    for n in &names {
        let line = r.stdout.lines().find(|l| l.contains(&format!("adapter {n},"))).unwrap_or_else(|| {
            panic!("no ok line for {n}: {}", r.stdout);
        });
        assert!(line.contains("run once: ") && line.contains("enqueue") && line.contains("observers"), "{line}");
        // pg-boss's claim takes only jobs whose start_after is before now(), which does not move
        // inside validate's one transaction: its claim finds nothing there, and says so.
        if n == "pg-boss" {
            assert!(r.stderr.contains("pg-boss.toml: the claim returned no job"), "{}", r.stderr);
        } else {
            assert!(line.contains("claim, ") && line.contains("complete"), "{line}");
        }
    }
    assert!(!r.stderr.contains("no row lock"), "every shipped claim locks its rows: {}", r.stderr);
    assert_nothing_left(&db);
}

#[test]
fn an_observer_status_no_checker_knows_is_refused() {
    let db = ScratchDb::new("vstatus");
    let dir = tempfile::tempdir().unwrap();
    let river = std::fs::read_to_string(repo("adapters/river.toml")).unwrap();
    // The first such line is observe.state's: the job the cycle completed reads `finished`.
    let broken = river.replacen("WHEN 'completed' THEN 'done'", "WHEN 'completed' THEN 'finished'", 1);
    assert_ne!(broken, river);
    write(dir.path(), "finished.toml", &broken);
    let s = scenario(dir.path(), "s.toml", "finished.toml");
    let r = queuebench(&["validate", &s, "--database-url", &db.url]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    for part in
        ["finished.toml", "observe.state", "`finished`", "accepted: queued, running, done, failed, dead, cancelled"]
    {
        assert!(r.stderr.contains(part), "{part}: {}", r.stderr);
    }
    assert_nothing_left(&db);
    // A known status, but the wrong one for a job whose completion landed.
    let wrong = river.replacen("WHEN 'completed' THEN 'done'", "WHEN 'completed' THEN 'queued'", 1);
    write(dir.path(), "finished.toml", &wrong);
    let r = queuebench(&["validate", &s, "--database-url", &db.url]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("the status `queued` for job") && r.stderr.contains("after its complete landed"),
        "{}",
        r.stderr
    );
    // The same file with the status it should give passes.
    write(dir.path(), "finished.toml", &river);
    let r = queuebench(&["validate", &s, "--database-url", &db.url]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
}

/// A small queue of our own: CLAIM and COMPLETE filled in by each test.
const QUEUE: &str = r#"
name = "tiny"
table = "q"
setup = """
CREATE TABLE q (
  id       bigserial   PRIMARY KEY,
  n        bigint      NOT NULL,
  state    text        NOT NULL DEFAULT 'ready',
  tries    smallint    NOT NULL DEFAULT 0
);
"""
enqueue = "INSERT INTO q (n) VALUES (:n) RETURNING id"
claim = """
UPDATE q SET state = 'taken', tries = tries + 1
WHERE id = (SELECT id FROM q WHERE state = 'ready' ORDER BY n LIMIT :batch LOCKING)
RETURNING id, tries"""
complete = "COMPLETE"

[result]
id = "id"
attempt = "tries"

[observe]
state = """SELECT id, CASE state WHEN 'ready' THEN 'queued' WHEN 'taken' THEN 'running' ELSE 'done' END AS status,
tries AS attempts FROM q"""
remaining = "SELECT count(*) FROM q WHERE state IN ('ready', 'taken')"
"#;

fn tiny(locking: &str, complete: &str) -> String {
    QUEUE.replace("LOCKING", locking).replace("COMPLETE", complete)
}

const DONE: &str = "UPDATE q SET state = 'done' WHERE id = :id AND state = 'taken'";

#[test]
fn a_claim_that_takes_no_lock_is_warned_about() {
    let db = ScratchDb::new("vlock");
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "naive.toml", &tiny("", DONE));
    let s = scenario(dir.path(), "s.toml", "naive.toml");
    let r = queuebench(&["validate", &s, "--database-url", &db.url]);
    assert_eq!(r.code, 0, "a warning, not a refusal: {}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("warning: ") && r.stderr.contains("naive.toml"), "{}", r.stderr);
    assert!(
        r.stderr.contains("no row lock and no advisory lock")
            && r.stderr.contains("two workers can then claim the same job"),
        "{}",
        r.stderr
    );
    assert!(r.stdout.contains("claim, complete"), "the cycle ran: {}", r.stdout);

    write(dir.path(), "naive.toml", &tiny("FOR UPDATE SKIP LOCKED", DONE));
    let r = queuebench(&["validate", &s, "--database-url", &db.url]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(!r.stderr.contains("no row lock"), "FOR UPDATE takes a row lock: {}", r.stderr);

    // An advisory lock is a claim lock too.
    let advisory_claim = tiny("", DONE).replace(
        "WHERE state = 'ready' ORDER BY n LIMIT :batch ",
        "WHERE state = 'ready' AND pg_try_advisory_xact_lock(id) ORDER BY n LIMIT :batch",
    );
    assert_ne!(advisory_claim, tiny("", DONE));
    write(dir.path(), "naive.toml", &advisory_claim);
    let r = queuebench(&["validate", &s, "--database-url", &db.url]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(!r.stderr.contains("no row lock"), "an advisory lock counts: {}", r.stderr);
    assert_nothing_left(&db);
}

#[test]
fn a_complete_that_fails_when_run_names_the_step_and_the_server_message() {
    let db = ScratchDb::new("vstep");
    let dir = tempfile::tempdir().unwrap();
    // Prepares (the division is by a column), fails on the row the claim handed out.
    let broken = "UPDATE q SET state = 'done', n = n / (tries - 1) WHERE id = :id AND state = 'taken'";
    write(dir.path(), "broken.toml", &tiny("FOR UPDATE SKIP LOCKED", broken));
    let s = scenario(dir.path(), "s.toml", "broken.toml");
    let r = queuebench(&["validate", &s, "--database-url", &db.url]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    for part in [
        "broken.toml",
        "the complete step failed",
        "division by zero",
        "22012",
        "SQL: UPDATE q SET state = 'done', n = n /",
    ] {
        assert!(r.stderr.contains(part), "{part}: {}", r.stderr);
    }
    assert_nothing_left(&db);

    // A complete that runs but never lands on its own claimed job: a run would count every
    // completion refused.
    let never = "UPDATE q SET state = 'done' WHERE id = :id AND state = 'ready'";
    write(dir.path(), "broken.toml", &tiny("FOR UPDATE SKIP LOCKED", never));
    let r = queuebench(&["validate", &s, "--database-url", &db.url]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("the complete step ran on the job its claim had just handed out"), "{}", r.stderr);
    assert_nothing_left(&db);

    // A step that commits would commit the setup's writes too (here a table outside the
    // scratch schema): refused before the cycle runs anything.
    let leaky = tiny("FOR UPDATE SKIP LOCKED", "COMPLETE")
        .replace("setup = \"\"\"", "setup = \"\"\"\nCREATE TABLE public.qb_leak (x int);")
        .replace("complete = \"COMPLETE\"", &format!("complete = [\"{DONE}\", \"COMMIT\"]"));
    assert!(leaky.contains("qb_leak") && leaky.contains("\"COMMIT\"]"), "{leaky}");
    write(dir.path(), "broken.toml", &leaky);
    let r = queuebench(&["validate", &s, "--database-url", &db.url]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("the complete step holds `COMMIT`"), "{}", r.stderr);
    assert_nothing_left(&db);
}
