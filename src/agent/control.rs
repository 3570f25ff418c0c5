//! The control tables (sql/control.sql) in the run's schema, and the statements both sides
//! send through them. Every connection here has the run's schema on its search_path.

use super::bundle::Bundle;
use super::problem::{NoJoin, NoRun};
use super::state::AgentState;
use crate::error::{Error, Result};
use tokio_postgres::Client;

const TABLES: &str = include_str!("sql/control.sql");
const RUN_INSERT: &str = include_str!("sql/run_insert.sql");
const AGENTS: &str = include_str!("sql/agents.sql");
const START: &str = include_str!("sql/start.sql");
const STOP: &str = include_str!("sql/stop.sql");
const PRODUCERS_DONE: &str = include_str!("sql/producers_done.sql");
const DONE: &str = include_str!("sql/done.sql");
const DOWNLOAD: &str = include_str!("sql/download.sql");
const JOIN_ROOM: &str = include_str!("sql/join_room.sql");
const JOINED: &str = include_str!("sql/joined.sql");
const JOIN: &str = include_str!("sql/join.sql");
const BUNDLE: &str = include_str!("sql/bundle.sql");
const REPORT: &str = include_str!("sql/report.sql");
const FAIL: &str = include_str!("sql/fail.sql");
const EVIDENCE_CHUNK: &str = include_str!("sql/evidence_chunk.sql");
const EVIDENCE_CLEAR: &str = include_str!("sql/evidence_clear.sql");
const RUN_SCHEMAS: &str = include_str!("sql/run_schemas.sql");

/// The table that marks a schema as a run across agents.
pub(crate) const MARK: &str = "qb_agent_run";

/// A database error in the control tables, as the run's error.
pub(crate) fn failed(action: &str, e: &tokio_postgres::Error) -> Error {
    Error::Database { action: action.into(), target: None, sql: crate::db::sql(e), hint: None }
}

/// Coordinator: the control tables, with the plan, open for `agents` agents.
pub(crate) async fn create(client: &Client, run_id: &str, agents: u32, bundle: &Bundle) -> Result<()> {
    client.batch_execute(TABLES).await.map_err(|e| failed("creating the agents' control tables", &e))?;
    let json = serde_json::to_value(bundle).expect("the bundle serialises");
    client
        .execute(RUN_INSERT, &[&run_id, &(agents as i32), &json])
        .await
        .map_err(|e| failed("writing the plan for the agents", &e))?;
    Ok(())
}

/// One agent as the coordinator sees it.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub agent: u32,
    pub name: String,
    pub state: AgentState,
    /// Seconds since it last showed a sign of life (server clock), and when that was (µs since
    /// the epoch, server clock).
    pub silent_s: f64,
    pub last_seen_us: i64,
    pub report: Option<serde_json::Value>,
    pub error: Option<String>,
}

/// Coordinator: every agent that joined, by number.
pub(crate) async fn agents(client: &Client) -> std::result::Result<Vec<Seen>, tokio_postgres::Error> {
    let rows = client.query(AGENTS, &[]).await?;
    Ok(rows
        .iter()
        .map(|r| Seen {
            agent: r.get::<_, i32>(0) as u32,
            name: r.get(1),
            state: AgentState::read(r.get(2)),
            silent_s: r.get(3),
            report: r.get(4),
            error: r.get(5),
            last_seen_us: r.get(6),
        })
        .collect())
}

/// Coordinator: the barrier. The clock starts `after` from now on the server's clock; returns
/// that time as µs since the epoch (server clock).
pub(crate) async fn start(
    client: &Client,
    after: std::time::Duration,
) -> std::result::Result<i64, tokio_postgres::Error> {
    let row = client.query_one(START, &[&after.as_secs_f64()]).await?;
    Ok(row.get(0))
}

/// Coordinator: tells the agents to stop (their workers stop, they upload their evidence).
pub(crate) async fn stop(client: &Client) -> std::result::Result<(), tokio_postgres::Error> {
    client.execute(STOP, &[]).await.map(|_| ())
}

/// Coordinator: the producers are done (agents' workers may then stop on an empty queue).
pub(crate) async fn producers_done(client: &Client) -> std::result::Result<(), tokio_postgres::Error> {
    client.execute(PRODUCERS_DONE, &[]).await.map(|_| ())
}

/// Coordinator: the run is over; late agents are told so.
pub(crate) async fn done(client: &Client) -> std::result::Result<(), tokio_postgres::Error> {
    client.execute(DONE, &[]).await.map(|_| ())
}

/// Coordinator: one agent's uploaded part, its chunks in order, concatenated.
pub(crate) async fn download(
    client: &Client,
    agent: u32,
    part: &str,
) -> std::result::Result<Vec<u8>, tokio_postgres::Error> {
    let rows = client.query(DOWNLOAD, &[&(agent as i32), &part]).await?;
    let mut out = Vec::new();
    for r in rows {
        out.extend_from_slice(r.get::<_, &[u8]>(0));
    }
    Ok(out)
}

