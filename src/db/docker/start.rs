//! Starting the container (cargo feature `docker`): the image checked in the engine's store
//! first, a name of this process's own, readiness on the server's own line, and on a failed
//! start the container removed and its last lines of output quoted.

use super::{LIVE, OTHER_MODES, READY_LINE, READY_WITHIN, api, engine_socket, no_engine, remove_now, split_image};
use crate::db::{Database, Kind, refused_setting};
use crate::error::{Error, Result, Unfit};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use testcontainers_modules::postgres::Postgres;
use testcontainers_modules::testcontainers::bollard::models::HostConfig;
use testcontainers_modules::testcontainers::core::WaitFor;
use testcontainers_modules::testcontainers::core::logs::LogFrame;
use testcontainers_modules::testcontainers::runners::AsyncRunner;
use testcontainers_modules::testcontainers::{ContainerAsync, ImageExt};

/// The lines of output kept for an error message.
const TAIL_LINES: usize = 20;

/// A started container: removed by [`Container::remove`] at the end of the run.
pub struct Container {
    inner: ContainerAsync<Postgres>,
    host: String,
    name: String,
    tail: Tail,
}

impl Container {
    /// Stops and removes the container.
    pub async fn remove(self) {
        let Container { inner, host, name, .. } = self;
        if let Err(e) = inner.rm().await {
            eprintln!("warning: could not remove the PostgreSQL container {name} ({e}); trying by name");
            let _ = tokio::task::spawn_blocking(move || remove_now(&host, &name)).await;
            return;
        }
        LIVE.lock().unwrap_or_else(|e| e.into_inner()).retain(|(h, n)| !(*h == host && *n == name));
    }
}

impl Container {
    /// The server in the container did not accept connections within `seconds`.
    pub fn not_ready(&self, seconds: u64, cause: impl std::fmt::Display) -> Error {
        Error::machine(
            format!(
                "--postgres docker: the server in container {} did not accept connections within {seconds} s",
                self.name
            ),
            format!("{cause}; its last lines:\n{}", self.tail.text()),
        )
    }
}

/// A container being started: removed by name if the start does not complete (an error, or
/// the future dropped), unless [`Starting::done`] hands it over to a [`Container`].
struct Starting {
    host: String,
    name: String,
    armed: bool,
}

impl Starting {
    fn new(host: &str, name: String) -> Starting {
        LIVE.lock().unwrap_or_else(|e| e.into_inner()).push((host.to_string(), name.clone()));
        Starting { host: host.to_string(), name, armed: true }
    }

    fn done(mut self) {
        self.armed = false;
    }
}

impl Drop for Starting {
    fn drop(&mut self) {
        if self.armed {
            remove_now(&self.host, &self.name);
        }
    }
}

/// The last [`TAIL_LINES`] lines the container wrote, stdout and stderr alike.
#[derive(Clone, Default)]
struct Tail(Arc<Mutex<VecDeque<String>>>);

impl Tail {
    fn push(&self, frame: &LogFrame) {
        let mut lines = self.0.lock().unwrap_or_else(|e| e.into_inner());
        for line in String::from_utf8_lossy(frame.bytes()).lines().filter(|l| !l.trim().is_empty()) {
            if lines.len() == TAIL_LINES {
                lines.pop_front();
            }
            lines.push_back(line.to_string());
        }
    }

    fn text(&self) -> String {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).iter().cloned().collect::<Vec<_>>().join("\n")
    }
}

/// Is `image` in the engine's store? A missing local one is an error (nothing can pull it);
/// another is pulled by the engine, which is said first.
async fn check_image(host: &str, image: &str, name: &str) -> Result<()> {
    let (h, i) = (host.to_string(), image.to_string());
    let present = tokio::task::spawn_blocking(move || api::image_present(&h, &i))
        .await
        .map_err(|e| Error::machine("--postgres docker", e))?
        .map_err(|e| {
            Error::machine("--postgres docker", format!("the engine does not answer: {e}; or {OTHER_MODES}"))
        })?;
    if present {
        return Ok(());
    }
    if name.starts_with("localhost/") {
        return Err(Error::machine(
            "--postgres docker",
            format!(
                "{image} is not in the engine's image store at {host}, and a localhost/ image is never pulled: \
                 build it (scripts/container-run.sh --postgres-image builds {}; docs/databases.md); or {OTHER_MODES}",
                super::LOCAL_IMAGE
            ),
        ));
    }
    eprintln!("note: {image} is not in the engine's image store at {host}: the engine pulls it from its registry");
    Ok(())
}

/// `-c name=value` for each setting (fsync on; max_connections 200 unless set).
fn server_args(settings: &[(String, String)]) -> Vec<String> {
    let mut cmd = vec!["-c".to_string(), "fsync=on".to_string()];
    let mut settings = settings.to_vec();
    if !settings.iter().any(|(k, _)| k == "max_connections") {
        settings.push(("max_connections".into(), "200".into()));
    }
    for (k, v) in &settings {
        cmd.push("-c".into());
        cmd.push(format!("{k}={v}"));
    }
    cmd
}

