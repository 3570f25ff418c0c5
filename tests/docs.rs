//! The documentation's links: README.md and every `docs/**/*.md` page.
//!
//! Every Markdown link or image outside fenced code blocks and code spans must
//! point at a file or folder of the repository (resolved from the linking
//! file's folder), and a `#fragment` must match a heading of the target page
//! (GitHub's slugs). README.md stays the front door: under 400 lines, linking
//! every top-level page of docs/, and every such page links back to it.
//! No database, std only.

use std::collections::{BTreeMap, HashMap};
use std::path::{Component, Path, PathBuf};

const README_MAX_LINES: usize = 400;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One link or image target found in a Markdown file.
#[derive(Debug, Clone, PartialEq)]
struct Link {
    /// 1-based line number in the file.
    line: usize,
    target: String,
}

/// A line of a Markdown file outside fenced code blocks, with its 1-based number.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    // The open fence: its character and length.
    let mut fence: Option<(char, usize)> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let run = |c: char| trimmed.chars().take_while(|&x| x == c).count();
        match fence {
            Some((c, n)) => {
                // A closing fence: the same character, at least as long, nothing after it.
                if run(c) >= n && trimmed.trim_end().chars().all(|x| x == c) {
                    fence = None;
                }
            }
            None => {
                // Fences may sit inside list items, so any indentation counts. A backtick
                // fence's info string cannot hold a backtick (that would be a code span).
                match ['`', '~'].into_iter().find(|&c| run(c) >= 3) {
                    Some(c) if c == '~' || !trimmed[run(c)..].contains('`') => fence = Some((c, run(c))),
                    _ => out.push((i + 1, line)),
                }
            }
        }
    }
    out
}

/// The byte index just past the code span that starts at `start` (a backtick
/// run), or None when the run is never closed on this line (then it is text).
fn code_span_end(s: &[u8], start: usize) -> Option<usize> {
    let n = s[start..].iter().take_while(|&&b| b == b'`').count();
    let mut i = start + n;
    while i < s.len() {
        if s[i] == b'`' {
            let m = s[i..].iter().take_while(|&&b| b == b'`').count();
            if m == n {
                return Some(i + m);
            }
            i += m;
        } else {
            i += 1;
        }
    }
    None
}

