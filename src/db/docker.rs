//! `--postgres docker`: PostgreSQL in a throwaway container, provisioned with
//! testcontainers-modules (cargo feature `docker`; it adds ~130 crates, so it
//! is off by default). The image is `--postgres-image NAME:TAG` (default
//! `postgres:16`); scenario `[postgres.settings]` become `-c name=value`
//! arguments, like for the ephemeral cluster, and fsync stays on (the module's
//! default turns it off). The container is removed at the end.
//!
//! Without a Docker engine (no `DOCKER_HOST`, no `/var/run/docker.sock`) it
//! fails at once, before any connection attempt, naming the other two modes.

use super::Database;
#[cfg(feature = "docker")]
use super::Kind;
use crate::error::{Error, Result};

/// The image used when `--postgres-image` is not given.
pub const DEFAULT_IMAGE: &str = "postgres:16";

/// The two modes that need no Docker engine, for error messages.
const OTHER_MODES: &str = "use --postgres ephemeral (the default: a throwaway cluster from the PostgreSQL server \
     binaries on this machine) or --database-url URL (an existing server)";

#[cfg_attr(not(feature = "docker"), allow(dead_code))]
/// Is there a Docker engine to talk to? `DOCKER_HOST`, or a socket at the usual places.
pub fn engine_socket() -> Option<String> {
    if let Ok(host) = std::env::var("DOCKER_HOST")
        && !host.is_empty()
    {
        return Some(host);
    }
    let home_socket = std::env::var("HOME").map(|h| format!("{h}/.docker/run/docker.sock")).unwrap_or_default();
    ["/var/run/docker.sock", "/run/docker.sock", home_socket.as_str()]
        .into_iter()
        .find(|p| !p.is_empty() && std::path::Path::new(p).exists())
        .map(|p| format!("unix://{p}"))
}

/// `name:tag` → (name, tag); a missing tag is `latest`.
pub fn split_image(image: &str) -> Result<(String, String)> {
    let (name, tag) = match image.rsplit_once(':') {
        Some((n, t)) if !t.contains('/') => (n, t),
        _ => (image, "latest"),
    };
    if name.is_empty() || tag.is_empty() || image.chars().any(char::is_whitespace) {
        return Err(Error::Flag {
            flag: "--postgres-image".into(),
            reason: format!("`{image}` is not NAME:TAG, e.g. {DEFAULT_IMAGE}"),
        });
    }
    Ok((name.to_string(), tag.to_string()))
}

#[cfg_attr(not(feature = "docker"), allow(dead_code))]
fn no_engine() -> Error {
    Error::machine(
        "--postgres docker",
        format!(
            "no Docker engine found (DOCKER_HOST is not set and there is no /var/run/docker.sock); start Docker, \
             or {OTHER_MODES}"
        ),
    )
}

#[cfg(not(feature = "docker"))]
pub struct Container;

#[cfg(not(feature = "docker"))]
impl Container {
    pub async fn remove(self) {}
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

#[cfg(feature = "docker")]
pub struct Container(
    testcontainers_modules::testcontainers::ContainerAsync<testcontainers_modules::postgres::Postgres>,
);

#[cfg(feature = "docker")]
impl Container {
    /// Stops and removes the container.
    pub async fn remove(self) {
        if let Err(e) = self.0.rm().await {
            eprintln!("warning: could not remove the PostgreSQL container: {e}");
        }
    }
}

#[cfg(feature = "docker")]
impl Database {
    /// Starts `image` with `settings`, waits until it accepts connections, and returns the database.
    pub async fn open_docker(
        image: &str,
        settings: &[(String, String)],
        schema: String,
        keep: bool,
    ) -> Result<Database> {
        use testcontainers_modules::postgres::Postgres;
        use testcontainers_modules::testcontainers::ImageExt;
        use testcontainers_modules::testcontainers::runners::AsyncRunner;

        let (name, tag) = split_image(image)?;
        if engine_socket().is_none() {
            return Err(no_engine());
        }
        let mut cmd = vec!["-c".to_string(), "fsync=on".to_string()];
        let mut settings = settings.to_vec();
        if !settings.iter().any(|(k, _)| k == "max_connections") {
            settings.push(("max_connections".into(), "200".into()));
        }
        for (k, v) in &settings {
            cmd.push("-c".into());
            cmd.push(format!("{k}={v}"));
        }
        let container = Postgres::default()
            .with_host_auth()
            .with_fsync_enabled()
            .with_name(name)
            .with_tag(tag)
            .with_cmd(cmd)
            .start()
            .await
            .map_err(|e| {
                Error::machine(format!("--postgres docker: could not start {image}"), format!("{e}; or {OTHER_MODES}"))
            })?;
        let host = container.get_host().await.map_err(|e| Error::machine("--postgres docker", e))?;
        let port = container.get_host_port_ipv4(5432).await.map_err(|e| Error::machine("--postgres docker", e))?;
        let mut config = tokio_postgres::Config::new();
        config.host(host.to_string()).port(port).user("postgres").dbname("postgres");
        let target = format!("{} ({image})", super::describe(&config));
        let mut db = Database {
            kind: Kind::Docker,
            container: Some(Container(container)),
            ..Database::new(config, target, schema, keep)
        };
        db.wait_ready().await?;
        Ok(db)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_split_into_name_and_tag() {
        assert_eq!(split_image("postgres:16").unwrap(), ("postgres".into(), "16".into()));
        assert_eq!(split_image("postgres").unwrap(), ("postgres".into(), "latest".into()));
        let local = split_image("localhost:5000/pg:15-alpine").unwrap();
        assert_eq!(local, ("localhost:5000/pg".into(), "15-alpine".into()));
        assert!(split_image("").is_err());
        assert!(split_image("postgres:").is_err());
    }

    #[test]
    fn no_engine_names_the_other_two_modes() {
        let msg = no_engine().to_string();
        assert!(msg.contains("--postgres ephemeral") && msg.contains("--database-url"), "{msg}");
    }
}
