//! A run across agents that cannot progress any more: every job left is `running`, held by
//! the workers of agents that went missing, and nothing reclaims it (`lease.reclaim = "off"`).
//! The live agents' workers would poll an unfinished queue until `run.timeout`; the
//! coordinator says why and stops the run instead. Only queuebench's own table is read: an
//! adapter's queue does not say who holds a job in a form the harness knows.

use super::control::Seen;
use crate::model::protocol::Reclaim;
use crate::scenario::Plan;
use crate::scenario::plan::Stop;
use tokio_postgres::Client;

const STUCK: &str = include_str!("sql/stuck.sql");

/// Whether a run of this plan can be stuck that way at all.
pub(crate) fn can_stick(plan: &Plan) -> bool {
    plan.adapter.own_table() && plan.lease.reclaim == Reclaim::Off && plan.run.stop == Stop::Drained
}

/// The missing agents' worker identities: their slots and their respawned workers' range.
fn held_by(workers: u32, wanted: u32, missing: &[&Seen]) -> (Vec<i32>, Vec<i32>) {
    let (mut lo, mut hi) = (Vec::new(), Vec::new());
    for s in missing {
        let slots = super::slots(workers, wanted, s.agent);
        let base = super::identity_base(workers, s.agent);
        lo.extend([*slots.start() as i32, base as i32]);
        hi.extend([*slots.end() as i32, (base + super::IDENTITY_SPAN - 1) as i32]);
    }
    (lo, hi)
}

/// Why the run cannot progress, when it cannot: every job left is held by a missing agent.
pub(crate) async fn why(client: &Client, plan: &Plan, wanted: u32, missing: &[&Seen]) -> Option<String> {
    if missing.is_empty() {
        return None;
    }
    let (lo, hi) = held_by(plan.workers.count, wanted, missing);
    let row = client.query_one(STUCK, &[&lo, &hi]).await.ok()?;
    let (queued, alive, held): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
    if queued > 0 || alive > 0 || held == 0 {
        return None;
    }
    let names: Vec<&str> = missing.iter().map(|s| s.name.as_str()).collect();
    Some(format!(
        "the run cannot progress: the {held} job(s) left are held by the workers of missing agent(s) {} and nothing \
         reclaims them (lease.reclaim = \"off\"); the run stopped instead of waiting for run.timeout \
         (reclaim = \"reaper\" hands a dead agent's jobs to the others)",
        names.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{IDENTITY_SPAN, identity_base};

    #[test]
    fn a_missing_agents_slots_and_respawn_identities_are_held() {
        let s = Seen {
            agent: 2,
            name: "doomed".into(),
            state: crate::agent::state::AgentState::Running,
            silent_s: 11.0,
            last_seen_us: 0,
            report: None,
            error: None,
        };
        let (lo, hi) = held_by(6, 3, &[&s]);
        // 6 workers over 3 agents: agent 2 runs slots 3 and 4.
        assert_eq!(lo, [3, identity_base(6, 2) as i32]);
        assert_eq!(hi, [4, (identity_base(6, 2) + IDENTITY_SPAN - 1) as i32]);
    }
}
