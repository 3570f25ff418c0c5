//! The plan as the coordinator hands it to agents: the scenario's text, its `--set`
//! overrides, the resolved seed and an adapter file of the user's own, so an agent on another
//! host builds exactly the coordinator's plan without the files.

use crate::adapter::Origin;
use crate::error::{Error, Result};
use crate::scenario::Plan;
use serde::{Deserialize, Serialize};
use std::path::{Component, Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Bundle {
    pub run_id: String,
    /// The coordinator's version: an agent of another version refuses to join.
    pub version: String,
    /// The scenario file's name and text.
    pub file_name: String,
    pub text: String,
    pub overrides: Vec<String>,
    pub seed: u64,
    /// An adapter file of the user's own: its path relative to the scenario, and its text.
    pub adapter: Option<(String, String)>,
    /// How many agents the run waits for.
    pub agents: u32,
}

/// The bundle of `plan`. An adapter file must sit in the scenario's folder or below (or at
/// most three folders up), as the agents rebuild that layout.
pub(crate) fn of(plan: &Plan, run_id: &str, agents: u32) -> Result<Bundle> {
    let scenario = &plan.source.path;
    let folder = scenario.parent().unwrap_or(Path::new(""));
    let adapter = match &plan.adapter.origin {
        Origin::File(path) if path.exists() => {
            let relative = relative_to(path, folder).ok_or_else(|| Error::ScenarioFile {
                file: scenario.clone(),
                sets: plan.source.overrides.clone(),
                reason: format!(
                    "agents rebuild the scenario's folder: its adapter file {} must be in it, below it, or at most \
                     three folders up",
                    path.display()
                ),
            })?;
            let text = crate::files::read_text(path, crate::files::Kind::Scenario)?;
            Some((relative.to_string_lossy().into_owned(), text))
        }
        _ => None,
    };
    Ok(Bundle {
        run_id: run_id.to_string(),
        version: crate::model::VERSION.to_string(),
        file_name: scenario.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or("scenario.toml".into()),
        text: plan.source.text.clone(),
        overrides: plan.source.overrides.clone(),
        seed: plan.seed,
        adapter,
        agents,
    })
}

/// `path` relative to `folder`, lexically, with at most three `..`.
fn relative_to(path: &Path, folder: &Path) -> Option<PathBuf> {
    let (p, f): (Vec<Component>, Vec<Component>) = (path.components().collect(), folder.components().collect());
    let common = p.iter().zip(&f).take_while(|(a, b)| a == b).count();
    let ups = f.len() - common;
    if ups > 3 || p[common..].iter().any(|c| !matches!(c, Component::Normal(_))) {
        return None;
    }
    let mut out: PathBuf = std::iter::repeat_n(Component::ParentDir, ups).collect();
    out.extend(&p[common..]);
    Some(out)
}

impl Bundle {
    /// The plan, built as the coordinator built it: the files written into `dir` (three
    /// folders deep, so an adapter up to three folders up stays inside it).
    pub(crate) fn plan(&self, dir: &Path) -> Result<Plan> {
        let here = dir.join("a").join("b").join("c");
        let file = here.join(sanitized(&self.file_name));
        let write = |path: &Path, text: &str| {
            let parent = path.parent().unwrap_or(dir);
            std::fs::create_dir_all(parent)
                .and_then(|()| std::fs::write(path, text))
                .map_err(|e| Error::io(crate::error::Access::Write, path.to_path_buf(), e))
        };
        write(&file, &self.text)?;
        if let Some((relative, text)) = &self.adapter {
            let relative = Path::new(relative);
            if relative.is_absolute() || relative.components().filter(|c| *c == Component::ParentDir).count() > 3 {
                return Err(Error::Agents {
                    run: self.run_id.clone(),
                    reason: format!("the plan names an adapter file outside its folder: {}", relative.display()),
                });
            }
            write(&here.join(relative), text)?;
        }
        crate::scenario::plan_from_file(&file, &self.overrides, Some(self.seed))
    }
}

/// A file name without folders (the bundle came over the network).
fn sanitized(name: &str) -> String {
    let base = Path::new(name).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if base.is_empty() || base.starts_with('.') { "scenario.toml".into() } else { base }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_stay_within_three_folders_up() {
        assert_eq!(relative_to(Path::new("/s/a/x.toml"), Path::new("/s/a")), Some(PathBuf::from("x.toml")));
        assert_eq!(relative_to(Path::new("/s/q.toml"), Path::new("/s/a/b")), Some(PathBuf::from("../../q.toml")));
        assert_eq!(relative_to(Path::new("/q.toml"), Path::new("/s/a/b/c")), None);
    }

    #[test]
    fn a_bundle_rebuilds_the_same_plan() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.toml");
        std::fs::write(&file, "name = \"s\"\n[workers]\ncount = 4\n[jobs]\npreload = 100\n").unwrap();
        let plan = crate::scenario::plan_from_file(&file, &["workers.count=6".into()], None).unwrap();
        let bundle = of(&plan, "r1", 2).unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let again = bundle.plan(elsewhere.path()).unwrap();
        assert_eq!((again.seed, again.workers.count, again.jobs.preload), (plan.seed, 6, 100));
        assert_eq!(again.source.text, plan.source.text);
    }
}
