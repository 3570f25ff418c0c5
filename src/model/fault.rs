//! The fault kinds every stage names: the `kind` of a `[[faults]]` entry, of a fired fault in
//! the history and evidence.json, and the keys of summary.json's `faults.by_kind`. Data-free:
//! what a fault of a kind does (its point, duration, targets) is the scenario's
//! (`scenario::faults::Kind`); here is its name and who carries it out.

use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::fmt;

/// A kind of fault, by its name in scenario files and outputs (`kill_backend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    Crash,
    Pause,
    KillBackend,
    LockHold,
    /// A poison job crashed its worker (a job type's `poison`, not a `[[faults]]` kind).
    Poison,
    Cancel,
    PostgresRestart,
    Failover,
    /// A client's worker process exited on its own (recorded, never injected).
    Exit,
    Partition,
    Latency,
    Loss,
    KillAgent,
    /// A worker's completion was sent and its connection cut before the answer was read: the
    /// outcome is unknown to the worker (`ack_lost`).
    AckLost,
}

/// Who carries a fault out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Actor {
    /// The worker itself, at a point in its job's life or at its pause gate (for a process
    /// client: the fleet's SIGKILL / SIGSTOP of the worker's process).
    Worker,
    /// The injector beside the workers (in each agent of a run across agents): it ends their
    /// backends with `pg_terminate_backend`.
    Injector,
    /// A session of the harness's own against the queue (the coordinator's, across agents):
    /// rows locked, jobs cancelled.
    Operator,
    /// The ephemeral cluster's supervisor: it stops, kills, starts and promotes PostgreSQL.
    Supervisor,
    /// The coordinator of a run across agents: it SIGKILLs an agent process it spawned.
    Coordinator,
    /// The network between agents and the server (the coordinator, on their namespaces).
    Network,
    /// Nobody: a job type (`poison`) or a process (`exit`) did it; recorded, never injected.
    Nobody,
}

impl FaultKind {
    /// Every kind, in the order the docs list them.
    pub const ALL: [FaultKind; 14] = [
        FaultKind::Crash,
        FaultKind::Pause,
        FaultKind::KillBackend,
        FaultKind::LockHold,
        FaultKind::Poison,
        FaultKind::Cancel,
        FaultKind::PostgresRestart,
        FaultKind::Failover,
        FaultKind::Exit,
        FaultKind::Partition,
        FaultKind::Latency,
        FaultKind::Loss,
        FaultKind::KillAgent,
        FaultKind::AckLost,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Crash => "crash",
            FaultKind::Pause => "pause",
            FaultKind::KillBackend => "kill_backend",
            FaultKind::LockHold => "lock_hold",
            FaultKind::Poison => "poison",
            FaultKind::Cancel => "cancel",
            FaultKind::PostgresRestart => "postgres_restart",
            FaultKind::Failover => "failover",
            FaultKind::Exit => "exit",
            FaultKind::Partition => "partition",
            FaultKind::Latency => "latency",
            FaultKind::Loss => "loss",
            FaultKind::KillAgent => "kill_agent",
            FaultKind::AckLost => "ack_lost",
        }
    }

    /// The kind of this name; None for a name no kind has.
    pub fn parse(name: &str) -> Option<FaultKind> {
        FaultKind::ALL.into_iter().find(|k| k.name() == name)
    }

    pub fn actor(self) -> Actor {
        match self {
            FaultKind::Crash | FaultKind::Pause | FaultKind::AckLost => Actor::Worker,
            FaultKind::KillBackend => Actor::Injector,
            FaultKind::LockHold | FaultKind::Cancel => Actor::Operator,
            FaultKind::PostgresRestart | FaultKind::Failover => Actor::Supervisor,
            FaultKind::KillAgent => Actor::Coordinator,
            FaultKind::Partition | FaultKind::Latency | FaultKind::Loss => Actor::Network,
            FaultKind::Poison | FaultKind::Exit => Actor::Nobody,
        }
    }

    /// Whether it acts on agents (`agents = [..]` names them; a run across agents only).
    pub fn on_agents(self) -> bool {
        matches!(self.actor(), Actor::Coordinator | Actor::Network)
    }

    /// The kinds a `[[faults]]` entry may name (someone carries them out), as an error's
    /// accepted values: `crash, pause, …`.
    pub fn accepted() -> String {
        let names: Vec<&str> = FaultKind::ALL.iter().filter(|k| k.actor() != Actor::Nobody).map(|k| k.name()).collect();
        names.join(", ")
    }

    /// The kinds that act on agents, as a list for an error (`partition, latency, …`).
    pub fn on_agents_list() -> String {
        let names: Vec<&str> = FaultKind::ALL.iter().filter(|k| k.on_agents()).map(|k| k.name()).collect();
        names.join(", ")
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// By name, so a map keyed by kind (`faults.by_kind`) keeps the order it had as strings.
impl Ord for FaultKind {
    fn cmp(&self, other: &Self) -> Ordering {
        self.name().cmp(other.name())
    }
}

impl PartialOrd for FaultKind {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_round_trips_through_its_name_and_serde() {
        for k in FaultKind::ALL {
            assert_eq!(FaultKind::parse(k.name()), Some(k));
            assert_eq!(serde_json::to_string(&k).unwrap(), format!("\"{}\"", k.name()));
            assert_eq!(serde_json::from_str::<FaultKind>(&format!("\"{k}\"")).unwrap(), k);
        }
        assert_eq!(FaultKind::parse("kill-backend"), None);
        let mut names: Vec<&str> = FaultKind::ALL.iter().map(|k| k.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), FaultKind::ALL.len(), "names are unique");
    }

    #[test]
    fn a_map_by_kind_is_a_map_by_name_in_name_order() {
        let map: std::collections::BTreeMap<FaultKind, u64> = FaultKind::ALL.iter().map(|&k| (k, 1)).collect();
        let json = serde_json::to_string(&map).unwrap();
        let by_name: std::collections::BTreeMap<&str, u64> = FaultKind::ALL.iter().map(|k| (k.name(), 1)).collect();
        assert_eq!(json, serde_json::to_string(&by_name).unwrap());
        assert_eq!(serde_json::from_str::<std::collections::BTreeMap<FaultKind, u64>>(&json).unwrap(), map);
    }

    #[test]
    fn the_accepted_kinds_leave_out_what_nobody_injects() {
        let accepted = FaultKind::accepted();
        assert!(accepted.starts_with("crash, pause, kill_backend"), "{accepted}");
        assert!(accepted.contains("kill_agent") && !accepted.contains("poison") && !accepted.contains("exit"));
        assert_eq!(FaultKind::on_agents_list(), "partition, latency, loss, kill_agent");
    }

    #[test]
    fn every_kind_is_documented_in_the_faults_page() {
        let page = include_str!("../../docs/faults.md");
        for k in FaultKind::ALL {
            assert!(page.contains(&format!("`{}`", k.name())), "docs/faults.md does not name `{k}`");
        }
    }
}
