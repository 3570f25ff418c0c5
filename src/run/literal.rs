//! A statement with its values written in as SQL literals: what a psql window sends by hand
//! (`repro`'s and `explore`'s scripts), and what `explore` itself sends, so the script it
//! prints is the text it ran. The values are the ones the run binds (`Values::resolve`).

use super::values::{Value, Values};
use crate::adapter::keys::Key;
use crate::adapter::{Param, Statement};
use std::time::SystemTime;

/// Where `:now` and the SQL's own clock come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Clock {
    /// The server's: `:now` is written as `now()` and the SQL is left as it is.
    Server,
    /// A virtual clock (`explore`): `:now` and every `now()`, `clock_timestamp()`,
    /// `statement_timestamp()`, `transaction_timestamp()` and `current_timestamp` in the text
    /// are the instant `Values` holds, written as a `timestamptz` literal.
    Virtual,
}

/// The SQL functions that read the server's clock, as they are written (lower case).
pub(crate) const SERVER_CLOCK: [&str; 5] =
    ["now()", "clock_timestamp()", "statement_timestamp()", "transaction_timestamp()", "current_timestamp"];

/// The server-clock functions a statement's text calls (lower case, each once).
pub(crate) fn server_clock_calls(sql: &str) -> Vec<&'static str> {
    let lower = sql.to_ascii_lowercase();
    SERVER_CLOCK.iter().copied().filter(|f| find_call(&lower, f, 0).is_some()).collect()
}

/// The adapter's worker and reclaim statements that read the server's clock, as
/// `role (now(), …)`: what `validate` and `explore` name (explore writes its virtual clock in
/// their place).
pub(crate) fn clocked_statements(adapter: &crate::adapter::Adapter) -> Vec<String> {
    let steps = adapter.worker_steps().chain(&adapter.reclaim);
    let mut out = Vec::new();
    for s in steps.flat_map(|step| &step.statements) {
        let calls = server_clock_calls(&s.text);
        if !calls.is_empty() {
            out.push(format!("{} ({})", s.role.name(), calls.join(", ")));
        }
    }
    out
}

/// `f` in `lower` at or after `from`, standing alone (not the tail of a longer name).
fn find_call(lower: &str, f: &str, from: usize) -> Option<usize> {
    let mut at = from;
    while let Some(i) = lower[at..].find(f) {
        let start = at + i;
        let before = lower[..start].chars().next_back();
        let after = lower[start + f.len()..].chars().next();
        let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
        if !word(before) && (f.ends_with(')') || !word(after)) {
            return Some(start);
        }
        at = start + f.len();
    }
    None
}

/// A `timestamptz` literal for an instant, to the microsecond.
pub(crate) fn timestamp(t: SystemTime) -> String {
    let t: chrono::DateTime<chrono::Utc> = t.into();
    format!("'{}'::timestamptz", t.format("%Y-%m-%d %H:%M:%S%.6f+00"))
}

/// Every server-clock call in `sql` replaced by `at` (a literal).
fn virtual_clock(sql: &str, at: &str) -> String {
    let mut out = sql.to_string();
    for f in SERVER_CLOCK {
        let mut from = 0;
        while let Some(i) = find_call(&out.to_ascii_lowercase(), f, from) {
            out.replace_range(i..i + f.len(), at);
            from = i + at.len();
        }
    }
    out
}

fn quoted(t: &str) -> String {
    crate::quote::literal(t)
}

fn array<T: ToString>(items: impl Iterator<Item = T>) -> String {
    crate::quote::array_literal(items)
}

/// A statement with its parameters written in. A job's key that no claim has returned yet
/// stays a placeholder (`:id`); `:prev.COLUMN` is the previous statement's column from
/// `carried` (by the statement's carried names; a placeholder when missing).
pub(crate) fn literal(s: &Statement, v: &Values<'_>, carried: &[Vec<String>], clock: Clock) -> String {
    let mut values = Vec::with_capacity(s.params.len());
    for p in &s.params {
        values.push(match v.resolve(*p) {
            Value::Int(n) => n.to_string(),
            Value::Int4(n) => n.to_string(),
            Value::Float(f) => format!("{f:?}"),
            Value::Text(t) => quoted(t),
            Value::Ids(ids) => array(ids.iter()),
            Value::Key(Some(Key::Int(n))) => n.to_string(),
            Value::Key(Some(k)) => quoted(&k.show()),
            Value::Key(None) => format!(":{}", p.name()),
            Value::Json(Some(j)) => format!("{}::jsonb", quoted(&j.to_string())),
            Value::Json(None) => "NULL".into(),
            Value::Time(t) if clock == Clock::Virtual => timestamp(t),
            Value::Time(_) => "now()".into(),
            Value::Const(c) => c.literal(),
            Value::Prev => {
                let i = match p {
                    Param::Prev(i) => usize::from(*i),
                    _ => 0,
                };
                match carried.get(i) {
                    Some(column) => array(column.iter()),
                    None => format!(":prev.{}", s.carried.get(i).map_or("?", String::as_str)),
                }
            }
        });
    }
    // The clock first, then the values: a value's text is never read again.
    let sql = match clock {
        Clock::Server => s.sql.clone(),
        Clock::Virtual => virtual_clock(&s.sql, &timestamp(v.now())),
    };
    written_in(&sql, &values)
}

/// `$1`, `$2`, … in `sql` replaced by `values` in one pass: a value that holds `$1` or
/// `now()` stays as it is. A `$N` with no value (`$0`, one past the last) is left alone.
fn written_in(sql: &str, values: &[String]) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut rest = sql;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        match after[..digits].parse::<usize>() {
            Ok(n) if (1..=values.len()).contains(&n) => out.push_str(&values[n - 1]),
            _ => out.push_str(&rest[at..at + 1 + digits]),
        }
        rest = &after[digits..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_clock_calls_are_found_alone_and_not_inside_longer_names() {
        let sql = "UPDATE jobs SET t = NOW() WHERE run_at <= clock_timestamp() AND x = my_now()";
        assert_eq!(server_clock_calls(sql), vec!["now()", "clock_timestamp()"]);
        assert!(server_clock_calls("SELECT current_timestamp").contains(&"current_timestamp"));
        assert!(server_clock_calls("SELECT current_timestamp_x").is_empty());
        assert!(server_clock_calls("SELECT s.now()").is_empty(), "a schema's own function is not the clock");
    }

    #[test]
    fn the_virtual_clock_replaces_every_call() {
        let at = "'2026-01-01 00:00:00.000000+00'::timestamptz";
        let out = virtual_clock("SELECT now(), Now() + interval '1s', clock_timestamp(), my_now()", at);
        assert_eq!(out, format!("SELECT {at}, {at} + interval '1s', {at}, my_now()"));
    }

    #[test]
    fn values_are_written_in_once_and_never_read_again() {
        let values = ["'$2'".to_string(), "' || now() || '".to_string(), "x".to_string()];
        let sql = written_in("SELECT $1, $2, $3, $0, $4, $12, $", &values[..2]);
        assert_eq!(sql, "SELECT '$2', ' || now() || ', $3, $0, $4, $12, $");
        assert_eq!(written_in("$1$2 ünï $1", &values), "'$2'' || now() || ' ünï '$2'");
    }

    #[test]
    fn arrays_are_quoted_element_by_element() {
        assert_eq!(array([1, 2].iter()), "'{\"1\",\"2\"}'");
        assert_eq!(array(["a'b"].iter()), "'{\"a''b\"}'");
    }
}
