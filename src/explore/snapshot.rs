//! The schema as the preload left it, and the SQL that puts it back before each schedule.
//!
//! As a superuser the restore runs with `session_replication_role = replica`: no trigger and no
//! foreign key fires while rows go back. A role that may not set it (the least-privilege role a
//! scenario's SQL runs as) restores the same rows with the schema's own triggers disabled for the
//! restore (`ALTER TABLE … DISABLE TRIGGER`, which the tables' owner may do), and the tables
//! filled parents first, so that a foreign key between them (procrastinate's events reference
//! its jobs) holds at every insert.

use super::session::monitor_err;
use crate::error::Result;
use crate::quote;
use std::collections::{BTreeMap, BTreeSet};
use tokio_postgres::Client;

/// The schema's tables and sequences as the preload left them, kept in temporary tables of the
/// monitor's session, and the SQL that puts them back.
pub(super) struct Snapshot {
    restore: String,
    /// The tables a state is read from, in a fixed order (`state`).
    tables: Vec<String>,
    /// Every table's rows as text in one statement, prepared once: a state is one round trip.
    read: Option<tokio_postgres::Statement>,
}

const TABLES: &str = "SELECT n.nspname::text, c.relname::text, \
        (SELECT array_agg(a.attname::text ORDER BY a.attnum) FROM pg_attribute a \
          WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = '') \
   FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
  WHERE n.nspname = current_schema() AND (c.relkind = 'p' OR (c.relkind = 'r' AND NOT c.relispartition)) \
  ORDER BY c.relname";

/// Foreign keys between two tables of the schema: (child, parent), by name.
const FOREIGN_KEYS: &str = "SELECT DISTINCT cc.relname::text, pc.relname::text \
   FROM pg_constraint k JOIN pg_class cc ON cc.oid = k.conrelid JOIN pg_class pc ON pc.oid = k.confrelid \
   JOIN pg_namespace cn ON cn.oid = cc.relnamespace JOIN pg_namespace pn ON pn.oid = pc.relnamespace \
  WHERE k.contype = 'f' AND cn.nspname = current_schema() AND pn.nspname = current_schema() \
    AND k.conrelid <> k.confrelid";

/// The schema's own enabled triggers (not the internal ones that enforce foreign keys).
const TRIGGERS: &str = "SELECT n.nspname::text, c.relname::text, t.tgname::text \
   FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace \
  WHERE n.nspname = current_schema() AND NOT t.tgisinternal AND t.tgenabled <> 'D' \
  ORDER BY c.relname, t.tgname";

