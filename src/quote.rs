//! Names and values written into SQL text: the one place queuebench quotes them.
//!
//! Every identifier queuebench builds into a statement (a schema, a table, a channel, a role)
//! goes through [`ident`] or [`qualified`], even one already checked to be a plain word. Every
//! value is bound as a parameter (`$1`); where PostgreSQL cannot bind one (a `SET`, a
//! `COMMENT ON`, a batch of statements, a script for psql or pgbench) it is written by
//! [`literal`]. A name a hostile role chose (`a".qb_agent_run, a.evil() s --`) is then read as
//! a name, never as SQL (docs/safety.md, "Names and values in SQL"; tests/hostile_names.rs).
//!
//! On the ground floor, beside `error`, so that an error's suggested command is quoted the
//! same way as the statement queuebench runs.

/// `name` as a quoted identifier: `"name"`, every `"` doubled. Always quoted, so the name is
/// taken exactly as written (case, unicode, spaces, `$1`, `;`, `--` and all). A NUL byte cannot
/// be part of a name: the driver refuses a statement that holds one.
pub(crate) fn ident(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 2);
    out.push('"');
    for c in name.chars() {
        if c == '"' {
            out.push('"');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// `schema.name`, each part quoted: `"schema"."name"`.
pub(crate) fn qualified(schema: &str, name: &str) -> String {
    format!("{}.{}", ident(schema), ident(name))
}

/// `text` as a string literal: `'text'` with every `'` doubled. A text holding a backslash is
/// written `E'…'` with every backslash doubled, so it means the same whatever
/// `standard_conforming_strings` a session (an adapter's `on_connect`) has set.
pub(crate) fn literal(text: &str) -> String {
    let escape = text.contains('\\');
    let mut out = String::with_capacity(text.len() + 3);
    if escape {
        out.push('E');
    }
    out.push('\'');
    for c in text.chars() {
        match c {
            '\'' => out.push_str("''"),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// A text array as one string literal (`'{"a","b c"}'`): each element double-quoted inside the
/// array's own syntax (its `"` and `\` escaped), the whole written by [`literal`]. The server
/// casts it to the parameter's array type.
pub(crate) fn array_literal<T: ToString>(items: impl Iterator<Item = T>) -> String {
    let mut inner = String::from("{");
    for (i, item) in items.enumerate() {
        if i > 0 {
            inner.push(',');
        }
        inner.push('"');
        for c in item.to_string().chars() {
            if c == '"' || c == '\\' {
                inner.push('\\');
            }
            inner.push(c);
        }
        inner.push('"');
    }
    inner.push('}');
    literal(&inner)
}

/// `name=value` for a connection's `options` (`-c search_path=…`): the value is the quoted
/// identifier, and every space and backslash in it is escaped with a backslash, as the server
/// splits `options` into words at unescaped white space.
pub(crate) fn option_ident(key: &str, name: &str) -> String {
    let mut out = format!("{key}=");
    for c in ident(name).chars() {
        if c == '\\' || c.is_whitespace() {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names a hostile role could give a schema or table: each must come back as one name.
    const HOSTILE: [&str; 10] = [
        "a\".qb_agent_run, a.evil() s --",
        "x\"; DROP SCHEMA public CASCADE; --",
        "$1",
        "semi;colon",
        "dash -- comment",
        "ünï\u{00e7}ødé ☃",
        "back\\slash",
        "it's",
        "\"\"",
        "Mixed Case",
    ];

    /// Reads a quoted identifier back as PostgreSQL's scanner would: the name, and what follows.
    fn unquote(sql: &str) -> (String, &str) {
        let body = sql.strip_prefix('"').expect("starts with a quote");
        let mut name = String::new();
        let mut chars = body.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            if c == '"' {
                if chars.peek().map(|(_, c)| *c) == Some('"') {
                    chars.next();
                    name.push('"');
                } else {
                    return (name, &body[i + 1..]);
                }
            } else {
                name.push(c);
            }
        }
        panic!("unterminated identifier in {sql}");
    }

    #[test]
    fn a_quoted_name_reads_back_as_itself_and_nothing_more() {
        for name in HOSTILE {
            let q = ident(name);
            assert_eq!(unquote(&q), (name.to_string(), ""), "{q}");
        }
        assert_eq!(ident("jobs"), "\"jobs\"");
        assert_eq!(ident("a\"b"), "\"a\"\"b\"");
    }

    #[test]
    fn a_qualified_name_is_two_quoted_names() {
        let q = qualified("a\".qb_agent_run, a.evil() s --", "qb_agent_run");
        let (schema, rest) = unquote(&q);
        assert_eq!(schema, "a\".qb_agent_run, a.evil() s --");
        let rest = rest.strip_prefix('.').expect("a dot between the parts");
        assert_eq!(unquote(rest), ("qb_agent_run".to_string(), ""));
    }

    /// Reads a string literal back (standard_conforming_strings on for `'…'`, escapes for `E'…'`).
    fn unliteral(sql: &str) -> String {
        let (escapes, body) = match sql.strip_prefix('E') {
            Some(b) => (true, b),
            None => (false, sql),
        };
        let body = body.strip_prefix('\'').and_then(|b| b.strip_suffix('\'')).expect("quoted");
        let mut out = String::new();
        let mut chars = body.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\'' => {
                    assert_eq!(chars.next(), Some('\''), "a lone quote ends the literal early: {sql}");
                    out.push('\'');
                }
                '\\' if escapes => out.push(chars.next().expect("an escaped character")),
                '\\' => panic!("a backslash in a plain literal depends on standard_conforming_strings: {sql}"),
                c => out.push(c),
            }
        }
        out
    }

    #[test]
    fn a_literal_reads_back_as_its_text_under_either_string_setting() {
        for text in HOSTILE.iter().copied().chain(["'; SELECT 1; --", "\\'; SELECT 1; --", "", "O'Brien\\"]) {
            let l = literal(text);
            assert_eq!(unliteral(&l), text, "{l}");
        }
        assert_eq!(literal("it's"), "'it''s'");
        assert_eq!(literal("a\\b"), "E'a\\\\b'");
    }

    #[test]
    fn an_array_literal_keeps_each_element_whole() {
        assert_eq!(array_literal([1, 2].iter()), "'{\"1\",\"2\"}'");
        assert_eq!(array_literal(std::iter::empty::<i64>()), "'{}'");
        // a"b, c\d and it's: the array's escapes inside, then the literal's around them.
        let l = array_literal(["a\"b", "c\\d", "it's"].iter());
        assert_eq!(l, r#"E'{"a\\"b","c\\\\d","it''s"}'"#);
        assert_eq!(unliteral(&l), r#"{"a\"b","c\\d","it's"}"#);
    }

    #[test]
    fn an_option_value_is_one_word() {
        let o = option_ident("search_path", "a b\\c\"d");
        assert_eq!(o, "search_path=\"a\\ b\\\\c\"\"d\"");
        assert_eq!(option_ident("search_path", "queuebench_1"), "search_path=\"queuebench_1\"");
        // No unescaped white space: the server reads it as one word.
        let unescaped = o.as_bytes().windows(2).any(|w| w[1] == b' ' && w[0] != b'\\');
        assert!(!unescaped, "{o}");
    }
}
