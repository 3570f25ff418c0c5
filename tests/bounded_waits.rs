//! Every wait bounded (docs/safety.md, "Every wait bounded"): a claim stuck in the server
//! (`pg_sleep(100)`, tests/fixtures/bounded/stuck-claim.toml) is ended by `run.timeout` and by
//! SIGTERM, with its backends gone; `validate --timeout` bounds the smoke cycle; SIGHUP cleans
//! up like SIGTERM; `cluster -- CMD` passes SIGTERM to CMD and leaves no orphan. The bounds are
//! generous (10–30 s past the moment the command was told to stop): a hang is 100 s or forever.

use crate::common;
use crate::interrupt::{assert_no_postgres, cluster_dirs, interrupted, start};
use common::pg::{ScratchDb, all_stderr, rand_u32, signal, spawn_watched};
use common::{bin, processes_with, repo};
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

fn stuck_claim() -> String {
    repo("tests/fixtures/bounded/stuck-claim.toml").to_string_lossy().into_owned()
}

/// The child's exit, at most `secs` from now; past that it is killed and the test fails.
fn exit_within(child: &mut Child, secs: u64, what: &str) -> ExitStatus {
    let until = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running {secs} s later (killed)");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The run's statements still sleeping in the server (its connections carry
/// `application_name = 'queuebench <schema>'`).
fn sleeping(db: &ScratchDb, schema: &str) -> u64 {
    let sql = format!(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'queuebench {schema}' \
         AND query LIKE '%pg_sleep%' AND state <> 'idle'"
    );
    db.sql(&sql).trim().parse().unwrap()
}

/// Waits (up to 60 s) until the run's claims are sleeping in the server.
fn wait_until_stuck(db: &ScratchDb, schema: &str, stderr: &std::sync::Mutex<String>) {
    let until = Instant::now() + Duration::from_secs(60);
    while sleeping(db, schema) == 0 {
        assert!(Instant::now() < until, "the claims never reached pg_sleep:\n{}", stderr.lock().unwrap());
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `queuebench run` of the stuck claim in URL mode, in schema `schema` of `db`.
fn url_run(db: &ScratchDb, schema: &str, out: &std::path::Path, timeout: &str) -> std::process::Command {
    let mut cmd = bin();
    cmd.args(["run", &stuck_claim(), "--database-url", &db.url, "--schema", schema, "--set"])
        .arg(format!("run.timeout={timeout}"))
        .arg("--out")
        .arg(out)
        .env_remove("DATABASE_URL");
    cmd
}

#[test]
fn run_timeout_ends_a_run_whose_claims_are_stuck_in_the_server() {
    timeout_ends_stuck_claims("stuck", &[]);
}

#[test]
fn run_timeout_ends_a_pooled_run_whose_claims_are_stuck_in_the_server() {
    timeout_ends_stuck_claims("stuckpool", &["--set", "workers.pool={size=2}"]);
}

/// The stuck claim with `run.timeout = 3s` (and `extra` flags): over in 20 s, nothing left sleeping.
fn timeout_ends_stuck_claims(tag: &str, extra: &[&str]) {
    let db = ScratchDb::new(tag);
    let schema = format!("qb_{tag}_{:08x}", rand_u32());
    let out = tempfile::tempdir().unwrap();
    let mut cmd = url_run(&db, &schema, &out.path().join("run"), "3s");
    cmd.args(extra);
    let (mut child, _rx, stderr) = spawn_watched(cmd);
    wait_until_stuck(&db, &schema, &stderr);
    // run.timeout is 3 s; the claims sleep 100 s.
    let status = exit_within(&mut child, 20, "a run whose claims sleep 100 s, with run.timeout = 3s");
    let text = all_stderr(&stderr);
    assert_eq!(status.code(), Some(1), "a timed-out run fails its checks:\n{text}");
    assert!(text.contains("still running in the server 2 s after the run stopped: cancelled"), "{text}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("run/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["timed_out"], true, "{text}");
    assert_eq!(sleeping(&db, &schema), 0, "a backend of the run still sleeps after it ended");
    assert_eq!(db.harness_schemas(&schema), "", "the run's schema is dropped");
}

#[test]
fn sigterm_ends_a_run_whose_claims_are_stuck_in_the_server() {
    let db = ScratchDb::new("stuckterm");
    let schema = format!("qb_stuckterm_{:08x}", rand_u32());
    let out = tempfile::tempdir().unwrap();
    let (mut child, _rx, stderr) = spawn_watched(url_run(&db, &schema, &out.path().join("run"), "5m"));
    wait_until_stuck(&db, &schema, &stderr);
    signal(&child, libc::SIGTERM);
    let status = exit_within(&mut child, 20, "SIGTERM to a run whose claims sleep 100 s");
    let text = all_stderr(&stderr);
    assert_eq!(status.code(), Some(130), "{text}");
    interrupted(&out.path().join("run"));
    assert_eq!(sleeping(&db, &schema), 0, "a backend of the run still sleeps after SIGTERM");
    assert_eq!(db.harness_schemas(&schema), "", "the run's schema is dropped");
}

#[test]
fn sighup_writes_the_evidence_marked_interrupted_and_removes_the_cluster() {
    let tmp = tempfile::Builder::new().prefix("qbt").tempdir_in("/tmp").unwrap();
    let out = tempfile::tempdir().unwrap();
    let (mut child, stderr) = start(tmp.path(), &out.path().join("run"));
    signal(&child, libc::SIGHUP);
    let status = exit_within(&mut child, 30, "SIGHUP to a run");
    let text = all_stderr(&stderr);
    assert_eq!(status.code(), Some(130), "SIGHUP ends the run in order (exit 130), not by its default action:\n{text}");
    assert!(text.contains("interrupted by SIGHUP: stopping workers"), "{text}");
    interrupted(&out.path().join("run"));
    assert!(!out.path().join("run/INCOMPLETE").exists(), "an orderly stop writes the folder whole");
    assert_no_postgres(tmp.path(), "SIGHUP");
    assert_eq!(cluster_dirs(tmp.path()), Vec::<std::path::PathBuf>::new(), "SIGHUP: cluster directory left");
}

/// The `sleep NAP` processes (not queuebench, whose command line holds the same words).
fn sleeps(nap: &str) -> Vec<u32> {
    let comm = |pid: &u32| std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    processes_with(&["sleep", nap]).into_iter().filter(|p| comm(p).trim() == "sleep").collect()
}

#[test]
fn cluster_passes_sigterm_to_its_command_and_leaves_no_orphan() {
    let tmp = tempfile::Builder::new().prefix("qbt").tempdir_in("/tmp").unwrap();
    // A duration no other process on the machine sleeps for, to find this one.
    let nap = format!("300.{:08}", rand_u32() % 100_000_000);
    let mut child = bin()
        .args(["cluster", "--", "sleep", &nap])
        .env("TMPDIR", tmp.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(60);
    while sleeps(&nap).is_empty() {
        assert!(Instant::now() < until, "`sleep {nap}` never started under `queuebench cluster`");
        std::thread::sleep(Duration::from_millis(50));
    }
    signal(&child, libc::SIGTERM);
    let status = exit_within(&mut child, 20, "SIGTERM to `queuebench cluster -- sleep`");
    assert_eq!(status.code(), Some(130));
    assert_eq!(sleeps(&nap), Vec::<u32>::new(), "`sleep {nap}` outlived its cluster");
    assert_no_postgres(tmp.path(), "cluster -- sleep under SIGTERM");
    assert_eq!(cluster_dirs(tmp.path()), Vec::<std::path::PathBuf>::new(), "the cluster's directory is left");
}

#[test]
fn validate_of_a_claim_stuck_in_the_server_is_bounded_by_its_timeout() {
    let db = ScratchDb::new("stuckvalidate");
    let mut child = bin()
        .args(["validate", &stuck_claim(), "--timeout", "3s", "--database-url", &db.url])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let status = exit_within(&mut child, 30, "validate of a claim that sleeps 100 s, --timeout 3s");
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(err.contains("did not finish within 3s (validate --timeout)"), "{err}");
    let left = db.sql("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE '%FROM pg_sleep(100)%' AND state <> 'idle' AND pid <> pg_backend_pid()");
    assert_eq!(left.trim(), "0", "validate left its claim sleeping in the server");
    assert_eq!(db.harness_schemas(""), "", "validate's scratch schema is dropped");
}

#[test]
fn a_closed_terminal_ends_the_run_in_order() {
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::os::unix::process::CommandExt;
    let tmp = tempfile::Builder::new().prefix("qbt").tempdir_in("/tmp").unwrap();
    let out = tempfile::tempdir().unwrap();
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty fills two descriptors, owned below.
    let opened =
        unsafe { libc::openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), std::ptr::null()) };
    assert_eq!(opened, 0, "openpty");
    for fd in [master, slave] {
        // SAFETY: fcntl on the descriptors just opened: the child must not hold the master (it
        // would keep the terminal open).
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    // SAFETY: both descriptors were just opened and are owned once each.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let s = repo("scenarios/skip-locked.toml");
    let mut cmd = bin();
    cmd.args(["run", s.to_str().unwrap(), "--set", "run.stop=5m", "--set", "workers.work=20ms", "--out"])
        .arg(out.path().join("run"))
        .env("TMPDIR", tmp.path())
        .env_remove("DATABASE_URL")
        .stdin(slave.try_clone().unwrap())
        .stdout(slave.try_clone().unwrap())
        .stderr(slave.try_clone().unwrap());
    // SAFETY: setsid and ioctl between fork and exec: the terminal becomes the child's own,
    // so its hangup sends the child SIGHUP, as a closed terminal window does.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            libc::ioctl(0, libc::TIOCSCTTY, 0);
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    drop(slave);
    // The terminal is read (so the run never blocks writing to it) without blocking, until it
    // is closed.
    let master = std::fs::File::from(master);
    // SAFETY: fcntl on a descriptor owned by `master`.
    unsafe { libc::fcntl(std::os::fd::AsRawFd::as_raw_fd(&master), libc::F_SETFL, libc::O_NONBLOCK) };
    let drain = || while std::io::Read::read(&mut &master, &mut [0u8; 4096]).is_ok_and(|n| n > 0) {};
    let until = Instant::now() + Duration::from_secs(60);
    while cluster_dirs(tmp.path()).is_empty() || !out.path().join("run").exists() {
        assert!(Instant::now() < until, "the run never started");
        drain();
        std::thread::sleep(Duration::from_millis(100));
    }
    for _ in 0..30 {
        drain();
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(master);
    let status = exit_within(&mut child, 30, "a run whose terminal closed");
    assert_eq!(status.code(), Some(130), "a hung-up terminal ends the run in order, without a panic on its writes");
    interrupted(&out.path().join("run"));
    assert_no_postgres(tmp.path(), "closed terminal");
    assert_eq!(cluster_dirs(tmp.path()), Vec::<std::path::PathBuf>::new(), "closed terminal: cluster directory left");
}

#[test]
fn explore_ends_at_the_first_sigterm_and_removes_its_cluster() {
    let tmp = tempfile::Builder::new().prefix("qbt").tempdir_in("/tmp").unwrap();
    let s = repo("scenarios/naive-duplicates.toml");
    let mut cmd = bin();
    cmd.args(["explore", s.to_str().unwrap(), "--time", "300", "--depth", "30"])
        .env("TMPDIR", tmp.path())
        .env_remove("DATABASE_URL");
    let (mut child, _rx, stderr) = spawn_watched(cmd);
    let until = Instant::now() + Duration::from_secs(60);
    while cluster_dirs(tmp.path()).is_empty() {
        assert!(Instant::now() < until, "explore never started its cluster:\n{}", stderr.lock().unwrap());
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(2));
    signal(&child, libc::SIGTERM);
    let status = exit_within(&mut child, 20, "SIGTERM to explore");
    let text = all_stderr(&stderr);
    assert_eq!(status.code(), Some(130), "{text}");
    assert!(text.contains("interrupted by SIGTERM: stopping and cleaning up"), "{text}");
    assert_no_postgres(tmp.path(), "explore under SIGTERM");
    assert_eq!(cluster_dirs(tmp.path()), Vec::<std::path::PathBuf>::new(), "explore's cluster directory is left");
}

#[test]
fn sigterm_ends_validate_whose_claim_is_stuck_and_drops_its_schema() {
    let db = ScratchDb::new("stuckvalterm");
    let mut cmd = bin();
    cmd.args(["validate", &stuck_claim(), "--timeout", "5m", "--database-url", &db.url]);
    let (mut child, _rx, stderr) = spawn_watched(cmd);
    let stuck = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
                 AND query LIKE '%FROM pg_sleep(100)%' AND state <> 'idle' AND pid <> pg_backend_pid()";
    let until = Instant::now() + Duration::from_secs(60);
    while db.sql(stuck).trim() == "0" {
        assert!(Instant::now() < until, "validate's claim never reached pg_sleep:\n{}", stderr.lock().unwrap());
        std::thread::sleep(Duration::from_millis(100));
    }
    signal(&child, libc::SIGTERM);
    let status = exit_within(&mut child, 20, "SIGTERM to validate whose claim sleeps 100 s");
    let text = all_stderr(&stderr);
    assert_eq!(status.code(), Some(130), "{text}");
    assert_eq!(db.sql(stuck).trim(), "0", "validate left its claim sleeping in the server:\n{text}");
    assert_eq!(db.harness_schemas(""), "", "validate's scratch schema is dropped:\n{text}");
}
