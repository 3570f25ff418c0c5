//! A worker's connection and its prepared statements. A crash aborts the
//! connection task, so the socket closes without a Terminate message, as
//! when a process dies; a killed backend is noticed as a closed client.
//!
//! The connection task (`db::connect::open`) forwards every `NOTIFY` to an
//! unbounded channel, so a worker that LISTENs can wait for one while idle.

use crate::db::statements::{EFFECTS_INSERT, REMAINING};
use crate::db::{connect, sql};
use crate::error::{Invalid, SessionFailure};
use crate::strategy::{Param, Strategy};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::JoinHandle;
use tokio_postgres::types::Type;
use tokio_postgres::{Client, Config, Notification, Statement};

pub struct Conn {
    pub client: Client,
    task: JoinHandle<()>,
    /// Notifications on the channels this connection LISTENs on; closed when the connection ends.
    pub notifications: UnboundedReceiver<Notification>,
    pub pid: i32,
    pub select: Option<Statement>,
    pub claim: Statement,
    pub complete: Statement,
    pub fail: Statement,
    pub heartbeat: Statement,
    pub effects: Statement,
    pub remaining: Statement,
    pub col_attempt: Option<usize>,
    pub col_token: Option<usize>,
    /// The `class` column (the job's class), if the claim returns it.
    pub col_queue: Option<usize>,
}

impl Conn {
    /// Connects and prepares every statement; an error names the statement and the SQLSTATE.
    /// With `listen`, the connection LISTENs on that channel (again after every reconnect).
    pub async fn open(config: &Config, strategy: &Strategy, listen: Option<&str>) -> Result<Conn, SessionFailure> {
        let failed = |step: &str, e: &tokio_postgres::Error| SessionFailure::Sql {
            step: step.to_string(),
            sql: sql(e),
            statement: None,
        };
        let (forward, notifications) = connect::notifications();
        let (client, task) = connect::open(config, forward).await.map_err(|e| failed("connecting", &e))?;
        if let Some(channel) = listen {
            let listen = format!("LISTEN {}", quote_ident(channel));
            client.batch_execute(&listen).await.map_err(|e| failed(&listen, &e))?;
        }
        let prep = |what: &'static str, text: String| {
            let client = &client;
            async move {
                client.prepare(&text).await.map_err(|e| SessionFailure::Sql {
                    step: format!("preparing {what}"),
                    sql: sql(&e),
                    statement: Some(text),
                })
            }
        };
        let select = match &strategy.select {
            Some(s) => Some(prep("the strategy's select statement", s.sql.clone()).await?),
            None => None,
        };
        let claim = prep("the strategy's claim statement", strategy.claim.sql.clone()).await?;
        let complete = prep("the strategy's complete statement", strategy.complete.sql.clone()).await?;
        let fail = prep("the strategy's fail statement", strategy.fail.sql.clone()).await?;
        let heartbeat = prep("the strategy's heartbeat statement", strategy.heartbeat.sql.clone()).await?;
        let effects = prep("the effects insert", EFFECTS_INSERT.into()).await?;
        let remaining = prep("the drained check", REMAINING.into()).await?;
        let (col_attempt, col_token) =
            check_columns(&claim, select.as_ref(), strategy).map_err(SessionFailure::Statements)?;
        let col_queue = claim.columns().iter().position(|c| c.name() == "class" && *c.type_() == Type::TEXT);
        let pid = client
            .query_one("SELECT pg_backend_pid()", &[])
            .await
            .map_err(|e| failed("reading the backend pid", &e))?
            .get(0);
        Ok(Conn {
            client,
            task,
            notifications,
            pid,
            select,
            claim,
            complete,
            fail,
            heartbeat,
            effects,
            remaining,
            col_attempt,
            col_token,
            col_queue,
        })
    }

    /// Drops the socket without a word (a crashed process).
    pub fn abort(self) {
        self.task.abort();
    }
}

/// `"name"`, for LISTEN (channel names are identifiers; the schema name is lower case already).
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The claim must return a bigint `id`, and `attempts`/`claim_token` when
/// the other statements fence on them.
fn check_columns(
    claim: &Statement,
    select: Option<&Statement>,
    strategy: &Strategy,
) -> Result<(Option<usize>, Option<usize>), Invalid> {
    let col = |name: &str, ty: Type| -> Result<Option<usize>, Invalid> {
        match claim.columns().iter().position(|c| c.name() == name) {
            Some(i) if *claim.columns()[i].type_() == ty => Ok(Some(i)),
            Some(i) => Err(Invalid::new(format!(
                "the claim returns `{name}` as {}, expected {ty}",
                claim.columns()[i].type_()
            ))),
            None => Ok(None),
        }
    };
    if col("id", Type::INT8)?.is_none() {
        return Err(Invalid::new(
            "the claim statement must return a bigint column `id` (e.g. RETURNING id, attempts, claim_token)",
        ));
    }
    if let Some(s) = select
        && !s.columns().first().is_some_and(|c| *c.type_() == Type::INT8)
    {
        return Err(Invalid::new("the select statement must return a bigint `id` first"));
    }
    let col_attempt = col("attempts", Type::INT4)?;
    let col_token = col("claim_token", Type::UUID)?;
    for st in [&strategy.complete, &strategy.fail, &strategy.heartbeat] {
        for (param, have, column) in
            [(Param::Attempt, col_attempt, "attempts"), (Param::Token, col_token, "claim_token")]
        {
            if st.params.contains(&param) && have.is_none() {
                return Err(Invalid::new(format!(
                    "the {} statement uses {param}, so the claim must return `{column}`",
                    st.role.name()
                )));
            }
        }
    }
    Ok((col_attempt, col_token))
}
