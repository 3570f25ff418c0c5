//! Every `queuebench …` command the docs show (README.md and docs/*.md, in `sh`, `bash`,
//! `console` and untagged code blocks, and in a sentence's code span) is one the binary accepts: its subcommand and flags
//! parse with queuebench's own command line (clap, `Cli::try_parse_from`), and every file of
//! this repository it names (`scenarios/…`, `corpus/…`, `adapters/…`) exists. A renamed flag
//! or a moved scenario then fails here, not in a reader's terminal. Placeholders the pages use
//! (`SCENARIO`, `FILE`, `URL`, `N`, `DIR`, `<…>`) are filled with a value of their kind first.
//! No database.

use clap::Parser;
use clap::error::ErrorKind;
use queuebench::cli::Cli;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One command as a page shows it.
#[derive(Debug)]
struct Example {
    at: String,
    line: String,
    /// In a sentence: it may name a command without its required arguments.
    span: bool,
}

/// The `queuebench …` commands in `text`'s shell code blocks (continuation lines joined).
fn examples(name: &str, text: &str) -> Vec<Example> {
    let mut out = Vec::new();
    let (mut shell, mut inside, mut pending) = (false, false, String::new());
    for (i, raw) in text.lines().enumerate() {
        if let Some(lang) = raw.trim_start().strip_prefix("```") {
            inside = !inside;
            shell = inside && matches!(lang.trim(), "" | "sh" | "bash" | "console" | "shell");
            continue;
        }
        if !inside {
            // `queuebench …` in a sentence's code span is an example too.
            for span in raw.split('`').skip(1).step_by(2) {
                // Naming a command (`queuebench check`), not quoting a word (`queuebench <schema>`).
                let second = span.split(' ').nth(1).unwrap_or_default();
                let names = !second.is_empty() && second.chars().all(|c| c.is_ascii_lowercase() || c == '-');
                if span.starts_with("queuebench ") && names && !span.contains(['…', '[']) {
                    out.push(Example { at: format!("{name}:{}", i + 1), line: span.to_string(), span: true });
                }
            }
            continue;
        }
        if !shell {
            continue;
        }
        let mut line = raw.trim().trim_start_matches("$ ").to_string();
        if !pending.is_empty() {
            line = format!("{pending} {line}");
            pending.clear();
        }
        if let Some(head) = line.strip_suffix('\\') {
            pending = head.trim_end().to_string();
            continue;
        }
        // Environment assignments before the command: `RUST_LOG=… queuebench …`.
        let words = split(&line);
        let start = words.iter().position(|w| !is_assignment(w) && w != "sudo").unwrap_or(words.len());
        if words.get(start).map(String::as_str) == Some("queuebench") {
            out.push(Example { at: format!("{name}:{}", i + 1), line, span: false });
        }
    }
    out
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(k, _)| !k.is_empty() && k.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
}

/// Shell words up to the first unquoted `#`, `|`, `&`, `;`, `>` or `<(` (what follows is
/// another command, a redirection or a comment), with quotes removed.
fn split(line: &str) -> Vec<String> {
    let (mut words, mut word, mut quote, mut started) = (Vec::new(), String::new(), None, false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '$') if chars.peek() == Some(&'(') => {
                // `$((…))` / `$(…)`: one word, up to its matching parenthesis.
                let mut depth = 0;
                word.push('$');
                for n in chars.by_ref() {
                    word.push(n);
                    depth += match n {
                        '(' => 1,
                        ')' => -1,
                        _ => 0,
                    };
                    if depth == 0 {
                        break;
                    }
                }
                started = true;
            }
            (None, '<') if chars.peek().is_some_and(|n| !n.is_whitespace()) => {
                // A placeholder `<run id>`: one word.
                word.push('<');
                for n in chars.by_ref() {
                    word.push(n);
                    if n == '>' {
                        break;
                    }
                }
                started = true;
            }
            (None, '\'' | '"') => {
                quote = Some(c);
                started = true;
            }
            (None, '#' | '|' | ';' | '>') if !started || c != '#' => break,
            (None, '&') => break,
            (None, c) if c.is_whitespace() => {
                if started {
                    words.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            (None, '\\') => {
                if let Some(n) = chars.next() {
                    word.push(n);
                    started = true;
                }
            }
            (None, c) => {
                word.push(c);
                started = true;
            }
        }
    }
    if started {
        words.push(word);
    }
    words
}

