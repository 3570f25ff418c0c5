//! The CI gate end to end against real ephemeral clusters: save a baseline,
//! pass against it, then fail it with exit 1 and a readable JUnit failure
//! when a change makes duplicates appear (strategy naive) or throughput drop
//! (200 ms of work per job). Directions only, with wide margins: a 0 ms job
//! burn-down runs at hundreds of jobs/s here, 8 workers × 200 ms cap at 40.

use crate::common;

use common::{Run, queuebench, repo};

/// skip-locked, 200 jobs, the scenario's own expectations replaced by a gate on exactly-once.
fn gate_run(baseline_dir: &str, extra: &[&str]) -> Run {
    let scenario = repo("scenarios/skip-locked.toml");
    let mut args = vec![
        "run",
        scenario.to_str().unwrap(),
        "--set",
        "jobs.preload=200",
        "--set",
        "expect={}",
        "--expect",
        "checks.exactly_once == 0",
        "--expect",
        "jobs.lost == 0",
        "--baseline-dir",
        baseline_dir,
        "--quiet",
    ];
    args.extend_from_slice(extra);
    queuebench(&args)
}

/// (testcase name, failure message) of every failed test case in the run's junit.xml.
fn junit_failures(run: &Run) -> Vec<(String, String)> {
    let xml = std::fs::read_to_string(run.out.join("junit.xml")).expect("junit.xml in the run folder");
    let doc = roxmltree::Document::parse(&xml).expect("junit.xml parses");
    doc.descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .filter_map(|c| {
            let f = c.children().find(|n| n.has_tag_name("failure"))?;
            Some((c.attribute("name")?.to_string(), f.attribute("message").unwrap_or_default().to_string()))
        })
        .collect()
}

