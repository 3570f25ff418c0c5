//! How an error echoes what it was given: every value cut to [`SHOWN_CHARS`] characters
//! (paths and URLs whole), TOML's and serde's wording turned into words a user reads (no Rust
//! type names), and the line a key stands on.

use super::excerpt::{excerpt, filter};
use std::borrow::Cow;

/// The most characters of one value an error message shows; a longer value is cut.
pub const SHOWN_CHARS: usize = 60;

/// A value as an error message echoes it: whole when it has at most [`SHOWN_CHARS`]
/// characters, else its first ones and how long it was (`aaaa…(100000 characters)`), so a
/// 100,000-character value in a file or a flag is not printed back in full.
pub fn shown(value: &str) -> Cow<'_, str> {
    let n = value.chars().count();
    if n <= SHOWN_CHARS || already_shown(value) {
        return Cow::Borrowed(value);
    }
    let head: String = value.chars().take(SHOWN_CHARS).collect();
    Cow::Owned(format!("{head}…({n} characters)"))
}

/// Whether `value` is already what [`shown`] makes of a long value (so a message cut once
/// is not cut again when a caller shows it).
fn already_shown(value: &str) -> bool {
    let Some((_, tail)) = value.split_once('…') else { return false };
    value.chars().take_while(|&c| c != '…').count() == SHOWN_CHARS
        && tail
            .strip_prefix('(')
            .and_then(|t| t.strip_suffix(" characters)"))
            .is_some_and(|n| n.parse::<usize>().is_ok())
}

/// `message` with every value it echoes cut by [`shown`]: what stands between backticks or
/// double quotes (on one line), and any other run of characters without a space (a number, a
/// key, the `^^^^` under a TOML error's line) except a path or URL (a run with a `/`). The
/// rest of the message stays as it is.
pub fn shorten_values(message: &str) -> Cow<'_, str> {
    let long = |run: &str| run.chars().count() > SHOWN_CHARS;
    if !message.split_whitespace().any(long) && !message.lines().any(|l| l.chars().count() > 2 * SHOWN_CHARS) {
        return Cow::Borrowed(message);
    }
    let chars: Vec<char> = message.chars().collect();
    let mut out = String::with_capacity(message.len().min(4096));
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '`' || c == '"' {
            let close = chars[i + 1..].iter().take_while(|&&d| d != '\n').position(|&d| d == c);
            if let Some(len) = close {
                let inner: String = chars[i + 1..i + 1 + len].iter().collect();
                out.push(c);
                out.push_str(&shown(&inner));
                out.push(c);
                i += len + 2;
                continue;
            }
        }
        if c.is_whitespace() || c == '`' || c == '"' {
            out.push(c);
            i += 1;
            continue;
        }
        let mut end =
            chars[i..].iter().position(|&d| d.is_whitespace() || d == '`' || d == '"').map_or(chars.len(), |p| i + p);
        // A value cut before (`aaa…(1000 characters)`) is one run, its marker included.
        const MARK: &str = " characters)";
        let rest: String = chars[end..chars.len().min(end + MARK.len())].iter().collect();
        if rest == MARK && chars[i..end].contains(&'…') {
            end += MARK.chars().count();
        }
        let run: String = chars[i..end].iter().collect();
        // A path or a URL (a run with a `/`) is where to look, not an echoed value: whole.
        if run.contains('/') {
            out.push_str(&run);
        } else {
            out.push_str(&shown(&run));
        }
        i = end;
    }
    Cow::Owned(out)
}

/// The range of each integer type serde names (`expected u64`), in the words a scenario
/// author reads: the key's accepted whole numbers.
const WHOLE_NUMBERS: [(&str, &str); 6] = [
    ("u64", "a whole number from 0 to 18446744073709551615 (2^64 − 1)"),
    ("usize", "a whole number from 0 to 18446744073709551615 (2^64 − 1)"),
    ("u32", "a whole number from 0 to 4294967295"),
    ("i64", "a whole number from -9223372036854775808 to 9223372036854775807"),
    ("i32", "a whole number from -2147483648 to 2147483647"),
    ("u16", "a whole number from 0 to 65535"),
];

/// The key of the last `key =` in `before` (the line left of an error's column).
fn key_left_of(before: &str) -> Option<String> {
    let (left, _) = before.rsplit_once('=')?;
    let key = left.rsplit(['{', ',']).next()?.trim().trim_matches('"').trim_matches('\'');
    (!key.is_empty()).then(|| key.to_string())
}

