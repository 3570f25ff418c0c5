//! The results folder of one run: never written over by accident, always whole or marked.
//!
//! - [`check_output_folder`]: `--out DIR` into a folder that holds anything is refused
//!   (exit 2) unless `--force`; checked for every folder of a batch before any run starts.
//! - [`ResultsFolder`]: created and proved writable before the database is opened, with an
//!   `INCOMPLETE` marker file in it that is removed only when every output was written; a
//!   run killed while writing, or one whose outputs could not all be written, leaves the
//!   marker (naming the run and what is missing). A run that fails before writing removes
//!   the folder again if it made it.

use crate::error::{Access, Error, Result};
use std::path::{Path, PathBuf};

/// The marker of a run folder that is not (yet) whole.
pub(crate) const INCOMPLETE: &str = "INCOMPLETE";

/// Refuses an output folder that already holds something, unless `force`.
pub(crate) fn check_output_folder(dir: &Path, force: bool) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok(()) };
    let names: Vec<String> = entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    if names.is_empty() || force {
        return Ok(());
    }
    let what = match earlier_run(dir) {
        Some(id) => format!("holds the outputs of run {id}"),
        None => {
            let mut shown: Vec<&str> = names.iter().map(String::as_str).collect();
            shown.sort_unstable();
            let more = if shown.len() > 3 { format!(" and {} more", shown.len() - 3) } else { String::new() };
            shown.truncate(3);
            format!("is not empty ({}{more}) and is not a queuebench run folder", shown.join(", "))
        }
    };
    Err(Error::Flag {
        flag: format!("--out {}", dir.display()),
        reason: format!(
            "refused: the folder {what}; pick a new or empty folder (or leave out --out: \
             results/<scenario>/<run id>/), or add --force to write into it (files of the same name are replaced)"
        ),
    })
}

/// The run id in `dir/summary.json`, if it is a run folder.
fn earlier_run(dir: &Path) -> Option<String> {
    let text = crate::files::read_text(&dir.join("summary.json"), crate::files::Kind::Summary).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    Some(v.get("run_id")?.as_str()?.to_string())
}

/// Folders made for an output (`results/<scenario>/<run id>` and any parent that was missing),
/// deepest last, so that a run or sweep that fails before writing can remove them again.
#[derive(Debug, Default)]
pub(super) struct Made(Vec<PathBuf>);

impl Made {
    /// Creates `path` and its missing parents, remembering which it made.
    pub(super) fn create(path: &Path, access: Access) -> Result<Made> {
        let missing: Vec<PathBuf> =
            path.ancestors().take_while(|a| !a.as_os_str().is_empty() && !a.exists()).map(Path::to_path_buf).collect();
        std::fs::create_dir_all(path).map_err(|e| Error::path(access, path, e))?;
        Ok(Made(missing.into_iter().rev().collect()))
    }

    /// Removes what it made, deepest first, each only while empty (`remove_dir` removes no
    /// folder that holds anything).
    pub(super) fn remove_if_empty(&self) {
        for dir in self.0.iter().rev() {
            if std::fs::remove_dir(dir).is_err() {
                break;
            }
        }
    }
}

/// The results folder of one run: created (and proved writable) before anything starts.
pub(super) struct ResultsFolder<'a> {
    path: &'a Path,
    /// The folders it made: removed again if the run fails before writing.
    made: Made,
}

impl<'a> ResultsFolder<'a> {
    /// Creates the folder and its `INCOMPLETE` marker (which also proves it writable).
    pub(super) fn create(path: &'a Path, run_id: &str) -> Result<Self> {
        let made = Made::create(path, Access::CreateResultsFolder)?;
        let marker = format!(
            "queuebench run {run_id} has not finished writing this folder.\n\
             If this file stays, the run was killed while it ran or wrote, or some outputs could not be written\n\
             (listed below, and in summary.json's not_written when that was written).\n"
        );
        if let Err(e) = std::fs::write(path.join(INCOMPLETE), marker) {
            made.remove_if_empty();
            return Err(Error::path(Access::WriteInResultsFolder, path, e));
        }
        Ok(ResultsFolder { path, made })
    }

