//! `queuebench compare OLD NEW`: the baseline table for two sets of summaries.

use crate::cli;
use crate::compare::{self, Labels};
use crate::error::{Access, Error, ExitCode, Result};
use crate::pipeline;
use std::path::Path;

/// `queuebench compare OLD NEW`: the baseline table for two sets of summaries. Runs whose
/// fingerprints differ are refused (exit 2) unless `force`; then, and for summaries without a
/// fingerprint, the table starts with what could not be vouched for.
pub(crate) fn compare_runs(
    old: &str,
    new: &str,
    args: &cli::BaselineArgs,
    out: Option<&Path>,
    force: bool,
) -> Result<ExitCode> {
    if let Some(dir) = out {
        check_out(dir)?;
    }
    let (old_label, old_runs) = compare::store::load_any(old, &args.baseline_dir)?;
    let (new_label, new_runs) = compare::store::load_any(new, &args.baseline_dir)?;
    let (o, n) = (&old_runs[0].scenario, &new_runs[0].scenario);
    if o != n {
        eprintln!("warning: comparing different scenarios: `{o}` and `{n}`");
    }
    let names: Vec<String> = new_runs.iter().chain(&old_runs).flat_map(|r| r.metrics().into_keys()).collect();
    let mut tol = scenario_tolerances(Path::new(new), &names)?;
    for t in &args.tolerance {
        tol.set_cli(t, &names)?;
    }
    let c = compare::compare(&old_runs, &new_runs, &tol, Labels { old: &old_label, new: &new_label });
    let differences = c.fingerprint.differences();
    if !differences.is_empty() && !force {
        return Err(Error::NotComparable {
            old: old_label,
            new: new_label,
            differences: differences.iter().map(ToString::to_string).collect(),
        });
    }
    print!("{}", compare::table(&c));
    if let Some(dir) = out {
        write_out(dir, &c)?;
    }
    Ok(if c.regressed { ExitCode::ExpectationFailed } else { ExitCode::Passed })
}

/// `--out DIR` must be a new or empty folder: compare never writes among other files (nor
/// over an earlier comparison's). Checked before anything is read or written (exit 2).
fn check_out(dir: &Path) -> Result<()> {
    let refuse = |what: String| Error::Flag {
        flag: format!("--out {}", dir.display()),
        reason: format!(
            "refused: {what}; compare writes compare.md and compare.json only into a new or empty folder: \
             pick one (nothing was written)"
        ),
    };
    if dir.exists() && !dir.is_dir() {
        return Err(refuse("it is not a folder".into()));
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok(()) };
    let mut names: Vec<String> = entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    if names.is_empty() {
        return Ok(());
    }
    names.sort_unstable();
    let more = if names.len() > 3 { format!(" and {} more", names.len() - 3) } else { String::new() };
    names.truncate(3);
    Err(refuse(format!("the folder is not empty ({}{more})", names.join(", "))))
}

/// compare.md and compare.json into `dir`, both or neither: a file that cannot be written is
/// an error naming its path (exit 3); what was written of the pair, and the folder if this
/// call made it, are removed again.
fn write_out(dir: &Path, c: &compare::Comparison) -> Result<()> {
    use crate::report::export::Exporter;
    let fresh = !dir.exists();
    std::fs::create_dir_all(dir).map_err(|e| Error::path(Access::Create, dir, e))?;
    let files = pipeline::comparison_files(c).files()?;
    let mut written = Vec::new();
    for f in &files {
        let path = dir.join(&f.path);
        if let Err(e) = crate::report::export::write_atomic(&path, &f.bytes) {
            for p in &written {
                let _ = std::fs::remove_file(p);
            }
            if fresh {
                let _ = std::fs::remove_dir(dir);
            }
            return Err(e);
        }
        written.push(path);
    }
    Ok(())
}

/// `[baseline.tolerance]` of the scenario a run folder saved (`scenario.toml`, or a repeat's).
fn scenario_tolerances(run: &Path, names: &[String]) -> Result<compare::Tolerances> {
    // Read as a run folder's file: a regular file inside the folder, never through a link.
    let there = |name: &str| std::fs::symlink_metadata(run.join(name)).is_ok();
    let Some(name) = ["scenario.toml", "repeat-1/scenario.toml"].into_iter().find(|name| there(name)) else {
        return Ok(compare::Tolerances::default());
    };
    let file = run.join(name);
    let not_usable = |reason: String| Error::ScenarioFile { file: file.clone(), sets: Vec::new(), reason };
    let text = crate::files::read_in_folder(run, name, crate::files::Kind::Scenario)?;
    let text = String::from_utf8(text).map_err(|e| not_usable(format!("not UTF-8 text: {e}")))?;
    let table: toml::Table =
        toml::from_str(&text).map_err(|e| not_usable(crate::error::toml_error(&e, &text, "docs/scenario-files.md")))?;
    let tolerance = table.get("baseline").and_then(|b| b.get("tolerance")).and_then(|t| t.as_table());
    let pairs: Vec<(String, String)> = tolerance
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_str().map_or_else(|| v.to_string(), String::from)))
        .collect();
    compare::Tolerances::from_pairs(pairs.iter().map(|(k, v)| (k, v)), names).map_err(|e| Error::Scenario {
        file: file.clone(),
        line: None,
        key: format!("baseline.tolerance.{}", e.key.unwrap_or_default()),
        via_set: None,
        reason: e.reason,
    })
}
