//! Names and values chosen by somebody else reach queuebench's SQL as names and values, never
//! as SQL (docs/safety.md, "Names and values in SQL"; `src/quote.rs` is the one place that
//! quotes them). Each place that builds SQL with a name from outside is tried with hostile
//! names: double quotes, `$1`, semicolons, `--`, unicode, backslashes, single quotes.
//!
//! The key one: a role that may only create schemas names one
//! `a".qb_agent_run, a.evil() s --`; a superuser's `queuebench agent` once pasted that name into
//! its lookup, ran `a.evil()`, and the role became a superuser.

use crate::common::pg::{ScratchDb, psql, rand_u32, server};
use crate::common::{bin, queuebench, repo};

/// Names a hostile role could give a schema or a table.
const HOSTILE: [&str; 8] = [
    "a\".qb_agent_run, a.evil() s --",
    "x\"; DROP SCHEMA keep CASCADE; --",
    "$1",
    "semi;colon",
    "ünï\u{00e7}ødé ☃",
    "back\\slash",
    "it's",
    "new\nline",
];

/// `name` as a quoted identifier, for the test's own SQL.
fn q(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A login role of the test's own, dropped (after the scratch database, declared after it) at
/// the end.
struct Role(String);

impl Role {
    fn new(tag: &str) -> Role {
        let name = format!("qb_{tag}_{:08x}", rand_u32());
        psql(&format!("{}/postgres", server()), &format!("CREATE ROLE {name} LOGIN"));
        Role(name)
    }

    fn is_superuser(&self) -> bool {
        let sql = format!("SELECT rolsuper FROM pg_roles WHERE rolname = '{}'", self.0);
        psql(&format!("{}/postgres", server()), &sql).trim() == "t"
    }
}

impl Drop for Role {
    fn drop(&mut self) {
        let _ = std::process::Command::new("psql")
            .args(["-X", "-q", &format!("{}/postgres", server()), "-c", &format!("DROP ROLE IF EXISTS {}", self.0)])
            .output();
    }
}

/// `queuebench agent` as the superuser, looking for a run for 1 s: (exit code, stderr).
fn agent(db: &ScratchDb, extra: &[&str]) -> (Option<i32>, String) {
    let o = bin().args(["agent", "--database-url", &db.url, "--wait", "1s"]).args(extra).output().unwrap();
    (o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned())
}

#[test]
fn an_agent_reads_a_hostile_schema_name_as_a_name_and_runs_none_of_its_functions() {
    let role = Role::new("evil");
    let db = ScratchDb::new("hostile_agent");
    let r = &role.0;
    db.sql(&format!("GRANT CREATE ON DATABASE {} TO {r}", db.name));
    let hostile = HOSTILE[0];
    let as_role = db.url_as(r);
    // What the role may do: create schemas, tables, functions, types and casts of its own.
    // a.evil() makes the role a superuser when a superuser calls it, and writes down that it ran.
    psql(
        &as_role,
        &format!(
            "CREATE SCHEMA a; CREATE TABLE a.ran (who text, way text); \
             CREATE FUNCTION a.evil() RETURNS int LANGUAGE plpgsql AS $$ \
               BEGIN INSERT INTO a.ran VALUES (current_user, 'name'); ALTER ROLE {r} SUPERUSER; RETURN 1; END $$; \
             CREATE TABLE a.qb_agent_run (run_id text, state text, created_at timestamptz); \
             INSERT INTO a.qb_agent_run VALUES ('r1', 'done', now()); \
             CREATE SCHEMA {h}; \
             CREATE TABLE {h}.qb_agent_run (run_id text, state text, created_at timestamptz); \
             INSERT INTO {h}.qb_agent_run VALUES ('r2', 'done', now());",
            h = q(hostile)
        ),
    );
    // A second way in without any odd name: a type of the role's own with a cast to text that
    // calls its function, as the control table's created_at.
    psql(
        &as_role,
        &format!(
            "CREATE SCHEMA b; CREATE TYPE b.t AS (x int); \
             CREATE FUNCTION b.evil(b.t) RETURNS text LANGUAGE plpgsql AS $$ \
               BEGIN INSERT INTO a.ran VALUES (current_user, 'cast'); ALTER ROLE {r} SUPERUSER; RETURN 'x'; END $$; \
             CREATE CAST (b.t AS text) WITH FUNCTION b.evil(b.t); \
             CREATE TABLE b.qb_agent_run (run_id text, state text, created_at b.t); \
             INSERT INTO b.qb_agent_run VALUES ('r3', 'waiting', ROW(1));"
        ),
    );
    assert!(!role.is_superuser());

    // Any run; the hostile schema by its name; the look-alike's run id.
    let any = agent(&db, &[]);
    let by_name = agent(&db, &["--run", hostile]);
    let lookalike = agent(&db, &["--run", "r3"]);
    let ran = db.sql("SELECT string_agg(DISTINCT who || ' through the ' || way, ', ') FROM a.ran");
    assert_eq!(ran.trim(), "", "a function of the role ran as the agent's role");
    assert!(!role.is_superuser(), "the role became a superuser through `queuebench agent`");

    // The two plain control tables are found and read, neither is waiting.
    assert_eq!(any.0, Some(3), "{}", any.1);
    assert!(any.1.contains("no run is waiting for agents in this database (2 run(s)"), "{}", any.1);
    // The hostile schema by its name: its own table is read (run r2), nothing else.
    assert_eq!(by_name.0, Some(3), "{}", by_name.1);
    assert!(by_name.1.contains("run r2 is done, no longer waiting for agents"), "{}", by_name.1);
    // The look-alike whose columns are not the control table's is not a run at all.
    assert_eq!(lookalike.0, Some(3), "{}", lookalike.1);
    assert!(lookalike.1.contains("no run `r3` in this database"), "{}", lookalike.1);
    drop(db);
}

/// `--schema` takes lower-case letters, digits and _ only: every hostile name is refused before
/// anything is created, in `run` (with and without `--reuse`) and `prepare`.
#[test]
fn a_hostile_schema_flag_is_refused_before_anything_is_created() {
    let db = ScratchDb::new("hostile_flag");
    let schemas = || db.sql("SELECT string_agg(nspname, ',' ORDER BY nspname) FROM pg_namespace");
    let before = schemas();
    let s = repo("scenarios/skip-locked.toml");
    let s = s.to_str().unwrap();
    for name in HOSTILE.iter().copied().chain(["Jobs", "queuebench_1; DROP TABLE x", "\"quoted\""]) {
        for reuse in [&[][..], &["--reuse"][..]] {
            let args = [&["run", s, "--database-url", &db.url, "--schema", name][..], reuse].concat();
            let r = queuebench(&args);
            assert_eq!(r.code, 2, "{name:?} {reuse:?}: {}", r.stderr);
            assert!(r.stderr.contains("--schema") && r.stderr.contains("use lower-case letters, digits and _"));
            assert!(!r.out.exists(), "no run folder for {name:?}");
        }
        let o = bin().args(["prepare", s, "--database-url", &db.url, "--schema", name]).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{name:?}: {}", String::from_utf8_lossy(&o.stderr));
    }
    assert_eq!(schemas(), before, "a refused --schema created nothing");
}

/// `clean` on a database holding schemas with hostile names, each also carrying queuebench's
/// mark of a process that is gone: only the one schema named as queuebench names its schemas
/// is dropped; every other stays with its table, and nothing fails.
#[test]
fn clean_drops_only_marked_leftovers_among_hostile_schema_names() {
    let db = ScratchDb::new("hostile_clean");
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_string();
    let mark = format!("queuebench run, pid {} on {host}", i32::MAX - 7);
    let dead = "queuebench_20250101_000000_abcd";
    let mut names: Vec<String> = HOSTILE.iter().map(|s| s.to_string()).collect();
    names.extend([
        format!("{dead}\"; DROP SCHEMA keep CASCADE; --"),
        format!("{dead}\n"),
        format!("{dead} "),
        "queuebench_validate_0000000$".to_string(),
        format!("{dead}'"),
    ]);
    db.sql("CREATE SCHEMA keep; CREATE TABLE keep.t (id int); INSERT INTO keep.t VALUES (1)");
    for n in names.iter().map(String::as_str).chain([dead]) {
        db.sql(&format!(
            "CREATE SCHEMA {s}; CREATE TABLE {s}.t (id int); INSERT INTO {s}.t VALUES (1); \
             COMMENT ON SCHEMA {s} IS '{mark}'",
            s = q(n)
        ));
    }
    let tmp = tempfile::tempdir().unwrap();
    let o = bin()
        .args(["clean", "--database-url", &db.url, "--yes"])
        .env("TMPDIR", tmp.path())
        .env_remove("DATABASE_URL")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.contains(&format!("dropped schema {dead}\n")), "{out}");
    assert_eq!(out.matches("dropped schema").count(), 1, "{out}");
    assert!(!err.contains("warning"), "{err}");
    for n in names.iter().map(String::as_str).chain(["keep"]) {
        assert_eq!(db.sql(&format!("SELECT count(*) FROM {}.t", q(n))).trim(), "1", "schema {n:?} was touched");
    }
    assert_eq!(db.sql(&format!("SELECT count(*) FROM pg_namespace WHERE nspname = '{dead}'")).trim(), "0");
}

