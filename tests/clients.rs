//! Process clients (docs/clients.md): the real queue libraries' workers (clients/, installed
//! by `bash clients/install.sh`) driven as processes against a self-started PostgreSQL,
//! judged by the same checkers. Each contention run must pass exactly-once; a deliberately
//! broken client must be caught; a broken worker command is a clear error (exit 3) that
//! leaves no process behind; and no worker outlives queuebench, whether it is stopped with
//! SIGTERM or killed with SIGKILL (PR_SET_PDEATHSIG).

use crate::common;
use common::pg::rand_u32;
use common::{bin, queuebench, repo};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// The four contention runs at once (each mostly waits on its library's polling).
#[test]
fn each_client_runs_each_job_of_its_contention_run_once() {
    let clients = ["pg-boss", "graphile-worker", "procrastinate", "pgqueuer"];
    clients.iter().for_each(|c| common::require_client(c));
    std::thread::scope(|scope| {
        let runs: Vec<_> = clients
            .iter()
            .map(|c| {
                let s = repo(&format!("scenarios/clients/{c}-contention.toml"));
                (c, scope.spawn(move || queuebench(&["run", s.to_str().unwrap()])))
            })
            .collect();
        for (client, run) in runs {
            let r = run.join().unwrap();
            assert_eq!(r.code, 0, "{client}: {}\n{}", r.stdout, r.stderr);
            assert_eq!(r.check("exactly_once"), 0, "{client}");
            assert_eq!(r.check("no_lost_jobs"), 0, "{client}");
            assert_eq!(r.num("executions.distinct_jobs"), 80.0, "{client}: every job ran, by the effect rows");
            assert_eq!(r.num("jobs.completed"), 80.0, "{client}: the library's own table says done (observe.state)");
            // The Postgres sampler ran beside the library's workers: the depth and table series.
            let samples = std::fs::read_to_string(r.out.join("samples.csv")).unwrap_or_default();
            assert!(samples.lines().count() > 1, "{client}: samples.csv has rows: {samples:?}");
            r.assert_clean();
        }
    });
}

#[test]
fn a_client_that_runs_each_job_twice_fails_exactly_once() {
    common::require_client("pg-boss");
    let s = repo("scenarios/clients/pg-boss-contention.toml");
    let r = queuebench(&["run", s.to_str().unwrap(), "--set", "workers.client_bug=twice"]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.check("exactly_once"), 80, "every job's effect was recorded twice");
    assert_eq!(r.num("executions.total"), 160.0);
}

#[test]
fn a_client_that_acks_before_the_work_loses_jobs_and_no_lost_jobs_says_so() {
    common::require_client("pg-boss");
    let s = repo("scenarios/clients/pg-boss-contention.toml");
    let r = queuebench(&["run", s.to_str().unwrap(), "--set", "workers.client_bug=ack-first"]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    // ack-first skips the side effect of every job whose n is divisible by 50: of 80, n = 50.
    assert_eq!(r.check("no_lost_jobs"), 1, "{}", r.stdout);
    assert_eq!(r.num("jobs.completed"), 80.0, "pg-boss itself says every job completed");
    assert_eq!(r.num("executions.distinct_jobs"), 79.0);
}

/// A client folder of our own making: `run` as given (None: no `run` at all), an enqueue.sql
/// that needs no library, and a scenario naming it with a unique schema.
fn broken_client(dir: &Path, run: Option<&str>) -> (std::path::PathBuf, String) {
    let client = dir.join("broken");
    std::fs::create_dir_all(&client).unwrap();
    std::fs::write(client.join("enqueue.sql"), "SELECT md5($1::text || $2::text)\n").unwrap();
    if let Some(body) = run {
        let path = client.join("run");
        std::fs::write(&path, format!("#!/bin/sh\ncase \"$1\" in setup) exit 0;; esac\n{body}\n")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let scenario = dir.join("broken.toml");
    let setup = if run.is_none() { "setup_command = [\"true\"]\n" } else { "" };
    std::fs::write(
        &scenario,
        format!(
            "name = \"broken\"\nclient = \"./broken\"\nadapter = \"pg-boss\"\n{setup}\
             [jobs]\npreload = 5\n[run]\ntimeout = \"3s\"\n"
        ),
    )
    .unwrap();
    (scenario, format!("qb_broken_{}", rand_u32()))
}

/// Processes whose environment carries `QUEUEBENCH_SCHEMA=<schema>` (a run's workers).
fn workers_of(schema: &str) -> Vec<u32> {
    let needle = format!("QUEUEBENCH_SCHEMA={schema}\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| String::from_utf8_lossy(&env).contains(needle.as_str()))
        })
        .collect()
}

fn assert_no_workers(schema: &str, what: &str) {
    let until = Instant::now() + Duration::from_secs(10);
    while !workers_of(schema).is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(workers_of(schema), Vec::<u32>::new(), "{what}: worker processes left");
}

fn broken_run(run: Option<&str>) -> (common::Run, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let (scenario, schema) = broken_client(dir.path(), run);
    let r = queuebench(&["run", scenario.to_str().unwrap(), "--schema", &schema]);
    let command = format!("{}/broken/run work", std::fs::canonicalize(dir.path()).unwrap().display());
    assert_no_workers(&schema, "a broken client");
    (r, command, schema)
}

#[test]
fn a_worker_command_that_does_not_exist_is_an_infrastructure_error_naming_it() {
    let (r, command, _) = broken_run(None);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stderr.contains(&command), "names the command: {}", r.stderr);
    assert!(r.stderr.contains("executable `run`"), "says the fix: {}", r.stderr);
}

#[test]
fn a_worker_that_exits_at_once_is_an_error_with_its_stderr() {
    let (r, command, _) = broken_run(Some("echo 'boom: no such queue' >&2; exit 1"));
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stderr.contains(&command), "names the command: {}", r.stderr);
    assert!(r.stderr.contains("before any job ran") && r.stderr.contains("boom: no such queue"), "{}", r.stderr);
}

