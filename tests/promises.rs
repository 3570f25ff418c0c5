//! What the docs promise, kept (issue 35, item 5): `--schema` refusals that hold with
//! `--reuse`, a `--pooler-url` judged by the pool mode it declares (and the mode checked), a
//! change of server in URL mode reported as one, and a value never measured printed as
//! unknown. Each test here failed on 0.2.0's behaviour.

use crate::common;
use common::pg::ScratchDb;
use common::pooler::{MACHINE, OwnPooler, machine_sql};
use common::{bin, queuebench, repo};

fn text(o: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// `--schema public --reuse` and `--schema information_schema --reuse` ran (and installed
/// queuebench's tables in `public`); both are refused with exit 2, nothing changed.
#[test]
fn shared_schemas_are_refused_even_with_reuse() {
    let db = ScratchDb::new("sharedschema");
    db.sql("CREATE TABLE public.app_rows (id int); INSERT INTO public.app_rows VALUES (1)");
    let before = db.sql("SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace");
    let s = repo("scenarios/skip-locked.toml");
    for schema in ["public", "information_schema"] {
        let cwd = tempfile::tempdir().unwrap();
        let o = bin()
            .args(["run", s.to_str().unwrap(), "--database-url", &db.url, "--schema", schema, "--reuse"])
            .args(["--set", "jobs.preload=50", "--quiet"])
            .current_dir(cwd.path())
            .env_remove("DATABASE_URL")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "--schema {schema} --reuse: {}", text(&o));
        assert!(text(&o).contains(&format!("`{schema}` is a schema the database itself")), "{}", text(&o));
        assert!(std::fs::read_dir(cwd.path()).unwrap().next().is_none(), "--schema {schema}: a folder was made");
    }
    let after = db.sql("SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace");
    assert_eq!(before, after, "nothing was created in public");
    assert_eq!(db.sql("SELECT count(*) FROM public.app_rows").trim(), "1");
}

/// `--pooler-url` got none of the refusals `[postgres.pgbouncer]` gets: kill_backend under
/// transaction pooling injected 0 kills without a word, hold-transaction through statement
/// pooling failed every round. Both are refused with exit 2, naming the declared mode.
#[test]
fn a_pooler_url_gets_the_refusals_of_its_declared_mode() {
    let transaction = OwnPooler::start("root", "transaction");
    let statement = OwnPooler::start("root", "statement");
    let cases = [
        ("scenarios/backend-kill.toml", transaction.url("transaction"), "kill_backend terminates a worker's server"),
        ("scenarios/skip-locked-hold.toml", statement.url("statement"), "statement pooling refuses every multi"),
    ];
    for (scenario, via, says) in cases {
        let s = repo(scenario);
        let r = queuebench(&["run", s.to_str().unwrap(), "--database-url", MACHINE, "--pooler-url", &via]);
        assert_eq!(r.code, 2, "{scenario} via {via}: {}\n{}", r.stdout, r.stderr);
        assert!(r.stderr.contains("--pooler-url declares pool_mode="), "{}", r.stderr);
        assert!(r.stderr.contains(says), "{}", r.stderr);
        assert!(!r.out.join("summary.json").exists());
    }
}

