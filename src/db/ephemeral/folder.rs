//! The clusters' folders: a private one per cluster under `$TMPDIR` (or /tmp), named
//! `queuebench-<harness pid>-<random>`, and the ones earlier harnesses left behind.

use crate::error::{Access, Error, Result};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

const DIR_PREFIX: &str = "queuebench-";

pub(super) fn temp_root() -> PathBuf {
    // Socket paths must stay under 107 bytes: a long TMPDIR falls back to /tmp.
    match std::env::var_os("TMPDIR").map(PathBuf::from) {
        Some(t) if t.as_os_str().len() <= 60 && t.is_dir() => t,
        _ => PathBuf::from("/tmp"),
    }
}

pub(super) fn make_dir(owner: Option<(u32, u32)>) -> Result<PathBuf> {
    let root = temp_root();
    for _ in 0..20 {
        let dir = root.join(format!("{DIR_PREFIX}{}-{:04x}", std::process::id(), rand::random::<u16>()));
        match std::fs::create_dir(&dir) {
            Ok(()) => {
                let setup = || -> std::io::Result<()> {
                    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
                    std::fs::write(dir.join("harness.pid"), std::process::id().to_string())?;
                    if let Some((uid, gid)) = owner {
                        std::os::unix::fs::chown(&dir, Some(uid), Some(gid))?;
                    }
                    Ok(())
                };
                return setup().map(|_| dir.clone()).map_err(|e| {
                    let _ = std::fs::remove_dir_all(&dir);
                    Error::io(Access::Prepare, &dir, e)
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(Error::io(Access::CreateDirectoryIn, root, e)),
        }
    }
    Err(Error::Io { action: Access::CreateUniqueDirectoryIn, path: root, cause: None })
}

/// A cluster folder an earlier harness left behind (it was SIGKILLed, or ran with `--keep`):
/// the harness and its postmaster are both gone.
#[derive(Debug, Clone)]
pub(crate) struct LeftoverCluster {
    pub path: PathBuf,
    pub harness_pid: i32,
    pub bytes: u64,
}

/// Cluster folders (`$TMPDIR/queuebench-<pid>-*`) whose harness and postmaster are gone. A
/// run no longer removes them on its own: it names them and points to `queuebench clean`.
pub(crate) fn leftover_clusters() -> Vec<LeftoverCluster> {
    let Ok(entries) = std::fs::read_dir(temp_root()) else {
        return Vec::new();
    };
    let mut out: Vec<LeftoverCluster> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(DIR_PREFIX))
        .filter_map(|e| {
            let path = e.path();
            let harness_pid = std::fs::read_to_string(path.join("harness.pid")).ok()?.trim().parse::<i32>().ok()?;
            is_gone(&path, harness_pid).then(|| LeftoverCluster { bytes: size_of(&path), path, harness_pid })
        })
        .collect();
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// Removes a leftover cluster folder, if its harness and postmaster are still gone.
pub(crate) fn remove_leftover(c: &LeftoverCluster) -> std::io::Result<()> {
    if !is_gone(&c.path, c.harness_pid) {
        return Err(std::io::Error::other("its harness or postmaster is running again"));
    }
    std::fs::remove_dir_all(&c.path)
}

fn is_gone(path: &Path, harness_pid: i32) -> bool {
    // SAFETY: kill with signal 0 only checks existence.
    let alive = |pid: i32| {
        let found = unsafe { libc::kill(pid, 0) } == 0;
        found || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    };
    let postmaster = |data: &str| {
        std::fs::read_to_string(path.join(data).join("postmaster.pid"))
            .ok()
            .and_then(|s| s.lines().next().and_then(|l| l.trim().parse::<i32>().ok()))
    };
    harness_pid != std::process::id() as i32
        && !alive(harness_pid)
        && !postmaster("data").is_some_and(alive)
        && !postmaster("standby").is_some_and(alive)
}

/// The bytes of the files under `path` (symlinks not followed).
fn size_of(path: &Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(path) else { return 0 };
    if !meta.is_dir() {
        return meta.len();
    }
    std::fs::read_dir(path).into_iter().flatten().flatten().map(|e| size_of(&e.path())).sum()
}

/// One line when earlier runs left cluster folders: what, how big, and `queuebench clean`.
pub(super) fn note_leftover_clusters() {
    let left = leftover_clusters();
    if left.is_empty() {
        return;
    }
    let bytes: u64 = left.iter().map(|c| c.bytes).sum();
    eprintln!(
        "note: {} of earlier queuebench runs ({:.1} MB, in {}) whose harness is gone; \
         `queuebench clean` lists and removes them",
        crate::model::words::count_as(left.len() as u64, "cluster folder", "cluster folders"),
        bytes as f64 / 1e6,
        temp_root().display()
    );
}
