//! A worker's connection and its prepared statements. A crash aborts the
//! connection task, so the socket closes without a Terminate message, as
//! when a process dies; a killed backend is noticed as a closed client.
//!
//! The connection task (`db::connect::open`) forwards every `NOTIFY` to an
//! unbounded channel, so a worker that LISTENs can wait for one while idle.
//!
//! The claim's columns are found by the names the adapter gives (`[result]`), with whatever
//! type the queue keeps them in (`adapter::keys`).

use crate::adapter::keys::Key;
use crate::adapter::{Adapter, Param, Step};
use crate::db::Endpoint;
use crate::db::statements::{ADAPTER_EFFECTS_INSERT, EFFECTS_INSERT};
use crate::db::{connect, sql};
use crate::error::{Invalid, SessionFailure};
use tokio::task::JoinHandle;
use tokio_postgres::types::Type;
use tokio_postgres::{Client, Statement};

/// A step's statements, prepared, with the step itself (parameters, acceptance rule).
pub(crate) struct Prepared {
    pub step: Step,
    pub statements: Vec<Statement>,
    /// Run as unnamed statements (`steps::query`): the connection is a transaction pooler's.
    pub unnamed: bool,
    /// For each statement, where its `:prev.COLUMN`s are in the previous statement's result
    /// (found once, when the step is prepared; empty for a statement that reads none).
    pub carry: Vec<Vec<usize>>,
}

impl Prepared {
    /// The statement whose result a claim reads: the last one of the step.
    pub(crate) fn last(&self) -> &Statement {
        self.statements.last().expect("a step has a statement")
    }
}

/// Where the claim's result keeps each part of a job.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ClaimColumns {
    pub id: usize,
    pub attempt: Option<usize>,
    pub token: Option<usize>,
    /// The job's class, if the claim returns it as text.
    pub class: Option<usize>,
    /// `[result] exclusion_key`: the key jobs exclude each other by (any type).
    pub exclusion_key: Option<usize>,
}

pub(crate) struct Conn {
    pub client: Client,
    task: JoinHandle<()>,
    /// Notifications on the channels this connection LISTENs on; closed when the connection ends.
    pub notifications: crate::run::idle::Wakeups,
    pub pid: i32,
    pub select: Option<Prepared>,
    pub claim: Prepared,
    pub complete: Prepared,
    pub fail: Option<Prepared>,
    pub heartbeat: Option<Prepared>,
    pub effects: Statement,
    pub effects_sql: &'static str,
    pub remaining: Statement,
    pub columns: ClaimColumns,
    /// Statements run unnamed: the connection is a transaction or statement pooler's.
    pub unnamed: bool,
    /// The heartbeat's first statement returns a new token in this column (`[result] token`).
    pub heartbeat_token: Option<Returned>,
    /// A statement of the fail step returns the job's new id here (`[result] successor`).
    pub fail_successor: Option<Returned>,
}

/// Where a write step hands a value back: the statement (its index in the step) and the column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Returned {
    pub statement: usize,
    pub column: usize,
}

/// The most short direct connections open at once to describe statements behind a
/// transaction or statement pooler (the connection budget counts them).
pub(crate) const DESCRIBERS: usize = 2;
static DESCRIBING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(DESCRIBERS);

impl Conn {
    /// Connects and prepares every statement; an error names the statement and the SQLSTATE.
    /// With `listen`, the connection LISTENs on that channel (again after every reconnect).
    /// Through a transaction or statement pooler (`config.direct`) the statements are described
    /// on a short direct connection and run unnamed here, and there is no backend pid of its own
    /// (`pid` 0).
    pub(crate) async fn open(
        config: &Endpoint,
        adapter: &Adapter,
        listen: Option<&str>,
    ) -> Result<Conn, SessionFailure> {
        let (forward, notifications) = connect::notifications();
        let (client, task) = connect::open(config, forward).await.map_err(|e| failed("connecting", &e))?;
        if let Some(init) = &adapter.on_connect {
            client.batch_execute(init).await.map_err(|e| failed("the adapter's on_connect", &e))?;
        }
        // `[drive] isolation`: every transaction on this connection runs at the queue's level.
        if let Some(set) = adapter.drive.isolation.session_sql() {
            client.batch_execute(set).await.map_err(|e| failed(set, &e))?;
        }
        if let Some(channel) = listen {
            let listen = format!("LISTEN {}", crate::quote::ident(channel));
            client.batch_execute(&listen).await.map_err(|e| failed(&listen, &e))?;
        }
        let s = match &config.direct {
            None => Statements::prepare(&client, adapter, false).await?,
            Some(direct) => {
                // A few at once, so the workers' describers stay within the connection budget.
                let _slot = DESCRIBING.acquire().await.map_err(|e| SessionFailure::Panicked(e.to_string()))?;
                let (describer, _task) = connect::open(direct, |_| {})
                    .await
                    .map_err(|e| failed("connecting directly to describe the statements", &e))?;
                Statements::prepare(&describer, adapter, true).await?
            }
        };
        let pid = if config.unnamed() { 0 } else { backend_pid(&client).await? };
        tracing::debug!(pid, server = %crate::db::password::display_url(config), "connected; statements prepared");
        Ok(Conn {
            client,
            task,
            notifications: crate::run::idle::Wakeups::new(notifications),
            pid,
            select: s.select,
            claim: s.claim,
            complete: s.complete,
            fail: s.fail,
            heartbeat: s.heartbeat,
            effects: s.effects,
            effects_sql: s.effects_sql,
            remaining: s.remaining,
            columns: s.columns,
            unnamed: config.unnamed(),
            heartbeat_token: s.heartbeat_token,
            fail_successor: s.fail_successor,
        })
    }

