//! The reaper (`lease.reclaim = "reaper"`): runs the strategy's reclaim
//! statement every `reaper_interval` from its own connection, sending
//! expired leases back to the queue (or to `dead` past max_attempts).

use crate::db::error_text;
use crate::scenario::Plan;
use crate::strategy::Param;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Config, Statement};
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, Copy, Default)]
pub struct ReaperStats {
    pub runs: u64,
    pub reclaimed: u64,
    pub marked_dead: u64,
}

pub async fn run(plan: &Plan, config: &Config, stop: &CancellationToken) -> ReaperStats {
    let mut stats = ReaperStats::default();
    let Some(mut side) = super::Side::connect(config, "the reaper").await else { return stats };
    let (base, cap) = (plan.retry.base.as_secs_f64(), plan.retry.cap.as_secs_f64());
    let params: Vec<&(dyn ToSql + Sync)> = plan
        .strategy
        .reclaim
        .params
        .iter()
        .map(|p| -> &(dyn ToSql + Sync) {
            if *p == Param::RetryBaseSecs { &base } else { &cap }
        })
        .collect();
    // (connection generation, statement): prepared again after a reconnect.
    let mut prepared: Option<(u64, Statement)> = None;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(plan.lease.reaper_interval) => {}
            _ = stop.cancelled() => return stats,
        }
        let Some((client, generation)) = side.client().await else { continue };
        if prepared.as_ref().is_none_or(|(g, _)| *g != generation) {
            match client.prepare(&plan.strategy.reclaim.sql).await {
                Ok(s) => prepared = Some((generation, s)),
                Err(e) if client.is_closed() => {
                    eprintln!("warning: reaper: {}", error_text(&e));
                    continue;
                }
                Err(e) => {
                    eprintln!("warning: the reclaim statement failed to prepare: {}", error_text(&e));
                    return stats;
                }
            }
        }
        let stmt = &prepared.as_ref().expect("prepared above").1;
        stats.runs += 1;
        match client.query(stmt, &params).await {
            Ok(rows) => {
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
    }
}
