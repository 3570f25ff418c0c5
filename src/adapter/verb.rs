//! What a statement's top level is (`INSERT`, `UPDATE`, `DELETE`, `SELECT` …), read from its
//! text: after comments, and after a `WITH` list of common table expressions. A write judged
//! "accepted" by its row count must be plain DML: a top-level `SELECT` reports the rows it
//! returned, whatever its data-modifying CTEs changed (pg-boss's `WITH r AS (UPDATE …) SELECT
//! count(*) FROM r` always returns one row).

/// The statement's top-level keyword, upper-cased (`SELECT`, `UPDATE`, …); None when the text
/// has no word at all.
pub(crate) fn top_level(sql: &str) -> Option<String> {
    let mut rest = skip_space(sql);
    let word = leading_word(rest)?;
    if word != "WITH" {
        return Some(word);
    }
    rest = skip_space(&rest[4..]);
    if leading_word(rest).as_deref() == Some("RECURSIVE") {
        rest = skip_space(&rest[9..]);
    }
    // name [(columns)] AS [NOT] [MATERIALIZED] ( … ) [, …], then the main statement.
    loop {
        rest = skip_space(skip_name(rest)?);
        if rest.starts_with('(') {
            rest = skip_space(&rest[matching(rest, 0)? + 1..]);
        }
        for word in ["AS", "NOT", "MATERIALIZED"] {
            if leading_word(rest).as_deref() == Some(word) {
                rest = skip_space(&rest[word.len()..]);
            }
        }
        if !rest.starts_with('(') {
            return None;
        }
        rest = skip_space(&rest[matching(rest, 0)? + 1..]);
        match rest.strip_prefix(',') {
            Some(more) => rest = skip_space(more),
            None => return leading_word(rest),
        }
    }
}

/// Past an identifier, plain or double-quoted.
fn skip_name(s: &str) -> Option<&str> {
    if let Some(r) = s.strip_prefix('"') {
        return r.find('"').map(|i| &r[i + 1..]);
    }
    let n = s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').map(char::len_utf8).sum::<usize>();
    (n > 0).then(|| &s[n..])
}

/// Is this statement plain DML, whose row count is what it changed?
pub(crate) fn is_dml(sql: &str) -> bool {
    matches!(top_level(sql).as_deref(), Some("INSERT" | "UPDATE" | "DELETE" | "MERGE"))
}

fn leading_word(s: &str) -> Option<String> {
    let w: String = s.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
    (!w.is_empty()).then(|| w.to_ascii_uppercase())
}

/// Skips whitespace and comments (`-- …` to the end of the line, `/* … */`).
fn skip_space(mut s: &str) -> &str {
    loop {
        let t = s.trim_start();
        if let Some(r) = t.strip_prefix("--") {
            s = r.find('\n').map_or("", |i| &r[i + 1..]);
        } else if let Some(r) = t.strip_prefix("/*") {
            s = r.find("*/").map_or("", |i| &r[i + 2..]);
        } else {
            return t;
        }
    }
}

/// The index of the parenthesis closing the one at `open`, past strings, quoted names and comments.
fn matching(s: &str, open: usize) -> Option<usize> {
    let b = s.as_bytes();
    let mut depth = 0usize;
    let mut i = open;
    while i < b.len() {
        match b[i] {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            q @ (b'\'' | b'"') => {
                i += 1;
                while i < b.len() && b[i] != q {
                    i += 1;
                }
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_top_level_is_found_past_comments_and_ctes() {
        assert_eq!(top_level("-- x\nUPDATE jobs SET a = 1").as_deref(), Some("UPDATE"));
        assert_eq!(top_level("/* c */ delete from q").as_deref(), Some("DELETE"));
        let claim = "WITH next AS (\n  SELECT id FROM jobs WHERE x = ')' FOR UPDATE SKIP LOCKED\n)\nUPDATE jobs j SET s = 1 FROM next";
        assert_eq!(top_level(claim).as_deref(), Some("UPDATE"));
        let pgboss = "WITH results AS (UPDATE job SET state = 'completed' WHERE id = $1 RETURNING 1) SELECT COUNT(*) FROM results";
        assert_eq!(top_level(pgboss).as_deref(), Some("SELECT"));
        assert!(!is_dml(pgboss), "a SELECT's row count says nothing about what its CTE changed");
        let two = "WITH RECURSIVE a (n) AS (SELECT 1), b AS MATERIALIZED (SELECT 2) INSERT INTO t SELECT n FROM a";
        assert_eq!(top_level(two).as_deref(), Some("INSERT"));
        assert!(is_dml("INSERT INTO t VALUES (1) RETURNING id"));
        assert_eq!(top_level("   "), None);
        assert_eq!(top_level("SELECT pg_advisory_unlock(1)").as_deref(), Some("SELECT"));
    }
}