/// `expected struct RawWorkers` → `expected a table of keys { … }`: the Rust type means
/// nothing to a scenario author.
fn without_struct_names(message: String) -> String {
    let mut out = String::new();
    let mut rest = message.as_str();
    while let Some(pos) = rest.find("expected struct ") {
        out.push_str(&rest[..pos]);
        out.push_str("expected a table of keys { … }");
        let after = &rest[pos + "expected struct ".len()..];
        rest = after.trim_start_matches(|c: char| c.is_alphanumeric() || c == '_');
    }
    out.push_str(rest);
    out
}

/// Adds "did you mean `count`?" to serde's "unknown field `coutn`, expected one of …", and
/// what to add to "missing field `complete`" (`keys_listed`: where every key is listed), for
/// the TOML files queuebench reads (scenarios, adapters). For a message without the file's line
/// (serde's on a table); a parse error of a file's text goes through [`toml_error`].
pub fn toml_hint(message: String, keys_listed: &str) -> String {
    hinted(words_for_types(filter(&message), None), keys_listed)
}

/// A TOML error on `text` (the file as read), in the words [`toml_hint`] gives, quoting at
/// most a cut, filtered span of the line it is about ([`excerpt`]): never the line whole, as
/// the toml crate's own message does. It names the line, the column and the key.
pub fn toml_error(e: &toml::de::Error, text: &str, keys_listed: &str) -> String {
    let Some(span) = e.span().filter(|s| s.start <= text.len() && text.is_char_boundary(s.start)) else {
        return toml_hint(e.to_string(), keys_listed);
    };
    let before = &text[..span.start];
    let line_start = before.rfind('\n').map_or(0, |p| p + 1);
    let line_no = before.matches('\n').count() + 1;
    let column = text[line_start..span.start].chars().count();
    let line = text[line_start..].split('\n').next().unwrap_or_default().trim_end_matches('\r');
    let key = key_left_of(&line.chars().take(column).collect::<String>());
    let (shown, caret) = excerpt(line, column);
    let marks = text
        .get(span.clone())
        .map_or(1, |s| s.chars().count())
        .clamp(1, shown.chars().count().saturating_sub(caret).max(1));
    let gutter = " ".repeat(line_no.to_string().len());
    let message = format!(
        "TOML parse error at line {line_no}, column {}\n{gutter} |\n{line_no} | {shown}\n{gutter} | {}{}\n{}\n",
        column + 1,
        " ".repeat(caret),
        "^".repeat(marks),
        filter(e.message())
    );
    let mut message = words_for_types(message, key.clone());
    if let Some(key) = key.filter(|k| !message.contains(&format!("{k}: "))) {
        message.push_str(&format!("at key `{key}`\n"));
    }
    hinted(message, keys_listed)
}

fn hinted(message: String, keys_listed: &str) -> String {
    let message = shorten_values(&message).into_owned();
    if let Some(field) = message.split("missing field `").nth(1).and_then(|r| r.split('`').next()) {
        return format!("{}\nadd `{field} = …` to the table shown above ({keys_listed})", message.trim_end());
    }
    let Some(pos) = message.find("unknown field `").or_else(|| message.find("unknown variant `")) else {
        return message;
    };
    let words: Vec<&str> = message[pos..].split('`').skip(1).step_by(2).collect();
    let Some((wrong, candidates)) = words.split_first() else {
        return message;
    };
    let best =
        candidates.iter().map(|c| (strsim::levenshtein(wrong, c), *c)).filter(|(d, c)| *d <= 2.max(c.len() / 3)).min();
    match best {
        Some((_, c)) => format!("{}\ndid you mean `{c}`?", message.trim_end()),
        None => message,
    }
}

/// serde names Rust types (`expected u64`, `integer `…` as i128`); a scenario author thinks in
/// TOML values: a whole number's accepted range, a list, a table. A value out of its type's
/// range also names the key it was given for.
fn words_for_types(message: String, key: Option<String>) -> String {
    let mut out = message.replace(" as i128", "").replace(" as u128", "");
    let mut whole = false;
    for (ty, words) in WHOLE_NUMBERS {
        let from = format!("expected {ty}");
        // `expected u64` at the end of the message or before punctuation, not `expected u640`.
        let mut rest = out.as_str();
        let mut next = String::new();
        while let Some(pos) = rest.find(&from) {
            let after = &rest[pos + from.len()..];
            next.push_str(&rest[..pos]);
            if after.starts_with(|c: char| c.is_alphanumeric() || c == '_') {
                next.push_str(&from);
            } else {
                next.push_str("expected ");
                next.push_str(words);
                whole = true;
            }
            rest = after;
        }
        next.push_str(rest);
        out = next;
    }
    let out = [
        ("expected f64", "expected a number"),
        ("expected f32", "expected a number"),
        ("expected a sequence", "expected a list [ … ]"),
        ("expected a map", "expected a table { … }"),
        (
            "integer number overflowed",
            "the number is too large: whole numbers go up to 18446744073709551615 (2^64 − 1) at most, and each key \
             has its own limit (docs/scenario-files.md)",
        ),
        ("floating-point number overflowed", "the number is too large to be read as a number"),
    ]
    .iter()
    .fold(out, |m, (from, to)| m.replace(from, to));
    let out = without_struct_names(out);
    match key {
        // The excerpt shows the line; the last line says which key and what it accepts.
        Some(key) if whole => match out.trim_end().rsplit_once('\n') {
            Some((head, last)) if !last.starts_with(&format!("{key}:")) => format!("{head}\n{key}: {last}\n"),
            _ => out,
        },
        _ => out,
    }
}