/// A copy of the River adapter whose setup also makes tables, columns and a sequence with
/// hostile names and writes the text constant `note` into a table, its queue named `queue`
/// (a constant every statement binds, and explore writes in), and a scenario for it.
fn hostile_river(dir: &std::path::Path, note: &str, queue: &str) -> std::path::PathBuf {
    let [t1, t2] = [HOSTILE[1], "$1 ünï ☃ \\ it's; --"];
    let seq = "seq'; SELECT 1; -- \\ $1";
    let extra = format!(
        "CREATE TABLE {t1} ({c} bigint, n text); INSERT INTO {t1} VALUES (1, 'one'), (2, 'two');\n\
         CREATE TABLE {t2} (\"n\" text); INSERT INTO {t2} VALUES ('x');\n\
         CREATE SEQUENCE {seq};\n\
         CREATE TABLE qb_notes AS SELECT :note::text AS note;\n",
        t1 = q(t1),
        t2 = q(t2),
        c = q("col\", x"),
        seq = q(seq)
    );
    // Into a TOML basic multi-line string: backslashes and quotes escaped.
    let extra = extra.replace('\\', "\\\\").replace('"', "\\\"");
    let adapter = std::fs::read_to_string(repo("adapters/river.toml")).unwrap();
    assert!(adapter.contains("setup = \"\"\"\n") && adapter.contains("\nqueue = \"default\"\n"));
    let queue = format!("\nqueue = {}\n", toml::Value::String(queue.into()));
    let adapter = adapter.replacen("\nqueue = \"default\"\n", &queue, 1);
    let adapter = adapter.replacen("setup = \"\"\"\n", &format!("setup = \"\"\"\n{extra}"), 1).replacen(
        "\n[constants]\n",
        &format!("\n[constants]\nnote = {}\n", toml::Value::String(note.into())),
        1,
    );
    std::fs::write(dir.join("hostile-river.toml"), adapter).unwrap();
    let scenario = std::fs::read_to_string(repo("scenarios/adapters/river.toml")).unwrap();
    let scenario = scenario.replacen("adapter = \"river\"", "adapter = \"hostile-river.toml\"", 1);
    let file = dir.join("hostile.toml");
    std::fs::write(&file, scenario).unwrap();
    file
}