/// A placeholder's stand-in: a shipped scenario for a file, a URL, a number, a folder.
fn fill(word: &str) -> String {
    let stand_in = |w: &str| match w {
        "SCENARIO" | "FILE" | "SCENARIO.toml" | "FILE.toml" | "your-queue.toml" => Some("scenarios/skip-locked.toml"),
        "URL" | "DATABASE_URL" | "$DATABASE_URL" | "\"$DATABASE_URL\"" => Some("postgres://queuebench@localhost/app"),
        "N" | "M" | "K" => Some("2"),
        "DIR" | "OUT" | "RUN" | "RUN_DIR" => Some("results/example"),
        _ => None,
    };
    if let Some(s) = stand_in(word) {
        return s.into();
    }
    // `--flag=PLACEHOLDER`
    if let Some((flag, value)) = word.split_once('=')
        && flag.starts_with("--")
        && let Some(s) = stand_in(value)
    {
        return format!("{flag}={s}");
    }
    // `$((K + 1))`: the shell's arithmetic.
    if word.starts_with("$((") {
        return "2".into();
    }
    // `<run id>`, `results/skip-locked/<run id>`.
    if let Some((head, rest)) = word.split_once('<')
        && let Some((_, tail)) = rest.split_once('>')
    {
        return format!("{head}example{tail}");
    }
    word.to_string()
}

/// The repository files `words` names that are not there (`…` marks an elided part: skipped).
fn missing_files(root: &Path, words: &[String]) -> Vec<String> {
    words
        .iter()
        .flat_map(|w| w.split(['=', ',']))
        .filter(|w| ["scenarios/", "corpus/", "adapters/"].iter().any(|p| w.starts_with(p)))
        .filter(|w| !w.contains(['…', '*', '<', '$', '{']) && !w.ends_with('/'))
        .filter(|w| !root.join(w).exists())
        .map(str::to_string)
        .collect()
}

fn pages(root: &Path) -> Vec<PathBuf> {
    let mut pages = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// What clap says that is not an error in the docs: `--version`, `--help`, and, for a command
/// a sentence names (`queuebench check`, `` `--wait` ``), its missing arguments. An unknown
/// subcommand or flag is wrong wherever it is.
fn accepted(kind: ErrorKind, span: bool) -> bool {
    match kind {
        ErrorKind::DisplayVersion | ErrorKind::DisplayHelp => true,
        ErrorKind::MissingRequiredArgument
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
        | ErrorKind::MissingSubcommand
        | ErrorKind::InvalidValue => span,
        _ => false,
    }
}

#[test]
fn every_command_the_docs_show_parses_and_names_files_that_exist() {
    let root = repo();
    let (mut checked, mut wrong) = (0, Vec::new());
    for page in pages(&root) {
        let name = page.strip_prefix(&root).unwrap().display().to_string();
        let text = std::fs::read_to_string(&page).unwrap();
        for ex in examples(&name, &text) {
            let words: Vec<String> =
                split(&ex.line).into_iter().skip_while(|w| is_assignment(w) || w == "sudo").map(|w| fill(&w)).collect();
            checked += 1;
            if let Err(e) = Cli::try_parse_from(&words)
                && !accepted(e.kind(), ex.span)
            {
                let first = e.to_string().lines().next().unwrap_or_default().to_string();
                wrong.push(format!("{}: `{}`: {first}", ex.at, ex.line));
                continue;
            }
            for file in missing_files(&root, &words) {
                wrong.push(format!("{}: `{}`: {file} is not in the repository", ex.at, ex.line));
            }
        }
    }
    assert!(checked >= 40, "only {checked} commands found in the docs: is the extraction broken?");
    assert!(wrong.is_empty(), "{} of {checked} commands in the docs are wrong:\n{}", wrong.len(), wrong.join("\n"));
}

#[test]
fn the_extraction_finds_commands_and_stops_at_what_is_not_the_command() {
    let page = "text\n```sh\nqueuebench run a.toml --repeat 3   # three\nRUST_LOG=x queuebench sql \\\n  b.toml | less\n```\n```text\nqueuebench run not-a-command\n```\n";
    let found = examples("p.md", page);
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(found[0].at, "p.md:3");
    assert_eq!(split(&found[0].line), ["queuebench", "run", "a.toml", "--repeat", "3"]);
    assert_eq!(split(&found[1].line), ["RUST_LOG=x", "queuebench", "sql", "b.toml"]);
    assert_eq!(split("queuebench run 'a b.toml' --set \"x=1\" &"), ["queuebench", "run", "a b.toml", "--set", "x=1"]);
    // A wrong flag is refused by the parser this test uses.
    assert!(Cli::try_parse_from(["queuebench", "run", "a.toml", "--no-such-flag"]).is_err());
    assert!(Cli::try_parse_from(["queuebench", "run", "a.toml", "--repeat", "3"]).is_ok());
    assert_eq!(
        missing_files(&repo(), &["scenarios/skip-locked.toml".into(), "scenarios/nope.toml".into()]),
        ["scenarios/nope.toml"]
    );
}
