//! The runner: connects and prepares every worker before the clock starts,
//! runs them as tasks, stops them on the scenario's stop condition, the run
//! timeout or Ctrl-C, and merges what they recorded.

pub mod work;
pub mod worker;

use crate::collect::{Event, WorkerStats};
use crate::db::Database;
use crate::error::{Error, Result};
use crate::scenario::{Plan, Stop};
use futures_util::future::join_all;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use worker::Worker;

/// Everything the run produced, merged.
pub struct RunOutput {
    pub stats: WorkerStats,
    pub journal: Vec<Event>,
    pub duration: Duration,
    pub interrupted: bool,
    pub timed_out: bool,
    pub failures: Vec<String>,
}

/// Runs the plan's workers against `db`. `interrupt` is cancelled by Ctrl-C/SIGTERM.
pub async fn run(plan: &Plan, db: &Database, interrupt: &CancellationToken) -> Result<RunOutput> {
    let clients = join_all((0..plan.workers).map(|_| db.connect())).await;
    let mut prepared = Vec::with_capacity(clients.len());
    for client in clients {
        let client = client?;
        let stmts = worker::prepare(&client, &plan.strategy)
            .await
            .map_err(|e| {
                Error::infra(format!("strategy `{}`: preparing {e}", plan.strategy.name))
            })?;
        prepared.push((client, stmts));
    }

    let stop = interrupt.child_token();
    let timed_out = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let limit = match plan.stop {
        Stop::After(d) => Some((d.min(plan.timeout), d > plan.timeout)),
        _ => Some((plan.timeout, true)),
    };
    let timer = limit.map(|(after, is_timeout)| {
        let (stop, flag) = (stop.clone(), timed_out.clone());
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            flag.store(is_timeout, Ordering::Relaxed);
            stop.cancel();
        })
    });

    let tasks: Vec<_> = prepared
        .into_iter()
        .enumerate()
        .map(|(i, (client, stmts))| {
            let w = Worker::new(i as u32 + 1, client, stmts, plan, start, stop.clone());
            tokio::spawn(w.run())
        })
        .collect();
    let mut stats = WorkerStats::default();
    let mut journal = Vec::new();
    let mut failures = Vec::new();
    for task in join_all(tasks).await {
        let (w, failure) =
            task.map_err(|e| Error::infra(format!("a worker task panicked: {e}")))?;
        stats += &w.stats;
        journal.extend_from_slice(&w.journal);
        failures.extend(failure);
    }
    let duration = start.elapsed();
    if let Some(t) = timer {
        t.abort();
    }
    Ok(RunOutput {
        stats,
        journal,
        duration,
        interrupted: interrupt.is_cancelled(),
        timed_out: timed_out.load(Ordering::Relaxed),
        failures,
    })
}
