//! Bad input gets a clear error, the documented exit code, and creates nothing.

use crate::common;
use common::{queuebench, repo};

fn write(text: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, text).unwrap();
    (dir, path.to_string_lossy().into())
}

#[test]
fn typo_in_a_key_exits_2_naming_file_line_and_nearest_key() {
    let (_d, f) = write("name = \"x\"\n[workers]\ncount = 2\nstrategi = \"skip-locked\"\n");
    for cmd in ["run", "validate"] {
        let r = queuebench(&[cmd, &f]);
        assert_eq!(r.code, 2, "{cmd}: {}", r.stderr);
        assert!(r.stderr.contains("bad.toml"), "{}", r.stderr);
        assert!(r.stderr.contains("line 4"), "{}", r.stderr);
        assert!(r.stderr.contains("did you mean `strategy`?"), "{}", r.stderr);
        r.assert_clean();
        assert!(!r.out.exists(), "nothing is created for a bad scenario");
    }
}

#[test]
fn semantic_errors_name_the_line() {
    let cases = [
        ("name = \"x\"\n[workers]\ncount = 0\n", "bad.toml:3: workers.count"),
        ("name = \"x\"\n[workers]\nbatch = 0\n", "bad.toml:3: workers.batch"),
        ("name = \"x\"\n[lease]\nduration = \"90\"\n", "no unit"),
        ("name = \"x\"\n[workers]\nstrategy = \"skip-lock\"\n", "accepted: naive, naive-select-update"),
        ("name = \"x\"\n[expect]\n\"jobs.lots\" = \"== 0\"\n", "did you mean `jobs.lost`"),
        ("name = \"x\"\n[expect]\n\"jobs.lost\" = \"zero\"\n", "must start with"),
        ("name = \"x\"\n[workers]\ncount = \"eight\"\n", "invalid type"),
        ("name = \"x\"\n[workers\n", "line 2"),
    ];
    for (text, needle) in cases {
        let (_d, f) = write(text);
        let r = queuebench(&["validate", &f]);
        assert_eq!(r.code, 2, "{text}: {}", r.stderr);
        assert!(r.stderr.contains(needle), "{text}: expected `{needle}` in {}", r.stderr);
    }
}

#[test]
fn bad_set_paths_and_values_exit_2() {
    let s = repo("scenarios/skip-locked.toml");
    let s = s.to_str().unwrap();
    for (set, needle) in [
        ("workers.cuont=4", "did you mean `count`?"),
        ("workers.count=0", "--set workers.count=0"),
        ("name.x=1", "not a table"),
        ("workers.count", "key=value"),
    ] {
        let r = queuebench(&["validate", s, "--set", set]);
        assert_eq!(r.code, 2, "{set}: {}", r.stderr);
        assert!(r.stderr.contains(needle), "{set}: expected `{needle}` in {}", r.stderr);
    }
}

#[test]
fn unreachable_database_exits_3_naming_the_host_never_the_password() {
    let s = repo("scenarios/skip-locked.toml");
    let r = queuebench(&["run", s.to_str().unwrap(), "--database-url", "postgres://alice:s3cr3t-pw@127.0.0.1:1/db"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stderr.contains("127.0.0.1:1"), "{}", r.stderr);
    assert!(r.stderr.contains("--database-url"), "says how to fix it: {}", r.stderr);
    assert!(!r.stderr.contains("s3cr3t") && !r.stdout.contains("s3cr3t"), "password leaked: {}", r.stderr);
}

#[test]
fn failing_custom_sql_exits_3_with_the_statement_and_sqlstate() {
    let (_d, f) = write(
        "name = \"x\"\n[jobs]\npreload = 5\n[workers]\nstrategy = \"mine\"\n[strategies.mine]\n\
         claim = \"UPDATE jobz SET status = 'running' RETURNING id\"\ncomplete = \"UPDATE jobs SET status = 'done' WHERE id = :id\"\n",
    );
    let r = queuebench(&["run", &f]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stderr.contains("42P01"), "{}", r.stderr);
    assert!(r.stderr.contains("UPDATE jobz"), "{}", r.stderr);
    r.assert_clean();
}

#[test]
fn unwritable_results_folder_exits_2_before_starting_postgres() {
    let s = repo("scenarios/skip-locked.toml");
    let r = common::bin()
        .args(["run", s.to_str().unwrap(), "--out", "/dev/null/run"])
        .env_remove("DATABASE_URL")
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).contains("/dev/null/run"));
}

#[test]
fn a_host_that_is_not_local_needs_yes_and_is_not_contacted_without_it() {
    let s = repo("scenarios/skip-locked.toml");
    let r = queuebench(&["run", s.to_str().unwrap(), "--database-url", "postgres://bob:hunter2@db.example.com/prod"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("db.example.com") && r.stderr.contains("--yes"), "{}", r.stderr);
    assert!(!r.stderr.contains("lookup"), "no connection was attempted: {}", r.stderr);
    assert!(!r.stderr.contains("hunter2"));
}

/// repro and explore refuse a host off this machine with "add --yes", as run does, and take
/// that --yes (one set of target flags for every command): with it the host is contacted.
#[test]
fn repro_and_explore_take_the_yes_their_refusal_asks_for() {
    let s = repo("scenarios/skip-locked.toml");
    for command in ["repro", "explore"] {
        let args = [command, s.to_str().unwrap(), "--database-url", "postgres://bob:hunter2@db.invalid/prod"];
        let r = queuebench(&args);
        assert_eq!(r.code, 2, "{command}: {}", r.stderr);
        assert!(r.stderr.contains("db.invalid") && r.stderr.contains("add --yes"), "{command}: {}", r.stderr);
        assert!(!r.stderr.contains("cannot connect"), "{command}: no connection was attempted: {}", r.stderr);
        let r = queuebench(&[&args[..], &["--yes"]].concat());
        assert_eq!(r.code, 3, "{command} --yes: {}", r.stderr);
        assert!(r.stderr.contains("cannot connect to PostgreSQL at db.invalid"), "{command} --yes: {}", r.stderr);
        assert!(!r.stderr.contains("hunter2"), "{command}: {}", r.stderr);
    }
}
