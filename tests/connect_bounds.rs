//! Every connection's wait is bounded (docs/databases.md, "Connecting"): a server that
//! accepts TCP and never answers is given up after `connect_timeout` and the next host of a
//! multi-host URL is tried; libpq's `target_session_attrs` values are taken and checked on the
//! server; a harness statement stuck behind a lock ends at its statement_timeout; and agents
//! spawned for a cluster with a standby get both servers.

use crate::common;
use common::pg::{ScratchDb, server};
use common::{bin, queuebench, queuebench_env};
use std::io::Write;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A small burn-down scenario in `dir`.
fn scenario(dir: &Path, extra: &str) -> String {
    let path = dir.join("small.toml");
    std::fs::write(
        &path,
        format!(
            "name = \"small\"\nseed = 5\n{extra}\n[jobs]\npreload = 60\n[workers]\ncount = 2\nstrategy = \"skip-locked\"\n\
             work = \"0ms\"\n[lease]\nduration = \"30s\"\nfencing = \"token\"\nreclaim = \"reaper\"\n[run]\n\
             stop = \"drained\"\ntimeout = \"60s\"\n"
        ),
    )
    .unwrap();
    path.to_string_lossy().into_owned()
}

/// A TCP port that accepts connections and never writes a byte; its thread keeps every
/// connection open for the life of the test binary.
fn silent_listener() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().map_while(Result::ok) {
            held.push(stream);
        }
    });
    port
}

/// A run with a deadline: killed after `limit` (the old behaviour hung), its exit code (None
/// when killed), its stderr and how long it took.
fn run_within(args: &[&str], limit: Duration) -> (Option<i32>, String, Duration) {
    let out = tempfile::tempdir().unwrap();
    let mut child = bin()
        .args(args)
        .arg("--out")
        .arg(out.path().join("run"))
        .env_remove("DATABASE_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    let started = Instant::now();
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    (code, reader.join().unwrap(), started.elapsed())
}

/// The test server's `user@host:port` (TCP, or its socket folder percent-encoded) and scheme.
fn server_parts() -> (String, String) {
    let server = server();
    let (scheme, rest) = server.split_once("://").unwrap();
    (scheme.to_string(), rest.to_string())
}

#[test]
fn a_server_that_never_answers_is_given_up_after_connect_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), "");
    let port = silent_listener();
    let url = format!("postgres://postgres@127.0.0.1:{port}/postgres?connect_timeout=2");
    let (code, stderr, took) = run_within(&["run", &file, "--database-url", &url], Duration::from_secs(60));
    assert_eq!(code, Some(3), "took {took:?}: {stderr}");
    assert!(took < Duration::from_secs(15), "took {took:?}: {stderr}");
    let host = format!("127.0.0.1:{port}");
    for part in [host.as_str(), "timed out after 2 s", "connect_timeout"] {
        assert!(stderr.contains(part), "{part}: {stderr}");
    }
}

#[test]
fn a_silent_first_host_is_passed_over_for_the_next() {
    let db = ScratchDb::new("connsilent");
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), "");
    let port = silent_listener();
    let (scheme, rest) = server_parts();
    let (user, host) = rest.rsplit_once('@').unwrap();
    let url = format!("{scheme}://{user}@127.0.0.1:{port},{host}/{}?connect_timeout=2", db.name);
    let (code, stderr, took) = run_within(&["run", &file, "--database-url", &url], Duration::from_secs(240));
    assert_eq!(code, Some(0), "took {took:?}: {stderr}");
    assert_eq!(db.harness_schemas(""), "", "the run cleaned up after itself");
}

#[test]
fn target_session_attrs_takes_libpqs_values_and_checks_the_server() {
    let db = ScratchDb::new("connattrs");
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), "");
    let primary = format!("{}?target_session_attrs=primary", db.url);
    let run = queuebench(&["run", &file, "--database-url", &primary]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let standby = format!("{}?target_session_attrs=standby", db.url);
    let run = queuebench(&["run", &file, "--database-url", &standby]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    for part in ["is a primary", "not a standby", "target_session_attrs=standby"] {
        assert!(run.stderr.contains(part), "{part}: {}", run.stderr);
    }
    let other = format!("{}?target_session_attrs=master", db.url);
    let run = queuebench(&["run", &file, "--database-url", &other]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("any, read-write, read-only, primary, standby, prefer-standby"), "{}", run.stderr);
    assert_eq!(db.harness_schemas(""), "");
}

/// The harness's setup connection has a statement_timeout (the run's timeout, at least 30 s):
/// its CREATE SCHEMA, stuck behind another session's uncommitted one of the same name, ends.
#[test]
fn a_harness_statement_stuck_behind_a_lock_ends_at_its_statement_timeout() {
    let db = ScratchDb::new("connstuck");
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), "");
    let schema = "qb_stuck_here";
    let mut holder =
        Command::new("psql").args(["-X", "-q", &db.url]).stdin(Stdio::piped()).stdout(Stdio::null()).spawn().unwrap();
    let mut stdin = holder.stdin.take().unwrap();
    stdin.write_all(format!("BEGIN; CREATE SCHEMA {schema};\n").as_bytes()).unwrap();
    stdin.flush().unwrap();
    let waiting = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
                   AND state = 'idle in transaction' AND pid <> pg_backend_pid()";
    let until = Instant::now() + Duration::from_secs(20);
    while db.sql(waiting).trim() != "1" {
        assert!(Instant::now() < until, "the lock holder never started");
        std::thread::sleep(Duration::from_millis(100));
    }
    let args = ["run", &file, "--database-url", &db.url, "--schema", schema, "--set", "run.timeout=1s"];
    let (code, stderr, took) = run_within(&args, Duration::from_secs(150));
    drop(stdin);
    let _ = holder.wait();
    assert_eq!(code, Some(3), "took {took:?}: {stderr}");
    assert!(stderr.contains("statement timeout") && stderr.contains("57014"), "{stderr}");
}

/// An ephemeral cluster with a streaming standby: its agents are handed both servers, each
/// with its port (they were handed one port and could not connect at all).
#[test]
fn agents_of_a_cluster_with_a_standby_get_both_servers() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), "[postgres]\nstandby = \"async\"");
    let run = queuebench(&["run", &file, "--spawn-agents", "2", "--quiet"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let s = run.summary();
    let agents = s["agents"].as_array().cloned().unwrap_or_default();
    assert_eq!(agents.len(), 2, "{s}");
    assert!(agents.iter().all(|a| a["state"] == "finished"), "{agents:?}");
    assert_eq!(s["executions"]["total"], 60);
}

/// Spawned agents that all fail at once: the error says so, with the time it really took,
/// not that it waited the whole --agent-wait.
#[test]
fn agents_that_all_exit_before_joining_are_reported_with_the_real_time() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), "");
    // The ephemeral cluster ignores these; each agent, handed a URL, fails on the missing file.
    let env = [("PGSSLMODE", "verify-ca"), ("PGSSLROOTCERT", "/nonexistent/qb-root.crt")];
    let run = queuebench_env(&["run", &file, "--spawn-agents", "2", "--quiet"], &env);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(run.stderr.contains("no agent joined before the spawned agents exited"), "{}", run.stderr);
    assert!(!run.stderr.contains("within 120 s"), "{}", run.stderr);
    assert!(run.stderr.contains("qb-root.crt"), "the agents' own error is shown: {}", run.stderr);
}
