//! Signals to the harness mid-run leave no postgres process of its cluster
//! and no cluster directory: SIGTERM (orderly, like the first Ctrl-C: the
//! summary says interrupted), SIGINT twice (exit at once: no summary, the
//! cluster killed and removed), SIGKILL (the harness cannot clean up: the
//! postmaster dies by PR_SET_PDEATHSIG, the next start names the dir, `clean` removes it).

use crate::common;
use common::pg::{all_stderr, signal, spawn_watched, wait_for_progress};
use common::{bin, postgres_processes_under, repo};
use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

/// A run that would go on for minutes, with its own TMPDIR (the cluster's directory goes there).
pub(crate) fn start(tmp: &Path, out: &Path) -> (Child, std::sync::Arc<std::sync::Mutex<String>>) {
    let s = repo("scenarios/skip-locked.toml");
    let mut cmd = bin();
    cmd.args(["run", s.to_str().unwrap(), "--set", "run.stop=5m", "--set", "workers.work=20ms"])
        .args(["--set", "jobs.preload=2000", "--set", "workers.count=4", "--out"])
        .arg(out)
        .env("TMPDIR", tmp)
        .env_remove("DATABASE_URL");
    let (child, rx, stderr) = spawn_watched(cmd);
    wait_for_progress(&rx, &stderr);
    assert_eq!(cluster_dirs(tmp).len(), 1, "the run's cluster lives in TMPDIR");
    assert!(!postgres_processes_under(tmp).is_empty(), "its postgres runs");
    (child, stderr)
}

pub(crate) fn cluster_dirs(tmp: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(tmp).unwrap().flatten().map(|e| e.path()).collect()
}

/// Polls until no postgres process of the cluster is left (the kernel needs a moment after a kill).
pub(crate) fn assert_no_postgres(tmp: &Path, what: &str) {
    let until = Instant::now() + Duration::from_secs(15);
    while !postgres_processes_under(tmp).is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(postgres_processes_under(tmp), Vec::<u32>::new(), "{what}: postgres processes left");
}

pub(crate) fn interrupted(out: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(out.join("summary.json")).expect("summary.json written");
    let summary: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(summary["interrupted"], true);
    assert_eq!(summary["passed"], false);
    summary
}

#[test]
fn sigterm_writes_the_evidence_marked_interrupted_and_removes_the_cluster() {
    let tmp = tempfile::Builder::new().prefix("qbt").tempdir_in("/tmp").unwrap();
    let out = tempfile::tempdir().unwrap();
    let (mut child, stderr) = start(tmp.path(), &out.path().join("run"));
    signal(&child, libc::SIGTERM);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{}", stderr.lock().unwrap());
    let summary = interrupted(&out.path().join("run"));
    assert!(summary["executions"]["total"].as_u64().unwrap() > 0);
    assert!(!out.path().join("run/INCOMPLETE").exists(), "an orderly stop writes the folder whole");
    let text = all_stderr(&stderr);
    assert!(text.contains("interrupted by SIGTERM: stopping workers"), "the message names SIGTERM:\n{text}");
    assert!(text.contains("(SIGTERM again (or Ctrl-C) to quit at once)"), "{text}");
    assert!(!text.contains("Ctrl-C again"), "{text}");
    assert_no_postgres(tmp.path(), "SIGTERM");
    assert_eq!(cluster_dirs(tmp.path()), Vec::<std::path::PathBuf>::new(), "SIGTERM: cluster directory left");
}

#[test]
fn a_second_sigint_exits_at_once_and_still_removes_the_cluster() {
    let tmp = tempfile::Builder::new().prefix("qbt").tempdir_in("/tmp").unwrap();
    let out = tempfile::tempdir().unwrap();
    let (mut child, stderr) = start(tmp.path(), &out.path().join("run"));
    signal(&child, libc::SIGINT);
    // Send the second only once the first is seen (two signals before the handler looks would be
    // one), while the orderly stop (workers, checkers, charts) is still going.
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while !stderr.lock().unwrap().contains("interrupted by Ctrl-C (SIGINT): stopping workers")
        && std::time::Instant::now() < until
    {
        std::thread::sleep(Duration::from_millis(2));
    }
    signal(&child, libc::SIGINT);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{}", stderr.lock().unwrap());
    assert_no_postgres(tmp.path(), "SIGINT twice");
    assert_eq!(cluster_dirs(tmp.path()), Vec::<std::path::PathBuf>::new(), "SIGINT twice: cluster directory left");
    let text = all_stderr(&stderr);
    assert!(
        text.contains("Ctrl-C (SIGINT) again: exiting now"),
        "the second Ctrl-C did not cut the stop short:\n{text}"
    );
    assert!(!out.path().join("run/summary.json").exists(), "exiting at once writes no summary");
    // Either the run's fresh folder went with the failed stop (nothing was in it), or it is marked.
    let dir = out.path().join("run");
    assert!(!dir.exists() || dir.join("INCOMPLETE").exists(), "a folder left unmarked");
}

#[test]
fn sigkill_stops_the_postmaster_by_pdeathsig_and_the_next_start_removes_the_dir() {
    let tmp = tempfile::Builder::new().prefix("qbt").tempdir_in("/tmp").unwrap();
    let out = tempfile::tempdir().unwrap();
    let (mut child, _stderr) = start(tmp.path(), &out.path().join("run"));
    signal(&child, libc::SIGKILL);
    child.wait().unwrap();
    assert_no_postgres(tmp.path(), "SIGKILL");
    let left = cluster_dirs(tmp.path());
    assert_eq!(left.len(), 1, "a SIGKILLed harness cannot remove its directory");
    assert!(!out.path().join("run/summary.json").exists(), "a SIGKILLed harness writes no summary");
    let marker = std::fs::read_to_string(out.path().join("run/INCOMPLETE")).expect("the folder is marked INCOMPLETE");
    assert!(marker.contains("has not finished writing this folder"), "{marker}");
    // The next cluster start names the directory of a harness that is gone; `clean` removes it.
    let o = bin().args(["cluster", "--", "true"]).env("TMPDIR", tmp.path()).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("`queuebench clean` lists and removes them"), "{err}");
    assert_eq!(cluster_dirs(tmp.path()), left, "the next start leaves it to clean");
    let o = bin().args(["clean", "--yes"]).env("TMPDIR", tmp.path()).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(cluster_dirs(tmp.path()), Vec::<std::path::PathBuf>::new(), "clean removed {left:?}");
}
