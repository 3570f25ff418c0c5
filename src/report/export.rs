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
pub trait Exporter {
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
pub fn one<B: Into<Vec<u8>>>(path: &'static str, render: impl Fn() -> B) -> Output<impl Fn() -> Result<Vec<File>>> {
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
pub fn write(dir: &Path, required: &[&dyn Exporter], rest: &[&dyn Exporter]) -> Result<Written> {
    let mut written = Written::default();
    for e in required {
        for f in e.files()? {
            let path = dir.join(&f.path);
            write_atomic(&path, &f.bytes)?;
            written.files.push(path);
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
            let path = dir.join(&f.path);
            match write_plain(&path, &f.bytes) {
                Ok(()) => written.files.push(path),
                Err(err) => {
                    let _ = std::fs::remove_file(&path);
                    failed.push((f.path, err.to_string()));
                }
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

/// A best-effort file: its folder created, then the file.
fn write_plain(path: &Path, bytes: &[u8]) -> std::result::Result<(), NotWritten> {
    let reason = |action: &str, e: std::io::Error| NotWritten(format!("cannot {action}: {}", plain_io(&e)));
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| reason("create its folder", e))?;
    }
    std::fs::write(path, bytes).map_err(|e| reason("write", e))
}

/// An io::Error as words: `No space left on device (os error 28)`; a custom error's own text.
fn plain_io(e: &std::io::Error) -> String {
    match e.get_ref() {
        Some(inner) => inner.to_string(),
        None => e.to_string(),
    }
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(Access::Create, parent, e))?;
    }
    std::fs::write(path, bytes).map_err(|e| Error::io(Access::Write, path, e))
}

/// Writes `path` through a temporary file in the same folder and a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    let result = write_file(&tmp, bytes).and_then(|()| {
        std::fs::rename(&tmp, path).map_err(|e| Error::io(Access::RenameTo(path.to_path_buf()), &tmp, e))
    });
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(|e| Error::io(Access::Replace, path, e))
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
