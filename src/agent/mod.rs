//! Runs beyond one machine (docs/agents.md): a coordinator and agents that meet through the
//! database under test. The coordinator (`run --agents N`, `--spawn-agents N`) prepares the
//! run as usual, writes the plan into control tables in the run's schema (`control`,
//! `bundle`), waits for the agents, starts them together at a barrier on the server's clock
//! (`clock`), runs the side tasks itself, and merges the evidence they upload (`evidence`,
//! `merge`) before the checkers run once over the whole run. An agent (`queuebench agent`)
//! only needs a path to PostgreSQL. `netns`, `forward` and `netfault` make agents on this
//! machine look like separate hosts (a network namespace each, a forwarder to the server,
//! `tc netem`).

pub(crate) mod bundle;
pub(crate) mod clock;
pub(crate) mod control;
pub(crate) mod coordinator;
pub(crate) mod evidence;
pub(crate) mod forward;
pub(crate) mod kill;
pub(crate) mod member;
pub(crate) mod merge;
pub(crate) mod netfault;
pub(crate) mod netns;
pub(crate) mod problem;
pub(crate) mod spawn;
pub(crate) mod state;
pub(crate) mod stuck;

use crate::model::fault::Actor;
use crate::scenario::Plan;
use std::ops::RangeInclusive;

/// Respawned workers of agent k take identities from `workers + 1 + (k - 1) × IDENTITY_SPAN`.
pub(crate) const IDENTITY_SPAN: u32 = 100_000;

/// Agent k's worker slots (k = 1..=agents): the workers split as evenly as they go.
pub(crate) fn slots(workers: u32, agents: u32, k: u32) -> RangeInclusive<u32> {
    let (w, n, k) = (u64::from(workers), u64::from(agents), u64::from(k));
    ((k - 1) * w / n + 1) as u32..=(k * w / n) as u32
}

/// The first identity agent k's respawned workers take.
pub(crate) fn identity_base(workers: u32, k: u32) -> u32 {
    workers + 1 + (k - 1) * IDENTITY_SPAN
}

/// The plan as agent k runs it: only the faults that hit its own workers (crashes, pauses,
/// killed backends), each narrowed to them. Faults keep their scenario index.
pub(crate) fn plan_for_agent(plan: &Plan, mine: &RangeInclusive<u32>) -> Plan {
    let mut p = plan.clone();
    p.faults.retain_mut(|f| {
        let on_workers = matches!(f.kind.kind().actor(), Actor::Worker | Actor::Injector);
        f.workers.retain(|w| mine.contains(w));
        on_workers && !f.workers.is_empty()
    });
    p
}

/// The plan as the coordinator runs it: only the faults on the server (lock holds, cancels,
/// restarts, failovers); the agents run those on workers.
pub(crate) fn plan_for_coordinator(plan: &Plan) -> Plan {
    let mut p = plan.clone();
    p.faults.retain(|f| matches!(f.kind.kind().actor(), Actor::Operator | Actor::Supervisor));
    p
}

/// How long the plan itself keeps an agent silent (a network partition cuts its control
/// connection too): the coordinator waits this much longer before calling it missing.
pub(crate) fn silence_planned(plan: &Plan) -> std::time::Duration {
    netfault::silence(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_cover_every_worker_once() {
        for (w, n) in [(16, 3), (4, 4), (10, 1), (7, 2)] {
            let all: Vec<u32> = (1..=n).flat_map(|k| slots(w, n, k)).collect();
            assert_eq!(all, (1..=w).collect::<Vec<_>>(), "{w} workers over {n} agents");
        }
        assert_eq!(slots(16, 3, 1), 1..=5);
        assert_eq!(identity_base(16, 2), 17 + IDENTITY_SPAN);
    }
}
