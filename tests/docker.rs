//! `--postgres docker`: without a Docker engine (or in a build without the
//! `docker` feature) it fails at once, starting nothing, and names the other
//! two modes; with the feature and an engine, a real run in a container.

use crate::common;
use common::{queuebench, repo};

/// The engine the harness would find, if any (same rule as `db::docker::engine_socket`).
fn engine() -> Option<String> {
    queuebench::db::docker::engine_socket()
}

#[test]
fn docker_mode_without_an_engine_fails_at_once_naming_the_other_modes() {
    if let Some(engine) = engine() {
        let why = format!("a Docker engine answers at {engine}, so the no-engine error cannot be provoked here");
        common::missing("no-docker-engine", &why);
        return;
    }
    let s = repo("scenarios/skip-locked.toml");
    let r = queuebench(&["run", s.to_str().unwrap(), "--postgres", "docker", "--postgres-image", "postgres:16"]);
    // Built without the feature it is a usage error (2); with it, no engine is a run-time error (3).
    let want = if cfg!(feature = "docker") { 3 } else { 2 };
    assert_eq!(r.code, want, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("--postgres ephemeral") && r.stderr.contains("--database-url"), "{}", r.stderr);
    assert!(!r.out.join("summary.json").exists(), "no report for a run that never started");
    r.assert_clean();
}

#[test]
fn a_bad_image_name_is_a_usage_error() {
    let s = repo("scenarios/skip-locked.toml");
    let r = queuebench(&["run", s.to_str().unwrap(), "--postgres", "docker", "--postgres-image", "postgres:"]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("NAME:TAG"), "{}", r.stderr);
}

#[cfg(feature = "docker")]
#[test]
fn a_run_in_a_container_passes() {
    let Some(engine) = engine() else {
        common::missing(
            "docker",
            "no Docker engine (DOCKER_HOST unset, no /var/run/docker.sock); start one to run this test",
        );
        return;
    };
    eprintln!("using the Docker engine at {engine}");
    let s = repo("scenarios/skip-locked.toml");
    let image = std::env::var("QUEUEBENCH_TEST_IMAGE").unwrap_or_else(|_| "postgres:16".into());
    let r = queuebench(&["run", s.to_str().unwrap(), "--postgres", "docker", "--postgres-image", &image]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.summary()["database"]["kind"], "docker");
    assert_eq!(r.num("jobs.lost"), 0.0);
}
