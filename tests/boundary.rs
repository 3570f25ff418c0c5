//! Safe at the boundary: nothing of the user's is dropped, exposed or overwritten, and a
//! refusal creates nothing. Each test here failed before the fix it covers (docs/safety.md,
//! "Refusals"): an endless input, a scenario that opens the trust-auth cluster to the network,
//! validate leaving an adapter's writes behind, report writing through a symlink, check
//! blaming `run.history = false` for a deleted history, and refusals leaving empty folders.
//! (`clean`'s look-alike schemas: tests/clean.rs.)

use crate::common;
use common::pg::ScratchDb;
use common::{bin, queuebench, repo, small_run};
use std::path::Path;
use std::time::{Duration, Instant};

fn text(o: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// Runs `cmd` to its end; its output (stdout then stderr) and its peak resident memory in KiB
/// (wait4(2)'s rusage).
#[allow(clippy::zombie_processes)] // reaped by wait4 below, which also gives its rusage
fn run_measured(cmd: &mut std::process::Command) -> (i32, String, i64) {
    let out = tempfile::NamedTempFile::new().unwrap();
    let child = cmd.stdout(out.reopen().unwrap()).stderr(out.reopen().unwrap()).spawn().unwrap();
    let mut status = 0;
    // SAFETY: wait4 on our own child, into values we own.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32);
    let code = if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { -1 };
    (code, std::fs::read_to_string(out.path()).unwrap(), usage.ru_maxrss)
}

#[test]
fn an_endless_scenario_adapter_or_baseline_is_refused_without_reading_it_all() {
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    // A scenario larger than the limit (a sparse file: nothing is really stored).
    let big = dir.path().join("big.toml");
    std::fs::File::create(&big).unwrap().set_len(64 << 20).unwrap();
    for cmd in ["validate", "run"] {
        let (code, t, peak_kib) = run_measured(bin().args([cmd, big.to_str().unwrap()]).env_remove("DATABASE_URL"));
        assert_eq!(code, 2, "{t}");
        assert!(t.contains("big.toml") && t.contains("larger than") && t.contains("1 MiB"), "{t}");
        assert!(peak_kib < 512 * 1024, "{cmd} big.toml grew to {peak_kib} KiB");
        // A file that never ends is a device, refused before a byte is read (tests/echo_refusals.rs).
        let (code, t, _) = run_measured(bin().args([cmd, "/dev/zero"]).env_remove("DATABASE_URL"));
        assert_eq!(code, 2, "{t}");
        assert!(t.contains("/dev/zero: is a character device, not a regular file"), "{t}");
    }
    // An adapter file that never ends.
    let s = dir.path().join("s.toml");
    std::fs::write(&s, "name = \"s\"\nadapter = \"/dev/zero\"\n[jobs]\npreload = 1\n").unwrap();
    let o = bin().args(["validate", s.to_str().unwrap()]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("is a character device"), "{}", text(&o));
    // A summary larger than any queuebench writes (a sparse file: nothing is really stored).
    let huge = dir.path().join("summary.json");
    std::fs::File::create(&huge).unwrap().set_len(300 << 20).unwrap();
    let (code, t, peak_kib) = run_measured(bin().args(["compare", huge.to_str().unwrap(), huge.to_str().unwrap()]));
    assert_eq!(code, 2, "{t}");
    assert!(t.contains("larger than") && t.contains("256 MiB"), "{t}");
    assert!(peak_kib < 512 * 1024, "compare grew to {peak_kib} KiB");
    // A baseline or summary that never ends is no file at all: refused without a read.
    let o = bin().args(["compare", "/dev/zero", "/dev/zero"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(started.elapsed() < Duration::from_secs(120));
}

#[test]
fn a_scenario_cannot_open_the_ephemeral_cluster_to_the_network() {
    let s = repo("scenarios/skip-locked.toml");
    for (key, value) in [
        ("listen_addresses", "'*'"),
        ("LISTEN_ADDRESSES", "'0.0.0.0'"),
        ("hba_file", "'/tmp/any'"),
        ("unix_socket_permissions", "'0777'"),
        ("port", "5999"),
    ] {
        let set = format!("postgres.settings.{key}={value}");
        let cwd = tempfile::tempdir().unwrap();
        for cmd in ["validate", "run"] {
            let o = bin().args([cmd, s.to_str().unwrap(), "--set", &set]).current_dir(cwd.path()).output().unwrap();
            assert_eq!(o.status.code(), Some(2), "{cmd} {set}: {}", text(&o));
            let t = text(&o);
            assert!(t.contains(&format!("postgres.settings.{key}")) && t.contains("--database-url"), "{t}");
        }
        assert!(std::fs::read_dir(cwd.path()).unwrap().next().is_none(), "a refusal created nothing");
    }
}

#[test]
fn validate_with_a_url_leaves_nothing_of_an_adapters_setup_behind() {
    let db = ScratchDb::new("vleak");
    let dir = tempfile::tempdir().unwrap();
    let adapter = std::fs::read_to_string(repo("adapters/pgmq.toml")).unwrap();
    let leaky = adapter.replacen(
        "setup = \"\"\"",
        "setup = \"\"\"\nCREATE TABLE public.qb_leak (x int);\nINSERT INTO public.qb_leak VALUES (1);",
        1,
    );
    assert_ne!(leaky, adapter);
    std::fs::write(dir.path().join("leaky.toml"), leaky).unwrap();
    let s = dir.path().join("s.toml");
    std::fs::write(&s, "name = \"s\"\nadapter = \"leaky.toml\"\n[jobs]\npreload = 10\n").unwrap();
    let o = bin().args(["validate", s.to_str().unwrap(), "--database-url", &db.url]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(db.sql("SELECT count(*) FROM pg_tables WHERE tablename = 'qb_leak'").trim(), "0");
    assert_eq!(db.harness_schemas(""), "", "the scratch schema is gone");

    // A setup that commits on its own is named: validate cannot undo what it committed.
    let committing = adapter.replacen("setup = \"\"\"", "setup = \"\"\"\nCOMMIT;", 1);
    std::fs::write(dir.path().join("leaky.toml"), committing).unwrap();
    let o = bin().args(["validate", s.to_str().unwrap(), "--database-url", &db.url]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("ends the transaction"), "{}", text(&o));
    assert_eq!(db.harness_schemas(""), "");
}

#[test]
fn report_and_check_read_a_run_folder_as_untrusted_input() {
    let r = small_run();
    let dir = &r.out;
    // A symlinked report.html and a symlinked charts folder: report writes through neither.
    let outside = tempfile::tempdir().unwrap();
    let precious = outside.path().join("precious.html");
    std::fs::write(&precious, "the user's file").unwrap();
    std::fs::remove_file(dir.join("report.html")).unwrap();
    std::os::unix::fs::symlink(&precious, dir.join("report.html")).unwrap();
    std::fs::remove_dir_all(dir.join("charts")).unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.join("charts")).unwrap();
    let o = bin().arg("report").arg(dir).output().unwrap();
    let t = text(&o);
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "the user's file", "{t}");
    let names: Vec<String> =
        std::fs::read_dir(outside.path()).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into()).collect();
    assert_eq!(names, ["precious.html"], "{t}");
    let meta = std::fs::symlink_metadata(dir.join("report.html")).unwrap();
    assert!(meta.file_type().is_file(), "report.html is a file of its own again: {t}");
    assert!(t.contains("symbolic link"), "{t}");

    // A deleted history is named as deleted, not blamed on `run.history = false`.
    std::fs::remove_file(dir.join("history.csv.gz")).unwrap();
    let o = bin().arg("check").arg(dir).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("history.csv.gz is missing") && t.contains("deleted"), "{t}");
    assert!(!t.contains("kept no history"), "{t}");
}

