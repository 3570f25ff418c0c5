//! explore's pace and reach (issue 37, items 7 and 8): the reduction keeps every violation class
//! `--no-reduce` finds (corpus pairs and shipped scenarios), `--replay` plays a printed schedule
//! to the same verdict and script, `--random` (PCT) is reproducible by its seed and finds a
//! known bug, and explore.json reports the coverage reached.

use crate::common::pg::ScratchDb;
use crate::common::{bin, repo};
use serde_json::Value;
use std::path::Path;

fn explore(args: &[&str]) -> (i32, String, String) {
    let o = bin().arg("explore").args(args).arg("--progress").arg("off").env_remove("DATABASE_URL").output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

fn json(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("explore.json")).unwrap()).unwrap()
}

/// Each check broken (not only beside another), with the shortest schedule's length.
fn classes(j: &Value) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = j["violations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["beside"] == false)
        .map(|v| (v["check"].as_str().unwrap().to_string(), v["steps"].as_u64().unwrap()))
        .collect();
    v.sort();
    v.dedup();
    v
}

/// The search with reduction and without, `--all` to the same depth: the same checks broken,
/// each at the same shortest length; neither stopped by the clock. Returns the classes.
fn same_classes(db: &ScratchDb, file: &Path, extra: &[&str]) -> Vec<(String, u64)> {
    let dir = tempfile::tempdir().unwrap();
    let mut found = Vec::new();
    for mode in ["reduce", "--no-reduce"] {
        let out = dir.path().join(mode.trim_start_matches('-'));
        let mut args = vec![file.to_str().unwrap(), "--database-url", &db.url, "--all", "--time", "1200"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--out", out.to_str().unwrap()]);
        if mode != "reduce" {
            args.push(mode);
        }
        let (code, stdout, stderr) = explore(&args);
        assert!(code == 0 || code == 1, "{mode}: exit {code}\n{stdout}\n{stderr}");
        let j = json(&out);
        assert_eq!(j["timed_out"], false, "{mode}: the clock stopped it, so it compares nothing\n{stdout}");
        found.push((classes(&j), j["schedules"].as_u64().unwrap()));
    }
    let (reduced, naive) = (&found[0], &found[1]);
    assert_eq!(reduced.0, naive.0, "{}: reduced vs --no-reduce violation classes", file.display());
    assert!(reduced.1 <= naive.1, "the reduction ran more schedules ({} > {})", reduced.1, naive.1);
    reduced.0.clone()
}

fn corpus(name: &str, side: &str) -> (std::path::PathBuf, Vec<String>) {
    let file = repo(&format!("corpus/{name}/scenario.toml"));
    (file, if side == "fixed" { vec!["--set".into(), "adapter=fixed.toml".into()] } else { Vec::new() })
}

fn check_pair(name: &str, extra: &[&str], buggy_breaks: &[&str]) {
    let db = ScratchDb::new("explore_pace_pair");
    for side in ["buggy", "fixed"] {
        let (file, set) = corpus(name, side);
        let args: Vec<&str> = extra.iter().copied().chain(set.iter().map(String::as_str)).collect();
        let found = same_classes(&db, &file, &args);
        let checks: Vec<&str> = found.iter().map(|(c, _)| c.as_str()).collect();
        if side == "buggy" {
            for c in buggy_breaks {
                assert!(checks.contains(c), "{name} buggy: {c} not found ({checks:?})");
            }
        } else {
            for c in buggy_breaks {
                assert!(!checks.contains(c), "{name} fixed: {c} found ({checks:?})");
            }
        }
    }
}

/// sqlxmq 989b11f: two polls, the second waits on the first's lock and takes the message too.
#[test]
fn reduction_keeps_every_class_on_sqlxmq_989b11f() {
    check_pair("sqlxmq-989b11f", &["--depth", "4", "--crashes", "0"], &["exactly_once"]);
}

/// PgQueuer #474: a crashed queue manager's job is never re-picked (left to itself).
#[test]
fn reduction_keeps_every_class_on_pgqueuer_474() {
    check_pair("pgqueuer-474", &["--depth", "3", "--ticks", "0"], &["faults_recovered"]);
}

/// Shipped scenarios: the naive claims' duplicates (with a crash and a tick in reach), and the
/// cancelled job a select-then-update claim runs.
#[test]
fn reduction_keeps_every_class_on_shipped_scenarios() {
    let db = ScratchDb::new("explore_pace_shipped");
    let naive = same_classes(&db, &repo("scenarios/naive-duplicates.toml"), &["--depth", "5"]);
    assert!(naive.contains(&("exactly_once".into(), 4)), "{naive:?}");
    let cancel = ["--depth", "5", "--cancel", "--crashes", "0"];
    let cancelled = same_classes(&db, &repo("scenarios/naive-select-update.toml"), &cancel);
    assert!(cancelled.iter().any(|(c, n)| c == "cancelled_jobs_not_run" && *n == 5), "{cancelled:?}");
    let fenced = same_classes(&db, &repo("scenarios/skip-locked.toml"), &["--depth", "5", "--sessions", "3"]);
    assert!(fenced.is_empty(), "{fenced:?}");
}

/// `--replay` plays the schedule a counterexample printed: the same verdict, the same steps and
/// script. A schedule that breaks nothing passes; one with a step that cannot be taken where it
/// comes is refused, naming the steps that can.
#[test]
fn a_printed_schedule_replays_to_the_same_verdict_and_script() {
    let db = ScratchDb::new("explore_replay");
    let dir = tempfile::tempdir().unwrap();
    let file = repo("scenarios/naive-select-update.toml");
    let base = [file.to_str().unwrap(), "--database-url", &db.url, "--depth", "8"];
    let (first, again) = (dir.path().join("search"), dir.path().join("replay"));
    let (code, stdout, stderr) = explore(&[&base[..], &["--out", first.to_str().unwrap()]].concat());
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    let j = json(&first);
    let schedule = j["violations"][0]["schedule"].as_str().unwrap().to_string();
    assert_eq!(schedule.split(' ').count() as u64, j["violations"][0]["steps"].as_u64().unwrap(), "{schedule}");
    assert!(stdout.contains(&format!("--replay '…'): {schedule}\n")), "{stdout}");
    let (code, stdout, stderr) =
        explore(&[&base[..], &["--replay", &schedule, "--out", again.to_str().unwrap()]].concat());
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    let r = json(&again);
    assert_eq!(r["mode"], "replay");
    assert_eq!(classes(&r), classes(&j));
    for f in ["counterexample.txt", "counterexample.sql"] {
        let (a, b) = (std::fs::read_to_string(first.join(f)).unwrap(), std::fs::read_to_string(again.join(f)).unwrap());
        assert_eq!(a, b, "{f} differs between the search and the replay");
    }
    // A's whole job, then B finds nothing: no check broken.
    let fine = "A:select A:claim A:commit A:complete A:commit";
    let (code, stdout, stderr) = explore(&[&base[..], &["--replay", fine]].concat());
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("no counterexample in the schedule replayed (5 steps"), "{stdout}");
    let (code, _, stderr) = explore(&[&base[..], &["--replay", "A:select B:commit"]].concat());
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("step 2, `B:commit`, cannot be taken there") && stderr.contains("A:claim"), "{stderr}");
    let (code, _, stderr) = explore(&[&base[..], &["--replay", "Z:claim"]].concat());
    assert_eq!(code, 2, "{stderr}");
}