/// The index of the `]` closing the `[` at `open`, skipping code spans and nested brackets.
fn closing_bracket(s: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = open;
    while i < s.len() {
        match s[i] {
            b'\\' => i += 1,
            b'`' => {
                if let Some(end) = code_span_end(s, i) {
                    i = end;
                    continue;
                }
            }
            b'[' => depth += 1,
            b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The link destination in `(…)` starting at `open`: (target, index past the `)`).
fn destination(line: &str, open: usize) -> Option<(String, usize)> {
    let s = line.as_bytes();
    let mut i = open + 1;
    while i < s.len() && s[i] == b' ' {
        i += 1;
    }
    if i < s.len() && s[i] == b'<' {
        let close = line[i..].find('>')? + i;
        let end = line[close..].find(')')? + close;
        return Some((line[i + 1..close].to_string(), end + 1));
    }
    let start = i;
    let mut depth = 0usize;
    while i < s.len() {
        match s[i] {
            b'\\' => i += 1,
            b'(' => depth += 1,
            b')' if depth == 0 => break,
            b')' => depth -= 1,
            b' ' | b'\t' | b'\n' => break,
            _ => {}
        }
        i += 1;
    }
    let target = line[start..i.min(s.len())].to_string();
    // An optional title, then the closing parenthesis.
    let end = line[i.min(s.len())..].find(')')? + i;
    Some((target, end + 1))
}

/// Every inline link and image target of a text (code spans skipped), with the byte
/// offset of its `[`. The text may span lines: link text can wrap.
fn inline_links(line: &str) -> Vec<(usize, String)> {
    let s = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'\\' => i += 2,
            b'`' => match code_span_end(s, i) {
                Some(end) => i = end,
                None => i += s[i..].iter().take_while(|&&b| b == b'`').count(),
            },
            b'[' => match closing_bracket(s, i) {
                Some(close) if s.get(close + 1) == Some(&b'(') => match destination(line, close + 1) {
                    Some((target, end)) => {
                        // The link text may hold an image (a linked badge): scan it too.
                        out.extend(inline_links(&line[i + 1..close]).into_iter().map(|(at, t)| (i + 1 + at, t)));
                        out.push((i, target));
                        i = end;
                    }
                    None => i = close + 1,
                },
                // `[text]` without a destination, or `[[x]]`: look inside for links.
                Some(_) | None => i += 1,
            },
            _ => i += 1,
        }
    }
    out
}

/// Every link and image target of a Markdown text, outside fenced code blocks:
/// inline `[text](target)` / `![alt](target)` and reference definitions `[ref]: target`.
fn links(text: &str) -> Vec<Link> {
    let mut out = Vec::new();
    let lines = prose_lines(text);
    let mut k = 0;
    while k < lines.len() {
        // One paragraph at a time (consecutive non-blank lines), since a link's text may wrap.
        let mut end = k;
        while end < lines.len() && !lines[end].1.trim().is_empty() && (end == k || lines[end].0 == lines[end - 1].0 + 1)
        {
            end += 1;
        }
        if end == k {
            k += 1;
            continue;
        }
        let mut joined = String::new();
        // Where each line starts in `joined`, and its number.
        let mut starts = Vec::new();
        for &(line, body) in &lines[k..end] {
            starts.push((joined.len(), line));
            let trimmed = body.trim_start();
            if let Some(rest) = trimmed.strip_prefix('[')
                && let Some(close) = rest.find("]:")
                && let Some(target) = rest[close + 2..].split_whitespace().next()
            {
                let target = target.trim_start_matches('<').trim_end_matches('>').to_string();
                out.push(Link { line, target });
            }
            joined.push_str(body);
            joined.push('\n');
        }
        for (at, target) in inline_links(&joined) {
            let line = starts.iter().rev().find(|(offset, _)| *offset <= at).map_or(0, |&(_, line)| line);
            out.push(Link { line, target });
        }
        k = end;
    }
    // Stable: links on one line stay in their order.
    out.sort_by_key(|l| l.line);
    out
}

/// The heading text as GitHub renders it for the slug: code spans keep their
/// text, links keep their text, emphasis markers and HTML tags go.
fn heading_text(raw: &str) -> String {
    let mut text = String::new();
    let s = raw.as_bytes();
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'`' => match code_span_end(s, i) {
                Some(end) => {
                    let n = s[i..].iter().take_while(|&&b| b == b'`').count();
                    text.push_str(raw[i + n..end - n].trim());
                    i = end;
                }
                None => i += 1,
            },
            b'[' => match closing_bracket(s, i) {
                Some(close) if s.get(close + 1) == Some(&b'(') => {
                    text.push_str(&heading_text(&raw[i + 1..close]));
                    i = destination(raw, close + 1).map_or(close + 1, |(_, end)| end);
                }
                _ => {
                    text.push('[');
                    i += 1;
                }
            },
            b'<' => match raw[i..].find('>') {
                Some(end) => i += end + 1,
                None => {
                    text.push('<');
                    i += 1;
                }
            },
            b'*' => i += 1,
            _ => {
                let c = raw[i..].chars().next().unwrap();
                text.push(c);
                i += c.len_utf8();
            }
        }
    }
    text
}

/// GitHub's anchor for a heading: lowercase, letters, digits, `_`, `-` and
/// spaces kept (spaces become `-`), everything else dropped.
fn slug(heading: &str) -> String {
    heading_text(heading)
        .trim()
        .to_lowercase()
        .chars()
        .filter(|&c| c.is_alphanumeric() || c == '_' || c == '-' || c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown text: one per heading (ATX and setext), the
/// second of a kind suffixed `-1`, the third `-2` …, plus explicit `id=`/`name=` anchors.
fn anchors(text: &str) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    // As github-slugger does it: the base slug's counter picks the next suffix.
    let mut add = |base: String, out: &mut Vec<String>| {
        let mut candidate = base.clone();
        while seen.contains_key(&candidate) {
            let n = seen.get_mut(&base).unwrap();
            *n += 1;
            candidate = format!("{base}-{n}");
        }
        seen.insert(candidate.clone(), 0);
        out.push(candidate);
    };
    let lines = prose_lines(text);
    for (k, &(number, line)) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let hashes = trimmed.chars().take_while(|&c| c == '#').count();
        if indent < 4 && (1..=6).contains(&hashes) && trimmed[hashes..].chars().next().is_none_or(|c| c == ' ') {
            // The optional closing sequence of #s goes.
            let body = trimmed[hashes..].trim();
            let body = match body.trim_end_matches('#') {
                b if b.is_empty() || b.ends_with(' ') => b.trim_end(),
                _ => body,
            };
            add(slug(body), &mut out);
        }
        // Setext: a line of = or - right under a line of text (not a table row or list item).
        let underline = trimmed.trim_end();
        if k > 0
            && indent < 4
            && !underline.is_empty()
            && (underline.chars().all(|c| c == '=') || underline.chars().all(|c| c == '-'))
        {
            let (prev_number, prev) = lines[k - 1];
            let p = prev.trim();
            if prev_number + 1 == number && !p.is_empty() && !p.starts_with(['#', '|', '-', '*', '>']) {
                add(slug(p), &mut out);
            }
        }
        for attr in ["id=\"", "name=\""] {
            let mut rest = line;
            while let Some(at) = rest.find(attr) {
                let after = &rest[at + attr.len()..];
                if rest[..at].contains('<')
                    && let Some(end) = after.find('"')
                {
                    out.push(after[..end].to_string());
                }
                rest = after;
            }
        }
    }
    out
}