impl Snapshot {
    pub(super) async fn take(monitor: &Client) -> Result<Snapshot> {
        let err = |e: tokio_postgres::Error| monitor_err("taking the schema's snapshot", &e);
        // The adapter's setup chose these names: they are read as data and quoted here.
        let tables = monitor.query(TABLES, &[]).await.map_err(err)?;
        let replica = monitor.batch_execute("SET session_replication_role = replica").await.is_ok();
        let mut restore = String::from("BEGIN;\nSET LOCAL synchronous_commit = off;\n");
        let name = |row: &tokio_postgres::Row| quote::qualified(row.get::<_, &str>(0), row.get::<_, &str>(1));
        let mut triggers = Vec::new();
        if !replica && !tables.is_empty() {
            let all: Vec<String> = tables.iter().map(name).collect();
            restore.push_str(&format!("TRUNCATE {};\n", all.join(", ")));
            for t in monitor.query(TRIGGERS, &[]).await.map_err(err)? {
                let on = quote::qualified(t.get::<_, &str>(0), t.get::<_, &str>(1));
                triggers.push((on, quote::ident(t.get::<_, &str>(2))));
            }
            for (on, trigger) in &triggers {
                restore.push_str(&format!("ALTER TABLE {on} DISABLE TRIGGER {trigger};\n"));
            }
        }
        let edges: Vec<(String, String)> = if replica {
            Vec::new()
        } else {
            let rows = monitor.query(FOREIGN_KEYS, &[]).await.map_err(err)?;
            rows.iter().map(|r| (r.get::<_, String>(0), r.get::<_, String>(1))).collect()
        };
        let relnames: Vec<String> = tables.iter().map(|r| r.get::<_, String>(1)).collect();
        let mut names = Vec::new();
        for k in parents_first(&relnames, &edges) {
            let row = &tables[k];
            let table = name(row);
            let Some(columns) = row.get::<_, Option<Vec<String>>>(2) else { continue };
            let columns: Vec<String> = columns.iter().map(|c| quote::ident(c)).collect();
            let columns = columns.join(", ");
            let copy = quote::ident(&format!("qb_explore_snapshot_{k}"));
            monitor
                .batch_execute(&format!("CREATE TEMP TABLE {copy} AS SELECT {columns} FROM {table}"))
                .await
                .map_err(err)?;
            if replica {
                restore.push_str(&format!("DELETE FROM {table};\n"));
            }
            restore.push_str(&format!(
                "INSERT INTO {table} ({columns}) OVERRIDING SYSTEM VALUE SELECT {columns} FROM pg_temp.{copy};\n"
            ));
            names.push(table);
        }
        for (on, trigger) in &triggers {
            restore.push_str(&format!("ALTER TABLE {on} ENABLE TRIGGER {trigger};\n"));
        }
        // A state is read in name order, whatever order the restore fills the tables in.
        names.sort();
        restore_sequences(monitor, &mut restore).await?;
        restore.push_str("COMMIT;");
        let read = if names.is_empty() {
            None
        } else {
            let columns: Vec<String> = names
                .iter()
                .map(|t| format!("(SELECT coalesce(string_agg(r::text, E'\\n' ORDER BY r::text), '') FROM {t} r)"))
                .collect();
            Some(monitor.prepare(&format!("SELECT {}", columns.join(", "))).await.map_err(err)?)
        };
        Ok(Snapshot { restore, tables: names, read })
    }

    pub(super) async fn restore(&self, monitor: &Client) -> Result<()> {
        monitor.batch_execute(&self.restore).await.map_err(|e| monitor_err("restoring the schema's snapshot", &e))
    }

    /// Every row of every table as text, in a fixed order: what two schedules must agree on to
    /// have reached the same state.
    pub(super) async fn state(&self, monitor: &Client) -> Result<String> {
        let mut out = String::new();
        let Some(read) = &self.read else { return Ok(out) };
        let row = monitor.query_one(read, &[]).await.map_err(|e| monitor_err("reading a state", &e))?;
        for (i, t) in self.tables.iter().enumerate() {
            out.push_str(t);
            out.push('\n');
            out.push_str(&row.get::<_, String>(i));
            out.push('\n');
        }
        Ok(out)
    }
}