/// `--random N --seed S`: the same seed plays the same schedules, another seed others; the
/// answer names the seed and PCT's bound; and it finds the naive claim's duplicate.
#[test]
fn random_schedules_are_reproducible_by_seed_and_find_a_known_bug() {
    let db = ScratchDb::new("explore_random");
    let dir = tempfile::tempdir().unwrap();
    let file = repo("scenarios/skip-locked.toml");
    let run = |seed: &str, name: &str| {
        let out = dir.path().join(name);
        let args =
            [file.to_str().unwrap(), "--database-url", &db.url, "--depth", "10", "--random", "12", "--seed", seed];
        let (code, stdout, stderr) = explore(&[&args[..], &["--out", out.to_str().unwrap()]].concat());
        assert_eq!(code, 0, "{stdout}\n{stderr}");
        assert!(stdout.contains(&format!("random (PCT): seed {seed}, 12 schedules of at most 10 steps")), "{stdout}");
        assert!(stdout.contains("1/(n·k^(d−1))"), "{stdout}");
        let j = json(&out);
        assert_eq!((j["mode"].as_str(), j["random"]["seed"].as_u64()), (Some("random"), seed.parse().ok()), "{j}");
        assert!(j["random"]["bound_per_schedule"].as_f64().unwrap() > 0.0, "{j}");
        std::fs::read_to_string(out.join("random-schedules.txt")).unwrap()
    };
    let (a, b, c) = (run("7", "a"), run("7", "b"), run("8", "c"));
    assert_eq!(a.lines().count(), 12, "{a}");
    assert_eq!(a, b, "the same seed played other schedules");
    assert_ne!(a, c, "another seed played the same schedules");
    // The naive claim's duplicate: B's claim waits on A's row lock and takes the job too.
    let naive = repo("scenarios/naive-duplicates.toml");
    let args = [naive.to_str().unwrap(), "--database-url", &db.url, "--depth", "6", "--crashes", "0", "--ticks", "0"];
    let (code, stdout, stderr) =
        explore(&[&args[..], &["--random", "200", "--seed", "3", "--pct-depth", "2"]].concat());
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(stdout.contains("exactly_once: ") && stdout.contains("random (PCT): seed 3,"), "{stdout}");
}

/// explore.json's coverage: the conflicting step pairs in each order, and the abstract job
/// states; the last words summarise them.
#[test]
fn explore_json_reports_the_coverage_reached() {
    let db = ScratchDb::new("explore_coverage");
    let dir = tempfile::tempdir().unwrap();
    let file = repo("scenarios/naive-duplicates.toml");
    let (code, stdout, stderr) =
        explore(&[file.to_str().unwrap(), "--database-url", &db.url, "--out", dir.path().to_str().unwrap()]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(stdout.contains("coverage: ") && stdout.contains("claim → claim (waited)"), "{stdout}");
    let c = &json(dir.path())["coverage"];
    let pairs: Vec<(&str, &str, &str)> = c["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["first"].as_str().unwrap(), p["then"].as_str().unwrap(), p["how"].as_str().unwrap()))
        .collect();
    assert!(pairs.contains(&("claim", "claim", "waited")) && pairs.contains(&("claim", "claim", "same job")), "{c}");
    let states: Vec<(&str, u64, &str)> = c["job_states"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["status"].as_str().unwrap(), s["holders"].as_u64().unwrap(), s["fence"].as_str().unwrap()))
        .collect();
    // The duplicate itself: one job, two sessions holding it, one by the latest claim.
    assert!(states.contains(&("running", 2, "current+stale")) && states.contains(&("queued", 0, "none")), "{c}");
}
