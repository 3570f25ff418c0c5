//! The history a run keeps, and the commands that read it back: `check` agrees with the run on
//! shipped scenarios, `explain` tells a racing duplicate's story, `repro` turns the naive
//! claim's race into a reproduction every time and finds none in SKIP LOCKED, report.html draws
//! the example jobs, and the files match their schemas.

use crate::common;

use common::{bin, queuebench, repo};
use flate2::read::GzDecoder;
use serde_json::Value;
use std::io::Read;
use std::path::Path;

fn run(scenario: &str, sets: &[&str]) -> common::Run {
    let s = repo(scenario);
    let mut args = vec!["run", s.to_str().unwrap(), "--quiet"];
    for set in sets {
        args.extend(["--set", set]);
    }
    let r = queuebench(&args);
    assert!([0, 1].contains(&r.code), "{scenario}: exit {}\n{}\n{}", r.code, r.stdout, r.stderr);
    r
}

fn command(args: &[&str]) -> (i32, String, String) {
    let o = bin().args(args).env_remove("DATABASE_URL").output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

fn gunzip(path: &Path) -> String {
    let mut text = String::new();
    GzDecoder::new(std::fs::File::open(path).unwrap()).read_to_string(&mut text).unwrap();
    text
}

/// A small naive-duplicates run: it races, so its checks fail as the scenario expects.
fn naive() -> common::Run {
    run("scenarios/naive-duplicates.toml", &["jobs.preload=2000", "workers.max_claims=250"])
}

#[test]
fn check_agrees_with_the_run_on_shipped_scenarios() {
    // .ci/run's smoke gate runs `check` over every shipped scenario's run folder too.
    let cases: [(&str, &[&str]); 4] = [
        ("scenarios/naive-duplicates.toml", &["jobs.preload=2000", "workers.max_claims=250"]),
        ("scenarios/gc-pause-fencing-none.toml", &[]),
        ("scenarios/cancel-waiting-jobs.toml", &[]),
        // A queue that deletes what it finishes.
        ("scenarios/adapters/graphile-worker.toml", &["jobs.preload=500"]),
    ];
    for (scenario, sets) in cases {
        let r = run(scenario, sets);
        let dir = r.out.to_str().unwrap();
        let (code, out, err) = command(&["check", dir, "--json"]);
        assert_eq!(code, r.code, "{scenario}: check exits as the run did\n{out}\n{err}");
        let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{scenario}: {e}\n{out}\n{err}"));
        assert_eq!(v["agrees_with_run"], true, "{scenario}: {out}");
        assert_eq!(v["passed"], r.summary()["passed"], "{scenario}");
        assert_eq!(v["checks"], r.summary()["checks"], "{scenario}: the same checks, counts and examples");
        let (code, out, _) = command(&["check", dir]);
        assert_eq!(code, r.code);
        assert!(out.contains("agrees with the run"), "{scenario}: {out}");
    }
}

#[test]
fn a_changed_history_is_noticed() {
    // Drop every second execution from a racing run's history: the duplicates shrink, and
    // check must say so rather than echo the run's summary.
    let r = naive();
    let path = r.out.join("history.csv.gz");
    let text = gunzip(&path);
    let mut n = 0;
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| {
            if l.split(',').nth(1) == Some("execute") {
                n += 1;
                return n % 2 == 0;
            }
            true
        })
        .collect();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, (kept.join("\n") + "\n").as_bytes()).unwrap();
    std::fs::write(&path, gz.finish().unwrap()).unwrap();
    let (_, out, err) = command(&["check", r.out.to_str().unwrap(), "--json"]);
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}\n{out}\n{err}"));
    assert_eq!(v["agrees_with_run"], false, "{out}");
}

#[test]
fn the_readmes_sample_lists_the_checks_the_run_prints() {
    // README's quick start shows what `run scenarios/naive-duplicates.toml` prints: a new check
    // (or one no longer judged without faults) must show up there too.
    let readme = std::fs::read_to_string(repo("README.md")).unwrap();
    let start = readme.find("naive-duplicates — PASSED").expect("the quick start's sample");
    let sample = &readme[start..];
    let sample = &sample[sample.find("\n  checks\n").expect("its checks")..];
    let sample = &sample[..sample.find("\n  expectations\n").expect("its expectations")];
    let shown: Vec<&str> = sample
        .lines()
        .filter_map(|l| l.strip_prefix("    ok   ").or_else(|| l.strip_prefix("    FAIL ")))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let r = naive();
    let judged: Vec<String> =
        r.summary()["checks"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap().to_string()).collect();
    assert_eq!(shown, judged, "README.md's sample output lists other checks than a run judges");
}

