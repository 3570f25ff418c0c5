//! The shape of the code, checked: data flows one way (docs/architecture.md).
//!
//! Reads every `src/**/*.rs` (without its `#[cfg(test)]` part and comments), finds each
//! `crate::…`, `super::…` and child-module path it uses, and checks:
//! - no two top-level modules (folders) import each other, and the folder graph has no cycle;
//! - no import circle between files (a parent module and its own children do not count: a
//!   `mod.rs` re-exporting what its children define is structure, not a circle);
//! - an import that runs up the floors (`FLOORS` below, lowest first) carries a one-line
//!   `// upward: <reason>` comment on its line or the line above, and there are at most two.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The floors, lowest first. A module may import its own floor and the ones below.
const FLOORS: &[&[&str]] = &[
    &["error", "diag", "files", "model"],
    &["adapter"],
    &["scenario"],
    &["db"],
    &["collect"],
    &["run"],
    &["verify"],
    &["gate", "compare"],
    &["report"],
    &["options"],
    &["agent"],
    &["pipeline"],
    &["sweep", "commands", "cli", "lib"],
];

fn floor(top: &str) -> usize {
    FLOORS
        .iter()
        .position(|f| f.contains(&top))
        .unwrap_or_else(|| panic!("module `{top}` is on no floor: add it to FLOORS"))
}

/// A source file as a module path (`["run", "worker"]`; `lib.rs` is `[]`).
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop().unwrap();
    match last.as_str() {
        "lib.rs" | "mod.rs" => {}
        f => parts.push(f.trim_end_matches(".rs").to_string()),
    }
    parts
}

/// The code without comments, string contents and the `#[cfg(test)]` module (kept: line numbers).
fn code_lines(text: &str) -> Vec<(usize, String, bool)> {
    let mut out = Vec::new();
    let mut in_test = false;
    let mut prev_comment = String::new();
    for (i, line) in text.lines().enumerate() {
        if line.starts_with("#[cfg(test)]") {
            in_test = true;
        }
        let t = line.trim_start();
        let code = match t.find("//") {
            Some(c) => &t[..c],
            None => t,
        };
        let upward = line.contains("// upward:") || prev_comment.contains("// upward:");
        prev_comment = if t.starts_with("//") { t.to_string() } else { String::new() };
        if !in_test && !t.starts_with("//") {
            // Drop string literals so paths in messages are not read as imports.
            let mut s = String::new();
            let mut quoted = false;
            for ch in code.chars() {
                if ch == '"' {
                    quoted = !quoted;
                } else if !quoted {
                    s.push(ch);
                }
            }
            out.push((i + 1, s, upward));
        }
    }
    out
}

/// Paths a line uses: `crate::a::b`, `super::x`, and `use name::…` of a child module.
fn paths(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    // Expand one level of `use a::{b, c::d}` groups.
    let expanded = if let (Some(open), Some(close)) = (line.find("::{"), line.rfind('}')) {
        let head_start =
            line[..open].rfind(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).map_or(0, |i| i + 1);
        let head = &line[head_start..open];
        line[open + 3..close].split(',').map(|p| format!("{head}::{}", p.trim())).collect::<Vec<_>>().join(" ")
    } else {
        line.to_string()
    };
    let chars: Vec<char> = expanded.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let starts_word = i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_' || chars[i - 1] == ':');
        if starts_word && (chars[i].is_alphabetic() || chars[i] == '_') {
            let mut j = i;
            while j < chars.len() && (chars[j].is_alphanumeric() || chars[j] == '_' || chars[j] == ':') {
                j += 1;
            }
            let word: String = chars[i..j].iter().collect();
            if word.contains("::") {
                found.push(word.trim_end_matches(':').to_string());
            }
            i = j;
        } else {
            i += 1;
        }
    }
    found
}

struct Tree {
    /// module path → file
    files: BTreeMap<Vec<String>, PathBuf>,
}

impl Tree {
    /// The deepest module that a path names (an item's path names its module).
    fn resolve(&self, from: &[String], path: &str, children: &BTreeSet<String>) -> Option<Vec<String>> {
        let mut segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
        let mut base: Vec<String> = match segs.first().copied()? {
            "crate" => {
                segs.remove(0);
                Vec::new()
            }
            "super" => {
                let mut b = from.to_vec();
                while segs.first() == Some(&"super") {
                    segs.remove(0);
                    b.pop()?;
                }
                b
            }
            "self" => {
                segs.remove(0);
                from.to_vec()
            }
            first if children.contains(first) => from.to_vec(),
            _ => return None,
        };
        let mut best = if self.files.contains_key(&base) { Some(base.clone()) } else { None };
        for s in segs {
            base.push(s.to_string());
            if self.files.contains_key(&base) {
                best = Some(base.clone());
            } else {
                break;
            }
        }
        best
    }
}