/// `%XX` escapes decoded (link targets may escape spaces and the like).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && let Some(v) = s.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `path` with `.` and `..` resolved lexically; None when it climbs above the root.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            other => out.push(other),
        }
    }
    Some(out)
}

/// README.md and every Markdown file under docs/, as paths relative to the repository.
fn markdown_files(root: &Path) -> Vec<PathBuf> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(root.join(dir))
            .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
            .map(|e| e.unwrap().file_name())
            .collect();
        entries.sort();
        for name in entries {
            let rel = dir.join(&name);
            if root.join(&rel).is_dir() {
                walk(root, &rel, out);
            } else if rel.extension().is_some_and(|x| x == "md") {
                out.push(rel);
            }
        }
    }
    let mut out = vec![PathBuf::from("README.md")];
    walk(root, Path::new("docs"), &mut out);
    out
}

fn is_external(target: &str) -> bool {
    let lower = target.to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("mailto:")
}

/// Checks every link of every file; returns the problems, each naming file, line and link,
/// and the set of files each file links to.
fn check(root: &Path, files: &[PathBuf]) -> (Vec<String>, BTreeMap<PathBuf, Vec<PathBuf>>) {
    let mut texts: HashMap<PathBuf, String> = HashMap::new();
    let read = |texts: &mut HashMap<PathBuf, String>, rel: &Path| -> Option<String> {
        if !texts.contains_key(rel) {
            texts.insert(rel.to_path_buf(), std::fs::read_to_string(root.join(rel)).ok()?);
        }
        texts.get(rel).cloned()
    };
    let mut problems = Vec::new();
    let mut linked: BTreeMap<PathBuf, Vec<PathBuf>> = BTreeMap::new();
    for file in files {
        let text = read(&mut texts, file).unwrap_or_else(|| panic!("reading {}", file.display()));
        let dir = file.parent().unwrap_or(Path::new(""));
        for link in links(&text) {
            let problem = |what: String| format!("{}:{}: link `{}`: {what}", file.display(), link.line, link.target);
            if is_external(&link.target) {
                continue;
            }
            if link.target.is_empty() {
                problems.push(problem("empty target".into()));
                continue;
            }
            let (path, fragment) = match link.target.split_once('#') {
                Some((p, f)) => (p, Some(f)),
                None => (link.target.as_str(), None),
            };
            let path = percent_decode(path);
            if path.contains(':') {
                problems.push(problem("not a relative path (only http, https and mailto links go outside)".into()));
                continue;
            }
            let target = if path.is_empty() {
                file.clone()
            } else if let Some(from_root) = path.strip_prefix('/') {
                PathBuf::from(from_root)
            } else {
                dir.join(&path)
            };
            let Some(target) = normalize(&target) else {
                problems.push(problem("climbs out of the repository".into()));
                continue;
            };
            if !root.join(&target).exists() {
                problems.push(problem(format!("{} does not exist", target.display())));
                continue;
            }
            linked.entry(file.clone()).or_default().push(target.clone());
            let Some(fragment) = fragment else { continue };
            let fragment = percent_decode(fragment);
            if target.extension().is_none_or(|x| x != "md") {
                // Line anchors of source files and the like: nothing to check against.
                continue;
            }
            let Some(target_text) = read(&mut texts, &target) else {
                problems.push(problem(format!("{} is not readable text", target.display())));
                continue;
            };
            let anchors = anchors(&target_text);
            if !anchors.contains(&fragment) {
                let close: Vec<&String> =
                    anchors.iter().filter(|a| a.contains(&fragment) || fragment.contains(a.as_str())).collect();
                problems.push(problem(format!(
                    "{} has no heading #{fragment}{}",
                    target.display(),
                    if close.is_empty() { String::new() } else { format!(" (close: {close:?})") }
                )));
            }
        }
    }
    (problems, linked)
}

#[test]
fn every_link_resolves() {
    let root = repo();
    let files = markdown_files(&root);
    assert!(files.len() > 1, "no pages under docs/");
    let (problems, _) = check(&root, &files);
    assert!(problems.is_empty(), "{} broken link(s):\n{}", problems.len(), problems.join("\n"));
}

