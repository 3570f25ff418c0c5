//! One test per row of the README's bad-input table (section "Safety"):
//! the message, the exit code, and nothing created (no results folder, no
//! cluster directory or postgres process, no schema in a URL-mode database).
//! Validation errors are caught before PostgreSQL starts, so these are fast.

use crate::common;
use common::pg::ScratchDb;
use common::{queuebench, queuebench_env, repo};

fn write(text: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, text).unwrap();
    (dir, path.to_string_lossy().into())
}

/// `queuebench run` on the text: exit 2, every needle in stderr, nothing created.
fn refused(text: &str, sets: &[&str], needles: &[&str]) {
    let (_d, f) = write(text);
    let mut args = vec!["run", f.as_str()];
    for s in sets {
        args.extend(["--set", s]);
    }
    let r = queuebench(&args);
    assert_eq!(r.code, 2, "{text}: {}", r.stderr);
    for n in needles {
        assert!(r.stderr.contains(n), "{text}: expected `{n}` in:\n{}", r.stderr);
    }
    assert!(!r.out.exists(), "{text}: no results folder for bad input");
    r.assert_clean();
}

const BASE: &str = "name = \"x\"\n[jobs]\npreload = 5\n";

#[test]
fn malformed_toml_names_line_and_column() {
    refused("name = \"x\"\n[workers\ncount = 2\n", &[], &["bad.toml", "line 2, column 9", "expected `]`"]);
}

#[test]
fn unknown_key_names_the_nearest_key() {
    refused(
        &format!("{BASE}[workers]\ncount = 2\nstrategi = \"skip-locked\"\n"),
        &[],
        &["line 6", "did you mean `strategy`?"],
    );
}

#[test]
fn wrong_type_names_line_and_expected_type() {
    refused(
        &format!("{BASE}[workers]\ncount = \"eight\"\n"),
        &[],
        &["line 5", "invalid type: string \"eight\", expected a whole number"],
    );
}

#[test]
fn a_duration_that_does_not_parse_lists_the_units() {
    refused(
        &format!("{BASE}[lease]\nduration = \"10 parsecs\"\n"),
        &[],
        &["bad.toml:5: lease.duration", "accepted units"],
    );
    refused(&format!("{BASE}[lease]\nduration = \"90\"\n"), &[], &["bad.toml:5: lease.duration", "no unit"]);
}

/// Sizes are only in [postgres.settings]; PostgreSQL itself checks them, so this row starts a
/// cluster (about a second), which refuses the value and is removed.
#[test]
fn a_size_that_does_not_parse_is_refused_by_postgres_with_exit_2() {
    refused(
        &format!("{BASE}[postgres.settings]\nwork_mem = \"64 furlongs\"\n"),
        &[],
        &["PostgreSQL refused a setting", "\"work_mem\": \"64 furlongs\"", "\"MB\""],
    );
}

#[test]
fn zero_or_negative_counts() {
    refused(
        &format!("{BASE}[workers]\ncount = 0\n"),
        &[],
        &["bad.toml:5: workers.count", "between 1 and 100000, got 0"],
    );
    refused(&format!("{BASE}[workers]\ncount = -3\n"), &[], &["got -3"]);
    refused("name = \"x\"\n[jobs]\npreload = -1\n", &[], &["bad.toml:3: jobs.preload", "got -1"]);
}

#[test]
fn batch_of_zero() {
    refused(&format!("{BASE}[workers]\nbatch = 0\n"), &[], &["bad.toml:5: workers.batch", "got 0"]);
}

#[test]
fn heartbeat_not_shorter_than_the_lease() {
    refused(
        &format!("{BASE}[lease]\nduration = \"10s\"\nheartbeat = \"10s\"\n"),
        &[],
        &["bad.toml:6: lease.heartbeat", "shorter than lease.duration (10s)", "\"off\""],
    );
}

#[test]
fn max_attempts_of_zero() {
    refused("name = \"x\"\n[jobs]\npreload = 5\nmax_attempts = 0\n", &[], &["bad.toml:4: jobs.max_attempts", "got 0"]);
}

