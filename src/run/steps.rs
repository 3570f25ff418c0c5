//! Running an adapter step on a worker's connection: a claim's rows, a write's verdict.
//!
//! A step of one statement is one round trip, as before adapters (a write judged by its row
//! count is a plain `execute`: the hot path of the built-in table). A list runs in one
//! transaction — the round's own in hold-transaction mode — and a failure rolls it back.
//! A write is accepted by the step's rule on its first statement (`docs/adapters.md`).
//!
//! Every statement is announced at `trace` with its parameters (`RUST_LOG=queuebench=trace`,
//! docs/diagnostics.md); with tracing off that is one load and a branch per statement.

use super::conn::{Prepared, Returned};
use super::values::Values;
use crate::adapter::Accepted;
use crate::adapter::keys::Key;
use futures_util::TryStreamExt;
use std::error::Error as StdError;
use tokio_postgres::types::{FromSql, ToSql, Type};
use tokio_postgres::{Client, Row, Statement};

/// The rows of the step's last statement (a claim, a select).
pub(crate) async fn rows(
    client: &Client,
    p: &Prepared,
    v: &Values<'_>,
    in_tx: bool,
) -> Result<Vec<Row>, tokio_postgres::Error> {
    if p.statements.len() == 1 {
        traced(&p.step.statements[0], v);
        return step_rows(client, p, 0, v, &[]).await;
    }
    in_transaction(client, in_tx, async {
        let n = p.statements.len();
        let mut carried = Vec::new();
        for (i, s) in p.step.statements[..n - 1].iter().enumerate() {
            traced(s, v);
            carried = carrying(client, p, i, v, &carried).await?.1;
        }
        traced(p.step.last(), v);
        step_rows(client, p, n - 1, v, &carried).await
    })
    .await
}

/// Statement `i` of a list, bound with what the one before handed it: the rows it changed
/// (or returned, when the next statement reads its columns) and those columns.
async fn carrying(
    client: &Client,
    p: &Prepared,
    i: usize,
    v: &Values<'_>,
    carried: &[Vec<Key>],
) -> Result<(u64, Vec<Vec<Key>>), tokio_postgres::Error> {
    let Some(next) = p.carry.get(i + 1).filter(|c| !c.is_empty()) else {
        return Ok((step_execute(client, p, i, v, carried).await?, Vec::new()));
    };
    let rows = step_rows(client, p, i, v, carried).await?;
    Ok((rows.len() as u64, columns(&rows, Some(next))?))
}

/// The columns at `at` of every row, one array each (what `:prev.COLUMN` binds).
fn columns(rows: &[Row], at: Option<&Vec<usize>>) -> Result<Vec<Vec<Key>>, tokio_postgres::Error> {
    let at = at.map_or(&[][..], Vec::as_slice);
    at.iter().map(|&c| rows.iter().map(|r| r.try_get::<_, Key>(c)).collect()).collect()
}

/// Runs a write step (complete, fail, heartbeat) and says whether it landed.
pub(crate) async fn write(
    client: &Client,
    p: &Prepared,
    v: &Values<'_>,
    in_tx: bool,
) -> Result<bool, tokio_postgres::Error> {
    let first = &p.step.statements[0];
    traced(first, v);
    if p.statements.len() == 1 && p.step.accepted == Accepted::Rows {
        return Ok(step_execute(client, p, 0, v, &[]).await? > 0);
    }
    in_transaction(client, in_tx || p.statements.len() == 1, async {
        let (accepted, mut carried) = match p.step.accepted {
            Accepted::Rows => {
                let (n, carried) = carrying(client, p, 0, v, &[]).await?;
                (n > 0, carried)
            }
            rule => {
                let rows = step_rows(client, p, 0, v, &[]).await?;
                let carried = columns(&rows, p.carry.get(1))?;
                (judge(rows.first(), rule), carried)
            }
        };
        for (i, s) in p.step.statements.iter().enumerate().skip(1) {
            traced(s, v);
            carried = carrying(client, p, i, v, &carried).await?.1;
        }
        Ok(accepted)
    })
    .await
}