/// Why the start failed, with what the container said: a refused setting is the scenario's
/// (exit 2, as for the ephemeral cluster), anything else the machine's.
fn start_failed(image: &str, name: &str, cause: impl std::fmt::Display, tail: &Tail) -> Error {
    let said = tail.text();
    if let Some(refusal) = refused_setting(&said) {
        return Error::Unfit { target: format!("{name} ({image})"), problem: Unfit::RefusedSetting { refusal } };
    }
    let said = if said.is_empty() { "it wrote nothing".to_string() } else { format!("its last lines:\n{said}") };
    Error::machine(
        format!("--postgres docker: {image} did not start ({name})"),
        format!(
            "{cause} (waited at most {} s for \"{READY_LINE}\" on its stderr); {said}\n(the container was removed; \
             or {OTHER_MODES})",
            READY_WITHIN.as_secs()
        ),
    )
}

/// An engine on this machine (a unix socket): the container shares the machine's network, and
/// the server listens on 127.0.0.1 at a port free now, like the ephemeral cluster. (No bridge
/// network, port mapping or NAT in between: podman's bridge forwards a loopback port only with
/// `route_localnet`, which this machine does not set, and a benchmark's throwaway server has
/// no business on the machine's other addresses.) An engine elsewhere (`tcp://`) publishes
/// 5432 on a port of its choosing instead.
fn host_network(config: &mut HostConfig) {
    config.network_mode = Some("host".into());
    config.publish_all_ports = Some(false);
    config.port_bindings = None;
}

/// A TCP port nothing listens on now, on 127.0.0.1 (the kernel's choice).
fn free_port() -> Result<u16> {
    let listener =
        std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| Error::machine("--postgres docker: a free port", e))?;
    Ok(listener.local_addr().map_err(|e| Error::machine("--postgres docker: a free port", e))?.port())
}

impl Database {
    /// Starts `image` with `settings`, waits until it accepts connections, and returns the database.
    pub async fn open_docker(
        image: &str,
        settings: &[(String, String)],
        schema: String,
        keep: bool,
    ) -> Result<Database> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let (name, tag) = split_image(image)?;
        let Some(host) = engine_socket() else { return Err(no_engine()) };
        check_image(&host, image, &name).await?;
        let container_name = format!("queuebench-pg-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        let tail = Tail::default();
        let seen = tail.clone();
        let starting = Starting::new(&host, container_name.clone());
        let local = host.starts_with("unix://");
        let mut args = server_args(settings);
        let port = if local { Some(free_port()?) } else { None };
        if let Some(port) = port {
            args.extend(["-c".into(), "listen_addresses=127.0.0.1".into(), "-c".into(), format!("port={port}")]);
        }
        let started = Postgres::default()
            .with_host_auth()
            .with_fsync_enabled()
            .with_name(name)
            .with_tag(tag)
            .with_cmd(args)
            .with_container_name(&container_name)
            .with_label("queuebench.pid", std::process::id().to_string())
            .with_ready_conditions(vec![WaitFor::message_on_stderr(READY_LINE)])
            .with_startup_timeout(READY_WITHIN)
            .with_log_consumer(move |frame: &LogFrame| seen.push(frame))
            .with_host_config_modifier(move |config| {
                if local {
                    host_network(config)
                }
            })
            .start()
            .await;
        let container = match started {
            Ok(c) => c,
            Err(e) => {
                let error = start_failed(image, &container_name, e, &tail);
                let _ = tokio::task::spawn_blocking(move || drop(starting)).await;
                return Err(error);
            }
        };
        starting.done();
        let container = Container { inner: container, host, name: container_name, tail };
        let (address, port) = match port {
            Some(port) => ("127.0.0.1".to_string(), port),
            None => {
                let address = container.inner.get_host().await.map_err(|e| Error::machine("--postgres docker", e))?;
                let port = container
                    .inner
                    .get_host_port_ipv4(5432)
                    .await
                    .map_err(|e| Error::machine("--postgres docker", e))?;
                (address.to_string(), port)
            }
        };
        let mut config = tokio_postgres::Config::new();
        config.host(&address).port(port).user("postgres").dbname("postgres");
        let target = format!("{} ({image}, container {})", super::super::describe(&config), container.name);
        let mut db =
            Database { kind: Kind::Docker, container: Some(container), ..Database::new(config, target, schema, keep) };
        db.wait_ready().await?;
        Ok(db)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_become_server_arguments_with_fsync_on() {
        let args = server_args(&[("work_mem".into(), "8MB".into())]);
        assert_eq!(args, ["-c", "fsync=on", "-c", "work_mem=8MB", "-c", "max_connections=200"]);
        let args = server_args(&[("max_connections".into(), "50".into())]);
        assert_eq!(args, ["-c", "fsync=on", "-c", "max_connections=50"]);
    }

    #[test]
    fn a_failed_start_quotes_the_container_and_a_refused_setting_is_the_scenarios() {
        let tail = Tail::default();
        let e = start_failed("img:1", "qb-x", "container startup timeout", &tail).to_string();
        assert!(e.contains("img:1 did not start (qb-x)") && e.contains("it wrote nothing"), "{e}");
        assert!(e.contains("60 s") && e.contains(READY_LINE), "{e}");
        tail.push(&LogFrame::StdErr(
            "2026-12-04 LOG:  starting\n2026-12-04 FATAL:  invalid value for parameter \"work_mem\": \"lots\"\n".into(),
        ));
        let e = start_failed("img:1", "qb-x", "end of stream", &tail);
        assert!(matches!(e, Error::Unfit { problem: Unfit::RefusedSetting { .. }, .. }), "{e}");
        let many = Tail::default();
        for i in 0..30 {
            many.push(&LogFrame::StdOut(format!("line {i}\n").into()));
        }
        let text = many.text();
        assert!(text.starts_with("line 10\n") && text.ends_with("line 29"), "{text}");
    }
}