#[test]
fn a_worker_that_never_records_an_execution_is_an_error() {
    let (r, command, _) = broken_run(Some("exec sleep 600"));
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stderr.contains(&command), "names the command: {}", r.stderr);
    assert!(r.stderr.contains("no job recorded an execution in 3 s"), "{}", r.stderr);
}

/// A pg-boss run that goes on for a minute, in the background, once its workers are up.
fn long_run(schema: &str, out: &Path, tmp: &Path) -> Child {
    let s = repo("scenarios/clients/pg-boss-contention.toml");
    let mut cmd = bin();
    cmd.args(["run", s.to_str().unwrap(), "--schema", schema, "--set", "run.stop=60s", "--set", "workers.work=1s"])
        .args(["--set", "run.timeout=90s", "--out"])
        .arg(out)
        .env("TMPDIR", tmp)
        .env_remove("DATABASE_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().unwrap();
    // Bounded by progress: the run starts a cluster, runs the library's migrations and starts
    // Node four times, which on a loaded 2-core machine took over 30 s; it ends early only if
    // the run itself ends.
    let until = Instant::now() + Duration::from_secs(120);
    while workers_of(schema).len() < 4 && Instant::now() < until {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the run ended before its 4 workers started: {status}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(workers_of(schema).len() >= 4, "the run's 4 workers started within 120 s");
    std::thread::sleep(Duration::from_secs(1));
    child
}

/// A short TMPDIR for the run's cluster (its socket path must stay short).
fn tmpdir() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("qbc").tempdir_in("/tmp").unwrap()
}

#[test]
fn sigterm_to_queuebench_stops_every_worker() {
    common::require_client("pg-boss");
    let (schema, out, tmp) = (format!("qb_term_{}", rand_u32()), tempfile::tempdir().unwrap(), tmpdir());
    let mut child = long_run(&schema, out.path(), tmp.path());
    common::pg::signal(&child, libc::SIGTERM);
    let status = child.wait().unwrap();
    assert!(status.code().is_some(), "queuebench ended by itself after SIGTERM: {status}");
    assert_no_workers(&schema, "after SIGTERM");
}

#[test]
fn sigkill_of_queuebench_takes_its_workers_with_it() {
    common::require_client("pg-boss");
    let (schema, out, tmp) = (format!("qb_kill_{}", rand_u32()), tempfile::tempdir().unwrap(), tmpdir());
    let mut child = long_run(&schema, out.path(), tmp.path());
    common::pg::signal(&child, libc::SIGKILL);
    child.wait().unwrap();
    assert_no_workers(&schema, "after SIGKILL (PR_SET_PDEATHSIG)");
}

/// Workers with an execute event in the run's history (`history.csv.gz`).
fn executing_workers(run: &common::Run) -> std::collections::BTreeSet<u64> {
    use std::io::Read;
    let file = std::fs::File::open(run.out.join("history.csv.gz")).unwrap();
    let mut text = String::new();
    flate2::read::GzDecoder::new(file).read_to_string(&mut text).unwrap();
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f.get(1) == Some(&"execute")).then(|| f[2].parse().ok()).flatten()
        })
        .collect()
}

