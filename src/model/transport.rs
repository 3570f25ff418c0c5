//! What a worker's transport can do (`run::worker::transport::Transport`): the capabilities a
//! scenario may ask of it, and each transport's declaration of the ones it has. Scenario
//! validation refuses a scenario that asks a transport for a capability it does not declare
//! (`scenario::needs`), naming the capability and the key that asks for it; docs/pool.md's
//! refusals are checked against [`TransportKind::lacks`] (tests/docs.rs), and the conformance
//! matrix (tests/conformance.rs) runs the shipped scenarios over every transport.

use super::fault::FaultKind;

/// One thing a transport may be able to do for the worker round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Capability {
    /// Keep one transaction open from the claim through the work to the completion
    /// (`workers.mode = "hold-transaction"`).
    HoldTransaction,
    /// Stay LISTENing between claims, so a NOTIFY wakes an idle worker (`workers.wakeup = "listen"`).
    Listen,
    /// A server backend of the worker's own: a pid the injector terminates (`kill_backend`).
    OwnBackend,
    /// A connection of the worker's own to cut after a completion was sent (`ack_lost`).
    CutConnection,
    /// Open its connection again after the server or the network went away, or report the
    /// database lost (exit 3) after `run.reconnect_timeout` (`postgres_restart`, `failover`,
    /// `partition`, `latency`, `loss`).
    Reconnect,
    /// Run in an agent process the coordinator kills mid-run (`kill_agent`).
    AgentLoss,
    /// A queue of an adapter file with a schema of its own (`setup`): its key types (text,
    /// uuid ids) and its own effects insert.
    AdapterQueue,
    /// Bind an adapter's array and duration constants.
    ArrayConstants,
    /// Bind `:now` (a timestamp).
    TimeValues,
    /// Bind `:payload` (JSON).
    JsonValues,
    /// A step of several statements (`:prev.COLUMN`), or one judged by something other than
    /// its row count (a returned column, a renewed token).
    CompoundSteps,
}

impl Capability {
    pub const ALL: [Capability; 11] = [
        Capability::HoldTransaction,
        Capability::Listen,
        Capability::OwnBackend,
        Capability::CutConnection,
        Capability::Reconnect,
        Capability::AgentLoss,
        Capability::AdapterQueue,
        Capability::ArrayConstants,
        Capability::TimeValues,
        Capability::JsonValues,
        Capability::CompoundSteps,
    ];

    /// Its name in refusals and docs.
    pub fn name(self) -> &'static str {
        match self {
            Capability::HoldTransaction => "hold_transaction",
            Capability::Listen => "listen",
            Capability::OwnBackend => "own_backend",
            Capability::CutConnection => "cut_connection",
            Capability::Reconnect => "reconnect",
            Capability::AgentLoss => "agent_loss",
            Capability::AdapterQueue => "adapter_queue",
            Capability::ArrayConstants => "array_constants",
            Capability::TimeValues => "time_values",
            Capability::JsonValues => "json_values",
            Capability::CompoundSteps => "compound_steps",
        }
    }

    /// What it is, as a refusal says a transport cannot do it.
    pub fn what(self) -> &'static str {
        match self {
            Capability::HoldTransaction => "hold a transaction through a job's work",
            Capability::Listen => "stay LISTENing between claims",
            Capability::OwnBackend => "give each worker a server backend of its own to terminate",
            Capability::CutConnection => "cut a worker's own connection after a completion was sent",
            Capability::Reconnect => "reopen a worker's connection after the server or network went away",
            Capability::AgentLoss => "lose an agent process mid-run",
            Capability::AdapterQueue => "run an adapter's queue in a schema of its own (its key types and effects)",
            Capability::ArrayConstants => "bind an adapter's array and duration constants",
            Capability::TimeValues => "bind :now (sqlx is built here without its time types)",
            Capability::JsonValues => "bind :payload (sqlx is built here without its JSON types)",
            Capability::CompoundSteps => "run a step of several statements, or one not judged by its row count",
        }
    }

    /// The capability a fault kind asks of the worker's transport (None: the round or the
    /// database carries it out, whatever the transport).
    pub(crate) fn for_fault(kind: FaultKind) -> Option<Capability> {
        match kind {
            FaultKind::Crash
            | FaultKind::Pause
            | FaultKind::LockHold
            | FaultKind::Cancel
            | FaultKind::Poison
            | FaultKind::Exit => None,
            FaultKind::KillBackend => Some(Capability::OwnBackend),
            FaultKind::AckLost => Some(Capability::CutConnection),
            FaultKind::PostgresRestart
            | FaultKind::Failover
            | FaultKind::Partition
            | FaultKind::Latency
            | FaultKind::Loss => Some(Capability::Reconnect),
            FaultKind::KillAgent => Some(Capability::AgentLoss),
        }
    }
}

/// A transport the worker round runs over, and what it declares it can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportKind {
    /// `run::worker::direct::Direct`: one connection of the worker's own, statements prepared.
    Direct,
    /// `run::pool::Pooled`: a step at a time on a connection of a shared `sqlx::PgPool`
    /// (`workers.pool`).
    Pool,
}

impl TransportKind {
    pub const ALL: [TransportKind; 2] = [TransportKind::Direct, TransportKind::Pool];

    pub fn name(self) -> &'static str {
        match self {
            TransportKind::Direct => "direct",
            TransportKind::Pool => "sqlx pool",
        }
    }

    /// The scenario key that chooses it (None: the default).
    pub fn key(self) -> Option<&'static str> {
        match self {
            TransportKind::Direct => None,
            TransportKind::Pool => Some("workers.pool"),
        }
    }

    /// The declaration: every capability it has.
    pub fn capabilities(self) -> &'static [Capability] {
        match self {
            TransportKind::Direct => &Capability::ALL,
            // Crash, pause, lock_hold and cancel act in the round or on the database; the
            // pool's connections are the pool's, one statement a step, judged by its rows.
            TransportKind::Pool => &[],
        }
    }

    pub fn can(self, c: Capability) -> bool {
        self.capabilities().contains(&c)
    }

    /// What it does not declare, in `Capability::ALL`'s order.
    pub fn lacks(self) -> impl Iterator<Item = Capability> {
        Capability::ALL.into_iter().filter(move |c| !self.can(*c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_distinct_and_every_capability_is_in_all() {
        let mut names: Vec<&str> = Capability::ALL.iter().map(|c| c.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Capability::ALL.len());
        assert!(TransportKind::Direct.lacks().next().is_none(), "the direct transport is the reference");
        assert!(!TransportKind::Pool.can(Capability::HoldTransaction));
    }

    #[test]
    fn the_fault_kinds_the_pool_ran_before_need_nothing_of_it() {
        for k in [FaultKind::Crash, FaultKind::Pause, FaultKind::LockHold, FaultKind::Cancel] {
            assert_eq!(Capability::for_fault(k), None, "{}", k.name());
        }
        assert_eq!(Capability::for_fault(FaultKind::KillBackend), Some(Capability::OwnBackend));
    }
}
