//! FIFO fidelity: how far the order in which jobs were finished strays from
//! the order in which they were enqueued (job ids are handed out in enqueue
//! order). Several workers always finish neighbours a little out of order,
//! and priority claims reorder on purpose, so this is a number to compare
//! between strategies, never a pass/fail check.

use crate::collect::{Event, EventKind};
use crate::model::summary::Fifo;

/// `per_job`: each job's events, the jobs in id order (as `verify` groups them).
pub(super) fn check(per_job: &[&[Event]]) -> Fifo {
    // (first accepted completion, job), in id order.
    let done: Vec<(u64, i64)> = per_job
        .iter()
        .filter_map(|events| events.iter().filter(|e| e.kind == EventKind::Accepted).map(|e| (e.t_us, e.job)).min())
        .collect();
    measure(&done)
}

/// `done` holds (completion time, job id) sorted by job id.
fn measure(done: &[(u64, i64)]) -> Fifo {
    // Position of each job in completion order; ties in time keep id order.
    let mut by_time: Vec<(u64, i64, usize)> = done.iter().enumerate().map(|(rank, &(t, id))| (t, id, rank)).collect();
    by_time.sort_unstable();
    let inverted_pairs = by_time.windows(2).filter(|w| w[0].1 > w[1].1).count() as u64;
    let worst_displacement = by_time.iter().enumerate().map(|(pos, &(_, _, rank))| pos.abs_diff(rank)).max();
    Fifo { completions: done.len() as u64, inverted_pairs, worst_displacement: worst_displacement.unwrap_or(0) as u64 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids_in_completion_order(ids: &[i64]) -> Fifo {
        let mut done: Vec<(u64, i64)> = ids.iter().enumerate().map(|(t, &id)| (t as u64, id)).collect();
        done.sort_by_key(|d| d.1);
        measure(&done)
    }

    #[test]
    fn in_order_completions_are_perfect_fifo() {
        let f = ids_in_completion_order(&[1, 2, 3, 4, 5]);
        assert_eq!((f.completions, f.inverted_pairs, f.worst_displacement), (5, 0, 0));
        assert_eq!(measure(&[]).worst_displacement, 0);
    }

    #[test]
    fn a_swap_of_neighbours_is_one_pair_displaced_by_one() {
        let f = ids_in_completion_order(&[1, 3, 2, 4]);
        assert_eq!((f.inverted_pairs, f.worst_displacement), (1, 1));
    }

    #[test]
    fn a_job_overtaken_by_everyone_is_displaced_by_all_of_them() {
        // Job 1 finished last, after four later jobs: one inverted neighbour pair, displaced by 4.
        let f = ids_in_completion_order(&[2, 3, 4, 5, 1]);
        assert_eq!((f.inverted_pairs, f.worst_displacement), (1, 4));
        // Fully reversed: every neighbour pair inverted.
        let f = ids_in_completion_order(&[5, 4, 3, 2, 1]);
        assert_eq!((f.inverted_pairs, f.worst_displacement), (4, 4));
    }

    #[test]
    fn the_first_accepted_completion_counts_and_rejected_ones_do_not() {
        use crate::collect::EventKind::*;
        let ev = |t_us, job, kind| Event { t_us, job, attempt: 1, worker: 1, claim: 1, kind, dur_us: 0, token: 0 };
        let a = [ev(5, 1, Rejected), ev(30, 1, Accepted), ev(40, 1, Accepted)];
        let b = [ev(20, 2, Accepted)];
        let f = check(&[&a, &b]);
        // Job 2 (at 20 µs) before job 1 (at 30 µs): inverted.
        assert_eq!((f.completions, f.inverted_pairs, f.worst_displacement), (2, 1, 1));
    }
}
