//! Named parameters in strategy SQL (`:batch`, `:id`, …) and their
//! translation to PostgreSQL's positional `$n`, each with a fixed type cast
//! so the values the harness binds always match. The `:name` spelling is the
//! one pgbench uses for its variables, so the same text feeds both.

use bytes::BytesMut;
use std::fmt;
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};

/// Every parameter a statement may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Param {
    /// Jobs to claim in one round trip (`workers.batch`), int8.
    Batch,
    /// The lease length in seconds (`lease.duration`), float8.
    LeaseSecs,
    /// The claiming worker's name (`w3`), text.
    Worker,
    /// The ids the strategy's `select` returned, int8[].
    Ids,
    /// The job being completed (the claim's id column; int8 in the built-in table).
    Id,
    /// The attempt number the claim returned for this job (int4 in the built-in table).
    Attempt,
    /// The claim token the claim returned for this job (uuid in the built-in table).
    Token,
    /// Seconds until a failed job may run again, float8.
    BackoffSecs,
    /// The failure's error code (TIMEOUT, …), text.
    Error,
    /// `retry.base` in seconds, float8 (reclaim).
    RetryBaseSecs,
    /// `retry.cap` in seconds, float8 (reclaim).
    RetryCapSecs,
    /// `workers.aging_step` in seconds: one point of priority per step waited, float8.
    AgingStepSecs,
    /// `workers.aging_cap`: the most priority aging adds, int8.
    AgingCap,
    /// `workers.deadline` in seconds: jobs ready longer than this go first, float8.
    DeadlineSecs,
    /// The claiming worker's group name (`[[workers.groups]]`), text: with
    /// `priority-pools` it is the class the worker's pool serves.
    Pool,
    /// An enqueued job's payload, jsonb.
    Payload,
    /// An enqueued job's sequence number, int8.
    N,
    /// How many jobs a preload inserts, int8.
    Count,
    /// An enqueued job's class, text.
    Class,
    /// An enqueued job's priority, int4.
    Priority,
    /// `jobs.max_attempts`, int4.
    MaxAttempts,
    /// The harness's clock when the statement is sent, timestamptz.
    Now,
    /// The adapter's `[constants]` entry with this index.
    Const(u16),
    /// `:prev.COLUMN`: that column of every row the previous statement of the same step
    /// returned, as an array of the column's type (the statement's `carried[i]`).
    Prev(u16),
    /// An enqueued job's unique key (`jobs.unique_keys`), int8: the key a deduplicating
    /// enqueue dedupes on.
    UniqueKey,
}

pub(crate) const ALL: [Param; 23] = [
    Param::Batch,
    Param::LeaseSecs,
    Param::Worker,
    Param::Ids,
    Param::Id,
    Param::Attempt,
    Param::Token,
    Param::BackoffSecs,
    Param::Error,
    Param::RetryBaseSecs,
    Param::RetryCapSecs,
    Param::AgingStepSecs,
    Param::AgingCap,
    Param::DeadlineSecs,
    Param::Pool,
    Param::Payload,
    Param::N,
    Param::Count,
    Param::Class,
    Param::Priority,
    Param::MaxAttempts,
    Param::Now,
    Param::UniqueKey,
];

impl Param {
    /// The name without the colon (a constant's name is its own; this says `const`).
    pub fn name(self) -> &'static str {
        match self {
            Param::Batch => "batch",
            Param::LeaseSecs => "lease_secs",
            Param::Worker => "worker",
            Param::Ids => "ids",
            Param::Id => "id",
            Param::Attempt => "attempt",
            Param::Token => "token",
            Param::BackoffSecs => "backoff_secs",
            Param::Error => "error",
            Param::RetryBaseSecs => "retry_base_secs",
            Param::RetryCapSecs => "retry_cap_secs",
            Param::AgingStepSecs => "aging_step_secs",
            Param::AgingCap => "aging_cap",
            Param::DeadlineSecs => "deadline_secs",
            Param::Pool => "pool",
            Param::Payload => "payload",
            Param::N => "n",
            Param::Count => "count",
            Param::Class => "class",
            Param::Priority => "priority",
            Param::MaxAttempts => "max_attempts",
            Param::Now => "now",
            Param::UniqueKey => "unique_key",
            Param::Const(_) => "const",
            Param::Prev(_) => "prev",
        }
    }

    /// The cast written after `$n` (constants take their value's type).
    pub fn sql_type(self) -> &'static str {
        match self {
            Param::Batch | Param::Id | Param::AgingCap | Param::N | Param::Count | Param::UniqueKey => "int8",
            Param::LeaseSecs
            | Param::BackoffSecs
            | Param::RetryBaseSecs
            | Param::RetryCapSecs
            | Param::AgingStepSecs
            | Param::DeadlineSecs => "float8",
            Param::Worker | Param::Error | Param::Pool | Param::Class => "text",
            Param::Ids => "int8[]",
            Param::Attempt | Param::Priority | Param::MaxAttempts => "int4",
            Param::Token => "uuid",
            Param::Payload => "jsonb",
            Param::Now => "timestamptz",
            Param::Const(_) | Param::Prev(_) => "text",
        }
    }

    /// A parameter whose type is the claim's column (an adapter's own id, attempt, token).
    pub fn is_key(self) -> bool {
        matches!(self, Param::Id | Param::Attempt | Param::Token)
    }

    fn from_name(name: &str) -> Option<Param> {
        ALL.into_iter().find(|p| p.name() == name)
    }
}

