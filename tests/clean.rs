//! `queuebench clean`: lists and removes what earlier runs left (cluster folders whose harness
//! is gone, with their size; `queuebench_<run id>` schemas no live run uses), asks first on a
//! terminal, removes with `--yes`, and without either only lists and says so. A live run's
//! folder and schema, and anything not queuebench's, are left alone. Runs point to `clean`
//! when they find leftovers.

use crate::common;
use common::pg::{ScratchDb, signal, spawn_watched, wait_for_progress};
use common::{bin, repo};
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};

fn clean(tmp: &Path, extra: &[&str]) -> Output {
    bin().arg("clean").args(extra).env("TMPDIR", tmp).env_remove("DATABASE_URL").stdin(Stdio::null()).output().unwrap()
}

fn dirs(tmp: &Path) -> Vec<PathBuf> {
    let mut d: Vec<PathBuf> = std::fs::read_dir(tmp).unwrap().flatten().map(|e| e.path()).collect();
    d.sort();
    d
}

/// A long run with its cluster in `tmp`, past its first progress line.
fn long_run(tmp: &Path, out: &Path) -> Child {
    let s = repo("scenarios/skip-locked.toml");
    let mut cmd = bin();
    cmd.args(["run", s.to_str().unwrap(), "--set", "run.stop=5m", "--set", "workers.work=20ms", "--out"])
        .arg(out)
        .env("TMPDIR", tmp)
        .env_remove("DATABASE_URL");
    let (child, rx, stderr) = spawn_watched(cmd);
    wait_for_progress(&rx, &stderr);
    child
}

