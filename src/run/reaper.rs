//! The reaper (`lease.reclaim = "reaper"`): runs the strategy's reclaim
//! statement every `reaper_interval` from its own connection, sending
//! expired leases back to the queue (or to `dead` past max_attempts).
//!
//! Each job id the counted statement returned is journaled (`ReapEvent`: when, and whether the
//! reclaim gave the job back or failed it) for the checkers and `explain`: in the reaper's own
//! task, never on a worker's path. The id is the `[result] id` column when the rows have one,
//! else their first column; what happened is the rows' `status` or `state` (`dead`, `failed`,
//! `discarded`, `cancelled`: failed; any other: given back), else the adapter's
//! `[drive] reclaim`. A counted statement without `RETURNING`
//! names no job: its rows are counted in `unjournaled`, and the checkers say they could not
//! judge them.

use super::conn::{Prepared, prepare_step};
use super::steps;
use super::values::Values;
use crate::adapter::keys::{Interner, Key};
use crate::db::Endpoint;
use crate::db::error_text;
use crate::model::reap::{ReapAction, ReapEvent};
use crate::scenario::Plan;
use std::time::Instant;
use tokio_postgres::Row;
use tokio_postgres::types::{FromSql, Kind, Type};
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, Default)]
pub struct ReaperStats {
    pub runs: u64,
    pub reclaimed: u64,
    pub marked_dead: u64,
    /// Every job a reclaim returned, by time.
    pub journal: Vec<ReapEvent>,
    /// Jobs reclaimed by a counted statement that returns no rows (no `RETURNING`): which
    /// jobs they were is not known.
    pub unjournaled: u64,
}

/// The reaper's task. `start`: the run's clock; `ids`: the journal's numbering of job ids.
pub(crate) async fn run(
    plan: &Plan,
    config: &Endpoint,
    start: Instant,
    ids: &Interner,
    stop: &CancellationToken,
) -> ReaperStats {
    let mut stats = ReaperStats::default();
    let Some(mut side) = super::Side::connect(config, "the reaper").await else { return stats };
    let step = plan.adapter.reclaim.as_ref().expect("validated: reclaim = \"reaper\" needs the adapter's reclaim");
    // (connection generation, statement): prepared again after a reconnect.
    let mut prepared: Option<(u64, Prepared)> = None;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(plan.lease.reaper_interval) => {}
            _ = stop.cancelled() => return stats,
        }
        let Some((client, generation)) = side.client().await else { continue };
        if prepared.as_ref().is_none_or(|(g, _)| *g != generation) {
            match prepare_step(client, step).await {
                Ok(s) => prepared = Some((generation, s)),
                Err(e) if client.is_closed() => {
                    tracing::warn!(error = %e, "reaper: connection lost while preparing");
                    eprintln!("warning: reaper: {e}");
                    continue;
                }
                Err(e) => {
                    eprintln!("warning: the reclaim statement failed to prepare: {e}");
                    return stats;
                }
            }
        }
        let stmt = &prepared.as_ref().expect("prepared above").1;
        stats.runs += 1;
        let (before, began) = ((stats.reclaimed, stats.marked_dead), Instant::now());
        let sent_us = start.elapsed().as_micros() as u64;
        let v = Values::new(plan);
        // The statement that changes state counts: the rows it returned (a `status` of `dead`
        // counts as marked dead), or, when it returns nothing, the rows it changed.
        match steps::counted(client, stmt, &v, false).await {
            Ok(counted) => {
                let t_us = start.elapsed().as_micros() as u64;
                let dur_us = t_us.saturating_sub(sent_us).min(u64::from(u32::MAX)) as u32;
                tally(&mut stats, counted, Returned { t_us, dur_us }, plan, ids);
            }
            Err(e) => eprintln!("warning: reaper: {}", error_text(&e)),
        }
        pass_done(before, &stats, began);
    }
}

/// When a reclaim returned (µs after the run's start) and how long it took (µs).
struct Returned {
    t_us: u64,
    dur_us: u32,
}

/// Counts what one reclaim took back and journals each job it named, at `t_us` (its return),
/// `dur_us` after it was sent.
fn tally(stats: &mut ReaperStats, counted: steps::Counted, returned: Returned, plan: &Plan, ids: &Interner) {
    let Returned { t_us, dur_us } = returned;
    let rows = match counted {
        steps::Counted::Changed(n) => {
            stats.reclaimed += n;
            stats.unjournaled += n;
            return;
        }
        steps::Counted::Returned(rows) => rows,
    };
    for r in &rows {
        let action = action(r, plan.adapter.drive.reclaim);
        match action {
            ReapAction::Failed => stats.marked_dead += 1,
            _ => stats.reclaimed += 1,
        }
        if let Some(job) = job_of(r, &plan.adapter.columns.id, ids) {
            stats.journal.push(ReapEvent { t_us, job, action, dur_us });
        }
    }
}

/// What a reclaim did with the job of this row: its `status` (or `state`) says (`dead`,
/// `failed`, `discarded`, `cancelled`: failed; anything else: given back), else the adapter's
/// `[drive] reclaim`, else nobody.
fn action(row: &Row, declared: Option<ReapAction>) -> ReapAction {
    let status = ["status", "state"].into_iter().find_map(|c| row.try_get::<_, Label>(c).ok());
    match (status, declared) {
        (Some(Label(s)), _) if matches!(s.as_str(), "dead" | "failed" | "discarded" | "cancelled") => {
            ReapAction::Failed
        }
        (Some(_), _) => ReapAction::Requeued,
        (None, Some(a)) => a,
        (None, None) => ReapAction::Reclaimed,
    }
}

/// A status as text, from a text column or an enum (River's `river_job_state`): both come as
/// their label's bytes.
struct Label(String);

impl<'a> FromSql<'a> for Label {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Label(std::str::from_utf8(raw)?.to_string()))
    }

    fn accepts(ty: &Type) -> bool {
        matches!(ty.kind(), Kind::Enum(_)) || matches!(*ty, Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME)
    }
}

/// The journal's number for the job of this row: its `[result] id` column, else its first;
/// None for a value no claim ever returned as an id (a queue whose ids are not integers).
fn job_of(row: &Row, id: &str, ids: &Interner) -> Option<i64> {
    ids.find(&reclaimed_key(row, id)?)
}

/// The queue's id of the job a reclaim's row names: its `id` column (`[result] id`), else its
/// first column (`validate` checks that it names the job it took back).
pub(crate) fn reclaimed_key(row: &Row, id: &str) -> Option<Key> {
    match row.try_get(id) {
        Ok(k) => Some(k),
        Err(_) => row.try_get(0).ok(),
    }
}

/// At `debug`: one reaper pass, what it sent back and how long it took.
fn pass_done((reclaimed, marked_dead): (u64, u64), after: &ReaperStats, began: Instant) {
    tracing::debug!(
        pass = after.runs,
        reclaimed = after.reclaimed - reclaimed,
        marked_dead = after.marked_dead - marked_dead,
        took_ms = began.elapsed().as_secs_f64() * 1000.0,
        "reaper pass"
    );
}
