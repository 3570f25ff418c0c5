//! `--postgres docker`: PostgreSQL in a throwaway container, provisioned with
//! testcontainers-modules (cargo feature `docker`; it adds ~130 crates, so it
//! is off by default) through a Docker-compatible API: Docker's, or podman's
//! service (`podman system service`, `DOCKER_HOST`; docs/databases.md). The image
//! is `--postgres-image NAME:TAG` (default `postgres:16`); scenario
//! `[postgres.settings]` become `-c name=value` arguments, like for the
//! ephemeral cluster, and fsync stays on (the module's default turns it off).
//!
//! - An image already in the engine's store is used as it is, never pulled; a
//!   missing `localhost/…` image is refused (no registry has it) with the command
//!   that builds one (`scripts/container-run.sh --postgres-image`).
//! - Ready is the server's own line on stderr ("database system is ready to accept
//!   connections"), within [`READY_WITHIN`]; a container that exits or stays silent
//!   is an error that quotes its last lines of output.
//! - The container is named `queuebench-pg-<pid>-<n>` and removed at the end; on a
//!   start that failed half-way, and on the second Ctrl-C (which exits at once), by
//!   that name through the engine's API ([`api`]).
//!
//! Without a Docker engine (no `DOCKER_HOST`, no Docker socket) it fails at
//! once, before any connection attempt, naming the other two modes (and podman's
//! socket, where one is there but `DOCKER_HOST` does not name it).

pub mod api;

#[cfg(not(feature = "docker"))]
use super::Database;
use crate::error::{Error, Result};
use std::sync::Mutex;

/// The image used when `--postgres-image` is not given.
pub const DEFAULT_IMAGE: &str = "postgres:16";

/// The image `scripts/container-run.sh --postgres-image` builds (Debian's postgresql-15).
pub const LOCAL_IMAGE: &str = "localhost/queuebench-postgres:15";

/// How long a started container has to say it is ready.
pub const READY_WITHIN: std::time::Duration = std::time::Duration::from_secs(60);

/// The two modes that need no Docker engine, for error messages.
const OTHER_MODES: &str = "use --postgres ephemeral (the default: a throwaway cluster from the PostgreSQL server \
     binaries on this machine) or --database-url URL (an existing server)";

/// Containers of this process not yet removed: (engine, name), for the second Ctrl-C.
static LIVE: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

#[cfg_attr(not(feature = "docker"), allow(dead_code))]
/// Is there a Docker engine to talk to? `DOCKER_HOST`, or [`default_socket`].
pub fn engine_socket() -> Option<String> {
    match std::env::var("DOCKER_HOST") {
        Ok(host) if !host.is_empty() => Some(host),
        _ => default_socket(),
    }
}

/// A Docker socket where testcontainers looks for one when `DOCKER_HOST` is not set.
pub fn default_socket() -> Option<String> {
    let dirs = [std::env::var("XDG_RUNTIME_DIR").ok(), std::env::var("HOME").ok()];
    let mut places = vec!["/var/run/docker.sock".to_string()];
    places.extend(dirs.iter().flatten().map(|d| format!("{d}/.docker/run/docker.sock")));
    places.extend(dirs[1].iter().map(|h| format!("{h}/.docker/desktop/docker.sock")));
    places.into_iter().find(|p| std::path::Path::new(p).exists()).map(|p| format!("unix://{p}"))
}

/// podman's API socket, where its service listens by default (root's, then the user's).
fn podman_socket() -> Option<String> {
    let user = std::env::var("XDG_RUNTIME_DIR").ok().map(|d| format!("{d}/podman/podman.sock"));
    ["/run/podman/podman.sock".to_string()].into_iter().chain(user).find(|p| std::path::Path::new(p).exists())
}

/// `name:tag` → (name, tag); a missing tag is `latest`. Only the characters of an image
/// reference (letters, digits, `._-/:@`): the name goes into the engine's URLs.
pub fn split_image(image: &str) -> Result<(String, String)> {
    let (name, tag) = match image.rsplit_once(':') {
        Some((n, t)) if !t.contains('/') => (n, t),
        _ => (image, "latest"),
    };
    let odd = image.chars().any(|c| !(c.is_ascii_alphanumeric() || "._-/:@".contains(c)));
    if name.is_empty() || tag.is_empty() || odd {
        return Err(Error::Flag {
            flag: "--postgres-image".into(),
            reason: format!("`{image}` is not NAME:TAG, e.g. {DEFAULT_IMAGE} or {LOCAL_IMAGE}"),
        });
    }
    Ok((name.to_string(), tag.to_string()))
}

