//! The database lifecycle: URL mode drops only its own schema; Ctrl-C writes
//! the evidence and leaves no cluster behind; `sql` prints what will run.

use crate::common;
use common::{bin, postgres_processes_under, queuebench, repo};
use std::time::{Duration, Instant};

#[test]
fn url_mode_works_in_its_own_schema_and_drops_only_it() {
    let s = repo("scenarios/skip-locked.toml");
    let script = format!(
        "set -e; psql -q \"$DATABASE_URL\" -c 'CREATE TABLE public.users_data (x int); INSERT INTO public.users_data VALUES (1)'; \
         {qb} run {s} --set jobs.preload=200 --set 'expect.\"jobs.completed\"=== 200' --quiet --out \"$OUT\"; \
         psql -At \"$DATABASE_URL\" -c \"SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'queuebench_%'\"; \
         psql -At \"$DATABASE_URL\" -c 'SELECT sum(x) FROM public.users_data'",
        qb = env!("CARGO_BIN_EXE_queuebench"),
        s = s.display()
    );
    let out = tempfile::tempdir().unwrap();
    let o = bin()
        .args(["cluster", "--", "bash", "-c", &script])
        .env("OUT", out.path().join("run"))
        .env_remove("DATABASE_URL")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines, ["skip-locked: passed", "0", "1"], "schema dropped, user table untouched");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("run/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["database"]["kind"], "url");
}

#[test]
fn ctrl_c_stops_workers_writes_evidence_and_removes_the_cluster() {
    let s = repo("scenarios/skip-locked.toml");
    let tmp = tempfile::Builder::new().prefix("qbt").tempdir_in("/tmp").unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut child = bin()
        .args(["run", s.to_str().unwrap(), "--set", "run.stop=5m", "--set", "workers.work=2ms", "--out"])
        .arg(out.path().join("run"))
        .env("TMPDIR", tmp.path())
        .env_remove("DATABASE_URL")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the progress lines (plain lines: stderr is not a terminal) show jobs done.
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            let done = line.split(" · ").find_map(|p| {
                p.strip_suffix(" completions accepted")
                    .or_else(|| p.strip_suffix(" completion accepted"))?
                    .trim()
                    .parse::<u64>()
                    .ok()
            });
            if done.is_some_and(|d| d > 0) {
                let _ = tx.send(());
            }
        }
    });
    assert!(rx.recv_timeout(Duration::from_secs(60)).is_ok(), "the run never reported jobs done");
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let started = Instant::now();
    let status = child.wait().unwrap();
    assert!(started.elapsed() < Duration::from_secs(20), "took {:?} to stop", started.elapsed());
    assert_eq!(status.code(), Some(130));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("run/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["interrupted"], true);
    assert_eq!(summary["passed"], false);
    assert!(summary["executions"]["total"].as_u64().unwrap() > 0);
    assert_eq!(summary["executions"]["duplicate"], 0);
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().map(|e| e.path()).collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    assert!(postgres_processes_under(tmp.path()).is_empty());
}

#[test]
fn sql_lists_every_statement_and_pgbench_script_matches() {
    let s = repo("scenarios/skip-locked.toml");
    let r = queuebench(&["sql", s.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for needle in
        ["CREATE TABLE jobs", "FOR UPDATE SKIP LOCKED", "claim_token = :token", "INSERT INTO effects", "DROP SCHEMA"]
    {
        assert!(r.stdout.contains(needle), "missing {needle}:\n{}", r.stdout);
    }
    let p = queuebench(&["sql", s.to_str().unwrap(), "--pgbench"]);
    assert_eq!(p.code, 0, "{}", p.stderr);
    assert!(p.stdout.contains("-- pgbench-args: -n -M prepared -c 8 -j 8 -t 1250"), "{}", p.stdout);
    assert!(p.stdout.contains("\\gset") && p.stdout.contains("FOR UPDATE SKIP LOCKED"));
    let b = queuebench(&["sql", s.to_str().unwrap(), "--pgbench", "--set", "workers.batch=10"]);
    assert_eq!(b.code, 2);
    assert!(b.stderr.contains("batch = 1"));
}

#[test]
fn every_shipped_scenario_validates() {
    let dir = repo("scenarios");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path().to_string_lossy().into_owned())
        .filter(|p| p.ends_with(".toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 5);
    let mut args = vec!["validate"];
    args.extend(files.iter().map(String::as_str));
    let r = queuebench(&args);
    assert_eq!(r.code, 0, "{}", r.stderr);
}
