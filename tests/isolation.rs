//! URL mode touches nothing but its own schema: a scratch database on the
//! machine's server (127.0.0.1:5432) holds user tables, rows, a sequence, a
//! function, an extension, a schema of the user's; after a passed, a failed
//! and an interrupted run, everything outside queuebench's schema is exactly
//! as before (row checksums included) and queuebench's schema is gone.

use crate::common;
use common::pg::{ScratchDb, psql, signal, spawn_watched, wait_for_progress};
use common::{bin, queuebench};

/// A small run that exercises every install path: a preload, the NOTIFY trigger,
/// a VACUUM step asking for pgstattuple (an extension) and a server setting.
const SCENARIO: &str = r#"
name = "isolation"
[jobs]
preload = 40
[workers]
count = 4
strategy = "skip-locked"
work = "1ms"
wakeup = "listen"
fallback_poll = "200ms"
[[vacuum]]
name = "end"
at = "100ms"
pgstattuple = true
[postgres.settings]
autovacuum = "off"
work_mem = "64MB"
[expect]
"jobs.completed" = "== 40"
"jobs.lost" = "== 0"
"#;

/// Everything outside queuebench's schemas that a run could change, as text.
fn snapshot(db: &ScratchDb) -> String {
    let queries = [
        // schemas and their owners and privileges
        "SELECT nspname, nspowner::regrole, nspacl FROM pg_namespace WHERE nspname NOT LIKE 'queuebench%' ORDER BY 1",
        // every relation outside queuebench's schemas (tables, indexes, sequences, views)
        "SELECT n.nspname, c.relname, c.relkind, c.relowner::regrole, c.relacl, obj_description(c.oid, 'pg_class') \
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE n.nspname NOT LIKE 'queuebench%' AND n.nspname <> 'pg_toast' ORDER BY 1, 2",
        "SELECT schemaname, sequencename, last_value FROM pg_sequences WHERE schemaname NOT LIKE 'queuebench%' ORDER BY 1, 2",
        "SELECT n.nspname, p.proname, md5(p.prosrc), p.proacl FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace \
         WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'queuebench%' ORDER BY 1, 2",
        "SELECT extname, extversion, extnamespace::regnamespace FROM pg_extension ORDER BY 1",
        "SELECT event_object_schema, event_object_table, trigger_name FROM information_schema.triggers \
         WHERE event_object_schema NOT LIKE 'queuebench%' ORDER BY 1, 2, 3",
        // cluster-wide: roles, ALTER SYSTEM, ALTER DATABASE/ROLE SET, this database's own settings
        "SELECT rolname, rolsuper, rolcreaterole, rolcreatedb, rolcanlogin, rolpassword IS NULL FROM pg_authid ORDER BY 1",
        "SELECT name, setting FROM pg_file_settings WHERE sourcefile LIKE '%postgresql.auto.conf' ORDER BY 1",
        "SELECT name, setting FROM pg_settings WHERE source NOT IN ('default', 'override', 'client', 'session') ORDER BY 1",
        "SELECT setdatabase, setrole, setconfig FROM pg_db_role_setting ORDER BY 1, 2",
        "SELECT datname, datacl, datconnlimit FROM pg_database WHERE datname = current_database()",
    ];
    let mut out: Vec<String> = queries.iter().map(|q| format!("{q}\n{}", db.sql(q))).collect();
    // Row count and checksum of every user table outside queuebench's schemas.
    let tables = db.sql(
        "SELECT format('%I.%I', schemaname, tablename) FROM pg_tables \
         WHERE schemaname NOT IN ('pg_catalog', 'information_schema') AND schemaname NOT LIKE 'queuebench%' ORDER BY 1",
    );
    for t in tables.lines() {
        out.push(db.sql(&format!(
            "SELECT '{t}', count(*), md5(coalesce(string_agg(x::text, ',' ORDER BY x::text), '')) FROM {t} x"
        )));
    }
    out.join("\n")
}

fn seed(db: &ScratchDb) {
    db.sql(
        "CREATE TABLE public.users (id serial PRIMARY KEY, name text NOT NULL); \
         INSERT INTO public.users (name) SELECT 'user ' || g FROM generate_series(1, 50) g; \
         CREATE TABLE public.jobs (id bigint, note text); INSERT INTO public.jobs VALUES (1, 'the user''s own jobs table'); \
         CREATE SCHEMA app; CREATE TABLE app.orders (id int PRIMARY KEY, total numeric); \
         INSERT INTO app.orders SELECT g, g * 1.5 FROM generate_series(1, 20) g; \
         CREATE SEQUENCE app.invoice_no; SELECT nextval('app.invoice_no'); \
         CREATE FUNCTION public.double_it(int) RETURNS int LANGUAGE sql AS 'SELECT $1 * 2'; \
         CREATE EXTENSION IF NOT EXISTS pg_trgm;",
    );
}