/// A state's text with every value that only names a session's backend (a column holding
/// `pg_backend_pid()`) replaced by the session's label, `<backend of session N>`: the pid
/// changes when a session reconnects after a crash, and two schedules that leave the same
/// rows but for that pid are the same state. Only whole numbers are replaced (not the digits
/// inside a longer one).
pub(super) fn label_backends(state: &str, backends: &[(i32, usize)]) -> String {
    let mut out = String::with_capacity(state.len());
    let mut rest = state;
    while let Some(start) = rest.find(|c: char| c.is_ascii_digit()) {
        let (before, from) = rest.split_at(start);
        let len = from.find(|c: char| !c.is_ascii_digit()).unwrap_or(from.len());
        let (digits, after) = from.split_at(len);
        out.push_str(before);
        // A number glued to a letter, a dot or a dash is part of a longer value (an id, a time).
        let glued = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || matches!(c, '.' | '-' | '_' | ':'));
        let inside = glued(before.chars().next_back()) || glued(after.chars().next());
        let session = digits.parse::<i32>().ok().and_then(|p| backends.iter().find(|(pid, _)| *pid == p));
        match session {
            Some((_, i)) if !inside => out.push_str(&format!("<backend of session {i}>")),
            _ => out.push_str(digits),
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// Each sequence of the schema set back to where the preload left it.
async fn restore_sequences(monitor: &Client, restore: &mut String) -> Result<()> {
    let err = |e: tokio_postgres::Error| monitor_err("taking the schema's snapshot", &e);
    let sequences = monitor
        .query(
            "SELECT n.nspname::text, c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
              WHERE n.nspname = current_schema() AND c.relkind = 'S' ORDER BY c.relname",
            &[],
        )
        .await
        .map_err(err)?;
    for row in &sequences {
        let seq = quote::qualified(row.get::<_, &str>(0), row.get::<_, &str>(1));
        let at = monitor.query_one(&format!("SELECT last_value, is_called FROM {seq}"), &[]).await.map_err(err)?;
        let (last, called): (i64, bool) = (at.get(0), at.get(1));
        restore.push_str(&format!("SELECT setval({}, {last}, {called});\n", quote::literal(&seq)));
    }
    Ok(())
}

/// The indexes of `tables` in an order where every table comes after the tables its foreign
/// keys reference (`edges`: child, parent). Tables in a cycle keep their name order, after the rest.
fn parents_first(tables: &[String], edges: &[(String, String)]) -> Vec<usize> {
    let mut waits: BTreeMap<&str, BTreeSet<&str>> = tables.iter().map(|t| (t.as_str(), BTreeSet::new())).collect();
    for (child, parent) in edges {
        if let (Some(w), true) = (waits.get_mut(child.as_str()), tables.contains(parent)) {
            w.insert(parent.as_str());
        }
    }
    let mut order = Vec::with_capacity(tables.len());
    let mut placed = BTreeSet::new();
    loop {
        let ready: Vec<usize> = (0..tables.len())
            .filter(|&k| !placed.contains(&k) && waits[tables[k].as_str()].iter().all(|p| order_has(&order, tables, p)))
            .collect();
        if ready.is_empty() {
            break;
        }
        for k in ready {
            placed.insert(k);
            order.push(k);
        }
    }
    order.extend((0..tables.len()).filter(|k| !placed.contains(k)));
    order
}

fn order_has(order: &[usize], tables: &[String], name: &str) -> bool {
    order.iter().any(|&k| tables[k] == name)
}

#[cfg(test)]
mod tests {
    use super::{label_backends, parents_first};

    #[test]
    fn a_backend_pid_is_named_by_its_session_and_other_numbers_stay() {
        let backends = [(4242, 0), (777, 1), (4300, 0)];
        let state =
            "jobs\n(1,running,4242,\"2026-12-06 00:00:00.004242+00\")\n(2,queued,,x4242)\n(3,running,4300,14242)\n";
        let want = "jobs\n(1,running,<backend of session 0>,\"2026-12-06 00:00:00.004242+00\")\n(2,queued,,x4242)\n\
                    (3,running,<backend of session 0>,14242)\n";
        assert_eq!(label_backends(state, &backends), want);
        assert_eq!(label_backends("(777)", &backends), "(<backend of session 1>)");
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parents_come_before_the_tables_that_reference_them() {
        let t = names(&["events", "jobs", "locks", "workers"]);
        let edges = vec![("events".into(), "jobs".into()), ("jobs".into(), "workers".into())];
        let order: Vec<&str> = parents_first(&t, &edges).into_iter().map(|k| t[k].as_str()).collect();
        assert_eq!(order, ["locks", "workers", "jobs", "events"]);
    }

    #[test]
    fn a_cycle_keeps_name_order_after_the_rest_and_outside_parents_are_ignored() {
        let t = names(&["a", "b", "c"]);
        let edges = vec![("a".into(), "b".into()), ("b".into(), "a".into()), ("c".into(), "elsewhere".into())];
        let order: Vec<&str> = parents_first(&t, &edges).into_iter().map(|k| t[k].as_str()).collect();
        assert_eq!(order, ["c", "a", "b"]);
    }
}
