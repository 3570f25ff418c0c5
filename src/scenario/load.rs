//! Reading a scenario file and applying `--set key=value` overrides.
//!
//! The file is parsed twice when there are overrides: once as written, so an
//! error in the file names its line and column, and once with the overrides
//! applied, so an override gets exactly the same validation as the file.

use super::raw::RawScenario;
/// Where a scenario author finds every key (said after a missing key).
const SCENARIO_KEYS: &str = "docs/scenario-files.md lists every key";

use crate::error::{Access, Error, Invalid, Result};
use crate::error::{toml_error, toml_hint};
use std::path::{Path, PathBuf};

/// Where a scenario came from, kept so later errors can point at a line.
#[derive(Debug, Clone)]
pub struct Source {
    pub path: PathBuf,
    pub text: String,
    /// The `--set` overrides as given (`workers.count=16`).
    pub overrides: Vec<String>,
}

impl Source {
    /// A rule broken at a dotted key: the error names the file and the key's line, or the
    /// `--set` that supplied the value.
    pub fn error(&self, key: &str, reason: impl std::fmt::Display) -> Error {
        let via_set = self.overrides.iter().find(|o| o.split('=').next() == Some(key)).cloned();
        Error::Scenario {
            file: self.path.clone(),
            line: find_key_line(&self.text, key),
            key: key.to_string(),
            via_set,
            reason: reason.to_string(),
        }
    }
}

impl Source {
    /// Does the file or a `--set` give this key (rather than its default)?
    pub fn gives(&self, key: &str) -> bool {
        self.overrides.iter().any(|o| o.split('=').next() == Some(key)) || find_key_line(&self.text, key).is_some()
    }

    /// The folder the scenario's relative paths start from.
    /// The fingerprint's `scenario_hash`: the file with its overrides applied, without what
    /// does not change the load (`description`, `seed`, `[expect]`, `[baseline]`), written out
    /// with its keys in order, so comments, layout and an edited expectation do not count.
    pub fn content_hash(&self) -> String {
        let mut table: toml::Table = toml::from_str(&self.text).unwrap_or_default();
        for set in &self.overrides {
            let _ = apply_override(&mut table, set);
        }
        for key in ["description", "seed", "expect", "baseline"] {
            table.remove(key);
        }
        crate::model::fingerprint::hash(&toml::to_string(&table).unwrap_or_default())
    }

    pub fn folder(&self) -> &Path {
        self.path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))
    }
}

/// Reads and parses `path`, then applies `sets` on top.
pub(crate) fn load(path: &Path, sets: &[String]) -> Result<(RawScenario, Source)> {
    let text = match crate::files::read_text(path, crate::files::Kind::Scenario) {
        Err(Error::Path { cause, .. }) => {
            return Err(Error::Path { action: Access::ReadScenario, path: path.into(), cause });
        }
        other => other?,
    };
    let not_a_scenario = |sets: &[String], e: Invalid| Error::ScenarioFile {
        file: path.to_path_buf(),
        sets: sets.to_vec(),
        reason: e.reason,
    };
    let raw = parse_text(&text).map_err(|e| not_a_scenario(&[], e))?;
    let source = Source { path: path.to_path_buf(), text, overrides: sets.to_vec() };
    if sets.is_empty() {
        return Ok((raw, source));
    }
    let mut table: toml::Table = toml::from_str(&source.text)
        .map_err(|e| not_a_scenario(&[], Invalid::new(toml_error(&e, &source.text, SCENARIO_KEYS))))?;
    for set in sets {
        apply_override(&mut table, set).map_err(|invalid| Error::FlagValue {
            flag: "--set".into(),
            value: Some(set.clone()),
            invalid,
        })?;
    }
    let raw = RawScenario::deserialize_table(table).map_err(|e| not_a_scenario(sets, e))?;
    Ok((raw, source))
}

impl RawScenario {
    fn deserialize_table(table: toml::Table) -> std::result::Result<RawScenario, Invalid> {
        use serde::Deserialize;
        RawScenario::deserialize(table).map_err(|e| Invalid::new(toml_hint(e.to_string(), SCENARIO_KEYS)))
    }
}

/// Parses scenario text; the error names line and column and suggests the nearest key.
pub(crate) fn parse_text(text: &str) -> std::result::Result<RawScenario, Invalid> {
    toml::from_str::<RawScenario>(text).map_err(|e| Invalid::new(toml_error(&e, text, SCENARIO_KEYS)))
}

