//! `client = "pg-boss"`: a real queue library's worker processes instead of SQL workers
//! (`docs/clients.md`, the contract in `clients/CONTRACT.md`). Resolved here, before the rest
//! of the scenario is validated: the client's folder and its `enqueue.sql`, the paired adapter
//! (same name, for the observer queries and the declared lease) and its setup command
//! (`<client>/run setup`), the `[workers]` keys only a client reads, and the process faults
//! taken out of `[[faults]]` (the SQL workers' fault kinds do not apply to a process).

use super::load::Source;
use super::raw::{RawFault, RawScenario};
use super::units::parse_duration;
use crate::error::{Invalid, Result};
use crate::model::fault::FaultKind;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A resolved process client.
#[derive(Debug, Clone)]
pub struct ClientPlan {
    /// The folder's name (`pg-boss`).
    pub name: String,
    /// The folder, absolute.
    pub dir: PathBuf,
    /// `<dir>/run`: `run setup`, `run work`.
    pub program: PathBuf,
    pub enqueue: EnqueueSql,
    /// `workers.concurrency`: handlers per process.
    pub concurrency: u32,
    /// `workers.client_bug`: `QUEUEBENCH_CLIENT_BUG`.
    pub bug: Option<String>,
    /// `workers.poll`: `QUEUEBENCH_POLL_MS`.
    pub poll_ms: Option<u64>,
    /// `workers.batch` above 1: `QUEUEBENCH_BATCH`, the library's jobs per fetch.
    pub batch: Option<u32>,
    /// `<dir>/client.toml`'s `[throughput]`: how the configuration paces the library.
    pub pacing: Option<Pacing>,
    pub faults: Vec<ClientFault>,
}

/// `enqueue.sql` (contract: "enqueue.sql"), `{schema}` not yet written in.
#[derive(Debug, Clone)]
pub struct EnqueueSql {
    pub session: Vec<String>,
    pub statement: String,
}

impl EnqueueSql {
    pub fn parse(text: &str) -> std::result::Result<EnqueueSql, Invalid> {
        let mut session = Vec::new();
        let mut lines = Vec::new();
        for line in text.lines() {
            let t = line.trim();
            if let Some(s) = t.strip_prefix("-- session:") {
                session.push(s.trim().to_string());
            } else if !t.starts_with("--") && !t.is_empty() {
                lines.push(line);
            }
        }
        let statement = lines.join("\n").trim().trim_end_matches(';').trim().to_string();
        if statement.is_empty() {
            return Err("holds no statement (one INSERT with $1 = queue, $2 = payload JSON text)".into());
        }
        Ok(EnqueueSql { session, statement })
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ClientFaultKind {
    /// SIGKILL, started again after `restart_after`.
    Crash { restart_after: Duration },
    /// SIGSTOP, SIGCONT after `duration`.
    Pause { duration: Duration },
    /// `pg_terminate_backend` on the process's connections (by application_name).
    KillBackend,
}

impl ClientFaultKind {
    /// The kinds a process client takes.
    pub const KINDS: [FaultKind; 3] = [FaultKind::Crash, FaultKind::Pause, FaultKind::KillBackend];

    pub fn kind(&self) -> FaultKind {
        match self {
            ClientFaultKind::Crash { .. } => FaultKind::Crash,
            ClientFaultKind::Pause { .. } => FaultKind::Pause,
            ClientFaultKind::KillBackend => FaultKind::KillBackend,
        }
    }

    pub fn name(&self) -> &'static str {
        self.kind().name()
    }
}

/// A process fault: first at `at`, then every `interval`, at most `limit` times.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientFault {
    pub kind: ClientFaultKind,
    pub at: Duration,
    pub interval: Option<Duration>,
    pub limit: Option<u64>,
    /// Worker slots (1-based) it hits, in turn.
    pub workers: Vec<u32>,
}

/// `clients/<name>/client.toml`, `[throughput]`: how the library's configuration paces it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pacing {
    /// Every handler waits out the poll interval after each fetch, whether or not it found
    /// jobs (so the poll bounds the rate even with a full queue).
    #[serde(default)]
    pub paced_by_poll: bool,
    /// The library's poll interval when the scenario gives no `workers.poll`.
    #[serde(default, with = "humantime_opt")]
    pub poll_default: Option<Duration>,
    /// A fetched batch runs side by side (pg-boss's batchSize), not one job after another.
    #[serde(default)]
    pub batch_side_by_side: bool,
    /// The library can fetch several jobs at once (`workers.batch` → `QUEUEBENCH_BATCH`);
    /// `false` refuses `workers.batch` at validate.
    #[serde(default = "yes")]
    pub batch_fetch: bool,
}

fn yes() -> bool {
    true
}

impl Default for Pacing {
    fn default() -> Self {
        Pacing { paced_by_poll: false, poll_default: None, batch_side_by_side: false, batch_fetch: true }
    }
}

