//! Files queuebench reads and writes at its boundary, read and written as untrusted.
//!
//! Reads: every file queuebench reads (a scenario, an adapter, a baseline, a run folder's
//! summary, evidence and history) has a size limit, checked while reading, so a huge or
//! endless path (`/dev/zero`, a doctored run folder, a gzip bomb) is refused with exit 2
//! instead of filling the machine's memory. The limits are documented in docs/safety.md.
//!
//! Writes: [`write_new`] never follows a symlink. The file is written to a new temporary file
//! (created exclusively, so a planted link at that name is not followed) and renamed over the
//! target (a rename replaces a link, it does not write through it), and a folder on the way
//! that is a symlink is refused: a run folder downloaded from CI is somebody else's input.

use crate::error::{Access, Error, Result};
use std::io::Read;
use std::path::{Component, Path};

/// What a file is, with its limit: the limit and the words of its refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A scenario or adapter file (TOML), and a run folder's `scenario.toml`.
    Scenario,
    /// A `summary.json`, `evidence.json`, a saved baseline.
    Summary,
    /// `history.csv.gz`, `final_state.csv.gz`, and what they unpack to.
    History,
}

impl Kind {
    /// The most bytes read.
    pub(crate) const fn limit(self) -> u64 {
        match self {
            Kind::Scenario => 1 << 20,
            Kind::Summary => 256 << 20,
            Kind::History => 4 << 30,
        }
    }

    fn what(self) -> &'static str {
        match self {
            Kind::Scenario => "a scenario or adapter file",
            Kind::Summary => "a summary, evidence or baseline file",
            Kind::History => "a run's history",
        }
    }
}

/// The limit as people say it (`1 MiB`, `4 GiB`).
pub(crate) fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b => format!("{b} bytes"),
    }
}

fn too_large(path: &Path, kind: Kind, unpacked: bool) -> Error {
    let what = if unpacked { "unpacks to more than" } else { "is larger than" };
    Error::Input {
        path: path.to_path_buf(),
        reason: format!(
            "{what} queuebench reads for {} ({}); is it the file you meant? (limits: docs/safety.md)",
            kind.what(),
            size(kind.limit())
        ),
    }
}

/// Reads at most `kind`'s limit from `from`; more is refused (naming `path`).
fn read_limited(from: impl Read, path: &Path, kind: Kind, unpacked: bool) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    from.take(kind.limit() + 1).read_to_end(&mut out).map_err(|e| {
        if unpacked {
            Error::Input { path: path.to_path_buf(), reason: format!("not gzip: {e}") }
        } else {
            Error::path(Access::Read, path, e)
        }
    })?;
    if out.len() as u64 > kind.limit() {
        return Err(too_large(path, kind, unpacked));
    }
    Ok(out)
}

/// The bytes of `path`, refused past `kind`'s limit without reading the rest.
pub(crate) fn read(path: &Path, kind: Kind) -> Result<Vec<u8>> {
    let file = std::fs::File::open(path).map_err(|e| Error::path(Access::Read, path, e))?;
    if let Ok(meta) = file.metadata()
        && meta.is_dir()
    {
        return Err(Error::Input { path: path.to_path_buf(), reason: "is a folder, not a file".into() });
    }
    read_limited(file, path, kind, false)
}

/// The text of `path` (UTF-8), refused past `kind`'s limit.
pub(crate) fn read_text(path: &Path, kind: Kind) -> Result<String> {
    let bytes = read(path, kind)?;
    String::from_utf8(bytes)
        .map_err(|e| Error::Input { path: path.to_path_buf(), reason: format!("not UTF-8 text: {e}") })
}

/// Unpacks gzip bytes (read from `path`), refused when they unpack past `kind`'s limit.
pub(crate) fn gunzip(gz: &[u8], path: &Path, kind: Kind) -> Result<Vec<u8>> {
    read_limited(flate2::read::GzDecoder::new(gz), path, kind, true)
}

/// Writes `bytes` to `dir/rel` without following a symlink: a symlinked folder on the way is
/// refused, and the file goes through a temporary file created exclusively and renamed over
/// the target (which replaces a link there instead of writing through it).
pub(crate) fn write_new(dir: &Path, rel: &str, bytes: &[u8]) -> Result<()> {
    let path = dir.join(rel);
    let parent = path.parent().unwrap_or(dir);
    if !dir.exists() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(Access::Create, dir, e))?;
    }
    let mut at = dir.to_path_buf();
    for c in Path::new(rel).parent().map(|p| p.components()).into_iter().flatten() {
        match c {
            Component::Normal(name) => at.push(name),
            _ => return Err(Error::path(Access::Write, &path, "the name leaves the output folder")),
        }
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(Error::path(
                    Access::Write,
                    &path,
                    format!("{} is a symbolic link; queuebench writes no file through one", at.display()),
                ));
            }
            Ok(m) if !m.is_dir() => {
                return Err(Error::io(Access::Create, &at, "a file of that name is in the way"));
            }
            Ok(_) => {}
            Err(_) => std::fs::create_dir(&at).map_err(|e| Error::io(Access::Create, &at, e))?,
        }
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = parent.join(format!(".{name}.tmp-{}-{:08x}", std::process::id(), rand::random::<u32>()));
    let written = (|| -> std::io::Result<()> {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(bytes)?;
        f.flush()
    })();
    let result = written
        .map_err(|e| Error::io(Access::Write, &tmp, e))
        .and_then(|()| std::fs::rename(&tmp, &path).map_err(|e| Error::io(Access::RenameTo(path.clone()), &tmp, e)));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_file_is_refused_after_its_limit() {
        let e = read(Path::new("/dev/zero"), Kind::Scenario).unwrap_err();
        assert_eq!(e.exit_code(), crate::error::ExitCode::Usage);
        let text = e.to_string();
        assert!(text.contains("/dev/zero") && text.contains("1 MiB"), "{text}");
    }

    #[test]
    fn a_gzip_bomb_is_refused_while_unpacking() {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..3 {
            enc.write_all(&zeros).unwrap();
        }
        let gz = enc.finish().unwrap();
        assert!(gz.len() < 1 << 20);
        let e = gunzip(&gz, Path::new("h.csv.gz"), Kind::Scenario).unwrap_err().to_string();
        assert!(e.contains("unpacks to more than") && e.contains("h.csv.gz"), "{e}");
        assert_eq!(gunzip(&gz, Path::new("h"), Kind::Summary).unwrap().len(), 3 << 20);
    }

    #[test]
    fn writes_replace_a_link_and_refuse_a_linked_folder() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("precious");
        std::fs::write(&target, "mine").unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join("report.html")).unwrap();
        write_new(dir.path(), "report.html", b"report").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "mine");
        assert_eq!(std::fs::read_to_string(dir.path().join("report.html")).unwrap(), "report");
        std::os::unix::fs::symlink(outside.path(), dir.path().join("charts")).unwrap();
        let e = write_new(dir.path(), "charts/a.svg", b"x").unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        assert!(!outside.path().join("a.svg").exists());
        write_new(dir.path(), "sub/deeper/b.txt", b"b").unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join("sub/deeper/b.txt")).unwrap(), "b");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert!(left.iter().all(|n| !n.to_string_lossy().contains(".tmp-")), "{left:?}");
    }

    #[test]
    fn sizes_are_said_in_binary_units() {
        assert_eq!(size(Kind::Scenario.limit()), "1 MiB");
        assert_eq!(size(Kind::History.limit()), "4 GiB");
    }
}