impl fmt::Display for Param {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, ":{}", self.name())
    }
}

/// A `[constants]` value of an adapter: its type is its TOML type (an array of one type is
/// an array), and `{ duration = "10s" }` is an interval that `run.time_scale` scales.
#[derive(Debug, Clone, PartialEq)]
pub enum Constant {
    Text(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    TextArray(Vec<String>),
    IntArray(Vec<i64>),
    FloatArray(Vec<f64>),
    BoolArray(Vec<bool>),
    Duration(std::time::Duration),
}

impl Constant {
    pub fn sql_type(&self) -> &'static str {
        match self {
            Constant::Text(_) => "text",
            Constant::Int(_) => "int8",
            Constant::Float(_) => "float8",
            Constant::Bool(_) => "bool",
            Constant::TextArray(_) => "text[]",
            Constant::IntArray(_) => "int8[]",
            Constant::FloatArray(_) => "float8[]",
            Constant::BoolArray(_) => "bool[]",
            Constant::Duration(_) => "interval",
        }
    }

    /// As a SQL literal (the adapter's `setup`, which runs as a simple query without parameters).
    pub fn literal(&self) -> String {
        match self {
            Constant::Text(t) => crate::quote::literal(t),
            Constant::Int(i) => i.to_string(),
            Constant::Float(f) => format!("{f:?}"),
            Constant::Bool(b) => b.to_string(),
            Constant::TextArray(v) => array_literal(v.iter().map(|t| Constant::Text(t.clone()).literal()), "text"),
            Constant::IntArray(v) => array_literal(v.iter().map(i64::to_string), "int8"),
            Constant::FloatArray(v) => array_literal(v.iter().map(|f| format!("{f:?}")), "float8"),
            Constant::BoolArray(v) => array_literal(v.iter().map(bool::to_string), "bool"),
            Constant::Duration(d) => format!("interval '{} microseconds'", d.as_micros()),
        }
    }
}

fn array_literal(items: impl Iterator<Item = String>, ty: &str) -> String {
    format!("ARRAY[{}]::{ty}[]", items.collect::<Vec<_>>().join(", "))
}

impl ToSql for Constant {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Constant::Text(t) => t.to_sql(ty, out),
            Constant::Int(i) => i.to_sql(ty, out),
            Constant::Float(f) => f.to_sql(ty, out),
            Constant::Bool(b) => b.to_sql(ty, out),
            Constant::TextArray(v) => v.to_sql(ty, out),
            Constant::IntArray(v) => v.to_sql(ty, out),
            Constant::FloatArray(v) => v.to_sql(ty, out),
            Constant::BoolArray(v) => v.to_sql(ty, out),
            Constant::Duration(d) => {
                // PostgreSQL's binary interval: microseconds, days, months.
                out.extend_from_slice(&i64::try_from(d.as_micros())?.to_be_bytes());
                out.extend_from_slice(&0i32.to_be_bytes());
                out.extend_from_slice(&0i32.to_be_bytes());
                Ok(IsNull::No)
            }
        }
    }

    fn accepts(ty: &Type) -> bool {
        matches!(
            *ty,
            Type::TEXT
                | Type::INT8
                | Type::FLOAT8
                | Type::BOOL
                | Type::TEXT_ARRAY
                | Type::INT8_ARRAY
                | Type::FLOAT8_ARRAY
                | Type::BOOL_ARRAY
                | Type::INTERVAL
        )
    }

    to_sql_checked!();
}

/// What a statement may name: its role's parameters, the adapter's constants, and whether the
/// key parameters (`:id`, `:attempt`, `:token`) are cast to the built-in table's types or left
/// for the server to infer from the adapter's own columns.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Names<'a> {
    pub allowed: &'a [Param],
    pub constants: &'a [(String, Constant)],
    pub cast_keys: bool,
    /// The statement follows another in its step, so it may use `:prev.COLUMN`.
    pub prev: bool,
}

