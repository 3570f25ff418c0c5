//! The harness's own SQL, kept as files in `db/sql/` beside the built-in queue's
//! (`adapter/sql/`): the built-in table's migrations, the effects ledger, the business rows,
//! the sampler's statistics and the server facts. `queuebench sql` prints them as they run.

/// The queue table, the effects table, business_rows (`migrations/001_queue.sql`).
pub const MIGRATION: &str = include_str!("../../migrations/001_queue.sql");
/// The NOTIFY-on-insert trigger, for `[workers] wakeup = "listen"`.
pub const NOTIFY_MIGRATION: &str = include_str!("../../migrations/002_notify.sql");
/// An adapter's effects table (`queuebench_effects`, the process clients' too).
pub const ADAPTER_EFFECTS: &str = include_str!("sql/adapter_effects.sql");
/// A worker's batch of executions into `queuebench_effects` (an adapter's run).
pub const ADAPTER_EFFECTS_INSERT: &str = include_str!("sql/adapter_effects_insert.sql");
/// A worker's batch of executions into the effects table (the second witness).
pub const EFFECTS_INSERT: &str = include_str!("sql/effects_insert.sql");
/// A batch written again after a lost connection left its first write's outcome unknown: its
/// rows, if they landed, are deleted in the same statement that writes them anew, so the
/// ledger counts each execution once whatever the first write did (the batch's parameter is
/// the insert's last).
pub fn effects_again(own_table: bool) -> String {
    let (table, insert, batch) =
        if own_table { ("effects", EFFECTS_INSERT, 4) } else { ("queuebench_effects", ADAPTER_EFFECTS_INSERT, 5) };
    let table = crate::quote::ident(table);
    format!("WITH gone AS (DELETE FROM {table} WHERE batch = ${batch}::int8)\n{}", listed(insert))
}
/// The application's own row, enqueued beside a job (`jobs.business_row`).
pub const BUSINESS_ROW: &str = include_str!("sql/business_row.sql");
/// The sampler: the queue table's statistics and sizes ($1: its name), horizon and waits.
pub const STATS: &str = include_str!("sql/stats.sql");
/// The connection budget: free connection slots on the server.
pub const CONNECTION_SLOTS: &str = include_str!("sql/connection_slots.sql");
/// URL mode: schemas earlier runs left behind.
pub const LEFTOVER_SCHEMAS: &str = include_str!("sql/leftover_schemas.sql");
/// `--reuse`: objects named like queuebench's own, and whether they carry its mark.
pub const OWN_OBJECTS: &str = include_str!("sql/own_objects.sql");
/// The server's non-default settings.
pub const SETTINGS: &str = include_str!("sql/settings.sql");
/// The settings a run's fingerprint records ($1: their names).
pub const COMPARABLE_SETTINGS: &str = include_str!("sql/comparable_settings.sql");

/// A statement as it is listed (`queuebench sql`): without its comment lines and trailing space.
pub fn listed(sql: &str) -> String {
    sql.lines().filter(|l| !l.trim_start().starts_with("--")).collect::<Vec<_>>().join("\n").trim().to_string()
}
