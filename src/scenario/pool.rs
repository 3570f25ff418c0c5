//! `workers.pool`: the sqlx client. The workers share one `sqlx::PgPool` of `size`
//! connections, as a Rust service holds its queue's connections, so a step first waits for a
//! connection (at most `acquire_timeout`). What the pooled client runs is checked here: the
//! built-in table's strategies in lease mode, one statement a step, judged by its row count.

use super::plan::{Plan, PoolSettings};
use super::raw::RawPool;
use super::units::parse_duration;
use crate::adapter::{Accepted, Param, Role};
use crate::error::Invalid;
use crate::model::fault::FaultKind;
use crate::model::protocol::Mode;
use crate::scenario::plan::Wakeup;

pub(crate) fn settings(raw: &RawPool) -> Result<PoolSettings, Invalid> {
    if !(1..=10_000).contains(&raw.size) {
        return Err(Invalid::new(format!("size must be between 1 and 10000, got {}", raw.size)));
    }
    let acquire_timeout =
        parse_duration(&raw.acquire_timeout).map_err(|e| Invalid::new(format!("acquire_timeout: {e}")))?;
    if acquire_timeout.is_zero() {
        return Err(Invalid::new("acquire_timeout must be above 0 (e.g. \"1ms\", \"2s\")"));
    }
    Ok(PoolSettings { size: raw.size as u32, acquire_timeout })
}

/// What the pooled client does not run (yet); each refusal names the key to change.
pub(crate) fn fits(plan: &Plan) -> Result<(), Invalid> {
    if plan.workers.pool.is_none() {
        return Ok(());
    }
    let refuse = |why: &str| Err(Invalid::new(format!("{why}; leave workers.pool out for a connection per worker")));
    if plan.workers.mode == Mode::HoldTransaction {
        return refuse(
            "not with mode = \"hold-transaction\" (a worker would hold its pooled connection through the work)",
        );
    }
    if plan.client.is_some() {
        return refuse("not with a process client (it opens its own connections)");
    }
    if !plan.adapter.own_table() {
        return refuse("only with the built-in strategies over queuebench's own table, not an adapter");
    }
    // Crash and pause act in the worker's round, lock_hold and cancel on the database: the
    // pool runs them as the direct workers do. A killed backend aims at a worker's own
    // connection, which a pooled worker does not have.
    const WITH_THE_POOL: [FaultKind; 4] = [FaultKind::Crash, FaultKind::Pause, FaultKind::LockHold, FaultKind::Cancel];
    if let Some(f) = plan.faults.iter().find(|f| !WITH_THE_POOL.contains(&f.kind.kind())) {
        return refuse(&format!(
            "not with a {} fault (accepted with the pool: {})",
            f.kind.name(),
            WITH_THE_POOL.map(FaultKind::name).join(", ")
        ));
    }
    if plan.workers.idle.wakeup == Wakeup::Listen {
        return refuse("not with workers.wakeup = \"listen\" (a pooled connection does not stay LISTENing)");
    }
    // sqlx is built here without its time and JSON types; the producer's values are no
    // worker's. Everything else the round's values hold is encoded (`run::pool::steps::encode`).
    let unbound =
        |p: &Param| matches!(p, Param::Now | Param::Payload | Param::N | Param::Count | Param::Class | Param::Priority);
    let statements = plan.adapter.worker_steps().flat_map(|s| &s.statements);
    if let Some(p) = statements.chain([&plan.adapter.observe.remaining]).flat_map(|s| &s.params).find(|p| unbound(p)) {
        return refuse(&format!("the pooled client does not bind :{} (yet)", p.name()));
    }
    for step in plan.adapter.worker_steps() {
        if step.statements.len() != 1
            || (!matches!(step.role, Role::Claim | Role::Select) && step.accepted != Accepted::Rows)
        {
            return refuse(&format!("the {} step must be one statement judged by its row count", step.role.name()));
        }
    }
    Ok(())
}
