//! Issue 8's switches and limits, against a real PostgreSQL: the sampler and
//! the claim-plan probe can be turned off and report their own cost; the
//! harness times its preload and checks; an ephemeral cluster raises
//! max_connections for more workers than its old fixed 200. Timings are
//! printed by the benchmark suite (scripts/bench.sh, `cargo xtask bench`), never asserted here.

use crate::common;
use common::{queuebench, repo};

#[test]
fn the_sampler_and_probe_report_their_cost_and_can_be_turned_off() {
    let s = repo("bench/burn-down.toml");
    let base = ["--set", "jobs.preload=1000", "--set", "workers.count=4"];
    let on = queuebench(
        &[
            &["run", s.to_str().unwrap()][..],
            &base,
            &["--set", "run.sample_interval=100ms", "--set", "run.plan_probe=100ms"],
        ]
        .concat(),
    );
    assert_eq!(on.code, 0, "{}\n{}", on.stdout, on.stderr);
    assert!(on.num("timings.sampler_s") > 0.0, "the sampler ran and timed its queries");
    assert!(on.num("timings.probe_s") > 0.0, "the probe ran and timed its queries");
    assert!(on.num("timings.preload_s") > 0.0 && on.num("timings.verify_s") > 0.0);
    let rows = |r: &common::Run, file: &str| std::fs::read_to_string(r.out.join(file)).unwrap().lines().count() - 1;
    assert!(rows(&on, "samples.csv") >= 1, "samples make time-series rows");

    let off = queuebench(
        &[
            &["run", s.to_str().unwrap()][..],
            &base,
            &["--set", "run.sample_interval=off", "--set", "run.plan_probe=off"],
        ]
        .concat(),
    );
    assert_eq!(off.code, 0, "{}\n{}", off.stdout, off.stderr);
    assert_eq!(off.num("timings.sampler_s"), 0.0);
    assert_eq!(off.num("timings.probe_s"), 0.0);
    assert_eq!(rows(&off, "samples.csv"), 0, "no sampler, no database rows");
    let secs = off.num("throughput.duration_s").ceil() as usize;
    assert_eq!(rows(&off, "timeseries.csv"), secs, "the harness's own series does not need the sampler");
    assert_eq!(off.num("jobs.completed"), 1000.0, "the run itself is unchanged");
}

#[test]
fn an_ephemeral_cluster_takes_more_workers_than_the_old_fixed_limit() {
    // 210 workers + side connections did not fit the former max_connections = 200.
    let s = repo("bench/burn-down.toml");
    let r = queuebench(&[
        "run",
        s.to_str().unwrap(),
        "--set",
        "workers.count=210",
        "--set",
        "jobs.preload=420",
        "--set",
        "run.sample_interval=off",
    ]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.num("workers"), 210.0);
    assert_eq!(r.num("jobs.completed"), 420.0);
    assert_eq!(r.num("executions.duplicate"), 0.0);
}
