//! The server a measurement runs against: DATABASE_URL when set, else a throw-away cluster that
//! `queuebench cluster --scenario FILE -- …` starts with the file's [postgres.settings], running
//! this same task again inside it (with DATABASE_URL set), never as the harness's child.

use crate::error::{Error, Result};
use crate::qb::Qb;
use std::path::Path;

/// DATABASE_URL, or (after running this very task inside a cluster) the process exits with the
/// task's exit code.
pub fn url_or_reenter(qb: &Qb, server: &Path) -> Result<String> {
    url_or_reenter_with(qb, Some(server))
}

/// [`url_or_reenter`], the cluster with `server`'s settings or (None) its defaults.
pub fn url_or_reenter_with(qb: &Qb, server: Option<&Path>) -> Result<String> {
    if let Some(url) = std::env::var("DATABASE_URL").ok().filter(|u| !u.is_empty()) {
        return Ok(url);
    }
    let status = in_cluster(qb, server, std::env::args_os().skip(1))?;
    std::process::exit(status.code().unwrap_or(3));
}

/// Runs this xtask binary with `args` inside `queuebench cluster [--scenario SERVER] -- …`
/// (which gives it DATABASE_URL and removes the cluster after), and waits for it.
pub fn in_cluster(
    qb: &Qb,
    server: Option<&Path>,
    args: impl IntoIterator<Item = impl AsRef<std::ffi::OsStr>>,
) -> Result<std::process::ExitStatus> {
    let me = std::env::current_exe().map_err(Error::io("the xtask binary"))?;
    let mut cmd = qb.cmd();
    cmd.arg("cluster");
    if let Some(server) = server {
        cmd.arg("--scenario").arg(server);
    }
    cmd.arg("--")
        .arg(me)
        .args(args)
        // The binary found (and built) once: the task inside uses it as it is.
        .env("QUEUEBENCH", &qb.bin)
        .status()
        .map_err(|source| Error::Spawn { program: "queuebench cluster".into(), source })
}

/// `psql -X -q -v ON_ERROR_STOP=1 URL ARGS…`'s standard output.
pub fn psql(url: &str, args: &[&str]) -> Result<String> {
    let o = std::process::Command::new("psql")
        .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", url])
        .args(args)
        .env("PGOPTIONS", "-c client_min_messages=warning")
        .output()
        .map_err(|source| Error::Spawn { program: "psql".into(), source })?;
    if !o.status.success() {
        return Err(Error::Run(format!("psql {}: {}", args.join(" "), String::from_utf8_lossy(&o.stderr).trim())));
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// `psql -X -q -v ON_ERROR_STOP=1 URL` reading `sql` from its standard input: each statement in
/// its own transaction (CREATE DATABASE may not run inside one, as `-c` would put them).
pub fn psql_script(url: &str, sql: &str) -> Result<()> {
    use std::io::Write;
    let mut child = std::process::Command::new("psql")
        .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", url])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|source| Error::Spawn { program: "psql".into(), source })?;
    let mut stdin = child.stdin.take().expect("piped");
    stdin.write_all(sql.as_bytes()).map_err(Error::io("psql's input"))?;
    drop(stdin);
    let o = child.wait_with_output().map_err(Error::io("psql"))?;
    if !o.status.success() {
        return Err(Error::Run(format!("psql: {}", String::from_utf8_lossy(&o.stderr).trim())));
    }
    Ok(())
}