#[test]
fn unknown_strategy_lists_the_accepted_ones() {
    refused(
        &format!("{BASE}[workers]\nstrategy = \"skip-lock\"\n"),
        &[],
        &["workers.strategy", "accepted: naive, naive-select-update"],
    );
}

#[test]
fn custom_strategy_missing_a_statement_or_using_an_undeclared_parameter() {
    let strategy = "[workers]\nstrategy = \"mine\"\n[strategies.mine]\n";
    let claim = "claim = \"UPDATE jobs SET status = 'running' WHERE id = 1 RETURNING id\"\n";
    refused(&format!("{BASE}{strategy}{claim}"), &[], &["missing field `complete`", "add `complete = …`"]);
    let bad = "claim = \"UPDATE jobs SET status = 'running' WHERE queue = :queue_name RETURNING id\"\n\
               complete = \"UPDATE jobs SET status = 'done' WHERE id = :id\"\n";
    refused(
        &format!("{BASE}{strategy}{bad}"),
        &[],
        &["unknown parameter `:queue_name`", "this statement accepts", ":batch"],
    );
}

#[test]
fn expectation_on_an_unknown_metric() {
    refused(
        &format!("{BASE}[expect]\n\"jobs.lots\" = \"== 0\"\n"),
        &[],
        &["expect.jobs.lots", "did you mean `jobs.lost`"],
    );
}

#[test]
fn set_with_a_bad_path() {
    refused(BASE, &["workers.cuont=4"], &["--set workers.cuont=4", "did you mean `count`?"]);
    refused(BASE, &["name.x=1"], &["not a table"]);
}