mod humantime_opt {
    use serde::{Deserialize, Deserializer};
    use std::time::Duration;

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let s = Option::<String>::deserialize(d)?;
        s.map(|s| super::parse_duration(&s).map_err(serde::de::Error::custom)).transpose()
    }
}

/// Resolves `client` and rewrites `raw` for the rest of validation: the adapter defaults to
/// the client's name, the setup command to `<client>/run setup`, and `[[faults]]` are taken
/// out. None when the scenario names no client (then the client-only keys are refused).
pub(crate) fn take(raw: &mut RawScenario, source: &Source) -> Result<Option<ClientPlan>> {
    let Some(spec) = raw.client.clone() else {
        return refuse_client_keys(raw, source).map(|()| None);
    };
    if raw.run.stop == "claims" {
        return Err(source.error("run.stop", "a process client stops \"drained\" or after a duration, not \"claims\""));
    }
    refuse_unsupported(raw, source)?;
    let dir = find_dir(&spec, source)?;
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let enqueue_path = dir.join("enqueue.sql");
    let text = crate::files::read_text(&enqueue_path, crate::files::Kind::Scenario)
        .map_err(|e| source.error("client", format!("{e} (contract: clients/CONTRACT.md)")))?;
    let enqueue =
        EnqueueSql::parse(&text).map_err(|e| source.error("client", format!("{}: {e}", enqueue_path.display())))?;
    let program = dir.join("run");
    if raw.adapter.is_none() {
        raw.adapter = Some(name.clone());
    }
    if raw.setup_command.is_none() {
        raw.setup_command = Some(vec![program.display().to_string(), "setup".into()]);
    }
    let w = &raw.workers;
    let concurrency = match w.concurrency.unwrap_or(1) {
        n @ 1..=1000 => n as u32,
        n => return Err(source.error("workers.concurrency", format!("must be between 1 and 1000, got {n}"))),
    };
    let poll_ms = match &w.poll {
        Some(p) => Some(parse_duration(p).map_err(|e| source.error("workers.poll", e))?.as_millis() as u64),
        None => None,
    };
    let bug = w.client_bug.clone();
    let batch = match w.batch {
        1 => None,
        n @ 2..=100_000 => Some(n as u32),
        n => return Err(source.error("workers.batch", format!("must be between 1 and 100000, got {n}"))),
    };
    let pacing = read_pacing(&dir).map_err(|e| source.error("client", e))?;
    if batch.is_some() && pacing.as_ref().is_some_and(|p| !p.batch_fetch) {
        return Err(source.error(
            "workers.batch",
            format!(
                "{name} fetches one job per handler (batch_fetch = false in {}); leave out workers.batch",
                dir.join("client.toml").display()
            ),
        ));
    }
    let count = raw.workers.count.clamp(1, 100_000) as u32;
    let faults = std::mem::take(&mut raw.faults)
        .iter()
        .enumerate()
        .map(|(i, f)| fault(f, count).map_err(|e| source.error("faults", format!("[[faults]] #{}: {e}", i + 1))))
        .collect::<Result<Vec<_>>>()?;
    Ok(Some(ClientPlan { name, dir, program, enqueue, concurrency, bug, poll_ms, batch, pacing, faults }))
}

/// `<dir>/client.toml`, optional: `[throughput]` (clients/CONTRACT.md, "client.toml").
fn read_pacing(dir: &Path) -> std::result::Result<Option<Pacing>, Invalid> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct File {
        throughput: Option<Pacing>,
    }
    let path = dir.join("client.toml");
    if !path.exists() {
        return Ok(None);
    }
    let text = crate::files::read_text(&path, crate::files::Kind::Scenario).map_err(|e| Invalid::new(e.to_string()))?;
    let file: File = toml::from_str(&text).map_err(|e| {
        Invalid::new(format!(
            "{}: {} (accepted: [throughput] paced_by_poll, poll_default, batch_side_by_side, batch_fetch)",
            path.display(),
            crate::error::filter(e.message())
        ))
    })?;
    Ok(file.throughput)
}

/// What a client run does not do yet, refused rather than ignored.
fn refuse_unsupported(raw: &RawScenario, source: &Source) -> Result<()> {
    for (key, given) in [
        ("jobs.classes", !raw.jobs.classes.is_empty()),
        ("run.phases", !raw.run.phases.is_empty()),
        ("blockers", !raw.blockers.is_empty()),
        ("vacuum", !raw.vacuum.is_empty()),
        ("workers.groups", !raw.workers.groups.is_empty()),
    ] {
        if given {
            return Err(source.error(key, "is not supported with a process client (yet): see docs/clients.md"));
        }
    }
    Ok(())
}