    /// Drops the socket without a word (a crashed process).
    pub(crate) fn abort(self) {
        self.task.abort();
    }
}

/// Every statement a worker runs, prepared (on the worker's connection, or on a direct one
/// that only describes them: `unnamed`).
struct Statements {
    select: Option<Prepared>,
    claim: Prepared,
    complete: Prepared,
    fail: Option<Prepared>,
    heartbeat: Option<Prepared>,
    effects: Statement,
    effects_sql: &'static str,
    remaining: Statement,
    columns: ClaimColumns,
    heartbeat_token: Option<Returned>,
    fail_successor: Option<Returned>,
}

impl Statements {
    async fn prepare(client: &Client, adapter: &Adapter, unnamed: bool) -> Result<Statements, SessionFailure> {
        let step = |s| async move {
            let mut p = prepare_step(client, s).await?;
            p.unnamed = unnamed;
            Ok::<_, SessionFailure>(p)
        };
        let select = match &adapter.select {
            Some(s) => Some(step(s).await?),
            None => None,
        };
        let claim = step(&adapter.claim).await?;
        let complete = step(&adapter.complete).await?;
        let fail = match &adapter.fail {
            Some(s) => Some(step(s).await?),
            None => None,
        };
        let heartbeat = match &adapter.heartbeat {
            Some(s) => Some(step(s).await?),
            None => None,
        };
        let effects_sql = if adapter.own_table() { EFFECTS_INSERT } else { ADAPTER_EFFECTS_INSERT };
        let effects = prepare(client, "the effects insert", effects_sql).await?;
        let remaining =
            prepare(client, "the drained check (observe.remaining)", &adapter.observe.remaining.sql).await?;
        let columns = claim_columns(claim.last(), select.as_ref().map(Prepared::last), adapter)
            .map_err(SessionFailure::Statements)?;
        let heartbeat_token = heartbeat.as_ref().and_then(|h| renewed_token(h, adapter));
        let fail_successor = fail.as_ref().map(|f| successor_column(f, adapter)).transpose()?.flatten();
        Ok(Statements {
            select,
            claim,
            complete,
            fail,
            heartbeat,
            effects,
            effects_sql,
            remaining,
            columns,
            heartbeat_token,
            fail_successor,
        })
    }
}

/// Where a write step's first statement hands back a new token: the `[result] token` column
/// among what it returns (a heartbeat that renews the fence), if it returns one.
pub(crate) fn renewed_token(step: &Prepared, adapter: &Adapter) -> Option<Returned> {
    let name = adapter.columns.token.as_ref()?;
    let column = step.statements[0].columns().iter().position(|c| c.name() == name && Key::token_type_ok(c.type_()))?;
    Some(Returned { statement: 0, column })
}

/// Where the fail step returns the job's new id (`[result] successor`): the first of its
/// statements that returns that column (in a list, often the INSERT after a DELETE); an error
/// when none does, or in a type that is no id.
pub(crate) fn successor_column(fail: &Prepared, adapter: &Adapter) -> Result<Option<Returned>, SessionFailure> {
    let Some(name) = &adapter.columns.successor else { return Ok(None) };
    let found = fail.statements.iter().enumerate().find_map(|(statement, st)| {
        st.columns().iter().position(|c| c.name() == name).map(|column| (statement, column, st.columns()))
    });
    match found {
        Some((statement, column, cols)) if Key::column_type_ok(cols[column].type_()) => {
            Ok(Some(Returned { statement, column }))
        }
        found => Err(SessionFailure::Statements(Invalid::new(format!(
            "result.successor = \"{name}\": a statement of the fail step must return the job's new id as a column \
             `{name}` (smallint, integer, bigint, uuid or text; e.g. INSERT … RETURNING id AS {name}){}",
            found.map_or(String::new(), |(_, c, cols)| format!(", not as {}", cols[c].type_()))
        )))),
    }
}

fn failed(step: &str, e: &impl crate::db::Failed) -> SessionFailure {
    SessionFailure::Sql { step: step.to_string(), sql: sql(e), statement: None }
}

/// The connection's server process, by the simple protocol (no statement is left behind).
async fn backend_pid(client: &Client) -> Result<i32, SessionFailure> {
    let messages =
        client.simple_query("SELECT pg_backend_pid()").await.map_err(|e| failed("reading the backend pid", &e))?;
    let pid = messages.iter().find_map(|m| match m {
        tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).and_then(|t| t.parse().ok()),
        _ => None,
    });
    Ok(pid.unwrap_or(0))
}