#[test]
fn explain_tells_a_racing_duplicate_and_the_report_draws_it() {
    let r = naive();
    let dir = r.out.to_str().unwrap();
    let (code, out, err) = command(&["explain", dir]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("in naive-duplicates"), "{out}");
    assert!(out.contains("claim returns the job") && out.contains("executes it"), "{out}");
    assert!(out.contains("→ racing claim"), "the cause, in one line:\n{out}");
    // A job that does not exist is a usage error naming it.
    let (code, _, err) = command(&["explain", dir, "--job", "99999999"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("99999999") && err.contains("no such job"), "{err}");
    // report.html draws the example jobs, and `report` draws them again from the history.
    let html = std::fs::read_to_string(r.out.join("report.html")).unwrap();
    assert!(html.contains("<h2>Example jobs</h2>") && html.contains("exactly_once</h3>"), "no swimlane");
    let lanes = html.matches("<h3>job ").count();
    assert!((1..=15).contains(&lanes), "{lanes} example jobs (≤ 5 per failed check)");
    std::fs::remove_file(r.out.join("report.html")).unwrap();
    let (code, _, err) = command(&["report", dir]);
    assert_eq!(code, 0, "{err}");
    let again = std::fs::read_to_string(r.out.join("report.html")).unwrap();
    assert_eq!(again.matches("<h3>job ").count(), lanes, "the rebuilt report draws the same jobs");
}

#[test]
fn repro_hands_the_naive_claims_job_out_twice_every_time_and_skip_locked_never() {
    let naive = repo("scenarios/naive-duplicates.toml");
    let (code, out, err) = command(&["repro", naive.to_str().unwrap(), "--repeat", "10"]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(out.contains("handed out twice in 10 of 10"), "{out}");
    assert!(out.contains("psql"), "the by-hand script is printed:\n{out}");
    assert!(out.contains("queuebench prepare") && out.contains("SET search_path"), "how to replay it:\n{out}");
    for (scenario, want) in [
        ("scenarios/naive-select-update.toml", (1, "10 of 10")),
        ("scenarios/skip-locked.toml", (0, "0 of 10")),
        ("scenarios/for-update-convoy.toml", (0, "0 of 10")),
    ] {
        let f = repo(scenario);
        let (code, out, err) = command(&["repro", f.to_str().unwrap(), "--repeat", "10"]);
        assert_eq!(code, want.0, "{scenario}: {out}\n{err}");
        assert!(out.contains(&format!("handed out twice in {}", want.1)), "{scenario}: {out}");
    }
}

/// The windows of `repro`'s by-hand script, in order: (window, its lines up to the next one).
fn windows(out: &str) -> Vec<(String, String)> {
    let start = out.find("-- The same by hand").expect("the by-hand script is printed");
    let mut chunks: Vec<(String, String)> = Vec::new();
    for line in out[start..].lines().skip(1) {
        if let Some(w) = line.strip_prefix("-- window ") {
            chunks.push((w.trim().to_string(), String::new()));
        } else if line.trim().is_empty() || line.starts_with('→') {
            break;
        } else if let Some((_, text)) = chunks.last_mut() {
            text.push_str(line);
            text.push('\n');
        }
    }
    chunks
}

/// Replays `repro`'s printed script by hand, as its last lines say: `queuebench prepare` makes
/// the schema with one job, two psql processes are the two windows, and each window's lines
/// go to its psql in the printed order. Returns the ids each window's claim returned.
fn replay(scenario: &str) -> (Vec<String>, Vec<String>) {
    let db = common::pg::ScratchDb::new("replay");
    let f = repo(scenario);
    let (code, out, err) = command(&["repro", f.to_str().unwrap()]);
    assert!(code <= 1, "{out}\n{err}");
    let script = windows(&out);
    assert!(script.len() >= 3, "A, B, A at least: {script:?}\n{out}");
    let prepare = bin()
        .args(["prepare", f.to_str().unwrap(), "--set", "jobs.preload=1", "--set", "workers.batch=1"])
        .args(["--database-url", &db.url, "--schema", "qb_repro"])
        .output()
        .unwrap();
    assert!(prepare.status.success(), "{}", String::from_utf8_lossy(&prepare.stderr));
    let psql = || {
        let mut c = std::process::Command::new("psql")
            .args(["-X", "-q", "-A", "-t", &db.url])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        writeln!(c.stdin.as_mut().unwrap(), "SET search_path = qb_repro;").unwrap();
        c
    };
    let (mut a, mut b) = (psql(), psql());
    for (window, text) in &script {
        use std::io::Write;
        let to = if window == "A" { &mut a } else { &mut b };
        to.stdin.as_mut().unwrap().write_all(text.as_bytes()).unwrap();
        to.stdin.as_mut().unwrap().flush().unwrap();
        // Let this window's statements reach the server (a claim that waits on a lock waits).
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    let ids = |c: std::process::Child| -> Vec<String> {
        let o = c.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        // A claim's RETURNING rows (id first); nothing else prints with -q -A -t.
        text.lines().filter(|l| l.contains('|')).map(|l| l.split('|').next().unwrap().to_string()).collect()
    };
    drop(a.stdin.take());
    let got_a = ids(a);
    drop(b.stdin.take());
    let got_b = ids(b);
    (got_a, got_b)
}

#[test]
fn repros_printed_script_replayed_through_psql_hands_the_naive_job_out_twice_and_skip_locked_never() {
    let (a, b) = replay("scenarios/naive-duplicates.toml");
    assert_eq!(a.len(), 1, "A claims the one job: {a:?}");
    assert_eq!(a, b, "B's claim, replayed by hand, returns the job A holds");
    let (a, b) = replay("scenarios/skip-locked.toml");
    assert_eq!(a.len(), 1, "A claims the one job: {a:?}");
    assert!(b.is_empty(), "SKIP LOCKED hands B nothing: {b:?}");
}

#[test]
fn repro_fencing_lands_a_stale_completion_only_where_the_fence_lets_it() {
    for (scenario, code, landed) in
        [("scenarios/gc-pause-fencing-none.toml", 1, "1 of 1"), ("scenarios/gc-pause-fencing-token.toml", 0, "0 of 1")]
    {
        let f = repo(scenario);
        let (got, out, err) = command(&["repro", f.to_str().unwrap(), "--fencing"]);
        assert_eq!(got, code, "{scenario}: {out}\n{err}");
        assert!(out.contains(&format!("a stale completion landed in {landed}")), "{scenario}: {out}");
        // Each fencing mode is tried: none and status let it land, attempts and token reject it.
        assert!(out.contains("fencing none     : A's late completion LANDED"), "{out}");
        assert!(out.contains("fencing token    : A's late completion was rejected"), "{out}");
    }
}

#[test]
fn the_history_files_match_their_schemas() {
    let r = run("scenarios/gc-pause-fencing-token.toml", &[]);
    for (file, schema) in
        [("history.csv.gz", "schema/history.schema.json"), ("final_state.csv.gz", "schema/final_state.schema.json")]
    {
        let schema: Value = serde_json::from_str(&std::fs::read_to_string(repo(schema)).unwrap()).unwrap();
        let fields = schema["fields"].as_array().unwrap();
        let text = gunzip(&r.out.join(file));
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let names: Vec<&str> = fields.iter().map(|f| f["name"].as_str().unwrap()).collect();
        assert_eq!(header, names, "{file}'s columns are the schema's, in order");
        let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
        assert!(!rows.is_empty(), "{file} is empty");
        for (i, f) in fields.iter().enumerate() {
            let values = rows.iter().map(|r| r[i]).filter(|v| !v.is_empty());
            match (f["type"].as_str().unwrap(), f["constraints"]["enum"].as_array()) {
                ("integer", _) => values.for_each(|v| assert!(v.parse::<i64>().is_ok(), "{file}.{}: {v}", names[i])),
                ("boolean", _) => values.for_each(|v| assert!(v == "true" || v == "false", "{file}: {v}")),
                (_, Some(allowed)) => {
                    values.for_each(|v| assert!(allowed.iter().any(|a| a == v), "{file}.{}: `{v}`", names[i]))
                }
                _ => {}
            }
        }
    }
    // The pause is in the history, as a fault row naming its kind.
    let text = gunzip(&r.out.join("history.csv.gz"));
    assert!(text.lines().any(|l| l.contains(",fault,") && l.ends_with(",pause")), "{text}");
    // So is the reaper giving the paused worker's job back (the built-in reclaim's status).
    assert!(text.lines().any(|l| l.contains(",reap,") && l.ends_with(",retry")), "{text}");
}

#[test]
fn a_run_without_history_says_so_when_checked() {
    let r = run("scenarios/gc-pause-fencing-token.toml", &["run.history=false"]);
    assert!(!r.out.join("history.csv.gz").exists() && !r.out.join("final_state.csv.gz").exists());
    let (code, _, err) = command(&["check", r.out.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("kept no history") && err.contains("run.history = false"), "{err}");
}