#[test]
fn check_says_a_run_kept_no_history_only_when_it_did_not() {
    let s = repo("scenarios/skip-locked.toml");
    let r =
        queuebench(&["run", s.to_str().unwrap(), "--set", "jobs.preload=100", "--set", "run.history=false", "--quiet"]);
    assert!(matches!(r.code, 0 | 1), "{}", r.stderr);
    let o = bin().arg("check").arg(&r.out).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("kept no history"), "{}", text(&o));
}

fn empty(dir: &Path) -> bool {
    std::fs::read_dir(dir).unwrap().next().is_none()
}

#[test]
fn refusals_create_no_results_folder() {
    let db = ScratchDb::new("nofolder");
    db.sql("CREATE SCHEMA qb_foreign; CREATE TABLE qb_foreign.jobs (id int)");
    let s = repo("scenarios/skip-locked.toml");
    let s = s.to_str().unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["run", s, "--database-url", &db.url, "--schema", "public"],
        vec!["run", s, "--database-url", &db.url, "--schema", "information_schema"],
        vec!["run", s, "--database-url", &db.url, "--schema", "qb_foreign", "--reuse"],
        vec!["run", s, "--database-url", "postgres://no_such_role_qb@127.0.0.1:5432/postgres"],
        vec![
            "sweep",
            s,
            "--grid",
            "workers.count=1,2",
            "--database-url",
            "postgres://no_such_role_qb@127.0.0.1:5432/postgres",
        ],
    ];
    for args in cases {
        let cwd = tempfile::tempdir().unwrap();
        let o = bin().args(&args).current_dir(cwd.path()).env_remove("DATABASE_URL").output().unwrap();
        assert!(matches!(o.status.code(), Some(2 | 3)), "{args:?}: {}", text(&o));
        assert!(
            empty(cwd.path()),
            "{args:?} left {:?}",
            std::fs::read_dir(cwd.path()).unwrap().flatten().map(|e| e.path()).collect::<Vec<_>>()
        );
    }
    assert_eq!(db.sql("SELECT count(*) FROM qb_foreign.jobs").trim(), "0", "the foreign table is untouched");
}

