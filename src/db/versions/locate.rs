//! Where the server binaries of a major are: the cache, the distribution's
//! `/usr/lib/postgresql/N/bin`, `pg_config --bindir`, `PATH` and `QUEUEBENCH_PG_BINDIR`. The
//! major is what `postgres --version` says, never what a folder's name suggests.

use super::{Pin, cache_root, major_of};
use crate::error::{Error, Missing, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where a set of binaries was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    Env,
    Cache,
    Distribution,
    PgConfig,
    Path,
}

impl Source {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Source::Env => "QUEUEBENCH_PG_BINDIR",
            Source::Cache => "cache",
            Source::Distribution => "distribution",
            Source::PgConfig => "pg_config",
            Source::Path => "PATH",
        }
    }
}

/// A folder holding `initdb` and `postgres`, and the version its `postgres` reports.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    pub bindir: PathBuf,
    pub source: Source,
    /// `14.23`, or empty when `postgres --version` did not answer.
    pub version: String,
}

impl Found {
    pub(crate) fn major(&self) -> Option<u32> {
        major_of(&self.version)
    }
}

/// `postgres --version` of the folder: `14.23` (the word after "(PostgreSQL)").
pub(crate) fn version_of(bindir: &Path) -> Option<String> {
    let out = Command::new(bindir.join("postgres")).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let after = text.split("(PostgreSQL)").nth(1)?;
    after.split_whitespace().next().map(str::to_string)
}

fn has_both(dir: &Path) -> bool {
    dir.join("initdb").is_file() && dir.join("postgres").is_file()
}

/// Every folder with server binaries, in the order a version request looks: the
/// environment, the cache, the distribution's folders (newest first), pg_config, PATH. One
/// folder is listed once.
pub(crate) fn installed() -> Vec<Found> {
    let mut candidates: Vec<(PathBuf, Source)> = Vec::new();
    if let Some(dir) = std::env::var_os("QUEUEBENCH_PG_BINDIR") {
        candidates.push((PathBuf::from(dir), Source::Env));
    }
    let mut cached: Vec<PathBuf> = std::fs::read_dir(cache_root())
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path().join("bin"))
        .collect();
    cached.sort();
    candidates.extend(cached.into_iter().map(|p| (p, Source::Cache)));
    let mut versioned: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .collect();
    versioned.sort();
    candidates.extend(versioned.into_iter().rev().map(|(_, p)| (p, Source::Distribution)));
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output()
        && out.status.success()
    {
        candidates.push((PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()), Source::PgConfig));
    }
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path).map(|p| (p, Source::Path)));
    }
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut out = Vec::new();
    for (dir, source) in candidates {
        let real = std::fs::canonicalize(&dir).unwrap_or_else(|_| dir.clone());
        if !has_both(&dir) || seen.contains(&real) {
            continue;
        }
        seen.push(real);
        out.push(Found { version: version_of(&dir).unwrap_or_default(), bindir: dir, source });
    }
    out
}

/// The binaries of `pin`'s major: the first folder of [`installed`] whose `postgres` reports
/// that major. None found: exit 3 naming `queuebench postgres fetch N` (a run never fetches).
pub(crate) fn find(pin: &Pin) -> Result<Found> {
    let all = installed();
    if let Some(found) = all.iter().find(|f| f.major() == Some(pin.major)) {
        return Ok(found.clone());
    }
    let seen = all
        .iter()
        .map(|f| {
            format!(
                "{} {} ({})",
                f.bindir.display(),
                if f.version.is_empty() { "?" } else { &f.version },
                f.source.name()
            )
        })
        .collect();
    Err(Error::Missing(Missing::Version { major: pin.major, cache: cache_root(), seen }))
}

/// The first folder from `/` down to `path` that the user `uid` (group `gid`) may not enter
/// (no search permission for it), if any: root's cluster runs as `postgres`.
pub(crate) fn closed_to(uid: u32, gid: u32, path: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let path = std::fs::canonicalize(path).ok()?;
    let mut dir = PathBuf::from("/");
    for part in path.components().skip(1) {
        dir.push(part);
        let meta = std::fs::metadata(&dir).ok()?;
        let mode = meta.mode();
        let bit = if meta.uid() == uid {
            0o100
        } else if meta.gid() == gid {
            0o010
        } else {
            0o001
        };
        if meta.is_dir() && mode & bit == 0 {
            return Some(dir);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_folder_without_search_permission_for_others_is_named() {
        let top = tempfile::Builder::new().prefix("qb-closed").tempdir_in("/tmp").unwrap();
        let bin = top.path().join("14.23/bin");
        std::fs::create_dir_all(&bin).unwrap();
        let others = (65_534, 65_534);
        std::fs::set_permissions(top.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let top_real = std::fs::canonicalize(top.path()).unwrap();
        assert_eq!(super::closed_to(others.0, others.1, &bin), Some(top_real));
        std::fs::set_permissions(top.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(super::closed_to(others.0, others.1, &bin), None, "a folder above the temp dir is closed");
    }
}
