//! The run's schema: created from `migrations/`, preloaded, read back at
//! the end, dropped. Every statement here is one `queuebench sql` prints.

use super::{Database, error_text, sql};
use crate::error::{Error, Result, Unfit};
use crate::model::records::{JobRow, Status};
use crate::model::summary::{Environment, SettingReport};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tokio_postgres::Client;

use super::statements::{
    CONNECTION_SLOTS, FINAL_STATE, LEFTOVER_SCHEMAS, MIGRATION, NOTIFY_MIGRATION, OWN_OBJECTS, PRELOAD, SETTINGS,
};

fn sql_error(what: &str, e: &tokio_postgres::Error) -> Error {
    Error::Database { action: what.to_string(), target: None, sql: sql(e), hint: None }
}

/// The run's schema, then the migration inside it; with `notify`, the NOTIFY trigger too
/// (installed before the preload, so it wakes listeners once). An existing schema is refused
/// unless `--reuse`; then only queuebench's own tables in it are replaced.
/// Returns the client and how long the preload INSERT took.
pub async fn install(
    db: &Database,
    preload: u64,
    max_attempts: i32,
    table_settings: &[(String, String)],
    notify: bool,
) -> Result<(Client, Duration)> {
    let admin = db.connect_admin().await?;
    create_or_reuse(db, &admin).await?;
    drop(admin);
    let client = db.connect().await?;
    client.batch_execute(MIGRATION).await.map_err(|e| sql_error("installing migrations/001_queue.sql", &e))?;
    if !table_settings.is_empty() {
        // Names and values were checked to be plain words or numbers when the scenario was validated.
        let list: Vec<String> = table_settings.iter().map(|(k, v)| format!("{k} = {v}")).collect();
        let alter = format!("ALTER TABLE jobs SET ({})", list.join(", "));
        client.batch_execute(&alter).await.map_err(|e| sql_error(&alter, &e))?;
    }
    if notify {
        client
            .batch_execute(NOTIFY_MIGRATION)
            .await
            .map_err(|e| sql_error("installing migrations/002_notify.sql", &e))?;
    }
    let started = Instant::now();
    if preload > 0 {
        client
            .execute(PRELOAD, &[&(preload as i64), &max_attempts])
            .await
            .map_err(|e| sql_error("preloading jobs", &e))?;
    }
    let preload_time = started.elapsed();
    client.batch_execute("VACUUM ANALYZE jobs").await.map_err(|e| sql_error("VACUUM ANALYZE jobs", &e))?;
    Ok((client, preload_time))
}

/// The tables and function queuebench installs; each carries the comment [`MARK`].
pub const OWN_TABLES: [&str; 3] = ["jobs", "effects", "business_rows"];
pub const MARK: &str = "queuebench";

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
    let create = format!("CREATE SCHEMA \"{}\"", db.schema);
    admin.batch_execute(&create).await.map_err(|e| {
        let hint = match e.code().map(|c| c.code()) {
            Some("42501") => {
                let (user, dbname) = db.user_and_database();
                Some(format!(
                    "this user may not create schemas in the database. Grant it (GRANT CREATE ON DATABASE \
                     {dbname} TO {user}), or have a schema created for it and run with --schema NAME --reuse, or \
                     leave out --database-url to let queuebench start its own cluster"
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

/// Schemas of earlier runs that were killed or kept (`--keep`): named, never dropped.
async fn note_leftovers(db: &Database, admin: &Client) {
    let Ok(rows) = admin.query(LEFTOVER_SCHEMAS, &[&db.schema]).await else {
        return;
    };
    let names: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
    if !names.is_empty() {
        eprintln!(
            "note: {} holds {} schema(s) of earlier queuebench runs (kept with --keep, or the run was killed): {}; \
             queuebench leaves them alone; drop each with DROP SCHEMA name CASCADE when done",
            db.shown(),
            names.len(),
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
        .map(|n| format!("\"{s}\".\"{n}\""))
        .collect();
    let mut sql = String::new();
    if !tables.is_empty() {
        sql.push_str(&format!("DROP TABLE {};", tables.join(", ")));
    }
    if rows.iter().any(|r| r.get::<_, String>(0) == "jobs_notify") {
        sql.push_str(&format!("DROP FUNCTION \"{s}\".jobs_notify();"));
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
pub async fn drop_own_objects(db: &Database) -> Result<()> {
    let admin = db.connect_admin().await?;
    drop_objects(db, &admin).await
}

/// The end of a run that created its schema.
pub async fn drop_schema(db: &Database) -> Result<()> {
    let admin = db.connect_admin().await?;
    admin
        .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", db.schema))
        .await
        .map_err(|e| sql_error(&format!("dropping schema {}", db.schema), &e))
}

pub async fn final_state(client: &Client) -> Result<Vec<JobRow>> {
    let rows = client.query(FINAL_STATE, &[]).await.map_err(|e| sql_error("reading the final job table", &e))?;
    Ok(rows
        .iter()
        .map(|r| JobRow {
            id: r.get(0),
            status: Status::parse(r.get(1)),
            attempts: r.get(2),
            max_attempts: r.get(3),
            lease_expired: r.get(4),
        })
        .collect())
}

pub async fn effects_rows(client: &Client) -> Result<u64> {
    let row =
        client.query_one("SELECT count(*) FROM effects", &[]).await.map_err(|e| sql_error("counting effects", &e))?;
    Ok(row.get::<_, i64>(0) as u64)
}

pub async fn server_version(client: &Client) -> String {
    match client.query_one("SELECT current_setting('server_version')", &[]).await {
        Ok(r) => r.get(0),
        Err(e) => format!("unknown ({})", error_text(&e)),
    }
}

/// URL mode: what the scenario wanted and what the server has (nothing is changed).
pub async fn report_settings(client: &Client, wanted: &[(String, String)]) -> BTreeMap<String, SettingReport> {
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
pub async fn connection_slots(client: &Client) -> Result<i64> {
    let row = client.query_one(CONNECTION_SLOTS, &[]).await.map_err(|e| sql_error("reading max_connections", &e))?;
    Ok(row.get(0))
}

/// The machine and the server's non-default settings, recorded once per run.
pub async fn environment(client: &Client) -> Environment {
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
