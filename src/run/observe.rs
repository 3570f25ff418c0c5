//! Reading the queue through its adapter: the final state the checkers read (`observe.state`,
//! mapped onto queued / running / done / failed / dead / cancelled, ids onto the journal's
//! numbers). The preload is `preload.rs`.

use super::values::Values;
use crate::adapter::keys::{Interner, Key};
use crate::db::sql;
use crate::error::{Error, Result};
use crate::model::records::{JobRow, Status};
use crate::scenario::Plan;
use futures_util::TryStreamExt;
use tokio_postgres::{Client, Row};

fn failed(what: &str, e: &tokio_postgres::Error) -> Error {
    Error::Database { action: what.to_string(), target: None, sql: sql(e), hint: None }
}

/// The final table state, by the adapter's `observe.state`.
pub(crate) async fn final_state(client: &Client, plan: &Plan, ids: &Interner) -> Result<Vec<JobRow>> {
    let prepared = prepare_state(client, plan).await?;
    final_state_with(client, &prepared, plan, ids).await
}

const READING_STATE: &str = "reading the final job table (observe.state)";

/// `observe.state` prepared, for a caller that reads the state often (explore, after every schedule).
pub(crate) async fn prepare_state(client: &Client, plan: &Plan) -> Result<tokio_postgres::Statement> {
    client.prepare(&plan.adapter.observe.state.sql).await.map_err(|e| failed(READING_STATE, &e))
}

/// The final table state, by `observe.state` prepared once (`prepare_state`).
pub(crate) async fn final_state_with(
    client: &Client,
    prepared: &tokio_postgres::Statement,
    plan: &Plan,
    ids: &Interner,
) -> Result<Vec<JobRow>> {
    let what = READING_STATE;
    let st = &plan.adapter.observe.state;
    let v = Values::new(plan);
    let rows: Vec<Row> = client
        .query_raw(prepared, v.bind(&st.params))
        .await
        .map_err(|e| failed(what, &e))?
        .try_collect()
        .await
        .map_err(|e| failed(what, &e))?;
    let column = |name: &str| prepared.columns().iter().position(|c| c.name() == name);
    let (Some(id), Some(status)) = (column("id"), column("status")) else {
        return Err(Error::Machine {
            action: what.into(),
            cause: "observe.state must return the columns `id` and `status` (and optionally attempts, max_attempts, \
                    lease_expired)"
                .into(),
        });
    };
    let (attempts, max_attempts, expired) = (column("attempts"), column("max_attempts"), column("lease_expired"));
    let int = |r: &Row, c: Option<usize>| -> Option<i32> {
        c.and_then(|c| r.try_get::<_, Option<Key>>(c).ok().flatten()).and_then(|k| k.as_int()).map(|i| i as i32)
    };
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        let key: Key = r.try_get(id).map_err(|e| failed(what, &e))?;
        let text: String = r.try_get(status).map_err(|e| failed(what, &e))?;
        let status = Status::parse_known(&text).ok_or_else(|| Error::Machine {
            action: what.into(),
            cause: format!(
                "status `{text}` (job {}); accepted: queued, running, done, failed, dead, cancelled",
                key.show()
            ),
        })?;
        out.push(JobRow {
            id: ids.surrogate(&key),
            status,
            attempts: int(r, attempts).unwrap_or(0),
            max_attempts: int(r, max_attempts).unwrap_or(i32::MAX),
            lease_expired: expired.and_then(|c| r.try_get::<_, Option<bool>>(c).ok().flatten()).unwrap_or(false),
        });
    }
    out.sort_unstable_by_key(|j| j.id);
    Ok(out)
}