/// A write one of whose statements hands a value back at `at` (a heartbeat that renews its
/// fence: the first statement's new token; a failure that re-inserts the job: its new id):
/// whether it landed, by the step's rule on its first statement, and the value when it did.
pub(crate) async fn write_renewing(
    client: &Client,
    p: &Prepared,
    v: &Values<'_>,
    in_tx: bool,
    at: Returned,
) -> Result<(bool, Option<Key>), tokio_postgres::Error> {
    traced(&p.step.statements[0], v);
    let value = |rows: &[Row], accepted: bool| match rows.first() {
        Some(r) if accepted => r.try_get::<_, Option<Key>>(at.column),
        _ => Ok(None),
    };
    in_transaction(client, in_tx || p.statements.len() == 1, async {
        let (accepted, mut returned, mut carried) = if at.statement == 0 {
            let rows = step_rows(client, p, 0, v, &[]).await?;
            let accepted = match p.step.accepted {
                Accepted::Rows => !rows.is_empty(),
                rule => judge(rows.first(), rule),
            };
            (accepted, value(&rows, accepted)?, columns(&rows, p.carry.get(1))?)
        } else {
            match p.step.accepted {
                Accepted::Rows => {
                    let (n, carried) = carrying(client, p, 0, v, &[]).await?;
                    (n > 0, None, carried)
                }
                rule => {
                    let rows = step_rows(client, p, 0, v, &[]).await?;
                    (judge(rows.first(), rule), None, columns(&rows, p.carry.get(1))?)
                }
            }
        };
        for (i, s) in p.step.statements.iter().enumerate().skip(1) {
            traced(s, v);
            if i == at.statement {
                let rows = step_rows(client, p, i, v, &carried).await?;
                returned = value(&rows, accepted)?;
                carried = columns(&rows, p.carry.get(i + 1))?;
                continue;
            }
            carried = carrying(client, p, i, v, &carried).await?.1;
        }
        Ok((accepted, returned))
    })
    .await
}

/// What a reclaim's counted statement ([`crate::adapter::Step::counted`]) gave: the rows it
/// returned, when it returns columns (the built-in reclaim: id and new status), else the number
/// of rows it changed.
pub(crate) enum Counted {
    Returned(Vec<Row>),
    Changed(u64),
}

/// Runs every statement of a step (one transaction when several, unless `in_tx`) and returns
/// what its counted statement gave: the one that changes state, not a SELECT that picks the
/// rows before it, nor a later write (`docs/adapters.md`, "Steps").
pub(crate) async fn counted(
    client: &Client,
    p: &Prepared,
    v: &Values<'_>,
    in_tx: bool,
) -> Result<Counted, tokio_postgres::Error> {
    let at = p.step.counted();
    in_transaction(client, in_tx || p.statements.len() == 1, async {
        let mut out = Counted::Changed(0);
        let mut carried = Vec::new();
        for (i, s) in p.step.statements.iter().enumerate() {
            traced(s, v);
            if i == at && !p.statements[i].columns().is_empty() {
                let rows = step_rows(client, p, i, v, &carried).await?;
                carried = columns(&rows, p.carry.get(i + 1))?;
                out = Counted::Returned(rows);
                continue;
            }
            let (n, next) = carrying(client, p, i, v, &carried).await?;
            carried = next;
            if i == at {
                out = Counted::Changed(n);
            }
        }
        Ok(out)
    })
    .await
}

/// The first row of a statement (an observer query), if any; `unnamed`: see [`query`].
pub(crate) async fn first_row<'a>(
    client: &Client,
    (st, sql, unnamed): (&Statement, &str, bool),
    params: impl ExactSizeIterator<Item = &'a (dyn ToSql + Sync)>,
) -> Result<Option<Row>, tokio_postgres::Error> {
    Ok(query(client, (st, sql, unnamed), params).await?.into_iter().next())
}

/// Statement `i` of a prepared step: its rows (`carried`: the previous statement's columns).
async fn step_rows(
    client: &Client,
    p: &Prepared,
    i: usize,
    v: &Values<'_>,
    carried: &[Vec<Key>],
) -> Result<Vec<Row>, tokio_postgres::Error> {
    let s = &p.step.statements[i];
    query(client, (&p.statements[i], &s.sql, p.unnamed), v.bind_carried(&s.params, carried)).await
}

/// Statement `i` of a prepared step: the rows it changed.
async fn step_execute(
    client: &Client,
    p: &Prepared,
    i: usize,
    v: &Values<'_>,
    carried: &[Vec<Key>],
) -> Result<u64, tokio_postgres::Error> {
    let s = &p.step.statements[i];
    execute(client, (&p.statements[i], &s.sql, p.unnamed), v.bind_carried(&s.params, carried)).await
}

/// A statement's rows: the prepared (named) statement, or with `unnamed` (a transaction or
/// statement pooler, `Endpoint::direct`) its text as the unnamed statement, bound with the
/// parameter types learned when it was prepared: Parse, Bind, Execute and Sync in one round
/// trip, so nothing is left on the server connection for the next transaction to miss.
pub(crate) async fn query<'a>(
    client: &Client,
    (st, sql, unnamed): (&Statement, &str, bool),
    params: impl ExactSizeIterator<Item = &'a (dyn ToSql + Sync)>,
) -> Result<Vec<Row>, tokio_postgres::Error> {
    if unnamed {
        return client.query_typed_raw(sql, params.zip(st.params().iter().cloned())).await?.try_collect().await;
    }
    client.query_raw(st, params).await?.try_collect().await
}