#[test]
fn set_a_table_to_a_value_names_the_key_not_a_rust_type() {
    let (_d, f) = write(&format!("{BASE}[workers]\ncount = 2\n"));
    let r = queuebench(&["run", f.as_str(), "--set", "workers=3"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--set workers=3"), "{}", r.stderr);
    assert!(r.stderr.contains("`workers` is a table of keys (count)"), "{}", r.stderr);
    assert!(r.stderr.contains("e.g. --set workers.count=…"), "{}", r.stderr);
    assert!(!r.stderr.contains("Raw"), "{}", r.stderr);
    // No [workers] table in the file: serde's message, without the Rust type.
    refused(BASE, &["workers=3"], &["expected a table of keys", "in `workers`"]);
    assert!(!queuebench(&["run", write(BASE).1.as_str(), "--set", "workers=3"]).stderr.contains("Raw"));
}

#[test]
fn unwritable_results_folder() {
    let s = repo("scenarios/skip-locked.toml");
    for out in ["/dev/null/run", "/proc/version/run"] {
        let r =
            common::bin().args(["run", s.to_str().unwrap(), "--out", out]).env_remove("DATABASE_URL").output().unwrap();
        let stderr = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(out) && stderr.contains("--out DIR"), "{stderr}");
    }
}

#[test]
fn more_workers_than_the_ephemeral_max_connections_is_refused_before_starting() {
    refused(
        &format!("{BASE}[workers]\ncount = 300\n[postgres.settings]\nmax_connections = 100\n"),
        &[],
        &["max_connections = 100 but 300 workers need", "raise it to at least", "Nothing was started"],
    );
}

#[test]
fn more_workers_than_the_server_allows_is_refused_before_creating_anything() {
    let db = ScratchDb::new("slots");
    let s = repo("scenarios/skip-locked.toml");
    let r = queuebench(&["run", s.to_str().unwrap(), "--database-url", &db.url, "--set", "workers.count=5000"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("5000 workers need 50") && r.stderr.contains("free"), "{}", r.stderr);
    assert!(r.stderr.contains("lower workers.count"), "{}", r.stderr);
    assert_eq!(db.harness_schemas(""), "", "no schema was created");
    assert!(!r.out.exists());
}

#[test]
fn validate_with_a_url_checks_the_servers_free_connections_too() {
    let db = ScratchDb::new("vslots");
    let s = repo("scenarios/skip-locked.toml");
    let r = queuebench(&["validate", s.to_str().unwrap(), "--database-url", &db.url, "--set", "workers.count=5000"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("5000 workers need 50") && r.stderr.contains("free"), "{}", r.stderr);
    assert!(r.stderr.contains("lower workers.count"), "{}", r.stderr);
    assert_eq!(db.harness_schemas(""), "", "validate created no schema");
    let ok = queuebench(&["validate", s.to_str().unwrap(), "--database-url", &db.url, "--set", "workers.count=4"]);
    assert_eq!(ok.code, 0, "{}", ok.stderr);
}

/// 100,000 workers once took 14 GB and died with `os error 11`: now validate and run refuse
/// them in well under a second, naming the limit, the number and the fix, creating nothing.
#[test]
fn a_plan_over_the_machines_limits_is_refused_at_validate_and_at_run_start() {
    let s = repo("scenarios/skip-locked.toml");
    for cmd in ["validate", "run"] {
        let started = std::time::Instant::now();
        let r = queuebench(&[cmd, s.to_str().unwrap(), "--set", "workers.count=100000"]);
        let took = started.elapsed();
        assert_eq!(r.code, 2, "{cmd}: {}", r.stderr);
        assert!(took < std::time::Duration::from_secs(1), "{cmd} took {took:?}");
        let nofile = r.stderr.contains("open files") && r.stderr.contains("RLIMIT_NOFILE");
        let memory = r.stderr.contains("of memory") && r.stderr.contains("MemAvailable");
        assert!(nofile || memory, "{cmd}: names the limit: {}", r.stderr);
        assert!(r.stderr.contains("100000 workers"), "{cmd}: names the number: {}", r.stderr);
        assert!(r.stderr.contains("lower workers.count to at most"), "{cmd}: names the fix: {}", r.stderr);
        assert!(!r.out.exists(), "{cmd}: no results folder");
        r.assert_clean();
    }
    // A preload that cannot fit in memory: named by its key.
    let r = queuebench(&["validate", s.to_str().unwrap(), "--set", "jobs.preload=1000000000"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("of memory") && r.stderr.contains("lower jobs.preload to at most"), "{}", r.stderr);
}

#[test]
fn unreachable_server_names_the_host_and_the_fix() {
    let s = repo("scenarios/skip-locked.toml");
    let r = queuebench(&["run", s.to_str().unwrap(), "--database-url", "postgres://alice@127.0.0.1:1/db"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stderr.contains("127.0.0.1:1 (user alice, database db)"), "{}", r.stderr);
    assert!(r.stderr.contains("Connection refused") && r.stderr.contains("pg_isready"), "{}", r.stderr);
    assert!(!r.out.exists());
}

#[test]
fn no_permission_to_create_a_schema() {
    let db = ScratchDb::new("perm");
    let role = format!("{}_user", db.name);
    db.sql(&format!("CREATE ROLE {role} LOGIN"));
    struct DropRole(String);
    impl Drop for DropRole {
        fn drop(&mut self) {
            let _ = std::process::Command::new("psql")
                .args([
                    "-X",
                    "-q",
                    &format!("{}/postgres", common::pg::server()),
                    "-c",
                    &format!("DROP ROLE IF EXISTS {}", self.0),
                ])
                .output();
        }
    }
    let url = db.url_as(&role);
    let s = repo("scenarios/skip-locked.toml");
    let r = queuebench(&["run", s.to_str().unwrap(), "--database-url", &url]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stderr.contains("permission denied for database") && r.stderr.contains("42501"), "{}", r.stderr);
    assert!(r.stderr.contains(&format!("GRANT CREATE ON DATABASE \"{}\" TO \"{role}\"", db.name)), "{}", r.stderr);
    assert!(r.stderr.contains("--schema NAME --reuse"), "{}", r.stderr);
    assert_eq!(db.harness_schemas(""), "", "no schema was created");
    drop(db);
    drop(DropRole(role));
}

#[test]
fn postgres_binaries_missing_for_the_ephemeral_cluster() {
    let empty = tempfile::tempdir().unwrap();
    let s = repo("scenarios/skip-locked.toml");
    let r = queuebench_env(&["run", s.to_str().unwrap()], &[("QUEUEBENCH_PG_BINDIR", empty.path().to_str().unwrap())]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stderr.contains("has no initdb and postgres") && r.stderr.contains("--database-url"), "{}", r.stderr);
    assert!(!r.out.exists());
    r.assert_clean();
}
