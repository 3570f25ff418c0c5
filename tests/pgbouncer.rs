//! PgBouncer in front of the ephemeral cluster (`[postgres.pgbouncer]`,
//! docs/production-postgres.md "Connection poolers"), against a real PgBouncer (Debian's 1.18:
//! no protocol-level prepared statements) and a real PostgreSQL: the workers' statements go
//! through transaction pooling (and the server says they ran unnamed), nothing is left running
//! after a run or a SIGKILL, and the bad inputs are refused with the fix named.

use crate::common;
use common::pg::{signal, spawn_watched, wait_for_progress};
use common::pooler::{MACHINE, OwnPooler, machine_sql};
use common::{queuebench, queuebench_env, repo};
use std::path::Path;
use std::time::{Duration, Instant};

const SMALL: [&str; 4] = ["--set", "jobs.preload=400", "--set", "expect={ \"jobs.completed\" = \"== 400\" }"];

/// PIDs of pgbouncer processes whose command line mentions `dir` (their ini file is there).
fn pgbouncers_under(dir: &Path) -> Vec<u32> {
    common::processes_with(&["pgbouncer", &dir.to_string_lossy()])
}

/// Polls until no pgbouncer of `dir` is left (the kernel needs a moment after a kill).
fn assert_no_pgbouncer(dir: &Path, after: &str) {
    let until = Instant::now() + Duration::from_secs(10);
    while !pgbouncers_under(dir).is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(pgbouncers_under(dir).is_empty(), "pgbouncer still running after {after}");
}

#[test]
fn transaction_pooling_runs_every_job_once_with_unnamed_statements_only() {
    let s = repo("scenarios/pgbouncer-transaction.toml");
    // The server logs every statement with its user: the pool role's are the workers' through
    // PgBouncer. `--keep` keeps the log to read (the directory is removed below).
    let args = [
        "run",
        s.to_str().unwrap(),
        "--keep",
        "--set",
        "postgres.settings.log_min_duration_statement=0",
        "--set",
        "postgres.settings.log_line_prefix='%u '",
    ];
    let r = queuebench(&[&args[..], &SMALL[..]].concat());
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let summary = r.summary();
    let pooler = &summary["database"]["pooler"];
    assert_eq!(pooler["kind"], "pgbouncer", "{pooler}");
    assert_eq!(pooler["pool_mode"], "transaction", "{pooler}");
    assert_eq!(pooler["pool_size"], 4, "{pooler}");
    assert_eq!(pooler["unnamed_statements"], true, "{pooler}");
    assert_eq!(r.num("errors.total"), 0.0);
    assert_eq!(r.num("executions.duplicate"), 0.0);
    assert_eq!(summary["fingerprint"]["pooler"], "pgbouncer transaction");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo("schema/summary.schema.json")).unwrap()).unwrap();
    let mut errors = Vec::new();
    common::schema::validate(&schema, &schema, &summary, "summary", &mut errors);
    assert!(errors.is_empty(), "summary.json against schema/summary.schema.json: {errors:?}");
    assert!(r.stdout.contains("through pgbouncer (transaction pooling, 4 server connections)"), "{}", r.stdout);
    assert_no_pgbouncer(r.tmp.path(), "the run");
    let dirs: Vec<_> = std::fs::read_dir(r.tmp.path()).unwrap().flatten().map(|e| e.path()).collect();
    assert_eq!(dirs.len(), 1, "--keep keeps the cluster's directory: {dirs:?}");
    let log = std::fs::read_to_string(dirs[0].join("postgres.log")).unwrap();
    let pooled: Vec<&str> = log.lines().filter(|l| l.starts_with("queuebench_pool ")).collect();
    let executes = pooled.iter().filter(|l| l.contains(" execute ")).count();
    let named: Vec<&&str> = pooled.iter().filter(|l| l.contains(" execute ") && !l.contains("<unnamed>")).collect();
    assert!(executes >= 800, "the claims and completions went through PgBouncer: {executes} executes logged");
    assert!(
        named.is_empty(),
        "a named statement ran through the transaction pooler: {:?}",
        &named[..named.len().min(3)]
    );
    std::fs::remove_dir_all(&dirs[0]).unwrap();
}

#[test]
fn session_pooling_runs_with_the_session_kept() {
    let s = repo("scenarios/pgbouncer-session.toml");
    let r = queuebench(&[&["run", s.to_str().unwrap()][..], &SMALL[..]].concat());
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let pooler = &r.summary()["database"]["pooler"];
    assert_eq!(pooler["pool_mode"], "session", "{pooler}");
    assert_eq!(pooler["unnamed_statements"], false, "{pooler}");
    assert_eq!(r.num("errors.total"), 0.0);
    r.assert_clean();
    assert_no_pgbouncer(r.tmp.path(), "the run");
}

