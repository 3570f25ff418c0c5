//! What an error may quote of a file the user named: at most [`SHOWN_CHARS`] characters of
//! one line, around the column the error is about, with control characters escaped and
//! anything that looks like a secret masked (`***`). A file given by mistake (a symlink to
//! `/etc/shadow`, a `.env`) is then never printed back whole, and its secrets not at all.

use super::SHOWN_CHARS;
use std::ops::Range;

/// What stands for a masked secret.
const MASK: &str = "***";

/// Words that make a `NAME=value` (or `NAME: value`) a secret when NAME holds one of them.
const SECRET_NAMES: [&str; 10] =
    ["pass", "pwd", "secret", "token", "key", "auth", "cred", "cookie", "private", "signature"];

/// `line` as an error may quote it, cut to at most [`SHOWN_CHARS`] characters around the
/// 0-based character `column` (`…` where it was cut), filtered ([`filter`]); with the
/// character at which `column` now stands.
pub(super) fn excerpt(line: &str, column: usize) -> (String, usize) {
    let chars: Vec<char> = line.chars().collect();
    let pieces = pieces(&chars);
    let at = pieces.iter().position(|(_, from)| from.end > column).unwrap_or(pieces.len());
    let width = |r: Range<usize>| pieces[r].iter().map(|(p, _)| p.chars().count()).sum::<usize>();
    // Two characters are kept for the `…` at either end; a third of the rest before the column.
    let budget = SHOWN_CHARS - 2;
    let mut start = at;
    while start > 0 && width(start - 1..at) <= budget / 3 {
        start -= 1;
    }
    let mut end = at;
    while end < pieces.len() && width(start..end + 1) <= budget {
        end += 1;
    }
    while start > 0 && width(start - 1..end) <= budget {
        start -= 1;
    }
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    let caret = out.chars().count() + width(start..at);
    pieces[start..end].iter().for_each(|(p, _)| out.push_str(p));
    if end < pieces.len() {
        out.push('…');
    }
    (out, caret)
}

/// `text` with its secrets masked and its control characters escaped (a line break stays).
pub fn filter(text: &str) -> String {
    text.split('\n')
        .map(|line| pieces(&line.chars().collect::<Vec<_>>()).into_iter().map(|(p, _)| p).collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The line as shown, piece by piece, each with the characters of the line it stands for: a
/// masked secret is one piece (`***`), an escaped control character another (`\u{1b}`).
fn pieces(chars: &[char]) -> Vec<(String, Range<usize>)> {
    let secrets = secrets(chars);
    let mut out = Vec::with_capacity(chars.len());
    let mut i = 0;
    while i < chars.len() {
        if let Some(s) = secrets.iter().find(|s| s.start == i) {
            out.push((MASK.to_string(), s.clone()));
            i = s.end;
            continue;
        }
        out.push((escaped(chars[i]), i..i + 1));
        i += 1;
    }
    out
}

/// A character as an error shows it: control characters, NUL and the invisible ones that
/// reorder or hide text in a terminal written as escapes.
fn escaped(c: char) -> String {
    let invisible =
        matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}');
    if c.is_control() || invisible { c.escape_default().to_string() } else { c.to_string() }
}

/// The character ranges of `chars` that look like secrets: the value of a `NAME=value` whose
/// name says secret (`password=`, `PGPASSWORD=`, `API_KEY: `), a URL's password
/// (`postgres://u:PASSWORD@h`), and a long random-looking word (a token, a hash). Sorted and
/// not overlapping.
fn secrets(chars: &[char]) -> Vec<Range<usize>> {
    let mut found: Vec<Range<usize>> =
        named(chars).into_iter().chain(url_passwords(chars)).chain(random(chars)).collect();
    found.sort_by_key(|r| (r.start, std::cmp::Reverse(r.end)));
    let mut merged: Vec<Range<usize>> = Vec::new();
    for r in found {
        match merged.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => merged.push(r),
        }
    }
    merged
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')
}

/// Where a value ends: at a space, a quote, or what separates values in a URL, a list or an
/// environment block.
fn ends_value(c: char) -> bool {
    c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '&' | ';' | ',' | '\0')
}

