//! The run's schema: created from `migrations/`, preloaded, read back at
//! the end, dropped. Every statement here is one `queuebench sql` prints.

use super::{Database, error_text, sql};
use crate::error::{Error, Result, Unfit};
use crate::model::summary::{Environment, SettingReport};
use crate::quote;
use std::collections::BTreeMap;
use tokio_postgres::Client;

use super::statements::{
    ADAPTER_EFFECTS, COMPARABLE_SETTINGS, CONNECTION_SLOTS, LEFTOVER_SCHEMAS, MIGRATION, NOTIFY_MIGRATION, OWN_OBJECTS,
    SETTINGS,
};

fn sql_error(what: &str, e: &tokio_postgres::Error) -> Error {
    Error::Database { action: what.to_string(), target: None, sql: sql(e), hint: None }
}

/// What creates the queue's tables in the run's schema.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Setup<'a> {
    /// queuebench's own table (`migrations/`); with `notify`, the NOTIFY trigger too.
    OwnTable { notify: bool },
    /// An adapter's setup SQL, its constants already written in.
    Sql(&'a str),
    /// A command that creates the adapter's schema (the real library's own migrations), run
    /// with `QUEUEBENCH_DATABASE_URL` and `QUEUEBENCH_SCHEMA` in its environment.
    Command(&'a [String]),
}

/// The run's schema, then the queue's tables inside it (`setup`), queuebench's effects table
/// beside an adapter's, and the table's storage parameters. An existing schema is refused
/// unless `--reuse` (only for queuebench's own table); then only queuebench's own tables in it
/// are replaced. Returns the setup connection (search_path = the run's schema).
pub(crate) async fn install(
    db: &Database,
    setup: Setup<'_>,
    table: &str,
    table_settings: &[(String, String)],
) -> Result<Client> {
    if db.reuse && !matches!(setup, Setup::OwnTable { .. }) {
        return Err(Error::Flag {
            flag: "--reuse".into(),
            reason: "replaces queuebench's own tables in an existing schema; an adapter's queue needs a schema of \
                     its own: give another --schema, or leave it out"
                .into(),
        });
    }
    let client = create(db).await?;
    run_setup(db, &client, setup, table, table_settings).await?;
    Ok(client)
}

/// The run's schema (created, or reused under `--reuse`), and a connection into it.
pub(crate) async fn create(db: &Database) -> Result<Client> {
    let admin = db.connect_admin().await?;
    create_or_reuse(db, &admin).await?;
    super::role::hand_over(db, &admin).await?;
    drop(admin);
    db.connect().await
}

/// The queue's tables in the run's schema (`setup`), queuebench's effects table beside an
/// adapter's, and the table's storage parameters, on `client` (which `validate` holds in a
/// transaction it rolls back).
pub(crate) async fn run_setup(
    db: &Database,
    client: &Client,
    setup: Setup<'_>,
    table: &str,
    table_settings: &[(String, String)],
) -> Result<()> {
    match setup {
        Setup::OwnTable { notify } => {
            client.batch_execute(MIGRATION).await.map_err(|e| sql_error("installing migrations/001_queue.sql", &e))?;
            if notify {
                client
                    .batch_execute(NOTIFY_MIGRATION)
                    .await
                    .map_err(|e| sql_error("installing migrations/002_notify.sql", &e))?;
            }
        }
        Setup::Sql(sql) => {
            client
                .batch_execute(sql)
                .await
                .map_err(|e| super::role::hinted(db, sql_error("running the adapter's setup", &e)))?;
            client.batch_execute(ADAPTER_EFFECTS).await.map_err(|e| sql_error("creating queuebench_effects", &e))?;
        }
        Setup::Command(command) => {
            run_setup_command(db, command).await?;
            client.batch_execute(ADAPTER_EFFECTS).await.map_err(|e| sql_error("creating queuebench_effects", &e))?;
        }
    }
    if !table_settings.is_empty() {
        // Names and values were checked to be plain words or numbers when the scenario was
        // validated; still, each value goes in as a literal (a storage parameter takes a string).
        let list: Vec<String> = table_settings.iter().map(|(k, v)| format!("{k} = {}", quote::literal(v))).collect();
        let alter = format!("ALTER TABLE {} SET ({})", quote::ident(table), list.join(", "));
        client.batch_execute(&alter).await.map_err(|e| sql_error(&alter, &e))?;
    }
    Ok(())
}

/// Runs an adapter's setup command (the queue library's own migrations) in the run's schema.
async fn run_setup_command(db: &Database, command: &[String]) -> Result<()> {
    let shown = command.join(" ");
    let out = tokio::process::Command::new(&command[0])
        .args(&command[1..])
        .env("QUEUEBENCH_DATABASE_URL", db.run_url())
        .env("QUEUEBENCH_SCHEMA", &db.schema)
        .env("QUEUEBENCH_APPLICATION_NAME", "queuebench-setup")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| Error::Machine {
            action: format!("starting the setup command `{shown}`"),
            cause: e.to_string(),
        })?;
    if out.status.success() {
        return Ok(());
    }
    let tail: String = String::from_utf8_lossy(&out.stderr)
        .lines()
        .rev()
        .take(8)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect::<Vec<_>>()
        .join("\n  ");
    Err(Error::Machine {
        action: format!("running the setup command `{shown}`"),
        cause: format!("it exited with {}; its last lines:\n  {tail}", out.status),
    })
}

