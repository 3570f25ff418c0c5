//! Flags and values refused at the boundary, beside `tests/bad_input.rs` and `tests/boundary.rs`: flags and environment that
//! were accepted or ignored without a word (compare's --out, sweep's --repeat, --log,
//! QUEUEBENCH_THREADS) and values echoed back in error messages (Rust type names, numbers
//! out of range, values 100,000 characters long). Each row of docs/safety.md's table these
//! cover names this file. None of them starts PostgreSQL.

use crate::common;
use common::bin;
use std::path::Path;

/// The binary with `args`: (exit code, stdout, stderr).
fn qb(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let o = bin().args(args).env_remove("DATABASE_URL").envs(env.iter().copied()).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

/// A summary.json `compare` accepts (a run of scenario `x` at 100 jobs/s).
fn summary(dir: &Path) -> String {
    let file = dir.join("summary.json");
    std::fs::write(&file, r#"{"schema_version": 1, "scenario": "x", "throughput": {"jobs_per_sec": 100}}"#).unwrap();
    file.to_string_lossy().into_owned()
}

fn names(dir: &Path) -> Vec<String> {
    let mut n: Vec<String> =
        std::fs::read_dir(dir).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    n.sort();
    n
}

#[test]
fn compare_out_into_a_folder_that_holds_something_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let s = summary(dir.path());
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    let (code, stdout, err) = qb(&["compare", &s, &s, "--out", out.to_str().unwrap()], &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&format!("--out {} refused: the folder is not empty (notes.txt)", out.display())), "{err}");
    assert!(err.contains("new or empty folder"), "{err}");
    assert!(stdout.is_empty(), "refused before comparing: {stdout}");
    assert_eq!(names(&out), ["notes.txt"], "nothing written into it");
    // A new folder (or an empty one) takes both files.
    let fresh = dir.path().join("fresh");
    let (code, _, err) = qb(&["compare", &s, &s, "--out", fresh.to_str().unwrap()], &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(names(&fresh), ["compare.json", "compare.md"]);
}

/// `compare --out` on a full disk (a tmpfs filled up first; root only, else skipped): exit 3
/// naming the file, and neither file left behind. Before, it warned and exited 0.
#[test]
fn compare_that_cannot_write_its_output_exits_3_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let s = summary(dir.path());
    let disk = tempfile::tempdir().unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=16k", "tmpfs"])
        .arg(disk.path())
        .output()
        .unwrap();
    if !mounted.status.success() {
        let why = format!("cannot mount a tmpfs here ({})", String::from_utf8_lossy(&mounted.stderr).trim());
        common::missing("tmpfs", &why);
        return;
    }
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(self.0).status();
        }
    }
    let _unmount = Unmount(disk.path());
    let out = disk.path().join("out");
    std::fs::create_dir(&out).unwrap();
    // Fill the disk: writes fail with ENOSPC from here on.
    let mut fill = std::fs::File::create(disk.path().join("fill")).unwrap();
    let _ = std::io::Write::write_all(&mut fill, &vec![0u8; 1 << 20]);
    let (code, _, err) = qb(&["compare", &s, &s, "--out", out.to_str().unwrap()], &[]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains(&format!("{}/compare.md was not written", out.display())), "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    assert!(names(&out).is_empty(), "nothing half-written: {:?}", names(&out));
}

/// The scenario does not exist: the flag must be refused first, and where it was accepted the
/// test ends at once on the missing file instead of running 1,000 repeats.
#[test]
fn sweep_repeat_is_capped_like_run_repeat() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("absent.toml");
    let file = file.to_str().unwrap();
    let out = dir.path().join("sweep");
    for command in ["run", "sweep"] {
        let (code, _, err) = qb(&[command, file, "--repeat", "1000", "--out", out.to_str().unwrap()], &[]);
        assert_eq!(code, 2, "{command}: {err}");
        assert!(err.contains("invalid value '1000' for '--repeat") && err.contains("1000 is not in 1..=100"), "{err}");
    }
    assert!(!out.exists(), "nothing created");
}

