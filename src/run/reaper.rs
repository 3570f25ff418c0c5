//! The reaper (`lease.reclaim = "reaper"`): runs the strategy's reclaim
//! statement every `reaper_interval` from its own connection, sending
//! expired leases back to the queue (or to `dead` past max_attempts).

use super::conn::{Prepared, prepare_step};
use super::steps;
use super::values::Values;
use crate::db::Endpoint;
use crate::db::error_text;
use crate::scenario::Plan;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, Copy, Default)]
pub struct ReaperStats {
    pub runs: u64,
    pub reclaimed: u64,
    pub marked_dead: u64,
}

pub(crate) async fn run(plan: &Plan, config: &Endpoint, stop: &CancellationToken) -> ReaperStats {
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
        let (before, began) = (stats, std::time::Instant::now());
        let v = Values::new(plan);
        // The statement that changes state counts: the rows it returned (a `status` of `dead`
        // counts as marked dead), or, when it returns nothing, the rows it changed.
        match steps::counted(client, stmt, &v, false).await {
            Ok(steps::Counted::Changed(n)) => stats.reclaimed += n,
            Ok(steps::Counted::Returned(rows)) => {
                for r in rows {
                    let status: Option<String> = r.try_get("status").ok();
                    match status.as_deref() {
                        Some("dead") => stats.marked_dead += 1,
                        _ => stats.reclaimed += 1,
                    }
                }
            }
            Err(e) => eprintln!("warning: reaper: {}", error_text(&e)),
        }
        pass_done(&before, &stats, began);
    }
}

/// At `debug`: one reaper pass, what it sent back and how long it took.
fn pass_done(before: &ReaperStats, after: &ReaperStats, began: std::time::Instant) {
    tracing::debug!(
        pass = after.runs,
        reclaimed = after.reclaimed - before.reclaimed,
        marked_dead = after.marked_dead - before.marked_dead,
        took_ms = began.elapsed().as_secs_f64() * 1000.0,
        "reaper pass"
    );
}