#[test]
fn baseline_gate_passes_unchanged_and_fails_on_duplicates_or_a_throughput_drop() {
    let dir = tempfile::tempdir().unwrap();
    let bdir = dir.path().to_str().unwrap();

    let saved = gate_run(bdir, &["--save-baseline", "main", "--repeat", "2"]);
    assert_eq!(saved.code, 0, "{}\n{}", saved.stdout, saved.stderr);
    let baseline: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("main/skip-locked.json")).unwrap()).unwrap();
    assert_eq!(baseline["runs"].as_array().map(Vec::len), Some(2), "one summary per repeat");
    for k in ["repeat-1", "repeat-2"] {
        assert!(saved.out.join(k).join("summary.json").is_file(), "{k} missing");
    }
    let xml = std::fs::read_to_string(saved.out.join("junit.xml")).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    assert_eq!(doc.descendants().filter(|n| n.has_tag_name("testsuite")).count(), 2, "a suite per repeat");
    assert_eq!(junit_failures(&saved), [], "a passing run has no JUnit failure");

    // Every run records its fingerprint; the baseline is made to look as if it came from a
    // bigger machine with fsync off, so the comparison below must warn (and still pass).
    let file = dir.path().join("main/skip-locked.json");
    let mut edited = baseline.clone();
    for run in edited["runs"].as_array_mut().unwrap() {
        let fp = &mut run["fingerprint"];
        assert_eq!(fp["workers"], 8, "{fp}");
        assert_eq!(fp["target"], "ephemeral", "{fp}");
        assert_eq!(fp["settings"].as_object().map(|s| s.len()), Some(4), "{fp}");
        fp["cores"] = 64.into();
        fp["settings"]["fsync"] = "off".into();
    }
    std::fs::write(&file, serde_json::to_vec(&edited).unwrap()).unwrap();

    // The same code again passes. Timing metrics get wide tolerances here (a shared 2-core
    // machine); the correctness counters keep their default: no rise at all.
    let loose = ["throughput.jobs_per_sec=90%", "throughput.claims_per_sec=90%"];
    let mut args = vec!["--baseline", "main"];
    for t in &loose {
        args.extend(["--tolerance", t]);
    }
    for m in ["claim", "complete", "end_to_end", "queue_wait{class=default}"] {
        args.extend(["--tolerance", Box::leak(format!("latency_ms.{m}.p99=off").into_boxed_str())]);
    }
    args.push("--github");
    let same = gate_run(bdir, &args);
    assert_eq!(same.code, 0, "{}\n{}", same.stdout, same.stderr);
    assert!(same.out.join("compare.md").is_file() && same.out.join("compare.json").is_file());
    let md = std::fs::read_to_string(same.out.join("compare.md")).unwrap();
    assert!(md.contains("No regression"), "{md}");
    // The other machine: a line on the terminal (even with --quiet), in the step summary's
    // Markdown (printed to stdout without $GITHUB_STEP_SUMMARY) and as a workflow warning.
    let warning = "warning: not comparable: a different kind of machine or server (2 differences)";
    assert!(same.stdout.contains(&format!("  {warning}\n")), "{}", same.stdout);
    assert!(same.stdout.contains(&format!("**{warning}**")) && md.contains("- `settings.fsync: off → on`"), "{md}");
    assert!(same.stdout.contains("::warning title=queuebench baseline::"), "{}", same.stdout);
    std::fs::write(&file, serde_json::to_vec(&baseline).unwrap()).unwrap();

    // A change that makes duplicates appear.
    let dup = gate_run(bdir, &["--baseline", "main", "--set", "workers.strategy=naive", "--github"]);
    assert_eq!(dup.code, 1, "{}\n{}", dup.stdout, dup.stderr);
    let failures = junit_failures(&dup);
    let expect = failures.iter().find(|(n, _)| n == "expect checks.exactly_once == 0");
    let (_, msg) = expect.unwrap_or_else(|| panic!("no failed exactly-once expectation in {failures:?}"));
    let actual: f64 = msg.rsplit("actual ").next().unwrap().parse().unwrap();
    assert!(actual > 0.0 && actual == dup.check("exactly_once") as f64, "{msg}");
    let regression = failures.iter().find(|(n, _)| n == "baseline executions.duplicate");
    let (_, msg) = regression.unwrap_or_else(|| panic!("no duplicate regression in {failures:?}"));
    assert!(msg.starts_with("regression: executions.duplicate: old 0 → new "), "{msg}");
    assert!(dup.stdout.contains("baseline executions.duplicate"), "--quiet names the regression:\n{}", dup.stdout);
    // --github without $GITHUB_STEP_SUMMARY prints the Markdown and the annotations.
    assert!(dup.stdout.contains("### queuebench: `skip-locked` ❌ FAILED"), "{}", dup.stdout);
    assert!(dup.stdout.contains("::error title=queuebench baseline::executions.duplicate regressed"), "{}", dup.stdout);

    // `compare` reads the same folders: the saved repeats against the duplicating run. Another
    // strategy is another run: refused (exit 2) with the differences, unless --force.
    let old = saved.out.to_str().unwrap();
    let c = common::bin().args(["compare", old, dup.out.to_str().unwrap()]).output().unwrap();
    let err = String::from_utf8_lossy(&c.stderr);
    assert_eq!(c.status.code(), Some(2), "{err}");
    assert!(err.contains("not comparable") && err.contains("strategy: skip-locked → naive"), "{err}");
    assert!(err.contains("scenario_hash: ") && err.contains("--force"), "{err}");
    assert!(c.stdout.is_empty(), "no table for runs that are not comparable");
    let c = common::bin().args(["compare", old, dup.out.to_str().unwrap(), "--force"]).output().unwrap();
    let text = String::from_utf8_lossy(&c.stdout);
    assert_eq!(c.status.code(), Some(1), "{text}");
    assert!(text.contains("executions.duplicate") && text.contains("REGRESSED"), "{text}");
    let (warned, table) = text.split_once("  baseline ").expect("the table");
    assert!(
        warned.contains("warning: not comparable: different runs") && warned.contains("strategy: skip-locked → naive"),
        "{text}"
    );
    assert!(!table.contains("not comparable"), "the differences come above the table: {text}");
    let c = common::bin().args(["compare", old, old]).output().unwrap();
    assert_eq!(c.status.code(), Some(0), "a run set against itself: {}", String::from_utf8_lossy(&c.stdout));
    assert!(!String::from_utf8_lossy(&c.stdout).contains("warning"), "{}", String::from_utf8_lossy(&c.stdout));
    // A summary from before the fingerprint: compared, with a warning that nothing was checked.
    let mut older: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(saved.out.join("repeat-1/summary.json")).unwrap()).unwrap();
    older.as_object_mut().unwrap().remove("fingerprint");
    let older_file = dir.path().join("older.json");
    std::fs::write(&older_file, serde_json::to_vec(&older).unwrap()).unwrap();
    let older_file = older_file.to_str().unwrap();
    let c = common::bin().args(["compare", older_file, older_file]).output().unwrap();
    let text = String::from_utf8_lossy(&c.stdout);
    assert_eq!(c.status.code(), Some(0), "{text}");
    assert!(text.contains("has no fingerprint") && text.contains("cannot check"), "{text}");

    // A change that makes throughput drop far beyond the default 30 %.
    let slow = gate_run(bdir, &["--baseline", "main", "--set", "workers.work=200ms"]);
    assert_eq!(slow.code, 1, "{}\n{}", slow.stdout, slow.stderr);
    let failures = junit_failures(&slow);
    assert!(failures.iter().all(|(n, _)| n.starts_with("baseline ")), "only the baseline fails: {failures:?}");
    let (_, msg) =
        failures.iter().find(|(n, _)| n == "baseline throughput.jobs_per_sec").expect("throughput regressed");
    assert!(msg.contains("allowed -30%"), "{msg}");
    assert!(slow.num("throughput.jobs_per_sec") < 45.0, "8 workers × 200 ms cannot exceed 40 jobs/s");
}

