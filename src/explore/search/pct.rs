//! Past the exhaustive bound: PCT, the probabilistic concurrency testing of Burckhardt et al.
//! (ASPLOS 2010), as shuttle schedules threads. Each agent (a session; the clock; the connection
//! faults, a crash or a lost answer) gets a random priority, all above `d`; `d - 1` change points are drawn among the
//! schedule's `k` steps. At each step the enabled agent with the highest priority moves; at
//! the j-th change point it drops to priority j. A bug that needs `d` orderings of `n` agents'
//! steps is hit by one schedule with probability at least 1/(n·k^(d−1)).
//!
//! Every draw comes from one generator seeded by `--seed`, so a seed plays the same schedules
//! again (the server's answers being the same: which statement waits, which job a claim takes).

use crate::explore::protocol::Op;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

/// The chooser of one random schedule's steps.
pub(crate) struct Pct {
    rng: StdRng,
    /// Each agent's priority: the sessions by index, then the clock, then the connection faults
    /// (a crash, a lost answer).
    priority: Vec<u64>,
    /// The steps (1-based) where the running agent's priority drops, the j-th to j.
    changes: Vec<usize>,
    step: usize,
}

/// The PCT bound on one schedule: 1/(n·k^(d−1)).
pub(crate) fn bound(agents: usize, steps: usize, depth: u32) -> f64 {
    1.0 / (agents as f64 * (steps as f64).powi(depth as i32 - 1))
}

/// The agents of a search with `actors` sessions: each session, the clock, the connection faults.
fn agents(actors: usize) -> usize {
    actors + 2
}

fn agent(op: Op, actors: usize) -> usize {
    match op {
        Op::Tick => actors,
        // A lost answer is a connection's fault, as a crash is: the same agent.
        Op::Crash(_) | Op::AckLost(_) => actors + 1,
        Op::Start(a, _) | Op::Next(a) | Op::Commit(a) | Op::Paused(a, _) | Op::Resume(a) => a,
    }
}

impl Pct {
    /// A generator for the whole run, from the seed.
    pub(crate) fn generator(seed: u64) -> StdRng {
        StdRng::seed_from_u64(seed)
    }

    /// One schedule's priorities and change points, drawn from `rng`: `actors` sessions,
    /// `steps` steps at most, bug depth `depth`.
    pub(crate) fn new(rng: &mut StdRng, actors: usize, steps: usize, depth: u32) -> Pct {
        let n = agents(actors);
        // A random permutation of d, d+1, …, d+n-1.
        let mut priority: Vec<u64> = (0..n as u64).map(|p| p + u64::from(depth)).collect();
        for i in (1..n).rev() {
            priority.swap(i, rng.random_range(0..=i));
        }
        let changes = (1..depth).map(|_| rng.random_range(1..=steps.max(1))).collect();
        let rng = StdRng::seed_from_u64(rng.random_range(0..u64::MAX));
        Pct { rng, priority, changes, step: 0 }
    }

    /// The next step among `enabled` (none: the schedule ends).
    pub(crate) fn choose(&mut self, enabled: &[Op], actors: usize) -> Option<Op> {
        if enabled.is_empty() {
            return None;
        }
        self.step += 1;
        let top = |p: &[u64]| enabled.iter().map(|op| agent(*op, actors)).max_by_key(|a| p[*a]).expect("enabled");
        let mut a = top(&self.priority);
        if let Some(j) = self.changes.iter().position(|c| *c == self.step) {
            self.priority[a] = j as u64 + 1;
            a = top(&self.priority);
        }
        let own: Vec<Op> = enabled.iter().copied().filter(|op| agent(*op, actors) == a).collect();
        Some(own[self.rng.random_range(0..own.len())])
    }
}

#[cfg(test)]
mod tests {
    use super::{Pct, agent, bound};
    use crate::explore::protocol::{Op, StepKind};

    #[test]
    fn the_bound_is_one_over_n_times_k_to_the_d_minus_one() {
        assert_eq!(bound(5, 10, 1), 1.0 / 5.0);
        assert_eq!(bound(5, 10, 3), 1.0 / 500.0);
    }

    #[test]
    fn a_pause_and_a_resume_are_their_sessions_moves_and_a_lost_answer_a_connection_fault() {
        assert_eq!(agent(Op::Paused(1, Some(StepKind::Claim)), 2), 1);
        assert_eq!(agent(Op::Paused(0, None), 2), 0);
        assert_eq!(agent(Op::Resume(1), 2), 1);
        assert_eq!(agent(Op::AckLost(0), 2), agent(Op::Crash(1), 2));
        assert_eq!(agent(Op::Tick, 2), 2);
    }

    #[test]
    fn a_seed_draws_the_same_choices_and_only_enabled_steps() {
        let enabled = [Op::Start(0, StepKind::Claim), Op::Start(1, StepKind::Claim), Op::Tick, Op::Crash(0)];
        let run = |seed| {
            let mut g = Pct::generator(seed);
            (0..20)
                .map(|_| {
                    let mut p = Pct::new(&mut g, 2, 12, 3);
                    (0..12).map(|_| p.choose(&enabled, 2).unwrap()).collect::<Vec<_>>()
                })
                .collect::<Vec<_>>()
        };
        let (a, b, c) = (run(7), run(7), run(8));
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.iter().flatten().all(|op| enabled.contains(op)));
        // Every agent comes first in some schedule: the priorities are drawn, not fixed.
        for op in enabled {
            assert!(a.iter().any(|s| s[0] == op), "{op:?} never first");
        }
        assert_eq!(Pct::new(&mut Pct::generator(1), 2, 12, 3).choose(&[], 2), None);
    }
}
