//! Failover under load: the ephemeral cluster with a streaming standby, the primary killed
//! and the standby promoted mid-run (`failover`), the workers finding the new primary through
//! the run's multi-host settings; the durability check counting what an asynchronous standby
//! lost and finding nothing lost with a synchronous one; `queuebench check` agreeing offline;
//! and a standby refused where queuebench cannot start one.

use crate::common;
use common::{bin, queuebench, repo};

fn failover(file: &str) -> common::Run {
    let s = repo(file);
    let r = queuebench(&["run", s.to_str().unwrap()]);
    r.assert_clean();
    r
}

/// `queuebench check DIR` on the run's folder: exit 0 and the same verdict as the live run.
fn rechecked_alike(r: &common::Run) {
    let o = bin().arg("check").arg(&r.out).output().unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("agrees with the run"), "{stdout}");
}

/// The failover as evidence.json recorded it.
fn recorded(r: &common::Run) -> serde_json::Value {
    let text = std::fs::read_to_string(r.out.join("evidence.json")).unwrap();
    let e: serde_json::Value = serde_json::from_str(&text).unwrap();
    let failovers = e["failovers"].as_array().unwrap().clone();
    assert_eq!(failovers.len(), 1, "{e}");
    assert_eq!(e["restarts"].as_array().unwrap().len(), 1, "the failover is a restart too: {e}");
    failovers[0].clone()
}

#[test]
fn an_asynchronous_failover_loses_what_the_held_standby_never_received() {
    let r = failover("scenarios/failover-async.toml");
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let f = recorded(&r);
    assert_eq!(f["replication"], "async");
    assert_eq!(f["hold_us"], 1_000_000);
    assert!(f["up_us"].as_u64().unwrap() > f["down_us"].as_u64().unwrap(), "{f}");
    // The walsender was frozen while the primary acknowledged commits: the standby was behind
    // when the primary died, and never got that WAL.
    assert!(f["lag_bytes"].as_u64().unwrap() > 0, "{f}");
    assert!(f["wal_lost_bytes"].as_u64().unwrap() > 0, "{f}");
    assert_eq!(r.summary()["durability"]["replication"], "async");
    assert_eq!(r.num("durability.wal_lost_bytes"), f["wal_lost_bytes"].as_f64().unwrap());
    // Completions acknowledged by the old primary were forgotten and the jobs ran again.
    let lost = r.num("durability.lost_completions");
    assert!(lost >= 1.0, "{}", r.stdout);
    assert!(r.num("durability.reexecutions") >= lost, "each lost completion ran again: {}", r.stdout);
    assert!(r.num("durability.lost_enqueues") >= 1.0, "{}", r.stdout);
    assert_eq!(r.check("durability") as f64, lost + r.num("durability.lost_enqueues"));
    // The re-executions are duplicates the exactly-once check sees too.
    assert!(r.num("executions.duplicate") >= r.num("durability.reexecutions"), "{}", r.stdout);
    // Every worker found the new primary; everything it has was finished.
    assert!(r.num("outage.worker_reconnects") >= 4.0, "{}", r.stdout);
    assert_eq!(r.num("jobs.queued") + r.num("jobs.stuck_running"), 0.0);
    rechecked_alike(&r);
}

#[test]
fn a_synchronous_failover_loses_no_acknowledged_write() {
    let r = failover("scenarios/failover-sync.toml");
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let f = recorded(&r);
    assert_eq!(f["replication"], "sync");
    // The standby may lack some WAL (commits that were waiting for it when the primary died),
    // but nothing acknowledged is lost:
    assert_eq!(r.summary()["durability"]["tested"], true);
    // The failover tested something: completions and enqueues acknowledged before it.
    assert!(r.num("durability.acknowledged_before_restart") > 0.0);
    assert!(r.num("durability.acknowledged_enqueues") > 0.0);
    for lost in ["durability.lost_completions", "durability.lost_enqueues", "durability.reexecutions", "jobs.lost"] {
        assert_eq!(r.num(lost), 0.0, "{lost}: {}", r.stdout);
    }
    assert_eq!(r.check("durability"), 0);
    assert_eq!(r.num("executions.duplicate_race"), 0.0);
    assert!(r.num("jobs.completed") >= r.num("jobs.enqueued"), "{}", r.stdout);
    assert!(r.num("outage.worker_reconnects") >= 4.0, "{}", r.stdout);
    rechecked_alike(&r);
}

#[test]
fn a_standby_against_a_database_url_is_a_usage_error_naming_the_fix() {
    let s = repo("scenarios/failover-sync.toml");
    let r = queuebench(&["run", s.to_str().unwrap(), "--database-url", "postgres://nobody@127.0.0.1:1/none"]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    for needed in
        ["[postgres] standby", "failover-sync.toml", "--postgres ephemeral", "target_session_attrs=read-write"]
    {
        assert!(r.stderr.contains(needed), "{needed}: {}", r.stderr);
    }
    assert!(!r.out.exists(), "nothing is created");
    r.assert_clean();
}

#[test]
fn a_failover_needs_a_standby_and_a_standby_a_plain_socket() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::read_to_string(repo("scenarios/failover-async.toml")).unwrap();
    let cases = [
        ("standby = \"async\"", "", "add [postgres] standby = \"async\""),
        ("standby = \"async\"", "standby = \"semi\"", "accepted: \"async\", \"sync\""),
        ("standby = \"async\"", "standby = \"async\"\ntls = true", "remove `tls = true`"),
    ];
    for (from, to, says) in cases {
        let path = dir.path().join("s.toml");
        std::fs::write(&path, base.replace(from, to)).unwrap();
        let r = queuebench(&["run", path.to_str().unwrap()]);
        assert_eq!(r.code, 2, "{to}: {}\n{}", r.stdout, r.stderr);
        assert!(r.stderr.contains(says), "{to}: {}", r.stderr);
        assert!(!r.out.exists(), "nothing is created");
        r.assert_clean();
    }
}