/// A text constant written into an adapter's setup as a literal keeps its value, quotes and
/// backslashes included, even in a database where `standard_conforming_strings` is off (there a
/// backslash in a plain '…' literal escapes the quote after it).
#[test]
fn a_hostile_text_constant_is_written_into_the_setup_as_one_literal() {
    let db = ScratchDb::new("hostile_const");
    db.sql(&format!("ALTER DATABASE {} SET standard_conforming_strings = off", db.name));
    let dir = tempfile::tempdir().unwrap();
    let note = "it's \\'; CREATE TABLE public.pwned (); -- $1 ünï \"q\"";
    let file = hostile_river(dir.path(), note, "default");
    let o = bin()
        .args(["prepare", file.to_str().unwrap(), "--database-url", &db.url, "--schema", "qb_hostile"])
        .args(["--set", "jobs.preload=3"])
        .env_remove("DATABASE_URL")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(db.sql("SELECT count(*) FROM pg_class WHERE relname = 'pwned'").trim(), "0", "the note ran as SQL");
    assert_eq!(db.sql("SELECT note FROM qb_hostile.qb_notes").trim_end_matches('\n'), note);
    let side = format!("SELECT count(*) FROM qb_hostile.{}", q(HOSTILE[1]));
    assert_eq!(db.sql(&side).trim(), "2", "the setup's own hostile table is there, rows and all");
}

/// `explore` snapshots every table and sequence the adapter's setup made and restores them
/// between schedules, by the names it reads from the catalog: hostile ones included. It sends
/// the statements with their values written in: a queue named like SQL (`$1`, `now()`, quotes,
/// a backslash) is still the queue the preload filled, so the sessions claim its jobs.
#[test]
fn explore_restores_tables_and_sequences_with_hostile_names() {
    let db = ScratchDb::new("hostile_explore");
    let dir = tempfile::tempdir().unwrap();
    let file = hostile_river(dir.path(), "n'o\\te", "q $1 now() 'x' \\ ;--");
    let o = bin()
        .args(["explore", file.to_str().unwrap(), "--database-url", &db.url])
        .args(["--depth", "3", "--time", "240", "--crashes", "0"])
        .env_remove("DATABASE_URL")
        .output()
        .unwrap();
    let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    assert!(out.contains("schedules run"), "{out}");
    assert!(out.contains("no counterexample") && !out.contains("VACUOUS"), "{out}");
    assert_eq!(db.harness_schemas(""), "", "explore drops its schema");
}