fn is_ancestor(a: &[String], b: &[String]) -> bool {
    a.len() < b.len() && b[..a.len()] == *a
}

#[test]
fn data_flows_one_way() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut tree = Tree { files: BTreeMap::new() };
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                if p.file_name().unwrap() != "bin" {
                    stack.push(p);
                }
            } else if p.extension().is_some_and(|e| e == "rs") {
                let rel = p.strip_prefix(&root).unwrap();
                if rel != Path::new("main.rs") && rel != Path::new("fuzz_tests.rs") {
                    tree.files.insert(module_of(rel), p.clone());
                }
            }
        }
    }
    // file edges and folder edges, with where they are written
    let mut file_edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    let mut folder_edges: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    let mut upward = Vec::new();
    let mut unexplained = Vec::new();
    for (module, file) in &tree.files {
        let text = std::fs::read_to_string(file).unwrap();
        let children: BTreeSet<String> = text
            .lines()
            .filter_map(|l| l.trim().strip_prefix("pub mod ").or_else(|| l.trim().strip_prefix("mod ")))
            .filter_map(|l| l.strip_suffix(';'))
            .map(String::from)
            .collect();
        let rel = file.strip_prefix(&root).unwrap().display().to_string();
        for (line_no, line, marked) in code_lines(&text) {
            if line.trim_start().starts_with("pub mod ") || line.trim_start().starts_with("mod ") {
                continue;
            }
            for path in paths(&line) {
                let Some(target) = tree.resolve(module, &path, &children) else { continue };
                if &target == module {
                    continue;
                }
                if !is_ancestor(&target, module) && !is_ancestor(module, &target) {
                    file_edges.entry(module.clone()).or_default().insert(target.clone());
                }
                let (Some(from_top), Some(to_top)) = (module.first(), target.first()) else { continue };
                if from_top == to_top {
                    continue;
                }
                let at = format!("src/{rel}:{line_no} ({path})");
                folder_edges.entry((from_top.clone(), to_top.clone())).or_default().push(at.clone());
                if floor(to_top) > floor(from_top) {
                    upward.push(at.clone());
                    if !marked {
                        unexplained.push(at);
                    }
                }
            }
        }
    }
    // lib.rs is the dispatch on the top floor; its imports are downward by definition.
    let mutual: Vec<String> = folder_edges
        .keys()
        .filter(|(a, b)| a < b && folder_edges.contains_key(&(b.clone(), a.clone())))
        .map(|(a, b)| {
            format!(
                "{a} ↔ {b}: {} / {}",
                folder_edges[&(a.clone(), b.clone())][0],
                folder_edges[&(b.clone(), a.clone())][0]
            )
        })
        .collect();
    assert!(mutual.is_empty(), "folders that import each other:\n{}", mutual.join("\n"));
    let cycles = find_cycles(&file_edges);
    assert!(cycles.is_empty(), "import circles between files:\n{}", cycles.join("\n"));
    assert!(
        unexplained.is_empty(),
        "upward imports without a `// upward: <reason>` comment:\n{}",
        unexplained.join("\n")
    );
    assert!(upward.len() <= 2, "more than two upward imports:\n{}", upward.join("\n"));
}

/// Every strongly connected set of more than one file, as `a → b → a`.
fn find_cycles(edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<String> {
    let nodes: BTreeSet<&Vec<String>> = edges.keys().chain(edges.values().flatten()).collect();
    let reach = |from: &Vec<String>| -> BTreeSet<Vec<String>> {
        let mut seen = BTreeSet::new();
        let mut todo: Vec<Vec<String>> = edges.get(from).into_iter().flatten().cloned().collect();
        while let Some(n) = todo.pop() {
            if seen.insert(n.clone()) {
                todo.extend(edges.get(&n).into_iter().flatten().cloned());
            }
        }
        seen
    };
    let name = |m: &Vec<String>| if m.is_empty() { "lib".to_string() } else { m.join("::") };
    let mut out = BTreeSet::new();
    for n in &nodes {
        let r = reach(n);
        if r.contains(*n) {
            let mut group: Vec<String> = r.iter().filter(|m| reach(m).contains(*n)).map(name).collect();
            group.sort();
            out.insert(group.join(" ↔ "));
        }
    }
    out.into_iter().collect()
}
