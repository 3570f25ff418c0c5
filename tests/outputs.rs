//! Outputs: a run never writes over a folder by accident (`--out` into one that holds
//! something is refused unless `--force`), its folder is named by its run id, and it is
//! whole or marked `INCOMPLETE`; a scenario name is a folder name; on a full disk the
//! verdict is still printed and the exit code is the verdict's (or 3 when summary.json itself
//! could not be written).

mod common;
use common::{bin, repo};
use std::path::Path;
use std::process::Output;

const SMALL: [&str; 6] = ["--set", "jobs.preload=200", "--set", "workers.count=2", "--set", "expect={}"];

fn run_into(out: &Path, extra: &[&str]) -> (i32, String, String) {
    let tmp = tempfile::Builder::new().prefix("qbt").tempdir_in("/tmp").unwrap();
    let s = repo("scenarios/skip-locked.toml");
    let o: Output = bin()
        .args(["run", s.to_str().unwrap()])
        .args(SMALL)
        .args(extra)
        .arg("--out")
        .arg(out)
        .env("TMPDIR", tmp.path())
        .env_remove("DATABASE_URL")
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

#[test]
fn a_folder_that_holds_something_is_refused_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("mine");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("notes.txt"), "keep me").unwrap();
    let (code, _, err) = run_into(&out, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is not empty (notes.txt) and is not a queuebench run folder"), "{err}");
    assert!(err.contains("add --force"), "{err}");
    let names: Vec<_> = std::fs::read_dir(&out).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(names, ["notes.txt"], "nothing written into a refused folder");

    let (code, _, err) = run_into(&out, &["--force"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read_to_string(out.join("notes.txt")).unwrap(), "keep me");
    assert!(out.join("summary.json").exists());
    assert!(!out.join("INCOMPLETE").exists(), "a whole run folder has no INCOMPLETE marker");

    // Now it is a run folder: a second run into it is refused, naming the earlier run.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let (code, _, err) = run_into(&out, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&format!("holds the outputs of run {}", summary["run_id"].as_str().unwrap())), "{err}");
}

#[test]
fn the_default_folder_is_named_by_the_run_id() {
    let cwd = tempfile::tempdir().unwrap();
    let tmp = tempfile::Builder::new().prefix("qbt").tempdir_in("/tmp").unwrap();
    let s = repo("scenarios/skip-locked.toml");
    let o = bin()
        .args(["run", s.to_str().unwrap(), "--quiet"])
        .args(SMALL)
        .current_dir(cwd.path())
        .env("TMPDIR", tmp.path())
        .env_remove("DATABASE_URL")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let runs: Vec<_> =
        std::fs::read_dir(cwd.path().join("results/skip-locked")).unwrap().flatten().map(|e| e.path()).collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(runs[0].join("summary.json")).unwrap()).unwrap();
    assert_eq!(runs[0].file_name().unwrap().to_str().unwrap(), summary["run_id"].as_str().unwrap());
}

#[test]
fn a_scenario_name_that_is_not_a_folder_name_is_refused() {
    for bad in ["../up", "a/b", ".", "..", "two words", "tab\there", "-flag"] {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("bad.toml");
        std::fs::write(&f, format!("name = {bad:?}\n[jobs]\npreload = 5\n")).unwrap();
        let o = bin().args(["validate", f.to_str().unwrap()]).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {err}");
        assert!(err.contains("bad.toml:1: name:"), "{bad:?}: names file, line and key: {err}");
        assert!(err.contains("use 1 to 64 ASCII letters, digits, - and _"), "{bad:?}: {err}");
    }
}
