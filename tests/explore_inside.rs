//! `queuebench explore` inside a statement: Que before c95329c decides on the lock walk's
//! snapshot, taken before its `pg_try_advisory_lock`, so a job another worker deleted and
//! unlocked in between is locked and run again. Whole-statement steps never open that window;
//! a pause between the snapshot and the first try-lock does. The buggy side is found
//! (`run_after_completion`), its printed script replays on real connections (a gate window G
//! holding the pause), and the fixed side (a second statement, a fresh snapshot) holds.
//! And `--acks-lost`: a completion whose COMMIT lands and whose answer is lost is sent again;
//! one that is not idempotent puts the finished job back (found), one fenced by its token
//! changes nothing the second time (nothing found).

use crate::common::pg::ScratchDb;
use crate::common::{bin, repo};

fn explore(args: &[&str]) -> (i32, String, String) {
    let o = bin().arg("explore").args(args).args(["--progress", "off"]).env_remove("DATABASE_URL").output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

#[test]
fn a_snapshot_older_than_its_lock_is_found_inside_the_statement_and_replays() {
    let db = ScratchDb::new("explore_inside");
    let out = tempfile::tempdir().unwrap();
    let found = out.path().join("found");
    let scenario = repo("corpus/que-c95329c/scenario.toml");
    let file = scenario.to_str().unwrap();
    let bound = ["--database-url", &db.url, "--crashes", "0", "--ticks", "0", "--depth", "10", "--time", "240"];

    let (code, stdout, stderr) = explore(&[&[file, "--out", found.to_str().unwrap()][..], &bound[..]].concat());
    assert_eq!(code, 1, "the buggy lock walk is found: {stdout}\n{stderr}");
    assert!(stdout.contains("run_after_completion:"), "{stdout}");
    assert!(stdout.contains("(que-2013-before-c95329c, 8 steps):"), "the shortest schedule: {stdout}");
    assert!(stdout.contains("B's statement runs on from its pause"), "the pause is in the schedule: {stdout}");
    assert!(stdout.contains("paused between their snapshot and their first such lock"), "its granularity: {stdout}");
    let json = std::fs::read_to_string(found.join("explore.json")).unwrap();
    assert!(json.contains("\"granularity\": \"statement_with_pauses\""), "{json}");
    assert_eq!(db.harness_schemas(""), "", "explore drops its schema");

    // The printed schedule spells the pause (`+pause`) and its resume, one word a step, and
    // `--replay` plays it back to the same verdict, steps and script.
    let j: serde_json::Value = serde_json::from_str(&json).unwrap();
    let schedule = j["violations"][0]["schedule"].as_str().unwrap().to_string();
    assert_eq!(schedule.split(' ').count(), 8, "{schedule}");
    assert!(schedule.contains("+pause") && schedule.contains("B:resume"), "{schedule}");
    assert!(stdout.contains(&format!("--replay '…'): {schedule}\n")), "{stdout}");
    let again = out.path().join("again");
    let replay = [file, "--replay", &schedule, "--out", again.to_str().unwrap()];
    let (code, restdout, stderr) = explore(&[&replay[..], &bound[..]].concat());
    assert_eq!(code, 1, "the replayed schedule breaks the same check: {restdout}\n{stderr}");
    assert!(restdout.contains("run_after_completion:"), "{restdout}");
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(again.join("explore.json")).unwrap()).unwrap();
    assert_eq!(r["mode"], "replay");
    assert_eq!(r["violations"][0]["schedule"], j["violations"][0]["schedule"]);
    for f in ["counterexample.txt", "counterexample.sql"] {
        let (a, b) = (std::fs::read_to_string(found.join(f)).unwrap(), std::fs::read_to_string(again.join(f)).unwrap());
        assert_eq!(a, b, "{f} differs between the search and the replay");
    }

    // The script, by hand: A claims, deletes and unlocks; B's walk takes its snapshot and stops
    // at the gate (window G); A commits; G opens, and B locks the finished job and claims it.
    let script = std::fs::read_to_string(found.join("counterexample.sql")).unwrap();
    let got = crate::explore::replay_prepared(&db, &scenario, &[], "qb_inside", &script);
    assert!(got["A"].contains(&"1".to_string()) && got["A"].contains(&"changed:1".to_string()), "{got:?}\n{script}");
    assert!(got["B"].contains(&"1".to_string()), "B claims the job A deleted: {got:?}\n{script}");
    let left = std::process::Command::new("psql")
        .args([db.url.as_str(), "-XAtc", "SELECT count(*) FROM qb_inside.que_jobs"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&left.stdout).trim(), "0", "the job B claimed was gone already");

    // Whole statements only: the same bound finds nothing, and says so.
    let (code, stdout, stderr) = explore(&[&[file, "--whole-statements"][..], &bound[..]].concat());
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("a race inside one statement is out of its reach"), "{stdout}");

    // The fixed side (c95329c: the job looked up again under a fresh snapshot) holds.
    let (code, stdout, stderr) = explore(&[&[file, "--set", "adapter=fixed.toml"][..], &bound[..]].concat());
    assert_eq!(code, 0, "the fixed lock walk holds: {stdout}\n{stderr}");
    assert!(stdout.contains("no counterexample up to depth 10"), "{stdout}");
}

