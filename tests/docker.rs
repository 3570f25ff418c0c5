//! `--postgres docker`: without a Docker engine (or in a build without the
//! `docker` feature) it fails at once, starting nothing, and names the other
//! two modes; with the feature and an engine, a real run in a container.

use crate::common;
use common::{queuebench, repo};

/// The engine the harness would find, if any (same rule as `db::docker::engine_socket`).
#[cfg(feature = "docker")]
fn engine() -> Option<String> {
    queuebench::db::docker::engine_socket()
}

#[test]
fn docker_mode_without_an_engine_fails_at_once_naming_the_other_modes() {
    // An engine named by DOCKER_HOST alone (podman's service here) is hidden by emptying it.
    if let Some(socket) = queuebench::db::docker::default_socket() {
        let why = format!("a Docker engine answers at {socket}, so the no-engine error cannot be provoked here");
        common::missing("no-docker-engine", &why);
        return;
    }
    let s = repo("scenarios/skip-locked.toml");
    let args = ["run", s.to_str().unwrap(), "--postgres", "docker", "--postgres-image", "postgres:16"];
    let r = common::queuebench_env(&args, &[("DOCKER_HOST", "")]);
    // Built without the feature it is a usage error (2); with it, no engine is a run-time error (3).
    let want = if cfg!(feature = "docker") { 3 } else { 2 };
    assert_eq!(r.code, want, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("--postgres ephemeral") && r.stderr.contains("--database-url"), "{}", r.stderr);
    if cfg!(feature = "docker") {
        assert!(r.stderr.contains("podman system service"), "{}", r.stderr);
    }
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

/// The engine and the image the container tests use (`QUEUEBENCH_TEST_IMAGE`, default the
/// image `scripts/container-run.sh --postgres-image` builds), or None: a skip that says why,
/// a failure under QUEUEBENCH_STRICT unless QUEUEBENCH_ALLOW_MISSING names `docker`.
#[cfg(feature = "docker")]
fn engine_and_image() -> Option<(String, String)> {
    use queuebench::db::docker::{LOCAL_IMAGE, api};
    let how = "scripts/container-run.sh --postgres-docker -- cargo test --features docker --test suite -- docker:: \
               (docs/databases.md)";
    let Some(engine) = engine() else {
        common::missing("docker", &format!("no Docker engine (DOCKER_HOST unset, no /var/run/docker.sock); {how}"));
        return None;
    };
    let image = std::env::var("QUEUEBENCH_TEST_IMAGE").unwrap_or_else(|_| LOCAL_IMAGE.into());
    match api::image_present(&engine, &image) {
        Ok(true) => Some((engine, image)),
        Ok(false) => {
            common::missing("docker", &format!("the engine at {engine} has no image {image}; {how}"));
            None
        }
        Err(e) => {
            common::missing("docker", &format!("the engine at {engine} does not answer: {e}"));
            None
        }
    }
}

/// The container a run names in its database line, if it is still there.
#[cfg(feature = "docker")]
fn container_of(engine: &str, target: &str) -> (String, bool) {
    let name = target.rsplit_once("container ").map(|(_, n)| n.trim_end_matches(')')).unwrap_or_default();
    assert!(name.starts_with("queuebench-pg-"), "no container in {target}");
    let answer = queuebench::db::docker::api::request(
        engine,
        "GET",
        &format!("/containers/{name}/json"),
        std::time::Duration::from_secs(10),
    )
    .unwrap();
    (name.to_string(), answer.status == 200)
}

#[cfg(feature = "docker")]
#[test]
fn a_run_in_a_container_passes_and_removes_it() {
    let Some((engine, image)) = engine_and_image() else { return };
    eprintln!("using the Docker engine at {engine}, image {image}");
    let s = repo("scenarios/skip-locked.toml");
    let r = queuebench(&[
        "run",
        s.to_str().unwrap(),
        "--postgres",
        "docker",
        "--postgres-image",
        &image,
        "--set",
        "postgres.settings.max_connections=150",
    ]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let summary = r.summary();
    assert_eq!(summary["database"]["kind"], "docker");
    assert_eq!(r.num("jobs.completed"), 10000.0);
    assert_eq!(r.num("executions.duplicate"), 0.0);
    assert_eq!(r.num("jobs.lost"), 0.0);
    // The scenario's settings reached the server in the container, and fsync stayed on.
    let pg = &summary["environment"]["pg_settings"];
    assert_eq!((pg["max_connections"].as_str(), pg["fsync"].as_str()), (Some("150"), Some("on")), "{pg}");
    let (name, there) = container_of(&engine, summary["database"]["target"].as_str().unwrap());
    assert!(!there, "container {name} is still there after the run");
}

#[cfg(feature = "docker")]
#[test]
fn a_local_image_that_is_not_there_is_refused_not_pulled() {
    let Some((engine, _)) = engine_and_image() else { return };
    let s = repo("scenarios/skip-locked.toml");
    let image = "localhost/queuebench-no-such-image:0";
    let r = queuebench(&["run", s.to_str().unwrap(), "--postgres", "docker", "--postgres-image", image]);
    assert_eq!(r.code, 3, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("never pulled") && r.stderr.contains("--postgres-image builds"), "{}", r.stderr);
    assert!(!r.out.join("summary.json").exists());
    assert!(!queuebench::db::docker::api::image_present(&engine, image).unwrap());
}

/// A second Ctrl-C exits at once, and still removes the container.
#[cfg(feature = "docker")]
#[test]
fn a_second_sigint_still_removes_the_container() {
    use common::pg::{all_stderr, signal, spawn_watched, wait_for_progress};
    let Some((engine, image)) = engine_and_image() else { return };
    let out = tempfile::tempdir().unwrap();
    let s = repo("scenarios/skip-locked.toml");
    let mut cmd = common::bin();
    cmd.args(["run", s.to_str().unwrap(), "--postgres", "docker", "--postgres-image", &image])
        .args(["--set", "run.stop=5m", "--set", "workers.work=20ms", "--set", "jobs.preload=2000", "--out"])
        .arg(out.path().join("run"))
        .env_remove("DATABASE_URL");
    let (mut child, rx, stderr) = spawn_watched(cmd);
    wait_for_progress(&rx, &stderr);
    let name = format!("queuebench-pg-{}-0", child.id());
    let (_, there) = container_of(&engine, &format!("(container {name})"));
    assert!(there, "the run's container {name} is not there");
    signal(&child, libc::SIGINT);
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !stderr.lock().unwrap().contains("stopping workers") && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    signal(&child, libc::SIGINT);
    let status = child.wait().unwrap();
    let text = all_stderr(&stderr);
    assert_eq!(status.code(), Some(130), "{text}");
    assert!(text.contains("again: exiting now"), "{text}");
    let (_, there) = container_of(&engine, &format!("(container {name})"));
    assert!(!there, "container {name} is still there after a second Ctrl-C:\n{text}");
}
