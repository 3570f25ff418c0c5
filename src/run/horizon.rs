//! Actors that pin the xmin horizon (an idle transaction holding an xid,
//! REPEATABLE READ readers, a long query), named `VACUUM (VERBOSE)` steps
//! whose "removed / remain / dead but not yet removable" counts are read from
//! the server's INFO message, `pgstattuple` beside the `n_dead_tup` estimate,
//! and the claim-plan probe: the strategy's claim under
//! `EXPLAIN (ANALYZE, BUFFERS)` in a rolled-back transaction.

use super::values::Values;
use crate::db::Endpoint;
use crate::db::error_text;
use crate::model::records::{BlockerSpan, ProbeSample, VacuumResult};
use crate::scenario::Plan;
use crate::scenario::horizon::{Blocker, BlockerKind, VacuumStep};
use futures_util::future::join_all;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_postgres::types::ToSql;
use tokio_postgres::{AsyncMessage, Client};
use tokio_util::sync::CancellationToken;

#[derive(Debug, Default)]
pub struct HorizonOutput {
    pub blockers: Vec<BlockerSpan>,
    pub vacuum: Vec<VacuumResult>,
    pub probes: Vec<ProbeSample>,
}

async fn connect(config: &Endpoint) -> Option<(Client, mpsc::UnboundedReceiver<String>)> {
    let (tx, rx) = mpsc::unbounded_channel();
    let on_message = move |m| {
        if let AsyncMessage::Notice(n) = m {
            let _ = tx.send(n.message().to_string());
        }
    };
    let (client, _task) = match crate::db::connect::open(config, on_message).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("warning: horizon actor could not connect: {}", error_text(&e));
            return None;
        }
    };
    Some((client, rx))
}

async fn sleep_until(start: Instant, at: Duration, stop: &CancellationToken) -> bool {
    let now = start.elapsed();
    if at > now {
        tokio::select! {
            _ = tokio::time::sleep(at - now) => {}
            _ = stop.cancelled() => return false,
        }
    }
    !stop.is_cancelled()
}

/// Runs the blockers and the vacuum steps; done when the last one is (or at `stop`).
pub(crate) async fn actors(
    plan: &Plan,
    config: &Endpoint,
    start: Instant,
    extensions: Option<&Endpoint>,
    stop: &CancellationToken,
) -> HorizonOutput {
    // `extensions`: the superuser's endpoint in a server of queuebench's own (pgstattuple is no
    // trusted extension); the steps then run as `config`'s role, which may call it (pg_monitor).
    if let Some(admin) = extensions.filter(|_| !plan.vacuum.is_empty()) {
        // Once, before any step: two concurrent CREATE EXTENSIONs would collide.
        if let Some((c, _)) = connect(admin).await {
            let _ = c.batch_execute("CREATE EXTENSION IF NOT EXISTS pgstattuple").await;
        }
    }
    let table = &plan.adapter.table;
    let blockers = join_all(plan.blockers.iter().map(|b| blocker(b, table, config, start, stop)));
    let vacuum = join_all(plan.vacuum.iter().map(|v| vacuum(v, table, config, start, stop)));
    let (b, v) = tokio::join!(blockers, vacuum);
    HorizonOutput {
        blockers: b.into_iter().flatten().collect(),
        vacuum: v.into_iter().flatten().collect(),
        probes: Vec::new(),
    }
}

async fn blocker(
    b: &Blocker,
    table: &str,
    config: &Endpoint,
    start: Instant,
    stop: &CancellationToken,
) -> Option<BlockerSpan> {
    let mut clients = Vec::new();
    for _ in 0..b.sessions {
        clients.push(connect(config).await?.0);
    }
    if !sleep_until(start, b.at, stop).await {
        return None;
    }
    let start_us = start.elapsed().as_micros() as u64;
    let until = b.at + b.duration;
    join_all(clients.iter().map(|c| hold(b, table, c, start, until, stop))).await;
    Some(BlockerSpan { kind: b.kind.name().into(), start_us, end_us: start.elapsed().as_micros() as u64 })
}

/// One blocker session, from its start to `until`; a reader scans the queue's `table`.
async fn hold(b: &Blocker, table: &str, c: &Client, start: Instant, until: Duration, stop: &CancellationToken) {
    let scan = format!("SELECT count(*) FROM {}", crate::quote::ident(table));
    let reader = format!("BEGIN ISOLATION LEVEL REPEATABLE READ; {scan};");
    let begin = match b.kind {
        BlockerKind::IdleInTransaction => "BEGIN; SELECT txid_current();",
        BlockerKind::RepeatableRead => reader.as_str(),
        BlockerKind::LongQuery => {
            let secs = b.duration.as_secs_f64();
            let _ = c.execute("SELECT pg_sleep($1)", &[&secs]).await;
            return;
        }
    };
    if c.batch_execute(begin).await.is_err() {
        return;
    }
    while start.elapsed() < until && !stop.is_cancelled() {
        let left = until.saturating_sub(start.elapsed());
        let nap = if b.kind == BlockerKind::RepeatableRead { b.scan_every.min(left) } else { left };
        tokio::select! {
            _ = tokio::time::sleep(nap) => {}
            _ = stop.cancelled() => {}
        }
        if b.kind == BlockerKind::RepeatableRead && start.elapsed() < until {
            let _ = c.batch_execute(&scan).await;
        }
    }
    let _ = c.batch_execute("COMMIT").await;
}