#[test]
fn readme_is_the_front_door() {
    let root = repo();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(lines < README_MAX_LINES, "README.md: {lines} lines, must stay under {README_MAX_LINES}");

    let files = markdown_files(&root);
    let (_, linked) = check(&root, &files);
    let from_readme = linked.get(Path::new("README.md")).cloned().unwrap_or_default();
    let mut problems = Vec::new();
    for page in files.iter().filter(|p| p.parent() == Some(Path::new("docs"))) {
        if !from_readme.contains(page) {
            problems.push(format!("README.md: no link to {}", page.display()));
        }
        let text = std::fs::read_to_string(root.join(page)).unwrap();
        let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        if !inline_links(first).iter().any(|(_, t)| t.split('#').next() == Some("../README.md")) {
            problems.push(format!(
                "{}:1: the first line should link back to ../README.md, found `{first}`",
                page.display()
            ));
        }
        let to_pages = linked
            .get(page)
            .map_or(0, |ts| ts.iter().filter(|t| t.starts_with("docs") && t.as_path() != page.as_path()).count());
        if to_pages == 0 {
            problems.push(format!("{}: links to no other docs page (add a See also line)", page.display()));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn slugs_follow_github() {
    assert_eq!(slug("Strategies: SQL as data"), "strategies-sql-as-data");
    assert_eq!(slug("Evidence, checks and summary.json"), "evidence-checks-and-summaryjson");
    assert_eq!(slug("The `--reuse` flag"), "the---reuse-flag");
    assert_eq!(slug("Harness ÷ pgbench"), "harness--pgbench");
    assert_eq!(slug("Über_Größe 2"), "über_größe-2");
    assert_eq!(slug("[Link](x.md) and *emphasis*"), "link-and-emphasis");
    assert_eq!(slug("Sweeps – time scaling"), "sweeps--time-scaling");
    let text = "# A\n\n## Notes\n\n```sh\n# not a heading\n```\n\n## Notes\n\nNotes\n-----\n\n### Closed ##\n";
    assert_eq!(anchors(text), ["a", "notes", "notes-1", "notes-2", "closed"]);
}

#[test]
fn links_are_found_outside_code_only() {
    let text = "\
see [one](a.md) and ![img](b.png) and [`code` text](c.md#x \"title\")
`[not](a link)` and [[faults]] and [plain] text
```toml
[x](inside.md)
```
  ~~~
  [y](inside-too.md)
  ~~~
[ref]: d.md
<https://example.org> [web](https://example.org) [a (paren)](e(1).md)

a link whose [text
wraps](w.md) and [a][b] (not-a-link.md)
";
    let found: Vec<(usize, String)> = links(text).into_iter().map(|l| (l.line, l.target)).collect();
    let expected = [
        (1, "a.md"),
        (1, "b.png"),
        (1, "c.md#x"),
        (9, "d.md"),
        (10, "https://example.org"),
        (10, "e(1).md"),
        (12, "w.md"),
    ];
    assert_eq!(found, expected.map(|(l, t)| (l, t.to_string())));
}

#[test]
fn every_script_is_listed_in_the_development_page_and_there_are_at_most_ten() {
    let page = std::fs::read_to_string(repo().join("docs/development.md")).unwrap();
    let mut missing = Vec::new();
    let mut names = Vec::new();
    for entry in std::fs::read_dir(repo().join("scripts")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        let listed = page.contains(&format!("| `{name}`")) || page.contains(&format!("(+ `{name}/`)"));
        if !listed {
            missing.push(name.clone());
        }
        names.push(name);
    }
    missing.sort();
    assert!(missing.is_empty(), "scripts/ files not in docs/development.md's Scripts table: {missing:?}");
    names.sort();
    assert!(names.len() <= 10, "scripts/ keeps at most 10 files (what computes is `cargo xtask`): {names:?}");
}

/// docs/pool.md's table of refusals names exactly the capabilities the pool transport does not
/// declare (`model::transport`), so the page cannot drift from what validation refuses.
#[test]
fn the_pool_page_lists_the_capabilities_the_pool_lacks() {
    use queuebench::model::transport::TransportKind;
    let text = std::fs::read_to_string(repo().join("docs/pool.md")).unwrap();
    let marker = "<!-- pool-refusals:";
    let table = &text[text.find(marker).expect("docs/pool.md has the pool-refusals table")..];
    let rows: Vec<&str> = table.lines().skip(3).take_while(|l| l.starts_with('|')).collect();
    let listed: Vec<String> = rows
        .iter()
        .map(|r| r.trim_start_matches('|').split('|').next().unwrap().trim().trim_matches('`').to_string())
        .collect();
    let lacks: Vec<String> = TransportKind::Pool.lacks().map(|c| c.name().to_string()).collect();
    assert_eq!(listed, lacks, "docs/pool.md's refusals table, against TransportKind::Pool's declaration");
    // The faults each capability stands for are named (failover and kill_agent were once left out).
    for fault in ["kill_backend", "ack_lost", "postgres_restart", "failover", "kill_agent"] {
        assert!(rows.iter().any(|r| r.contains(&format!("`{fault}`"))), "docs/pool.md's refusals name {fault}");
    }
}