/// `VACUUM ANALYZE` on the queue's table (after the preload).
pub(crate) async fn vacuum_analyze(client: &Client, table: &str) -> Result<()> {
    let sql = format!("VACUUM ANALYZE {}", quote::ident(table));
    client.batch_execute(&sql).await.map_err(|e| sql_error(&sql, &e))
}

/// The tables and function queuebench installs; each carries the comment [`MARK`].
pub(crate) const OWN_TABLES: [&str; 3] = ["jobs", "effects", "business_rows"];
pub(crate) const MARK: &str = "queuebench";

async fn create_or_reuse(db: &Database, admin: &Client) -> Result<()> {
    let exists = admin
        .query_one("SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", &[&db.schema])
        .await
        .map_err(|e| sql_error("looking up the schema", &e))?
        .get::<_, bool>(0);
    if exists && !db.reuse {
        return Err(Error::Unfit {
            target: db.shown().to_string(),
            problem: Unfit::SchemaExists { schema: db.schema.clone() },
        });
    }
    if db.kind == super::Kind::Url {
        note_leftovers(db, admin).await;
    }
    if exists {
        drop_objects(db, admin).await?;
        db.mark_schema(false);
        return Ok(());
    }
    // The schema and its mark in one implicit transaction: `clean` drops only marked schemas.
    let schema = quote::ident(&db.schema);
    let create = format!("CREATE SCHEMA {schema}");
    let marked = format!("{create}; COMMENT ON SCHEMA {schema} IS {}", quote::literal(&Mark::ours().text()));
    admin.batch_execute(&marked).await.map_err(|e| {
        let hint = match e.code().map(|c| c.code()) {
            Some("42501") => {
                let (user, dbname) = db.user_and_database();
                Some(format!(
                    "this user may not create schemas in the database. Grant it (GRANT CREATE ON DATABASE \
                     {} TO {}), or have a schema created for it and run with --schema NAME --reuse, or \
                     leave out --database-url to let queuebench start its own cluster",
                    quote::ident(&dbname),
                    quote::ident(&user)
                ))
            }
            Some("42P06") => Some("that schema appeared meanwhile: run again".to_string()),
            _ => None,
        };
        Error::Database { action: create.clone(), target: Some(db.shown().to_string()), sql: sql(&e), hint }
    })?;
    db.mark_schema(true);
    Ok(())
}

/// The comment queuebench writes on a schema it creates: its mark and the process that owns
/// it (`queuebench run, pid 4242 on host1`). `clean` drops a schema only when it carries the
/// mark and that process is gone; a look-alike (a user's `queuebench_20250101_000000_abcd`)
/// has no mark and is left alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mark {
    pub pid: i32,
    pub host: String,
}