async fn vacuum(
    step: &VacuumStep,
    table: &str,
    config: &Endpoint,
    start: Instant,
    stop: &CancellationToken,
) -> Option<VacuumResult> {
    let (client, mut notices) = connect(config).await?;
    let has_pgstattuple = step.pgstattuple
        && matches!(
            client
                .query_one("SELECT to_regprocedure('pgstattuple(regclass)') IS NOT NULL", &[])
                .await
                .map(|r| r.get::<_, bool>(0)),
            Ok(true)
        );
    if !sleep_until(start, step.at, stop).await {
        return None;
    }
    let t_us = start.elapsed().as_micros() as u64;
    let _ = client.batch_execute("SELECT pg_stat_force_next_flush()").await;
    let n_dead_tup = client
        .query_one(
            "SELECT coalesce(n_dead_tup, 0) FROM pg_stat_user_tables WHERE relid = to_regclass(quote_ident($1::text))",
            &[&table],
        )
        .await
        .map_or(0, |r| r.get(0));
    let pgstattuple_dead = if has_pgstattuple {
        let sql = "SELECT dead_tuple_count FROM pgstattuple(to_regclass(quote_ident($1::text)))";
        client.query_one(sql, &[&table]).await.ok().map(|r| r.get(0))
    } else {
        None
    };
    let command = step.command.replace("{table}", &crate::quote::ident(table));
    if let Err(e) = client.batch_execute(&command).await {
        eprintln!("warning: vacuum step {}: {}", step.name, error_text(&e));
        return None;
    }
    let mut result = VacuumResult { name: step.name.clone(), t_us, pgstattuple_dead, n_dead_tup, ..Default::default() };
    while let Ok(msg) = notices.try_recv() {
        if let Some((removed, remain, not_removable)) = parse_vacuum_tuples(&msg) {
            result.removed = removed;
            result.remain = remain;
            result.not_removable = not_removable;
            break;
        }
    }
    Some(result)
}

/// "tuples: 2001 removed, 8542 remain, 0 are dead but not yet removable" from VACUUM VERBOSE's INFO.
pub(crate) fn parse_vacuum_tuples(msg: &str) -> Option<(i64, i64, i64)> {
    let line = msg.lines().find_map(|l| l.trim().strip_prefix("tuples: "))?;
    let nums: Vec<i64> =
        line.split(|c: char| !c.is_ascii_digit()).filter(|s| !s.is_empty()).filter_map(|s| s.parse().ok()).collect();
    match nums.as_slice() {
        [removed, remain, dead, ..] => Some((*removed, *remain, *dead)),
        _ => None,
    }
}

pub(crate) async fn probe(
    plan: &Plan,
    config: &Endpoint,
    start: Instant,
    stop: &CancellationToken,
) -> Vec<ProbeSample> {
    let mut out = Vec::new();
    let Some(every) = plan.run.plan_probe else { return out };
    if plan.adapter.select.is_some() || !plan.adapter.claim.is_single() {
        eprintln!(
            "warning: the claim-plan probe needs a one-statement claim; `{}` has a select or a list",
            plan.adapter.name
        );
        return out;
    }
    let Some((client, _)) = connect(config).await else { return out };
    let claim = plan.adapter.claim.first();
    let sql = format!("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {}", claim.sql);
    let explain = match client.prepare(&sql).await {
        Ok(st) => st,
        Err(e) => {
            eprintln!("warning: the claim-plan probe cannot prepare its statement: {}", error_text(&e));
            return out;
        }
    };
    let mut values = Values::new(plan);
    values.worker = "probe";
    let params: Vec<&(dyn ToSql + Sync)> = values.bind(&claim.params).collect();
    let mut next = tokio::time::Instant::now();
    let mut last = false;
    while !last {
        tokio::select! {
            _ = tokio::time::sleep_until(next) => {}
            // One last probe at the end, so a final VACUUM step's effect is seen.
            _ = stop.cancelled() => last = true,
        }
        let t_ms = start.elapsed().as_millis() as u64;
        let (sent, started) = (Instant::now(), tokio::time::Instant::now());
        next = started + every;
        // BEGIN, the claim under EXPLAIN ANALYZE, ROLLBACK: sent together (pipelined), one round trip.
        let (begun, row, _) = tokio::join!(
            client.batch_execute("BEGIN"),
            client.query_one(&explain, &params),
            client.batch_execute("ROLLBACK")
        );
        if begun.is_err() {
            continue;
        }
        // At most budget::SHARE of the run, however slow the claim has become.
        next = super::budget::next(started, every, sent.elapsed().as_secs_f64());
        if let Ok(row) = row {
            let v: serde_json::Value = row.get(0);
            let top = &v[0];
            let plan_node = &top["Plan"];
            let n = |k: &str| plan_node[k].as_i64().unwrap_or(0);
            out.push(ProbeSample {
                t_ms,
                buffers: n("Shared Hit Blocks") + n("Shared Read Blocks"),
                buffers_read: n("Shared Read Blocks"),
                exec_ms: top["Execution Time"].as_f64().unwrap_or(0.0),
                took_ms: sent.elapsed().as_secs_f64() * 1000.0,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_seed_s_vacuum_lines() {
        let during = "finished vacuuming \"postgres.q.jobs\": index scans: 0\npages: 0 removed, 80 remain\n\
                      tuples: 0 removed, 11992 remain, 2000 are dead but not yet removable\nremovable cutoff: 750";
        assert_eq!(parse_vacuum_tuples(during), Some((0, 11992, 2000)));
        assert_eq!(
            parse_vacuum_tuples("tuples: 2001 removed, 8542 remain, 0 are dead but not yet removable"),
            Some((2001, 8542, 0))
        );
        assert_eq!(parse_vacuum_tuples("vacuuming \"postgres.q.jobs\""), None);
    }
}
