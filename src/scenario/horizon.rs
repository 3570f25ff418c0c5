//! Horizon blockers and vacuum steps as planned: sessions that pin the
//! xmin horizon for a while (an idle transaction holding an xid, REPEATABLE
//! READ readers scanning the queue, a long query), and named explicit
//! `VACUUM (VERBOSE)` steps.

use super::raw::{RawBlocker, RawVacuum};
use super::units::parse_duration;
use crate::error::Invalid;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockerKind {
    /// `BEGIN; SELECT txid_current();` then nothing (seed 001).
    IdleInTransaction,
    /// Sessions in REPEATABLE READ scanning the jobs table again and again.
    RepeatableRead,
    /// One query that runs for the whole duration.
    LongQuery,
}

impl BlockerKind {
    pub fn name(self) -> &'static str {
        match self {
            BlockerKind::IdleInTransaction => "idle_in_transaction",
            BlockerKind::RepeatableRead => "repeatable_read",
            BlockerKind::LongQuery => "long_query",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Blocker {
    pub kind: BlockerKind,
    pub at: Duration,
    pub duration: Duration,
    pub sessions: u32,
    pub scan_every: Duration,
}

#[derive(Debug, Clone, PartialEq)]
pub struct VacuumStep {
    pub name: String,
    pub at: Duration,
    pub pgstattuple: bool,
    /// The VACUUM command, with its INDEX_CLEANUP option.
    pub command: String,
}

pub(crate) fn blockers(raw: &[RawBlocker]) -> Result<Vec<Blocker>, Invalid> {
    raw.iter()
        .enumerate()
        .map(|(i, b)| {
            let at = |key: &str, v: &str| parse_duration(v).map_err(|e| Invalid::from(e).within(format!("blockers[{i}].{key}")));
            let kind = match b.kind.as_str() {
                "idle_in_transaction" => BlockerKind::IdleInTransaction,
                "repeatable_read" => BlockerKind::RepeatableRead,
                "long_query" => BlockerKind::LongQuery,
                other => {
                    return Err(Invalid::new(format!(
                        "blockers[{i}]: unknown kind `{other}`; accepted: idle_in_transaction, repeatable_read, long_query"
                    )));
                }
            };
            if !(1..=100).contains(&b.sessions) {
                return Err(Invalid::new(format!("blockers[{i}].sessions must be between 1 and 100")));
            }
            let duration = at("duration", &b.duration)?;
            if duration.is_zero() {
                return Err(Invalid::new(format!("blockers[{i}].duration must be above 0")));
            }
            Ok(Blocker {
                kind,
                at: at("at", &b.at)?,
                duration,
                sessions: b.sessions as u32,
                scan_every: at("scan_every", &b.scan_every)?.max(Duration::from_millis(10)),
            })
        })
        .collect()
}

pub(crate) fn vacuum_steps(raw: &[RawVacuum]) -> Result<Vec<VacuumStep>, Invalid> {
    let mut out: Vec<VacuumStep> = Vec::new();
    for v in raw {
        let ok = !v.name.is_empty() && v.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !ok || out.iter().any(|o| o.name == v.name) {
            return Err(Invalid::new(format!("vacuum `{}`: needs a unique name of letters, digits, - and _", v.name)));
        }
        let at = parse_duration(&v.at).map_err(|e| Invalid::from(e).within(format!("vacuum `{}`.at", v.name)))?;
        let cleanup = match v.index_cleanup.as_str() {
            "auto" => "",
            "on" => ", INDEX_CLEANUP ON",
            "off" => ", INDEX_CLEANUP OFF",
            other => {
                return Err(Invalid::new(format!(
                    "vacuum `{}`.index_cleanup `{other}`; accepted: auto, on, off",
                    v.name
                )));
            }
        };
        // `{table}`: the queue's table, written in by the runner (`jobs`, or an adapter's).
        let command = format!("VACUUM (VERBOSE{cleanup}) {{table}}");
        out.push(VacuumStep { name: v.name.clone(), at, pgstattuple: v.pgstattuple, command });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blockers_validate() {
        let b = RawBlocker {
            kind: "idle_in_transaction".into(),
            at: "1s".into(),
            duration: "2s".into(),
            sessions: 1,
            scan_every: "200ms".into(),
        };
        assert_eq!(blockers(std::slice::from_ref(&b)).unwrap()[0].at, Duration::from_secs(1));
        let mut bad = b.clone();
        bad.kind = "vacuum".into();
        assert!(blockers(&[bad]).unwrap_err().reason.contains("accepted: idle_in_transaction"));
        let mut bad = b;
        bad.sessions = 0;
        assert!(blockers(&[bad]).is_err());
    }

    #[test]
    fn vacuum_names_are_unique() {
        let v = RawVacuum { name: "during".into(), at: "1s".into(), pgstattuple: false, index_cleanup: "auto".into() };
        assert!(vacuum_steps(&[v.clone(), v]).is_err());
    }
}
