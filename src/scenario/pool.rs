//! `workers.pool`: the sqlx client. The workers share one `sqlx::PgPool` of `size`
//! connections, as a Rust service holds its queue's connections, so a step first waits for a
//! connection (at most `acquire_timeout`). What the pooled client runs is what its transport
//! declares (`model::transport::TransportKind::Pool`).

use super::plan::{Plan, PoolSettings};
use super::raw::RawPool;
use super::units::parse_duration;
use crate::error::Invalid;

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

/// What the pooled client does not run: a process client (it opens its own connections, so
/// there is no pool to share), and whatever the plan needs that the pool transport does not
/// declare (`model::transport`, `scenario::needs`). The error names the key that asks.
pub(crate) fn fits(plan: &Plan) -> Result<(), (&'static str, Invalid)> {
    if plan.workers.pool.is_none() {
        return Ok(());
    }
    if plan.client.is_some() {
        return Err((
            "workers.pool",
            Invalid::new(
                "not with a process client (it opens its own connections); leave workers.pool out for a \
                 connection per worker",
            ),
        ));
    }
    match super::needs::refusal(plan, super::needs::transport(plan)) {
        Some(refused) => Err(refused),
        None => Ok(()),
    }
}