/// The jobs table's storage parameters go into `ALTER TABLE "jobs" SET (…)` as literals, and
/// anything but plain words or numbers is refused (exit 2) before any SQL; a leftover schema's
/// suggested `DROP SCHEMA` names it quoted, safe to paste.
#[test]
fn table_settings_and_the_leftover_hint_quote_what_they_write() {
    let db = ScratchDb::new("hostile_settings");
    let s = repo("scenarios/skip-locked.toml");
    let s = s.to_str().unwrap();
    let prepare = |schema: &str, sets: &[&str]| {
        let mut cmd = bin();
        cmd.args(["prepare", s, "--database-url", &db.url, "--schema", schema, "--set", "jobs.preload=10"]);
        for set in sets {
            cmd.args(["--set", set]);
        }
        let o = cmd.env_remove("DATABASE_URL").output().unwrap();
        (o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned())
    };
    let (code, err) = prepare(
        "qb_settings",
        &["postgres.table_settings.fillfactor=70", "postgres.table_settings.autovacuum_enabled=false"],
    );
    assert_eq!(code, Some(0), "{err}");
    let options =
        db.sql("SELECT array_to_string(reloptions, ',') FROM pg_class WHERE oid = 'qb_settings.jobs'::regclass");
    assert_eq!(options.trim(), "autovacuum_enabled=off,fillfactor=70");
    for hostile in ["'70); DROP TABLE qb_settings.jobs; --'", "'70 $1'", "'ünï'", "'a\\\\b'"] {
        let (code, err) = prepare("qb_refused", &[&format!("postgres.table_settings.fillfactor={hostile}")]);
        assert_eq!(code, Some(2), "{hostile}: {err}");
        assert!(err.contains("names and values are plain words or numbers"), "{hostile}: {err}");
    }
    let (code, err) = prepare("qb_refused", &["postgres.table_settings.\"fill;factor\"=70"]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(db.sql("SELECT count(*) FROM qb_settings.jobs").trim(), "10");
    assert_eq!(db.sql("SELECT count(*) FROM pg_namespace WHERE nspname = 'qb_refused'").trim(), "0");

    db.sql("CREATE SCHEMA queuebench_leftover");
    let r = queuebench(&["run", s, "--database-url", &db.url, "--schema", "queuebench_leftover"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("(DROP SCHEMA \"queuebench_leftover\" CASCADE)"), "{}", r.stderr);
}

/// An adapter's `table` (named in VACUUM, LOCK TABLE, the blockers' scans and the row count)
/// takes letters, digits and _ only: a hostile one is refused (exit 2) before any database.
#[test]
fn a_hostile_adapter_table_name_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = hostile_river(dir.path(), "note", "default");
    let adapter = dir.path().join("hostile-river.toml");
    let text = std::fs::read_to_string(&adapter).unwrap();
    for name in HOSTILE {
        let line = format!("table = {}", toml::Value::String(name.into()));
        std::fs::write(&adapter, text.replacen("table = \"river_job\"", &line, 1)).unwrap();
        let o = bin().args(["sql", file.to_str().unwrap()]).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name:?}: {err}");
        assert!(err.contains("a table name of letters, digits and _"), "{name:?}: {err}");
    }
}

/// A process client's `enqueue.sql` gets `{schema}` as a quoted identifier, where a name goes:
/// in a session statement and in the enqueue statement (clients/CONTRACT.md). The preload runs
/// through both; the worker here then records nothing, which is the error the run ends with.
#[test]
fn a_client_enqueue_gets_the_schema_as_a_quoted_name() {
    let dir = tempfile::tempdir().unwrap();
    let client = dir.path().join("quoted");
    std::fs::create_dir_all(&client).unwrap();
    std::fs::write(
        client.join("enqueue.sql"),
        "-- session: SET search_path TO {schema}\n\
         SELECT md5($1::text || $2::text || (SELECT count(*) FROM {schema}.queuebench_effects)::text \
         || current_schema())\n",
    )
    .unwrap();
    let run = client.join("run");
    std::fs::write(&run, "#!/bin/sh\ncase \"$1\" in setup) exit 0;; esac\nexec sleep 600\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o755)).unwrap();
    let scenario = dir.path().join("quoted.toml");
    std::fs::write(
        &scenario,
        "name = \"quoted\"\nclient = \"./quoted\"\nadapter = \"pg-boss\"\n[jobs]\npreload = 5\n[run]\ntimeout = \"3s\"\n",
    )
    .unwrap();
    let schema = format!("qb_quoted_{}", rand_u32());
    let r = queuebench(&["run", scenario.to_str().unwrap(), "--schema", &schema]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stderr.contains("no job recorded an execution in 3 s"), "the preload went through: {}", r.stderr);
}