const MARK_HEAD: &str = "queuebench run, pid ";

impl Mark {
    /// This process's mark.
    pub(crate) fn ours() -> Mark {
        Mark { pid: std::process::id() as i32, host: this_host() }
    }

    /// The comment's text (no quote can appear in it: a host name is letters, digits, `-` and `.`).
    pub(crate) fn text(&self) -> String {
        let host: String = self.host.chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.')).collect();
        format!("{MARK_HEAD}{} on {host}", self.pid)
    }

    /// The mark in a schema's comment; None for a schema queuebench did not create.
    pub(crate) fn parse(comment: &str) -> Option<Mark> {
        let (pid, host) = comment.strip_prefix(MARK_HEAD)?.split_once(" on ")?;
        Some(Mark { pid: pid.parse().ok()?, host: host.to_string() })
    }

    /// Whether the process that created the schema still runs (on this machine; a mark from
    /// another machine cannot be checked, and its schema is left to the live-run check).
    pub(crate) fn owner_alive(&self) -> bool {
        // SAFETY: kill(2) with signal 0 only checks that the process exists.
        self.host == this_host()
            && (unsafe { libc::kill(self.pid, 0) } == 0
                || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM))
    }
}

fn this_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_default()
}

/// Schemas of earlier runs that were killed or kept (`--keep`): named, never dropped.
async fn note_leftovers(db: &Database, admin: &Client) {
    let Ok(rows) = admin.query(LEFTOVER_SCHEMAS, &[&db.schema]).await else {
        return;
    };
    let names: Vec<String> = rows.iter().filter(|r| Mark::parse(r.get(2)).is_some()).map(|r| r.get(0)).collect();
    if !names.is_empty() {
        eprintln!(
            "note: {} holds {} of earlier queuebench runs (kept with --keep, or the run was killed): {}; \
             the run leaves them alone; `queuebench clean --database-url URL` lists and removes them",
            db.shown(),
            crate::model::words::count(names.len() as u64, "schema"),
            names.join(", ")
        );
    }
}

/// Drops queuebench's own tables and function from the schema (`--reuse`); refuses, before
/// dropping anything, when one of those names belongs to an object without queuebench's mark.
async fn drop_objects(db: &Database, client: &Client) -> Result<()> {
    let rows = client
        .query(OWN_OBJECTS, &[&db.schema, &OWN_TABLES.to_vec(), &MARK])
        .await
        .map_err(|e| sql_error(&format!("listing queuebench's tables in schema {}", db.schema), &e))?;
    if let Some(foreign) = rows.iter().find(|r| !r.get::<_, bool>(1)) {
        return Err(Error::Unfit {
            target: db.shown().to_string(),
            problem: Unfit::ForeignObject { schema: db.schema.clone(), object: foreign.get(0) },
        });
    }
    let s = &db.schema;
    let tables: Vec<String> = rows
        .iter()
        .map(|r| r.get::<_, String>(0))
        .filter(|n| n != "jobs_notify")
        .map(|n| quote::qualified(s, &n))
        .collect();
    let mut sql = String::new();
    if !tables.is_empty() {
        sql.push_str(&format!("DROP TABLE {};", tables.join(", ")));
    }
    if rows.iter().any(|r| r.get::<_, String>(0) == "jobs_notify") {
        sql.push_str(&format!("DROP FUNCTION {}();", quote::qualified(s, "jobs_notify")));
    }
    client.batch_execute(&sql).await.map_err(|e| {
        let hint = (e.code().map(|c| c.code()) == Some("2BP01")).then(|| {
            "something else in the database depends on them (a view, a foreign key): drop that first or use another \
             --schema"
                .to_string()
        });
        Error::Database { action: sql.clone(), target: None, sql: super::sql(&e), hint }
    })
}