#[test]
fn clean_removes_the_folders_of_killed_runs_and_leaves_a_live_one() {
    let tmp = tempfile::Builder::new().prefix("qbc").tempdir_in("/tmp").unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut killed = long_run(tmp.path(), &out.path().join("a"));
    signal(&killed, libc::SIGKILL);
    killed.wait().unwrap();
    let left = dirs(tmp.path());
    assert_eq!(left.len(), 1);
    std::thread::sleep(std::time::Duration::from_millis(500)); // its postmaster exits by PDEATHSIG

    // A later run says so in one line, points to clean, and removes nothing itself.
    let o = bin().args(["cluster", "--", "true"]).env("TMPDIR", tmp.path()).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("note: 1 cluster folder of earlier queuebench runs") && err.contains("`queuebench clean`"),
        "{err}"
    );
    assert_eq!(dirs(tmp.path()), left, "a run does not remove leftovers silently");

    let mut live = long_run(tmp.path(), &out.path().join("b"));
    let with_live = dirs(tmp.path());
    assert_eq!(with_live.len(), 2);

    // No terminal, no --yes: listed (with the size), not removed.
    let o = clean(tmp.path(), &[]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(text.contains(&format!("cluster folder {} (", left[0].display())) && text.contains(" MB;"), "{text}");
    assert!(text.contains("not removed: no terminal to ask on") && text.contains("--yes"), "{text}");
    assert_eq!(text.matches("cluster folder /").count(), 1, "the live run's folder is not listed:\n{text}");
    assert_eq!(dirs(tmp.path()), with_live);

    let o = clean(tmp.path(), &["--yes"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(text.contains(&format!("removed {}", left[0].display())), "{text}");
    let now = dirs(tmp.path());
    assert_eq!(now.len(), 1, "{now:?}");
    assert!(!now.contains(&left[0]) && with_live.contains(&now[0]), "the live run's folder stays");

    signal(&live, libc::SIGTERM);
    live.wait().unwrap();
    let o = clean(tmp.path(), &[]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("nothing to clean"), "{}", String::from_utf8_lossy(&o.stdout));
}

#[test]
fn clean_drops_leftover_schemas_only_and_never_a_live_runs() {
    let db = ScratchDb::new("clean");
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_string();
    // A schema queuebench created and marked, whose process is gone (a --keep run).
    let s = repo("scenarios/skip-locked.toml");
    let out = tempfile::tempdir().unwrap();
    let o = bin()
        .args(["run", s.to_str().unwrap(), "--set", "jobs.preload=50", "--keep", "--quiet", "--database-url", &db.url])
        .arg("--out")
        .arg(out.path())
        .output()
        .unwrap();
    // Exit 1: the scenario's expectations are for 10,000 jobs; the schema is what counts here.
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&o.stderr));
    let kept = db.harness_schemas("");
    assert!(kept.starts_with("queuebench_2"), "{kept}");
    let (dead, live, lookalike, running) = (
        "queuebench_20260101_000000_abcd",
        "queuebench_20260101_000000_beef",
        "queuebench_20250101_000000_abcd",
        "queuebench_validate_0badcafe",
    );
    let gone_pid = i32::MAX - 7;
    db.sql(&format!(
        "CREATE SCHEMA {dead}; CREATE TABLE {dead}.jobs (id int); INSERT INTO {dead}.jobs SELECT generate_series(1, 1000); \
         COMMENT ON SCHEMA {dead} IS 'queuebench run, pid {gone_pid} on {host}'"
    ));
    db.sql(&format!(
        "CREATE SCHEMA {live}; CREATE SCHEMA queuebench_mine; CREATE SCHEMA app; CREATE TABLE app.t (id int)"
    ));
    // A look-alike: a queuebench name, a user's table, no mark. It must survive.
    db.sql(&format!(
        "CREATE SCHEMA {lookalike}; CREATE TABLE {lookalike}.orders (id int); INSERT INTO {lookalike}.orders VALUES (7)"
    ));
    // Marked by a process that still runs here (this test): left alone.
    db.sql(&format!(
        "CREATE SCHEMA {running}; COMMENT ON SCHEMA {running} IS 'queuebench run, pid {} on {host}'",
        std::process::id()
    ));
    // A live run's connection names its schema in application_name.
    let mut holder = std::process::Command::new("psql")
        .args(["-X", "-q", &db.url, "-c", "SELECT pg_sleep(60)"])
        .env("PGAPPNAME", format!("queuebench {live}"))
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    // Only this holder: other tests' runs on the same server have queuebench's names too.
    let holder_connected =
        format!("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'queuebench {live}'");
    while db.sql(&holder_connected).trim() != "1" {
        assert!(std::time::Instant::now() < until, "the holder never connected");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let tmp = tempfile::tempdir().unwrap();
    let o = clean(tmp.path(), &["--database-url", &db.url]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&o.stderr));
    assert!(text.contains(&format!("  schema {dead} in ")) && text.contains("MB)"), "{text}");
    assert!(text.contains(&format!("  schema {kept} in ")), "{text}");
    assert!(text.contains(&format!("left alone: schema {lookalike} in ")) && text.contains("not ours"), "{text}");
    assert!(text.contains(&format!("left alone: schema {running} in ")) && text.contains("still running"), "{text}");
    assert!(!text.contains(live) && !text.contains("queuebench_mine") && !text.contains("app"), "{text}");
    assert!(text.contains("not removed: no terminal"), "{text}");
    assert!(db.harness_schemas("").contains(dead));

    let o = clean(tmp.path(), &["--database-url", &db.url, "--yes"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains(&format!("dropped schema {dead}")) && text.contains(&format!("dropped schema {kept}")),
        "{text}"
    );
    assert_eq!(
        db.harness_schemas("app"),
        format!("app,{lookalike},{live},queuebench_mine,{running}"),
        "only the marked leftovers are gone"
    );
    assert_eq!(db.sql("SELECT count(*) FROM app.t").trim(), "0");
    assert_eq!(db.sql(&format!("SELECT id FROM {lookalike}.orders")).trim(), "7", "the look-alike's table is intact");
    let _ = holder.kill();
    let _ = holder.wait();
}