/// Applies one `dotted.key=value`. The value is read as TOML if it parses
/// (`16`, `true`, `"x"`, `{ p50 = "8ms", p99 = "70ms" }`) and as a string otherwise (`30s`).
pub(crate) fn apply_override(table: &mut toml::Table, set: &str) -> std::result::Result<(), Invalid> {
    let (key, value) =
        set.split_once('=').ok_or_else(|| Invalid::new("expected key=value, e.g. --set workers.count=16"))?;
    let path = split_key(key.trim())?;
    let value = parse_value(value.trim());
    let (last, parents) = path.split_last().ok_or_else(|| Invalid::new("empty key"))?;
    let mut node = table;
    for (i, part) in parents.iter().enumerate() {
        let entry = node.entry(part.clone()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
        node = entry.as_table_mut().ok_or_else(|| {
            Invalid::new(format!("`{}` is a value, not a table, so `{key}` cannot be set", path[..=i].join(".")))
        })?;
    }
    if let Some(toml::Value::Table(keys)) = node.get(last.as_str())
        && !value.is_table()
    {
        let example = keys.keys().next().map_or("KEY", String::as_str);
        return Err(Invalid::new(format!(
            "`{key}` is a table of keys ({}), not a value; set one of them, e.g. --set {key}.{example}=…",
            keys.keys().map(String::as_str).collect::<Vec<_>>().join(", ")
        )));
    }
    node.insert(last.clone(), value);
    Ok(())
}

fn parse_value(text: &str) -> toml::Value {
    let doc = format!("v = {text}");
    match toml::from_str::<toml::Table>(&doc) {
        Ok(mut t) => t.remove("v").unwrap_or(toml::Value::String(text.into())),
        Err(_) => toml::Value::String(text.into()),
    }
}

/// Splits `a.b."c.d"` into `["a", "b", "c.d"]`.
fn split_key(key: &str) -> std::result::Result<Vec<String>, Invalid> {
    let mut parts = Vec::new();
    let mut rest = key;
    while !rest.is_empty() {
        if let Some(quoted) = rest.strip_prefix('"') {
            let end = quoted.find('"').ok_or_else(|| Invalid::new(format!("unclosed quote in `{key}`")))?;
            parts.push(quoted[..end].to_string());
            rest = &quoted[end + 1..];
        } else {
            let end = rest.find('.').unwrap_or(rest.len());
            parts.push(rest[..end].to_string());
            rest = &rest[end..];
        }
        if let Some(r) = rest.strip_prefix('.') {
            rest = r;
            if rest.is_empty() {
                return Err(Invalid::new(format!("`{key}` ends with a dot")));
            }
        } else if !rest.is_empty() {
            return Err(Invalid::new(format!("unexpected text after a quoted part of `{key}`")));
        }
    }
    if parts.iter().any(|p| p.is_empty()) {
        return Err(Invalid::new(format!("`{key}` has an empty part")));
    }
    Ok(parts)
}

pub(crate) use crate::error::find_key_line;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_content_hash_follows_the_load_not_the_wording() {
        let source = |text: &str, sets: &[&str]| Source {
            path: PathBuf::from("s.toml"),
            text: text.into(),
            overrides: sets.iter().map(|s| s.to_string()).collect(),
        };
        let base = "name = \"x\"\nseed = 1\n[workers]\ncount = 8\nbatch = 1\n[expect]\n\"jobs.lost\" = \"== 0\"\n";
        let h = source(base, &[]).content_hash();
        // Comments, layout, key order, the seed, the description and expectations do not count.
        let reworded = "# comment\ndescription = \"d\"\nname = \"x\"\nseed = 7\n[workers]\nbatch = 1\ncount   = 8\n";
        assert_eq!(source(reworded, &[]).content_hash(), h);
        assert_eq!(source(base, &["expect={}", "seed=9"]).content_hash(), h);
        // The load does, from the file or a --set.
        assert_ne!(source(&base.replace("count = 8", "count = 16"), &[]).content_hash(), h);
        assert_ne!(source(base, &["workers.count=16"]).content_hash(), h);
        assert_eq!(source(base, &["workers.count=8"]).content_hash(), h);
    }

    #[test]
    fn unknown_key_names_line_and_nearest_key() {
        let err = parse_text("name = \"x\"\n[workers]\ncoutn = 8\n").unwrap_err().reason;
        assert!(err.contains("line 3"), "{err}");
        assert!(err.contains("coutn"), "{err}");
        assert!(err.contains("did you mean `count`?"), "{err}");
    }

    #[test]
    fn overrides_set_nested_values_and_types() {
        let mut t: toml::Table = toml::from_str("name = \"x\"\n[workers]\ncount = 2\n").unwrap();
        apply_override(&mut t, "workers.count=16").unwrap();
        apply_override(&mut t, "lease.duration=30s").unwrap();
        apply_override(&mut t, "expect.\"jobs.lost\"=== 0").unwrap();
        assert_eq!(t["workers"]["count"].as_integer(), Some(16));
        assert_eq!(t["lease"]["duration"].as_str(), Some("30s"));
        assert_eq!(t["expect"]["jobs.lost"].as_str(), Some("== 0"));
    }

    #[test]
    fn a_value_for_a_table_names_the_key_not_a_rust_type() {
        let mut t: toml::Table = toml::from_str("[workers]\ncount = 2\nbatch = 1\n").unwrap();
        let e = apply_override(&mut t, "workers=3").unwrap_err();
        assert!(e.reason.contains("`workers` is a table of keys (batch, count)"), "{}", e.reason);
        assert!(e.reason.contains("--set workers.batch=…"), "{}", e.reason);
        let e = parse_text("workers = 3\n").unwrap_err();
        assert!(!e.reason.contains("Raw"), "{}", e.reason);
        assert!(e.reason.contains("expected a table of keys"), "{}", e.reason);
    }

    #[test]
    fn bad_override_paths_are_errors() {
        let mut t: toml::Table = toml::from_str("name = \"x\"\n").unwrap();
        assert!(apply_override(&mut t, "workers.count").is_err());
        assert!(apply_override(&mut t, "name.first=1").unwrap_err().reason.contains("not a table"));
        assert!(apply_override(&mut t, "workers..count=1").is_err());
        assert!(apply_override(&mut t, "workers.=1").is_err());
    }

    #[test]
    fn finds_lines_of_keys() {
        let text = "name = \"x\"\n\n[workers]\ncount = 0\n[lease]\nduration = \"1s\"\n";
        assert_eq!(find_key_line(text, "workers.count"), Some(4));
        assert_eq!(find_key_line(text, "lease.duration"), Some(6));
        assert_eq!(find_key_line(text, "name"), Some(1));
        assert_eq!(find_key_line(text, "jobs.preload"), None);
    }
}
