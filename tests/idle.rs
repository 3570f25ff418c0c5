//! Idle behaviour against a real PostgreSQL: LISTEN/NOTIFY picks work up
//! faster than the poll schedule's first step, the backoff schedule sends
//! far fewer idle queries than a fixed 5 ms poll, and a NOTIFY sent in a
//! rolled-back transaction never arrives (the run's own probe).

use crate::common;
use common::{queuebench, repo};

/// A shorter load than the shipped files: 3 s at 2 jobs/s, 4 s idle, 2 s at 2 jobs/s.
const PHASES: &str = "run.phases=[{ name = \"trickle\", duration = \"3s\" }, { name = \"idle\", duration = \"4s\", rate = 0.0 }, { name = \"again\", duration = \"2s\" }]";

fn run(name: &str, sets: &[&str]) -> common::Run {
    let s = repo(&format!("scenarios/{name}.toml"));
    let mut args = vec!["run", s.to_str().unwrap(), "--set", PHASES];
    for set in sets {
        args.extend(["--set", set]);
    }
    let r = queuebench(&args);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    r.assert_clean();
    assert_eq!(r.num("jobs.lost"), 0.0);
    assert_eq!(r.num("jobs.completed"), r.num("producer.sent"));
    r
}

#[test]
fn listen_picks_work_up_faster_than_the_poll_step_and_a_rolled_back_notify_never_arrives() {
    let r = run("idle-listen-notify", &[]);
    let pickup = r.num("latency_ms.pickup.p50");
    assert!(r.num("latency_ms.pickup.count") > 0.0);
    assert!(pickup < 100.0, "LISTEN pickup p50 {pickup} ms is not under the 100 ms first poll step");
    assert!(r.num("wakeup.notifications_received") > 0.0, "no notification reached a worker");
    assert_eq!(r.num("wakeup.rolled_back_notify_delivered"), 0.0, "a NOTIFY from a rolled-back transaction arrived");
    assert_eq!(r.num("wakeup.committed_notify_delivered"), 1.0, "the probe's committed NOTIFY did not arrive");
}

#[test]
fn backoff_sends_fewer_idle_queries_than_a_fixed_5ms_poll() {
    let backoff = run("idle-polling", &[]);
    let fixed = run("idle-polling", &["workers.idle_backoff=5ms", "workers.idle_jitter=false", "expect={}"]);
    let (b, f) = (backoff.num("wakeup.idle_queries_per_sec"), fixed.num("wakeup.idle_queries_per_sec"));
    assert!(backoff.num("wakeup.idle_seconds") >= 2.0 && fixed.num("wakeup.idle_seconds") >= 2.0);
    assert!(b * 10.0 < f, "backoff {b} idle queries/s is not an order of magnitude below fixed 5 ms polling's {f}");
    assert_eq!(
        backoff.summary()["wakeup"]["rolled_back_notify_delivered"],
        serde_json::Value::Null,
        "no probe when polling"
    );
}