/// The values of `NAME=value` and `NAME: value` whose name holds a [`SECRET_NAMES`] word.
fn named(chars: &[char]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !is_name_char(chars[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && is_name_char(chars[i]) {
            i += 1;
        }
        let name: String = chars[start..i].iter().collect::<String>().to_lowercase();
        let mut j = i;
        while j < chars.len() && matches!(chars[j], ' ' | '\t' | '"' | '\'') {
            j += 1;
        }
        let separator =
            matches!(chars.get(j), Some('=')) || (chars.get(j) == Some(&':') && chars.get(j + 1) != Some(&'/'));
        if !separator || !SECRET_NAMES.iter().any(|w| name.contains(w)) {
            continue;
        }
        j += 1;
        while j < chars.len() && matches!(chars[j], ' ' | '\t') {
            j += 1;
        }
        let quote = chars.get(j).copied().filter(|&c| c == '"' || c == '\'');
        if quote.is_some() {
            j += 1;
        }
        let from = j;
        while j < chars.len()
            && !(Some(chars[j]) == quote || (quote.is_none() && ends_value(chars[j])) || chars[j] == '\0')
        {
            j += 1;
        }
        if j > from {
            out.push(from..j);
        }
        i = j;
    }
    out
}

/// The password of every `scheme://user:password@host` in `chars`.
fn url_passwords(chars: &[char]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i + 3 <= chars.len() {
        if chars[i..i + 3] != [':', '/', '/'] {
            i += 1;
            continue;
        }
        let from = i + 3;
        let end = chars[from..]
            .iter()
            .position(|&c| matches!(c, '/' | '?' | '#') || ends_value(c))
            .map_or(chars.len(), |p| from + p);
        if let Some(at) = chars[from..end].iter().rposition(|&c| c == '@').map(|p| from + p)
            && let Some(colon) = chars[from..at].iter().position(|&c| c == ':').map(|p| from + p)
            && colon + 1 < at
        {
            out.push(colon + 1..at);
        }
        i = end.max(from);
    }
    out
}

/// Words that look random (a token, a key, a password hash), except a path or a URL: at least
/// 16 characters, 4 letters and 2 digits, and at least one change of kind (upper case, lower
/// case, digit, other) every three characters, which words, names and paths seldom have.
fn random(chars: &[char]) -> Vec<Range<usize>> {
    let splits = |c: char| ends_value(c) || matches!(c, '=' | '(' | ')' | '[' | ']' | '{' | '}' | '<' | '>');
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let len = chars[i..].iter().position(|&c| splits(c)).unwrap_or(chars.len() - i);
        let word = &chars[i..i + len];
        let letters = word.iter().filter(|c| c.is_alphabetic()).count();
        let digits = word.iter().filter(|c| c.is_ascii_digit()).count();
        let path = matches!(word.first(), Some('/' | '.' | '~')) || word.windows(3).any(|w| w == [':', '/', '/']);
        let class = |c: &char| (c.is_uppercase(), c.is_lowercase(), c.is_ascii_digit());
        let changes = word.windows(2).filter(|w| class(&w[0]) != class(&w[1])).count();
        if len >= 16 && letters >= 4 && digits >= 2 && changes * 3 >= len && !path {
            out.push(i..i + len);
        }
        i += len.max(1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_masked_and_the_rest_kept() {
        assert_eq!(filter("password=hunter2 user=bob"), "password=*** user=bob");
        assert_eq!(filter("PGPASSWORD=s3cret\0HOME=/root"), "PGPASSWORD=***\\u{0}HOME=/root");
        assert_eq!(filter("\"api_key\" = \"abc def\""), "\"api_key\" = \"***\"");
        assert_eq!(filter("url = \"postgres://alice:pw@db:5432/app\""), "url = \"postgres://alice:***@db:5432/app\"");
        assert_eq!(filter("GITHUB_TOKEN=ghp_0123abcdXYZ"), "GITHUB_TOKEN=***");
        assert_eq!(filter("X=Zq8v2LmN4pRt6sWy9"), "X=***");
        assert_eq!(filter("root:$6$saltsalt$Q9x8c7v6b5n4m3:19000:0:99999:7:::"), "***");
        assert_eq!(filter("workers.count = 8x"), "workers.count = 8x");
        let names = "adapter = \"adapters/my-adapter-2024v2.toml\" at results/skip-locked/20261201T011303-d796";
        assert_eq!(filter(names), names);
        assert_eq!(filter("sha 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"), "sha ***");
        assert_eq!(
            filter("at 2026-12-03T19:33:07Z in /tmp/run-20261203T193307"),
            "at 2026-12-03T19:33:07Z in /tmp/run-20261203T193307"
        );
        assert_eq!(filter("a\x1b[2Jb\u{202e}"), "a\\u{1b}[2Jb\\u{202e}");
    }

    #[test]
    fn an_excerpt_is_cut_around_its_column() {
        let line = format!("{}password=hunter2-canary{}", "a ".repeat(200), " b".repeat(150));
        let column = 400 + "password=hunter2-canary".len() + 3;
        let (shown, caret) = excerpt(&line, column);
        assert!(shown.chars().count() <= SHOWN_CHARS, "{shown}");
        assert!(!shown.contains("hunter2") && shown.starts_with('…') && shown.ends_with('…'), "{shown}");
        assert_eq!(shown.chars().nth(caret), Some('b'), "{shown} {caret}");
        let (shown, caret) = excerpt("seed = -1", 7);
        assert_eq!((shown.as_str(), caret), ("seed = -1", 7));
        let (shown, caret) = excerpt("a = ", 4);
        assert_eq!((shown.as_str(), caret), ("a = ", 4));
    }
}
