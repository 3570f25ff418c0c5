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
    let inner: Vec<String> =
        items.map(|i| format!("\"{}\"", i.to_string().replace('\\', "\\\\").replace('"', "\\\""))).collect();
    quoted(&format!("{{{}}}", inner.join(",")))
}

/// A statement with its parameters written in. A job's key that no claim has returned yet
/// stays a placeholder (`:id`); `:prev.COLUMN` is the previous statement's column from
/// `carried` (by the statement's carried names; a placeholder when missing).
pub(crate) fn literal(s: &Statement, v: &Values<'_>, carried: &[Vec<String>], clock: Clock) -> String {
    let mut sql = s.sql.clone();
    for (i, p) in s.params.iter().enumerate().rev() {
        let value = match v.resolve(*p) {
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
        };
        sql = sql.replace(&format!("${}", i + 1), &value);
    }
    match clock {
        Clock::Server => sql,
        Clock::Virtual => virtual_clock(&sql, &timestamp(v.now())),
    }
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
    fn arrays_are_quoted_element_by_element() {
        assert_eq!(array([1, 2].iter()), "'{\"1\",\"2\"}'");
        assert_eq!(array(["a'b"].iter()), "'{\"a''b\"}'");
    }
}