/// SQL with `$n::type` placeholders and the parameter bound to each `$n`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Positional {
    pub sql: String,
    pub params: Vec<Param>,
    /// The previous statement's columns `:prev.COLUMN` names, in `Param::Prev`'s order.
    pub carried: Vec<String>,
}

/// A `:name` in a statement that cannot be bound; both list what the statement accepts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ParamError {
    #[error("unknown parameter `:{name}`; this statement accepts {accepted}")]
    Unknown { name: String, accepted: String },
    #[error("parameter `:{name}` is not available here; this statement accepts {accepted}")]
    Unavailable { name: String, accepted: String },
    #[error(
        "`:prev.{column}` reads a column of the previous statement of the same step: only in the second or a later \
         statement of a list (`claim = [\"SELECT id … FOR UPDATE SKIP LOCKED\", \"UPDATE … WHERE id = ANY(:prev.id) …\"]`)"
    )]
    NoPrevious { column: String },
}

/// Rewrites `:name` to `$n::type` with the built-in table's types (see [`translate_with`]).
#[cfg(test)]
pub(crate) fn translate(text: &str, allowed: &[Param]) -> Result<Positional, ParamError> {
    translate_with(text, &Names { allowed, constants: &[], cast_keys: true, prev: false })
}

/// Rewrites `:name` to `$n::type`, leaving string literals, quoted identifiers, comments and
/// `::` casts alone. A key parameter is written `$n` alone unless `cast_keys`. A name that is
/// neither a parameter the statement may use nor a constant is an error listing what is allowed.
pub(crate) fn translate_with(text: &str, names: &Names) -> Result<Positional, ParamError> {
    let allowed = names.allowed;
    let mut sql = String::with_capacity(text.len() + 16);
    let mut params: Vec<Param> = Vec::new();
    let mut carried: Vec<String> = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let skip_to = match c {
            b'\'' | b'"' => closing_quote(b, i),
            b'-' if b.get(i + 1) == Some(&b'-') => memchr_from(b, i, b'\n'),
            b'/' if b.get(i + 1) == Some(&b'*') => text[i + 2..].find("*/").map_or(b.len(), |p| i + 2 + p + 2),
            b':' if b.get(i + 1) == Some(&b':') => i + 2,
            _ => i,
        };
        if skip_to > i {
            sql.push_str(&text[i..skip_to]);
            i = skip_to;
            continue;
        }
        if c == b':' && b.get(i + 1).is_some_and(|n| n.is_ascii_alphabetic() || *n == b'_') {
            let word_end = |from: usize| {
                (from..b.len()).find(|&j| !(b[j].is_ascii_alphanumeric() || b[j] == b'_')).unwrap_or(b.len())
            };
            let end = word_end(i + 1);
            let name = &text[i + 1..end];
            if name == "prev" && b.get(end) == Some(&b'.') && word_end(end + 1) > end + 1 {
                let column_end = word_end(end + 1);
                let column = &text[end + 1..column_end];
                if !names.prev {
                    return Err(ParamError::NoPrevious { column: column.to_string() });
                }
                let k = carried.iter().position(|c| c == column).unwrap_or_else(|| {
                    carried.push(column.to_string());
                    carried.len() - 1
                });
                let param = Param::Prev(k as u16);
                let n = params.iter().position(|p| *p == param).map_or_else(
                    || {
                        params.push(param);
                        params.len()
                    },
                    |n| n + 1,
                );
                // No cast: the server infers the array's type where it is used (`id = ANY($n)`).
                sql.push_str(&format!("${n}"));
                i = column_end;
                continue;
            }
            let accepted = || {
                let mut all: Vec<String> = allowed.iter().map(|p| p.to_string()).collect();
                all.extend(names.constants.iter().map(|(c, _)| format!(":{c}")));
                all.join(", ")
            };
            let constant = names.constants.iter().position(|(c, _)| c == name).map(|i| Param::Const(i as u16));
            let param = constant
                .or_else(|| Param::from_name(name))
                .ok_or_else(|| ParamError::Unknown { name: name.to_string(), accepted: accepted() })?;
            if !matches!(param, Param::Const(_)) && !allowed.contains(&param) {
                return Err(ParamError::Unavailable { name: name.to_string(), accepted: accepted() });
            }
            let n = match params.iter().position(|p| *p == param) {
                Some(n) => n + 1,
                None => {
                    params.push(param);
                    params.len()
                }
            };
            match param {
                Param::Const(i) => sql.push_str(&format!("${n}::{}", names.constants[i as usize].1.sql_type())),
                p if p.is_key() && !names.cast_keys => sql.push_str(&format!("${n}")),
                p => sql.push_str(&format!("${n}::{}", p.sql_type())),
            }
            i = end;
            continue;
        }
        let ch_len = text[i..].chars().next().map_or(1, char::len_utf8);
        sql.push_str(&text[i..i + ch_len]);
        i += ch_len;
    }
    Ok(Positional { sql, params, carried })
}