#[test]
fn passed_failed_and_interrupted_runs_change_nothing_outside_their_schema() {
    let db = ScratchDb::new("isolation");
    seed(&db);
    let before = snapshot(&db);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("isolation.toml");
    std::fs::write(&file, SCENARIO).unwrap();
    let f = file.to_str().unwrap();

    let passed = queuebench(&["run", f, "--database-url", &db.url, "--quiet"]);
    assert_eq!(passed.code, 0, "{}{}", passed.stdout, passed.stderr);
    assert_eq!(passed.summary()["database"]["kind"], "url");
    assert_eq!(snapshot(&db), before, "a passed run changed something outside its schema");
    assert_eq!(db.harness_schemas(""), "", "queuebench's schema is gone");

    let failed =
        queuebench(&["run", f, "--database-url", &db.url, "--quiet", "--set", "expect.\"jobs.completed\"=== 1"]);
    assert_eq!(failed.code, 1, "{}{}", failed.stdout, failed.stderr);
    assert_eq!(snapshot(&db), before, "a failed run changed something outside its schema");
    assert_eq!(db.harness_schemas(""), "");

    let out = tempfile::tempdir().unwrap();
    let mut cmd = bin();
    cmd.args(["run", f, "--database-url", &db.url, "--set", "run.stop=5m", "--set", "workers.work=20ms"])
        .args(["--set", "jobs.preload=2000", "--out"])
        .arg(out.path().join("run"))
        .env_remove("DATABASE_URL");
    let (mut child, rx, stderr) = spawn_watched(cmd);
    wait_for_progress(&rx, &stderr);
    assert_eq!(db.harness_schemas("").matches("queuebench_").count(), 1, "the run works in one schema of its own");
    signal(&child, libc::SIGINT);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{}", stderr.lock().unwrap());
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("run/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["interrupted"], true);
    assert_eq!(snapshot(&db), before, "an interrupted run changed something outside its schema");
    assert_eq!(db.harness_schemas(""), "");
}

#[test]
fn an_existing_schema_is_refused_unless_reuse_and_reuse_replaces_only_queuebench_tables() {
    let db = ScratchDb::new("reuse");
    db.sql("CREATE SCHEMA mine; CREATE TABLE mine.keep_me (x int); INSERT INTO mine.keep_me VALUES (42);");
    let s = common::repo("scenarios/skip-locked.toml");
    let s = s.to_str().unwrap();
    let small = ["--set", "jobs.preload=20", "--set", "expect.\"jobs.completed\"=== 20", "--quiet"];
    let run = |extra: &[&str]| {
        let mut args = vec!["run", s, "--database-url", &db.url, "--schema", "mine"];
        args.extend_from_slice(&small);
        args.extend_from_slice(extra);
        queuebench(&args)
    };
    let tables =
        || db.sql("SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables WHERE schemaname = 'mine'");

    let refused = run(&[]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("schema mine already exists") && refused.stderr.contains("--reuse"),
        "{}",
        refused.stderr
    );
    assert!(!refused.out.exists(), "no results folder for a refused run");
    assert_eq!(tables().trim(), "keep_me");

    // `prepare --reuse` installs queuebench's tables in the schema and keeps them (no run, fast) ...
    let prepared = common::queuebench(&["prepare", s, "--database-url", &db.url, "--schema", "mine", "--reuse"]);
    assert_eq!(prepared.code, 0, "{}", prepared.stderr);
    assert_eq!(tables().trim(), "business_rows,effects,jobs,keep_me");
    // ... and a run with --reuse installs them again over those, then removes them, not the schema.
    let again = run(&["--reuse"]);
    assert_eq!(again.code, 0, "reinstalled over the existing tables: {}{}", again.stdout, again.stderr);
    assert_eq!(tables().trim(), "keep_me", "the schema and the user's table stay, queuebench's tables go");
    assert_eq!(db.sql("SELECT x FROM mine.keep_me").trim(), "42");

    db.sql("CREATE TABLE mine.effects (mine text)");
    let foreign = run(&["--reuse"]);
    assert_eq!(foreign.code, 2, "{}", foreign.stderr);
    assert!(foreign.stderr.contains("effects that queuebench did not create"), "{}", foreign.stderr);
    assert_eq!(tables().trim(), "effects,keep_me", "nothing was dropped");

    let bad = queuebench(&["run", s, "--database-url", &db.url, "--schema", "Robert'); DROP TABLE x;--"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(bad.stderr.contains("lower-case letters"), "{}", bad.stderr);
    psql(&db.url, "SELECT 1");
}