/// The rows a statement changed (as [`query`], for a write).
pub(crate) async fn execute<'a>(
    client: &Client,
    (st, sql, unnamed): (&Statement, &str, bool),
    params: impl ExactSizeIterator<Item = &'a (dyn ToSql + Sync)>,
) -> Result<u64, tokio_postgres::Error> {
    if !unnamed {
        return client.execute_raw(st, params).await;
    }
    let stream = client.query_typed_raw(sql, params.zip(st.params().iter().cloned())).await?;
    let mut stream = std::pin::pin!(stream);
    while stream.try_next().await?.is_some() {}
    Ok(stream.rows_affected().unwrap_or(0))
}

/// `BEGIN` … `COMMIT` around `body` unless already inside a transaction; `ROLLBACK` on an error.
async fn in_transaction<T>(
    client: &Client,
    already: bool,
    body: impl Future<Output = Result<T, tokio_postgres::Error>>,
) -> Result<T, tokio_postgres::Error> {
    if already {
        return body.await;
    }
    batch(client, "BEGIN").await?;
    match body.await {
        Ok(t) => {
            batch(client, "COMMIT").await?;
            Ok(t)
        }
        Err(e) => {
            let _ = batch(client, "ROLLBACK").await;
            Err(e)
        }
    }
}

/// A statement without parameters (`BEGIN`, `COMMIT`, `ROLLBACK`), announced at `trace`.
pub(crate) async fn batch(client: &Client, sql: &str) -> Result<(), tokio_postgres::Error> {
    tracing::trace!(sql, "statement");
    client.batch_execute(sql).await
}

/// At `trace`: the statement about to run, its role and its parameters. The parameters are
/// formatted only when an event is written.
pub(crate) fn traced(s: &crate::adapter::Statement, v: &Values<'_>) {
    if tracing::enabled!(tracing::Level::TRACE) {
        tracing::trace!(worker = v.worker, step = s.role.name(), sql = %OneLine(&s.sql), params = ?Shown(s, v), "statement");
    }
}

/// A statement's parameters as `[name = value, …]`.
struct Shown<'a>(&'a crate::adapter::Statement, &'a Values<'a>);

impl std::fmt::Debug for Shown<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let values = self.1.bind(&self.0.params);
        f.debug_map().entries(self.0.params.iter().map(|p| Colon(p.name())).zip(values)).finish()
    }
}

/// SQL on one line, for a log: comment lines left out, lines joined by a space.
struct OneLine<'a>(&'a str);

impl std::fmt::Display for OneLine<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let lines = self.0.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with("--"));
        for (i, line) in lines.enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            f.write_str(line)?;
        }
        Ok(())
    }
}

/// `:name`, unquoted.
struct Colon(&'static str);

impl std::fmt::Debug for Colon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, ":{}", self.0)
    }
}

/// Did the write land, by a rule that reads the first column of the first row?
pub(crate) fn judge(row: Option<&Row>, rule: Accepted) -> bool {
    let value = row.and_then(|r| r.try_get::<_, Option<Number>>(0).ok().flatten());
    match (rule, value) {
        (Accepted::True, Some(Number::Bool(b))) => b,
        (Accepted::Positive, Some(n)) => n.value() > 0.0,
        (Accepted::Rows, _) | (_, None) | (Accepted::True, Some(_)) => false,
    }
}

/// An observer's "anything left?": true, or a count above 0.
pub(crate) fn truthy(row: Option<&Row>) -> bool {
    row.and_then(|r| r.try_get::<_, Option<Number>>(0).ok().flatten()).is_some_and(|n| n.value() > 0.0)
}

/// A first column read as a verdict: a boolean or any number.
#[derive(Debug, Clone, Copy)]
enum Number {
    Bool(bool),
    Value(f64),
}

impl Number {
    fn value(self) -> f64 {
        match self {
            Number::Bool(b) => f64::from(u8::from(b)),
            Number::Value(v) => v,
        }
    }
}

impl<'a> FromSql<'a> for Number {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn StdError + Sync + Send>> {
        Ok(match *ty {
            Type::BOOL => Number::Bool(bool::from_sql(ty, raw)?),
            Type::INT2 => Number::Value(f64::from(i16::from_sql(ty, raw)?)),
            Type::INT4 => Number::Value(f64::from(i32::from_sql(ty, raw)?)),
            Type::INT8 => Number::Value(i64::from_sql(ty, raw)? as f64),
            Type::FLOAT4 => Number::Value(f64::from(f32::from_sql(ty, raw)?)),
            _ => Number::Value(f64::from_sql(ty, raw)?),
        })
    }

    fn accepts(ty: &Type) -> bool {
        matches!(*ty, Type::BOOL | Type::INT2 | Type::INT4 | Type::INT8 | Type::FLOAT4 | Type::FLOAT8)
    }
}