/// Crash, pause and kill_backend on real workers, at once: each fires once and is counted, a
/// crashed worker's slot is taken by a new process (p3) that runs jobs, a paused worker's
/// jobs still run exactly once, and PgQueuer's exit after its backend was killed is counted.
#[test]
fn process_faults_fire_are_counted_and_restart_workers() {
    let wanted = [("pg-boss", "crash"), ("pg-boss", "pause"), ("pgqueuer", "kill-backend")];
    wanted.iter().for_each(|(c, _)| common::require_client(c));
    let runs: Vec<common::Run> = std::thread::scope(|scope| {
        let handles: Vec<_> = wanted
            .iter()
            .map(|(c, f)| {
                let s = repo(&format!("scenarios/clients/{c}-{f}.toml"));
                // The restarted PgQueuer process must find work left, however long its start
                // takes on a loaded machine (Python and asyncpg took seconds there): more jobs
                // than the other process drains alone before the run stops.
                let more: &[&str] =
                    if *f == "kill-backend" { &["--set", "jobs.preload=160", "--set", "run.stop=15s"] } else { &[] };
                scope.spawn(move || {
                    let mut args = vec!["run", s.to_str().unwrap()];
                    args.extend_from_slice(more);
                    queuebench(&args)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let [crash, pause, kill] = &runs[..] else { unreachable!() };
    for r in &runs {
        assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
        assert_eq!(r.check("exactly_once"), 0);
        r.assert_clean();
    }
    assert_eq!(crash.num("faults.by_kind.crash"), 1.0);
    assert!(crash.num("jobs.stuck_running") >= 1.0, "pg-boss keeps a killed worker's jobs active (15 min)");
    assert!(executing_workers(crash).contains(&3), "the restarted process p3 ran jobs: {:?}", executing_workers(crash));
    assert_eq!(pause.num("faults.by_kind.pause"), 1.0);
    assert_eq!(pause.num("jobs.completed"), 60.0);
    assert!(executing_workers(pause).contains(&1), "the paused worker p1 ran jobs");
    assert_eq!(kill.num("faults.by_kind.kill_backend"), 1.0);
    assert_eq!(kill.num("faults.by_kind.exit"), 1.0, "PgQueuer exits 1 when its connection is terminated");
    assert!(executing_workers(kill).contains(&3), "its slot's new process p3 ran jobs");
}

/// Each line of the run's history (`history.csv.gz`) as its fields.
fn history_rows(run: &common::Run) -> Vec<Vec<String>> {
    use std::io::Read;
    let file = std::fs::File::open(run.out.join("history.csv.gz")).unwrap();
    let mut text = String::new();
    flate2::read::GzDecoder::new(file).read_to_string(&mut text).unwrap();
    text.lines().skip(1).map(|l| l.split(',').map(String::from).collect()).collect()
}

/// procrastinate's finish write dying (as it does, now and then, on a terminated connection:
/// docs/clients.md), made certain: a trigger on the library's table refuses the job n = 7's
/// move to `succeeded`. Its handler returned (`end`), but the job stays `doing` under a live
/// worker, which no stalled-job query finds; the client's last rescue pass at shutdown puts it
/// back in the queue. The run's journal says the claim was abandoned, not completed (the
/// swimlane's mark), and nothing is lost. Without the last pass the job is left `doing` with no
/// worker (no_lost_jobs fails); taking the `end` line's word, a completion that never landed.
#[test]
fn a_procrastinate_finish_write_that_dies_is_abandoned_and_the_job_goes_back_to_the_queue() {
    common::require_client("procrastinate");
    let dir = tmpdir();
    let setup = dir.path().join("setup.sh");
    let run = repo("clients/procrastinate/run");
    std::fs::write(
        &setup,
        format!(
            r#"#!/usr/bin/env bash
set -euo pipefail
'{}' setup
psql "$QUEUEBENCH_DATABASE_URL" -v ON_ERROR_STOP=1 -q <<SQL
SET search_path TO "$QUEUEBENCH_SCHEMA";
CREATE FUNCTION qb_finish_dies() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
  IF NEW.status = 'succeeded' AND (OLD.args->>'n')::int = 7 THEN
    RAISE EXCEPTION 'queuebench test: the finish write of n = 7 dies';
  END IF;
  RETURN NEW;
END \$\$;
CREATE TRIGGER qb_finish_dies BEFORE UPDATE OF status ON procrastinate_jobs
  FOR EACH ROW EXECUTE FUNCTION qb_finish_dies();
SQL
"#,
            run.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&setup, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let scenario = dir.path().join("finish-dies.toml");
    std::fs::write(
        &scenario,
        format!(
            "name = \"procrastinate-finish-dies\"\nseed = 3\nclient = \"{}\"\nsetup_command = [\"{}\"]\n\
             [jobs]\npreload = 20\n[workers]\ncount = 2\nconcurrency = 2\npoll = \"500ms\"\nwork = \"5ms\"\n\
             [run]\nstop = \"drained\"\ntimeout = \"60s\"\n",
            repo("clients/procrastinate").display(),
            setup.display()
        ),
    )
    .unwrap();
    let r = queuebench(&["run", scenario.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.check("exactly_once"), 0);
    assert_eq!(r.check("no_lost_jobs"), 0, "the last rescue pass put the job back: {}", r.stdout);
    assert_eq!(r.check("jobs_left_abandoned"), 0);
    assert_eq!((r.num("jobs.completed"), r.num("jobs.queued"), r.num("jobs.stuck_running")), (19.0, 1.0, 0.0));
    assert_eq!(r.num("executions.distinct_jobs"), 20.0, "job n = 7 ran: its handler returned");
    assert_eq!(r.num("completions.accepted"), 19.0, "its completion is not counted: it did not land");
    // Job 7's claim ends abandoned in the history, with no accepted completion.
    let rows = history_rows(&r);
    let job7: Vec<&str> = rows.iter().filter(|f| f[3] == "7").map(|f| f[1].as_str()).collect();
    assert_eq!(job7, ["claim", "execute", "abandon"], "{job7:?}");
    r.assert_clean();
}

/// A client run's report says what it cannot measure instead of drawing empty frames, and
/// the claim-plan probe runs beside the library's workers with the paired adapter's claim,
/// saying whose claim it is. The queue depth is the library's (the one class counts its rows).
#[test]
fn a_client_report_says_what_is_not_measured_and_probes_the_paired_adapter_s_claim() {
    common::require_client("pg-boss");
    let s = repo("scenarios/clients/pg-boss-contention.toml");
    let r = queuebench(&["run", s.to_str().unwrap(), "--set", "run.plan_probe=200ms"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let html = std::fs::read_to_string(r.out.join("report.html")).unwrap();
    // Claim latency: a note in words, not empty axes; the latency table says "not measured".
    let claim_svg = std::fs::read_to_string(r.out.join("charts/claim-latency.svg")).unwrap();
    assert!(claim_svg.contains("Not measured for a process client"), "{claim_svg}");
    assert!(!claim_svg.contains("seconds since start"), "no axes for a chart with no data: {claim_svg}");
    assert!(html.contains("Not measured for a process client"));
    assert!(
        html.contains("— (not measured)")
            && !html.contains("<td>claim statement</td><td class=n>0</td><td class=n>0.000")
    );
    assert!(r.stdout.contains("claim latency  not measured"), "{}", r.stdout);
    // The probe ran, on the library's tables, and its charts name the adapter's claim.
    assert!(r.num("probe.samples") >= 1.0, "{}", r.summary()["probe"]);
    assert!(r.num("probe.buffers_max") > 0.0, "{}", r.summary()["probe"]);
    assert!(r.out.join("charts/claim-plan-buffers.svg").is_file());
    assert!(html.contains("The claim is the paired adapter's (adapters/pg-boss.toml)"), "the probe charts' caption");
    // The depth chart is the library's queue: 80 jobs queued at the first sample, not 0.
    let samples = std::fs::read_to_string(r.out.join("samples.csv")).unwrap();
    let header: Vec<&str> = samples.lines().next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == "queued_default").unwrap();
    let most = samples.lines().skip(1).filter_map(|l| l.split(',').nth(col)?.parse::<i64>().ok()).max();
    assert!(most.unwrap_or(0) > 0, "{samples}");
    r.assert_clean();
}

/// Scenario mistakes are usage errors (exit 2) naming the file, the key and the fix; nothing runs.
#[test]
fn client_scenario_mistakes_are_usage_errors_naming_the_key() {
    let cases = [
        ("client = \"no-such-client\"\n", "client: no client folder `no-such-client`"),
        ("[workers]\nconcurrency = 4\n", "workers.concurrency is for process clients only"),
        (
            "client = \"pg-boss\"\n[[faults]]\nkind = \"crash\"\nprobability = 0.1\n",
            "a process fault fires at a time: give `at` and/or `interval`",
        ),
        ("client = \"pg-boss\"\n[[faults]]\nkind = \"lock_hold\"\nat = \"1s\"\n", "does not apply to a process"),
        ("client = \"pg-boss\"\n[run]\nstop = \"claims\"\n", "not \"claims\""),
        (
            "client = \"pg-boss\"\n[[blockers]]\nkind = \"idle_in_transaction\"\nduration = \"1s\"\n",
            "blockers: is not supported with a process client",
        ),
    ];
    for (i, (body, wanted)) in cases.iter().enumerate() {
        // Under the repository's scenarios/clients/, so `client = "pg-boss"` resolves.
        let path = repo(&format!("scenarios/clients/.test-mistake-{}-{i}.toml", rand_u32()));
        std::fs::write(&path, format!("name = \"x\"\n{body}[jobs]\npreload = 5\n")).unwrap();
        let r = queuebench(&["run", path.to_str().unwrap()]);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(r.code, 2, "{body}: {}", r.stderr);
        assert!(r.stderr.contains(wanted) && r.stderr.contains(".test-mistake-"), "{body}: {}", r.stderr);
    }
}

/// Two client scenarios in one `run`: comparison.html and comparison.csv have one row per
/// client with the client columns, "—" / an empty cell where a kind was not run.
#[test]
fn a_batch_of_client_scenarios_writes_the_client_comparison() {
    common::require_client("graphile-worker");
    common::require_client("pg-boss");
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("cmp");
    let (a, b) =
        (repo("scenarios/clients/graphile-worker-contention.toml"), repo("scenarios/clients/pg-boss-pause.toml"));
    let o = bin()
        .args(["run", a.to_str().unwrap(), b.to_str().unwrap(), "--quiet", "--out"])
        .arg(&dir)
        .env_remove("DATABASE_URL")
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let html = std::fs::read_to_string(dir.join("comparison.html")).unwrap();
    for column in [
        "jobs/s",
        "queue wait p50 / p99 ms",
        "pickup p50 / p99 ms",
        "duplicates under pause",
        "recovery after crash ms",
        "idle queries/s",
    ] {
        assert!(html.contains(column), "{column}");
    }
    assert!(html.contains("not measured for clients"), "says what is not measured");
    assert!(html.contains("graphile-worker-contention/report.html"), "still lists each run");
    let text = std::fs::read_to_string(dir.join("comparison.csv")).unwrap();
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    let rows: Vec<csv::StringRecord> = r.records().map(|x| x.unwrap()).collect();
    assert_eq!(rows.len(), 2, "one row per client");
    let col = |name: &str| header.iter().position(|h| h == name).unwrap_or_else(|| panic!("{name}"));
    assert_eq!((&rows[0][0], &rows[1][0]), ("graphile-worker", "pg-boss"));
    assert!(rows[0][col("contention_jobs_per_sec")].parse::<f64>().unwrap() > 0.0);
    assert!(rows[0][col("queue_wait_p99_ms")].parse::<f64>().unwrap() > 0.0);
    assert_eq!(&rows[0][col("pause_duplicates_race")], "", "no pause run for graphile-worker: not 0");
    assert_eq!(&rows[1][col("contention_jobs_per_sec")], "", "no contention run for pg-boss");
    assert_eq!(&rows[1][col("pause_duplicates_race")], "0");
    assert_eq!(&rows[1][col("pause_duplicates_lease_expired")], "0");
    assert_eq!(&rows[1][col("idle_queries_per_sec")], "", "not measured for clients");
    assert!(dir.join("charts/clients-throughput.svg").is_file());
    assert!(dir.join("comparison-runs.csv").is_file());
}
