//! Measurement and reports: the open model against a real PostgreSQL, the
//! intended-time rule, the time series, the files of a run folder, the
//! summary's JSON Schema, and `queuebench report` rebuilding from files.

use crate::common;
use common::{queuebench, repo};
use std::path::Path;

fn schema_errors(summary: &serde_json::Value) -> Vec<String> {
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo("schema/summary.schema.json")).unwrap()).unwrap();
    let mut errors = Vec::new();
    common::schema::validate(&schema, &schema, summary, "summary", &mut errors);
    errors
}

fn csv_rows(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let mut r = csv::Reader::from_path(path).unwrap();
    let header = r.headers().unwrap().iter().map(String::from).collect();
    let rows = r.records().map(|x| x.unwrap().iter().map(String::from).collect()).collect();
    (header, rows)
}

#[test]
fn open_model_run_writes_every_output_and_matches_the_schema() {
    let s = repo("scenarios/open-model-overload.toml");
    let r = queuebench(&[
        "run",
        s.to_str().unwrap(),
        "--set",
        "run.phases=[{ name = \"steady\", duration = \"2s\" }, { name = \"overload\", duration = \"2s\", rate = 3.0 }]",
        "--set",
        "run.sample_interval=500ms",
        "--set",
        "expect={ \"jobs.lost\" = \"== 0\", \"producer.unsent\" = \"== 0\" }",
    ]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let summary = r.summary();
    assert_eq!(summary["queuebench_version"], queuebench::VERSION, "the build that made it, commit included");
    let fp = &summary["fingerprint"];
    let hash = fp["scenario_hash"].as_str().unwrap();
    assert!(hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()), "{fp}");
    assert_eq!((fp["target"].as_str(), fp["workers"].as_u64()), (Some("ephemeral"), summary["workers"].as_u64()));
    let settings: Vec<&String> = fp["settings"].as_object().unwrap().keys().collect();
    assert_eq!(settings, ["fsync", "max_connections", "shared_buffers", "synchronous_commit"], "{fp}");
    assert!(fp["server_version"].as_str().unwrap().starts_with("15"), "{fp}");
    let errors = schema_errors(&summary);
    assert!(errors.is_empty(), "summary.json does not match schema/summary.schema.json:\n{}", errors.join("\n"));
    assert!(r.num("producer.sent") > 300.0);
    assert!(r.num("latency_ms.queue_wait.high.count") > 0.0);
    assert!(r.num("latency_ms.queue_wait.low.count") > 0.0);
    assert_eq!(r.num("jobs.enqueued"), r.num("producer.sent"));
    // The harness's series: a row for every second of the run, whatever the sampler did.
    let (header, rows) = csv_rows(&r.out.join("timeseries.csv"));
    let secs = r.num("throughput.duration_s");
    let t: Vec<f64> = rows.iter().map(|r| r[0].parse().unwrap()).collect();
    assert_eq!(t.len(), secs.ceil() as usize, "one row per second of a {secs} s run: {t:?}");
    assert!(t.iter().enumerate().all(|(i, x)| *x == (i + 1) as f64 || i + 1 == t.len()), "{t:?}");
    for col in ["completions_per_s", "claim_p99_ms", "claim_max_ms"] {
        assert!(header.iter().any(|h| h == col), "timeseries.csv lacks {col}");
    }
    let phase = header.iter().position(|h| h == "phase").unwrap();
    assert!(rows.iter().any(|r| r[phase] == "overload"));
    // The sampler's: one row per sample, at most one per 500 ms (the first at the start, one
    // more at the end). The sampler stretches its interval after a sample slower than 5 ms
    // (to 200 × its time: a big table, a very loaded machine), so there may be fewer rows,
    // never more, and never closer together.
    let (header, rows) = csv_rows(&r.out.join("samples.csv"));
    let expected = (secs / 0.5).floor() as usize;
    assert!((3..=expected + 3).contains(&rows.len()), "{} rows for {secs} s", rows.len());
    let t: Vec<f64> = rows.iter().map(|r| r[0].parse().unwrap()).collect();
    let gaps = t.windows(2).take(t.len().saturating_sub(2)); // the last sample comes when the run ends
    assert!(gaps.clone().all(|w| w[1] - w[0] >= 0.49), "samples closer than 500 ms: {t:?}");
    for col in ["n_dead_tup", "queued_high", "oldest_ready_s_low", "wait_events"] {
        assert!(header.iter().any(|h| h == col), "samples.csv lacks {col}");
    }
    for f in [
        "summary.csv",
        "report.html",
        "environment.json",
        "latency-claim.hgrm",
        "latency-claim.hlog",
        "latency-work.hlog",
        "latency-complete.hlog",
        "latency-queue-wait-high.hlog",
        "latency-end-to-end.hlog",
        "latency-queue-wait-high.hgrm",
        "latency-end-to-end.hgrm",
        "charts/throughput.png",
        "charts/throughput.svg",
        "charts/queue-depth.png",
        "charts/oldest-ready-age.svg",
        "charts/dead-tuples.png",
        "charts/queue-wait.png",
        "charts/claim-latency.png",
    ] {
        assert!(r.out.join(f).is_file(), "{f} missing");
    }
    let html = std::fs::read_to_string(r.out.join("report.html")).unwrap();
    assert!(html.contains("<svg") && html.contains("open-model-overload") && !html.contains("<script"));

    // `queuebench report` rebuilds the charts and the HTML from the files alone.
    std::fs::remove_dir_all(r.out.join("charts")).unwrap();
    std::fs::remove_file(r.out.join("report.html")).unwrap();
    let rebuilt = common::bin().args(["report"]).arg(&r.out).output().unwrap();
    assert!(rebuilt.status.success(), "{}", String::from_utf8_lossy(&rebuilt.stderr));
    assert!(r.out.join("report.html").is_file() && r.out.join("charts/queue-depth.png").is_file());
    r.assert_clean();
}

