//! The sqlx client (`workers.pool`): the workers share one `sqlx::PgPool` of `size`
//! connections, as a Rust service runs its queue. Every step (claim, heartbeat, complete,
//! fail, the effects insert, the drained check) first takes a connection from the pool — the
//! wait is the `acquire` latency, its own histogram — runs the adapter's statement for the
//! step, bound from the same values as the direct worker's, and gives the connection back.
//!
//! The worker's round is the direct worker's (`run::worker`): this is only its transport,
//! [`Pooled`] (in `pool/steps.rs`). An acquire that times out (`acquire_timeout`) is counted
//! as an error `acquire_timeout` and the step is retried: a claim simply claims again; a
//! completion or failure is sent again once a connection comes (the job's lease then decides
//! whether it still lands); a heartbeat counts as a failed one (two in a row and the job is
//! let go, as on the direct path). A crash fault lets the worker's job go and brings the
//! worker back after its pause (the pool's connections are the pool's: none is closed); a
//! pause freezes the worker. The journal gets the same events as the direct worker's, so
//! every checker works.
//!
//! What it runs is checked by `scenario::pool::fits`: the built-in table, lease mode, one
//! statement per step. The values are the round's (`run::values`), encoded for sqlx by one
//! exhaustive match; `:now` and the producer's parameters are refused up front.

use crate::scenario::plan::PoolSettings;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, PgPool};
use std::time::Duration;

/// The error code an acquire timeout is counted under (`errors.acquire_timeout`).
pub(crate) const ACQUIRE_TIMEOUT: &str = "acquire_timeout";

/// A worker's acquire limit when the plan names no pool settings.
const OPEN_TIMEOUT: Duration = Duration::from_secs(30);

/// A connection from the pool within `limit`; past it, `PoolTimedOut` as sqlx says it.
pub(crate) async fn acquire_within(
    pool: &PgPool,
    limit: Duration,
) -> Result<sqlx::pool::PoolConnection<sqlx::Postgres>, sqlx::Error> {
    match tokio::time::timeout(limit, pool.acquire()).await {
        Ok(got) => got,
        Err(_) => Err(sqlx::Error::PoolTimedOut),
    }
}

/// Opens the pool and all its connections before the clock starts. sqlx knows one host: the
/// pool gets the one a direct connection goes to now (the URL's hosts in order, its
/// `target_session_attrs` and `connect_timeout`, as every connection of the run).
pub(crate) async fn open(
    config: &crate::db::Endpoint,
    settings: PoolSettings,
) -> Result<PgPool, Box<dyn std::error::Error + Send + Sync>> {
    let chosen = crate::db::connect::choose(config).await?;
    let pool = PgPoolOptions::new()
        .max_connections(settings.size)
        .min_connections(settings.size)
        // Opening a connection is bounded as a direct one is (connect_timeout, 30 s without
        // it), never by less than the pool's acquire_timeout (a 1 ms acquire_timeout could
        // never open one); a worker's wait is bounded by `acquire_timeout` in `Pooled::acquire`.
        .acquire_timeout(crate::db::hosts::connect_timeout(&chosen).max(settings.acquire_timeout))
        .test_before_acquire(false)
        .connect_with(connect_options(&chosen))
        .await?;
    let warm: Vec<_> = futures_util::future::join_all((0..settings.size).map(|_| pool.acquire())).await;
    for c in warm {
        c?;
    }
    Ok(pool)
}

/// The same server, user, database and options (the run's search_path) as the direct workers.
fn connect_options(config: &crate::db::Endpoint) -> PgConnectOptions {
    let mut o = PgConnectOptions::new_without_pgpass();
    match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(h)) => o = o.host(h),
        Some(tokio_postgres::config::Host::Unix(p)) => o = o.socket(p),
        None => {}
    }
    if let Some(port) = config.get_ports().first() {
        o = o.port(*port);
    }
    if let Some(u) = config.get_user() {
        o = o.username(u);
    }
    if let Some(p) = config.get_password() {
        o = o.password(&String::from_utf8_lossy(p));
    }
    if let Some(d) = config.get_dbname() {
        o = o.database(d);
    }
    if let Some(a) = config.get_application_name() {
        o = o.application_name(a);
    }
    let text = config.get_options().unwrap_or("");
    let pairs: Vec<(String, String)> = text
        .split_whitespace()
        .filter(|t| *t != "-c")
        .filter_map(|t| t.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
        .collect();
    // An empty `options` is still a startup parameter, which PgBouncer refuses.
    if !pairs.is_empty() {
        o = o.options(pairs);
    }
    // Through a transaction pooler no statement is cached by name (sqlx then parses the
    // unnamed statement: see docs/production-postgres.md for what that does behind PgBouncer).
    if config.unnamed() {
        o = o.statement_cache_capacity(0);
    }
    tls_options(o, config).disable_statement_logging()
}

/// The run's TLS in sqlx's terms (sqlx has the same six modes; libpq's `require` with a root
/// file is verify-ca). A Unix socket stays plain, as the direct connections do.
fn tls_options(o: PgConnectOptions, config: &crate::db::Endpoint) -> PgConnectOptions {
    use crate::db::tls::SslMode;
    use sqlx::postgres::PgSslMode;
    let tls = &config.tls;
    let unix = matches!(config.get_hosts().first(), Some(tokio_postgres::config::Host::Unix(_)));
    let mode = match tls.effective_mode() {
        _ if unix => PgSslMode::Disable,
        SslMode::Disable => PgSslMode::Disable,
        SslMode::Allow => PgSslMode::Allow,
        SslMode::Prefer => PgSslMode::Prefer,
        SslMode::Require => PgSslMode::Require,
        SslMode::VerifyCa => PgSslMode::VerifyCa,
        SslMode::VerifyFull => PgSslMode::VerifyFull,
    };
    let mut o = o.ssl_mode(mode);
    if let Some(root) = tls.root_path() {
        o = o.ssl_root_cert(root);
    }
    if let Some((cert, key)) = &tls.client {
        o = o.ssl_client_cert(cert).ssl_client_key(key);
    }
    o
}

pub(crate) use steps::Pooled;

mod steps;
