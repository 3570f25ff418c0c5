//! Baselines on disk and the things `compare` accepts.
//!
//! `--save-baseline NAME` writes `<baseline dir>/NAME/<scenario>.json` (default dir
//! `baselines/` in the working directory, so it can be committed; `--baseline-dir` moves it):
//! `{"queuebench_baseline": 1, "name", "scenario", "saved_at", "runs": [summary, …]}`, one
//! summary per repeat. `compare OLD NEW` takes a summary.json, a run folder (its summary.json,
//! or its `repeat-*/summary.json`), a baseline file, or a baseline name.

use crate::error::{Access, BaselineProblem, Error, Result};
use crate::model::summary::RunSummary;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Baseline {
    pub queuebench_baseline: u32,
    pub name: String,
    pub scenario: String,
    pub saved_at: String,
    pub runs: Vec<RunSummary>,
}

pub(crate) fn path(dir: &Path, name: &str, scenario: &str) -> PathBuf {
    dir.join(name).join(format!("{scenario}.json"))
}

/// A baseline name is a plain file-name part: letters, digits, `-`, `_`, `.`.
pub(crate) fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && !name.starts_with('.')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok { Ok(()) } else { Err(Error::Baseline { name: name.to_string(), problem: BaselineProblem::BadName }) }
}

pub(crate) fn save(dir: &Path, name: &str, runs: &[RunSummary]) -> Result<PathBuf> {
    let scenario = runs.first().map(|r| r.scenario.clone()).unwrap_or_default();
    let file = path(dir, name, &scenario);
    let b = Baseline {
        queuebench_baseline: 1,
        name: name.to_string(),
        scenario,
        saved_at: chrono::Utc::now().to_rfc3339(),
        runs: runs.to_vec(),
    };
    let parent = file.parent().expect("a baseline file has a folder");
    std::fs::create_dir_all(parent).map_err(|e| Error::path(Access::Create, parent, e))?;
    std::fs::write(&file, serde_json::to_vec_pretty(&b).expect("baseline serialises"))
        .map_err(|e| Error::path(Access::Write, &file, e))?;
    Ok(file)
}

/// The baseline `name` of `scenario` for `run --baseline`.
pub(crate) fn load_named(dir: &Path, name: &str, scenario: &str) -> Result<(String, Vec<RunSummary>)> {
    let file = path(dir, name, scenario);
    if !file.exists() {
        return Err(Error::Baseline {
            name: name.to_string(),
            problem: BaselineProblem::Missing { scenario: scenario.to_string(), file },
        });
    }
    Ok((format!("baseline {name}"), read_file(&file)?))
}

/// Whatever `compare` was given: a path (summary.json, run folder, baseline file) or a baseline name.
pub(crate) fn load_any(arg: &str, dir: &Path) -> Result<(String, Vec<RunSummary>)> {
    let p = Path::new(arg);
    if p.is_file() {
        return Ok((arg.to_string(), read_file(p)?));
    }
    if p.is_dir() {
        let summary = p.join("summary.json");
        if summary.is_file() {
            return Ok((arg.to_string(), read_file(&summary)?));
        }
        let mut repeats: Vec<PathBuf> = list(p)?
            .into_iter()
            .filter(|d| d.file_name().is_some_and(|n| n.to_string_lossy().starts_with("repeat-")))
            .map(|d| d.join("summary.json"))
            .filter(|f| f.is_file())
            .collect();
        repeats.sort();
        if !repeats.is_empty() {
            let runs = repeats.iter().map(|f| read_file(f)).collect::<Result<Vec<_>>>()?;
            return Ok((arg.to_string(), runs.into_iter().flatten().collect()));
        }
    }
    let named = dir.join(arg);
    if check_name(arg).is_ok() && named.is_dir() {
        let files: Vec<PathBuf> =
            list(&named)?.into_iter().filter(|f| f.extension().is_some_and(|e| e == "json")).collect();
        return match files.as_slice() {
            [one] => Ok((format!("baseline {arg}"), read_file(one)?)),
            [] => Err(Error::Baseline { name: arg.to_string(), problem: BaselineProblem::Empty { dir: named } }),
            many => Err(Error::Baseline {
                name: arg.to_string(),
                problem: BaselineProblem::Several { files: many.to_vec() },
            }),
        };
    }
    Err(Error::Baseline { name: arg.to_string(), problem: BaselineProblem::Unknown { dir: dir.to_path_buf() } })
}

fn list(dir: &Path) -> Result<Vec<PathBuf>> {
    let rd = std::fs::read_dir(dir).map_err(|e| Error::path(Access::Read, dir, e))?;
    Ok(rd.flatten().map(|e| e.path()).collect())
}

/// A baseline file (its runs) or a summary.json (one run).
fn read_file(file: &Path) -> Result<Vec<RunSummary>> {
    let input = |reason: String| Error::Input { path: file.to_path_buf(), reason: crate::error::filter(&reason) };
    let text = crate::files::read_text(file, crate::files::Kind::Summary)?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| input(format!("not JSON: {e}")))?;
    let bad = |e: serde_json::Error| input(format!("not a queuebench summary or baseline: {e}"));
    if value.get("queuebench_baseline").is_some() {
        let b: Baseline = serde_json::from_value(value).map_err(bad)?;
        if b.runs.is_empty() {
            return Err(input("the baseline holds no runs".into()));
        }
        Ok(b.runs)
    } else if value.get("schema_version").is_some() {
        Ok(vec![serde_json::from_value(value).map_err(bad)?])
    } else {
        Err(input("not a queuebench summary or baseline".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_baselines_load_by_name_path_and_folder() {
        let dir = tempfile::tempdir().unwrap();
        let runs = vec![
            RunSummary { scenario: "smoke".into(), schema_version: 1, ..Default::default() },
            RunSummary { scenario: "smoke".into(), schema_version: 1, ..Default::default() },
        ];
        let file = save(dir.path(), "main", &runs).unwrap();
        assert_eq!(file, dir.path().join("main/smoke.json"));
        assert_eq!(load_named(dir.path(), "main", "smoke").unwrap().1.len(), 2);
        assert!(load_named(dir.path(), "nope", "smoke").unwrap_err().to_string().contains("--save-baseline nope"));
        assert_eq!(load_any("main", dir.path()).unwrap().1.len(), 2);
        assert_eq!(load_any(file.to_str().unwrap(), dir.path()).unwrap().1.len(), 2);
        let run_dir = dir.path().join("run");
        std::fs::create_dir_all(run_dir.join("repeat-1")).unwrap();
        std::fs::create_dir_all(run_dir.join("repeat-2")).unwrap();
        for r in ["repeat-1", "repeat-2"] {
            std::fs::write(run_dir.join(r).join("summary.json"), serde_json::to_vec(&runs[0]).unwrap()).unwrap();
        }
        assert_eq!(load_any(run_dir.to_str().unwrap(), dir.path()).unwrap().1.len(), 2);
        assert!(load_any("nothing-here", dir.path()).is_err());
        assert!(check_name("../x").is_err() && check_name("v1.2_rc-1").is_ok());
    }
}
