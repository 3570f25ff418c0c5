//! Text helpers of the protocol: fixed uuids in place of random ones, a key from its text, a
//! write's verdict from its text result, and whether a statement only reads.

use crate::adapter::Accepted;
use crate::adapter::keys::Key;
use crate::explore::session::Rows;
use crate::run::values::Claimed;

pub(super) const RANDOM_UUID: &str = "gen_random_uuid()";

/// Every `gen_random_uuid()` in `sql` as a fixed uuid: session `actor`'s draw `from`, `from + 1`,
/// … A token stays unique to its claim, and two schedules that reach the same state by steps
/// in another order write the same tokens, so the states meet (a random token would keep
/// every state apart).
pub(super) fn uuids(sql: &str, actor: usize, from: u32) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut rest = sql;
    let mut draw = from;
    while let Some(i) = rest.to_ascii_lowercase().find(RANDOM_UUID) {
        out.push_str(&rest[..i]);
        draw += 1;
        out.push_str(&format!("'00000000-0000-4000-8000-{:04x}{draw:08x}'::uuid", actor + 1));
        rest = &rest[i + RANDOM_UUID.len()..];
    }
    out.push_str(rest);
    out
}

pub(super) fn text_key(t: &str) -> Key {
    match t.parse::<i64>() {
        Ok(n) => Key::Int(n),
        Err(_) => match uuid::Uuid::parse_str(t) {
            Ok(u) => Key::Uuid(u),
            Err(_) => Key::Text(t.to_string()),
        },
    }
}

pub(super) fn shown(jobs: &[Claimed]) -> String {
    if jobs.is_empty() {
        "nothing".into()
    } else {
        let keys: Vec<String> = jobs.iter().map(|j| j.key.show()).collect();
        format!("job {}", keys.join(", "))
    }
}

/// A write's verdict by its rule, from its text result.
pub(super) fn judge(rows: &Rows, rule: Accepted) -> bool {
    let first = rows.rows.first().and_then(|r| r.first().cloned().flatten());
    match rule {
        Accepted::Rows => rows.affected > 0,
        Accepted::True => first.as_deref() == Some("t"),
        Accepted::Positive => first.and_then(|t| t.parse::<f64>().ok()).is_some_and(|n| n > 0.0),
    }
}

/// A plain read: one SELECT (or WITH … SELECT) with no locking clause, no write and no
/// advisory lock. Anything else is taken to write.
pub(super) fn read_only(text: &str) -> bool {
    let code: String = text.lines().map(|l| l.split_once("--").map_or(l, |(c, _)| c)).collect::<Vec<_>>().join(" ");
    let lower = code.to_ascii_lowercase();
    let words: Vec<&str> =
        lower.split(|c: char| !c.is_ascii_alphanumeric() && c != '_').filter(|w| !w.is_empty()).collect();
    let starts = matches!(words.first(), Some(&"select") | Some(&"with"));
    let writes = ["insert", "update", "delete", "merge", "share", "nextval", "setval", "notify", "lock", "into"];
    starts
        && !words.iter().any(|w| writes.contains(w) || w.starts_with("pg_advisory") || w.starts_with("pg_try_advisory"))
}

#[cfg(test)]
mod tests {
    use super::read_only;

    #[test]
    fn random_uuids_are_fixed_per_session_and_draw() {
        let sql = "SET token = gen_random_uuid(), other = GEN_RANDOM_UUID()";
        let out = super::uuids(sql, 1, 4);
        assert_eq!(
            out,
            "SET token = '00000000-0000-4000-8000-000200000005'::uuid, other = '00000000-0000-4000-8000-000200000006'::uuid"
        );
        assert_ne!(super::uuids("gen_random_uuid()", 0, 0), super::uuids("gen_random_uuid()", 1, 0));
    }

    #[test]
    fn only_a_plain_select_is_read_only() {
        assert!(read_only("SELECT id FROM jobs WHERE status = 'queued' -- FOR UPDATE in a comment\nLIMIT 1"));
        assert!(!read_only("SELECT id FROM jobs FOR UPDATE SKIP LOCKED"));
        assert!(!read_only("SELECT id FROM jobs FOR SHARE"));
        assert!(!read_only("WITH x AS (UPDATE jobs SET a = 1 RETURNING id) SELECT id FROM x"));
        assert!(!read_only("SELECT pg_try_advisory_lock(id) FROM jobs"));
        assert!(!read_only("UPDATE jobs SET a = 1"));
    }
}
