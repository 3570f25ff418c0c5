//! One schedule at a time, beside the breadth-first search: `--replay SCHEDULE` plays the
//! schedule a counterexample printed and judges it again, and `--random N` plays N schedules
//! PCT draws (`pct`), past the depth the exhaustive search reaches. Each step's state is judged
//! as the search judges it (the first broken check ends the schedule), and the schedule's end
//! is left to itself with the liveness checks.

use super::pct::{self, Pct};
use super::{Search, found, schedule};
use crate::error::{Error, Result};
use crate::explore::protocol::{Model, Op};
use crate::explore::verdict::judge;

/// What `--random` played: the seed, the schedules' strings, and the PCT bound.
#[derive(Debug, Clone, Default)]
pub(crate) struct Random {
    pub seed: u64,
    pub depth: u32,
    pub steps: usize,
    pub agents: usize,
    pub schedules: Vec<String>,
}

impl Random {
    /// The chance one schedule hits a given bug of depth `depth`, and that N schedules do.
    pub(crate) fn bounds(&self) -> (f64, f64) {
        let p = pct::bound(self.agents, self.steps, self.depth);
        (p, 1.0 - (1.0 - p).powf(self.schedules.len() as f64))
    }
}

impl<'a> Search<'a> {
    /// The actors' names, as a schedule's string spells them.
    pub(crate) fn names(&self) -> Vec<String> {
        Model::new(self.plan, &self.cast, self.base, self.bounds.faults).actors.iter().map(|a| a.name.clone()).collect()
    }

    /// Plays one schedule from the start, `next` picking each step among the enabled ones
    /// (None: the schedule ends). Returns its steps and whether the search stops (a
    /// counterexample found, without `--all`).
    async fn play<F>(&mut self, mut next: F) -> Result<(Vec<Op>, bool)>
    where
        F: FnMut(&Model<'a>, &[Op]) -> Result<Option<Op>>,
    {
        let mut m = self.fresh().await?;
        let mut ops = Vec::new();
        self.stats.schedules += 1;
        loop {
            let enabled = m.enabled();
            let Some(op) = next(&m, &enabled)? else { break };
            self.exec(&mut m, op).await?;
            ops.push(op);
            self.stats.claimed |= m.journal.iter().any(|e| e.kind == crate::collect::EventKind::Claimed);
            let rows = self.rows(&m).await?;
            self.coverage.note(&m, &rows);
            let violations = self.unexcused(judge(&m, &rows));
            if !violations.is_empty() {
                let stop = self.record(found(&m, violations, ops.len(), rows, None));
                return Ok((ops, stop));
            }
        }
        self.stats.depth_done = self.stats.depth_done.max(ops.len());
        let stop = self.left_to_itself(m, ops.len()).await?;
        Ok((ops, stop))
    }

    /// `--replay`: the schedule's string played step by step; a step that is not enabled
    /// where it comes is refused, naming the steps that are.
    pub(crate) async fn replay_schedule(&mut self, text: &str) -> Result<()> {
        let names = self.names();
        let mut ops = schedule::parse(text, &names)?.into_iter();
        let mut at = 0usize;
        self.play(|_, enabled| {
            let Some(op) = ops.next() else { return Ok(None) };
            at += 1;
            if enabled.contains(&op) {
                return Ok(Some(op));
            }
            let could: Vec<String> = enabled.iter().map(|o| schedule::word(*o, &names)).collect();
            Err(Error::Flag {
                flag: "--replay".into(),
                reason: format!(
                    "step {at}, `{}`, cannot be taken there; the steps that can: {}",
                    schedule::word(op, &names),
                    if could.is_empty() { "none".to_string() } else { could.join(", ") }
                ),
            })
        })
        .await?;
        self.stats.exhausted = false;
        Ok(())
    }

    /// `--random N`: N schedules of at most `--depth` steps, each drawn by PCT with bug depth
    /// `depth` from one generator seeded by `seed`.
    pub(crate) async fn random(&mut self, n: u64, seed: u64, depth: u32) -> Result<()> {
        let names = self.names();
        let actors = names.len();
        let steps = self.bounds.depth;
        // The agents that can move: the sessions, and the clock and the connection faults (a
        // crash, a lost answer) where they may.
        let f = self.bounds.faults;
        let agents = actors + usize::from(f.ticks > 0) + usize::from(f.crashes > 0 || f.acks_lost > 0);
        self.random = Some(Random { seed, depth, steps, agents, schedules: Vec::new() });
        let mut g = Pct::generator(seed);
        for _ in 0..n {
            if std::time::Instant::now() > self.deadline {
                self.stats.timed_out = true;
                break;
            }
            self.progress(steps);
            let mut pct = Pct::new(&mut g, actors, steps, depth);
            let mut left = steps;
            let (ops, stop) = self
                .play(|_, enabled| {
                    if left == 0 {
                        return Ok(None);
                    }
                    left -= 1;
                    Ok(pct.choose(enabled, actors))
                })
                .await?;
            let text = schedule::render(&ops, &names);
            self.random.as_mut().expect("set above").schedules.push(text);
            if stop {
                break;
            }
        }
        Ok(())
    }
}