/// The end of a `--reuse` run: queuebench's tables go, the schema stays.
pub(crate) async fn drop_own_objects(db: &Database) -> Result<()> {
    let admin = db.connect_admin().await?;
    drop_objects(db, &admin).await
}

/// The end of a run that created its schema.
pub(crate) async fn drop_schema(db: &Database) -> Result<()> {
    let admin = db.connect_admin().await?;
    admin
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", quote::ident(&db.schema)))
        .await
        .map_err(|e| sql_error(&format!("dropping schema {}", db.schema), &e))
}

/// Rows in the effects table: queuebench's own (`effects`) or beside an adapter's queue.
pub(crate) async fn effects_rows(client: &Client, own_table: bool) -> Result<u64> {
    let sql = if own_table { "SELECT count(*) FROM effects" } else { "SELECT count(*) FROM queuebench_effects" };
    let row = client.query_one(sql, &[]).await.map_err(|e| sql_error("counting effects", &e))?;
    Ok(row.get::<_, i64>(0) as u64)
}

pub(crate) async fn server_version(client: &Client) -> String {
    match client.query_one("SELECT current_setting('server_version')", &[]).await {
        Ok(r) => r.get(0),
        Err(e) => format!("unknown ({})", error_text(&e)),
    }
}

/// Whether this connection is encrypted, with the protocol and cipher (`pg_stat_ssl`).
pub(crate) async fn tls_in_use(client: &Client) -> (bool, String, String) {
    let sql = "SELECT ssl, coalesce(version, ''), coalesce(cipher, '') FROM pg_stat_ssl WHERE pid = pg_backend_pid()";
    match client.query_opt(sql, &[]).await {
        Ok(Some(r)) => (r.get(0), r.get(1), r.get(2)),
        _ => (false, String::new(), String::new()),
    }
}

/// The settings a run's fingerprint records, as the server reports them (none when it cannot).
pub(crate) async fn comparable_settings(client: &Client) -> BTreeMap<String, String> {
    let names: Vec<&str> = crate::model::fingerprint::SETTINGS.to_vec();
    match client.query(COMPARABLE_SETTINGS, &[&names]).await {
        Ok(rows) => rows.iter().map(|r| (r.get(0), r.get(1))).collect(),
        Err(e) => {
            eprintln!("warning: the server's settings for the fingerprint could not be read: {}", error_text(&e));
            BTreeMap::new()
        }
    }
}

/// URL mode: what the scenario wanted and what the server has (nothing is changed).
pub(crate) async fn report_settings(client: &Client, wanted: &[(String, String)]) -> BTreeMap<String, SettingReport> {
    let mut out = BTreeMap::new();
    for (name, want) in wanted {
        let actual = match client.query_one("SELECT current_setting($1, true)", &[name]).await {
            Ok(r) => r.get::<_, Option<String>>(0).unwrap_or_else(|| "(unknown setting)".into()),
            Err(e) => format!("(error: {})", error_text(&e)),
        };
        out.insert(name.clone(), SettingReport { wanted: want.clone(), actual });
    }
    out
}

/// The server's max_connections minus superuser-reserved slots minus the other clients'
/// connections (this one is not counted: the run's budget includes it).
pub(crate) async fn connection_slots(client: &Client) -> Result<i64> {
    let row = client.query_one(CONNECTION_SLOTS, &[]).await.map_err(|e| sql_error("reading max_connections", &e))?;
    Ok(row.get(0))
}

/// The machine and the server's non-default settings, recorded once per run.
pub(crate) async fn environment(client: &Client) -> Environment {
    let pg_settings = client
        .query(SETTINGS, &[])
        .await
        .map(|rows| rows.iter().map(|r| (r.get(0), r.get(1))).collect())
        .unwrap_or_default();
    let memory_kib: f64 = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines().find(|l| l.starts_with("MemTotal:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0.0);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    Environment {
        cores: std::thread::available_parallelism().map_or(0, |n| n.get() as u64),
        memory_gib: memory_kib / 1_048_576.0,
        os: format!("{} {}", std::env::consts::OS, kernel.trim()),
        pg_settings,
    }
}