#[test]
fn an_abort_expectation_stops_a_duplicating_run_early() {
    let dir = tempfile::tempdir().unwrap();
    let run = gate_run(
        dir.path().to_str().unwrap(),
        &[
            "--set",
            "jobs.preload=5000",
            "--set",
            "workers.strategy=naive",
            "--expect",
            "executions.duplicate == 0, abort",
        ],
    );
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let s = run.summary();
    let by = s["aborted_by"].as_str().expect("aborted_by is set");
    assert!(by.starts_with("executions.duplicate == 0 (live value "), "{by}");
    assert!(run.num("jobs.completed") < 5000.0, "the run stopped before the 5000 jobs were done");
    assert!(run.stdout.contains("aborted by executions.duplicate == 0"), "{}", run.stdout);
    let failures = junit_failures(&run);
    assert!(failures.iter().any(|(n, m)| n == "run finished" && m.contains("aborted by")), "{failures:?}");
    run.assert_clean();
}

#[test]
fn unknown_metrics_in_expect_and_tolerance_exit_2_before_anything_starts() {
    let scenario = repo("scenarios/skip-locked.toml");
    let f = scenario.to_str().unwrap();
    let r = queuebench(&["run", f, "--expect", "latency_ms.queue_wait{class=nobody}.p95 < 5"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("latency_ms.queue_wait.nobody.p95") && r.stderr.contains("did you mean"), "{}", r.stderr);
    assert!(!r.out.exists(), "nothing was created");
    let r = queuebench(&["run", f, "--tolerance", "throughput.jobs_per_sec=fast"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("accepted"), "{}", r.stderr);
    let dir = tempfile::tempdir().unwrap();
    let r = queuebench(&["run", f, "--baseline", "nope", "--baseline-dir", dir.path().to_str().unwrap()]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--save-baseline nope") && !r.out.exists(), "{}", r.stderr);
}

/// naive-duplicates' shape, smaller: the lock-free claim, 4 workers × 250 claims against 1,000
/// jobs. `expect` is the scenario's `[expect]` table, if any.
fn naive_scenario(expect: &str) -> String {
    format!(
        r#"
name = "naive-small"
seed = 42
[jobs]
preload = 1000
[workers]
count = 4
strategy = "naive"
batch = 1
mode = "lease"
work = "0ms"
max_claims = 250
[lease]
duration = "90s"
fencing = "token"
[run]
stop = "claims"
{expect}
"#
    )
}

/// Runs `text` as a scenario file with `--quiet`.
fn run_text(text: &str) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("naive-small.toml");
    std::fs::write(&file, text).unwrap();
    queuebench(&["run", file.to_str().unwrap(), "--quiet"])
}

#[test]
fn checks_gate_by_default_and_an_expectation_on_a_check_replaces_its_default() {
    // No [expect] at all: the duplicates the naive claim makes fail the run on their own.
    let run = run_text(&naive_scenario(""));
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert!(run.check("exactly_once") > 0, "the naive claim duplicated nothing:\n{}", run.stdout);
    let s = run.summary();
    assert_eq!(s["passed"], false);
    let failed: Vec<&str> = s["failed_checks"].as_array().unwrap().iter().filter_map(|c| c.as_str()).collect();
    assert!(failed.contains(&"exactly_once"), "{failed:?}");
    assert!(run.stdout.contains("naive-small: FAILED"), "{}", run.stdout);
    assert!(
        run.stdout.contains("check exactly_once failed: ")
            && run.stdout.contains("executed jobs ran more than once")
            && run.stdout.contains("(name \"checks.exactly_once\" in [expect] if the scenario expects it)"),
        "--quiet names the check:\n{}",
        run.stdout
    );
    let failures = junit_failures(&run);
    let check = failures.iter().find(|(n, _)| n == "check exactly_once");
    let (_, msg) = check.unwrap_or_else(|| panic!("check exactly_once is not a JUnit failure: {failures:?}"));
    assert!(msg.starts_with(&format!("exactly_once: {} violation(s): ", run.check("exactly_once"))), "{msg}");
    // Every check that failed the run is a JUnit failure, and nothing else is (no expectations).
    let mut junit_checks: Vec<&str> = failures.iter().filter_map(|(n, _)| n.strip_prefix("check ")).collect();
    junit_checks.sort();
    let mut summary_checks = failed.clone();
    summary_checks.sort();
    assert_eq!(junit_checks, summary_checks, "{failures:?}");
    assert_eq!(failures.len(), failed.len(), "{failures:?}");
    run.assert_clean();

    // The scenario says it expects the duplicates: the same run passes. The naive claim can also
    // overlap owners and overrun the attempt budget (naive-duplicates reports both); this
    // scenario names them too, as reported, so that the run passes whatever the timing.
    let expect = r#"
[expect]
"checks.exactly_once" = "> 0"
"checks.ownership_overlap" = ">= 0"
"checks.attempts_within_budget" = ">= 0"
"#;
    let run = run_text(&naive_scenario(expect));
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.check("exactly_once") > 0);
    let s = run.summary();
    assert_eq!((s["passed"].as_bool(), s["failed_checks"].as_array().map(Vec::len)), (Some(true), Some(0)));
    // It passes, and says which checks failed as it expects.
    let line = run.stdout.trim();
    assert!(
        line.starts_with("naive-small: passed (") && line.contains("as the scenario expects: exactly_once"),
        "{line}"
    );
    assert_eq!(junit_failures(&run), [], "the expected duplicates are no JUnit failure");
    run.assert_clean();
}

/// Two sides of one build, three runs each, interleaved (runs 1, 3, 5 against 2, 4, 6 of one
/// `--repeat 6`, so the machine's load drifts alike on both): `compare` finds no regression. A
/// change past a tolerance that the runs' spread explains is shown as noise with its p-value
/// (the rank test, docs/gating.md); what a real slowdown looks like is in src/compare's tests.
#[test]
fn one_build_against_itself_with_three_runs_a_side_is_no_regression() {
    let r = gate_run(tempfile::tempdir().unwrap().path().to_str().unwrap(), &["--repeat", "6"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let sides = tempfile::tempdir().unwrap();
    for (side, runs) in [("old", [1, 3, 5]), ("new", [2, 4, 6])] {
        for (k, run) in runs.iter().enumerate() {
            let to = sides.path().join(side).join(format!("repeat-{}", k + 1));
            std::fs::create_dir_all(&to).unwrap();
            std::fs::copy(r.out.join(format!("repeat-{run}/summary.json")), to.join("summary.json")).unwrap();
        }
    }
    let o = common::bin().arg("compare").arg(sides.path().join("old")).arg(sides.path().join("new")).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&o.stderr));
    assert!(!text.contains("REGRESSED") && text.contains("no regression against the baseline"), "{text}");
}
