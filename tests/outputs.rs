//! Outputs: a run never writes over a folder by accident (`--out` into one that holds
//! something is refused unless `--force`), its folder is named by its run id, and it is
//! whole or marked `INCOMPLETE`; a scenario name is a folder name; on a full disk the
//! verdict is still printed and the exit code is the verdict's (or 3 when summary.json itself
//! could not be written).

use crate::common;
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

/// A small tmpfs mounted for one test (root only); unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().ok()?;
        let o = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .ok()?;
        if !o.status.success() {
            let why = format!("cannot mount a tmpfs here ({})", String::from_utf8_lossy(&o.stderr).trim());
            common::missing("tmpfs", &why);
            return None;
        }
        Some(Tmpfs { dir })
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(self.dir.path()).status();
    }
}

/// A full disk: the verdict is printed, the exit code is the verdict's, one warning line per
/// reason (no Rust debug dumps), and what was not written is recorded.
#[test]
fn on_a_full_disk_the_verdict_is_printed_and_the_exit_code_is_the_verdicts() {
    let Some(fs) = Tmpfs::mount("64k") else { return };
    let out = fs.dir.path().join("run");
    // An expectation that fails: exit 1 is the verdict's, not the disk's.
    let (code, stdout, err) = run_into(&out, &["--expect", "jobs.completed == 1"]);
    assert_eq!(code, 1, "the verdict's exit code:\n{stdout}\n{err}");
    assert!(stdout.contains("skip-locked — FAILED"), "the verdict is printed:\n{stdout}");
    assert!(stdout.contains("FAIL jobs.completed == 1"), "{stdout}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["passed"], false, "summary.json holds the verdict");
    let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("warning:")).collect();
    assert!(!warnings.is_empty(), "{err}");
    assert!(warnings.len() <= 3, "one line per reason, not one per file:\n{err}");
    assert!(err.contains("No space left on device"), "{err}");
    for bad in ["Os {", "Custom {", "IoError(", "ImageError("] {
        assert!(!err.contains(bad), "a debug dump ({bad}) in:\n{err}");
    }
    let marker = std::fs::read_to_string(out.join("INCOMPLETE")).expect("an incomplete folder is marked");
    assert!(marker.contains(summary["run_id"].as_str().unwrap()), "{marker}");
    // Partly written files are removed, not left truncated.
    for e in std::fs::read_dir(&out).unwrap().flatten() {
        let len = e.metadata().unwrap().len();
        assert!(len > 0 || e.path().is_dir(), "{} left empty", e.path().display());
    }
}

/// No room even for summary.json: exit 3, saying so, with the verdict still printed.
#[test]
fn when_summary_json_cannot_be_written_the_verdict_is_printed_and_the_exit_is_3() {
    let Some(fs) = Tmpfs::mount("8k") else { return };
    let out = fs.dir.path().join("run");
    let (code, stdout, err) = run_into(&out, &[]);
    assert_eq!(code, 3, "{stdout}\n{err}");
    assert!(stdout.contains("skip-locked — PASSED"), "the verdict is printed:\n{stdout}");
    assert!(err.contains("the verdict above could not be saved"), "{err}");
    assert!(err.contains("summary.json was not written") && err.contains("No space left on device"), "{err}");
}