#[cfg_attr(not(feature = "docker"), allow(dead_code))]
fn no_engine() -> Error {
    let podman = match podman_socket() {
        Some(p) => format!("podman's API socket is at {p}, but DOCKER_HOST does not name it: DOCKER_HOST=unix://{p}"),
        None => "start Docker, or podman's Docker-compatible service (podman system service --time=0 \
                 unix:///run/podman/podman.sock, then DOCKER_HOST=unix:///run/podman/podman.sock; \
                 docs/databases.md)"
            .to_string(),
    };
    Error::machine(
        "--postgres docker",
        format!(
            "no Docker engine found (DOCKER_HOST is not set and there is no /var/run/docker.sock); {podman}; or {OTHER_MODES}"
        ),
    )
}

/// Removes `name` through the engine's API, saying what became of it; the (engine, name)
/// leaves [`LIVE`].
fn remove_now(host: &str, name: &str) {
    match api::remove(host, name) {
        Ok(_) => {}
        Err(e) => eprintln!(
            "left behind: container {name} ({e}); remove it with `podman rm -f {name}` or `docker rm -f {name}`"
        ),
    }
    LIVE.lock().unwrap_or_else(|e| e.into_inner()).retain(|(h, n)| !(h == host && n == name));
}

/// Second Ctrl-C: remove this process's containers now (each bounded by the API's timeout).
pub(crate) fn emergency_cleanup() {
    let live = std::mem::take(&mut *LIVE.lock().unwrap_or_else(|e| e.into_inner()));
    for (host, name) in live {
        remove_now(&host, &name);
    }
}

#[cfg(not(feature = "docker"))]
pub struct Container;

#[cfg(not(feature = "docker"))]
impl Container {
    pub async fn remove(self) {}

    pub fn not_ready(&self, seconds: u64, cause: impl std::fmt::Display) -> Error {
        Error::machine("--postgres docker", format!("not ready within {seconds} s: {cause}"))
    }
}

#[cfg(not(feature = "docker"))]
impl Database {
    /// This build has no Docker support: a usage error that says how to get it.
    pub async fn open_docker(image: &str, _: &[(String, String)], _: String, _: bool) -> Result<Database> {
        split_image(image)?;
        Err(Error::Flag {
            flag: "--postgres docker".into(),
            reason: format!(
                "needs a queuebench built with the `docker` feature (cargo build --release --features docker); or \
                 {OTHER_MODES}"
            ),
        })
    }
}

/// The server's own line when it accepts connections (on stderr, where postgres logs).
#[cfg(feature = "docker")]
const READY_LINE: &str = "database system is ready to accept connections";

#[cfg(feature = "docker")]
mod start;

#[cfg(feature = "docker")]
pub use start::Container;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_split_into_name_and_tag() {
        assert_eq!(split_image("postgres:16").unwrap(), ("postgres".into(), "16".into()));
        assert_eq!(split_image("postgres").unwrap(), ("postgres".into(), "latest".into()));
        let local = split_image("localhost:5000/pg:15-alpine").unwrap();
        assert_eq!(local, ("localhost:5000/pg".into(), "15-alpine".into()));
        let ours = split_image(LOCAL_IMAGE).unwrap();
        assert_eq!(ours, ("localhost/queuebench-postgres".into(), "15".into()));
        assert!(split_image("").is_err());
        assert!(split_image("postgres:").is_err());
        // It goes into the engine's URLs: no query, fragment or escapes.
        for odd in ["pg:16?x=1", "pg#1:16", "pg%2F:16", "pg 16", "pg:16\n"] {
            assert!(split_image(odd).is_err(), "{odd:?}");
        }
    }

    #[test]
    fn no_engine_names_the_other_two_modes_and_podman() {
        let msg = no_engine().to_string();
        assert!(msg.contains("--postgres ephemeral") && msg.contains("--database-url"), "{msg}");
        assert!(msg.contains("podman") && msg.contains("DOCKER_HOST=unix://"), "{msg}");
    }
}