async fn prepare(client: &Client, what: &str, text: &str) -> Result<Statement, SessionFailure> {
    client.prepare(text).await.map_err(|e| SessionFailure::Sql {
        step: format!("preparing {what}"),
        sql: sql(&e),
        statement: Some(text.to_string()),
    })
}

/// Prepares every statement of a step; an error names the step (`the adapter's claim statement`).
pub(crate) async fn prepare_step(client: &Client, step: &Step) -> Result<Prepared, SessionFailure> {
    let mut statements: Vec<Statement> = Vec::with_capacity(step.statements.len());
    let mut carry = Vec::with_capacity(step.statements.len());
    for (i, s) in step.statements.iter().enumerate() {
        let which = if step.is_single() { String::new() } else { format!(" #{}", i + 1) };
        let what = format!("the {} statement{which}", step.role.name());
        let prepared = prepare(client, &what, &s.sql).await?;
        let mut at = Vec::with_capacity(s.carried.len());
        for column in &s.carried {
            let before = statements.last().map(Statement::columns).unwrap_or_default();
            match before.iter().position(|c| c.name() == column) {
                Some(k) if Key::token_type_ok(before[k].type_()) => at.push(k),
                Some(k) => {
                    return Err(SessionFailure::Statements(Invalid::new(format!(
                        "{what} reads :prev.{column}, which the statement before returns as {}: a scalar column, please",
                        before[k].type_()
                    ))));
                }
                None => {
                    let names: Vec<&str> = before.iter().map(|c| c.name()).collect();
                    return Err(SessionFailure::Statements(Invalid::new(format!(
                        "{what} reads :prev.{column}, but the statement before returns no column `{column}` \
                         (it returns: {})",
                        if names.is_empty() { "no columns".to_string() } else { names.join(", ") }
                    ))));
                }
            }
        }
        carry.push(at);
        statements.push(prepared);
    }
    Ok(Prepared { step: step.clone(), statements, unnamed: false, carry })
}

/// Finds the claim's columns by the adapter's names: the id (any integer, uuid or text), and
/// the attempt and token when the other statements bind them.
pub(crate) fn claim_columns(
    claim: &Statement,
    select: Option<&Statement>,
    adapter: &Adapter,
) -> Result<ClaimColumns, Invalid> {
    let cols = claim.columns();
    let find = |name: &Option<String>, what: &str, ok: fn(&Type) -> bool| -> Result<Option<usize>, Invalid> {
        let Some(name) = name else { return Ok(None) };
        let accepted = if what == "the token" { "any scalar type" } else { "smallint, integer, bigint, uuid or text" };
        match cols.iter().position(|c| c.name() == name) {
            Some(i) if ok(cols[i].type_()) => Ok(Some(i)),
            Some(i) => Err(Invalid::new(format!(
                "the claim returns {what} `{name}` as {}; accepted: {accepted}",
                cols[i].type_()
            ))),
            None => Ok(None),
        }
    };
    let id_name = Some(adapter.columns.id.clone());
    let Some(id) = find(&id_name, "the id", Key::column_type_ok)? else {
        return Err(Invalid::new(format!(
            "the claim statement must return the job's id as a column `{}` (e.g. RETURNING {0}, …)",
            adapter.columns.id
        )));
    };
    if adapter.own_table() && *cols[id].type_() != Type::INT8 {
        return Err(Invalid::new(
            "the claim statement must return a bigint column `id` (e.g. RETURNING id, attempts, claim_token)",
        ));
    }
    if let Some(s) = select
        && !s.columns().first().is_some_and(|c| *c.type_() == Type::INT8)
    {
        return Err(Invalid::new("the select statement must return a bigint `id` first"));
    }
    let integer = |t: &Type| matches!(*t, Type::INT2 | Type::INT4 | Type::INT8);
    let attempt = find(&adapter.columns.attempt, "the attempt", integer)?;
    let token = find(&adapter.columns.token, "the token", Key::token_type_ok)?;
    let class = adapter
        .columns
        .class
        .as_ref()
        .and_then(|n| cols.iter().position(|c| c.name() == n && *c.type_() == Type::TEXT));
    for step in adapter.worker_steps().filter(|s| s.role != crate::adapter::Role::Claim) {
        for (param, have, column) in
            [(Param::Attempt, attempt, &adapter.columns.attempt), (Param::Token, token, &adapter.columns.token)]
        {
            if step.statements.iter().any(|st| st.params.contains(&param)) && have.is_none() {
                return Err(Invalid::new(format!(
                    "the {} statement uses {param}, so the claim must return `{}`",
                    step.role.name(),
                    column.as_deref().unwrap_or(param.name())
                )));
            }
        }
    }
    let exclusion_key = match &adapter.columns.exclusion_key {
        None => None,
        Some(name) => Some(cols.iter().position(|c| c.name() == name).ok_or_else(|| {
            Invalid::new(format!(
                "[result] exclusion_key = \"{name}\", but the claim returns no column `{name}` (it returns: {})",
                cols.iter().map(|c| c.name()).collect::<Vec<_>>().join(", ")
            ))
        })?),
    };
    Ok(ClaimColumns { id, attempt, token, class, exclusion_key })
}