/// Index just past the quote that closes the one at `start` ('' and "" escape).
fn closing_quote(b: &[u8], start: usize) -> usize {
    let q = b[start];
    let mut j = start + 1;
    while j < b.len() {
        if b[j] == q {
            if b.get(j + 1) == Some(&q) {
                j += 2;
                continue;
            }
            return j + 1;
        }
        j += 1;
    }
    b.len()
}

fn memchr_from(b: &[u8], from: usize, needle: u8) -> usize {
    b[from..].iter().position(|&c| c == needle).map_or(b.len(), |p| from + p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn translates_and_reuses_numbers() {
        let p = translate("SELECT :id, :token, :id", &[Param::Id, Param::Token]).unwrap();
        assert_eq!(p.sql, "SELECT $1::int8, $2::uuid, $1::int8");
        assert_eq!(p.params, vec![Param::Id, Param::Token]);
    }

    #[test]
    fn leaves_literals_casts_and_comments_alone() {
        let text = "SELECT ':id', '{}'::jsonb, \":id\" -- :nope\n/* :nope */ FROM t WHERE x = :id";
        let p = translate(text, &[Param::Id]).unwrap();
        assert_eq!(p.sql, "SELECT ':id', '{}'::jsonb, \":id\" -- :nope\n/* :nope */ FROM t WHERE x = $1::int8");
    }

    #[test]
    fn unknown_and_unavailable_parameters_are_errors() {
        let e = translate("SELECT :bogus", &[Param::Id]).unwrap_err();
        assert_eq!(e, ParamError::Unknown { name: "bogus".into(), accepted: ":id".into() });
        assert!(e.to_string().contains("unknown parameter `:bogus`") && e.to_string().contains(":id"), "{e}");
        let e = translate("SELECT :batch", &[Param::Id]).unwrap_err();
        assert!(e.to_string().contains("not available"), "{e}");
    }

    #[test]
    fn constants_and_adapter_keys() {
        let constants = [("queue".to_string(), Constant::Text("default".into())), ("n_max".into(), Constant::Int(3))];
        let names = Names { allowed: &[Param::Id, Param::Now], constants: &constants, cast_keys: false, prev: false };
        let p = translate_with("SELECT :id, :queue, :now, :n_max, :queue", &names).unwrap();
        assert_eq!(p.sql, "SELECT $1, $2::text, $3::timestamptz, $4::int8, $2::text");
        assert_eq!(p.params, vec![Param::Id, Param::Const(0), Param::Now, Param::Const(1)]);
        let e = translate_with("SELECT :quux", &names).unwrap_err();
        assert!(e.to_string().contains(":queue") && e.to_string().contains(":n_max"), "{e}");
        assert_eq!(Constant::Text("it's".into()).literal(), "'it''s'");
        let queues = Constant::TextArray(vec!["a".into(), "b'c".into()]);
        assert_eq!(queues.literal(), "ARRAY['a', 'b''c']::text[]");
        assert_eq!(queues.sql_type(), "text[]");
        let every = Constant::Duration(std::time::Duration::from_millis(1500));
        assert_eq!((every.literal().as_str(), every.sql_type()), ("interval '1500000 microseconds'", "interval"));
    }

    #[test]
    fn a_later_statement_of_a_list_reads_the_previous_ones_columns() {
        let names = Names { allowed: &[Param::Batch], constants: &[], cast_keys: false, prev: true };
        let p = translate_with(
            "UPDATE q SET s = 1 WHERE id = ANY(:prev.id) AND t = ANY(:prev.tok::text[]) OR id = ANY(:prev.id)",
            &names,
        )
        .unwrap();
        assert_eq!(p.sql, "UPDATE q SET s = 1 WHERE id = ANY($1) AND t = ANY($2::text[]) OR id = ANY($1)");
        assert_eq!(p.params, vec![Param::Prev(0), Param::Prev(1)]);
        assert_eq!(p.carried, ["id", "tok"]);
        let e = translate_with("SELECT :prev.id", &Names { prev: false, ..names }).unwrap_err();
        assert!(e.to_string().contains("second or a later statement"), "{e}");
    }

    #[test]
    fn survives_odd_input() {
        for s in ["'", "\"", "--", "/*", ":", "::", "é:id", "':id''"] {
            let _ = translate(s, &ALL);
        }
    }
}
