//! Clients at full speed (docs/clients.md, "At full speed"): `workers.batch` reaches the
//! library as its jobs per fetch (`QUEUEBENCH_BATCH`), a library that cannot batch refuses it
//! at validate, and a run whose configuration bounds its throughput names that ceiling.

use crate::common;
use common::pg::rand_u32;
use common::{queuebench, repo};

/// Writes a scenario under scenarios/clients/ (so `client = "…"` resolves), runs `args` on it.
fn run_scenario(body: &str, cmd: &str) -> common::Run {
    let path = repo(&format!("scenarios/clients/.test-full-speed-{}.toml", rand_u32()));
    std::fs::write(&path, body).unwrap();
    let r = queuebench(&[cmd, path.to_str().unwrap()]);
    std::fs::remove_file(&path).unwrap();
    r
}

/// One pg-boss handler polling every 500 ms runs one job per poll without a batch: 60 jobs
/// would take 30 s, past the 12 s timeout. With `batch = 30` two polls drain them, so the run
/// passes only if the batch reached pg-boss. The ceiling is 1 × 30 ÷ 0.5 s = 60 jobs/s.
#[test]
fn a_batch_reaches_the_library_and_the_ceiling_is_named() {
    common::require_client("pg-boss");
    let r = run_scenario(
        "name = \"pg-boss-batch\"\nclient = \"pg-boss\"\n[jobs]\npreload = 60\n[workers]\ncount = 1\n\
         concurrency = 1\npoll = \"500ms\"\nbatch = 30\nwork = \"0ms\"\n[run]\nstop = \"drained\"\ntimeout = \"12s\"\n",
        "run",
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.num("jobs.completed"), 60.0);
    assert_eq!(r.check("exactly_once"), 0);
    assert_eq!(r.num("throughput.ceiling_jobs_per_sec"), 60.0);
    let words = r.summary()["throughput"]["ceiling"].as_str().unwrap_or_default().to_string();
    assert_eq!(words, "1 handler × 30 jobs per fetch ÷ 0.5 s poll = 60 jobs/s");
    assert!(r.stdout.contains("ceiling set by configuration: 1 handler × 30 jobs per fetch"), "{}", r.stdout);
    let html = std::fs::read_to_string(r.out.join("report.html")).unwrap();
    assert!(html.contains("ceiling set by configuration"), "report.html names the ceiling");
}

/// A library that fetches one job per handler (client.toml: batch_fetch = false) refuses a
/// batch before anything starts; a library with no ceiling in its configuration names none.
#[test]
fn a_batch_the_library_cannot_fetch_is_refused_and_no_ceiling_is_invented() {
    let r = run_scenario(
        "name = \"x\"\nclient = \"procrastinate\"\n[jobs]\npreload = 5\n[workers]\ncount = 1\nbatch = 4\n",
        "validate",
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("workers.batch: procrastinate fetches one job per handler"), "{}", r.stderr);
    common::require_client("graphile-worker");
    let r = run_scenario(
        "name = \"gw\"\nclient = \"graphile-worker\"\n[jobs]\npreload = 40\n[workers]\ncount = 1\nconcurrency = 4\n\
         batch = 10\nwork = \"0ms\"\n[run]\nstop = \"drained\"\ntimeout = \"30s\"\n",
        "run",
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.num("jobs.completed"), 40.0);
    let t = &r.summary()["throughput"];
    assert!(t.get("ceiling_jobs_per_sec").is_none() && t.get("ceiling").is_none(), "{t}");
}