#[test]
fn sigkill_of_the_harness_stops_pgbouncer() {
    let s = repo("scenarios/pgbouncer-transaction.toml");
    let tmp = tempfile::Builder::new().prefix("qbt").tempdir_in("/tmp").unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut cmd = common::bin();
    cmd.args(["run", s.to_str().unwrap(), "--set", "jobs.preload=200000", "--set", "workers.work=\"5ms\""])
        .arg("--out")
        .arg(out.path().join("run"))
        .env("TMPDIR", tmp.path())
        .env_remove("DATABASE_URL");
    let (mut child, rx, stderr) = spawn_watched(cmd);
    wait_for_progress(&rx, &stderr);
    assert!(!pgbouncers_under(tmp.path()).is_empty(), "PgBouncer runs during the run");
    signal(&child, libc::SIGKILL);
    let _ = child.wait();
    assert_no_pgbouncer(tmp.path(), "SIGKILL of the harness");
    // The next queuebench names the leftover folder; `clean` removes it.
    let c = common::queuebench_env(&["clean", "--yes"], &[("TMPDIR", tmp.path().to_str().unwrap())]);
    assert_eq!(c.code, 0, "{}\n{}", c.stdout, c.stderr);
}

#[test]
fn a_pooler_with_a_database_url_is_refused_with_the_fix() {
    let s = repo("scenarios/pgbouncer-transaction.toml");
    let r = queuebench(&["run", s.to_str().unwrap(), "--database-url", "postgres://nobody@127.0.0.1:1/none"]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("[postgres.pgbouncer] starts PgBouncer in front of queuebench's own"), "{}", r.stderr);
    assert!(r.stderr.contains("--postgres ephemeral"), "{}", r.stderr);
    assert!(r.stderr.contains("as --pooler-url"), "{}", r.stderr);
    assert!(!r.out.join("summary.json").exists());
}

#[test]
fn no_pgbouncer_program_is_an_environment_error_before_anything_starts() {
    let s = repo("scenarios/pgbouncer-transaction.toml");
    let r = queuebench_env(&["run", s.to_str().unwrap()], &[("QUEUEBENCH_PGBOUNCER", "/nonexistent/pgbouncer")]);
    assert_eq!(r.code, 3, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("QUEUEBENCH_PGBOUNCER=/nonexistent/pgbouncer is not a program"), "{}", r.stderr);
    r.assert_clean();
}

#[test]
fn bad_pooler_settings_name_the_key() {
    let s = repo("scenarios/pgbouncer-transaction.toml");
    let r = queuebench(&["run", s.to_str().unwrap(), "--set", "postgres.pgbouncer.pool_mode=\"pipelined\""]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("postgres.pgbouncer.pool_mode=\"pipelined\": unknown pool mode `pipelined`"),
        "{}",
        r.stderr
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("kill.toml");
    let text = std::fs::read_to_string(&s)
        .unwrap()
        .replace("[expect]", "[[faults]]\nkind = \"kill_backend\"\nat = \"1s\"\n\n[expect]");
    std::fs::write(&file, text).unwrap();
    let r = queuebench(&["run", file.to_str().unwrap()]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("use pool_mode = \"session\""), "{}", r.stderr);
    let hold = repo("scenarios/skip-locked-hold.toml");
    let r = queuebench(&["run", hold.to_str().unwrap(), "--set", "postgres.pgbouncer.pool_mode=\"statement\""]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("statement pooling refuses every multi-statement transaction"), "{}", r.stderr);
    r.assert_clean();
}

#[test]
fn a_pooler_of_your_own_carries_the_workers_once_its_role_starts_in_the_run_schema() {
    let name = format!("qb_pool_{}", common::pg::rand_u32());
    machine_sql(&format!("CREATE ROLE {name} LOGIN SUPERUSER; ALTER ROLE {name} SET search_path = {name}"));
    let pooler = OwnPooler::start(&name, "transaction");
    let via = format!("postgres://root@127.0.0.1:{}/qb?pool_mode=transaction", pooler.port);
    let s = repo("scenarios/skip-locked.toml");
    let base = ["run", s.to_str().unwrap(), "--database-url", MACHINE, "--pooler-url", &via];
    let ok = queuebench(&[&base[..], &["--schema", &name][..], &SMALL[..]].concat());
    // Without --schema the run's schema is not the role's: refused with the fix, nothing left.
    let refused = queuebench(&[&base[..], &SMALL[..]].concat());
    drop(pooler);
    let left = machine_sql(&format!("SELECT count(*) FROM pg_namespace WHERE nspname = '{name}'"));
    machine_sql(&format!("DROP ROLE {name}"));
    assert_eq!(ok.code, 0, "{}\n{}", ok.stdout, ok.stderr);
    let pooler = &ok.summary()["database"]["pooler"];
    assert_eq!(pooler["kind"], "external", "{pooler}");
    assert_eq!(pooler["unnamed_statements"], true, "{pooler}");
    assert_eq!(ok.num("errors.total"), 0.0);
    assert_eq!(left, "0", "the run's schema was dropped at the end");
    assert_eq!(refused.code, 3, "{}\n{}", refused.stdout, refused.stderr);
    assert!(
        refused.stderr.contains("ALTER ROLE <the pooler's server user> SET search_path = NAME"),
        "{}",
        refused.stderr
    );
}

#[test]
fn a_pooler_url_needs_a_database_url_and_a_pool_mode() {
    let s = repo("scenarios/skip-locked.toml");
    let r = queuebench(&[
        "run",
        s.to_str().unwrap(),
        "--pooler-url",
        "postgres://u@127.0.0.1:6432/db?pool_mode=transaction",
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("add [postgres.pgbouncer] to the scenario"), "{}", r.stderr);
    let r = queuebench(&[
        "run",
        s.to_str().unwrap(),
        "--database-url",
        MACHINE,
        "--pooler-url",
        "postgres://u@127.0.0.1:6432/db",
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("?pool_mode=transaction"), "{}", r.stderr);
}