#[test]
fn a_log_file_that_cannot_be_written_is_an_error() {
    let file = common::repo("scenarios/skip-locked.toml");
    let file = file.to_str().unwrap();
    let (code, _, err) = qb(&["--log", "/dev/full", "validate", file], &[]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("cannot write the --log file /dev/full: No space left on device"), "{err}");
    let (code, _, err) = qb(&["--log", "/nonexistent/dir/qb.log", "validate", file], &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot write the --log file /nonexistent/dir/qb.log"), "{err}");
    // A writable one gets its first line at once.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("qb.log");
    let (code, _, err) = qb(&["--log", log.to_str().unwrap(), "validate", file], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::read_to_string(&log).unwrap().starts_with("queuebench "), "the first line names the program");
}

#[test]
fn queuebench_threads_that_is_not_a_thread_count_is_refused() {
    let file = common::repo("scenarios/skip-locked.toml");
    let file = file.to_str().unwrap();
    for bad in ["0", "abc", "-2"] {
        let (code, _, err) = qb(&["validate", file], &[("QUEUEBENCH_THREADS", bad)]);
        assert_eq!(code, 2, "{bad}: {err}");
        assert!(err.contains(&format!("QUEUEBENCH_THREADS={bad} is not accepted")), "{err}");
        assert!(err.contains("a whole number of at least 1"), "{err}");
    }
    let (code, _, err) = qb(&["validate", file], &[("QUEUEBENCH_THREADS", "2")]);
    assert_eq!(code, 0, "{err}");
}

/// `validate` on the text: exit 2 and the message, its file named `bad.toml` (the random
/// folder name could hold `u64`).
fn refused(text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    std::fs::write(&file, text).unwrap();
    let (code, _, err) = qb(&["validate", file.to_str().unwrap()], &[]);
    assert_eq!(code, 2, "{err}");
    err.replace(file.to_str().unwrap(), "bad.toml")
}

#[test]
fn numbers_out_of_range_are_told_in_words_with_their_key() {
    let err = refused("name = \"x\"\nseed = -1\n[jobs]\npreload = 5\n");
    assert!(
        err.contains("seed: invalid value: integer `-1`, expected a whole number from 0 to 18446744073709551615"),
        "{err}"
    );
    for text in [
        "name = \"x\"\nseed = 18446744073709551616\n[jobs]\npreload = 5\n",
        "name = \"x\"\n[jobs]\npreload = 99999999999999999999\n",
        "name = \"x\"\n[jobs]\npreload = 1e40\n",
        "name = \"x\"\n[jobs]\npreload = 1234567890123456789012345678901234567890\n",
    ] {
        let err = refused(text);
        for rust in ["i128", "i64", "u64", "u32", "overflowed"] {
            assert!(!err.contains(rust), "{text}: `{rust}` in {err}");
        }
        assert!(err.contains("whole number"), "{text}: {err}");
    }
}

#[test]
fn long_values_are_cut_in_errors() {
    let err = refused(&format!("name = \"x\"\n[jobs]\npreload = {}\n", "9".repeat(309)));
    assert!(err.contains('…') && !err.contains(&"9".repeat(61)) && err.len() < 1000, "{err}");
    let long = "a".repeat(100_000);
    let err = refused(&format!("name = \"x\"\n[jobs]\npreload = 5\n[workers]\nstrategy = \"{long}\"\n"));
    assert!(err.contains("unknown strategy") && err.contains("…(100000 characters)") && err.len() < 1000, "{err}");
    let err = refused(&format!("name = \"x\"\n[jobs]\npreload = 5\n[workers]\ncount = \"{long}\"\n"));
    assert!(err.contains("…(100000 characters)") && err.len() < 1000, "{err}");
    let file = common::repo("scenarios/skip-locked.toml");
    let set = format!("workers.strategy={long}");
    let (code, _, err) = qb(&["validate", file.to_str().unwrap(), "--set", &set], &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.len() < 1000, "{err}");
}