#[test]
fn a_slowed_producer_shows_as_wait_not_hidden() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("slow.toml");
    std::fs::write(
        &file,
        r#"
name = "slow-producer"
[jobs]
business_row = true
[[jobs.classes]]
name = "flood"
rate = 5000.0
payload_bytes = 2000
[[run.phases]]
name = "burst"
duration = "1s"
[workers]
count = 4
[expect]
"jobs.lost" = "== 0"
"#,
    )
    .unwrap();
    let r = queuebench(&["run", file.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let lag = r.num("producer.lag_ms.max");
    let wait = r.num("latency_ms.queue_wait.flood.max");
    assert!(lag > 100.0, "one connection cannot send 5000 jobs/s with a business row each: lag {lag} ms");
    // A job cannot be claimed before it is sent, and its wait counts from its intended time.
    assert!(wait >= lag - 2.0, "queue wait max {wait} ms hides the producer's lag of {lag} ms");
    assert_eq!(r.num("producer.unsent"), 0.0);
    assert_eq!(r.num("jobs.completed"), r.num("producer.sent"));
}

#[test]
fn several_scenarios_write_a_comparison() {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("cmp");
    let (a, b) = (repo("scenarios/naive-duplicates.toml"), repo("scenarios/skip-locked.toml"));
    let o = common::bin()
        .args(["run", a.to_str().unwrap(), b.to_str().unwrap(), "--quiet", "--out"])
        .arg(&dir)
        .args(["--set", "jobs.preload=400", "--set", "workers.max_claims=50", "--set", "expect={}"])
        .env_remove("DATABASE_URL")
        .output()
        .unwrap();
    // `expect={}` also drops the lines by which naive-duplicates expects its broken checks, so
    // its duplicates fail it (checks gate by default) while skip-locked passes; the comparison
    // is written either way.
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("naive-duplicates: FAILED") && stdout.contains("check exactly_once failed"), "{stdout}");
    assert!(stdout.contains("skip-locked: passed"), "{stdout}");
    let html = std::fs::read_to_string(dir.join("comparison.html")).unwrap();
    assert!(html.contains("naive-duplicates") && html.contains("skip-locked"));
    assert!(html.contains("naive-duplicates/report.html"), "links each run's report");
    let (header, rows) = csv_rows(&dir.join("comparison.csv"));
    assert_eq!(rows.len(), 2);
    assert!(header.iter().any(|h| h == "executions.duplicate"));
    for f in ["compare-throughput.png", "compare-duplicates.svg", "compare-claim-p99.png"] {
        assert!(dir.join("charts").join(f).is_file(), "{f}");
    }
}
