//! What users read names nothing they do not have: no background file by number ("seed 001",
//! a file of the development notes) and no tracker reference ("issue 6"). Searched: every
//! string literal of src/ (and src/cli.rs's doc comments, which are `--help`), README.md,
//! docs/, the shipped scenarios and CHANGELOG.md's newest section. No database.

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The offending phrase in `text`, if any: `seed 00…`/`seeds 00…` or `issue N`/`issue #N`.
fn offence(text: &str) -> Option<String> {
    let lower = text.to_lowercase();
    for needle in ["seed 00", "seeds 00"] {
        if let Some(at) = lower.find(needle) {
            return Some(text[at..].chars().take(20).collect());
        }
    }
    for (at, _) in lower.match_indices("issue ") {
        let after = lower[at + "issue ".len()..].trim_start_matches('#');
        if after.starts_with(|c: char| c.is_ascii_digit()) {
            return Some(text[at..].chars().take(20).collect());
        }
    }
    None
}

fn files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, ext, out);
        } else if p.extension().is_some_and(|x| x == ext) {
            out.push(p);
        }
    }
}

/// The string literals of one line of Rust (a plain scan: `"…"` pairs, escapes skipped), and
/// for src/cli.rs its doc comments too.
fn literals(line: &str, doc_comments: bool) -> Vec<String> {
    let t = line.trim_start();
    if t.starts_with("//") {
        return if doc_comments && t.starts_with("///") { vec![t.to_string()] } else { Vec::new() };
    }
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (&mut current, c) {
            (None, '/') if chars.peek() == Some(&'/') => break,
            (None, '"') => current = Some(String::new()),
            (None, _) => {}
            (Some(s), '\\') => {
                if let Some(n) = chars.next() {
                    s.push(n);
                }
            }
            (Some(_), '"') => out.push(current.take().unwrap()),
            (Some(s), c) => s.push(c),
        }
    }
    // A literal that goes on past the line end (a `\` continuation) counts too.
    out.extend(current);
    out
}

#[test]
fn no_background_file_or_tracker_reference_in_what_users_read() {
    let root = repo();
    let mut found = Vec::new();
    let mut rust = Vec::new();
    files(&root.join("src"), "rs", &mut rust);
    for file in rust {
        let text = std::fs::read_to_string(&file).unwrap();
        let cli = file.ends_with("src/cli.rs");
        for (i, line) in text.lines().enumerate() {
            for lit in literals(line, cli) {
                if let Some(o) = offence(&lit) {
                    found.push(format!("{}:{}: {o}", file.strip_prefix(&root).unwrap().display(), i + 1));
                }
            }
        }
    }
    let mut prose = vec![root.join("README.md")];
    files(&root.join("docs"), "md", &mut prose);
    files(&root.join("scenarios"), "toml", &mut prose);
    for file in prose {
        let text = std::fs::read_to_string(&file).unwrap();
        for (i, line) in text.lines().enumerate() {
            if let Some(o) = offence(line) {
                found.push(format!("{}:{}: {o}", file.strip_prefix(&root).unwrap().display(), i + 1));
            }
        }
    }
    // The newest CHANGELOG section is what a user reads first.
    let changelog = std::fs::read_to_string(root.join("CHANGELOG.md")).unwrap();
    let unreleased = changelog.split("\n## ").nth(1).unwrap_or_default();
    for line in unreleased.lines() {
        if let Some(o) = offence(line) {
            found.push(format!("CHANGELOG.md (Unreleased): {o}"));
        }
    }
    assert!(found.is_empty(), "say what the experiment or the rule is instead:\n{}", found.join("\n"));
}

#[test]
fn the_search_finds_what_it_is_meant_to_find() {
    assert!(offence("rule: issue 6: the smallest batch").is_some());
    assert!(offence("see issue #12").is_some());
    assert!(offence("seed 001's experiment").is_some());
    assert!(offence("seeds 000 and 001").is_some());
    assert!(offence("an issue with the seed 42").is_none());
    assert_eq!(literals(r#"    "a \"seed 001\" b", // issue 6"#, false), [r#"a "seed 001" b"#]);
    assert!(literals("/// issue 6", false).is_empty() && !literals("/// issue 6", true).is_empty());
}
