//! The one place queuebench writes its outputs. Every output is an [`Exporter`]: it turns
//! what it was given into files (a path under the output folder, and bytes) and writes
//! nothing itself. [`write`] writes them in order:
//!
//! - the *required* exporters first (a run's `summary.json`: its verdict): each file is
//!   written to a temporary file beside it and renamed over it, so a reader never sees half
//!   of one; a failure here is the export's failure (exit 3), reported with the verdict;
//! - then every other exporter, best-effort: a failure is a warning naming the file and the
//!   reason (files that failed for the same reason share one line: a full disk is one line,
//!   not forty), a partly written file is removed, and each is returned in `not_written`
//!   (`file: reason`) so the run can record it.

use crate::error::{Access, Error, Result};
use std::path::{Path, PathBuf};

/// One file: its path relative to the output folder, and its bytes.
pub struct File {
    pub path: String,
    pub bytes: Vec<u8>,
}

impl File {
    pub fn new(path: impl Into<String>, bytes: impl Into<Vec<u8>>) -> File {
        File { path: path.into(), bytes: bytes.into() }
    }
}

/// Something that becomes files.
pub(crate) trait Exporter {
    /// What it writes, for the warning when rendering fails (`report.html`, `charts`).
    fn what(&self) -> &str;
    /// The files, rendered; no I/O.
    fn files(&self) -> Result<Vec<File>>;
}

/// An exporter from a name and a closure: most exporters are one function call.
pub struct Output<F: Fn() -> Result<Vec<File>>>(pub &'static str, pub F);

impl<F: Fn() -> Result<Vec<File>>> Exporter for Output<F> {
    fn what(&self) -> &str {
        self.0
    }
    fn files(&self) -> Result<Vec<File>> {
        (self.1)()
    }
}

/// A single file from a closure that renders its bytes.
pub(crate) fn one<B: Into<Vec<u8>>>(
    path: &'static str,
    render: impl Fn() -> B,
) -> Output<impl Fn() -> Result<Vec<File>>> {
    Output(path, move || Ok(vec![File::new(path, render())]))
}

/// What an export wrote, and what it could not (`file: reason`).
#[derive(Debug, Default)]
pub struct Written {
    pub files: Vec<PathBuf>,
    pub not_written: Vec<String>,
}

/// Writes the required exporters' files (atomically; the first failure is returned), then
/// every other exporter's, best-effort, each failure a warning on stderr.
pub(crate) fn write(dir: &Path, required: &[&dyn Exporter], rest: &[&dyn Exporter]) -> Result<Written> {
    let mut written = Written::default();
    for e in required {
        for f in e.files()? {
            crate::files::write_new(dir, &f.path, &f.bytes).map_err(|e| replaced(&dir.join(&f.path), e))?;
            written.files.push(dir.join(&f.path));
        }
    }
    let mut failed: Vec<(String, String)> = Vec::new();
    for e in rest {
        let files = match e.files() {
            Ok(files) => files,
            Err(err) => {
                failed.push((e.what().to_string(), err.to_string()));
                continue;
            }
        };
        for f in files {
            match write_plain(dir, &f.path, &f.bytes) {
                Ok(()) => written.files.push(dir.join(&f.path)),
                Err(err) => failed.push((f.path, err.to_string())),
            }
        }
    }
    warn(&failed);
    written.not_written = failed.into_iter().map(|(what, why)| format!("{what}: {why}")).collect();
    Ok(written)
}

/// One warning line per reason: `warning: not written (REASON): a, b, c`.
fn warn(failed: &[(String, String)]) {
    let mut reasons: Vec<&str> = Vec::new();
    for (_, why) in failed {
        if !reasons.contains(&why.as_str()) {
            reasons.push(why);
        }
    }
    for why in reasons {
        let files: Vec<&str> = failed.iter().filter(|(_, w)| w == why).map(|(f, _)| f.as_str()).collect();
        match files.as_slice() {
            [one] => eprintln!("warning: {one} was not written: {why}"),
            many => eprintln!("warning: {} files were not written ({why}): {}", many.len(), many.join(", ")),
        }
    }
}

/// Why a best-effort file was not written: the reason alone (the file is named beside it), an
/// io::Error's own words without Rust's debug form.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct NotWritten(String);

/// A best-effort file, written as every output is ([`crate::files::write_new`]: its folders
/// created, no symlink followed, whole or not at all); the reason alone when it fails.
fn write_plain(dir: &Path, rel: &str, bytes: &[u8]) -> std::result::Result<(), NotWritten> {
    crate::files::write_new(dir, rel, bytes).map_err(|e| NotWritten(cause_of(&e)))
}

/// An error's cause in words (`No space left on device (os error 28)`), without the path the
/// warning names anyway.
fn cause_of(e: &Error) -> String {
    match e {
        Error::Io { action, cause: Some(cause), .. } | Error::Path { action, cause: Some(cause), .. } => {
            let verb = match action {
                Access::Create => "cannot create its folder",
                _ => "cannot write",
            };
            format!("{verb}: {cause}")
        }
        other => other.to_string(),
    }
}

fn replaced(path: &Path, e: Error) -> Error {
    match e {
        Error::Io { .. } => Error::io(Access::Replace, path, e),
        refused => refused,
    }
}

/// Writes `path` whole or not at all, following no symlink ([`crate::files::write_new`]).
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let (dir, name) = match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) => (dir, name.to_string_lossy().into_owned()),
        _ => return Err(Error::io(Access::Write, path, "not a file name")),
    };
    crate::files::write_new(dir, &name, bytes).map_err(|e| replaced(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn required_files_land_whole_and_the_rest_is_best_effort() {
        let dir = tempfile::tempdir().unwrap();
        let summary = one("summary.json", || "{}");
        let broken = Output("charts", || Err(Error::machine("chart t", "no font")));
        // A file whose folder is a file: it cannot be written.
        std::fs::write(dir.path().join("blocked"), "").unwrap();
        let blocked = one("blocked/x.csv", || "a");
        let fine = one("sub/ok.txt", || "b");
        let w = write(dir.path(), &[&summary], &[&broken, &blocked, &fine]).unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join("summary.json")).unwrap(), "{}");
        assert_eq!(std::fs::read_to_string(dir.path().join("sub/ok.txt")).unwrap(), "b");
        assert_eq!(w.files.len(), 2);
        assert_eq!(w.not_written.len(), 2, "{:?}", w.not_written);
        assert!(w.not_written[0].starts_with("charts: chart t: no font"));
        assert!(w.not_written[1].starts_with("blocked/x.csv: cannot create its folder: "), "{:?}", w.not_written);
        assert!(!w.not_written[1].contains("Os {") && !w.not_written[1].contains("Custom {"), "{:?}", w.not_written);
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".tmp-"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    #[test]
    fn a_required_file_that_cannot_be_written_fails_the_export() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("x"), "").unwrap();
        let summary = one("x/summary.json", || "{}");
        let e = write(dir.path(), &[&summary], &[]).unwrap_err();
        assert!(e.to_string().contains("summary.json"), "{e}");
    }
}