/// A run folder is self-contained: moved elsewhere (as a CI artifact is downloaded), `check`,
/// `explain` and `report` work on it, and no file in it names the folder where it was made.
/// (The ephemeral cluster's folder is named in summary.json and environment.json as where the
/// run happened: informational, never read back.)
#[test]
fn a_run_folder_moved_elsewhere_still_checks_explains_and_reports() {
    let r = small_run();
    let made_in = r.out.to_string_lossy().to_string();
    let elsewhere = tempfile::tempdir().unwrap();
    let moved = elsewhere.path().join("downloaded-artifact");
    // Not a rename across folders of one tree: copy, then remove the original.
    let o = std::process::Command::new("cp").arg("-r").arg(&r.out).arg(&moved).output().unwrap();
    assert!(o.status.success());
    std::fs::remove_dir_all(&r.out).unwrap();
    for entry in walk(&moved) {
        let bytes = std::fs::read(&entry).unwrap();
        let text = if entry.extension().is_some_and(|e| e == "gz") {
            let mut out = String::new();
            use std::io::Read;
            flate2::read::GzDecoder::new(bytes.as_slice()).read_to_string(&mut out).unwrap();
            out
        } else {
            String::from_utf8_lossy(&bytes).into_owned()
        };
        assert!(!text.contains(&made_in), "{} names the folder the run was made in", entry.display());
    }
    let o = bin().args(["check", "--json"]).arg(&moved).output().unwrap();
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["agrees_with_run"], true);
    let o = bin().arg("explain").arg(&moved).args(["--job", "1"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("job 1"), "{}", text(&o));
    let o = bin().arg("report").arg(&moved).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(moved.join("report.html").is_file());
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() { out.extend(walk(&p)) } else { out.push(p) }
    }
    out
}
