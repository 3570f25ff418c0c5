//! `queuebench sweep` end to end against real, self-started PostgreSQL
//! clusters: a 2 × 2 grid of small burn-downs (a second or two each).

use crate::common;

use common::bin;

const SCENARIO: &str = r#"
name = "tiny-sweep"
[jobs]
preload = 120
[workers]
count = 2
work = "4ms"
[expect]
"jobs.lost" = "== 0"
"#;

#[test]
fn a_two_by_two_sweep_writes_csv_charts_and_a_recommendation() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tiny.toml");
    std::fs::write(&file, SCENARIO).unwrap();
    let out = dir.path().join("sweep");
    let tmp = tempfile::Builder::new().prefix("qbt").tempdir_in("/tmp").unwrap();
    let o = bin()
        .args(["sweep", file.to_str().unwrap(), "--set", "workers.batch=1,5", "--set", "workers.count=1,3"])
        .args(["--time-scale", "0.5", "--seed", "7", "--out", out.to_str().unwrap()])
        .env("TMPDIR", tmp.path())
        .env_remove("DATABASE_URL")
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");

    let mut csv = csv::Reader::from_path(out.join("sweep.csv")).unwrap();
    let header = csv.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name}"));
    let rows: Vec<csv::StringRecord> = csv.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 4);
    let cells: Vec<(&str, &str)> = rows.iter().map(|r| (&r[col("workers.batch")], &r[col("workers.count")])).collect();
    assert_eq!(cells, [("1", "1"), ("1", "3"), ("5", "1"), ("5", "3")]);
    for r in &rows {
        let num = |c: &str| r[col(c)].parse::<f64>().unwrap_or_else(|_| panic!("{c} = {:?}", &r[col(c)]));
        assert_eq!(num("executions.total"), 120.0, "every job once");
        assert_eq!(num("executions.duplicate"), 0.0);
        assert_eq!(num("time_scale"), 0.5);
        // Ran 2 ms of work; reported in the scenario's 4 ms (a sleep never ends early).
        assert!(num("latency_ms.work.p50") >= 3.9, "work p50 {}", num("latency_ms.work.p50"));
        assert_eq!(&r[col("passed")], "true");
    }
    // The batch the summary saw is the batch the cell set.
    let batch_of = |r: &csv::StringRecord| r[col("batch")].parse::<f64>().unwrap();
    assert_eq!(rows.iter().map(batch_of).collect::<Vec<_>>(), [1.0, 1.0, 5.0, 5.0]);

    for chart in ["throughput-by-batch", "claim-p99-by-batch", "heatmap-throughput"] {
        for ext in ["svg", "png"] {
            let p = out.join("charts").join(format!("{chart}.{ext}"));
            assert!(std::fs::metadata(&p).is_ok_and(|m| m.len() > 500), "{}", p.display());
        }
    }
    assert!(!out.join("charts/expired-by-lease.svg").exists(), "lease was not swept");
    for cell in 1..=4 {
        assert!(out.join(format!("cell-{cell:02}/summary.json")).exists());
    }
    let html = std::fs::read_to_string(out.join("sweep.html")).unwrap();
    assert!(html.contains("Recommendation") && html.contains("<svg") && html.contains("cell-04/report.html"));
    let runs = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    assert_eq!(runs.lines().count(), 5, "a header and one row per run");
    assert!(stdout.contains("recommendation") && stdout.contains("batch "), "{stdout}");
    assert!(stdout.contains("time scale 0.5"), "{stdout}");
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().map(|e| e.path()).collect();
    assert!(left.is_empty(), "clusters left behind: {left:?}");
}

#[test]
fn a_bad_value_in_a_list_exits_2_naming_the_key_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tiny.toml");
    std::fs::write(&file, SCENARIO).unwrap();
    let out = dir.path().join("sweep");
    let o = bin()
        .args(["sweep", file.to_str().unwrap(), "--set", "workers.batch=1,ten", "--out", out.to_str().unwrap()])
        .env_remove("DATABASE_URL")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("workers.batch") && stderr.contains("ten"), "{stderr}");
    assert!(!out.exists(), "nothing is created for a bad grid");
}

#[test]
fn a_server_restart_fault_against_a_url_exits_2_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep");
    let scenario = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/postgres-restart.toml");
    let o = bin()
        .args(["sweep", scenario.to_str().unwrap(), "--set", "workers.count=2,4", "--out", out.to_str().unwrap()])
        .args(["--database-url", "postgres://nobody@127.0.0.1:1/db"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("postgres_restart") && stderr.contains("--database-url"), "{stderr}");
    assert!(!out.exists(), "nothing is created");
}
