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
    &["error", "diag", "files", "model", "quote", "shutdown"],
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
    &["sweep", "commands", "explore", "cli", "lib"],
];

/// Imports that never happen, whatever the floors say, and why.
const NEVER: &[(&str, &[&str], &str)] = &[
    (
        "verify",
        &["db", "run", "agent", "pipeline", "report"],
        "checkers are pure functions over the evidence: no network, no output",
    ),
    (
        "model",
        &["adapter", "scenario", "db", "collect", "run", "verify", "report", "agent", "pipeline"],
        "the ground floor imports no stage",
    ),
    (
        "files",
        &["model", "adapter", "scenario", "db", "collect", "run", "verify", "report", "agent", "pipeline"],
        "the ground floor imports no stage",
    ),
    ("report", &["db", "agent"], "exporters never reach the database: they render what the run produced"),
    ("collect", &["verify", "report"], "evidence is gathered, not judged or rendered, where it is collected"),
    ("compare", &["db", "run"], "a comparison reads summaries only"),
];

/// Why `from` may never import `to`, if a rule says so.
fn never(from: &str, to: &str) -> Option<&'static str> {
    NEVER.iter().find(|(f, tos, _)| *f == from && tos.contains(&to)).map(|(_, _, why)| *why)
}

/// Every `Result<_, String>` outside test code: errors are typed (`error::Error`, `Invalid`).
#[test]
fn errors_are_typed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") && !p.ends_with("fuzz_tests.rs") {
                let text = std::fs::read_to_string(&p).unwrap();
                for (n, line, _) in code_lines(&text) {
                    let squeezed: String = line.chars().filter(|c| !c.is_whitespace()).collect();
                    if squeezed.contains("Result<") && squeezed.contains(",String>") {
                        found.push(format!("{}:{n}", p.strip_prefix(&root).unwrap().display()));
                    }
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "{} Result<_, String> in src/ (make the error a type):\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn test_modules_are_skipped_and_what_follows_them_is_read() {
    let text = "use crate::a::b;\n#[cfg(test)]\nmod tests {\n    use crate::c::d;\n    fn f() { if x { } }\n}\nuse crate::e::f;\n";
    let lines: Vec<String> = code_lines(text).into_iter().map(|(_, l, _)| l).collect();
    assert!(lines.iter().any(|l| l.contains("crate::a::b")));
    assert!(!lines.iter().any(|l| l.contains("crate::c::d")), "{lines:?}");
    assert!(lines.iter().any(|l| l.contains("crate::e::f")), "{lines:?}");
}

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

/// The code without comments, string contents and `#[cfg(test)]` items (kept: line numbers).
/// Every line of the file is read: a test module is skipped from its attribute to its closing
/// brace, and what follows it counts again.
fn code_lines(text: &str) -> Vec<(usize, String, bool)> {
    let mut out = Vec::new();
    let mut in_test = false;
    // Brace depth inside a skipped test item; None until its first `{`.
    let mut depth: Option<i64> = None;
    let mut prev_comment = String::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            in_test = true;
            depth = None;
        }
        if in_test {
            let code = line.split("//").next().unwrap_or("");
            let (open, close) = (code.matches('{').count() as i64, code.matches('}').count() as i64);
            if open > 0 || depth.is_some() {
                let d = depth.unwrap_or(0) + open - close;
                depth = Some(d);
                if d <= 0 {
                    in_test = false; // the item ends on this line
                }
            } else if code.trim_end().ends_with(';') && !code.trim_start().starts_with("#[") {
                in_test = false; // a one-line item: `#[cfg(test)] mod tests;` or a `use`
            }
            continue;
        }
        let t = line.trim_start();
        let code = match t.find("//") {
            Some(c) => &t[..c],
            None => t,
        };
        let upward = line.contains("// upward:") || prev_comment.contains("// upward:");
        prev_comment = if t.starts_with("//") { t.to_string() } else { String::new() };
        if !t.starts_with("//") {
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
    let mut forbidden = Vec::new();
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
                // lib.rs is the top floor's `lib`: a stage that names something of it imports upward.
                let top = |m: &Vec<String>| m.first().cloned().unwrap_or_else(|| "lib".to_string());
                let (from_top, to_top) = (&top(module), &top(&target));
                if from_top == to_top {
                    continue;
                }
                if let Some(never) = never(from_top, to_top) {
                    forbidden.push(format!("src/{rel}:{line_no} ({path}): {never}"));
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
    let lines: usize = tree.files.values().map(|f| std::fs::read_to_string(f).unwrap().lines().count()).sum();
    eprintln!(
        "read {} files, {lines} lines; {} folder-to-folder imports; {} upward; {} forbidden",
        tree.files.len(),
        folder_edges.len(),
        upward.len(),
        forbidden.len()
    );
    assert!(forbidden.is_empty(), "imports a rule forbids:\n{}", forbidden.join("\n"));
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
