//! Jobs retried under a new id (`[result] successor`: the queue's failure deletes the job and
//! inserts it again): the checkers follow a job's identity to its successor. Every event of a
//! chain is put under the chain's first id and the chain's newest row stands for it in the
//! final table, so lost, exactly-once and the attempt checks see one logical job, as they see
//! a retry under the same id.

use crate::collect::{Event, ReapEvent};
use crate::model::records::JobRow;
use std::collections::{HashMap, HashSet};

/// The journal and the final table with every chain under its first id (the journal sorted
/// again in the checkers' order).
pub(crate) fn follow(journal: &[Event], rows: &[JobRow], successors: &[(i64, i64)]) -> (Vec<Event>, Vec<JobRow>) {
    let previous = previous(successors);
    let root = |id| root(&previous, id);
    let mut journal: Vec<Event> = journal.iter().map(|e| Event { job: root(e.job), ..*e }).collect();
    journal.sort_by_key(Event::order);
    // A row whose job went on under a newer id is history, not the job's state.
    let superseded: HashSet<i64> = successors.iter().map(|&(old, _)| old).collect();
    let mut rows: Vec<JobRow> =
        rows.iter().filter(|r| !superseded.contains(&r.id)).map(|r| JobRow { id: root(r.id), ..*r }).collect();
    rows.sort_by_key(|r| r.id);
    (journal, rows)
}

/// The reaper's events with every chain under its first id.
pub(crate) fn follow_reaps(reaps: &[ReapEvent], successors: &[(i64, i64)]) -> Vec<ReapEvent> {
    let previous = previous(successors);
    reaps.iter().map(|r| ReapEvent { job: root(&previous, r.job), ..*r }).collect()
}

/// The first id of the chain `id` belongs to (`id` itself when it was never retried under a
/// new id), and every id of that chain in order: what `explain` tells as one job.
pub(crate) fn chain_of(successors: &[(i64, i64)], id: i64) -> (i64, Vec<i64>) {
    let first = root(&previous(successors), id);
    let next: HashMap<i64, i64> = successors.iter().copied().collect();
    let mut ids = vec![first];
    while let Some(&n) = next.get(ids.last().unwrap_or(&first)) {
        if ids.contains(&n) || ids.len() > successors.len() {
            break;
        }
        ids.push(n);
    }
    (first, ids)
}

fn previous(successors: &[(i64, i64)]) -> HashMap<i64, i64> {
    successors.iter().map(|&(old, new)| (new, old)).collect()
}

/// The chain's first id. Bounded: a malformed history with a cycle stops after as many steps
/// as there are links.
fn root(previous: &HashMap<i64, i64>, mut id: i64) -> i64 {
    for _ in 0..=previous.len() {
        match previous.get(&id) {
            Some(&old) if old != id => id = old,
            _ => break,
        }
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::EventKind;
    use crate::model::records::Status;

    fn ev(t_us: u64, job: i64, kind: EventKind) -> Event {
        Event { t_us, job, attempt: 1, worker: 1, claim: t_us as u32, kind, dur_us: 0, token: 0 }
    }

    #[test]
    fn a_chain_is_found_from_any_of_its_ids() {
        let links = [(20, 31), (7, 20), (9, 10)];
        assert_eq!(chain_of(&links, 31), (7, vec![7, 20, 31]));
        assert_eq!(chain_of(&links, 7), (7, vec![7, 20, 31]));
        assert_eq!(chain_of(&links, 5), (5, vec![5]));
        assert_eq!(chain_of(&[(1, 2), (2, 1)], 1).1.len(), 2, "a malformed cycle stops");
    }

    #[test]
    fn a_chain_of_retries_is_one_job_under_its_first_id() {
        let journal = [
            ev(1, 7, EventKind::Claimed),
            ev(2, 7, EventKind::FailAccepted),
            ev(3, 20, EventKind::Claimed),
            ev(4, 20, EventKind::FailAccepted),
            ev(5, 31, EventKind::Claimed),
            ev(6, 31, EventKind::Accepted),
            ev(7, 8, EventKind::Claimed),
        ];
        let row = |id, status| JobRow { id, status, attempts: 1, max_attempts: 5, lease_expired: false };
        let rows = [row(7, Status::Failed), row(8, Status::Running), row(31, Status::Done)];
        let (j, r) = follow(&journal, &rows, &[(20, 31), (7, 20)]);
        assert!(j.iter().filter(|e| e.t_us <= 6).all(|e| e.job == 7), "{j:?}");
        assert_eq!(j.iter().find(|e| e.t_us == 7).map(|e| e.job), Some(8), "another job keeps its id");
        assert_eq!(r.iter().map(|r| (r.id, r.status)).collect::<Vec<_>>(), [(7, Status::Done), (8, Status::Running)]);
    }
}
