//! `[postgres]` of a scenario: the server settings (only those on the allow-list of
//! `boundary.rs`), the jobs table's storage parameters, and what
//! queuebench starts beside its ephemeral cluster (a streaming standby, PgBouncer).

use super::at::At;
use super::boundary::refused_setting;
use super::plan::PostgresSettings;
use super::raw::{RawPgBouncer, RawScenario};
use super::values::setting_value;
use crate::error::Result;
use crate::model::fault::FaultKind;
use crate::model::pooler::{PgBouncer, PoolMode};
use crate::model::records::Replication;

/// `[postgres]`: server settings, and the jobs table's storage parameters (plain words only:
/// they are written into an ALTER TABLE).
pub(super) fn postgres(raw: &RawScenario, at: &At) -> Result<PostgresSettings> {
    let settings = raw
        .postgres
        .settings
        .iter()
        .map(|(k, v)| {
            let key = format!("postgres.settings.{k}");
            if let Some(why) = refused_setting(k) {
                return Err(at.err(&key, why));
            }
            setting_value(v).map(|v| (k.clone(), v)).map_err(|e| at.invalid(&key, e))
        })
        .collect::<Result<Vec<_>>>()?;
    let table_settings = raw
        .postgres
        .table_settings
        .iter()
        .map(|(k, v)| {
            let key = format!("postgres.table_settings.{k}");
            let key_ok = !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
            let value = setting_value(v).map_err(|e| at.invalid(&key, e))?;
            let value_ok = value.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-');
            if !key_ok || !value_ok {
                return Err(at.err(&key, "names and values are plain words or numbers"));
            }
            Ok((k.clone(), value))
        })
        .collect::<Result<Vec<_>>>()?;
    let standby = standby(raw, at, &settings)?;
    let pgbouncer = raw.postgres.pgbouncer.as_ref().map(|b| pgbouncer(raw, b, at)).transpose()?;
    if standby.is_some() && pgbouncer.is_some() {
        return Err(at.err(
            "postgres.pgbouncer",
            "PgBouncer in front of a cluster with a standby is not supported yet (after a failover the pooler \
             would still point at the old primary): leave out the pooler or the standby",
        ));
    }
    let superuser_sql = raw.postgres.superuser_sql;
    let version = match &raw.postgres.version {
        None => None,
        Some(v) => {
            let text = setting_value(v).map_err(|e| at.invalid("postgres.version", e))?;
            let pin = crate::model::pg_version::parse_major(&text).map_err(|e| at.invalid("postgres.version", e))?;
            Some(pin.major)
        }
    };
    Ok(PostgresSettings { settings, table_settings, tls: raw.postgres.tls, standby, pgbouncer, superuser_sql, version })
}

/// `[postgres] standby`: "async" or "sync"; queuebench then owns the replication settings, and
/// the standby serves the cluster's socket only (no TLS listener).
fn standby(raw: &RawScenario, at: &At, settings: &[(String, String)]) -> Result<Option<Replication>> {
    let replication = match raw.postgres.standby.as_deref() {
        None => return Ok(None),
        Some("async") => Replication::Async,
        Some("sync") => Replication::Sync,
        Some(other) => {
            return Err(at.err("postgres.standby", format!("`{other}`; accepted: \"async\", \"sync\"")));
        }
    };
    if raw.postgres.tls {
        return Err(at.err(
            "postgres.standby",
            "a standby is started on the cluster's own socket only, not beside its TLS listener: remove \
             `tls = true` (or the standby)",
        ));
    }
    let owned = ["synchronous_standby_names", "primary_conninfo", "hot_standby", "wal_level"];
    if let Some((k, _)) = settings.iter().find(|(k, _)| owned.contains(&k.to_ascii_lowercase().as_str())) {
        return Err(at.err(
            &format!("postgres.settings.{k}"),
            "queuebench sets the replication settings of a cluster with a standby (standby = \"sync\" sets \
             synchronous_standby_names): remove this setting",
        ));
    }
    Ok(Some(replication))
}

/// `[postgres.pgbouncer]`: a pool mode, a pool size (one server connection per worker and
/// producer unless given), and nothing that needs a session a pooler does not keep.
fn pgbouncer(raw: &RawScenario, b: &RawPgBouncer, at: &At) -> Result<PgBouncer> {
    let key = "postgres.pgbouncer";
    let mode = PoolMode::parse(&b.pool_mode).ok_or_else(|| {
        at.err(
            &format!("{key}.pool_mode"),
            format!("unknown pool mode `{}`; accepted: {}", b.pool_mode, PoolMode::NAMES.join(", ")),
        )
    })?;
    let size = match b.pool_size {
        Some(n) if !(1..=10_000).contains(&n) => {
            return Err(at.err(&format!("{key}.pool_size"), format!("must be between 1 and 10000, got {n}")));
        }
        Some(n) => n as u32,
        // One server connection for every client that goes through the pooler: the workers and
        // one producer per class (in session mode a client past the pool waits for a whole session).
        None => (raw.workers.count + raw.jobs.classes.len() as i64).clamp(1, 10_000) as u32,
    };
    if raw.postgres.tls {
        return Err(at.err(
            key,
            "PgBouncer in front of a TLS cluster is not supported: the pooler listens on the cluster's private \
             Unix socket directory; leave out postgres.tls (or --tls) for this scenario",
        ));
    }
    let kills = raw.faults.iter().any(|f| FaultKind::parse(&f.kind) == Some(FaultKind::KillBackend));
    let holds = raw.workers.mode == crate::model::protocol::Mode::HoldTransaction;
    if let Some(reason) = crate::model::pooler::refusal(mode, kills, holds, |m| format!("pool_mode = \"{}\"", m.name()))
    {
        return Err(at.err(key, reason));
    }
    Ok(PgBouncer { mode, size })
}