/// Declaring `session` for a transaction pooler went undetected (541,508 errors); declaring
/// `transaction` for a statement pooler too. The probe at start sees it: exit 2, naming what
/// it saw, nothing created. A session pooler declared as one passes the probe and runs.
#[test]
fn a_pooler_url_whose_declared_mode_is_not_the_poolers_is_refused() {
    let name = format!("qb_probe_{}", common::pg::rand_u32());
    machine_sql(&format!("CREATE ROLE {name} LOGIN SUPERUSER; ALTER ROLE {name} SET search_path = {name}"));
    let s = repo("scenarios/skip-locked.toml");
    let run = |pooler: &OwnPooler, declared: &str| {
        let via = pooler.url(declared);
        let base = ["run", s.to_str().unwrap(), "--database-url", MACHINE, "--pooler-url", &via, "--schema", &name];
        // Two workers and one producer: in session pooling a client past the pool's 4 server
        // connections would wait for a whole session.
        queuebench(
            &[
                &base[..],
                &["--set", "jobs.preload=200", "--set", "workers.count=2", "--set", "expect={}", "--quiet"][..],
            ]
            .concat(),
        )
    };
    let (transaction, statement, session) = (
        OwnPooler::start(&name, "transaction"),
        OwnPooler::start(&name, "statement"),
        OwnPooler::start(&name, "session"),
    );
    let session_on_transaction = run(&transaction, "session");
    let transaction_on_statement = run(&statement, "transaction");
    let statement_on_session = run(&session, "statement");
    let session_on_session = run(&session, "session");
    drop((transaction, statement, session));
    let left = machine_sql(&format!("SELECT count(*) FROM pg_namespace WHERE nspname = '{name}'"));
    machine_sql(&format!("DROP ROLE {name}"));
    for (r, says) in [
        (&session_on_transaction, "does not keep a client's server connection"),
        (&transaction_on_statement, "refused a transaction of three statements"),
        (&statement_on_session, "ran a transaction of three statements"),
    ] {
        assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
        assert!(r.stderr.contains(says), "{}", r.stderr);
        assert!(r.stderr.contains("Nothing was created"), "{}", r.stderr);
        assert!(!r.out.join("summary.json").exists());
    }
    assert!(session_on_transaction.stderr.contains("?pool_mode=transaction"), "{}", session_on_transaction.stderr);
    assert_eq!(session_on_session.code, 0, "{}\n{}", session_on_session.stdout, session_on_session.stderr);
    assert_eq!(session_on_session.summary()["database"]["pooler"]["pool_mode"], "session");
    assert_eq!(left, "0", "no schema was left");
}

const PG_BIN: &str = "/usr/lib/postgresql/15/bin";

/// A cluster of the test's own (initdb and pg_ctl, as the postgres user when root), on
/// 127.0.0.1 and a free port, for a URL-mode run to meet a restart queuebench did not cause.
struct PgCtlCluster {
    dir: tempfile::TempDir,
    port: u16,
}

impl PgCtlCluster {
    fn start() -> PgCtlCluster {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::Builder::new().prefix("qbpc").tempdir_in("/tmp").unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let c = PgCtlCluster { dir, port };
        c.as_postgres(&format!("{PG_BIN}/initdb"), &["-D", &c.data(), "-A", "trust", "-U", "postgres", "--no-sync"]);
        c.pg_ctl(&["start", "-w"]);
        c
    }