    /// Passes `result` through; on an error, removes the marker and leaves no empty folder
    /// behind (`remove_dir` removes only an empty one).
    pub(super) fn keep_if_ok<T>(&self, result: Result<T>) -> Result<T> {
        if result.is_err() {
            let _ = std::fs::remove_file(self.path.join(INCOMPLETE));
            self.made.remove_if_empty();
        }
        result
    }

    /// After the export: the marker goes when everything was written, else it lists what was not.
    pub(super) fn finish(&self, not_written: Option<&[String]>) {
        let marker = self.path.join(INCOMPLETE);
        match not_written {
            Some([]) => {
                let _ = std::fs::remove_file(marker);
            }
            Some(list) => {
                let mut text = std::fs::read_to_string(&marker).unwrap_or_default();
                text.push_str("\nNot written:\n");
                for line in list {
                    text.push_str(&format!("  {line}\n"));
                }
                let _ = std::fs::write(marker, text);
            }
            // summary.json itself failed: the marker stays as it is.
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_that_holds_anything_is_refused_unless_forced() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("out");
        check_output_folder(&d, false).unwrap();
        std::fs::create_dir(&d).unwrap();
        check_output_folder(&d, false).unwrap();
        std::fs::write(d.join("notes.txt"), "mine").unwrap();
        let e = check_output_folder(&d, false).unwrap_err().to_string();
        assert!(e.contains("is not empty (notes.txt) and is not a queuebench run folder"), "{e}");
        assert!(e.contains("--force"), "{e}");
        check_output_folder(&d, true).unwrap();
        std::fs::write(d.join("summary.json"), r#"{"run_id": "20261201T011303-d796"}"#).unwrap();
        let e = check_output_folder(&d, false).unwrap_err().to_string();
        assert!(e.contains("holds the outputs of run 20261201T011303-d796"), "{e}");
    }

    #[test]
    fn the_marker_stays_until_everything_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("run");
        let f = ResultsFolder::create(&d, "r1").unwrap();
        assert!(d.join(INCOMPLETE).exists());
        f.finish(Some(&["charts: disk full".to_string()]));
        let text = std::fs::read_to_string(d.join(INCOMPLETE)).unwrap();
        assert!(text.contains("run r1") && text.contains("charts: disk full"), "{text}");
        f.finish(Some(&[]));
        assert!(!d.join(INCOMPLETE).exists());
        let g = ResultsFolder::create(&d, "r2").unwrap();
        let _ = g.keep_if_ok::<()>(Err(Error::machine("x", "y")));
        assert!(d.exists() && !d.join(INCOMPLETE).exists(), "a folder that was there stays, without the marker");
        let fresh = dir.path().join("fresh");
        let h = ResultsFolder::create(&fresh, "r3").unwrap();
        let _ = h.keep_if_ok::<()>(Err(Error::machine("x", "y")));
        assert!(!fresh.exists(), "a fresh folder of a failed run is removed");
        // results/<scenario>/<run id>, all three new: none stays after a refusal.
        let deep = dir.path().join("results/scn/run-1");
        let k = ResultsFolder::create(&deep, "r4").unwrap();
        let _ = k.keep_if_ok::<()>(Err(Error::machine("x", "y")));
        assert!(!dir.path().join("results").exists(), "the parents it made go too");
        // A parent that holds another run's folder stays.
        std::fs::create_dir_all(dir.path().join("results/scn/old")).unwrap();
        let k = ResultsFolder::create(&deep, "r5").unwrap();
        let _ = k.keep_if_ok::<()>(Err(Error::machine("x", "y")));
        assert!(!deep.exists() && dir.path().join("results/scn/old").exists());
    }
}