/// A one-job scenario in `dir` of the built-in SKIP LOCKED with a token fence, or of `adapter`.
fn ack_queue(dir: &std::path::Path, adapter: Option<&str>) -> std::path::PathBuf {
    let queue = match adapter {
        Some(a) => format!("adapter = \"{}\"\n", repo(&format!("tests/fixtures/ack-lost/{a}")).display()),
        None => String::new(),
    };
    let strategy = if adapter.is_none() { "strategy = \"skip-locked\"\n" } else { "" };
    let fence = if adapter.is_none() { "fencing = \"token\"\n" } else { "" };
    let text = format!(
        "name = \"ack-lost\"\n{queue}[jobs]\npreload = 1\n[workers]\ncount = 2\n{strategy}[lease]\nduration = \"30s\"\n{fence}"
    );
    let file = dir.join(format!("{}.toml", adapter.unwrap_or("skip-locked.toml").trim_end_matches(".toml")));
    std::fs::write(&file, text).unwrap();
    file
}

#[test]
fn a_lost_answer_runs_a_toggling_completion_twice_and_leaves_a_fenced_one_alone() {
    let db = ScratchDb::new("explore_ack");
    let dir = tempfile::tempdir().unwrap();
    let bound = ["--database-url", &db.url, "--crashes", "0", "--ticks", "0", "--depth", "8", "--time", "300"];
    let toggle = ack_queue(dir.path(), Some("toggle-complete.toml"));
    let (code, stdout, stderr) = explore(&[&[toggle.to_str().unwrap(), "--acks-lost", "1"][..], &bound[..]].concat());
    assert_eq!(code, 1, "the toggle puts the finished job back: {stdout}\n{stderr}");
    assert!(stdout.contains("completion_idempotent:"), "{stdout}");
    assert!(stdout.contains("and its answer is lost"), "the lost answer is a step: {stdout}");
    assert!(stdout.contains("after an acknowledgement whose outcome was unknown"), "explain's cause: {stdout}");
    assert!(stdout.contains("≤ 1 completion answer(s) lost"), "the last words name the fault: {stdout}");
    // Its schedule names the lost answer (`ack-lost`) and replays to the same check; without
    // `--acks-lost` that step cannot be taken, and the replay is refused.
    let schedule = stdout.split("--replay '…'): ").nth(1).and_then(|s| s.lines().next()).unwrap().to_string();
    assert!(schedule.contains(":ack-lost"), "{schedule}");
    let file = toggle.to_str().unwrap();
    let (code, again, stderr) = explore(&[&[file, "--acks-lost", "1", "--replay", &schedule][..], &bound[..]].concat());
    assert_eq!(code, 1, "{again}\n{stderr}");
    assert!(
        again.contains("completion_idempotent:") && again.contains(&format!("--replay '…'): {schedule}\n")),
        "{again}"
    );
    let (code, _, stderr) = explore(&[&[file, "--replay", &schedule][..], &bound[..]].concat());
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains(":ack-lost`, cannot be taken there"), "{stderr}");

    let fenced = ack_queue(dir.path(), None);
    let (code, stdout, stderr) = explore(&[&[fenced.to_str().unwrap(), "--acks-lost", "1"][..], &bound[..]].concat());
    assert_eq!(code, 0, "a completion sent again finds the job done: {stdout}\n{stderr}");
    assert!(stdout.contains("no counterexample up to depth 8"), "{stdout}");
    // Without the fault the toggle holds at the same bound: the answer lost is what breaks it.
    let (code, stdout, stderr) = explore(&[&[toggle.to_str().unwrap()][..], &bound[..]].concat());
    assert_eq!(code, 0, "{stdout}\n{stderr}");
}