    fn data(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    fn pg_ctl(&self, args: &[&str]) {
        let opts = format!("-p {} -k {} -c listen_addresses=127.0.0.1", self.port, self.dir.path().display());
        let log = self.dir.path().join("log").display().to_string();
        let data = self.data();
        let all = [&["-D", &data, "-o", &opts, "-l", &log][..], args].concat();
        self.as_postgres(&format!("{PG_BIN}/pg_ctl"), &all);
    }

    fn as_postgres(&self, program: &str, args: &[&str]) {
        let o = common::as_postgres(program).args(args).current_dir(self.dir.path()).output().unwrap();
        assert!(o.status.success(), "{program} {args:?}: {}", text(&o));
    }
}

impl Drop for PgCtlCluster {
    fn drop(&mut self) {
        let _ = std::panic::catch_unwind(|| self.pg_ctl(&["stop", "-m", "immediate"]));
    }
}

/// In URL mode a server restart mid-run (here `pg_ctl restart -m immediate` of a cluster the
/// test started) was reported as "no server restart or failover in this run". It is seen from
/// the postmaster's start time, counted as a restart, and the durability check runs across it.
#[test]
fn a_restart_in_url_mode_is_reported_as_one() {
    let cluster = PgCtlCluster::start();
    let s = repo("scenarios/skip-locked.toml");
    let out = tempfile::tempdir().unwrap();
    let run_dir = out.path().join("run");
    let mut cmd = bin();
    cmd.args(["run", s.to_str().unwrap(), "--database-url", &cluster.url()])
        .args(["--set", "jobs.preload=100000", "--set", "workers.count=4", "--set", "workers.work=\"5ms\""])
        .args(["--set", "run.stop=\"8s\"", "--set", "expect={}", "--out"])
        .arg(&run_dir)
        .env_remove("DATABASE_URL");
    let (mut child, rx, stderr) = common::pg::spawn_watched(cmd);
    common::pg::wait_for_progress(&rx, &stderr);
    cluster.pg_ctl(&["restart", "-m", "immediate", "-w"]);
    let status = child.wait().unwrap();
    let said = common::pg::all_stderr(&stderr);
    assert!(matches!(status.code(), Some(0 | 1)), "{status:?}\n{said}");
    assert!(said.contains("the server changed during the run (postmaster start time"), "{said}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["outage"]["server_restarts"], 1, "{}", summary["outage"]);
    let durability = &summary["durability"];
    assert_eq!(durability["tested"], true, "{durability}");
    let note = durability["note"].as_str().unwrap();
    assert!(note.starts_with("1 restart"), "{note}");
    assert!(!note.contains("no server restart"), "{note}");
    assert!(durability["acknowledged_before_restart"].as_u64().unwrap() > 0, "{durability}");
    assert_eq!(durability["lost_completions"], 0, "{durability}");
}

/// 300 workers behind a pool of 8 were counted against the server's connection limit, and
/// refused. Behind a pooler the workers and producers take only the pool's server connections:
/// here 60 workers through queuebench's PgBouncer (pool of 4) fit a cluster of
/// max_connections = 40.
#[test]
fn connections_behind_a_pooler_are_counted_against_the_pool() {
    let s = repo("scenarios/pgbouncer-transaction.toml");
    let r = queuebench(&[
        "run",
        s.to_str().unwrap(),
        "--set",
        "workers.count=60",
        "--set",
        "postgres.settings.max_connections=40",
        "--set",
        "jobs.preload=600",
        "--set",
        "expect={ \"jobs.completed\" = \"== 600\", \"errors.total\" = \"== 0\" }",
    ]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.summary()["database"]["pooler"]["pool_size"], 4);
    // Without the pooler the same 60 workers do not fit: refused, as before.
    let r = queuebench(&[
        "run",
        repo("scenarios/skip-locked.toml").to_str().unwrap(),
        "--set",
        "workers.count=60",
        "--set",
        "postgres.settings.max_connections=40",
    ]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("max_connections = 40 but 60 workers need"), "{}", r.stderr);
}

/// A run cut short (the database lost: a full disk, here a server that stays down past
/// `run.reconnect_timeout`) printed `ok jobs.lost == 0` for a final table it never read. The
/// value is unknown, printed so and not judged; the run ends with exit 3 and the reason.
#[test]
fn a_value_never_measured_prints_as_unknown() {
    let s = repo("scenarios/postgres-restart.toml");
    let r = queuebench(&[
        "run",
        s.to_str().unwrap(),
        "--set",
        r#"faults=[{ kind = "postgres_restart", at = "1s", duration = "5m" }]"#,
        "--set",
        "run.reconnect_timeout=2s",
        "--set",
        "expect={}",
        "--expect",
        "jobs.lost == 0",
    ]);
    assert_eq!(r.code, 3, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("--   jobs.lost == 0 (actual unknown: not measured, not judged)"), "{}", r.stdout);
    assert!(!r.stdout.contains("ok   jobs.lost"), "{}", r.stdout);
    assert!(r.stdout.contains("lost: unknown (the final table was not read)"), "{}", r.stdout);
    let e = &r.summary()["expectations"][0];
    assert_eq!(
        (e["name"].as_str(), e["actual"].is_null(), e["passed"].as_bool()),
        (Some("jobs.lost"), true, Some(false))
    );
}