/// `client = "pg-boss"`: `clients/pg-boss` under the current folder or under a folder above
/// the scenario; a value with a slash: a path relative to the scenario's folder.
fn find_dir(spec: &str, source: &Source) -> Result<PathBuf> {
    let mut tried = Vec::new();
    let candidates: Vec<PathBuf> = if spec.contains('/') {
        vec![source.folder().join(spec)]
    } else {
        let mut c = vec![Path::new("clients").join(spec)];
        let folder = std::path::absolute(source.folder()).unwrap_or_else(|_| source.folder().into());
        c.extend(folder.ancestors().map(|a| a.join("clients").join(spec)));
        c
    };
    for c in candidates {
        if c.is_dir() {
            return Ok(std::path::absolute(&c).unwrap_or(c));
        }
        tried.push(c.display().to_string());
    }
    Err(source.error(
        "client",
        format!(
            "no client folder `{spec}` (tried {}); give a folder under clients/ (pg-boss, graphile-worker, \
             procrastinate, pgqueuer) or a path relative to the scenario",
            tried.join(", ")
        ),
    ))
}

/// The client-only keys mean nothing to SQL workers.
fn refuse_client_keys(raw: &RawScenario, source: &Source) -> Result<()> {
    let w = &raw.workers;
    for (key, given) in [
        ("workers.concurrency", w.concurrency.is_some()),
        ("workers.client_bug", w.client_bug.is_some()),
        ("workers.poll", w.poll.is_some()),
        ("faults", raw.faults.iter().any(|f| f.interval.is_some())),
    ] {
        if given {
            let what = if key == "faults" { "a fault's `interval`" } else { key };
            return Err(
                source.error(key, format!("{what} is for process clients only: add client = \"…\" or remove it"))
            );
        }
    }
    Ok(())
}

fn duration(v: &Option<String>, key: &str) -> std::result::Result<Option<Duration>, Invalid> {
    v.as_deref().map(|s| parse_duration(s).map_err(|e| Invalid::new(format!("{key}: {e}")))).transpose()
}

/// One `[[faults]]` entry of a client scenario.
fn fault(f: &RawFault, workers: u32) -> std::result::Result<ClientFault, Invalid> {
    if f.probability.is_some() || f.every.is_some() || f.rate.is_some() || f.point.is_some() {
        return Err("a process fault fires at a time: give `at` and/or `interval` (probability, every, rate and \
                    point are for SQL workers)"
            .into());
    }
    let accepted = || ClientFaultKind::KINDS.map(FaultKind::name).join(", ");
    let refused = |why: &str| Err(format!("kind `{}` {why}; accepted: {}", f.kind, accepted()).into());
    let kind = match FaultKind::parse(&f.kind) {
        Some(FaultKind::Crash) => ClientFaultKind::Crash {
            restart_after: duration(&f.respawn_after, "respawn_after")?.unwrap_or(Duration::from_millis(500)),
        },
        Some(FaultKind::Pause) => ClientFaultKind::Pause {
            duration: duration(&f.duration, "duration")?
                .ok_or(Invalid::new("a pause needs `duration`, e.g. \"2s\""))?,
        },
        Some(FaultKind::KillBackend) => ClientFaultKind::KillBackend,
        Some(
            FaultKind::LockHold
            | FaultKind::Poison
            | FaultKind::Cancel
            | FaultKind::PostgresRestart
            | FaultKind::Failover
            | FaultKind::Exit
            | FaultKind::Partition
            | FaultKind::Latency
            | FaultKind::Loss
            | FaultKind::KillAgent
            | FaultKind::AckLost,
        ) => return refused("does not apply to a process"),
        None => return refused("is not a fault kind"),
    };
    let interval = duration(&f.interval, "interval")?;
    if interval.is_some_and(|d| d < Duration::from_millis(100)) {
        return Err("interval must be at least 100ms".into());
    }
    let at = match (duration(&f.at, "at")?, interval) {
        (Some(at), _) => at,
        (None, Some(i)) => i,
        (None, None) => return Err("give `at` (once) and/or `interval` (again and again)".into()),
    };
    let targets = match f.workers.as_deref() {
        None | Some("all") => (1..=workers).collect(),
        Some(w) => match w.trim_start_matches(['p', 'w']).parse::<u32>() {
            Ok(k) if (1..=workers).contains(&k) => vec![k],
            _ => return Err(format!("workers = \"{w}\": give \"all\" or a worker p1..p{workers}").into()),
        },
    };
    Ok(ClientFault { kind, at, interval, limit: f.limit.map(|l| l.max(0) as u64), workers: targets })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enqueue_sql_keeps_session_lines_and_one_statement() {
        let e =
            EnqueueSql::parse("-- a comment\n-- session: SET search_path TO {schema}\nSELECT 1\n  FROM x;\n").unwrap();
        assert_eq!(e.session, vec!["SET search_path TO {schema}".to_string()]);
        assert_eq!(e.statement, "SELECT 1\n  FROM x");
        assert!(EnqueueSql::parse("-- only comments\n").is_err());
    }
}