/// What an agent reads of the run each time it reports.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunState {
    pub state: String,
    /// µs since the epoch, server clock; None until the coordinator starts the run.
    pub start_at_us: Option<i64>,
    pub producers_done: bool,
}

/// Agent: joins the run as agent `index` (None: the lowest free number); Err says why it
/// cannot (the run is full, has started, or that number is taken).
pub(crate) async fn join(
    client: &mut Client,
    name: &str,
    index: Option<u32>,
) -> std::result::Result<std::result::Result<u32, NoJoin>, tokio_postgres::Error> {
    let tx = client.transaction().await?;
    tx.batch_execute("LOCK TABLE qb_agent IN EXCLUSIVE MODE").await?;
    let row = tx.query_one(JOIN_ROOM, &[]).await?;
    let (wanted, state, joined): (i32, String, i64) = (row.get(0), row.get(1), row.get(2));
    if state != "waiting" || joined >= i64::from(wanted) {
        return Ok(Err(NoJoin::Full));
    }
    let taken: Vec<(i32, String)> = tx.query(JOINED, &[]).await?.iter().map(|r| (r.get(0), r.get(1))).collect();
    let k = match index.map(|k| k as i32) {
        Some(k) if k < 1 || k > wanted => return Ok(Err(NoJoin::OutOfRange { k, wanted })),
        Some(k) => match taken.iter().find(|(t, _)| *t == k) {
            Some((_, other)) => return Ok(Err(NoJoin::Taken { k, other: other.clone() })),
            None => k,
        },
        None => (1..=wanted).find(|k| !taken.iter().any(|(t, _)| t == k)).unwrap_or(wanted),
    };
    tx.execute(JOIN, &[&k, &name]).await?;
    tx.commit().await?;
    Ok(Ok(k as u32))
}

/// Agent: the plan it joined.
pub(crate) async fn bundle(client: &Client) -> std::result::Result<serde_json::Value, tokio_postgres::Error> {
    Ok(client.query_one(BUNDLE, &[]).await?.get(0))
}

/// Agent: a sign of life with its state (and, at the end, its report); returns the run's state.
pub(crate) async fn report(
    client: &Client,
    agent: u32,
    state: AgentState,
    report: Option<&serde_json::Value>,
) -> std::result::Result<RunState, tokio_postgres::Error> {
    let row = client.query_one(REPORT, &[&(agent as i32), &state.name(), &report]).await?;
    Ok(RunState { state: row.get(0), start_at_us: row.get(1), producers_done: row.get(2) })
}

/// Agent: why it gave up, for the coordinator's verdict.
pub(crate) async fn fail(client: &Client, agent: u32, error: &str) -> std::result::Result<(), tokio_postgres::Error> {
    client.execute(FAIL, &[&(agent as i32), &error]).await.map(|_| ())
}

/// Agent: one evidence part, in chunks of at most 8 MiB (a bytea value is read whole).
pub(crate) async fn upload(
    client: &Client,
    agent: u32,
    part: &str,
    data: &[u8],
) -> std::result::Result<(), tokio_postgres::Error> {
    const CHUNK: usize = 8 << 20;
    let insert = client.prepare(EVIDENCE_CHUNK).await?;
    client.execute(EVIDENCE_CLEAR, &[&(agent as i32), &part]).await?;
    for (seq, chunk) in data.chunks(CHUNK).enumerate() {
        client.execute(&insert, &[&(agent as i32), &part, &(seq as i32), &chunk]).await?;
    }
    Ok(())
}

/// Agent: the run's schema in this database: the one named (by schema or run id), else the
/// newest one still waiting for agents. Err(reason) when there is none.
pub(crate) async fn find_run(
    client: &Client,
    wanted: Option<&str>,
) -> std::result::Result<std::result::Result<(String, String), NoRun>, tokio_postgres::Error> {
    let schemas: Vec<String> = client.query(RUN_SCHEMAS, &[&MARK]).await?.iter().map(|r| r.get(0)).collect();
    let mut waiting = Vec::new();
    for schema in &schemas {
        // Any role that may create a schema chose this name: it is quoted, read as a name.
        let q = format!("SELECT run_id, state, created_at::text FROM ONLY {}", crate::quote::qualified(schema, MARK));
        let Ok(row) = client.query_one(&q, &[]).await else { continue };
        let (run_id, state, created): (String, String, String) = (row.get(0), row.get(1), row.get(2));
        match wanted {
            Some(w) if w == run_id || w == schema => {
                return Ok(match state.as_str() {
                    "waiting" => Ok((schema.clone(), run_id)),
                    _ => Err(NoRun::NotWaiting { run_id, state }),
                });
            }
            None if state == "waiting" => waiting.push((created, schema.clone(), run_id)),
            _ => {}
        }
    }
    waiting.sort();
    Ok(match (waiting.pop(), wanted) {
        (Some((_, schema, run_id)), None) => Ok((schema, run_id)),
        (_, Some(w)) => Err(NoRun::Unknown(w.to_string())),
        (None, None) => Err(NoRun::NoneWaiting(schemas.len())),
    })
}