/// Finds the 1-based line that sets `key` (`workers.count`), following
/// `[table]` headers. Good enough for error messages; not a TOML parser.
pub fn find_key_line(text: &str, key: &str) -> Option<usize> {
    let (table, leaf) = match key.rsplit_once('.') {
        Some((t, l)) => (t, l),
        None => ("", key),
    };
    let mut current = String::new();
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        if let Some(h) = l.strip_prefix('[') {
            current = h.trim_start_matches('[').trim_end_matches(']').trim().to_string();
            continue;
        }
        let Some((k, _)) = l.split_once('=') else {
            continue;
        };
        let k = k.trim().trim_matches('"');
        let full = if current.is_empty() { k.to_string() } else { format!("{current}.{k}") };
        if full == key || (current == table && k == leaf) {
            return Some(i + 1);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Error, Invalid};

    #[test]
    fn a_long_value_is_cut_once_wherever_it_is_echoed() {
        let long = "a".repeat(100_000);
        let cut = format!("{}…(100000 characters)", "a".repeat(SHOWN_CHARS));
        assert_eq!(shown(&long), cut);
        assert_eq!(shown("short"), "short");
        assert_eq!(shown(&cut), cut, "a value cut once stays as it is");
        let message = format!("unknown strategy `{long}`; or define [strategies.{long}] with claim, got \"{long}\"");
        let once = shorten_values(&message).into_owned();
        assert_eq!(
            once,
            format!(
                "unknown strategy `{cut}`; or define [strategies.{}…(100013 characters) with claim, got \"{cut}\"",
                "a".repeat(SHOWN_CHARS - "[strategies.".len())
            ),
        );
        assert_eq!(shorten_values(&once), once, "shortening is idempotent");
        assert_eq!(shorten_values("expected `a`, got \"b\" at line 3"), "expected `a`, got \"b\" at line 3");
        let path = format!("/results/{}/history.csv.gz", "r".repeat(80));
        let message = format!("7: no such job in {path}");
        assert_eq!(shorten_values(&message), message, "a path is shown whole");
        let e = Error::FlagValue { flag: "--set".into(), value: Some(format!("k={long}")), invalid: Invalid::new("x") };
        assert!(e.to_string().chars().count() < 120, "{e}");
        let e = Error::Scenario {
            file: "s.toml".into(),
            line: None,
            key: "k".into(),
            via_set: Some(format!("k={long}")),
            reason: format!("unknown `{long}`"),
        };
        assert!(e.to_string().chars().count() < 200, "{e}");
    }

    #[test]
    fn toml_errors_name_the_key_and_its_range_not_rust_types() {
        let parse = |text: &str| {
            #[derive(Debug, serde::Deserialize)]
            #[allow(dead_code)]
            struct S {
                seed: Option<u64>,
                count: Option<i64>,
            }
            toml_error(&toml::from_str::<S>(text).unwrap_err(), text, "keys")
        };
        let m = parse("seed = -1\n");
        assert!(
            m.contains("seed: invalid value: integer `-1`, expected a whole number from 0 to 18446744073709551615"),
            "{m}"
        );
        let m = parse("seed = 18446744073709551616\n");
        assert!(!m.contains("i128") && m.contains("seed: ") && m.contains("2^64 − 1"), "{m}");
        let m = parse("count = 99999999999999999999\n");
        assert!(!m.contains("i128") && !m.contains("i64") && m.contains("count: "), "{m}");
        let m = parse("count = 1e40\n");
        assert!(m.contains("count: invalid type: floating point") && !m.contains("i64"), "{m}");
        let m = parse(&format!("count = {}\n", "9".repeat(309)));
        assert!(m.contains('…') && !m.contains(&"9".repeat(SHOWN_CHARS)) && m.len() < 600, "{m}");
        assert!(!m.contains("overflowed") && m.contains("too large"), "{m}");
        let m = parse("count = { x = 1 }\n");
        assert!(!m.contains("i64"), "{m}");
    }
}
