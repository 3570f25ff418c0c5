//! The harness's own SQL, kept as files in `db/sql/` beside the strategies' (`strategy/sql/`):
//! the queue table's migrations, the preload, the final state the checkers read, the effects
//! ledger, the drained check, the producers' enqueue and the sampler's queries. `queuebench
//! sql` prints them as they run.

/// The queue table, the effects table, business_rows (`migrations/001_queue.sql`).
pub const MIGRATION: &str = include_str!("../../migrations/001_queue.sql");
/// The NOTIFY-on-insert trigger, for `[workers] wakeup = "listen"`.
pub const NOTIFY_MIGRATION: &str = include_str!("../../migrations/002_notify.sql");
/// Preload: `$1` jobs with strictly increasing run_at, so FIFO order is id order.
pub const PRELOAD: &str = include_str!("sql/preload.sql");
/// The end state every checker reads.
pub const FINAL_STATE: &str = include_str!("sql/final_state.sql");
/// A worker's batch of executions into the effects table (the second witness).
pub const EFFECTS_INSERT: &str = include_str!("sql/effects_insert.sql");
/// Is anything left to do? (for `stop = "drained"`)
pub const REMAINING: &str = include_str!("sql/remaining.sql");
/// One open-model arrival.
pub const ENQUEUE: &str = include_str!("sql/enqueue.sql");
/// The application's own row, enqueued beside a job (`jobs.business_row`).
pub const BUSINESS_ROW: &str = include_str!("sql/business_row.sql");
/// The sampler: depth and oldest ready age per class.
pub const DEPTH: &str = include_str!("sql/depth.sql");
/// The sampler: table statistics, sizes, horizon and waits.
pub const STATS: &str = include_str!("sql/stats.sql");
/// The connection budget: free connection slots on the server.
pub const CONNECTION_SLOTS: &str = include_str!("sql/connection_slots.sql");
/// URL mode: schemas earlier runs left behind.
pub const LEFTOVER_SCHEMAS: &str = include_str!("sql/leftover_schemas.sql");
/// `--reuse`: objects named like queuebench's own, and whether they carry its mark.
pub const OWN_OBJECTS: &str = include_str!("sql/own_objects.sql");
/// The server's non-default settings.
pub const SETTINGS: &str = include_str!("sql/settings.sql");

/// A statement as it is listed (`queuebench sql`): without its comment lines and trailing space.
pub fn listed(sql: &str) -> String {
    sql.lines().filter(|l| !l.trim_start().starts_with("--")).collect::<Vec<_>>().join("\n").trim().to_string()
}
